//! The HTTP client under rmcp's Streamable HTTP transport.
//!
//! [`ConnectorHttp`] is the `StreamableHttpClient` rmcp's transport drives.
//! It hands every message to rmcp's own implementation for
//! `reqwest::Client` (so the caller's client, with the SSRF guard's resolver
//! and timeouts, sends everything), with one exception: a `tools/list`
//! request. For that one it sends the POST itself, keeps the reply's JSON
//! exactly as it arrived in [`RawReplies`], and only then gives rmcp a parsed
//! copy. rmcp's typed `Tool` cannot carry what the gate must see: its
//! annotation hints are `Option<bool>`, so `"readOnlyHint": "true"` fails to
//! parse and unknown annotation keys are dropped.
//!
//! Every response body is bounded to [`MAX_RESPONSE_BYTES`] while it is
//! read, never after: the `tools/list` POST counts the bytes it reads; for
//! every other request rmcp's client gets a JSON limit of that size, and an
//! SSE reply is wrapped so that its events' data may not add up to more.
//! A reply over the bound is replaced, for rmcp, by a JSON-RPC error to the
//! request, and the request's id is marked [`Reply::TooLarge`] in
//! [`RawReplies`], so the session reports [`super::McpError::ResponseTooLarge`]
//! instead of whatever rmcp makes of the error.
//!
//! What the `tools/list` POST keeps from rmcp: the URL, the session id, the
//! bearer token and every header rmcp computed (custom headers, the protocol
//! version, the 2026-07-28 standard headers), and the body rmcp serialized.
//! What it gives up: messages the server interleaves on a `tools/list` SSE
//! stream before the answer (progress, pings) are dropped, and a broken
//! stream is not resumed; the caller sees an error instead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::StreamExt as _;
use reqwest::header::{
    ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE,
};
use reqwest::{Response, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpClient,
    StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use serde_json::{Value, json};

/// The largest response body Countersign reads from an MCP server (DESIGN
/// §2): a whole JSON body, or the data of all events of one SSE reply.
pub(super) const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// The JSON-RPC error code of the stand-in reply to an oversized response
/// (in the range JSON-RPC leaves to implementations).
const TOO_LARGE_CODE: i64 = -32099;

/// The method whose replies are kept raw.
const TOOLS_LIST: &str = "tools/list";

/// Replies nobody claimed (a listing that timed out before its answer came)
/// are forgotten past this many, so the map cannot grow without bound.
const MAX_UNCLAIMED: usize = 16;

type HttpError = StreamableHttpError<reqwest::Error>;

/// What the transport kept about the reply to one request.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Reply {
    /// The whole JSON-RPC message of a `tools/list` reply, as it arrived.
    Raw(Value),
    /// The reply was larger than [`MAX_RESPONSE_BYTES`] and was not read
    /// to its end; rmcp got a JSON-RPC error in its place.
    TooLarge,
}

/// Raw `tools/list` replies and oversized-reply marks, keyed by JSON-RPC
/// request id, from the moment the transport receives them until the
/// session claims them.
#[derive(Debug, Clone, Default)]
pub(super) struct RawReplies(Arc<Mutex<HashMap<String, Reply>>>);

impl RawReplies {
    fn put(&self, id: &RequestId, message: Reply) {
        let mut replies = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if replies.len() >= MAX_UNCLAIMED {
            replies.clear();
        }
        replies.insert(key(id), message);
    }

    /// What was kept about the reply to request `id`, if anything.
    pub(super) fn take(&self, id: &RequestId) -> Option<Reply> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key(id))
    }
}

fn key(id: &RequestId) -> String {
    // `RequestId` is a number or a string; its JSON form tells them apart.
    serde_json::to_string(id).unwrap_or_default()
}

/// A 2025-11-25 session's standalone GET stream, as far as the client
/// knows: whether the server gave a session at all (only then does rmcp
/// open one), and whether the stream's first request has returned — its
/// headers came, or it was refused. A server may send its requests
/// (`elicitation/create`) on that stream alone, and one that finds it not
/// yet open drops them (the TypeScript SDK does): the session is handed
/// over only once it is settled (`mcp::connect`).
#[derive(Debug, Clone)]
pub(super) struct Standalone {
    session: Arc<std::sync::atomic::AtomicBool>,
    settled: Arc<tokio::sync::watch::Sender<bool>>,
}

impl Default for Standalone {
    fn default() -> Self {
        Self {
            session: Arc::default(),
            settled: Arc::new(tokio::sync::watch::Sender::new(false)),
        }
    }
}

