//! # countersign-demo-mcp
//!
//! A loopback-only MCP server whose tools cover every case Countersign's
//! tool-call gate must decide (DESIGN.md §5): read-only and closed-world,
//! open-world by omission, no annotations, destructive, non-destructive
//! write, string-typed annotations, a descriptor that drifts, a tool that
//! arrives late, a slow tool and a failing tool. `cargo xtask run` starts it
//! for the product's "Available" connectors; tests start it in-process with
//! [`DemoServer::start`] on port 0.
//!
//! Layout:
//!
//! - [`tools`] — the tool descriptors and what each call does (the contract);
//! - `state` — notebook, drift, call log ([`DemoState`]);
//! - `mcp` — the rmcp `ServerHandler` and `StreamableHttpService` at `/mcp`;
//! - `stringly` — the `/mcp` response layer that writes the string-typed
//!   annotations rmcp's types cannot carry;
//! - `admin` — `/admin/*`: call log, drift, add-tool, hostile modes, reset;
//! - [`tools::hostile`] — listings and results beyond a client's bounds (600
//!   tools, a 70 KiB descriptor, an 18 MiB listing, a 17 MiB result, an
//!   invalid `x-mcp-header`), one mode at a time;
//! - `tools::conformance` — the tools the official MCP conformance suite's
//!   server scenarios call, listed only with `--conformance-fixtures`
//!   ([`DemoState::with_conformance_fixtures`]);
//! - `conformance` — that suite's other fixtures (prompts, resources, a
//!   resource template, completion, logging), served and declared only in
//!   the same mode;
//! - [`faults`] — fault modes: tools whose calls are answered wrongly on
//!   purpose (a hang, garbage, a cut event stream, huge bodies, a JSON-RPC
//!   error, HTTP 500, a dropped connection), listed only with
//!   `--fault-modes` ([`DemoState::with_fault_modes`]);
//! - `guard` — loopback-only listening, `Host`/`Origin` checks;
//! - [`oauth`] — OAuth mode: `/mcp` needs a bearer token that the server's
//!   own loopback authorization server issued (metadata, registration,
//!   a sign-in page, PKCE, rotating refresh) — for testing OAuth clients.
//!
//! Routes: `POST|GET|DELETE /mcp` (MCP Streamable HTTP, both the 2026-07-28
//! stateless era and the 2025-11-25 session era), and the admin routes
//! listed in `admin`. Every route refuses a foreign `Host` or `Origin` with
//! 403.
//!
//! Deliberately not here: authentication outside OAuth mode (the server
//! holds only demo data and listens only on loopback), persistence, and any
//! real network access — `fetch_url_preview` makes its preview up.

mod admin;
mod conformance;
pub mod faults;
mod guard;
mod mcp;
pub mod oauth;
mod state;
mod stringly;
pub mod tools;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use rmcp::transport::StreamableHttpServerConfig;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use state::HostileMode;
pub use state::{CallLog, CallRecord, DemoState, DriftField, Note};
pub use tools::hostile;

/// Serves the demo MCP server on `listener` with fresh state until
/// `shutdown` resolves.
///
/// Fails at once, without serving, if the listener is not on loopback.
pub async fn serve(
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_with_state(listener, DemoState::new(), shutdown).await
}

/// Like [`serve`], with state the caller keeps a handle on.
pub async fn serve_with_state(
    listener: TcpListener,
    state: DemoState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_with(listener, state, None, shutdown).await
}

/// Like [`serve_with_state`], in OAuth mode when `oauth` is given.
pub async fn serve_with(
    listener: TcpListener,
    state: DemoState,
    oauth: Option<oauth::AuthServer>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let addr = listener.local_addr()?;
    guard::ensure_loopback(addr)?;
    let config = StreamableHttpServerConfig::default();
    // Cancelling rmcp's token ends open SSE streams (standalone GET streams,
    // `subscriptions/listen`), which graceful shutdown would otherwise wait on.
    let open_streams = config.cancellation_token.clone();
    axum::serve(listener, app(state, addr, config, oauth))
        .with_graceful_shutdown(async move {
            shutdown.await;
            open_streams.cancel();
        })
        .await
}

