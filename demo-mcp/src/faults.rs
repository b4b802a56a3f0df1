//! Fault modes: tools whose calls the server answers wrongly on purpose,
//! so a client's handling of a server that hangs, dies and lies can be
//! tested against a real server (Countersign's issue 15).
//!
//! Only a server started with fault modes lists them
//! ([`DemoState::with_fault_modes`], `--fault-modes` on the command line);
//! the product's demo connector never does. Each fault is one tool:
//!
//! | tool                    | what the server answers to its `tools/call`                       |
//! |-------------------------|--------------------------------------------------------------------|
//! | `fault_hang`            | nothing, ever (the request stays open until the client gives up)   |
//! | `fault_garbage`         | `200 application/json` whose body is not JSON                      |
//! | `fault_truncated_sse`   | `200 text/event-stream` that ends cleanly in the middle of an event |
//! | `fault_huge_body`       | a well-formed result of [`HUGE_BODY_BYTES`] (10 MB) of text         |
//! | `fault_oversized_body`  | a result of [`OVERSIZED_BODY_BYTES`] (64 MiB), streamed            |
//! | `fault_jsonrpc_error`   | a JSON-RPC error (`-32603`)                                        |
//! | `fault_http_500`        | `500 Internal Server Error`, plain text                            |
//! | `fault_drop_connection` | the start of an SSE answer, then the TCP connection is aborted     |
//!
//! The garbage, JSON-RPC error and HTTP 500 answers echo the request's
//! headers (its `Authorization` first), as careless servers do, so a client
//! can be seen to keep credentials out of what it shows.
//!
//! Every such call is counted in the call log when it arrives, before it
//! is answered ([`DemoState::calls`], [`DemoState::watch_calls`]), so
//! "nothing was retried" can be measured; so are the bytes of the big
//! bodies the client actually pulled ([`DemoState::body_bytes_written`]).
//!
//! It works as a layer in front of rmcp's `/mcp` service: a POST whose
//! JSON-RPC request calls a fault tool is answered here; everything else
//! (the handshake, `tools/list`, every other tool) passes through untouched.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use rmcp::model::{JsonObject, Tool};
use serde_json::{Value, json};

use crate::state::{DemoState, FaultCounters};

/// The size of `fault_huge_body`'s text: 10 MB, under a 16 MiB client bound.
pub const HUGE_BODY_BYTES: usize = 10_000_000;
/// The size of `fault_oversized_body`'s text: well over a 16 MiB bound.
pub const OVERSIZED_BODY_BYTES: usize = 64 * 1024 * 1024;
/// Bodies are written in chunks of this size, so a client that stops
/// reading stops the writing too.
const CHUNK_BYTES: usize = 64 * 1024;
/// Requests larger than this are refused (a `tools/call` is small).
const MAX_REQUEST_BYTES: usize = 1024 * 1024;

/// One fault mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Never answers.
    Hang,
    /// A body that is not JSON.
    Garbage,
    /// An SSE body that ends mid-event.
    TruncatedSse,
    /// A well-formed 10 MB result.
    HugeBody,
    /// A 64 MiB result.
    OversizedBody,
    /// A JSON-RPC error.
    JsonRpcError,
    /// HTTP 500.
    Http500,
    /// The connection is aborted mid-answer.
    DropConnection,
}

impl Fault {
    /// Every mode, in the table's order.
    pub const ALL: [Self; 8] = [
        Self::Hang,
        Self::Garbage,
        Self::TruncatedSse,
        Self::HugeBody,
        Self::OversizedBody,
        Self::JsonRpcError,
        Self::Http500,
        Self::DropConnection,
    ];

    /// The tool that shows this fault.
    pub fn tool_name(self) -> &'static str {
        match self {
            Self::Hang => "fault_hang",
            Self::Garbage => "fault_garbage",
            Self::TruncatedSse => "fault_truncated_sse",
            Self::HugeBody => "fault_huge_body",
            Self::OversizedBody => "fault_oversized_body",
            Self::JsonRpcError => "fault_jsonrpc_error",
            Self::Http500 => "fault_http_500",
            Self::DropConnection => "fault_drop_connection",
        }
    }

    /// The mode whose tool is `name`.
    pub fn of_tool(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|fault| fault.tool_name() == name)
    }

    fn description(self) -> &'static str {
        match self {
            Self::Hang => "Never answers (demo fault mode).",
            Self::Garbage => "Answers with a body that is not JSON (demo fault mode).",
            Self::TruncatedSse => {
                "Answers with an event stream cut off mid-event (demo fault mode)."
            }
            Self::HugeBody => "Answers with a well-formed 10 MB result (demo fault mode).",
            Self::OversizedBody => "Answers with a 64 MiB result (demo fault mode).",
            Self::JsonRpcError => "Answers with a JSON-RPC error (demo fault mode).",
            Self::Http500 => "Answers HTTP 500 (demo fault mode).",
            Self::DropConnection => {
                "Starts answering, then aborts the connection (demo fault mode)."
            }
        }
    }
}

/// The fault tools, as `tools/list` serves them: no annotations, so a
/// client's gate asks before each call.
pub(crate) fn descriptors() -> Vec<Tool> {
    Fault::ALL
        .into_iter()
        .map(|fault| {
            Tool::new(
                fault.tool_name(),
                fault.description(),
                // No arguments. Built here, not with `tools::object`:
                // `tools` lists these, so this module does not use it.
                Arc::new(JsonObject::from_iter([
                    ("type".to_owned(), json!("object")),
                    ("properties".to_owned(), json!({})),
                ])),
            )
        })
        .collect()
}

