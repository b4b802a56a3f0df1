//! Every setting of the server, read from flags and the environment (clap).
//!
//! Environment names listed in `../shared/DESIGN.md` are a public contract:
//! keep them.

use clap::{ArgAction, Args};
use sqlx::types::ipnet::IpNet;
use std::{
    fmt,
    net::{IpAddr, SocketAddr},
    path::PathBuf,
    str::FromStr,
    sync::Arc,
    time::Duration,
};

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

/// `COUNTERSIGN_TRUSTED_PROXIES`: the networks of the reverse proxies in
/// front of the server. Only a TCP peer inside one of them may name the
/// client in `X-Forwarded-For`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Arc<[IpNet]>);

impl TrustedProxies {
    /// Whether `ip` is one of the trusted proxies.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// True when no proxy is trusted (the default).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromStr for TrustedProxies {
    type Err = String;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        value
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                IpNet::from_str(entry)
                    .map(|net| net.trunc())
                    .or_else(|_| IpAddr::from_str(entry).map(IpNet::from))
                    .map_err(|_| {
                        format!("{entry:?} is not a CIDR range like 10.0.0.0/8 or an IP address")
                    })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|nets| Self(nets.into()))
    }
}

/// `COUNTERSIGN_LOG_FORMAT`: how log lines are written to stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// One human-readable line per event (the default).
    #[default]
    Text,
    /// One JSON object per line, for a log collector: the event's fields,
    /// and the fields of every span it happened in (a request's
    /// `request_id` and `user_id`).
    Json,
}

impl FromStr for LogFormat {
    type Err = String;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            other => Err(format!(
                "COUNTERSIGN_LOG_FORMAT (--log-format) is `text` or `json`, not {other:?}"
            )),
        }
    }
}