/// Every route, guarded. `addr` is where the server listens; it decides
/// which `Host` and `Origin` values are accepted.
fn app(
    state: DemoState,
    addr: SocketAddr,
    config: StreamableHttpServerConfig,
    oauth: Option<oauth::AuthServer>,
) -> Router {
    let allowed = guard::Allowed::for_addr(addr);
    let mcp = mcp::service(state.clone(), &allowed, config);
    // The fault layer sits outside the annotation rewrite: its answers are
    // exactly what it wrote.
    let mut mcp_routes = Router::new()
        .route_service("/mcp", mcp)
        .layer(axum::middleware::map_response(
            stringly::stringify_annotations,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            faults::misbehave,
        ));
    if let Some(server) = &oauth {
        mcp_routes = mcp_routes.layer(axum::middleware::from_fn_with_state(
            server.clone(),
            oauth::require_bearer,
        ));
    }
    let mut routes = mcp_routes.merge(admin::routes().with_state(state)).route(
        "/confirm-identity",
        axum::routing::get(tools::ask::confirmation_page),
    );
    if let Some(server) = oauth {
        routes = routes.merge(oauth::routes(server));
    }
    routes.layer(axum::middleware::from_fn_with_state(
        allowed,
        guard::loopback_only,
    ))
}

/// A demo server running in the background of the current tokio runtime,
/// for tests and for `cargo xtask run`. Dropping it shuts the server down.
#[derive(Debug)]
pub struct DemoServer {
    addr: SocketAddr,
    state: DemoState,
    oauth: Option<oauth::AuthServer>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl DemoServer {
    /// Binds `addr` (port 0 picks a free port) and starts serving.
    ///
    /// Refuses any non-loopback address before binding it.
    pub async fn start(addr: SocketAddr) -> io::Result<Self> {
        Self::start_inner(addr, DemoState::new(), None).await
    }

    /// Like [`Self::start`], serving `state` (e.g.
    /// [`DemoState::with_conformance_fixtures`]).
    pub async fn start_with(addr: SocketAddr, state: DemoState) -> io::Result<Self> {
        Self::start_inner(addr, state, None).await
    }

    /// Like [`DemoServer::start`], in OAuth mode ([`oauth`]): access tokens
    /// live `token_ttl`.
    pub async fn start_with_oauth(addr: SocketAddr, token_ttl: Duration) -> io::Result<Self> {
        Self::start_inner(addr, DemoState::new(), Some(token_ttl)).await
    }

    async fn start_inner(
        addr: SocketAddr,
        state: DemoState,
        token_ttl: Option<Duration>,
    ) -> io::Result<Self> {
        guard::ensure_loopback(addr)?;
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let oauth = token_ttl.map(|ttl| oauth::AuthServer::new(addr, ttl));
        let (shutdown, stop) = oneshot::channel::<()>();
        let task = tokio::spawn(serve_with(
            listener,
            state.clone(),
            oauth.clone(),
            async move {
                // Resolves on `stop()` and when the handle is dropped.
                let _ = stop.await;
            },
        ));
        Ok(Self {
            addr,
            state,
            oauth,
            shutdown: Some(shutdown),
            task: Some(task),
        })
    }

    /// Where the server listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The server's root, `http://127.0.0.1:PORT` (admin routes hang off it).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The live state: call log, drift, reset.
    pub fn state(&self) -> &DemoState {
        &self.state
    }

    /// The authorization server, in OAuth mode.
    pub fn oauth(&self) -> Option<&oauth::AuthServer> {
        self.oauth.as_ref()
    }

    /// The tool calls executed so far.
    pub fn calls(&self) -> CallLog {
        self.state.calls()
    }

    /// Stops accepting, ends open streams, and waits for in-flight requests.
    pub async fn stop(mut self) -> io::Result<()> {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        match self.task.take() {
            Some(task) => task.await.map_err(io::Error::other)?,
            None => Ok(()),
        }
    }
}
