//! `tools/list`: raw annotations, pagination, no cache.

use countersign::mcp::{ToolDescriptor, connect, descriptor_digest};
use countersign_demo_mcp::DriftField;
use serde_json::json;

use crate::servers::{
    Eras, Fixture, Gate, LegacyServer, http, legacy_annotations, settings, target,
};
use crate::{demo, demo_url};

fn find<'a>(tools: &'a [ToolDescriptor], name: &str) -> &'a ToolDescriptor {
    tools
        .iter()
        .find(|tool| tool.name == name)
        .unwrap_or_else(|| panic!("{name} is listed"))
}

#[tokio::test]
async fn tools_list_returns_the_annotations_exactly_as_the_server_sent_them() {
    let server = demo().await;
    let session = connect(http(), &target(demo_url(&server)), &settings())
        .await
        .expect("connects");

    let tools = session.list_tools().await.expect("lists tools");

    assert_eq!(
        find(&tools, "stringly_annotated").annotations,
        Some(json!({"readOnlyHint": "true", "openWorldHint": "false"})),
        "string-typed hints stay strings"
    );
    let preview = find(&tools, "fetch_url_preview")
        .annotations
        .as_ref()
        .expect("fetch_url_preview has annotations");
    assert_eq!(preview.get("readOnlyHint"), Some(&json!(true)));
    assert_eq!(
        preview.get("openWorldHint"),
        None,
        "an omitted hint stays omitted"
    );
    assert_eq!(
        find(&tools, "echo").annotations,
        None,
        "no annotations at all"
    );
    let search = find(&tools, "search_notes");
    assert_eq!(
        search
            .annotations
            .as_ref()
            .and_then(|a| a.get("readOnlyHint")),
        Some(&json!(true))
    );
    assert!(
        search.input_schema.get("properties").is_some(),
        "the schema is kept"
    );
    session.close().await;
    server.stop().await.expect("the demo server stops");
}

#[tokio::test]
async fn string_typed_and_unknown_annotation_keys_survive_a_legacy_sse_listing() {
    let legacy = LegacyServer::start().await;
    let session = connect(http(), &target(legacy.url()), &settings())
        .await
        .expect("connects");

    let tools = session.list_tools().await.expect("lists tools");

    assert_eq!(
        tools,
        [ToolDescriptor {
            name: "legacy_tool".into(),
            title: None,
            description: Some("A tool on a 2025-11-25 server.".into()),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: Some(legacy_annotations()),
        }]
    );
    session.close().await;
}

#[tokio::test]
async fn tools_list_follows_cursors_across_pages() {
    let fixture = Fixture::start(Eras::Both, Gate::Open).await;
    let session = connect(http(), &target(fixture.url()), &settings())
        .await
        .expect("connects");

    let tools = session.list_tools().await.expect("lists tools");

    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(
        names,
        ["paged_first", "paged_second", "long_text", "pictures"]
    );
    session.close().await;
}

#[tokio::test]
async fn a_second_listing_shows_a_drifted_tool_and_its_new_digest() {
    let server = demo().await;
    let session = connect(http(), &target(demo_url(&server)), &settings())
        .await
        .expect("connects");
    let before = find(
        &session.list_tools().await.expect("lists tools"),
        "drifting_tool",
    )
    .clone();

    server.state().drift(DriftField::Description);
    let after = find(
        &session.list_tools().await.expect("lists tools again"),
        "drifting_tool",
    )
    .clone();

    assert_ne!(after.description, before.description, "the change is seen");
    assert_ne!(descriptor_digest(&after), descriptor_digest(&before));
    session.close().await;
    server.stop().await.expect("the demo server stops");
}

#[tokio::test]
async fn a_second_listing_ignores_the_servers_cache_hints() {
    for eras in [Eras::Both, Eras::LegacyOnly] {
        // The fixture marks every page public and fresh for a minute.
        let fixture = Fixture::start(eras, Gate::Open).await;
        let session = connect(http(), &target(fixture.url()), &settings())
            .await
            .expect("connects");
        session.list_tools().await.expect("lists tools");

        *fixture.description.lock().expect("description lock") = "Changed.".to_owned();
        let tools = session.list_tools().await.expect("lists tools again");

        assert_eq!(
            find(&tools, "paged_second").description.as_deref(),
            Some("Changed."),
            "{eras:?}: the second listing asks the server again"
        );
        session.close().await;
    }
}