impl Standalone {
    fn saw_session(&self) {
        self.session
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    fn settle(&self) {
        self.settled.send_replace(true);
    }

    /// Whether a reply carried `Mcp-Session-Id`.
    pub(super) fn has_session(&self) -> bool {
        self.session.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits until the stream's first request has returned, or `until`;
    /// whether it had.
    pub(super) async fn settled_by(&self, until: tokio::time::Instant) -> bool {
        let mut settled = self.settled.subscribe();
        tokio::time::timeout_at(until, settled.wait_for(|done| *done))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

/// The caller's `reqwest::Client`, as rmcp's transport sees it.
#[derive(Debug, Clone)]
pub(super) struct ConnectorHttp {
    http: reqwest::Client,
    raw: RawReplies,
    standalone: Standalone,
}

impl ConnectorHttp {
    pub(super) fn new(http: reqwest::Client, raw: RawReplies, standalone: Standalone) -> Self {
        Self {
            http,
            raw,
            standalone,
        }
    }

    /// Notes a reply's session, for [`Standalone`].
    fn note_session(&self, response: &Result<StreamableHttpPostResponse, HttpError>) {
        let session = match response {
            Ok(StreamableHttpPostResponse::Json(_, session))
            | Ok(StreamableHttpPostResponse::Sse(_, session)) => session.is_some(),
            _ => false,
        };
        if session {
            self.standalone.saw_session();
        }
    }

    /// The stand-in for a reply to `id` that was too large: marks `id`, and
    /// answers rmcp with a JSON-RPC error to it.
    fn refuse_oversized(&self, id: &RequestId) -> Result<StreamableHttpPostResponse, HttpError> {
        self.raw.put(id, Reply::TooLarge);
        Ok(StreamableHttpPostResponse::Json(
            serde_json::from_value(too_large_error(id))?,
            None,
        ))
    }

    /// Sends a `tools/list` request the way rmcp's reqwest client would, and
    /// keeps its reply raw.
    #[expect(clippy::too_many_arguments, reason = "mirrors rmcp's trait method")]
    async fn post_tools_list(
        &self,
        id: RequestId,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let mut request = self.http.post(uri.as_ref()).header(
            ACCEPT,
            format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
        );
        if let Some(token) = auth_header {
            request = request.bearer_auth(token);
        }
        for (name, value) in custom_headers {
            request = request.header(name, value);
        }
        let session_was_attached = session_id.is_some();
        if let Some(session_id) = session_id {
            request = request.header(HEADER_SESSION_ID, session_id.as_ref());
        }
        let response = request.json(&message).send().await?;

        let status = response.status();
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        let new_session_id = header(HEADER_SESSION_ID);
        let content_type = header(CONTENT_TYPE.as_str());
        let is = |mime: &str| {
            content_type
                .as_deref()
                .is_some_and(|ct| media_type_is(ct, mime))
        };

        if status == StatusCode::UNAUTHORIZED {
            let challenge = header(WWW_AUTHENTICATE.as_str()).unwrap_or_default();
            return Err(StreamableHttpError::AuthRequired(AuthRequiredError::new(
                challenge,
            )));
        }
        if status == StatusCode::FORBIDDEN {
            let challenge = header(WWW_AUTHENTICATE.as_str()).unwrap_or_default();
            return Err(StreamableHttpError::InsufficientScope(
                InsufficientScopeError::new(challenge, None),
            ));
        }
        if status == StatusCode::NOT_FOUND && session_was_attached {
            return Err(StreamableHttpError::SessionExpired);
        }
        if !status.is_success() {
            if is(JSON_MIME_TYPE) {
                let body = read_bounded(response, limits.max_json_response_size).await;
                if let Ok(body) = body
                    && let Ok(error @ ServerJsonRpcMessage::Error(_)) =
                        serde_json::from_slice(&body)
                {
                    return Ok(StreamableHttpPostResponse::Json(error, new_session_id));
                }
            } else if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
                let retry_after = header(RETRY_AFTER.as_str());
                return Err(HttpStatusError::new(status.as_u16(), retry_after).into());
            }
            // The same words rmcp's own client uses, so errors read alike.
            return Err(StreamableHttpError::UnexpectedServerResponse(
                format!("HTTP {status}").into(),
            ));
        }

        let reply = if is(EVENT_STREAM_MIME_TYPE) {
            match read_sse_reply(response, &id, limits.max_sse_event_size).await {
                Err(StreamableHttpError::ResponseBodyTooLarge { .. }) => {
                    return self.refuse_oversized(&id);
                }
                other => other?,
            }
        } else if is(JSON_MIME_TYPE) {
            let body = match read_bounded(response, MAX_RESPONSE_BYTES).await {
                Err(StreamableHttpError::ResponseBodyTooLarge { .. }) => {
                    return self.refuse_oversized(&id);
                }
                other => other?,
            };
            let reply: Value = serde_json::from_slice(&body)?;
            if !answers(&reply, &id) {
                return Err(StreamableHttpError::UnexpectedServerResponse(
                    "the JSON reply does not answer the tools/list request".into(),
                ));
            }
            reply
        } else {
            return Err(StreamableHttpError::UnexpectedContentType(content_type));
        };
        let parsed: ServerJsonRpcMessage = serde_json::from_value(reply.clone())?;
        self.raw.put(&id, Reply::Raw(reply));
        Ok(StreamableHttpPostResponse::Json(parsed, new_session_id))
    }
}

/// The id of `message` if it is a request (which expects a reply).
fn request_id(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
        _ => None,
    }
}

/// The JSON-RPC error that stands in for an oversized reply to `id`.
fn too_large_error(id: &RequestId) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": TOO_LARGE_CODE,
            "message": format!(
                "Countersign stopped reading the response: it is larger than {} MiB",
                MAX_RESPONSE_BYTES / (1024 * 1024)
            ),
        },
    })
}

