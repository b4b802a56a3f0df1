//! The MCP client: how the server talks to users' remote MCP servers
//! ("connectors", DESIGN §2) over Streamable HTTP, on rmcp's client side.
//!
//! What it owns:
//!
//! - [`connect`]: the handshake. It prefers the stateless 2026-07-28
//!   protocol (`server/discover`, then per-request `_meta`) and falls back
//!   to 2025-11-25 (`initialize` + `Mcp-Session-Id`) in two steps: rmcp's
//!   `ClientLifecycleMode::Auto` falls back by itself when a server answers
//!   `server/discover` with a JSON-RPC error (or not within 10 s); when the
//!   discovery fails any other way that still means "an HTTP server that
//!   does not speak 2026-07-28" (it answers `200 {}`, a discover result with
//!   no version in common, a parse failure), [`connect`] starts again on a
//!   fresh transport with the legacy handshake, saying
//!   `ProtocolVersion::LATEST_WITH_INITIALIZE` in its `initialize`.
//!   Unreachable, unauthorized and timed-out servers are not retried.
//! - [`McpSession::list`]: every page of `tools/list`, as
//!   [`ToolDescriptor`]s whose annotations are the exact JSON the server
//!   sent (see `transport` for how the raw reply is kept), never from
//!   rmcp's response cache, which is switched off for the session.
//! - The bounds on what a server sends (DESIGN §2): at most [`MAX_TOOLS`]
//!   tools and [`MAX_DESCRIPTOR_BYTES`] per descriptor, or the whole
//!   listing fails; at most [`MAX_RESPONSE_BYTES`] per response body,
//!   enforced while the body is read (`transport`). Tools whose
//!   `x-mcp-header` annotations are invalid, and tools whose names hold
//!   `/`, control or invisible characters, are dropped from the listing,
//!   with the reason ([`DroppedTool`]): rmcp only logs them, and a caller
//!   that offered them would let the model call them.
//! - [`McpSession::call_tool`]: one `tools/call`, no retries, bounded in
//!   time and in size ([`ToolResult`]). With an answer to elicitation
//!   ([`McpSettings::elicitation`]: a person through [`AskUser`], the
//!   chat's input card; or the probe's headless `--elicit`), the session
//!   declares `elicitation: {form: {}, url: {}}`, answers the legacy
//!   `elicitation/create` request (at most [`MAX_INPUT_ROUNDS`] per
//!   session; the call's timeout stops while a person is asked), and
//!   drives the 2026-07-28
//!   `InputRequiredResult` rounds itself: each retry is a new request (a
//!   new JSON-RPC id) with `requestState` echoed exactly as received and
//!   `inputResponses` for that round only, at most [`MAX_INPUT_ROUNDS`]
//!   times. Not rmcp's own `call_tool` loop: it would send each round
//!   without the call timeout and without the response bound below.
//! - [`descriptor_digest`]: the SHA-256 a gate grant pins (DESIGN §5).
//! - [`McpError`]: failures in words a user can act on, without secrets.
//!
//! What it deliberately does not do: decide whether a call may run (the
//! gate does), check URLs against the SSRF rules (the caller passes a
//! client from `ssrf::guarded_client`, and this module sends everything,
//! rmcp's requests included, through it), store anything, or answer the
//! server's own requests for sampling or roots. Without an answer (listing
//! sessions: Test/Refresh) the client declares no elicitation capability,
//! declines an `elicitation/create`, and a tool that returns an
//! `InputRequiredResult` fails with [`McpError::ToolFailed`].

mod elicit;
mod error;
mod transport;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, Implementation, InputRequest, InputRequests, InputResponses,
    ListToolsRequest, PaginatedRequestParams, ProtocolVersion, ServerResult,
    UrlElicitationCapability,
};
use rmcp::service::{
    ClientCacheConfig, ClientInitializeError, ClientLifecycleMode, ClientServiceExt,
    PeerRequestOptions, RequestContext, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::time::Instant;

use crate::config::Secret;
use elicit::Pause;
pub use elicit::{AskUser, Elicitation, HeadlessAnswer};
pub use error::McpError;
use error::{Phase, Redactor};
use transport::{ConnectorHttp, RawReplies, Reply, Standalone};

/// The most tools one connector may list (DESIGN §2).
pub const MAX_TOOLS: usize = 500;
/// The largest descriptor, in bytes of its canonical JSON (what
/// [`descriptor_digest`] hashes) (DESIGN §2).
pub const MAX_DESCRIPTOR_BYTES: usize = 64 * 1024;
/// The largest response body read from an MCP server, in bytes (DESIGN §2).
pub const MAX_RESPONSE_BYTES: usize = transport::MAX_RESPONSE_BYTES;
/// How many times one call answers a server's request for input and
/// retries before giving up (DESIGN §6a: rounds are capped at 5).
pub const MAX_INPUT_ROUNDS: usize = 5;

/// How long a legacy session that declares input waits for its standalone
/// GET stream to open before it is handed over (see [`connect`]).
const STANDALONE_WAIT: Duration = Duration::from_secs(5);

/// A tool the server listed that is not offered, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedTool {
    /// Its name on the server (redacted, cut to a readable length).
    pub name: String,
    /// Why, in words a user can act on.
    pub reason: String,
}

/// What `tools/list` said, within the bounds: the tools that may be
/// offered, in the server's order, and the ones dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolListing {
    /// Tools that passed every check.
    pub tools: Vec<ToolDescriptor>,
    /// Each of `tools` (same order) as the server sent it: every member,
    /// `_meta`, `icons` and unknown keys included (JSON objects are
    /// unordered, so only member order is not kept).
    pub sent: Vec<Value>,
    /// Tools left out, with the reason.
    pub dropped: Vec<DroppedTool>,
}

