//! MCP servers (and things that are not MCP servers) for the client's
//! tests, all on 127.0.0.1 port 0:
//!
//! - [`Fixture`]: an rmcp server with paginated tools, a description the
//!   test can change, long and non-text results, a log of request headers
//!   and an optional bearer check; either era, or legacy only.
//! - [`LegacyServer`]: a hand-written 2025-11-25 server that answers
//!   `server/discover` with `200 {}` and `tools/list` as SSE with
//!   string-typed annotations, the case rmcp's own `Auto` cannot handle.
//! - [`serve_router`]: any axum router (a 404, a web page).
//! - [`closed_port`]: an address nothing listens on.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use countersign::mcp::{McpSettings, McpTarget};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
    Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A server task on a loopback port; aborted when dropped.
#[derive(Debug)]
pub struct Running {
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Running {
    pub fn url(&self, path: &str) -> reqwest::Url {
        format!("http://{}{path}", self.addr)
            .parse()
            .expect("a loopback URL parses")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves `router` on 127.0.0.1, port 0.
pub async fn serve_router(router: Router) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let addr = listener
        .local_addr()
        .expect("a bound listener has an address");
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
            .await
            .expect("test server runs");
    });
    Running { addr, task }
}

/// A loopback address nothing listens on (the port was just bound and
/// released).
pub async fn closed_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    listener
        .local_addr()
        .expect("a bound listener has an address")
}

/// The HTTP client a test hands to `connect` (the product passes the SSRF
/// guard's client, which would refuse loopback).
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .build()
        .expect("a reqwest client builds")
}

/// Settings with test-sized limits.
pub fn settings() -> McpSettings {
    McpSettings {
        call_timeout: Duration::from_secs(20),
        list_timeout: Duration::from_secs(20),
        max_result_chars: 10_000,
        ..McpSettings::default()
    }
}

pub fn target(url: reqwest::Url) -> McpTarget {
    McpTarget::new(url)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

// ---------------------------------------------------------------------------
// Fixture: an rmcp server.

/// Which protocol eras the fixture accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eras {
    Both,
    LegacyOnly,
}

/// How the fixture treats credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    Open,
    /// `Authorization: Bearer <token>` or 401 with a challenge.
    Bearer(String),
    /// Every request gets 403, without a challenge.
    Forbidden,
}

/// One request as the fixture saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub headers: HeaderMap,
}

#[derive(Debug)]
pub struct Fixture {
    pub server: Running,
    /// Every POST that reached `/mcp`, with its JSON-RPC method.
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// The description `paged_second` carries; change it between lists.
    pub description: Arc<Mutex<String>>,
}

impl Fixture {
    pub async fn start(eras: Eras, gate: Gate) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let description = Arc::new(Mutex::new("The second page's tool.".to_owned()));
        let handler_description = description.clone();
        let config = StreamableHttpServerConfig::default().with_sse_keep_alive(None);
        let service = StreamableHttpService::new(
            move || {
                Ok(FixtureHandler {
                    eras,
                    description: handler_description.clone(),
                })
            },
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let router =
            Router::new()
                .route_service("/mcp", service)
                .layer(middleware::from_fn_with_state(
                    (seen.clone(), gate),
                    record_and_check,
                ));
        Self {
            server: serve_router(router).await,
            seen,
            description,
        }
    }

    pub fn url(&self) -> reqwest::Url {
        self.server.url("/mcp")
    }

    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.seen).clone()
    }
}

async fn record_and_check(
    State((seen, gate)): State<(Arc<Mutex<Vec<Seen>>>, Gate)>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let method = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| parts.method.to_string());
    lock(&seen).push(Seen {
        method,
        headers: parts.headers.clone(),
    });
    match &gate {
        Gate::Open => {}
        Gate::Bearer(token) => {
            let expected = format!("Bearer {token}");
            let given = parts.headers.get(header::AUTHORIZATION);
            if given.and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
                return (
                    StatusCode::UNAUTHORIZED,
                    [(header::WWW_AUTHENTICATE, "Bearer realm=\"fixture\"")],
                    "no",
                )
                    .into_response();
            }
        }
        Gate::Forbidden => return (StatusCode::FORBIDDEN, "forbidden").into_response(),
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

struct FixtureHandler {
    eras: Eras,
    description: Arc<Mutex<String>>,
}

fn object(schema: Value) -> Arc<rmcp::model::JsonObject> {
    match schema {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(Default::default()),
    }
}

impl FixtureHandler {
    fn page(&self, cursor: Option<&str>) -> ListToolsResult {
        let (tools, next) = match cursor {
            None => (
                vec![
                    Tool::new(
                        "paged_first",
                        "The first page's tool.",
                        object(json!({"type": "object"})),
                    )
                    .with_annotations(ToolAnnotations::new().read_only(true).open_world(false)),
                ],
                Some("page-2".to_owned()),
            ),
            Some("page-2") => (
                vec![
                    Tool::new(
                        "paged_second",
                        lock(&self.description).clone(),
                        object(json!({"type": "object"})),
                    ),
                    Tool::new(
                        "long_text",
                        "Returns `length` characters.",
                        object(json!({"type": "object",
                                      "properties": {"length": {"type": "integer"}}})),
                    ),
                    Tool::new(
                        "pictures",
                        "Returns text and an image.",
                        object(json!({"type": "object"})),
                    ),
                ],
                None,
            ),
            Some(_) => (Vec::new(), None),
        };
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = next;
        // A client that cached this would serve it for a minute.
        result.ttl_ms = Some(60_000);
        result.cache_scope = Some(CacheScope::Public);
        result
    }
}

