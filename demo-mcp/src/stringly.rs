//! The `/mcp` response layer that gives `stringly_annotated` its malformed,
//! string-typed annotations: `{"readOnlyHint": "true", "openWorldHint":
//! "false"}`.
//!
//! Why a response layer: rmcp models annotation hints as `Option<bool>`, its
//! `ServerHandler::list_tools` must return that typed `ListToolsResult`, and
//! `StreamableHttpService` only accepts a `ServerHandler`, so no rmcp hook
//! can put a JSON string where a hint goes. Instead the handler lists the
//! tool with *no* annotations, and this layer rewrites every JSON-RPC result
//! that carries a `tools` array — in a plain JSON body (2026-07-28 requests)
//! or in `data:` lines of an SSE body (2025-11-25 sessions) — to insert the
//! strings. If the rewrite ever missed a message, the client would see a
//! tool with no annotations, which a gate treats as "ask": the failure mode
//! is the safe one.
//!
//! It owns only that rewrite; it does not look at requests.

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use futures_util::{Stream, StreamExt, stream};
use serde_json::Value;

use crate::tools::{STRINGLY_ANNOTATED, stringly_annotations};

/// Bodies bigger than this are passed through untouched (a tool list is a
/// few kilobytes).
const MAX_JSON_BODY: usize = 4 * 1024 * 1024;

/// axum `map_response` middleware for the `/mcp` route.
pub(crate) async fn stringify_annotations(response: Response) -> Response {
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(|value| {
            value
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        });
    match content_type.as_deref() {
        Some("application/json") => rewrite_json_body(response).await,
        Some("text/event-stream") => {
            let (parts, body) = response.into_parts();
            let body = Body::from_stream(rewrite_sse(body.into_data_stream()));
            Response::from_parts(parts, body)
        }
        _ => response,
    }
}

async fn rewrite_json_body(response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_JSON_BODY).await {
        Ok(bytes) => bytes,
        Err(error) => {
            tracing::warn!(%error, "could not read an /mcp JSON response body");
            return Response::from_parts(parts, Body::empty());
        }
    };
    let bytes = rewrite_message(&bytes).map_or(bytes, Bytes::from);
    parts
        .headers
        .insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
    Response::from_parts(parts, Body::from(bytes))
}

/// Rewrites one serialized JSON-RPC message (or batch). `None` when it
/// needs no change.
fn rewrite_message(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut message: Value = serde_json::from_slice(bytes).ok()?;
    let changed = match &mut message {
        Value::Array(batch) => batch
            .iter_mut()
            .fold(false, |changed, m| patch(m) | changed),
        single => patch(single),
    };
    changed.then(|| serde_json::to_vec(&message).expect("a JSON value serializes"))
}

/// Sets the string annotations on `stringly_annotated` if `message` is a
/// result listing tools. Returns whether it changed anything.
pub(crate) fn patch(message: &mut Value) -> bool {
    let Some(tools) = message
        .pointer_mut("/result/tools")
        .and_then(Value::as_array_mut)
    else {
        return false;
    };
    let mut changed = false;
    for tool in tools {
        if tool.get("name").and_then(Value::as_str) == Some(STRINGLY_ANNOTATED)
            && let Some(tool) = tool.as_object_mut()
        {
            tool.insert("annotations".into(), stringly_annotations());
            changed = true;
        }
    }
    changed
}

/// Rewrites the `data:` lines of an SSE body, line by line as they complete.
fn rewrite_sse<S, E>(body: S) -> impl Stream<Item = Result<Bytes, E>> + Send + 'static
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin + 'static,
    E: Send + 'static,
{
    struct Sse<S> {
        body: S,
        pending: Vec<u8>,
        done: bool,
    }
    let initial = Sse {
        body,
        pending: Vec::new(),
        done: false,
    };
    stream::unfold(initial, |mut sse| async move {
        loop {
            if sse.done {
                return None;
            }
            match sse.body.next().await {
                Some(Ok(chunk)) => {
                    sse.pending.extend_from_slice(&chunk);
                    let complete = take_complete_lines(&mut sse.pending);
                    if !complete.is_empty() {
                        return Some((Ok(Bytes::from(rewrite_lines(&complete))), sse));
                    }
                }
                Some(Err(error)) => {
                    sse.done = true;
                    return Some((Err(error), sse));
                }
                None => {
                    sse.done = true;
                    if sse.pending.is_empty() {
                        return None;
                    }
                    let rest = std::mem::take(&mut sse.pending);
                    return Some((Ok(Bytes::from(rewrite_lines(&rest))), sse));
                }
            }
        }
    })
}