/// Where a connector lives and how to authenticate to it.
#[derive(Debug, Clone)]
pub struct McpTarget {
    /// The Streamable HTTP endpoint, e.g. `https://mcp.example.com/mcp`.
    pub url: reqwest::Url,
    /// Extra headers sent with every request (API keys, tenant ids). Values
    /// are secrets: connector auth headers are stored encrypted (DESIGN §3).
    pub headers: Vec<(String, Secret)>,
    /// Sent as `Authorization: Bearer <token>`.
    pub bearer: Option<Secret>,
}

impl McpTarget {
    /// A target with no headers and no token.
    pub fn new(url: reqwest::Url) -> Self {
        Self {
            url,
            headers: Vec::new(),
            bearer: None,
        }
    }
}

/// Limits for one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSettings {
    /// How long one `tools/call` may take (DESIGN §6: 60 s by default).
    pub call_timeout: Duration,
    /// How long [`connect`] (the whole handshake, fallback included) and
    /// [`McpSession::list_tools`] (all pages together) may each take.
    pub list_timeout: Duration,
    /// The longest [`ToolResult::text`] handed on, in characters (Unicode
    /// scalar values); longer text is cut, with a note.
    pub max_result_chars: usize,
    /// How the session answers a server's requests for user input (DESIGN
    /// §6a). `None` (the default, and every listing session): no
    /// elicitation capability is declared and nothing is answered but
    /// "decline".
    pub elicitation: Option<Elicitation>,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            call_timeout: Duration::from_secs(60),
            list_timeout: Duration::from_secs(30),
            max_result_chars: 20_000,
            elicitation: None,
        }
    }
}

/// One tool as the server describes it in `tools/list`. Every field is what
/// the server sent, unparsed where the gate needs the raw JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDescriptor {
    /// The tool's name on that server.
    pub name: String,
    /// `title`, when the server sent a string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `description`, when the server sent a string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `inputSchema` as sent (`null` when the server left it out).
    pub input_schema: Value,
    /// `outputSchema` as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// `annotations` exactly as sent: string-typed hints stay strings,
    /// unknown keys stay. `None` only when the key is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

/// What a `tools/call` returned, bounded for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The server's `isError`: the tool ran and reported failure.
    pub is_error: bool,
    /// The text content blocks, one per line; other content described
    /// (`[image: image/png, 1234 bytes]`). When the result has no content
    /// but structured content, its compact JSON. At most
    /// `max_result_chars` characters plus the cut note.
    pub text: String,
    /// `structuredContent`, unless it alone exceeds `max_result_chars` when
    /// serialized (then `None`, `truncated` and a note in `text`).
    pub structured: Option<Value>,
    /// Whether anything was cut or dropped.
    pub truncated: bool,
}

/// A live connection to one connector.
pub struct McpSession {
    service: RunningService<RoleClient, Client>,
    raw: RawReplies,
    protocol_version: String,
    settings: McpSettings,
    redactor: Redactor,
    /// Time spent asking a person during a legacy call.
    pause: Arc<Pause>,
}

impl std::fmt::Debug for McpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSession")
            .field("protocol_version", &self.protocol_version)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Our side of a session, as rmcp sees it: what the client declares, and
/// its answers to the server's requests.
#[derive(Debug, Clone)]
struct Client {
    info: ClientConfig,
    elicitation: Option<Elicitation>,
    /// Held while a person answers, so the call's timeout stops.
    pause: Arc<Pause>,
    /// `elicitation/create` requests answered so far.
    asked: Arc<AtomicUsize>,
}

impl Client {
    fn new(elicitation: Option<Elicitation>, pause: Arc<Pause>) -> Self {
        let mut capabilities = ClientCapabilities::default();
        if elicitation.is_some() {
            // Declared only where there is an answer (MCP: a client that
            // declares a capability must handle its requests).
            capabilities.elicitation = Some(
                ElicitationCapability::new()
                    .with_form(FormElicitationCapability::new())
                    .with_url(UrlElicitationCapability::new()),
            );
        }
        Self {
            info: ClientConfig::new(
                capabilities,
                Implementation::new("countersign", env!("CARGO_PKG_VERSION")),
            ),
            elicitation,
            pause,
            asked: Arc::default(),
        }
    }
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(how) = &self.elicitation else {
            // rmcp's default, for a session that declared no capability.
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        if self.asked.fetch_add(1, Ordering::Relaxed) >= MAX_INPUT_ROUNDS {
            tracing::warn!("mcp: the server asked for input too often; declining unasked");
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        }
        let _paused = self.pause.hold();
        Ok(how.answer(&request, None).await)
    }
}

/// Which handshake a connection attempt uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handshake {
    /// `server/discover` for 2026-07-28, rmcp falling back to `initialize`
    /// when the server says it is legacy.
    Auto,
    /// `initialize` with 2025-11-25 only.
    Legacy,
}

