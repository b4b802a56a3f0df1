//! `notifications/tools/list_changed` reaches listeners in both eras.

use serde_json::json;

use crate::helpers::{next_message_with_method, spawn_server};

#[tokio::test]
async fn a_2025_11_25_session_hears_list_changed_on_its_sse_stream_after_add_tool() {
    let server = spawn_server().await;
    let session = server.legacy_session().await;
    let mut stream = session.open_stream().await;

    server.admin_post("/admin/add-tool", None).await;

    let message = next_message_with_method(&mut stream, "notifications/tools/list_changed").await;
    assert_eq!(message["jsonrpc"], "2.0");
}

#[tokio::test]
async fn a_2026_07_28_listener_hears_list_changed_after_a_drift() {
    let server = spawn_server().await;
    let mut stream = server
        .request_2026(
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        )
        .send()
        .await
        .expect("subscriptions/listen reaches the server");
    assert_eq!(stream.status(), 200);
    let ack =
        next_message_with_method(&mut stream, "notifications/subscriptions/acknowledged").await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true}),
        "{ack}"
    );

    server
        .admin_post("/admin/drift", Some(json!({"field": "annotations"})))
        .await;

    let message = next_message_with_method(&mut stream, "notifications/tools/list_changed").await;
    assert_eq!(
        message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 1,
        "{message}"
    );
}
