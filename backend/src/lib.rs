//! Countersign's server: an axum app over Postgres.
//!
//! Layout (see `docs/ARCHITECTURE.md` for the full map and invariants):
//!
//! - [`config`]: every setting, from flags and environment (clap).
//! - [`telemetry`]: `tracing` set-up.
//! - [`db`]: the pool, migrations, role bootstrap, and the two ways into a
//!   transaction (`user_tx` as `authenticated`, `service_tx` as
//!   `service_role`). Nothing else switches roles.
//! - [`auth`]: accounts, passwords, sessions and sign-in throttling — domain
//!   rules with their own error enum, no HTTP.
//! - [`events`]: the per-chat event log and cross-instance wake-ups
//!   (`LISTEN/NOTIFY`).
//! - [`turns`]: a turn as a server task: the model, the tool loop, Stop.
//! - [`llm`]: providers (Anthropic, OpenAI-compatible, offline demo).
//! - [`models`]: which models a user can use; provider keys.
//! - [`tools`]: the `ToolBox` the tool loop calls; `tools::connector` is
//!   the real one: users' kept MCP tools behind the gate.
//! - [`gate`]: the pure decision whether a call may run without asking.
//! - [`rules`]: users' and administrators' allow / ask / deny rules with
//!   conditions on argument values, and which one decides a call.
//! - [`approvals`]: the approval ledger's state machine, its HMAC, the
//!   instance's watcher of decisions, the sweep and start-up recovery;
//!   `approvals::second`, the second approver's inbox and decision.
//! - [`mail`]: e-mail through SMTP (lettre), when configured.
//! - [`audit`]: the activity log, an append-only hash chain of every
//!   proposed call; `countersign audit verify`.
//! - [`connectors`]: users' MCP servers, credentials, tool review.
//! - [`mcp`]: the MCP client (rmcp), raw `tools/list`, descriptor digests.
//! - [`probe`]: `countersign connector probe`, the MCP client from the CLI.
//! - [`memory`]: gives the allocator's free pages back after a burst of
//!   turns.
//! - [`metrics`]: what `/metrics` reports; domain modules bump it through
//!   small functions, `http::metrics` serves it.
//! - [`secrets`]: AEAD for secrets at rest, the key rotation
//!   (`countersign secrets rotate | status`).
//! - [`http`]: the router, middleware (security headers, Origin and CSRF
//!   checks) and one module per resource. The only place that knows status
//!   codes.

pub mod admin;
pub mod approvals;
pub mod audit;
pub mod auth;
pub mod characters;
pub mod config;
pub mod connectors;
pub mod db;
pub mod destinations;
pub mod digest;
pub mod events;
pub mod gate;
pub mod http;
pub mod ids;
pub mod inputs;
pub mod llm;
pub mod mail;
pub mod mcp;
pub mod memory;
pub mod metrics;
pub mod models;
pub mod policy;
pub mod probe;
pub mod provenance;
pub mod results;
pub mod rules;
pub mod secrets;
pub mod ssrf;
pub mod telemetry;
pub mod tools;
pub mod turns;

use std::sync::Arc;

pub use config::Config;
pub use http::{router, serve};

/// What every request handler and turn task can reach.
#[derive(Debug, Clone)]
pub struct AppState {
    /// Pool of the server's login role (owns nothing, bypasses no RLS).
    pub db: sqlx::PgPool,
    /// Settings, fixed at start-up.
    pub config: Arc<Config>,
    /// This instance's `LISTEN` end: stream wake-ups, turn cancellations.
    pub hub: Arc<events::EventHub>,
    /// HTTP client for model providers.
    pub http: reqwest::Client,
    /// Timeouts for provider streams.
    pub llm_http: llm::HttpSettings,
    /// Tools offered to models.
    pub tools: Arc<dyn tools::ToolBox>,
    /// Signs and verifies approval ledger rows.
    pub approval_keys: Arc<approvals::ApprovalKeys>,
    /// This instance's watcher of pending-call decisions.
    pub watcher: Arc<approvals::Watcher>,
    /// The sessions of this instance's open streams, re-checked together.
    pub stream_sessions: Arc<http::stream_sessions::StreamSessions>,
    /// Test seams in the approval lifecycle (none in production).
    pub approval_hooks: approvals::Hooks,
    /// Encryption of secrets at rest; `None` without `COUNTERSIGN_SECRET_KEY`.
    pub secrets: Option<secrets::SecretBox>,
    /// Name resolution for connector hosts (tests bring a stub).
    pub resolver: Arc<dyn ssrf::HostResolver>,
    /// The only client that talks to connectors: resolves through the SSRF
    /// guard, follows no redirect. Rebuilt by [`AppState::with_resolver`].
    pub connector_http: reqwest::Client,
    /// This instance's Prometheus counters and gauges (`/metrics`).
    pub metrics: Arc<metrics::Metrics>,
    /// Trims the allocator once a burst of turns is over.
    pub trimmer: Arc<memory::Trimmer>,
    /// Chats' histories as this instance's turns left them.
    pub recent: Arc<turns::recent::Recent>,
    /// Sessions this instance looked up lately, with their stamps.
    pub known_sessions: Arc<http::session::Known>,
    /// E-mail, when `COUNTERSIGN_SMTP_URL` is set.
    pub mailer: Option<Arc<mail::Mailer>>,
    /// The identity provider of single sign-on (`COUNTERSIGN_OIDC_*`),
    /// when one is configured.
    pub oidc: Option<Arc<auth::oidc::Provider>>,
}