/// Connects to `target` through `http` and negotiates the protocol.
///
/// `http` should come from `ssrf::guarded_client`: every request of the
/// session, rmcp's own included, goes through it, so its resolver and
/// timeouts apply.
pub async fn connect(
    http: reqwest::Client,
    target: &McpTarget,
    settings: &McpSettings,
) -> Result<McpSession, McpError> {
    let redactor = Redactor::for_target(target);
    let config = transport_config(target)?;
    let deadline = Instant::now() + settings.list_timeout;
    let timed_out = || McpError::Timeout {
        after: Some(settings.list_timeout),
    };
    let raw = RawReplies::default();
    let standalone = Standalone::default();
    let pause = Arc::new(Pause::new());

    let attempt = |handshake| {
        let transport = StreamableHttpClientTransport::with_client(
            ConnectorHttp::new(http.clone(), raw.clone(), standalone.clone()),
            config.clone(),
        );
        tokio::time::timeout_at(
            deadline,
            start(
                transport,
                handshake,
                Client::new(settings.elicitation.clone(), pause.clone()),
            ),
        )
    };
    let service = match attempt(Handshake::Auto).await {
        Err(_) => return Err(timed_out()),
        Ok(Ok(service)) => service,
        Ok(Err(modern)) => {
            let modern_error = error::from_initialize(&modern, &redactor);
            // Auto already tried `initialize` when the server rejected
            // `server/discover` with a JSON-RPC error.
            let legacy_tried = matches!(modern, ClientInitializeError::LegacyFallbackFailed { .. });
            if legacy_tried || !modern_error.may_be_legacy() {
                return Err(modern_error);
            }
            tracing::debug!(
                error = %modern_error,
                "mcp: server/discover failed; retrying with the 2025-11-25 handshake"
            );
            match attempt(Handshake::Legacy).await {
                Err(_) => return Err(timed_out()),
                Ok(Ok(service)) => service,
                Ok(Err(legacy)) => {
                    let legacy_error = error::from_initialize(&legacy, &redactor);
                    // A server that did not understand discovery at all is
                    // best described by what it said to `initialize`.
                    let pick_legacy = matches!(modern_error, McpError::NotMcp { .. })
                        || !legacy_error.may_be_legacy();
                    return Err(if pick_legacy {
                        legacy_error
                    } else {
                        modern_error
                    });
                }
            }
        }
    };

    // A legacy server may ask for input only on the session's standalone
    // GET stream, which rmcp opens in the background after `initialized`:
    // a call sent before its headers came back would be asked about on no
    // stream at all, and wait out the call's timeout. With input declared,
    // the session is handed over once that stream is open or refused (at
    // most STANDALONE_WAIT: the stream is optional, a server may never
    // answer the GET).
    if settings.elicitation.is_some() && standalone.has_session() {
        let until = deadline.min(Instant::now() + STANDALONE_WAIT);
        if !standalone.settled_by(until).await {
            tracing::warn!(
                "mcp: the server's standalone stream did not open in time; its requests may be lost"
            );
        }
    }

    // The gate pins what the server says now, never a remembered answer.
    service
        .peer()
        .set_response_cache_config(ClientCacheConfig::disabled())
        .await;
    let protocol_version = service
        .peer()
        .peer_info()
        .map(|info| info.protocol_version.to_string())
        .unwrap_or_default();
    Ok(McpSession {
        service,
        raw,
        protocol_version,
        settings: settings.clone(),
        redactor,
        pause,
    })
}

async fn start(
    transport: StreamableHttpClientTransport<ConnectorHttp>,
    handshake: Handshake,
    mut client: Client,
) -> Result<RunningService<RoleClient, Client>, ClientInitializeError> {
    match handshake {
        Handshake::Auto => {
            client
                .serve_with_lifecycle(
                    transport,
                    ClientLifecycleMode::Auto {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
                    },
                )
                .await
        }
        Handshake::Legacy => {
            // Without this, `initialize` would name 2026-07-28, which has no
            // handshake, and strict servers refuse it.
            client.info = client
                .info
                .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
            client
                .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
                .await
        }
    }
}

fn transport_config(target: &McpTarget) -> Result<StreamableHttpClientTransportConfig, McpError> {
    if !matches!(target.url.scheme(), "http" | "https") {
        return Err(McpError::InvalidTarget(
            "the URL must start with https://".to_owned(),
        ));
    }
    let mut headers = HashMap::new();
    for (name, value) in &target.headers {
        let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
            McpError::InvalidTarget(format!("{name:?} is not a valid HTTP header name"))
        })?;
        let lower = name.as_str().to_owned();
        // The same list the connector was saved against.
        if countersign_api::is_reserved_header(&lower) {
            return Err(McpError::InvalidTarget(format!(
                "the header {lower} is set by Countersign itself"
            )));
        }
        if name == AUTHORIZATION && target.bearer.is_some() {
            return Err(McpError::InvalidTarget(
                "set either a bearer token or an Authorization header, not both".to_owned(),
            ));
        }
        let mut value = HeaderValue::from_str(value.expose()).map_err(|_| {
            McpError::InvalidTarget(format!("the value of the header {lower} is not valid"))
        })?;
        value.set_sensitive(true);
        if headers.insert(name, value).is_some() {
            return Err(McpError::InvalidTarget(format!(
                "the header {lower} is set twice"
            )));
        }
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(target.url.as_str())
        .custom_headers(headers)
        // rmcp would re-send a request after re-initializing an expired
        // session; a tool call is never sent twice.
        .reinit_on_expired_session(false);
    if let Some(bearer) = &target.bearer {
        if HeaderValue::from_str(&format!("Bearer {}", bearer.expose())).is_err() {
            return Err(McpError::InvalidTarget(
                "the bearer token contains characters a header cannot carry".to_owned(),
            ));
        }
        config = config.auth_header(bearer.expose());
    }
    Ok(config)
}

/// A server sending more pages than this is looping or hostile.
const MAX_PAGES: usize = 100;

impl McpSession {
    /// The protocol version the server agreed to, e.g. `"2026-07-28"` or
    /// `"2025-11-25"`.
    pub fn protocol_version(&self) -> String {
        self.protocol_version.clone()
    }

    /// The tools of [`Self::list`] that may be offered.
    pub async fn list_tools(&self) -> Result<Vec<ToolDescriptor>, McpError> {
        self.list().await.map(|listing| listing.tools)
    }