impl ServerHandler for FixtureHandler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        match self.eras {
            Eras::Both => Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS),
            Eras::LegacyOnly => {
                Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
            }
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let cursor = request.and_then(|r| r.cursor);
        Ok(self.page(cursor.as_deref()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            "long_text" => {
                let length = arguments
                    .get("length")
                    .and_then(Value::as_u64)
                    .unwrap_or(10);
                let length = usize::try_from(length).unwrap_or(usize::MAX);
                CallToolResult::success(vec![ContentBlock::text("x".repeat(length))])
            }
            "pictures" => CallToolResult::success(vec![
                ContentBlock::text("A picture:"),
                // Eight bytes, base64.
                ContentBlock::image("iVBORw0KGgo=", "image/png"),
            ]),
            "paged_first" | "paged_second" => {
                CallToolResult::success(vec![ContentBlock::text("ok")])
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no tool named {other}"),
                    None,
                ));
            }
        };
        Ok(CallToolResponse::from(result))
    }
}

// ---------------------------------------------------------------------------
// LegacyServer: a hand-written 2025-11-25 server.

pub const LEGACY_SESSION: &str = "legacy-session-1";

/// What the legacy server recorded.
#[derive(Debug, Default)]
pub struct LegacyLog {
    /// The `protocolVersion` the client's `initialize` named.
    pub initialize_version: Option<String>,
    /// `Mcp-Session-Id` of each `tools/list` request (`None` when absent).
    pub tools_list_sessions: Vec<Option<String>>,
    /// Whether the client ended the session with `DELETE`.
    pub deleted: bool,
}

#[derive(Debug)]
pub struct LegacyServer {
    pub server: Running,
    pub log: Arc<Mutex<LegacyLog>>,
}

impl LegacyServer {
    pub async fn start() -> Self {
        let log = Arc::new(Mutex::new(LegacyLog::default()));
        let router = Router::new()
            .route(
                "/mcp",
                axum::routing::post(legacy_post)
                    .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
                    .delete(legacy_delete),
            )
            .with_state(log.clone());
        Self {
            server: serve_router(router).await,
            log,
        }
    }

    pub fn url(&self) -> reqwest::Url {
        self.server.url("/mcp")
    }
}

/// The annotations `legacy_tool` carries: strings where booleans belong,
/// and a key no spec defines.
pub fn legacy_annotations() -> Value {
    json!({"readOnlyHint": "true", "openWorldHint": false, "x-vendor-risk": "low"})
}

async fn legacy_delete(State(log): State<Arc<Mutex<LegacyLog>>>) -> StatusCode {
    lock(&log).deleted = true;
    StatusCode::OK
}

async fn legacy_post(
    State(log): State<Arc<Mutex<LegacyLog>>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let session = headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let json_reply = |result: Value| {
        axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
    };
    match method {
        // What some older servers do with a method they do not know.
        "server/discover" => axum::Json(json!({})).into_response(),
        "initialize" => {
            lock(&log).initialize_version = message
                .pointer("/params/protocolVersion")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let mut response = json_reply(json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy-fixture", "version": "1.0.0"}
            }));
            response.headers_mut().insert(
                "mcp-session-id",
                LEGACY_SESSION.parse().expect("a valid header value"),
            );
            response
        }
        "tools/list" => {
            lock(&log).tools_list_sessions.push(session.clone());
            if session.as_deref() != Some(LEGACY_SESSION) {
                return (StatusCode::BAD_REQUEST, "missing session").into_response();
            }
            let reply = json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [{
                "name": "legacy_tool",
                "description": "A tool on a 2025-11-25 server.",
                "inputSchema": {"type": "object"},
                "annotations": legacy_annotations()
            }]}});
            // A priming event, a notification, then the answer: the client
            // must pick the answer out of the stream.
            let progress = json!({"jsonrpc": "2.0", "method": "notifications/message",
                                  "params": {"level": "info", "data": "listing"}});
            let sse = format!(
                "id: 0\nretry: 1000\ndata:\n\nevent: message\ndata: {progress}\n\n\
                 event: message\r\ndata: {reply}\r\n\r\n"
            );
            ([(header::CONTENT_TYPE, "text/event-stream")], sse).into_response()
        }
        "tools/call" => {
            let text = message
                .pointer("/params/arguments/text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            json_reply(json!({"content": [{"type": "text", "text": text}], "isError": false}))
        }
        _ if id.is_null() => StatusCode::ACCEPTED.into_response(),
        _ => axum::Json(json!({"jsonrpc": "2.0", "id": id,
                               "error": {"code": -32601, "message": "method not found"}}))
        .into_response(),
    }
}
