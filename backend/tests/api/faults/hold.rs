//! An MCP server (rmcp, in process, 127.0.0.1 port 0) that counts every
//! `tools/call` that reaches it and can hold calls open: what the process
//! and Postgres fault scenarios need to put calls in `executing` on
//! purpose and to prove, afterwards, how often each call really arrived.
//!
//! Tools (none annotated, so every call asks the user first):
//! - `hold`: arrives, then waits until the next [`HoldServer::release`],
//!   then answers "released".
//! - `note`: arrives and answers at once.
//!
//! Arrivals are a `watch` channel, so a test awaits the n-th arrival
//! instead of polling.

use axum::Router;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use std::{net::SocketAddr, sync::Arc, time::Duration};
use tokio::sync::watch;

/// One call as it arrived: the tool and its arguments.
pub type Arrival = (String, Value);

/// The running server; stops when dropped.
pub struct HoldServer {
    addr: SocketAddr,
    arrivals: watch::Receiver<Vec<Arrival>>,
    release: Arc<watch::Sender<u64>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HoldServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct Handler {
    arrivals: Arc<watch::Sender<Vec<Arrival>>>,
    release: Arc<watch::Sender<u64>>,
}

impl HoldServer {
    /// Starts on a loopback port.
    pub async fn start() -> Self {
        let (arrivals_tx, arrivals) = watch::channel(Vec::new());
        let handler = Handler {
            arrivals: Arc::new(arrivals_tx),
            release: Arc::new(watch::channel(0).0),
        };
        let release = handler.release.clone();
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default().with_sse_keep_alive(None),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("address");
        let router = Router::new().route_service("/mcp", service);
        let task = tokio::spawn(async move {
            axum::serve(listener, router).await.expect("hold server");
        });
        Self {
            addr,
            arrivals,
            release,
            task,
        }
    }

    /// `host:port`, for `COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The connector URL.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Every call that arrived so far.
    pub fn arrivals(&self) -> Vec<Arrival> {
        self.arrivals.borrow().clone()
    }

    /// Waits (at most `within`) until `n` calls have arrived; returns them
    /// all, or `None` on time-out.
    pub async fn until_arrivals(&self, n: usize, within: Duration) -> Option<Vec<Arrival>> {
        let mut rx = self.arrivals.clone();
        tokio::time::timeout(within, rx.wait_for(|seen| seen.len() >= n))
            .await
            .ok()?
            .ok()
            .map(|seen| seen.clone())
    }

    /// Lets every call held now answer (later ones are held again).
    pub fn release(&self) {
        self.release.send_modify(|round| *round += 1);
    }
}

fn tool(name: &str, description: &str) -> Tool {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    let Value::Object(schema) = schema else {
        unreachable!("an object")
    };
    Tool::new(name.to_owned(), description.to_owned(), Arc::new(schema))
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            tool("hold", "Waits until the test releases it."),
            tool("note", "Answers at once."),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        // The round is read before the arrival is announced, so a release
        // that follows the announcement always frees this call.
        let mut released = self.release.subscribe();
        let arrived_in = *released.borrow_and_update();
        self.arrivals
            .send_modify(|seen| seen.push((name.clone(), arguments)));
        let text = match name.as_str() {
            "hold" => {
                // The sender lives as long as the server.
                let _ = released.wait_for(|round| *round > arrived_in).await;
                "released"
            }
            "note" => "noted",
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no tool named {other}"),
                    None,
                ));
            }
        };
        Ok(CallToolResponse::from(CallToolResult::success(vec![
            ContentBlock::text(text),
        ])))
    }
}