/// Splits off every complete line (up to and including the last `\n`)
/// from the front of `pending`. rmcp writes each JSON-RPC message as one
/// `data:` line, so lines are the unit that matters; passing them on as soon
/// as they are complete keeps long-lived streams (keep-alives,
/// notifications) flowing.
fn take_complete_lines(pending: &mut Vec<u8>) -> Vec<u8> {
    match pending.iter().rposition(|byte| *byte == b'\n') {
        Some(last) => {
            let rest = pending.split_off(last + 1);
            std::mem::replace(pending, rest)
        }
        None => Vec::new(),
    }
}

/// Rewrites each `data:` line that holds a JSON-RPC message listing tools.
fn rewrite_lines(lines: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(lines.len() + 64);
    for line in lines.split_inclusive(|byte| *byte == b'\n') {
        let rewritten = line
            .strip_prefix(b"data:")
            .map(|data| data.strip_prefix(b" ").unwrap_or(data))
            .map(|data| data.strip_suffix(b"\n").unwrap_or(data))
            .and_then(rewrite_message);
        match rewritten {
            Some(json) => {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(&json);
                out.push(b'\n');
            }
            None => out.extend_from_slice(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn listing() -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "echo", "inputSchema": {"type": "object"}},
            {"name": "stringly_annotated", "inputSchema": {"type": "object"}}
        ]}})
    }

    #[test]
    fn a_tool_listing_gets_string_annotations_on_stringly_annotated_only() {
        let bytes = serde_json::to_vec(&listing()).expect("serializes");

        let rewritten = rewrite_message(&bytes).expect("a listing is rewritten");

        let value: Value = serde_json::from_slice(&rewritten).expect("still JSON");
        assert_eq!(
            value["result"]["tools"][0].get("annotations"),
            None,
            "echo untouched"
        );
        assert_eq!(
            value["result"]["tools"][1]["annotations"],
            json!({"readOnlyHint": "true", "openWorldHint": "false"})
        );
    }

    #[test]
    fn messages_that_list_no_tools_are_left_alone() {
        let call = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": []}});
        let bytes = serde_json::to_vec(&call).expect("serializes");

        assert_eq!(rewrite_message(&bytes), None);
    }

    #[test]
    fn sse_data_lines_are_rewritten_even_when_split_across_chunks() {
        let event = format!("id: 0\ndata: {}\n\n", listing());
        let body = format!(": keep-alive\n\n{event}data:\nretry: 3000\n\n");
        let (first, second) = body.split_at(body.len() / 2);
        let chunks: Vec<Result<Bytes, std::convert::Infallible>> = vec![
            Ok(Bytes::copy_from_slice(first.as_bytes())),
            Ok(Bytes::copy_from_slice(second.as_bytes())),
        ];

        let out: Vec<u8> = futures_executor(rewrite_sse(stream::iter(chunks)));

        let text = String::from_utf8(out).expect("utf-8");
        assert!(text.starts_with(": keep-alive\n\nid: 0\ndata: {"), "{text}");
        let data = text
            .lines()
            .find_map(|line| line.strip_prefix("data: {"))
            .expect("the listing is still a data line");
        let message: Value = serde_json::from_str(&format!("{{{data}")).expect("still JSON");
        assert_eq!(
            message["result"]["tools"][1]["annotations"],
            json!({"readOnlyHint": "true", "openWorldHint": "false"})
        );
        assert!(text.ends_with("data:\nretry: 3000\n\n"), "{text}");
    }

    fn futures_executor<S>(stream: S) -> Vec<u8>
    where
        S: Stream<Item = Result<Bytes, std::convert::Infallible>>,
    {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime starts");
        runtime.block_on(async {
            let chunks: Vec<_> = stream.collect().await;
            chunks
                .into_iter()
                .flat_map(|chunk| chunk.expect("infallible").to_vec())
                .collect()
        })
    }
}
