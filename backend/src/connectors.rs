//! Connectors: a user's remote MCP servers, their credentials (encrypted at
//! rest), and the tools they offer with the user's review of each (DESIGN
//! §2, §5).
//!
//! Owns: validating what users type (name, URL, auth headers), slugs and
//! the tool names offered to the model (unique per user, stable across
//! refreshes, `[a-zA-Z0-9_-]{1,64}`), and the review states: a tool first
//! seen is `new` and stays off until kept; `declined` is remembered and never
//! badged again; a kept tool whose descriptor digest moves becomes `changed`
//! (and goes back to `kept` if the server reverts). Only kept tools will be
//! offered to models. Only [`refresh`] talks to the network, through the
//! SSRF guard and the MCP client.

pub mod oauth;
pub mod refresh;
pub mod session;

use crate::{
    db::{
        self, Tx,
        trip::{Arg, As, Part, Statement},
    },
    secrets::{Sealed, SecretBox},
};
use countersign_api::{AuthType, ReviewState, ReviewedTool};
use serde_json::Value;
use sqlx::{Row as _, postgres::PgRow};
use std::collections::BTreeMap;
use uuid::Uuid;

pub use countersign_api::MAX_HEADERS;
/// Longest header value.
pub const MAX_HEADER_VALUE_CHARS: usize = 4096;

/// Why a connector request was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConnectorError {
    /// Bad input; the message says what.
    #[error("{0}")]
    Invalid(String),
    /// Another connector of this user has the name.
    #[error("You already have a connector named \"{0}\".")]
    NameTaken(String),
    /// No such connector for this user.
    #[error("No such connector.")]
    NotFound,
    /// Review names a tool the connector does not have.
    #[error("This connector has no tool named \"{0}\". Refresh it and review again.")]
    UnknownTool(String),
    /// Review names a tool with a digest that is no longer its descriptor's:
    /// the server changed it after the user looked.
    #[error("\"{0}\" changed since you looked at it; nothing was saved. Review it again.")]
    StaleReview(String),
    /// The SSRF guard refused the URL; the message says why.
    #[error("{0}")]
    Refused(String),
    /// The admin policy's `connector_hosts` does not list this host.
    #[error(
        "Your organisation only allows connectors at the hosts your administrator listed, and \
         {0} is not one of them."
    )]
    ForbiddenByPolicy(String),
    /// The connector's URL is no longer the one about to be dialled
    /// (it changed since it was read): nothing was sent.
    #[error("The connector's address changed; nothing was sent to it. Try again.")]
    Moved,
    /// Connecting or listing failed; the message says why.
    #[error("{0}")]
    Unreachable(String),
    /// Credentials need `COUNTERSIGN_SECRET_KEY`.
    #[error(
        "This server cannot store connector credentials yet: ask your administrator to set up \
         its secret key."
    )]
    NoSecretKey,
    /// An OAuth step failed, or the connector needs a (new) sign-in.
    #[error(transparent)]
    OAuth(#[from] oauth::OAuthError),
    /// Database failure.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Validated credentials.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Auth {
    /// No credentials are sent.
    #[default]
    None,
    /// `Authorization: Bearer …`.
    Bearer(String),
    /// Custom headers.
    Headers(BTreeMap<String, String>),
    /// OAuth 2.1, with the client settings the user gave (if any); the
    /// tokens live in `connector_oauth` ([`oauth::store`]).
    OAuth(oauth::ClientSettings),
}

