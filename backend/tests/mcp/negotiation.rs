//! Which protocol era a connection ends up on.

use countersign::mcp::connect;
use serde_json::Map;

use crate::servers::{Eras, Fixture, Gate, LegacyServer, http, settings, target};
use crate::{demo, demo_url};

#[tokio::test]
async fn the_demo_server_negotiates_the_2026_07_28_protocol() {
    let server = demo().await;

    let session = connect(http(), &target(demo_url(&server)), &settings())
        .await
        .expect("connects");

    assert_eq!(session.protocol_version(), "2026-07-28");
    session.close().await;
    server.stop().await.expect("the demo server stops");
}

#[tokio::test]
async fn a_legacy_only_rmcp_server_is_reached_over_2025_11_25() {
    let fixture = Fixture::start(Eras::LegacyOnly, Gate::Open).await;

    let session = connect(http(), &target(fixture.url()), &settings())
        .await
        .expect("connects through the fallback");

    assert_eq!(session.protocol_version(), "2025-11-25");
    let tools = session
        .list_tools()
        .await
        .expect("lists tools in the session");
    assert_eq!(tools.len(), 4, "both pages, over the session's SSE replies");
    let result = session
        .call_tool("paged_first", Map::new())
        .await
        .expect("calls a tool in the session");
    assert_eq!(result.text, "ok");
    session.close().await;
}

#[tokio::test]
async fn a_server_that_answers_discover_with_an_empty_object_gets_the_legacy_handshake() {
    let legacy = LegacyServer::start().await;

    let session = connect(http(), &target(legacy.url()), &settings())
        .await
        .expect("connects after retrying with initialize");

    assert_eq!(session.protocol_version(), "2025-11-25");
    {
        let log = legacy.log.lock().expect("log lock");
        assert_eq!(
            log.initialize_version.as_deref(),
            Some("2025-11-25"),
            "initialize must name a version that has a handshake"
        );
    }
    session.list_tools().await.expect("lists tools");
    session.close().await;
    let log = legacy.log.lock().expect("log lock");
    assert_eq!(
        log.tools_list_sessions,
        [Some(crate::servers::LEGACY_SESSION.to_owned())],
        "the raw tools/list request carries the session id"
    );
    assert!(log.deleted, "closing deletes the session on the server");
}