/// Settings every command shares (they take effect before any command
/// runs, so they cannot live in [`Config`], which only `serve` reads).
#[derive(Debug, Clone, Args)]
pub struct Logging {
    /// Log format: `text` (one line per event, for people) or `json` (one
    /// object per line, for a collector); anything else is refused.
    #[arg(
        long,
        env = "COUNTERSIGN_LOG_FORMAT",
        default_value = "text",
        global = true
    )]
    pub log_format: LogFormat,
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

    /// Address of a listener of its own that serves only `GET /metrics`
    /// (Prometheus text), e.g. `10.0.0.5:9464` on an internal interface.
    /// Unset: `/metrics` is on the main address, for loopback peers only.
    #[arg(long, env = "COUNTERSIGN_METRICS_BIND")]
    pub metrics_bind: Option<SocketAddr>,

    /// Folder of the built web app (`index.html`, `assets/` with hashed
    /// names and `.br`/`.gz` twins), as `cargo xtask web` writes it.
    #[arg(long, env = "COUNTERSIGN_STATIC_DIR", default_value = "frontend/build")]
    pub static_dir: PathBuf,

    /// The URL people use to reach this server, e.g. `https://cs.example.org`.
    /// Its origin is accepted in `Origin` headers, and an `https` URL makes
    /// session cookies `Secure`.
    #[arg(long, env = "COUNTERSIGN_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// The SMTP server that e-mails approvers when a call waits for their
    /// second approval (unset: no e-mail). As lettre reads it:
    /// `smtp://host:587?tls=required` (STARTTLS), `smtps://host:465`, or
    /// `smtp://127.0.0.1:25` for a local relay; credentials as
    /// `smtp://user:password@host…`.
    #[arg(long, env = "COUNTERSIGN_SMTP_URL")]
    pub smtp_url: Option<Secret>,

    /// The From address of its e-mails.
    #[arg(
        long,
        env = "COUNTERSIGN_SMTP_FROM",
        default_value = "Countersign <countersign@localhost>"
    )]
    pub smtp_from: String,

    /// Single sign-on (`COUNTERSIGN_OIDC_*`).
    #[command(flatten)]
    pub oidc: OidcSettings,

    /// Whether e-mail and password sign in (and sign up). `false` with
    /// single sign-on configured leaves the provider as the only way in.
    #[arg(long, env = "COUNTERSIGN_PASSWORD_SIGNIN", default_value_t = true, action = ArgAction::Set)]
    pub password_signin: bool,

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

    /// Sign-up attempts from one IP address within the throttling window
    /// before sign-up is refused with 429 (each one costs a password hash).
    #[arg(long, env = "COUNTERSIGN_SIGNUP_MAX_PER_IP", default_value_t = 10)]
    pub signup_max_per_ip: i64,

    /// Reverse proxies whose `X-Forwarded-For` is believed, comma-separated
    /// CIDRs or addresses (empty by default: the TCP peer is the client).
    #[arg(long, env = "COUNTERSIGN_TRUSTED_PROXIES", default_value = "")]
    pub trusted_proxies: TrustedProxies,

    /// Every account must enrol two-factor sign-in before any trust-widening
    /// action (those answer 403 `mfa_enrolment_required` until it does).
    #[arg(long, env = "COUNTERSIGN_REQUIRE_MFA", default_value_t = false, action = ArgAction::Set)]
    pub require_mfa: bool,

    /// Key that encrypts secrets at rest (users' provider keys, later
    /// connector credentials): 32 bytes as 64 hex characters. Without it,
    /// users cannot store keys.
    #[arg(long, env = "COUNTERSIGN_SECRET_KEY")]
    pub secret_key: Option<Secret>,

    /// The key being rotated away from (64 hex characters): still opens
    /// values sealed with it, never seals. Drop it once `countersign
    /// secrets status` shows nothing under its id.
    #[arg(long, env = "COUNTERSIGN_SECRET_KEY_PREVIOUS")]
    pub secret_key_previous: Option<Secret>,

    /// Deployment-wide Anthropic API key.
    #[arg(long, env = "ANTHROPIC_API_KEY")]
    pub anthropic_api_key: Option<Secret>,

    /// Anthropic API base URL (tests point it at a local fake).
    #[arg(
        long,
        env = "ANTHROPIC_BASE_URL",
        default_value = "https://api.anthropic.com"
    )]
    pub anthropic_base_url: String,

    /// Anthropic models offered in the picker, comma-separated.
    #[arg(
        long,
        env = "COUNTERSIGN_ANTHROPIC_MODELS",
        default_value = "claude-sonnet-4-5,claude-opus-4-1,claude-haiku-4-5"
    )]
    pub anthropic_models: String,

    /// Deployment-wide key for the OpenAI-compatible endpoint.
    #[arg(long, env = "OPENAI_API_KEY")]
    pub openai_api_key: Option<Secret>,

    /// Base URL of the OpenAI-compatible endpoint (OpenAI, Ollama, vLLM,
    /// llama.cpp, LM Studio, OpenRouter), up to and including `/v1`.
    #[arg(long, env = "OPENAI_BASE_URL")]
    pub openai_base_url: Option<String>,

    /// Models to offer for `openai/…` when the endpoint's `/models` lists
    /// none, comma-separated.
    #[arg(long, env = "COUNTERSIGN_OPENAI_MODELS", default_value = "")]
    pub openai_models: String,

    /// SSE comment frames (`: keep-alive`) on an idle stream, every this
    /// many seconds.
    #[arg(long, env = "COUNTERSIGN_KEEPALIVE_SECS", default_value_t = 15)]
    pub keepalive_secs: u64,

    /// Model calls per turn at most (each tool round trip is one more).
    #[arg(long, env = "COUNTERSIGN_MAX_TOOL_STEPS", default_value_t = 8)]
    pub max_tool_steps: u32,

    /// Private destinations connectors may reach despite the SSRF guard,
    /// comma-separated hosts, host:port or CIDRs (off by default). Also
    /// allows plain http to them. For the demo server and tests on loopback.
    #[arg(long, env = "COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS", default_value = "")]
    pub allow_private_connectors: crate::ssrf::AllowList,

    /// URL of the demo MCP server, offered under "Available" in Settings.
    #[arg(long, env = "COUNTERSIGN_DEMO_CONNECTOR_URL")]
    pub demo_connector_url: Option<String>,

    /// Timeout of one MCP request (seconds).
    #[arg(long, env = "COUNTERSIGN_MCP_TIMEOUT_SECS", default_value_t = 60)]
    pub mcp_timeout_secs: u64,

    /// Key of the approval ledger's HMAC (DESIGN §6): 32 bytes or more as
    /// hex, the same on every instance. Without it each process makes up
    /// its own, and a call approved on one instance cannot run on another.
    #[arg(long, env = "COUNTERSIGN_APPROVAL_KEY")]
    pub approval_key: Option<Secret>,

    /// The previous approval key, still accepted for calls signed before a
    /// rotation (they live minutes at most).
    #[arg(long, env = "COUNTERSIGN_APPROVAL_KEY_PREVIOUS")]
    pub approval_key_previous: Option<Secret>,

    /// How long a pending tool call can be approved (seconds).
    #[arg(long, env = "COUNTERSIGN_APPROVAL_TTL_SECS", default_value_t = 120)]
    pub approval_ttl_secs: u64,

    /// How long a turn waits for a decision (seconds); below the TTL.
    #[arg(long, env = "COUNTERSIGN_APPROVAL_WAIT_SECS", default_value_t = 90)]
    pub approval_wait_secs: u64,

    /// A waiting turn re-reads its ledger row this often even without a
    /// `NOTIFY` (milliseconds): the fallback when a wake-up is lost.
    #[arg(long, env = "COUNTERSIGN_APPROVAL_POLL_MS", default_value_t = 1500)]
    pub approval_poll_ms: u64,

    /// Wake waiting turns by `NOTIFY` (on by default; off measures the poll
    /// fallback alone).
    #[arg(long, env = "COUNTERSIGN_APPROVAL_NOTIFY", default_value_t = true, action = ArgAction::Set)]
    pub approval_notify: bool,

    /// Finished ledger rows, with their arguments, are deleted after this
    /// many seconds.
    #[arg(long, env = "COUNTERSIGN_APPROVAL_RETENTION_SECS", default_value_t = 24 * 3600)]
    pub approval_retention_secs: u64,

    /// How often each instance proves that the turns it runs are alive
    /// (seconds): one UPDATE for all of them, which also carries a stored
    /// Stop.
    #[arg(long, env = "COUNTERSIGN_TURN_HEARTBEAT_SECS", default_value_t = 5)]
    pub turn_heartbeat_secs: u64,

    /// A running turn whose heartbeat is older than this (seconds) lost its
    /// process: recovery ends it as failed and closes its calls (DESIGN
    /// §6.9). Above the heartbeat interval.
    #[arg(long, env = "COUNTERSIGN_TURN_STALE_SECS", default_value_t = 30)]
    pub turn_stale_secs: u64,

    /// Recovery runs at start-up and then this often (seconds): the
    /// approval ledger, input requests and turns whose process died end
    /// truthfully, their chats told.
    #[arg(long, env = "COUNTERSIGN_RECOVERY_INTERVAL_SECS", default_value_t = 60)]
    pub recovery_interval_secs: u64,

    /// A connector's tool list older than this (seconds) is refreshed
    /// before a turn offers its tools, so a changed descriptor suspends its
    /// always-allow rule before the next call.
    #[arg(long, env = "COUNTERSIGN_TOOLS_MAX_AGE_SECS", default_value_t = 3600)]
    pub tools_max_age_secs: u64,

    /// The offline demo model's pause between words (milliseconds).
    #[arg(long, env = "COUNTERSIGN_DEMO_WORD_DELAY_MS", default_value_t = 40)]
    pub demo_word_delay_ms: u64,

    /// Provenance (issue 16): a part of an argument counts as seen when it
    /// shares at least this many normalised characters with a message or
    /// tool result (0: rule off).
    #[arg(long, env = "COUNTERSIGN_PROVENANCE_MIN_CHARS", default_value_t = 24)]
    pub provenance_min_chars: usize,

    /// … or a run of at least this many words (0: rule off).
    #[arg(long, env = "COUNTERSIGN_PROVENANCE_MIN_WORDS", default_value_t = 5)]
    pub provenance_min_words: usize,

    /// … or one word of at least this many characters with digits in it,
    /// such as an account number (0: rule off).
    #[arg(
        long,
        env = "COUNTERSIGN_PROVENANCE_MIN_TOKEN_CHARS",
        default_value_t = 8
    )]
    pub provenance_min_token_chars: usize,
}