/// Whether `error` is rmcp's own per-event limit (set to
/// [`MAX_RESPONSE_BYTES`]) stopping a single event while it was read. rmcp
/// keeps that error type private, so its words are matched; should they
/// change, the call still fails, only less clearly (and the demo server's
/// `huge_result` test says so).
fn is_event_too_large(error: &sse_stream::Error) -> bool {
    matches!(error, sse_stream::Error::Body(body) if body.to_string().contains("exceeded the maximum size"))
}

/// `events` (rmcp's SSE reply to request `id`), ended early with a stand-in
/// error once the data, event names and ids of its events add up to more
/// than [`MAX_RESPONSE_BYTES`], or once one event alone does (rmcp stops
/// reading it at that size).
fn bounded_sse(events: BoxedSseResponse, id: RequestId, raw: RawReplies) -> BoxedSseResponse {
    futures_util::stream::unfold(Some((events, 0usize)), move |state| {
        let (id, raw) = (id.clone(), raw.clone());
        async move {
            let (mut events, seen) = state?;
            let stand_in = || {
                raw.put(&id, Reply::TooLarge);
                sse_stream::Sse {
                    data: Some(too_large_error(&id).to_string()),
                    ..Default::default()
                }
            };
            match events.next().await? {
                // Dropping `events` closes the connection: nothing more of
                // the reply is read.
                Err(error) if is_event_too_large(&error) => Some((Ok(stand_in()), None)),
                Err(error) => Some((Err(error), Some((events, seen)))),
                Ok(event) => {
                    let size = [&event.data, &event.event, &event.id]
                        .iter()
                        .map(|field| field.as_ref().map_or(0, String::len))
                        .sum::<usize>();
                    let seen = seen.saturating_add(size);
                    if seen <= MAX_RESPONSE_BYTES {
                        return Some((Ok(event), Some((events, seen))));
                    }
                    Some((Ok(stand_in()), None))
                }
            }
        }
    })
    .boxed()
}

/// The id of `message` if it is a `tools/list` request.
fn tools_list_id(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        ClientJsonRpcMessage::Request(request) if request.request.method() == TOOLS_LIST => {
            Some(request.id.clone())
        }
        _ => None,
    }
}

fn media_type_is(content_type: &str, expected: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|media_type| media_type.trim().eq_ignore_ascii_case(expected))
}

/// Whether `message` is the JSON-RPC response (or error) to request `id`.
fn answers(message: &Value, id: &RequestId) -> bool {
    let Ok(id) = serde_json::to_value(id) else {
        return false;
    };
    message.get("id") == Some(&id)
        && (message.get("result").is_some() || message.get("error").is_some())
}

