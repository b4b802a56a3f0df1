//! `spawn_server()` on port 0 and a raw JSON-RPC-over-HTTP client that
//! speaks both protocol eras the way RECIPES.md "Raw checks with curl" does.

use std::time::Duration;

use countersign_demo_mcp::DemoServer;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

pub const ERA_2026: &str = "2026-07-28";
pub const ERA_2025: &str = "2025-11-25";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// How long a test waits for an event (a notification on a stream) before
/// failing; never slept through.
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct TestServer {
    pub server: DemoServer,
    pub http: reqwest::Client,
}

pub async fn spawn_server() -> TestServer {
    let server = DemoServer::start("127.0.0.1:0".parse().expect("a socket address"))
        .await
        .expect("the demo server starts on loopback");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("an HTTP client");
    TestServer { server, http }
}

impl TestServer {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.base_url())
    }

    pub fn port(&self) -> u16 {
        self.server.addr().port()
    }

    /// A 2026-07-28 request as raw HTTP: protocol headers, `_meta` in params.
    pub fn request_2026(&self, method: &str, params: Value) -> reqwest::RequestBuilder {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": ERA_2026,
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        let mut request = self
            .http
            .post(self.server.mcp_url())
            .header("Accept", ACCEPT_BOTH)
            .header("MCP-Protocol-Version", ERA_2026)
            .header("Mcp-Method", method);
        if let Some(name) = params.get("name").and_then(Value::as_str) {
            request = request.header("Mcp-Name", name);
        }
        request.json(&json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }))
    }

    /// Sends a 2026-07-28 request and returns the JSON-RPC response message.
    pub async fn rpc_2026(&self, method: &str, params: Value) -> Value {
        let response = self
            .request_2026(method, params)
            .send()
            .await
            .expect("the request reaches the server");
        assert_eq!(response.status(), 200, "{method} over 2026-07-28");
        jsonrpc_response(response, 1).await
    }

    /// `tools/list` over 2026-07-28; the `tools` array.
    pub async fn tools_2026(&self) -> Vec<Value> {
        let message = self.rpc_2026("tools/list", json!({})).await;
        tools_of(&message)
    }

    /// `tools/call` over 2026-07-28; the JSON-RPC response message.
    pub async fn call_2026(&self, tool: &str, arguments: Value) -> Value {
        self.rpc_2026(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        )
        .await
    }

    /// `initialize` + `notifications/initialized` in the 2025-11-25 era.
    pub async fn legacy_session(&self) -> LegacySession<'_> {
        let response = self
            .http
            .post(self.server.mcp_url())
            .header("Accept", ACCEPT_BOTH)
            .json(&json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {
                    "protocolVersion": ERA_2025,
                    "capabilities": {},
                    "clientInfo": { "name": "countersign-demo-mcp tests", "version": "0" }
                }
            }))
            .send()
            .await
            .expect("initialize reaches the server");
        assert_eq!(response.status(), 200, "initialize");
        let session_id = response
            .headers()
            .get("Mcp-Session-Id")
            .expect("initialize answers with an Mcp-Session-Id")
            .to_str()
            .expect("a visible-ASCII session id")
            .to_owned();
        let initialized = jsonrpc_response(response, 0).await;
        assert_eq!(
            initialized["result"]["protocolVersion"], ERA_2025,
            "{initialized}"
        );

        let session = LegacySession {
            server: self,
            session_id,
        };
        let response = session
            .post(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .send()
            .await
            .expect("notifications/initialized reaches the server");
        assert_eq!(response.status(), 202, "notifications/initialized");
        session
    }

    pub async fn calls(&self) -> Value {
        let response = self
            .http
            .get(self.url("/admin/calls"))
            .send()
            .await
            .expect("GET /admin/calls reaches the server");
        assert_eq!(response.status(), 200, "GET /admin/calls");
        response.json().await.expect("the call log is JSON")
    }

    pub async fn admin_post(&self, path: &str, body: Option<Value>) -> reqwest::Response {
        let mut request = self.http.post(self.url(path));
        if let Some(body) = body {
            request = request.json(&body);
        }
        request
            .send()
            .await
            .expect("the admin request reaches the server")
    }
}

pub struct LegacySession<'a> {
    server: &'a TestServer,
    pub session_id: String,
}