    /// Every tool the server lists right now, following `nextCursor` to
    /// the last page, in the server's order; those with invalid
    /// `x-mcp-header` annotations set apart as dropped.
    ///
    /// Fails with [`McpError::Protocol`] when a tool has no name, a name
    /// repeats (which descriptor would the gate pin?) or a cursor repeats;
    /// with [`McpError::TooManyTools`] past [`MAX_TOOLS`] tools, and with
    /// [`McpError::DescriptorTooLarge`] for a descriptor past
    /// [`MAX_DESCRIPTOR_BYTES`]: a listing is taken whole or not at all.
    pub async fn list(&self) -> Result<ToolListing, McpError> {
        let deadline = Instant::now() + self.settings.list_timeout;
        let mut tools = Vec::new();
        let mut sent = Vec::new();
        let mut dropped = Vec::new();
        let mut listed = 0usize;
        let mut names = HashSet::new();
        let mut cursors = HashSet::new();
        let mut cursor: Option<String> = None;
        let too_many = |listed, more| McpError::TooManyTools {
            listed,
            more,
            max: MAX_TOOLS,
        };
        for _ in 0..MAX_PAGES {
            let result = self.list_page(cursor.take(), deadline).await?;
            let Some(page) = result.get("tools").and_then(Value::as_array) else {
                return Err(McpError::Protocol(
                    "its tools/list result has no tools array".to_owned(),
                ));
            };
            for raw in page {
                listed += 1;
                if listed > MAX_TOOLS {
                    // Only counted, for the message.
                    continue;
                }
                let tool = descriptor(raw).ok_or_else(|| {
                    McpError::Protocol("it listed a tool without a name".to_owned())
                })?;
                if !names.insert(tool.name.clone()) {
                    return Err(McpError::Protocol(format!(
                        "it listed the tool {:?} twice",
                        self.redactor.scrub(&tool.name)
                    )));
                }
                let bytes = canonical_descriptor(&tool).len();
                if bytes > MAX_DESCRIPTOR_BYTES {
                    return Err(McpError::DescriptorTooLarge {
                        tool: self.redactor.scrub(&tool.name),
                        bytes,
                        max: MAX_DESCRIPTOR_BYTES,
                    });
                }
                let invalid = invalid_tool_name(&tool.name).or_else(|| {
                    invalid_mcp_header(&tool.input_schema).map(|reason| {
                        format!(
                            "its input schema has an invalid x-mcp-header annotation ({reason})"
                        )
                    })
                });
                match invalid {
                    Some(reason) => dropped.push(DroppedTool {
                        name: self.redactor.scrub(&visible(&tool.name)),
                        reason: self.redactor.scrub(&reason),
                    }),
                    None => {
                        tools.push(tool);
                        sent.push(raw.clone());
                    }
                }
            }
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) if !next.is_empty() => {
                    if listed > MAX_TOOLS {
                        return Err(too_many(listed, true));
                    }
                    if !cursors.insert(next.to_owned()) {
                        return Err(McpError::Protocol(
                            "its tools/list pages run in a circle".to_owned(),
                        ));
                    }
                    cursor = Some(next.to_owned());
                }
                _ if listed > MAX_TOOLS => return Err(too_many(listed, false)),
                _ => {
                    return Ok(ToolListing {
                        tools,
                        sent,
                        dropped,
                    });
                }
            }
        }
        Err(McpError::Protocol(format!(
            "it listed tools on more than {MAX_PAGES} pages"
        )))
    }

    /// One `tools/list` page: the raw `result` object.
    async fn list_page(
        &self,
        cursor: Option<String>,
        deadline: Instant,
    ) -> Result<Map<String, Value>, McpError> {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(McpError::Timeout {
                after: Some(self.settings.list_timeout),
            });
        }
        // Sent as a plain request, not through `Peer::list_tools`, so no
        // cache is even consulted; the reply is read raw (see `transport`).
        let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(
            PaginatedRequestParams::default().with_cursor(cursor),
        ));
        let peer = self.service.peer();
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(remaining))
            .await
            .map_err(|e| error::from_service(&e, Phase::ListTools, &self.redactor))?;
        let id = handle.id.clone();
        let outcome = handle.await_response().await;
        let raw = self.raw.take(&id);
        if raw == Some(Reply::TooLarge) {
            return Err(McpError::ResponseTooLarge {
                max: MAX_RESPONSE_BYTES,
            });
        }
        outcome.map_err(|e| match e {
            rmcp::ServiceError::Timeout { .. } => McpError::Timeout {
                after: Some(self.settings.list_timeout),
            },
            e => error::from_service(&e, Phase::ListTools, &self.redactor),
        })?;
        let Some(Reply::Raw(mut raw)) = raw else {
            return Err(McpError::Protocol(
                "its tools/list answer could not be read".to_owned(),
            ));
        };
        match raw.get_mut("result").map(Value::take) {
            Some(Value::Object(result)) => Ok(result),
            _ => Err(McpError::Protocol(
                "its tools/list result is not an object".to_owned(),
            )),
        }
    }

    /// Calls tool `name` once with `arguments`, within `call_timeout`.
    ///
    /// Nothing is retried: a timeout (after which rmcp tells the server the
    /// request is cancelled) or a transport failure is reported as such,
    /// and the call may or may not have run. The one exception is the
    /// 2026-07-28 multi-round-trip: a server that answers with an
    /// `InputRequiredResult` has not finished the call, and a session with
    /// a headless answer ([`McpSettings::elicitation`]) answers its
    /// requests and sends the call again — a new request, carrying this
    /// round's `inputResponses` and the `requestState` exactly as received
    /// (opaque: never read, never kept for another call) — each round
    /// within `call_timeout`, at most [`MAX_INPUT_ROUNDS`] rounds.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<ToolResult, McpError> {
        let mut params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let mut rounds = 0;
        loop {
            let asked = match self.call_once(params.clone()).await? {
                ServerResult::InputRequiredResult(asked) => asked,
                ServerResult::CreateTaskResult(_) => {
                    return Err(McpError::ToolFailed(
                        "the server turned the call into a background task, which Countersign \
                         does not support yet"
                            .to_owned(),
                    ));
                }
                other => {
                    let value = serde_json::to_value(&other).map_err(|_| {
                        McpError::Protocol("its tools/call result could not be read".to_owned())
                    })?;
                    return tool_result(&value, self.settings.max_result_chars);
                }
            };
            let Some(how) = &self.settings.elicitation else {
                return Err(McpError::ToolFailed(
                    "the tool asked the user for more input, which Countersign does not support \
                     yet"
                    .to_owned(),
                ));
            };
            if rounds == MAX_INPUT_ROUNDS {
                return Err(McpError::ToolFailed(format!(
                    "the tool asked for input again after {MAX_INPUT_ROUNDS} rounds; Countersign \
                     stopped answering"
                )));
            }
            rounds += 1;
            let responses = input_responses(
                how,
                asked.input_requests.unwrap_or_default(),
                asked.request_state.as_deref(),
            )
            .await?;
            if responses.is_empty() {
                // Only `requestState` (a server shedding load): not at once.
                let pause = 50u64 << rounds.min(3);
                tokio::time::sleep(Duration::from_millis(pause)).await;
            }
            params.input_responses = (!responses.is_empty()).then_some(responses);
            params.request_state = asked.request_state;
        }
    }

    /// One `tools/call` request: its result, whatever kind it is, within
    /// `call_timeout` not counting the time a person spends answering the
    /// server's requests on the call's stream ([`Pause`]). On timeout the
    /// server is told the request is cancelled, as rmcp's own timeout does.
    async fn call_once(&self, params: CallToolRequestParams) -> Result<ServerResult, McpError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let mut handle = self
            .service
            .peer()
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| error::from_service(&e, Phase::CallTool, &self.redactor))?;
        let id = handle.id.clone();
        let started = Instant::now();
        let mut paused = self.pause.subscribe();
        let outcome = loop {
            let now = *paused.borrow_and_update();
            let deadline =
                (now.holds == 0).then(|| started + self.settings.call_timeout + now.total);
            tokio::select! {
                reply = &mut handle.rx => {
                    break reply.unwrap_or(Err(rmcp::ServiceError::TransportClosed));
                }
                _ = paused.changed() => {}
                () = sleep_until_some(deadline) => {
                    let timeout = self.settings.call_timeout;
                    if let Err(error) = handle.cancel(Some("request timeout".to_owned())).await {
                        tracing::debug!(%error, "mcp: cannot tell the server a call timed out");
                    }
                    break Err(rmcp::ServiceError::Timeout { timeout });
                }
            }
        };
        if self.raw.take(&id) == Some(Reply::TooLarge) {
            return Err(McpError::ResponseTooLarge {
                max: MAX_RESPONSE_BYTES,
            });
        }
        outcome.map_err(|e| error::from_service(&e, Phase::CallTool, &self.redactor))
    }

    /// Ends the session (a legacy session is also deleted on the server,
    /// best effort).
    pub async fn close(self) {
        if let Err(error) = self.service.cancel().await {
            tracing::debug!(%error, "mcp: the session task ended abnormally");
        }
    }
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until_some(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The answers to one round's input requests, keyed as the server keyed
/// them, asked one after another. Only elicitation is answered: a session
/// never declares sampling or roots, so a server asking for them gets no
/// retry.
async fn input_responses(
    how: &Elicitation,
    requests: InputRequests,
    request_state: Option<&str>,
) -> Result<InputResponses, McpError> {
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let InputRequest::Elicitation(request) = request else {
            return Err(McpError::ToolFailed(
                "the tool asked for something other than user input (sampling or roots), \
                 which Countersign does not provide"
                    .to_owned(),
            ));
        };
        let answer = how.answer(&request.params, request_state).await;
        let answer = serde_json::to_value(answer)
            .map_err(|_| McpError::Protocol("an answer could not be written".to_owned()))?;
        responses.insert(key, answer);
    }
    Ok(responses)
}