impl Config {
    /// Settings for tests and embedding: the defaults above with the given
    /// database URL.
    pub fn with_database_url(database_url: impl Into<String>) -> Self {
        Self {
            database_url: Secret::new(database_url),
            migration_database_url: None,
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            metrics_bind: None,
            static_dir: PathBuf::from("frontend/dist"),
            public_url: None,
            smtp_url: None,
            smtp_from: "Countersign <countersign@localhost>".to_owned(),
            oidc: OidcSettings::default(),
            password_signin: true,
            allow_signup: true,
            session_idle_secs: 8 * 3600,
            session_absolute_secs: 7 * 24 * 3600,
            login_max_failures_per_account: 5,
            login_max_failures_per_ip: 20,
            login_window_secs: 15 * 60,
            signup_max_per_ip: 10,
            trusted_proxies: TrustedProxies::default(),
            require_mfa: false,
            secret_key: None,
            secret_key_previous: None,
            anthropic_api_key: None,
            anthropic_base_url: "https://api.anthropic.com".to_owned(),
            anthropic_models: "claude-sonnet-4-5,claude-opus-4-1,claude-haiku-4-5".to_owned(),
            openai_api_key: None,
            openai_base_url: None,
            openai_models: String::new(),
            keepalive_secs: 15,
            max_tool_steps: 8,
            demo_word_delay_ms: 0,
            allow_private_connectors: crate::ssrf::AllowList::default(),
            demo_connector_url: None,
            mcp_timeout_secs: 60,
            approval_key: None,
            approval_key_previous: None,
            approval_ttl_secs: 120,
            approval_wait_secs: 90,
            approval_poll_ms: 1500,
            approval_notify: true,
            approval_retention_secs: 24 * 3600,
            turn_heartbeat_secs: 5,
            turn_stale_secs: 30,
            recovery_interval_secs: 60,
            tools_max_age_secs: 3600,
            provenance_min_chars: 24,
            provenance_min_words: 5,
            provenance_min_token_chars: 8,
        }
    }