impl LegacySession<'_> {
    fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("Accept", HeaderValue::from_static(ACCEPT_BOTH));
        headers.insert("MCP-Protocol-Version", HeaderValue::from_static(ERA_2025));
        headers.insert(
            "Mcp-Session-Id",
            HeaderValue::from_str(&self.session_id).expect("a valid header value"),
        );
        headers
    }

    fn post(&self, body: Value) -> reqwest::RequestBuilder {
        self.server
            .http
            .post(self.server.server.mcp_url())
            .headers(self.headers())
            .json(&body)
    }

    /// Opens the session's standalone SSE stream (`GET /mcp`).
    pub async fn open_stream(&self) -> reqwest::Response {
        let response = self
            .server
            .http
            .get(self.server.server.mcp_url())
            .headers(self.headers())
            .header("Accept", "text/event-stream")
            .send()
            .await
            .expect("GET /mcp reaches the server");
        assert_eq!(response.status(), 200, "GET /mcp");
        response
    }

    pub async fn rpc(&self, id: u64, method: &str, params: Value) -> Value {
        let response = self
            .post(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .send()
            .await
            .expect("the request reaches the server");
        assert_eq!(response.status(), 200, "{method} in a 2025-11-25 session");
        jsonrpc_response(response, id).await
    }

    pub async fn tools(&self) -> Vec<Value> {
        let message = self.rpc(1, "tools/list", json!({})).await;
        tools_of(&message)
    }
}

/// The JSON-RPC response with `id` from a JSON or SSE body.
pub async fn jsonrpc_response(response: reqwest::Response, id: u64) -> Value {
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = response.text().await.expect("a readable body");
    let messages: Vec<Value> = if content_type.starts_with("text/event-stream") {
        sse_messages(&body)
    } else {
        vec![serde_json::from_str(&body).expect("a JSON body")]
    };
    messages
        .into_iter()
        .find(|message| message["id"] == id)
        .unwrap_or_else(|| panic!("no JSON-RPC response with id {id} in {body}"))
}

/// Every JSON message in the `data:` lines of an SSE text.
pub fn sse_messages(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim_start()).ok())
        .collect()
}

/// Reads `stream` until a message with `method` arrives; panics after
/// [`EVENT_TIMEOUT`].
pub async fn next_message_with_method(stream: &mut reqwest::Response, method: &str) -> Value {
    let mut seen = String::new();
    let wait = async {
        loop {
            let chunk = stream
                .chunk()
                .await
                .expect("the stream stays readable")
                .expect("the stream stays open until the message arrives");
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if let Some(message) = sse_messages(&seen)
                .into_iter()
                .find(|message| message["method"] == method)
            {
                return message;
            }
        }
    };
    match tokio::time::timeout(EVENT_TIMEOUT, wait).await {
        Ok(message) => message,
        Err(_) => panic!("no {method} within {EVENT_TIMEOUT:?}"),
    }
}

pub fn tools_of(message: &Value) -> Vec<Value> {
    message["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a tools/list result: {message}"))
        .clone()
}

pub fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|tool| tool["name"] == name)
        .unwrap_or_else(|| panic!("{name} is listed"))
}

pub fn names(tools: &[Value]) -> Vec<&str> {
    tools
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect()
}

/// The annotations each tool carries on the wire; `None` means the tool
/// has no `annotations` member at all.
pub fn expected_annotations() -> Vec<(&'static str, Option<Value>)> {
    let closed_read_only =
        json!({"readOnlyHint": true, "destructiveHint": false, "openWorldHint": false});
    vec![
        (
            "add_note",
            Some(json!({"readOnlyHint": false, "destructiveHint": false, "openWorldHint": false})),
        ),
        // Asks for a URL to be opened while it runs (`tools/ask.rs`).
        (
            "confirm_identity",
            Some(json!({"readOnlyHint": true, "destructiveHint": false, "openWorldHint": true})),
        ),
        (
            "delete_note",
            Some(json!({"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false})),
        ),
        ("drifting_tool", Some(closed_read_only.clone())),
        ("echo", None),
        ("failing_tool", Some(closed_read_only.clone())),
        // openWorldHint omitted: open world, per the MCP spec.
        (
            "fetch_url_preview",
            Some(json!({"readOnlyHint": true, "destructiveHint": false})),
        ),
        // Asks for a form while it runs (`tools/ask.rs`).
        (
            "file_note",
            Some(json!({"readOnlyHint": false, "destructiveHint": false, "openWorldHint": false})),
        ),
        ("search_notes", Some(closed_read_only.clone())),
        ("slow_tool", Some(closed_read_only)),
        // JSON strings, not booleans.
        (
            "stringly_annotated",
            Some(json!({"readOnlyHint": "true", "openWorldHint": "false"})),
        ),
    ]
}

/// The text of a `tools/call` result's first content block.
pub fn text_of(message: &Value) -> &str {
    message["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {message}"))
}