/// A descriptor from one raw `tools/list` entry; `None` without a name.
fn descriptor(raw: &Value) -> Option<ToolDescriptor> {
    let tool = raw.as_object()?;
    let text = |key: &str| tool.get(key).and_then(Value::as_str).map(str::to_owned);
    Some(ToolDescriptor {
        name: text("name")?,
        title: text("title"),
        description: text("description"),
        input_schema: tool.get("inputSchema").cloned().unwrap_or(Value::Null),
        output_schema: tool.get("outputSchema").cloned(),
        annotations: tool.get("annotations").cloned(),
    })
}

/// A [`ToolResult`] from the JSON of a `tools/call` result.
fn tool_result(value: &Value, max_chars: usize) -> Result<ToolResult, McpError> {
    let Some(result) = value.as_object() else {
        return Err(McpError::Protocol(
            "its tools/call result is not an object".to_owned(),
        ));
    };
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let mut structured = result
        .get("structuredContent")
        .filter(|v| !v.is_null())
        .cloned();
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut text = blocks.iter().map(describe).collect::<Vec<_>>().join("\n");
    if blocks.is_empty()
        && let Some(structured) = &structured
    {
        text = structured.to_string();
    }

    let mut truncated = false;
    let total = text.chars().count();
    if total > max_chars {
        text = text.chars().take(max_chars).collect();
        text.push_str(&format!(
            "\n\n[Countersign cut this result: {total} characters, first {max_chars} shown.]"
        ));
        truncated = true;
    }
    if let Some(size) = structured
        .as_ref()
        .map(|v| v.to_string().chars().count())
        .filter(|&size| size > max_chars)
    {
        structured = None;
        text.push_str(&format!(
            "\n\n[Countersign dropped the structured result: {size} characters, more than \
             {max_chars}.]"
        ));
        truncated = true;
    }
    Ok(ToolResult {
        is_error,
        text,
        structured,
        truncated,
    })
}

