//! `tools/call`: text, tool errors, timeouts, bounds.

use std::time::Duration;

use countersign::mcp::{McpError, McpSettings, connect};
use serde_json::{Map, Value, json};

use crate::servers::{Eras, Fixture, Gate, LegacyServer, http, settings, target};
use crate::{demo, demo_url};

fn arguments(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("arguments are an object"),
    }
}

#[tokio::test]
async fn call_tool_returns_the_tools_text() {
    let server = demo().await;
    let session = connect(http(), &target(demo_url(&server)), &settings())
        .await
        .expect("connects");

    let result = session
        .call_tool("echo", arguments(json!({"text": "hello, counsel"})))
        .await
        .expect("calls echo");

    assert_eq!(result.text, "hello, counsel");
    assert!(!result.is_error && !result.truncated);
    assert_eq!(server.calls().count("echo"), 1);
    session.close().await;
    server.stop().await.expect("the demo server stops");
}

#[tokio::test]
async fn call_tool_returns_text_on_a_legacy_session_too() {
    let legacy = LegacyServer::start().await;
    let session = connect(http(), &target(legacy.url()), &settings())
        .await
        .expect("connects");

    let result = session
        .call_tool("legacy_tool", arguments(json!({"text": "from 2025"})))
        .await
        .expect("calls the tool");

    assert_eq!(result.text, "from 2025");
    session.close().await;
}

#[tokio::test]
async fn a_failing_tool_returns_is_error_with_its_text() {
    let server = demo().await;
    let session = connect(http(), &target(demo_url(&server)), &settings())
        .await
        .expect("connects");

    let result = session
        .call_tool("failing_tool", Map::new())
        .await
        .expect("a tool error is a result, not an McpError");

    assert!(result.is_error);
    assert!(result.text.contains("always fails"), "{}", result.text);
    session.close().await;
    server.stop().await.expect("the demo server stops");
}

#[tokio::test]
async fn a_slow_tool_hits_the_call_timeout_and_is_not_retried() {
    let server = demo().await;
    let short = McpSettings {
        call_timeout: Duration::from_millis(300),
        ..settings()
    };
    let session = connect(http(), &target(demo_url(&server)), &short)
        .await
        .expect("connects");

    let outcome = session
        .call_tool("slow_tool", arguments(json!({"seconds": 60})))
        .await;

    assert_eq!(
        outcome,
        Err(McpError::Timeout {
            after: Some(Duration::from_millis(300))
        })
    );
    let next = session
        .call_tool("echo", arguments(json!({"text": "still here"})))
        .await
        .expect("the session survives a timeout");
    assert_eq!(next.text, "still here");
    assert!(
        server.calls().count("slow_tool") <= 1,
        "the timed-out call is never sent again"
    );
    session.close().await;
    server.stop().await.expect("the demo server stops");
}

#[tokio::test]
async fn a_result_longer_than_the_bound_is_cut_with_a_note() {
    let fixture = Fixture::start(Eras::Both, Gate::Open).await;
    let bounded = McpSettings {
        max_result_chars: 20,
        ..settings()
    };
    let session = connect(http(), &target(fixture.url()), &bounded)
        .await
        .expect("connects");

    let result = session
        .call_tool("long_text", arguments(json!({"length": 50})))
        .await
        .expect("calls long_text");

    assert!(result.truncated);
    assert_eq!(
        result.text,
        format!(
            "{}\n\n[Countersign cut this result: 50 characters, first 20 shown.]",
            "x".repeat(20)
        )
    );
    session.close().await;
}

#[tokio::test]
async fn non_text_content_is_described_not_dropped() {
    let fixture = Fixture::start(Eras::Both, Gate::Open).await;
    let session = connect(http(), &target(fixture.url()), &settings())
        .await
        .expect("connects");

    let result = session
        .call_tool("pictures", Map::new())
        .await
        .expect("calls pictures");

    assert_eq!(result.text, "A picture:\n[image: image/png, 8 bytes]");
    session.close().await;
}

#[tokio::test]
async fn an_unknown_tool_fails_with_the_servers_message() {
    let fixture = Fixture::start(Eras::Both, Gate::Open).await;
    let session = connect(http(), &target(fixture.url()), &settings())
        .await
        .expect("connects");

    let outcome = session.call_tool("no_such_tool", Map::new()).await;

    assert!(
        matches!(&outcome, Err(McpError::ToolFailed(message)) if message.contains("no tool named no_such_tool")),
        "{outcome:?}"
    );
    session.close().await;
}

#[tokio::test]
async fn a_result_over_16_mib_is_refused_while_it_is_read_in_either_era() {
    // 2026-07-28 against the demo server.
    let server = demo().await;
    server
        .state()
        .make_hostile(countersign_demo_mcp::HostileMode::HugeResult);
    let session = connect(http(), &target(demo_url(&server)), &settings())
        .await
        .expect("connects");
    let refused = session
        .call_tool("huge_result", Map::new())
        .await
        .expect_err("17 MiB is refused");
    assert!(
        refused.to_string().contains("larger than 16 MiB"),
        "{refused}"
    );
    assert_eq!(
        server.calls().count("huge_result"),
        1,
        "sent once, never retried"
    );
    session.close().await;
    server.stop().await.expect("the demo server stops");

    // 2025-11-25: the result comes as an SSE event.
    let fixture = Fixture::start(Eras::LegacyOnly, Gate::Open).await;
    let session = connect(http(), &target(fixture.url()), &settings())
        .await
        .expect("connects");
    let refused = session
        .call_tool("long_text", arguments(json!({"length": 17 * 1024 * 1024})))
        .await
        .expect_err("17 MiB is refused");
    assert!(
        refused.to_string().contains("larger than 16 MiB"),
        "{refused}"
    );
    // Just under the bound still arrives (cut for the model, as ever).
    let fine = session
        .call_tool("long_text", arguments(json!({"length": 15 * 1024 * 1024})))
        .await
        .expect("15 MiB is accepted");
    assert!(fine.truncated);
    session.close().await;
}