    /// The provenance thresholds.
    pub fn provenance(&self) -> crate::provenance::Settings {
        crate::provenance::Settings {
            min_chars: self.provenance_min_chars,
            min_words: self.provenance_min_words,
            min_token_chars: self.provenance_min_token_chars,
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

    /// Host (lower-case; IPv6 in brackets) and port of
    /// [`Config::public_url`], the port defaulting to the scheme's.
    pub fn public_authority(&self) -> Option<(String, u16)> {
        let origin = self.public_origin()?;
        let (scheme, authority) = origin.split_once("://")?;
        let default_port = if scheme == "https" { 443 } else { 80 };
        split_authority(authority, default_port)
    }

    /// The OpenAI-compatible base URL, defaulting to OpenAI's own.
    pub fn openai_base(&self) -> &str {
        self.openai_base_url
            .as_deref()
            .unwrap_or("https://api.openai.com/v1")
    }

    /// Whether the public URL is `https`, so cookies must be `Secure`.
    pub fn public_url_is_https(&self) -> bool {
        self.public_origin()
            .is_some_and(|o| o.starts_with("https://"))
    }
}

/// Splits `host[:port]` (`[v6][:port]`), lower-casing the host; `None` when
/// the port is not a number or the shape is wrong.
pub fn split_authority(authority: &str, default_port: u16) -> Option<(String, u16)> {
    let authority = authority.to_ascii_lowercase();
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            other => Some(other.strip_prefix(':')?),
        };
        (format!("[{inside}]"), port)
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (authority.clone(), None),
        }
    };
    let port = match port {
        None => default_port,
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => p.parse().ok()?,
        Some(_) => return None,
    };
    ((!host.is_empty() && !host.contains(':')) || host.starts_with('[')).then_some((host, port))
}