/// One content block as text: text as is, anything else described.
fn describe(block: &Value) -> String {
    let field = |key: &str| block.get(key).and_then(Value::as_str);
    let kind = field("type").unwrap_or("unknown");
    let mime = |v: Option<&str>| v.unwrap_or("unknown type").to_owned();
    match kind {
        "text" => field("text").unwrap_or_default().to_owned(),
        "image" | "audio" => format!(
            "[{kind}: {}, {} bytes]",
            mime(field("mimeType")),
            base64_size(field("data").unwrap_or_default())
        ),
        "resource" => {
            let resource = block.get("resource");
            let of = |key: &str| resource.and_then(|r| r.get(key)).and_then(Value::as_str);
            let uri = of("uri").unwrap_or("unknown URI");
            match (of("text"), of("blob")) {
                (Some(text), _) => format!("[resource: {uri}]\n{text}"),
                (None, Some(blob)) => format!(
                    "[resource: {uri}, {}, {} bytes]",
                    mime(of("mimeType")),
                    base64_size(blob)
                ),
                (None, None) => format!("[resource: {uri}]"),
            }
        }
        "resource_link" => match field("name") {
            Some(name) => format!(
                "[resource link: {name}, {}]",
                field("uri").unwrap_or("unknown URI")
            ),
            None => format!("[resource link: {}]", field("uri").unwrap_or("unknown URI")),
        },
        other => format!("[{other} content]"),
    }
}

/// How many bytes a base64 string decodes to.
fn base64_size(data: &str) -> usize {
    let digits = data
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .count();
    digits * 3 / 4
}

/// The digest an always-allow grant pins (DESIGN §5): lowercase hex SHA-256
/// of the RFC 8785 (JCS) canonical JSON of
///
/// ```json
/// {"name": …, "title": …, "description": …, "inputSchema": …,
///  "outputSchema": …, "annotations": …}
/// ```
///
/// where `title`, `description`, `outputSchema` and `annotations` are left
/// out when absent (`None`), and `inputSchema` is always present (`null`
/// when the server sent none). Values are the server's JSON as received, so
/// any change to any of these six fields, including to a single annotation,
/// changes the digest; key order and whitespace never do.
pub fn descriptor_digest(tool: &ToolDescriptor) -> String {
    crate::digest::sha256_hex(canonical_descriptor(tool))
}

/// The RFC 8785 bytes [`descriptor_digest`] hashes; their length is what
/// [`MAX_DESCRIPTOR_BYTES`] bounds.
fn canonical_descriptor(tool: &ToolDescriptor) -> Vec<u8> {
    let mut object = Map::new();
    object.insert("name".to_owned(), Value::String(tool.name.clone()));
    let mut optional = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            object.insert(key.to_owned(), value);
        }
    };
    optional("title", tool.title.clone().map(Value::String));
    optional("description", tool.description.clone().map(Value::String));
    optional("inputSchema", Some(tool.input_schema.clone()));
    optional("outputSchema", tool.output_schema.clone());
    optional("annotations", tool.annotations.clone());
    crate::digest::canonical_bytes(&Value::Object(object))
}

/// Why a tool's name cannot be offered: a `/` (policy patterns are
/// `host/tool`), control characters, or invisible ones (default-ignorable
/// code points: zero-width, bidi controls), which would let a name read as
/// another and slip past an admin's pattern. `None` when it is fine.
fn invalid_tool_name(name: &str) -> Option<String> {
    if name.contains('/') {
        return Some("its name contains \"/\"".to_owned());
    }
    if name.chars().any(char::is_control) {
        return Some("its name contains control characters".to_owned());
    }
    if name.chars().any(countersign_api::characters::is_invisible) {
        return Some("its name contains invisible characters".to_owned());
    }
    None
}