impl Auth {
    /// Parses the API's `auth` object.
    pub fn parse(auth: Option<&countersign_api::ConnectorAuth>) -> Result<Self, ConnectorError> {
        let Some(auth) = auth else {
            return Ok(Self::None);
        };
        let invalid = |m: &str| Err(ConnectorError::Invalid(m.to_owned()));
        match AuthType::from_wire(&auth.kind) {
            AuthType::None => Ok(Self::None),
            AuthType::Bearer => {
                let token = auth.token.as_deref().unwrap_or_default().trim();
                if token.is_empty() || token.chars().count() > MAX_HEADER_VALUE_CHARS {
                    return invalid("A bearer token must be 1 to 4096 characters.");
                }
                if !token.chars().all(|c| c.is_ascii_graphic()) {
                    return invalid("A bearer token may contain only visible ASCII characters.");
                }
                Ok(Self::Bearer(token.to_owned()))
            }
            AuthType::Headers => {
                let headers = auth.headers.clone().unwrap_or_default();
                if headers.is_empty() {
                    return invalid("Add at least one header, or choose no authentication.");
                }
                if headers.len() > MAX_HEADERS {
                    return Err(ConnectorError::Invalid(format!(
                        "At most {MAX_HEADERS} custom headers."
                    )));
                }
                let mut seen = std::collections::BTreeSet::new();
                for (name, value) in &headers {
                    let lower = name.to_ascii_lowercase();
                    let token_chars = !name.is_empty()
                        && name.len() <= 100
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                    if !token_chars {
                        return Err(ConnectorError::Invalid(format!(
                            "\"{name}\" is not a valid header name."
                        )));
                    }
                    if countersign_api::is_reserved_header(name) {
                        return Err(ConnectorError::Invalid(format!(
                            "The {name} header is set by Countersign itself and cannot be overridden."
                        )));
                    }
                    if !seen.insert(lower) {
                        return Err(ConnectorError::Invalid(format!(
                            "The header {name} is given twice."
                        )));
                    }
                    if value.chars().count() > MAX_HEADER_VALUE_CHARS {
                        return Err(ConnectorError::Invalid(format!(
                            "The value of {name} is longer than 4096 characters."
                        )));
                    }
                    if value.chars().any(|c| c.is_control() && c != '\t') {
                        return Err(ConnectorError::Invalid(format!(
                            "The value of {name} contains a line break or control character."
                        )));
                    }
                }
                Ok(Self::Headers(headers))
            }
            AuthType::OAuth => {
                let text =
                    |v: &Option<String>, what: &str| -> Result<Option<String>, ConnectorError> {
                        match v.as_deref().map(str::trim) {
                            None | Some("") => Ok(None),
                            Some(v)
                                if v.chars().count() > MAX_HEADER_VALUE_CHARS
                                    || !v.chars().all(|c| c.is_ascii_graphic()) =>
                            {
                                Err(ConnectorError::Invalid(format!(
                                    "The {what} must be 1 to 4096 visible ASCII characters."
                                )))
                            }
                            Some(v) => Ok(Some(v.to_owned())),
                        }
                    };
                let client_id = text(&auth.client_id, "client id")?;
                let client_secret = text(&auth.client_secret, "client secret")?;
                if client_secret.is_some() && client_id.is_none() {
                    return invalid("A client secret needs its client id.");
                }
                let scopes: Vec<String> = auth
                    .scopes
                    .iter()
                    .flatten()
                    .flat_map(|s| s.split_whitespace())
                    .map(str::to_owned)
                    .collect();
                if scopes.len() > 50
                    || scopes.iter().any(|s| {
                        s.len() > 200
                            || !s
                                .bytes()
                                .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
                    })
                {
                    return invalid(
                        "Scopes are up to 50 words of visible ASCII (no quotes or backslashes).",
                    );
                }
                Ok(Self::OAuth(oauth::ClientSettings {
                    client_id,
                    client_secret,
                    scopes,
                }))
            }
            AuthType::Unknown => Err(ConnectorError::Invalid(format!(
                "Unknown authentication type \"{}\": use none, bearer, headers or oauth.",
                auth.kind
            ))),
        }
    }

    /// Its `auth_type`.
    pub fn kind(&self) -> AuthType {
        match self {
            Self::None => AuthType::None,
            Self::Bearer(_) => AuthType::Bearer,
            Self::Headers(_) => AuthType::Headers,
            Self::OAuth(_) => AuthType::OAuth,
        }
    }

    fn header_names(&self) -> Vec<String> {
        match self {
            Self::Headers(h) => h.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Self::None => serde_json::json!({}),
            Self::Bearer(t) => serde_json::json!({ "bearer": t }),
            Self::Headers(h) => serde_json::json!({ "headers": h }),
            Self::OAuth(c) => serde_json::json!({ "oauth": {
                "client_id": c.client_id, "client_secret": c.client_secret, "scopes": c.scopes,
            }}),
        }
    }

