//! A server asking for input during a call (DESIGN §6a): the 2026-07-28
//! `InputRequiredResult` rounds as the client drives them, against a
//! hand-written server that records every `tools/call` it receives.

use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use countersign::mcp::{HeadlessAnswer, MAX_INPUT_ROUNDS, McpError, McpSettings, connect};
use serde_json::{Map, Value, json};

use crate::servers::{Running, http, serve_router, settings, target};

/// A `requestState` no client should touch: escapes, quotes, non-ASCII.
const STATE: &str = "s1:\u{e9}\"quoted\"\\/ \u{1F512}";

/// What the server answers to `tools/call`.
#[derive(Debug, Clone, Copy)]
enum Script {
    /// The tool `ask_once` asks for a confirmation with [`STATE`] until a
    /// call carries answers; any other tool completes at once.
    AskOnce,
    /// Every call asks again.
    AlwaysAsk,
}

#[derive(Debug)]
struct Asker {
    server: Running,
    /// The `params` of every `tools/call`, with its JSON-RPC id.
    calls: Arc<Mutex<Vec<(Value, Value)>>>,
}

impl Asker {
    async fn start(script: Script) -> Self {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let router = Router::new()
            .route("/mcp", axum::routing::post(post))
            .with_state((script, calls.clone()));
        Self {
            server: serve_router(router).await,
            calls,
        }
    }

    fn calls(&self) -> Vec<(Value, Value)> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

type Shared = (Script, Arc<Mutex<Vec<(Value, Value)>>>);

async fn post(State((script, calls)): State<Shared>, body: axum::body::Bytes) -> Response {
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let reply = |result: Value| {
        axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
    };
    match message.get("method").and_then(Value::as_str) {
        Some("server/discover") => reply(json!({
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "private",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "asker", "version": "1.0.0"}
        })),
        Some("tools/call") => {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            let answered = params.get("inputResponses").is_some();
            calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((id.clone(), params.clone()));
            let asks = params.get("name").and_then(Value::as_str) == Some("ask_once");
            match (script, asks && !answered) {
                (Script::AlwaysAsk, _) | (Script::AskOnce, true) => reply(json!({
                    "resultType": "input_required",
                    "inputRequests": {"confirm": {
                        "method": "elicitation/create",
                        "params": {"mode": "form", "message": "Sure?", "requestedSchema": {
                            "type": "object",
                            "properties": {"ok": {"type": "boolean", "default": true}},
                            "required": ["ok"]
                        }}
                    }},
                    "requestState": STATE
                })),
                (Script::AskOnce, false) => reply(json!({
                    "resultType": "complete",
                    "content": [{"type": "text", "text": "done"}]
                })),
            }
        }
        // Notifications get no reply.
        _ if id.is_null() => axum::http::StatusCode::ACCEPTED.into_response(),
        _ => reply(json!({})),
    }
}

fn headless() -> McpSettings {
    McpSettings {
        elicitation: Some(countersign::mcp::Elicitation::Headless(
            HeadlessAnswer::AcceptDefaults,
        )),
        ..settings()
    }
}

fn declared_capabilities(params: &Value) -> Value {
    params
        .pointer("/_meta/io.modelcontextprotocol~1clientCapabilities")
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn an_answered_round_is_retried_as_a_new_request_with_the_state_echoed_exactly() {
    let asker = Asker::start(Script::AskOnce).await;
    let session = connect(http(), &target(asker.server.url("/mcp")), &headless())
        .await
        .expect("connects");

    let result = session
        .call_tool("ask_once", Map::new())
        .await
        .expect("the call completes after one round");

    assert_eq!(result.text, "done");
    let calls = asker.calls();
    assert_eq!(calls.len(), 2, "the call and one retry: {calls:?}");
    let ((first_id, first), (retry_id, retry)) = (&calls[0], &calls[1]);
    assert_ne!(first_id, retry_id, "a retry is a new request");
    assert_eq!(first.get("inputResponses"), None);
    assert_eq!(first.get("requestState"), None);
    assert_eq!(retry["requestState"], json!(STATE), "echoed byte for byte");
    assert_eq!(
        retry["inputResponses"],
        json!({"confirm": {"action": "accept", "content": {"ok": true}}}),
        "the form's default, under the server's key"
    );
    assert_eq!(
        declared_capabilities(first)["elicitation"],
        json!({"form": {}, "url": {}}),
        "declared where the session can answer"
    );
    session.close().await;
}

#[tokio::test]
async fn answers_belong_to_their_call_and_never_reach_the_next_one() {
    let asker = Asker::start(Script::AskOnce).await;
    let session = connect(http(), &target(asker.server.url("/mcp")), &headless())
        .await
        .expect("connects");

    session
        .call_tool("ask_once", Map::new())
        .await
        .expect("the first call completes");
    session
        .call_tool("plain", Map::new())
        .await
        .expect("the second call completes");

    let calls = asker.calls();
    let (_, plain) = calls.last().expect("the second call was seen");
    assert_eq!(plain["name"], json!("plain"));
    assert_eq!(plain.get("inputResponses"), None, "{plain}");
    assert_eq!(plain.get("requestState"), None, "{plain}");
    session.close().await;
}

#[tokio::test]
async fn without_a_headless_answer_a_request_for_input_fails_the_call_and_nothing_is_retried() {
    let asker = Asker::start(Script::AskOnce).await;
    let session = connect(http(), &target(asker.server.url("/mcp")), &settings())
        .await
        .expect("connects");

    let err = session
        .call_tool("ask_once", Map::new())
        .await
        .expect_err("nobody can answer");

    assert!(matches!(err, McpError::ToolFailed(_)), "{err:?}");
    let calls = asker.calls();
    assert_eq!(calls.len(), 1, "not retried: {calls:?}");
    assert_eq!(
        declared_capabilities(&calls[0].1).get("elicitation"),
        None,
        "no elicitation capability without an answer"
    );
    session.close().await;
}

#[tokio::test]
async fn a_server_that_keeps_asking_gets_five_answered_rounds_and_then_the_call_fails() {
    let asker = Asker::start(Script::AlwaysAsk).await;
    let session = connect(http(), &target(asker.server.url("/mcp")), &headless())
        .await
        .expect("connects");

    let err = session
        .call_tool("ask_once", Map::new())
        .await
        .expect_err("the rounds are capped");

    assert!(matches!(err, McpError::ToolFailed(_)), "{err:?}");
    assert_eq!(
        asker.calls().len(),
        1 + MAX_INPUT_ROUNDS,
        "the call, then one retry per answered round"
    );
    session.close().await;
}