/// `text` with every control character (newlines too: a name has none)
/// and invisible one written out (`⟨U+200B⟩`), so a dropped tool's name
/// can be shown as it is.
fn visible(text: &str) -> String {
    use countersign_api::characters::{code_point, is_invisible};
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() || is_invisible(c) {
            out.push_str(&format!("\u{27e8}{}\u{27e9}", code_point(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// Why the `x-mcp-header` annotations of `input_schema` are invalid, or
/// `None` when they are valid (or absent).
///
/// The rules are SEP-2243's, as rmcp 3.11 checks them (its
/// `validate_param_header_annotations` is crate-private, and rmcp only logs
/// and hides such a tool from its own typed listing, which Countersign does
/// not use): an annotation sits on a property reached from the root
/// through `properties` keys alone (never on the root, never under
/// `items`, `$defs`, `anyOf`…), is a non-empty RFC 9110 token, is unique
/// case-insensitively, and annotates a `string`, `integer` or `boolean`
/// property. Checked in every protocol era: a tool is either fit to offer
/// or not.
fn invalid_mcp_header(input_schema: &Value) -> Option<String> {
    const KEY: &str = "x-mcp-header";
    let Value::Object(root) = input_schema else {
        return None;
    };
    if root.contains_key(KEY) {
        return Some("x-mcp-header must annotate a property, not the schema root".to_owned());
    }
    if off_chain_annotation(root, true) {
        return Some("x-mcp-header must sit on a properties-only path from the root".to_owned());
    }
    let mut annotated = Vec::new();
    collect_annotations(root.get("properties"), &mut Vec::new(), &mut annotated);
    let mut seen = HashSet::new();
    for (path, schema) in annotated {
        let prop = path.join(".");
        let Some(header) = schema.get(KEY).and_then(Value::as_str) else {
            return Some(format!("property {prop}: x-mcp-header must be a string"));
        };
        if header.is_empty() {
            return Some(format!("property {prop}: x-mcp-header must not be empty"));
        }
        if !header.chars().all(is_tchar) {
            return Some(format!(
                "property {prop}: x-mcp-header {header:?} is not a valid HTTP header name"
            ));
        }
        if !seen.insert(header.to_ascii_lowercase()) {
            return Some(format!(
                "property {prop}: x-mcp-header {header:?} is used twice (ignoring case)"
            ));
        }
        if !matches!(
            schema.get("type").and_then(Value::as_str),
            Some("string" | "integer" | "boolean")
        ) {
            return Some(format!(
                "property {prop}: x-mcp-header needs a string, integer or boolean property"
            ));
        }
    }
    None
}

/// Every property schema carrying `x-mcp-header` along `properties` chains.
fn collect_annotations<'a>(
    properties: Option<&'a Value>,
    path: &mut Vec<&'a str>,
    out: &mut Vec<(Vec<&'a str>, &'a Value)>,
) {
    let Some(Value::Object(properties)) = properties else {
        return;
    };
    for (name, schema) in properties {
        path.push(name);
        if schema.get("x-mcp-header").is_some() {
            out.push((path.clone(), schema));
        }
        collect_annotations(schema.get("properties"), path, out);
        path.pop();
    }
}

/// Whether `schema` holds an `x-mcp-header` off the `properties` chain;
/// `on_chain` says whether `schema` is the root or a property reached from
/// it through `properties` alone.
fn off_chain_annotation(schema: &Map<String, Value>, on_chain: bool) -> bool {
    let in_map = |map: &Value, on_chain: bool| {
        map.as_object()
            .is_some_and(|map| map.values().any(|s| off_chain_subschema(s, on_chain)))
    };
    schema.iter().any(|(key, value)| match key.as_str() {
        "x-mcp-header" => !on_chain,
        "properties" => in_map(value, on_chain),
        "$defs" | "definitions" | "dependencies" | "dependentSchemas" | "patternProperties" => {
            in_map(value, false)
        }
        // Instance data or property names, not subschemas.
        "default" | "const" | "enum" | "examples" | "dependentRequired" => false,
        _ => off_chain_subschema(value, false),
    })
}

fn off_chain_subschema(value: &Value, on_chain: bool) -> bool {
    match value {
        Value::Object(schema) => off_chain_annotation(schema, on_chain),
        Value::Array(items) => items.iter().any(|item| off_chain_subschema(item, false)),
        _ => false,
    }
}

/// An RFC 9110 §5.6.2 token character.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 44, item 3: a name that reads as another (or holds the `/`
    /// of a policy pattern) is never offered. Seen to fail before names
    /// were checked: every one of these was listed.
    #[test]
    fn tool_names_with_a_slash_control_or_invisible_characters_are_refused() {
        for (name, why) in [
            ("mail/send_message", "\"/\""),
            ("send\u{7}message", "control"),
            ("se\u{200B}nd_message", "invisible"),
            ("send_message\u{202E}", "invisible"),
            ("\u{FEFF}send_message", "invisible"),
        ] {
            let reason = invalid_tool_name(name).unwrap_or_else(|| panic!("{name:?} passed"));
            assert!(reason.contains(why), "{name:?}: {reason}");
        }
        for fine in ["send_message", "r\u{e9}sum\u{e9}", "\u{0455}end", "a.b-c"] {
            assert_eq!(invalid_tool_name(fine), None, "{fine:?}");
        }
        assert_eq!(
            visible("se\u{200B}nd\n"),
            "se\u{27e8}U+200B\u{27e9}nd\u{27e8}U+000A\u{27e9}"
        );
    }
    use serde_json::json;

    fn tool(value: Value) -> ToolDescriptor {
        descriptor(&value).expect("test tool has a name")
    }

    fn sample() -> Value {
        json!({
            "name": "search_notes",
            "title": "Search notes",
            "description": "Searches the notebook.",
            "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}},
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        })
    }

    #[test]
    fn sessions_and_their_futures_can_move_between_tasks() {
        fn send_sync<T: Send + Sync>(_: &T) {}
        fn send<T: Send>(_: T) {}
        // Compiles only if the turn task can own and share a session.
        let _check = |session: McpSession, http: reqwest::Client, target: McpTarget| {
            send_sync(&session);
            send(connect(http, &target, &McpSettings::default()));
            send(session.list_tools());
            send(session.call_tool("x", Map::new()));
            send(session.close());
        };
    }

    #[test]
    fn the_digest_of_a_fixed_descriptor_is_a_known_value() {
        // Computed independently: sha256 of the JCS text
        // {"annotations":{"openWorldHint":false,"readOnlyHint":true},
        //  "description":"Searches the notebook.","inputSchema":{"properties":
        //  {"query":{"type":"string"}},"type":"object"},"name":"search_notes",
        //  "title":"Search notes"} (without the line breaks).
        assert_eq!(descriptor_digest(&tool(sample())), KNOWN_DIGEST);
    }

    const KNOWN_DIGEST: &str = "23a455b3506ecac928d9c57d0c60f2492ed7ccbf6a079ea00610a3aa6b0b453a";

    #[test]
    fn key_order_and_whitespace_do_not_change_the_digest() {
        let reordered: Value = serde_json::from_str(
            r#"{ "annotations" : { "openWorldHint" : false , "readOnlyHint" : true },
                 "inputSchema" : { "properties" : { "query" : { "type" : "string" } },
                                   "type" : "object" },
                 "description" : "Searches the notebook.",
                 "title" : "Search notes", "name" : "search_notes" }"#,
        )
        .expect("test JSON parses");

        assert_eq!(
            descriptor_digest(&tool(reordered)),
            descriptor_digest(&tool(sample()))
        );
    }

    #[test]
    fn any_field_change_changes_the_digest() {
        let original = descriptor_digest(&tool(sample()));
        type Change = (&'static str, fn(&mut Value));
        let changes: [Change; 9] = [
            ("name", |t| t["name"] = json!("search_notes2")),
            ("title", |t| t["title"] = json!("Search all notes")),
            ("title removed", |t| {
                t.as_object_mut().map(|o| o.remove("title"));
            }),
            ("description", |t| t["description"] = json!("Searches.")),
            ("input schema", |t| {
                t["inputSchema"]["required"] = json!(["query"])
            }),
            ("output schema added", |t| {
                t["outputSchema"] = json!({"type": "object"})
            }),
            ("hint flipped", |t| {
                t["annotations"]["openWorldHint"] = json!(true)
            }),
            ("hint as a string", |t| {
                t["annotations"]["readOnlyHint"] = json!("true")
            }),
            ("unknown annotation key", |t| {
                t["annotations"]["x-vendor"] = json!(1)
            }),
        ];
        for (what, change) in changes {
            let mut changed = sample();
            change(&mut changed);
            assert_ne!(descriptor_digest(&tool(changed)), original, "{what}");
        }
    }

    #[test]
    fn the_digest_is_lowercase_hex_sha256() {
        let digest = descriptor_digest(&tool(sample()));
        assert_eq!(digest.len(), 64);
        assert!(digest.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')));
    }

    #[test]
    fn a_long_result_is_cut_with_a_note() {
        let result = json!({"content": [{"type": "text", "text": "é".repeat(30)}]});

        let cut = tool_result(&result, 10).expect("result reads");

        assert!(cut.truncated);
        assert_eq!(
            cut.text,
            format!(
                "{}\n\n[Countersign cut this result: 30 characters, first 10 shown.]",
                "é".repeat(10)
            )
        );
    }

    #[test]
    fn non_text_content_is_described() {
        let result = json!({"content": [
            {"type": "text", "text": "Here:"},
            {"type": "image", "mimeType": "image/png", "data": "AAECAwQ="},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello"}},
            {"type": "resource_link", "uri": "file:///b", "name": "b"},
            {"type": "hologram"}
        ], "isError": false});

        let read = tool_result(&result, 1000).expect("result reads");

        assert_eq!(
            read.text,
            "Here:\n[image: image/png, 5 bytes]\n[resource: file:///a.txt]\nhello\n\
             [resource link: b, file:///b]\n[hologram content]"
        );
        assert!(!read.is_error && !read.truncated);
    }

    #[test]
    fn structured_content_stands_in_for_missing_text_and_is_dropped_when_too_big() {
        let small = tool_result(&json!({"content": [], "structuredContent": {"n": 1}}), 100)
            .expect("result reads");
        assert_eq!(small.text, r#"{"n":1}"#);
        assert_eq!(small.structured, Some(json!({"n": 1})));

        let big = tool_result(
            &json!({"content": [{"type": "text", "text": "ok"}],
                    "structuredContent": {"s": "x".repeat(50)}}),
            20,
        )
        .expect("result reads");
        assert_eq!(big.structured, None);
        assert!(big.truncated);
        assert!(
            big.text
                .starts_with("ok\n\n[Countersign dropped the structured result")
        );
    }

    #[test]
    fn x_mcp_header_annotations_are_checked_as_sep_2243_says() {
        let cases: [(Value, bool, &str); 14] = [
            (json!({"type": "object"}), true, "no annotations"),
            (Value::Null, true, "no schema at all"),
            (
                json!({"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "Region"}}}),
                true,
                "a token on a string property",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "object", "properties":
                    {"b": {"type": "integer", "x-mcp-header": "B"}}}}}),
                true,
                "nested along properties",
            ),
            (
                json!({"type": "object", "x-mcp-header": "Root"}),
                false,
                "on the root",
            ),
            (
                json!({"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": ""}}}),
                false,
                "empty",
            ),
            (
                json!({"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "Bad Header"}}}),
                false,
                "a space is not a token character",
            ),
            (
                json!({"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "A\r\nB"}}}),
                false,
                "a line break",
            ),
            (
                json!({"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": 7}}}),
                false,
                "not a string",
            ),
            (
                json!({"type": "object", "properties": {
                    "a": {"type": "string", "x-mcp-header": "Dup"},
                    "b": {"type": "string", "x-mcp-header": "dup"}}}),
                false,
                "the same header twice, ignoring case",
            ),
            (
                json!({"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}),
                false,
                "a number is not a primitive it allows",
            ),
            (
                json!({"type": "object", "properties": {"l": {"type": "array",
                    "items": {"type": "string", "x-mcp-header": "Item"}}}}),
                false,
                "under items",
            ),
            (
                json!({"type": "object", "$defs": {"x": {"type": "string", "x-mcp-header": "X"}}}),
                false,
                "under $defs",
            ),
            (
                json!({"type": "object", "properties": {"c": {"type": "string",
                    "default": {"x-mcp-header": "not a schema"}}}}),
                true,
                "inside instance data",
            ),
        ];
        for (schema, valid, why) in cases {
            assert_eq!(
                invalid_mcp_header(&schema).is_none(),
                valid,
                "{why}: {schema}"
            );
        }
    }

    #[test]
    fn the_descriptor_bound_counts_the_canonical_bytes_that_are_digested() {
        let mut raw = sample();
        raw["description"] = json!("d".repeat(MAX_DESCRIPTOR_BYTES));
        let big = tool(raw);
        assert!(canonical_descriptor(&big).len() > MAX_DESCRIPTOR_BYTES);
        assert_eq!(
            descriptor_digest(&big),
            crate::digest::sha256_hex(canonical_descriptor(&big))
        );
    }

    #[test]
    fn reserved_and_malformed_headers_are_refused() {
        let url: reqwest::Url = "https://mcp.example.com/mcp".parse().expect("URL parses");
        let cases = [
            ("Mcp-Session-Id", "x", "a header rmcp sets"),
            ("Accept", "x", "a header rmcp sets"),
            ("bad header", "x", "not a header name"),
            ("X-Key", "line\nbreak", "not a header value"),
        ];
        for (name, value, why) in cases {
            let mut target = McpTarget::new(url.clone());
            target.headers.push((name.into(), Secret::new(value)));
            assert!(
                matches!(transport_config(&target), Err(McpError::InvalidTarget(_))),
                "{why}: {name}"
            );
        }
        let mut both = McpTarget::new(url);
        both.bearer = Some(Secret::new("t0ken"));
        both.headers
            .push(("Authorization".into(), Secret::new("Basic x")));
        assert!(matches!(
            transport_config(&both),
            Err(McpError::InvalidTarget(_))
        ));
    }
}