    fn from_json(value: &Value) -> Self {
        if let Some(token) = value.get("bearer").and_then(Value::as_str) {
            return Self::Bearer(token.to_owned());
        }
        if let Some(oauth) = value.get("oauth") {
            let text = |k: &str| oauth.get(k).and_then(Value::as_str).map(str::to_owned);
            return Self::OAuth(oauth::ClientSettings {
                client_id: text("client_id"),
                client_secret: text("client_secret"),
                scopes: oauth
                    .get("scopes")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|s| s.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
            });
        }
        match value.get("headers").and_then(Value::as_object) {
            Some(map) => Self::Headers(
                map.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect(),
            ),
            None => Self::None,
        }
    }
}

/// A connector name: trimmed, 1 to 100 characters, one line.
pub fn parse_name(name: &str) -> Result<String, ConnectorError> {
    let name = name.trim();
    let len = name.chars().count();
    if !(1..=100).contains(&len) || name.chars().any(char::is_control) {
        return Err(ConnectorError::Invalid(
            "A connector name is 1 to 100 characters, on one line.".into(),
        ));
    }
    Ok(name.to_owned())
}

/// The URL's shape (scheme, no credentials, a host). Whether Countersign
/// may connect to it is the SSRF guard's decision, made on add and on every
/// connection.
pub fn parse_url(url: &str) -> Result<reqwest::Url, ConnectorError> {
    let parsed = reqwest::Url::parse(url.trim()).map_err(|_| {
        ConnectorError::Invalid(
            "Enter the server's full URL, e.g. https://mcp.example.com/mcp.".into(),
        )
    })?;
    if !matches!(parsed.scheme(), "https" | "http") {
        return Err(ConnectorError::Invalid("Connector URLs use https.".into()));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(ConnectorError::Invalid(
            "Put credentials in the authentication settings, not in the URL.".into(),
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(ConnectorError::Invalid("The URL has no host.".into()));
    }
    if url.trim().chars().count() > 2048 {
        return Err(ConnectorError::Invalid(
            "The URL is longer than 2048 characters.".into(),
        ));
    }
    Ok(parsed)
}

/// `[a-z0-9_]` from a name: lower-cased, other characters become `_`, runs
/// collapsed, at most 24 characters, never empty.
pub fn slugify(name: &str) -> String {
    let mut slug = String::new();
    for c in name.to_lowercase().chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('_') && !slug.is_empty() {
            slug.push('_');
        }
    }
    let mut slug: String = slug.trim_matches('_').chars().take(24).collect();
    slug = slug.trim_end_matches('_').to_owned();
    if slug.is_empty() {
        "connector".to_owned()
    } else {
        slug
    }
}

/// The name a tool is offered to the model under: `slug__tool`, with the
/// tool name sanitised to `[a-zA-Z0-9_-]`, at most 64 characters; a long or
/// colliding name ends in 8 hex digits of the tool name's SHA-256, so it is
/// still unique and the same on every refresh.
pub fn model_name(slug: &str, tool: &str, taken: &dyn Fn(&str) -> bool) -> String {
    let sanitized: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let plain = format!("{slug}__{sanitized}");
    if plain.len() <= 64 && sanitized == tool && !taken(&plain) {
        return plain;
    }
    use sha2::Digest as _;
    let hash = hex::encode(&sha2::Sha256::digest(tool.as_bytes())[..4]);
    let room = 64 - slug.len() - 2 - 1 - hash.len();
    let head: String = sanitized.chars().take(room).collect();
    format!("{slug}__{head}_{hash}")
}

/// A tool as listed by the server now, with its digest.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// Name on the server.
    pub name: String,
    /// The descriptor object that was digested.
    pub descriptor: Value,
    /// Its digest.
    pub digest: String,
}

/// A stored tool, as far as merging needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// Name on the server.
    pub name: String,
    /// Digest of its latest descriptor.
    pub digest: String,
    /// Review state.
    pub review_state: ReviewState,
    /// Digest the user reviewed.
    pub reviewed_digest: Option<String>,
    /// Not listed last time.
    pub removed: bool,
}

/// What a refresh does to one tool.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// First seen: insert as `new`.
    Insert(Listed),
    /// Seen again: store the descriptor, with the state it now has; `moved`
    /// when the digest differs from the stored one.
    Update {
        /// The listing.
        listed: Listed,
        /// The new review state.
        review_state: ReviewState,
        /// The digest moved since last time.
        moved: bool,
    },
    /// No longer listed.
    Remove(String),
}