async fn read_bounded(mut response: Response, max_size: usize) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > max_size {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Reads an SSE body until the event that answers request `id`
/// (<https://html.spec.whatwg.org/multipage/server-sent-events.html>; only
/// `data:` fields matter here, and lines end in LF or CRLF).
async fn read_sse_reply(
    mut response: Response,
    id: &RequestId,
    max_event_size: usize,
) -> Result<Value, HttpError> {
    let too_large = || {
        StreamableHttpError::UnexpectedServerResponse(
            format!("an SSE event exceeded {max_event_size} bytes").into(),
        )
    };
    let mut pending: Vec<u8> = Vec::new();
    let mut data = String::new();
    let mut read = 0usize;
    loop {
        while let Some(end) = pending.iter().position(|&byte| byte == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let line = line.strip_suffix(b"\n").unwrap_or(&line);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = std::str::from_utf8(line).map_err(|_| {
                StreamableHttpError::UnexpectedServerResponse("an SSE line is not UTF-8".into())
            })?;
            if line.is_empty() {
                if let Some(reply) = dispatch(&mut data, id) {
                    return Ok(reply);
                }
            } else if let Some(value) = line.strip_prefix("data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value.strip_prefix(' ').unwrap_or(value));
                if data.len() > max_event_size {
                    return Err(too_large());
                }
            }
            // `event:`, `id:`, `retry:` and `:` comments say nothing about
            // the reply.
        }
        if pending.len() > max_event_size {
            return Err(too_large());
        }
        match response.chunk().await? {
            Some(chunk) => {
                read = read.saturating_add(chunk.len());
                if read > MAX_RESPONSE_BYTES {
                    return Err(StreamableHttpError::ResponseBodyTooLarge {
                        max_size: MAX_RESPONSE_BYTES,
                    });
                }
                pending.extend_from_slice(&chunk);
            }
            None => break,
        }
    }
    // A last event without its blank line (or its last line without LF)
    // still counts; `pending` holds at most that one unterminated line.
    if let Ok(line) = std::str::from_utf8(&pending)
        && let Some(value) = line.trim_end_matches('\r').strip_prefix("data:")
    {
        if !data.is_empty() {
            data.push('\n');
        }
        data.push_str(value.strip_prefix(' ').unwrap_or(value));
    }
    dispatch(&mut data, id).ok_or(StreamableHttpError::UnexpectedEndOfStream)
}

/// Ends the current SSE event: its data, if it is the reply to `id`.
fn dispatch(data: &mut String, id: &RequestId) -> Option<Value> {
    let event = std::mem::take(data);
    let message: Value = serde_json::from_str(&event).ok()?;
    answers(&message, id).then_some(message)
}

impl StreamableHttpClient for ConnectorHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        if let Some(id) = tools_list_id(&message) {
            let response = self
                .post_tools_list(
                    id,
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    limits,
                )
                .await;
            self.note_session(&response);
            return response;
        }
        let id = request_id(&message);
        let mut limits = limits;
        limits.max_json_response_size = MAX_RESPONSE_BYTES;
        limits.max_sse_event_size = MAX_RESPONSE_BYTES;
        let response = self
            .http
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        self.note_session(&response);
        match (response, id) {
            (Err(StreamableHttpError::ResponseBodyTooLarge { .. }), Some(id)) => {
                self.refuse_oversized(&id)
            }
            (Ok(StreamableHttpPostResponse::Sse(events, session_id)), Some(id)) => {
                Ok(StreamableHttpPostResponse::Sse(
                    bounded_sse(events, id, self.raw.clone()),
                    session_id,
                ))
            }
            (response, _) => response,
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        self.http
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse, HttpError> {
        let first = session_id.is_some() && last_event_id.is_none();
        let stream = self
            .http
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await;
        if first {
            self.standalone.settle();
        }
        stream
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, HttpError> {
        let first = session_id.is_some() && last_event_id.is_none();
        let stream = self
            .http
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        if first {
            self.standalone.settle();
        }
        stream
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    #[test]
    fn a_reply_is_recognised_only_by_its_own_id_and_a_result_or_error() {
        let id = NumberOrString::Number(7);
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}"#,
                true,
                "result for id 7",
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}"#,
                true,
                "error for id 7",
            ),
            (
                r#"{"jsonrpc":"2.0","id":"7","result":{}}"#,
                false,
                "string id \"7\" is another id",
            ),
            (
                r#"{"jsonrpc":"2.0","id":8,"result":{}}"#,
                false,
                "another request's reply",
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#,
                false,
                "a notification",
            ),
        ];
        for (message, expected, why) in cases {
            let message: Value = serde_json::from_str(message).expect("test JSON parses");
            assert_eq!(answers(&message, &id), expected, "{why}");
        }
    }

    #[test]
    fn media_types_ignore_parameters_and_case() {
        assert!(media_type_is(
            "application/json; charset=utf-8",
            JSON_MIME_TYPE
        ));
        assert!(media_type_is("Text/Event-Stream", EVENT_STREAM_MIME_TYPE));
        assert!(!media_type_is("text/html", JSON_MIME_TYPE));
    }
}