/// The `COUNTERSIGN_OIDC_*` settings, as read from the environment.
#[derive(Debug, Clone, clap::Args)]
pub struct OidcSettings {
    /// The identity provider's issuer URL (its discovery document is at
    /// `<issuer>/.well-known/openid-configuration`). Unset: no single
    /// sign-on.
    #[arg(long = "oidc-issuer", env = "COUNTERSIGN_OIDC_ISSUER")]
    pub issuer: Option<String>,
    /// This server's client id at the provider.
    #[arg(long = "oidc-client-id", env = "COUNTERSIGN_OIDC_CLIENT_ID")]
    pub client_id: Option<String>,
    /// Its client secret (a confidential client); unset for a public one.
    #[arg(long = "oidc-client-secret", env = "COUNTERSIGN_OIDC_CLIENT_SECRET")]
    pub client_secret: Option<Secret>,
    /// Scopes asked for, space-separated.
    #[arg(
        long = "oidc-scopes",
        env = "COUNTERSIGN_OIDC_SCOPES",
        default_value = "openid email profile"
    )]
    pub scopes: String,
    /// The sign-in button's words.
    #[arg(
        long = "oidc-button-label",
        env = "COUNTERSIGN_OIDC_BUTTON_LABEL",
        default_value = "Sign in with your organisation"
    )]
    pub button_label: String,
    /// E-mail domains whose first sign-in creates an account,
    /// comma-separated (unset: any the provider vouches for).
    #[arg(
        long = "oidc-allowed-domains",
        env = "COUNTERSIGN_OIDC_ALLOWED_DOMAINS",
        default_value = ""
    )]
    pub allowed_domains: String,
    /// Groups whose members are administrators, comma-separated (unset:
    /// the provider decides no role).
    #[arg(
        long = "oidc-admin-groups",
        env = "COUNTERSIGN_OIDC_ADMIN_GROUPS",
        default_value = ""
    )]
    pub admin_groups: String,
    /// Groups whose members give second approvals (the approver role),
    /// comma-separated (unset: the provider decides no role).
    #[arg(
        long = "oidc-approver-groups",
        env = "COUNTERSIGN_OIDC_APPROVER_GROUPS",
        default_value = ""
    )]
    pub approver_groups: String,
    /// The ID token claim that lists a person's groups.
    #[arg(
        long = "oidc-groups-claim",
        env = "COUNTERSIGN_OIDC_GROUPS_CLAIM",
        default_value = "groups"
    )]
    pub groups_claim: String,
}

impl Default for OidcSettings {
    /// No provider, and the defaults the environment would give.
    fn default() -> Self {
        Self {
            issuer: None,
            client_id: None,
            client_secret: None,
            scopes: "openid email profile".to_owned(),
            button_label: "Sign in with your organisation".to_owned(),
            allowed_domains: String::new(),
            admin_groups: String::new(),
            approver_groups: String::new(),
            groups_claim: "groups".to_owned(),
        }
    }
}