/// Merges a fresh listing into the stored tools (pure: the rules of §5's
/// connect-time review).
pub fn merge(stored: &[Stored], listed: &[Listed]) -> Vec<Change> {
    let mut changes = Vec::new();
    for tool in listed {
        match stored.iter().find(|s| s.name == tool.name) {
            None => changes.push(Change::Insert(tool.clone())),
            Some(old) => {
                let review_state = match old.review_state {
                    ReviewState::Kept | ReviewState::Changed => {
                        if old.reviewed_digest.as_deref() == Some(tool.digest.as_str()) {
                            ReviewState::Kept
                        } else {
                            ReviewState::Changed
                        }
                    }
                    other => other,
                };
                changes.push(Change::Update {
                    listed: tool.clone(),
                    review_state,
                    moved: old.digest != tool.digest,
                });
            }
        }
    }
    for old in stored {
        if !old.removed && !listed.iter().any(|t| t.name == old.name) {
            changes.push(Change::Remove(old.name.clone()));
        }
    }
    changes
}

/// The associated data binding a connector's sealed credentials to their
/// owner and connector (also what `secrets::rotate` re-seals them with).
pub(crate) fn aad(user_id: Uuid, connector_id: Uuid) -> Vec<u8> {
    format!("connector_auth/{user_id}/{connector_id}").into_bytes()
}

/// Points connector `id` at `url`, as a new trust decision (DESIGN §5):
/// its credentials, always-rules, trust switch and tool reviews are
/// cleared and its waiting calls end as denied. One service transaction
/// (with an explicit owner check on every statement), so the sealed
/// credentials are never readable together with the new URL: a
/// concurrent connect sees either the old URL or no credentials. The
/// caller has run the SSRF guard on `url` and the step-up.
pub async fn repoint(
    pool: &sqlx::PgPool,
    user_id: Uuid,
    id: Uuid,
    url: &reqwest::Url,
) -> Result<(), ConnectorError> {
    let mut tx = db::service_tx(pool).await?;
    let updated = sqlx::query!(
        "update connectors
            set url = $3, trust_annotations = false, auth_type = 'none', header_names = '{}',
                status = 'untested', last_error = null, protocol_version = null,
                last_checked_at = null, updated_at = now()
          where id = $1 and user_id = $2",
        id,
        user_id,
        url.as_str(),
    )
    .execute(&mut *tx)
    .await?;
    if updated.rows_affected() == 0 {
        return Err(ConnectorError::NotFound);
    }
    // Everything trusted at the old URL goes in one statement: credentials,
    // rules, reviews, and the OAuth client, tokens and sign-ins in flight
    // (the tokens are bound to the old URL anyway, see `oauth::store`).
    sqlx::query!(
        "with secrets as (delete from connector_secrets where connector_id = $1 and user_id = $2),
              grants as (delete from tool_grants where connector_id = $1 and user_id = $2),
              tools as (delete from connector_tools where connector_id = $1 and user_id = $2),
              oauth as (delete from connector_oauth where connector_id = $1 and user_id = $2)
         delete from oauth_states where connector_id = $1 and user_id = $2",
        id,
        user_id,
    )
    .execute(&mut *tx)
    .await?;
    crate::approvals::deny_for_connector(&mut tx, user_id.into(), id.into()).await?;
    tx.commit().await?;
    Ok(())
}

