//! Every setting of the server, read from flags and the environment (clap).
//!
//! Environment names listed in `../shared/DESIGN.md` are a public contract:
//! keep them.

use clap::{ArgAction, Args};
use std::{fmt, net::SocketAddr, path::PathBuf, str::FromStr, time::Duration};

/// A string that must never reach a log: database URLs with passwords, keys.
/// `Debug` prints `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the one place that needs it (a connect call).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl FromStr for Secret {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self(s.to_owned()))
    }
}

/// Server settings.
#[derive(Debug, Clone, Args)]
pub struct Config {
    /// Postgres URL of the server's login role. That role should own no
    /// tables and bypass no row-level security; the server warns when it can.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: Secret,

    /// Postgres URL of the role that owns the schema and runs migrations.
    /// Defaults to `DATABASE_URL` (then the server's role owns the tables and
    /// the server warns at start-up).
    #[arg(long, env = "COUNTERSIGN_MIGRATION_DATABASE_URL")]
    pub migration_database_url: Option<Secret>,

    /// Address to listen on.
    #[arg(long, env = "COUNTERSIGN_BIND", default_value = "127.0.0.1:3000")]
    pub bind: SocketAddr,

    /// Folder of the built web app (`index.html`, `app.js`, `pkg/`).
    #[arg(long, env = "COUNTERSIGN_STATIC_DIR", default_value = "frontend/dist")]
    pub static_dir: PathBuf,

    /// The URL people use to reach this server, e.g. `https://cs.example.org`.
    /// Its origin is accepted in `Origin` headers, and an `https` URL makes
    /// session cookies `Secure`.
    #[arg(long, env = "COUNTERSIGN_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// Whether new accounts may sign up. The very first account can always
    /// be created, so that a fresh deployment gets its admin.
    #[arg(long, env = "COUNTERSIGN_ALLOW_SIGNUP", default_value_t = true, action = ArgAction::Set)]
    pub allow_signup: bool,

    /// A session unused for this long is over (seconds).
    #[arg(long, env = "COUNTERSIGN_SESSION_IDLE_SECS", default_value_t = 8 * 3600)]
    pub session_idle_secs: u64,

    /// A session is over this long after sign-in, used or not (seconds).
    #[arg(long, env = "COUNTERSIGN_SESSION_ABSOLUTE_SECS", default_value_t = 7 * 24 * 3600)]
    pub session_absolute_secs: u64,

    /// Failed sign-ins for one account within the window before sign-in is
    /// refused with 429.
    #[arg(
        long,
        env = "COUNTERSIGN_LOGIN_MAX_FAILURES_PER_ACCOUNT",
        default_value_t = 5
    )]
    pub login_max_failures_per_account: i64,

    /// Failed sign-ins from one IP address within the window before sign-in
    /// is refused with 429.
    #[arg(
        long,
        env = "COUNTERSIGN_LOGIN_MAX_FAILURES_PER_IP",
        default_value_t = 20
    )]
    pub login_max_failures_per_ip: i64,

    /// The throttling window (seconds).
    #[arg(long, env = "COUNTERSIGN_LOGIN_WINDOW_SECS", default_value_t = 15 * 60)]
    pub login_window_secs: u64,
}

impl Config {
    /// Settings for tests and embedding: the defaults above with the given
    /// database URL.
    pub fn with_database_url(database_url: impl Into<String>) -> Self {
        Self {
            database_url: Secret::new(database_url),
            migration_database_url: None,
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            static_dir: PathBuf::from("frontend/dist"),
            public_url: None,
            allow_signup: true,
            session_idle_secs: 8 * 3600,
            session_absolute_secs: 7 * 24 * 3600,
            login_max_failures_per_account: 5,
            login_max_failures_per_ip: 20,
            login_window_secs: 15 * 60,
        }
    }

    /// Idle expiry of a session.
    pub fn session_idle(&self) -> Duration {
        Duration::from_secs(self.session_idle_secs)
    }

    /// Absolute expiry of a session.
    pub fn session_absolute(&self) -> Duration {
        Duration::from_secs(self.session_absolute_secs)
    }

    /// Origin (`scheme://host[:port]`) of [`Config::public_url`], if set.
    pub fn public_origin(&self) -> Option<String> {
        let url = self.public_url.as_deref()?.trim_end_matches('/');
        let (scheme, rest) = url.split_once("://")?;
        let authority = rest.split('/').next()?;
        Some(format!(
            "{}://{}",
            scheme.to_ascii_lowercase(),
            authority.to_ascii_lowercase()
        ))
    }

    /// Whether the public URL is `https`, so cookies must be `Secure`.
    pub fn public_url_is_https(&self) -> bool {
        self.public_origin()
            .is_some_and(|o| o.starts_with("https://"))
    }
}