impl AppState {
    /// State for a running server: starts this instance's `LISTEN`
    /// connection. Tools are the users' kept connector tools.
    pub async fn new(db: sqlx::PgPool, config: Config) -> anyhow::Result<Self> {
        let hub = events::EventHub::listen(&db).await?;
        Self::with_hub(db, config, hub)
    }

    /// State around a given hub (tests of single pieces use
    /// [`events::EventHub::local`]).
    pub fn with_hub(
        db: sqlx::PgPool,
        config: Config,
        hub: Arc<events::EventHub>,
    ) -> anyhow::Result<Self> {
        let llm_http = llm::HttpSettings::default();
        let secrets = secrets::SecretBox::from_config(&config)?;
        let http = reqwest::Client::builder()
            .connect_timeout(llm_http.connect_timeout)
            .build()?;
        anyhow::ensure!(
            config.approval_wait_secs < config.approval_ttl_secs,
            "COUNTERSIGN_APPROVAL_WAIT_SECS must be below COUNTERSIGN_APPROVAL_TTL_SECS"
        );
        anyhow::ensure!(
            config.turn_heartbeat_secs >= 1 && config.turn_heartbeat_secs < config.turn_stale_secs,
            "COUNTERSIGN_TURN_HEARTBEAT_SECS must be at least 1 and below COUNTERSIGN_TURN_STALE_SECS"
        );
        anyhow::ensure!(
            config.recovery_interval_secs >= 1,
            "COUNTERSIGN_RECOVERY_INTERVAL_SECS must be at least 1"
        );
        let approval_keys = Arc::new(approvals::ApprovalKeys::from_config(&config)?);
        let mailer = mail::Mailer::from_config(&config)?.map(Arc::new);
        let oidc = auth::oidc::Provider::from_settings(&config.oidc)?.map(Arc::new);
        anyhow::ensure!(
            config.password_signin || oidc.is_some(),
            "COUNTERSIGN_PASSWORD_SIGNIN=false needs single sign-on (COUNTERSIGN_OIDC_ISSUER): nobody could sign in"
        );
        let resolver: Arc<dyn ssrf::HostResolver> = Arc::new(ssrf::SystemResolver);
        let connector_http = ssrf::guarded_client(
            reqwest::Client::builder(),
            resolver.clone(),
            config.allow_private_connectors.clone(),
        )?;
        Ok(Self {
            db,
            config: Arc::new(config),
            hub,
            http,
            llm_http,
            tools: Arc::new(tools::connector::ConnectorTools),
            approval_keys,
            watcher: Arc::default(),
            stream_sessions: Arc::default(),
            approval_hooks: approvals::Hooks::default(),
            secrets,
            resolver,
            connector_http,
            metrics: Arc::default(),
            trimmer: memory::Trimmer::start(memory::Trimmer::glibc()),
            recent: Arc::default(),
            known_sessions: Arc::default(),
            mailer,
            oidc,
        })
    }

    /// The same state resolving connector hosts through `resolver`.
    pub fn with_resolver(mut self, resolver: Arc<dyn ssrf::HostResolver>) -> anyhow::Result<Self> {
        self.connector_http = ssrf::guarded_client(
            reqwest::Client::builder(),
            resolver.clone(),
            self.config.allow_private_connectors.clone(),
        )?;
        self.resolver = resolver;
        Ok(self)
    }
}
