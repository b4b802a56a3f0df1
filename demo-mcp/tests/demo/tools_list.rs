//! `tools/list` in both protocol eras: the exact annotations a gate sees.

use serde_json::Value;

use crate::helpers::{ERA_2025, expected_annotations, names, spawn_server, tool};

fn assert_annotations(tools: &[Value], era: &str) {
    let expected = expected_annotations();
    assert_eq!(
        names(tools),
        expected.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
        "{era}: the original tool list, sorted by name"
    );
    for (name, annotations) in expected {
        assert_eq!(
            tool(tools, name).get("annotations"),
            annotations.as_ref(),
            "{era}: {name}"
        );
    }
}

#[tokio::test]
async fn tools_list_over_2026_07_28_serves_every_annotation_case_exactly() {
    let server = spawn_server().await;

    let message = server.rpc_2026("tools/list", serde_json::json!({})).await;

    assert_annotations(&crate::helpers::tools_of(&message), "2026-07-28");
    assert_eq!(message["result"]["resultType"], "complete", "{message}");
    assert_eq!(
        message["result"]["ttlMs"], 0,
        "clients must not cache a drifting list"
    );
}

#[tokio::test]
async fn tools_list_in_a_2025_11_25_session_serves_the_same_annotations() {
    let server = spawn_server().await;
    let session = server.legacy_session().await;

    let tools = session.tools().await;

    assert!(!session.session_id.is_empty());
    assert_annotations(&tools, ERA_2025);
    assert_eq!(
        tools,
        server.tools_2026().await,
        "both eras list identical tools"
    );
}

#[tokio::test]
async fn every_tool_has_a_title_a_description_and_an_object_input_schema() {
    let server = spawn_server().await;

    for tool in server.tools_2026().await {
        let name = &tool["name"];
        assert!(
            tool["title"].as_str().is_some_and(|t| !t.is_empty()),
            "{name} title"
        );
        assert!(
            tool["description"].as_str().is_some_and(|d| d.len() > 20),
            "{name} description"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{name} schema");
        assert!(
            tool["inputSchema"]["properties"].is_object(),
            "{name} properties"
        );
    }
}
