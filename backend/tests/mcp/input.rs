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

// ---- A legacy server that asks on its standalone GET stream.

/// What [`late_stream_server`] shares between its handlers.
#[derive(Debug, Default)]
struct LateStream {
    /// The open GET stream's sender, once its headers went out.
    stream: Option<tokio::sync::mpsc::UnboundedSender<String>>,
    /// The answer to the server's `elicitation/create`, when it comes.
    answer: Option<tokio::sync::oneshot::Sender<Value>>,
    /// `tools/call`s that found no stream to ask on (the TypeScript SDK
    /// drops such a request silently and the call then waits forever).
    dropped: usize,
}

type LateShared = Arc<Mutex<LateStream>>;

/// A 2025-11-25 server in the TypeScript SDK's manner: its tool asks for
/// input with a request sent on the session's standalone GET stream, whose
/// headers it sends only after `delay` — on a busy machine, the call can
/// arrive before the stream is open.
async fn late_stream_server(delay: std::time::Duration) -> (Running, LateShared) {
    let shared = LateShared::default();
    let router = Router::new()
        .route(
            "/mcp",
            axum::routing::post(late_post)
                .get(move |State(shared): State<LateShared>| late_get(shared, delay))
                .delete(|| async { axum::http::StatusCode::OK }),
        )
        .with_state(shared.clone());
    (serve_router(router).await, shared)
}

async fn late_get(shared: LateShared, delay: std::time::Duration) -> Response {
    tokio::time::sleep(delay).await;
    let (send, receive) = tokio::sync::mpsc::unbounded_channel::<String>();
    shared.lock().unwrap_or_else(PoisonError::into_inner).stream = Some(send);
    let events = futures_util::stream::unfold(receive, |mut receive| async move {
        let data = receive.recv().await?;
        Some((
            Ok::<_, std::convert::Infallible>(format!("data: {data}\n\n")),
            receive,
        ))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(axum::body::Body::from_stream(events))
        .expect("a response")
}

async fn late_post(State(shared): State<LateShared>, body: axum::body::Bytes) -> Response {
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let reply = |result: Value| {
        let mut res =
            axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response();
        res.headers_mut()
            .insert("mcp-session-id", "late-1".parse().expect("a header"));
        res
    };
    match message.get("method").and_then(Value::as_str) {
        Some("server/discover") => axum::Json(json!({
            "jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": "Method not found"}
        }))
        .into_response(),
        Some("initialize") => reply(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "late-stream", "version": "1.0.0"}
        })),
        Some("tools/call") => {
            let (asked, answer) = tokio::sync::oneshot::channel();
            let sent = {
                let mut state = shared.lock().unwrap_or_else(PoisonError::into_inner);
                state.answer = Some(asked);
                let request = json!({
                    "jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create",
                    "params": {"message": "Your name?", "requestedSchema": {
                        "type": "object",
                        "properties": {"name": {"type": "string", "default": "Ada"}}
                    }}
                });
                let sent = state
                    .stream
                    .as_ref()
                    .is_some_and(|s| s.send(request.to_string()).is_ok());
                if !sent {
                    state.dropped += 1;
                }
                sent
            };
            if !sent {
                return reply(json!({
                    "content": [{"type": "text", "text": "dropped: no stream to ask on"}],
                    "isError": true
                }));
            }
            match tokio::time::timeout(std::time::Duration::from_secs(5), answer).await {
                Ok(Ok(result)) => reply(json!({
                    "content": [{"type": "text", "text": result.to_string()}]
                })),
                _ => reply(json!({
                    "content": [{"type": "text", "text": "no answer"}],
                    "isError": true
                })),
            }
        }
        // The client's answer to the server's request.
        None if message.get("result").is_some() => {
            let answer = shared
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .answer
                .take();
            if let Some(answer) = answer {
                let _ = answer.send(message["result"].clone());
            }
            axum::http::StatusCode::ACCEPTED.into_response()
        }
        _ if id.is_null() => axum::http::StatusCode::ACCEPTED.into_response(),
        _ => reply(json!({})),
    }
}

/// A legacy session that declares elicitation is handed over only once its
/// standalone GET stream is open (or refused), so a server that asks on
/// that stream is not left asking nobody — the 50 s hang of the
/// conformance scenario `elicitation-sep1034-client-defaults` on a busy
/// machine (issue 44, item 12). Seen to fail without the wait: the call
/// came back "dropped" every time.
#[tokio::test]
async fn a_legacy_server_asking_on_a_slow_standalone_stream_is_answered() {
    let (server, shared) = late_stream_server(std::time::Duration::from_millis(300)).await;
    let session = connect(http(), &target(server.url("/mcp")), &headless())
        .await
        .expect("connects");
    assert_eq!(session.protocol_version(), "2025-11-25");
    let result = session
        .call_tool("ask", Map::new())
        .await
        .expect("the call completes");
    session.close().await;
    let dropped = shared
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .dropped;
    assert_eq!(dropped, 0, "the server had no stream to ask on");
    assert!(!result.is_error, "{}", result.text);
    assert!(result.text.contains("\"Ada\""), "{}", result.text);
}
