//! The MCP client (`countersign::mcp`) through the SSRF guard, straight
//! at each server.

use crate::{connect, everything, python};
use serde_json::{Map, Value, json};

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments are an object, not {other}"),
    }
}

#[tokio::test]
async fn server_everything_negotiates_2025_11_25_and_lists_its_hints_as_sent() {
    let server = everything().await;
    let session = connect(&server).await;

    assert_eq!(
        session.protocol_version(),
        "2025-11-25",
        "it speaks only the older era: the client falls back"
    );
    let tools = session.list_tools().await.expect("tools/list");
    assert!(tools.len() >= 10, "about 15 tools, got {}", tools.len());
    for tool in &tools {
        let annotations = tool
            .annotations
            .as_ref()
            .unwrap_or_else(|| panic!("{} carries annotations", tool.name));
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            assert!(
                annotations[hint].is_boolean(),
                "{}: {hint} is a boolean as sent",
                tool.name
            );
        }
    }
    let by_name = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} is listed"))
    };
    let echo = by_name("echo");
    assert_eq!(echo.title.as_deref(), Some("Echo Tool"));
    assert_eq!(
        echo.annotations,
        Some(
            json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
        )
    );
    assert_eq!(
        by_name("toggle-simulated-logging").annotations,
        Some(
            json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false})
        )
    );

    let result = session
        .call_tool("echo", args(json!({"message": "hello from Countersign"})))
        .await
        .expect("tools/call echo");
    assert!(!result.is_error);
    assert_eq!(result.text, "Echo: hello from Countersign");
    session.close().await;
}

#[tokio::test]
async fn the_python_sdk_server_lists_its_tools_with_annotations_and_answers_a_call() {
    let server = python().await;
    let session = connect(&server).await;

    let version = session.protocol_version();
    assert!(
        ["2026-07-28", "2025-11-25"].contains(&version.as_str()),
        "either era, got {version}"
    );
    let tools = session.list_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["add", "forget_note", "shout"]);
    let by_name = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} is listed"))
    };
    let shout = by_name("shout");
    assert_eq!(shout.title.as_deref(), Some("Shout"));
    assert_eq!(
        shout.annotations,
        Some(json!({"readOnlyHint": true, "openWorldHint": false})),
        "only the hints it set"
    );
    assert_eq!(
        by_name("forget_note").annotations,
        Some(json!({"destructiveHint": true}))
    );
    assert_eq!(by_name("add").annotations, None, "no annotations at all");

    let result = session
        .call_tool("shout", args(json!({"text": "quiet please"})))
        .await
        .expect("tools/call shout");
    assert!(!result.is_error);
    assert_eq!(result.text, "QUIET PLEASE");
    session.close().await;
}
