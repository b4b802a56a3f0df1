//! The MCP side: an rmcp `ServerHandler` over [`DemoState`], served by
//! rmcp's `StreamableHttpService`, which answers both protocol eras on one
//! endpoint — 2026-07-28 (stateless, per-request `_meta`) and 2025-11-25
//! (`initialize`, then `Mcp-Session-Id` on every request).
//!
//! Tool-list changes reach clients as `notifications/tools/list_changed`:
//! 2025-11-25 sessions on their standalone SSE stream (`GET /mcp`),
//! 2026-07-28 clients on a `subscriptions/listen` stream.
//!
//! What the tools say and do lives in [`crate::tools`]; this module only
//! wires them to the protocol.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeRequestParams,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio::sync::watch;

use crate::guard::Allowed;
use crate::state::DemoState;
use crate::tools;

/// One handler per session (or per stateless request); they all share the
/// same [`DemoState`].
#[derive(Debug)]
pub(crate) struct DemoHandler {
    state: DemoState,
    /// Subscribed when the handler is made, i.e. before a
    /// `subscriptions/listen` request is acknowledged, so a change made right
    /// after the client sees the acknowledgement is not missed.
    list_changes: watch::Receiver<u64>,
}

impl DemoHandler {
    fn new(state: DemoState) -> Self {
        let list_changes = state.watch_tool_list();
        Self {
            state,
            list_changes,
        }
    }
}

impl ServerHandler for DemoHandler {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("countersign-demo-mcp", env!("CARGO_PKG_VERSION"))
                    .with_title("Countersign demo MCP server"),
            )
            .with_instructions(
                "A demo server for Countersign. Its notes are made up and live in memory; \
                 fetch_url_preview fetches nothing. Each tool's annotations exercise one case \
                 of a client's approval gate.",
            )
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        if self.state.legacy_only() {
            std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
        } else {
            std::borrow::Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.state.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.state
            .tools()
            .into_iter()
            .find(|tool| tool.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(sealer) = self.state.fixtures()
            && let Some(result) =
                tools::conformance::call(&self.state, sealer, &request, &context).await
        {
            let arguments = request.arguments.clone().unwrap_or_default();
            self.state.record_call(&request.name, &arguments);
            return result;
        }
        if let Some(result) = tools::ask::call(&self.state, &request, &context).await {
            return result;
        }
        let cancelled = context.ct.clone();
        tools::call(
            &self.state,
            request,
            async move { cancelled.cancelled().await },
        )
        .await
        .map(CallToolResponse::from)
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        // Registered before the client sees the answer, so it hears about
        // every list change from then on (on its `GET /mcp` stream).
        self.state.register_legacy_peer(context.peer);
        self.negotiate_initialize(&request)
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // rmcp intersects this with what the client asked for.
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.list_changes.clone();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    if context.accepted().tools_list_changed == Some(true)
                        && context.sink().notify_tool_list_changed().await.is_err()
                    {
                        return Ok(());
                    }
                }
            }
        }
    }
}

/// The rmcp service for `/mcp`, with rmcp's own `Host`/`Origin` checks set
/// to the same lists as [`crate::guard`]. `config` carries the cancellation
/// token that ends open SSE streams at shutdown.
pub(crate) fn service(
    state: DemoState,
    allowed: &Allowed,
    config: StreamableHttpServerConfig,
) -> StreamableHttpService<DemoHandler, LocalSessionManager> {
    let config = config
        .with_allowed_hosts(allowed.hosts().iter().cloned())
        .with_allowed_origins(allowed.origins().iter().cloned());
    StreamableHttpService::new(
        move || Ok(DemoHandler::new(state.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}
