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
//! - [`http`]: the router, middleware (security headers, Origin and CSRF
//!   checks) and one module per resource. The only place that knows status
//!   codes.

pub mod auth;
pub mod config;
pub mod db;
pub mod http;
pub mod telemetry;

use std::sync::Arc;

pub use config::Config;
pub use http::{router, serve};

/// What every request handler can reach.
#[derive(Debug, Clone)]
pub struct AppState {
    /// Pool of the server's login role (owns nothing, bypasses no RLS).
    pub db: sqlx::PgPool,
    /// Settings, fixed at start-up.
    pub config: Arc<Config>,
}