/// axum middleware for `/mcp`: answers the fault tools' calls, passes
/// everything else on.
pub(crate) async fn misbehave(
    State(state): State<DemoState>,
    request: Request,
    next: Next,
) -> Response {
    let Some(counters) = state.fault_counters() else {
        return next.run(request).await;
    };
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_REQUEST_BYTES).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let message: Option<Value> = serde_json::from_slice(&bytes).ok();
    match message.as_ref().and_then(fault_call) {
        Some((fault, id, arguments)) => {
            state.record_call(fault.tool_name(), &arguments);
            answer(fault, id, &parts.headers, counters).await
        }
        None => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
    }
}

/// The fault, request id and arguments of a `tools/call` of a fault tool.
fn fault_call(message: &Value) -> Option<(Fault, Value, JsonObject)> {
    if message.get("method")?.as_str()? != "tools/call" {
        return None;
    }
    let params = message.get("params")?;
    let fault = Fault::of_tool(params.get("name")?.as_str()?)?;
    let arguments = match params.get("arguments") {
        Some(Value::Object(arguments)) => arguments.clone(),
        _ => JsonObject::new(),
    };
    Some((fault, message.get("id")?.clone(), arguments))
}

async fn answer(
    fault: Fault,
    id: Value,
    headers: &HeaderMap,
    counters: &FaultCounters,
) -> Response {
    let name = fault.tool_name();
    match fault {
        Fault::Hang => std::future::pending().await,
        Fault::Garbage => (
            [(header::CONTENT_TYPE, "application/json")],
            format!(
                "\u{1}\u{2}<html>{name} is not JSON-RPC {}</html>",
                echo(headers)
            ),
        )
            .into_response(),
        Fault::TruncatedSse => {
            let cut = format!(
                "data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\
                 \"text\",\"text\":\"this answer is cut off in the mid"
            );
            ([(header::CONTENT_TYPE, "text/event-stream")], cut).into_response()
        }
        Fault::HugeBody => result_body(&id, HUGE_BODY_BYTES, &counters.body_bytes_written),
        Fault::OversizedBody => {
            result_body(&id, OVERSIZED_BODY_BYTES, &counters.body_bytes_written)
        }
        Fault::JsonRpcError => (
            [(header::CONTENT_TYPE, "application/json")],
            json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {
                    "code": -32603,
                    "message": format!("{name} failed on purpose; {}", echo(headers)),
                },
            })
            .to_string(),
        )
            .into_response(),
        Fault::Http500 => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain")],
            format!(
                "Internal Server Error: {name} failed on purpose; {}",
                echo(headers)
            ),
        )
            .into_response(),
        Fault::DropConnection => {
            let start = Bytes::from(format!(
                "data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":["
            ));
            let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
                Ok(start),
                Err(std::io::Error::other(
                    "the demo server drops the connection",
                )),
            ];
            (
                [(header::CONTENT_TYPE, "text/event-stream")],
                Body::from_stream(stream::iter(chunks)),
            )
                .into_response()
        }
    }
}

/// The request's headers as one line, `Authorization` first.
fn echo(headers: &HeaderMap) -> String {
    let mut lines: Vec<String> = headers
        .iter()
        .map(|(name, value)| format!("{name}: {}", value.to_str().unwrap_or("<binary>")))
        .collect();
    lines.sort_by_key(|line| !line.starts_with("authorization:"));
    format!("it was sent with {}", lines.join(", "))
}

/// A well-formed JSON `tools/call` result to `id` whose text is `bytes`
/// long, written in chunks; each chunk handed to the connection is added to
/// `written`.
fn result_body(id: &Value, bytes: usize, written: &Arc<AtomicUsize>) -> Response {
    let head = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\""
    );
    let tail = "\"}]}}";
    let filler = Bytes::from("x".repeat(CHUNK_BYTES));
    let full_chunks = bytes / CHUNK_BYTES;
    let rest = bytes % CHUNK_BYTES;
    let parts = std::iter::once(Bytes::from(head))
        .chain(std::iter::repeat_n(filler.clone(), full_chunks))
        .chain(std::iter::once(filler.slice(..rest)))
        .chain(std::iter::once(Bytes::from_static(tail.as_bytes())));
    let written = written.clone();
    let body = stream::iter(parts.map(move |chunk| {
        written.fetch_add(chunk.len(), Ordering::Relaxed);
        Ok::<_, Infallible>(chunk)
    }));
    (
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(body),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fault_has_its_own_tool_and_only_fault_calls_are_taken() {
        for fault in Fault::ALL {
            assert_eq!(Fault::of_tool(fault.tool_name()), Some(fault));
        }
        assert_eq!(descriptors().len(), Fault::ALL.len());
        let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                          "params": {"name": "fault_http_500", "arguments": {"a": 1}}});
        let (fault, id, arguments) = fault_call(&call).expect("a fault call");
        assert_eq!((fault, id), (Fault::Http500, json!(3)));
        assert_eq!(Value::Object(arguments), json!({"a": 1}));
        let other = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                           "params": {"name": "echo", "arguments": {"text": "x"}}});
        assert!(fault_call(&other).is_none());
    }
}