/// Stores (or clears) a connector's credentials, encrypted, in `tx` (a
/// service transaction).
pub async fn store_auth(
    tx: &mut Tx,
    secrets: Option<&SecretBox>,
    user_id: Uuid,
    connector_id: Uuid,
    auth: &Auth,
) -> Result<(), ConnectorError> {
    sqlx::query!(
        "delete from connector_secrets where connector_id = $1",
        connector_id,
    )
    .execute(&mut **tx)
    .await?;
    if *auth == Auth::None {
        return Ok(());
    }
    let sealed = secrets.ok_or(ConnectorError::NoSecretKey)?.seal(
        auth.to_json().to_string().as_bytes(),
        &aad(user_id, connector_id),
    );
    sqlx::query!(
        "insert into connector_secrets (connector_id, user_id, key_id, nonce, ciphertext)
         values ($1, $2, $3, $4, $5)",
        connector_id,
        user_id,
        &sealed.key_id,
        &sealed.nonce,
        &sealed.ciphertext,
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A connector's decrypted credentials (for connecting; never returned).
pub async fn load_auth(
    pool: &sqlx::PgPool,
    secrets: Option<&SecretBox>,
    user_id: Uuid,
    connector_id: Uuid,
) -> Result<Auth, ConnectorError> {
    let mut tx = db::service_tx(pool).await?;
    let sealed = sqlx::query_as!(
        Sealed,
        "select key_id, nonce, ciphertext from connector_secrets where connector_id = $1 and user_id = $2",
        connector_id,
        user_id,
    )
    .fetch_optional(&mut *tx)
    .await?;
    db::end_read(tx);
    let Some(sealed) = sealed else {
        return Ok(Auth::None);
    };
    open_sealed(secrets, user_id, connector_id, &sealed)
}

/// [`load_auth`] for a connection to `url`: the credentials only while
/// the connector still points there, read in the same statement as its
/// URL. A URL change replaces the credentials with the URL, in one
/// transaction; a caller that read the URL earlier (a call's card, a
/// refresh) and dials it now would otherwise send the new URL's
/// credentials to the old one, had the change landed in between.
pub async fn load_auth_at(
    pool: &sqlx::PgPool,
    secrets: Option<&SecretBox>,
    user_id: Uuid,
    connector_id: Uuid,
    url: &str,
) -> Result<Auth, ConnectorError> {
    let rows = db::trip::run(pool, credentials(user_id, connector_id)).await?;
    auth_at(&rows, secrets, user_id, connector_id, url)
}

/// The connector's URL and sealed credentials, as a part of a trip; read
/// them with [`auth_at`].
pub fn credentials(user_id: Uuid, connector_id: Uuid) -> Part {
    Part {
        who: As::Service,
        statement: &CREDENTIALS,
        args: vec![Arg::uuid(connector_id), Arg::uuid(user_id)],
    }
}

static CREDENTIALS: Statement = Statement {
    name: "cs_connector_credentials",
    params: "(uuid, uuid)",
    sql: "select c.url, s.key_id, s.nonce, s.ciphertext \
            from connectors c \
            left join connector_secrets s on s.connector_id = c.id and s.user_id = c.user_id \
           where c.id = $1 and c.user_id = $2",
};

/// The statements [`db::trip`] runs here, for the test that prepares them all.
pub static TRIPS: [&Statement; 1] = [&CREDENTIALS];

/// The credentials from [`credentials`]' rows, if the connector is still
/// at `url` ([`ConnectorError::Moved`] if not).
pub fn auth_at(
    rows: &[PgRow],
    secrets: Option<&SecretBox>,
    user_id: Uuid,
    connector_id: Uuid,
    url: &str,
) -> Result<Auth, ConnectorError> {
    let row = rows.first().ok_or(ConnectorError::NotFound)?;
    if row.try_get::<String, _>("url")? != url {
        return Err(ConnectorError::Moved);
    }
    let (Some(key_id), Some(nonce), Some(ciphertext)) = (
        row.try_get("key_id")?,
        row.try_get("nonce")?,
        row.try_get("ciphertext")?,
    ) else {
        return Ok(Auth::None);
    };
    open_sealed(
        secrets,
        user_id,
        connector_id,
        &Sealed {
            key_id,
            nonce,
            ciphertext,
        },
    )
}

/// Opens a connector's sealed credentials.
fn open_sealed(
    secrets: Option<&SecretBox>,
    user_id: Uuid,
    connector_id: Uuid,
    sealed: &Sealed,
) -> Result<Auth, ConnectorError> {
    let plain = secrets
        .ok_or(ConnectorError::NoSecretKey)?
        .open(sealed, &aad(user_id, connector_id))
        .map_err(|e| ConnectorError::Invalid(e.to_string()))?;
    let value: Value =
        serde_json::from_slice(&plain).map_err(|e| ConnectorError::Invalid(e.to_string()))?;
    Ok(Auth::from_json(&value))
}

/// Picks a slug for `name` that no other connector of the user has.
pub async fn free_slug(tx: &mut Tx, name: &str) -> Result<String, ConnectorError> {
    let base = slugify(name);
    let taken: Vec<String> = sqlx::query_scalar!("select slug from connectors")
        .fetch_all(&mut **tx)
        .await?;
    if !taken.contains(&base) {
        return Ok(base);
    }
    for n in 2.. {
        let suffix = format!("_{n}");
        let head: String = base.chars().take(24 - suffix.len()).collect();
        let candidate = format!("{head}{suffix}");
        if !taken.contains(&candidate) {
            return Ok(candidate);
        }
    }
    unreachable!("some suffix is free")
}

/// Inserts a connector and its credentials. Returns its id.
pub async fn create(
    pool: &sqlx::PgPool,
    secrets: Option<&SecretBox>,
    user_id: Uuid,
    name: &str,
    url: &reqwest::Url,
    auth: &Auth,
) -> Result<Uuid, ConnectorError> {
    if *auth != Auth::None && secrets.is_none() {
        return Err(ConnectorError::NoSecretKey);
    }
    let id = Uuid::new_v4();
    let mut tx = db::user_tx(pool, user_id).await?;
    let slug = free_slug(&mut tx, name).await?;
    let inserted = sqlx::query!(
        "insert into connectors (id, name, slug, url, auth_type, header_names)
         values ($1, $2, $3, $4, $5, $6)
         on conflict do nothing",
        id,
        name,
        &slug,
        url.as_str(),
        auth.kind().as_str(),
        &auth.header_names(),
    )
    .execute(&mut *tx)
    .await?;
    if inserted.rows_affected() == 0 {
        return Err(ConnectorError::NameTaken(name.to_owned()));
    }
    tx.commit().await?;
    let mut tx = db::service_tx(pool).await?;
    store_auth(&mut tx, secrets, user_id, id, auth).await?;
    tx.commit().await?;
    Ok(id)
}

/// Applies a fresh listing to the stored tools of a connector (in the
/// user's transaction): inserts new tools with their model names, updates
/// descriptors and review states, marks unlisted ones removed.
pub async fn apply_listing(
    tx: &mut Tx,
    connector_id: Uuid,
    slug: &str,
    listing: &[Listed],
) -> Result<(), ConnectorError> {
    let stored = sqlx::query_as!(
        Stored,
        r#"select name, descriptor_digest as digest, review_state as "review_state: _",
                  reviewed_digest, removed
             from connector_tools where connector_id = $1"#,
        connector_id,
    )
    .fetch_all(&mut **tx)
    .await?;
    let mut taken: Vec<String> = sqlx::query_scalar!("select model_name from connector_tools")
        .fetch_all(&mut **tx)
        .await?;
    for change in merge(&stored, listing) {
        match change {
            Change::Insert(tool) => {
                let name = model_name(slug, &tool.name, &|n| taken.iter().any(|t| t == n));
                taken.push(name.clone());
                sqlx::query!(
                    "insert into connector_tools (id, connector_id, name, model_name, descriptor, descriptor_digest)
                     values ($1, $2, $3, $4, $5, $6)",
                    Uuid::new_v4(),
                    connector_id,
                    &tool.name,
                    name,
                    &tool.descriptor,
                    &tool.digest,
                )
                .execute(&mut **tx)
                .await?;
            }
            Change::Update {
                listed,
                review_state,
                moved,
            } => {
                sqlx::query!(
                    "update connector_tools
                        set descriptor = $3, descriptor_digest = $4, review_state = $5,
                            removed = false, last_seen_at = now(),
                            changed_at = case when $6 then now() else changed_at end
                      where connector_id = $1 and name = $2",
                    connector_id,
                    &listed.name,
                    &listed.descriptor,
                    &listed.digest,
                    review_state.as_str(),
                    moved,
                )
                .execute(&mut **tx)
                .await?;
            }
            Change::Remove(name) => {
                sqlx::query!(
                    "update connector_tools set removed = true where connector_id = $1 and name = $2",
                    connector_id,
                    &name,
                )
                    .execute(&mut **tx)
                    .await?;
                // A removed tool loses its always-allow rule: if it comes
                // back, it is allowed again only by the user.
                sqlx::query!(
                    "delete from tool_grants where connector_id = $1 and tool_name = $2",
                    connector_id,
                    name,
                )
                .execute(&mut **tx)
                .await?;
            }
        }
    }
    Ok(())
}

/// Records the user's review: kept tools are offered to models from now on
/// (pinned to the descriptor they saw); declined ones never are.
pub async fn review(
    pool: &sqlx::PgPool,
    user_id: Uuid,
    connector_id: Uuid,
    keep: &[ReviewedTool],
    decline: &[ReviewedTool],
) -> Result<(), ConnectorError> {
    if let Some(both) = keep
        .iter()
        .find(|k| decline.iter().any(|d| d.name() == k.name()))
    {
        return Err(ConnectorError::Invalid(format!(
            "\"{}\" cannot be both kept and declined.",
            both.name()
        )));
    }
    // Keeping widens trust: it must name what the user saw.
    if let Some(bare) = keep.iter().find(|k| k.digest().is_none()) {
        return Err(ConnectorError::Invalid(format!(
            "Name \"{}\" with the descriptor_digest you reviewed.",
            bare.name()
        )));
    }
    let mut tx = db::user_tx(pool, user_id).await?;
    let exists: bool = sqlx::query_scalar!(
        r#"select exists (select 1 from connectors where id = $1) as "exists!""#,
        connector_id,
    )
    .fetch_one(&mut *tx)
    .await?;
    if !exists {
        return Err(ConnectorError::NotFound);
    }
    // One transaction: a stale or unknown tool anywhere rolls back all.
    for (tools, state) in [(keep, ReviewState::Kept), (decline, ReviewState::Declined)] {
        for tool in tools {
            let updated = sqlx::query!(
                "update connector_tools
                    set review_state = $3,
                        reviewed_descriptor = case when $3 = 'kept' then descriptor else null end,
                        reviewed_digest = case when $3 = 'kept' then descriptor_digest else null end
                  where connector_id = $1 and name = $2
                    and ($4::text is null or descriptor_digest = $4)",
                connector_id,
                tool.name(),
                state.as_str(),
                tool.digest(),
            )
            .execute(&mut *tx)
            .await?;
            if updated.rows_affected() == 0 {
                let exists: bool = sqlx::query_scalar!(
                    r#"select exists (select 1 from connector_tools
                                     where connector_id = $1 and name = $2) as "exists!""#,
                    connector_id,
                    tool.name(),
                )
                .fetch_one(&mut *tx)
                .await?;
                let name = tool.name().to_owned();
                return Err(if exists {
                    ConnectorError::StaleReview(name)
                } else {
                    ConnectorError::UnknownTool(name)
                });
            }
        }
    }
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use countersign_api::ConnectorAuth;

    fn headers(pairs: &[(&str, &str)]) -> ConnectorAuth {
        ConnectorAuth {
            kind: AuthType::Headers.to_string(),
            headers: Some(
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..ConnectorAuth::default()
        }
    }

    #[test]
    fn header_rules_refuse_host_too_many_long_values_and_line_breaks() {
        for (auth, why) in [
            (headers(&[("Host", "evil.example")]), "Host"),
            (headers(&[("host", "evil.example")]), "host in lower case"),
            (headers(&[("Mcp-Session-Id", "x")]), "a transport header"),
            (
                headers(&[("Mcp-Name", "x")]),
                "an MCP header the client sets (was refused only at connect time)",
            ),
            (headers(&[("MCP-Param-Region", "x")]), "an mcp-param header"),
            (
                headers(&[("Accept", "x")]),
                "Accept, which the transport sets",
            ),
            (headers(&[("X-Key", "a\r\nInjected: 1")]), "a line break"),
            (headers(&[("Bad Name", "x")]), "a space in the name"),
            (
                headers(&[("X-Key", &"v".repeat(4097))]),
                "a value over 4096",
            ),
            (headers(&[]), "no headers"),
            (
                ConnectorAuth {
                    kind: "basic".into(),
                    ..ConnectorAuth::default()
                },
                "unknown type",
            ),
            (
                ConnectorAuth {
                    kind: AuthType::Bearer.to_string(),
                    token: Some("  ".into()),
                    ..ConnectorAuth::default()
                },
                "empty token",
            ),
            (
                ConnectorAuth {
                    kind: AuthType::OAuth.to_string(),
                    client_secret: Some("s3cret".into()),
                    ..ConnectorAuth::default()
                },
                "a client secret without its client id",
            ),
            (
                ConnectorAuth {
                    kind: AuthType::OAuth.to_string(),
                    scopes: Some(vec!["a\"b".into()]),
                    ..ConnectorAuth::default()
                },
                "a scope with a quote",
            ),
        ] {
            assert!(Auth::parse(Some(&auth)).is_err(), "{why}");
        }
        let many: Vec<(String, String)> = (0..21)
            .map(|i| (format!("X-H{i}"), "v".to_owned()))
            .collect();
        let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert!(Auth::parse(Some(&headers(&many))).is_err(), "21 headers");
        assert!(
            Auth::parse(Some(&headers(&many[..20]))).is_ok(),
            "20 headers"
        );
        assert!(Auth::parse(Some(&headers(&[("X-Api-Key", &"v".repeat(4096))]))).is_ok());
    }

    #[test]
    fn urls_need_a_scheme_a_host_and_no_credentials() {
        assert!(parse_url("https://mcp.example.com/mcp").is_ok());
        for (url, why) in [
            ("mcp.example.com", "no scheme"),
            ("ftp://mcp.example.com", "ftp"),
            ("https://user:pw@mcp.example.com/", "credentials in the URL"),
            ("file:///etc/passwd", "file"),
        ] {
            assert!(parse_url(url).is_err(), "{why}");
        }
    }

    #[test]
    fn slugs_and_model_names_use_the_providers_character_set() {
        assert_eq!(slugify("Matter Notes (EU)"), "matter_notes_eu");
        assert_eq!(slugify("!!!"), "connector");
        assert_eq!(slugify(&"x".repeat(40)).len(), 24);
        let none = |_: &str| false;
        assert_eq!(model_name("notes", "search", &none), "notes__search");
        let dotted = model_name("notes", "files.read", &none);
        assert!(dotted.starts_with("notes__files_read_"), "{dotted}");
        let long = model_name(&"s".repeat(24), &"t".repeat(80), &none);
        assert!(long.len() <= 64, "{long}");
        assert_eq!(
            long,
            model_name(&"s".repeat(24), &"t".repeat(80), &none),
            "stable"
        );
        let re = |s: &str| {
            s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        };
        assert!(re(&dotted) && re(&long));
        // Two server names that sanitise alike get different model names.
        let a = model_name("n", "a.b", &none);
        let b = model_name("n", "a_b", &|n| n == a);
        assert_ne!(a, b);
    }

    fn listed(name: &str, digest: &str) -> Listed {
        Listed {
            name: name.into(),
            descriptor: serde_json::json!({"name": name}),
            digest: digest.into(),
        }
    }

    fn stored(name: &str, digest: &str, state: ReviewState, reviewed: Option<&str>) -> Stored {
        Stored {
            name: name.into(),
            digest: digest.into(),
            review_state: state,
            reviewed_digest: reviewed.map(str::to_owned),
            removed: false,
        }
    }

    #[test]
    fn refresh_marks_new_changed_reverted_declined_and_removed_tools() {
        let stored = [
            stored("kept_same", "a", ReviewState::Kept, Some("a")),
            stored("kept_moved", "b", ReviewState::Kept, Some("b")),
            stored("changed_back", "c2", ReviewState::Changed, Some("c")),
            stored("declined", "d", ReviewState::Declined, None),
            stored("new_moved", "e", ReviewState::New, None),
            stored("gone", "f", ReviewState::Kept, Some("f")),
        ];
        let listing = [
            listed("kept_same", "a"),
            listed("kept_moved", "b2"),
            listed("changed_back", "c"),
            listed("declined", "d2"),
            listed("new_moved", "e2"),
            listed("arrived", "g"),
        ];
        let state_of = |changes: &[Change], name: &str| {
            changes.iter().find_map(|c| match c {
                Change::Update {
                    listed,
                    review_state,
                    ..
                } if listed.name == name => Some(*review_state),
                _ => None,
            })
        };
        let changes = merge(&stored, &listing);
        assert_eq!(state_of(&changes, "kept_same"), Some(ReviewState::Kept));
        assert_eq!(
            state_of(&changes, "kept_moved"),
            Some(ReviewState::Changed),
            "a kept tool that moved"
        );
        assert_eq!(
            state_of(&changes, "changed_back"),
            Some(ReviewState::Kept),
            "reverted to what was kept"
        );
        assert_eq!(
            state_of(&changes, "declined"),
            Some(ReviewState::Declined),
            "declined stays declined"
        );
        assert_eq!(
            state_of(&changes, "new_moved"),
            Some(ReviewState::New),
            "unreviewed stays new"
        );
        assert!(
            changes.contains(&Change::Insert(listed("arrived", "g"))),
            "a tool added later is new"
        );
        assert!(changes.contains(&Change::Remove("gone".into())));
    }
}
