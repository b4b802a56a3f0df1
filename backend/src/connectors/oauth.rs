//! OAuth 2.1 for connectors (DESIGN §2 "Connector authorization", §8), on
//! rmcp's `auth` module, for a multi-user server: the browser only ever
//! sees the authorization URL and the callback; everything else happens
//! here, through [`http::GuardedOAuthHttp`], and lives in [`store`].
//!
//! - [`start`]: discovery (the MCP URL's own 401 challenge first —
//!   `resource_metadata`, `scope` — then the RFC 9728 / RFC 8414 / OIDC
//!   well-known paths; rmcp checks the issuer and refuses an authorization
//!   server without PKCE S256), a client in DESIGN's order (the id the
//!   user entered → the one registered earlier with this issuer → the
//!   Client ID Metadata Document when `COUNTERSIGN_PUBLIC_URL` is https →
//!   dynamic registration as a `web` application), then the authorization
//!   URL (PKCE, `resource` per RFC 8707), which must be https (or
//!   `http` to an allow-listed private destination). The request in
//!   flight is stored under its `state`.
//! - [`finish`]: the callback. Takes the request once, checks it is the
//!   signed-in user's and that the connector still points where it did,
//!   and exchanges the code (rmcp checks `iss`, RFC 9207) into tokens
//!   bound to that URL.
//! - [`access_token`]: for a session. The stored token, refreshed first
//!   when it is about to expire — one instance at a time (the store's
//!   advisory lock) — or [`OAuthError::NeedsSignIn`].

pub mod http;
pub mod store;

use crate::{
    AppState,
    ids::{ConnectorId, UserId},
    secrets::SecretBox,
};
use http::GuardedOAuthHttp;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    InMemoryStateStore, StateStore, StoredAuthorizationState,
};
use std::sync::{Arc, Mutex};
use store::{ClientRecord, InFlight, PgCredentialStore};

/// The name Countersign registers under.
pub const CLIENT_NAME: &str = "Countersign";

/// The client settings a user may give for an OAuth connector.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ClientSettings {
    /// A client id registered out of band.
    pub client_id: Option<String>,
    /// Its secret, for a confidential client.
    pub client_secret: Option<String>,
    /// Scopes to ask for instead of those the server suggests.
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for ClientSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSettings")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[REDACTED]"),
            )
            .field("scopes", &self.scopes)
            .finish()
    }
}

/// Why an OAuth step did not complete. The message is the user's.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// No `COUNTERSIGN_SECRET_KEY`: nothing could be stored sealed.
    #[error("This server cannot store credentials: COUNTERSIGN_SECRET_KEY is not set.")]
    NoSecretKey,
    /// The server or its authorization server could not be used.
    #[error("The connector's sign-in could not be set up: {0}")]
    Setup(String),
    /// The authorization URL is not one a browser should be sent to.
    #[error("The authorization server's sign-in page is not served over https ({0}).")]
    InsecureAuthorizationUrl(String),
    /// Unknown, used or expired `state`.
    #[error("This sign-in link has expired or was already used. Start the sign-in again.")]
    UnknownState,
    /// The callback reached another user's session.
    #[error("This sign-in was started by someone else.")]
    WrongUser,
    /// The connector changed (or went) since the sign-in started.
    #[error("The connector changed while you were signing in. Start the sign-in again.")]
    ConnectorChanged,
    /// The authorization server refused the code (or `iss` did not match).
    #[error("The sign-in was not accepted: {0}")]
    Exchange(String),
    /// No usable token: the user must sign in (again).
    #[error("Sign in to this connector again.")]
    NeedsSignIn,
    /// Database failure.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// The store failed (sealed data did not open, the database).
    #[error("Countersign could not read or store this connector's sign-in.")]
    Store(String),
}

fn setup(err: impl std::fmt::Display) -> OAuthError {
    OAuthError::Setup(err.to_string())
}

fn secret_box(state: &AppState) -> Result<SecretBox, OAuthError> {
    state.secrets.clone().ok_or(OAuthError::NoSecretKey)
}

/// An rmcp manager for the connector at `url`, all of whose HTTP goes
/// through the guard.
async fn manager(state: &AppState, url: &str) -> Result<AuthorizationManager, OAuthError> {
    let http = GuardedOAuthHttp::new(
        state.connector_http.clone(),
        state.resolver.clone(),
        state.config.allow_private_connectors.clone(),
    );
    AuthorizationManager::new_with_oauth_http_client(url, Arc::new(http))
        .await
        .map_err(setup)
}

/// The `WWW-Authenticate` of the MCP URL's answer to an unauthenticated
/// request, if it is a 401 that carries one.
async fn challenge(state: &AppState, url: &str) -> Option<String> {
    let http = GuardedOAuthHttp::new(
        state.connector_http.clone(),
        state.resolver.clone(),
        state.config.allow_private_connectors.clone(),
    );
    let mut request = reqwest::Request::new(reqwest::Method::POST, url.parse().ok()?);
    let headers = request.headers_mut();
    headers.insert(
        reqwest::header::CONTENT_TYPE,
        reqwest::header::HeaderValue::from_static("application/json"),
    );
    headers.insert(
        reqwest::header::ACCEPT,
        reqwest::header::HeaderValue::from_static("application/json, text/event-stream"),
    );
    *request.body_mut() = Some(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#.into());
    let response = http.fetch(request, false).await.ok()?;
    (response.status() == reqwest::StatusCode::UNAUTHORIZED)
        .then(|| response.headers().get(reqwest::header::WWW_AUTHENTICATE))
        .flatten()
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// rmcp's state store for one [`start`]: keeps the one request it saves
/// (shared, so [`start`] can read it after rmcp took the store).
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Option<(String, StoredAuthorizationState)>>>);

#[async_trait::async_trait]
impl StateStore for Capture {
    async fn save(&self, csrf: &str, state: StoredAuthorizationState) -> Result<(), AuthError> {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((csrf.to_owned(), state));
        Ok(())
    }

    async fn load(&self, _csrf: &str) -> Result<Option<StoredAuthorizationState>, AuthError> {
        Ok(None)
    }

    async fn delete(&self, _csrf: &str) -> Result<(), AuthError> {
        Ok(())
    }
}

/// Whether a browser may be sent to `url`: https, or http to a destination
/// the private-connector allow-list names (the guard's own `http` rule:
/// loopback test servers).
async fn browser_may_open(state: &AppState, url: &str) -> bool {
    match reqwest::Url::parse(url) {
        Ok(u) if u.scheme() == "https" => true,
        Ok(u) if u.scheme() == "http" => crate::ssrf::check(
            url,
            state.resolver.as_ref(),
            &state.config.allow_private_connectors,
        )
        .await
        .is_ok(),
        _ => false,
    }
}

/// Starts a sign-in for connector `connector_id` of `user_id` at `url`,
/// coming back to `redirect_uri`. Returns the authorization URL.
pub async fn start(
    state: &AppState,
    (user_id, connector_id): (UserId, ConnectorId),
    url: &str,
    settings: &ClientSettings,
    redirect_uri: &str,
) -> Result<String, OAuthError> {
    let secrets = secret_box(state)?;
    let mut manager = manager(state, url).await?;
    let challenge = challenge(state, url).await;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
        .map_err(setup)?;
    let metadata = resolution.metadata;
    manager.set_metadata(metadata.clone());
    let capture = Capture::default();
    manager.set_state_store(capture.clone());

    let mut request = AuthorizationRequest::new(redirect_uri)
        .with_client_name(CLIENT_NAME)
        .with_application_type("web");
    if !settings.scopes.is_empty() {
        request = request.with_scopes(settings.scopes.iter().cloned());
    } else {
        request = request.with_initial_scope_selection();
    }
    let reused = store::client_for(
        &state.db,
        &secrets,
        (user_id, connector_id),
        url,
        metadata.issuer.as_deref(),
    )
    .await
    .map_err(|e| OAuthError::Store(e.to_string()))?;
    let mut client_secret = None;
    if let Some(id) = &settings.client_id {
        request = request.with_preregistered_client(id);
        if let Some(secret) = &settings.client_secret {
            request = request.with_client_secret(secret);
            client_secret = Some(secret.clone());
        }
    } else if let Some(reused) = &reused {
        request = request.with_preregistered_client(&reused.client_id);
        if let Some(secret) = &reused.client_secret {
            request = request.with_client_secret(secret);
            client_secret = Some(secret.clone());
        }
    } else if let Some(cimd) = client_metadata_url(state) {
        request = request.with_client_metadata_url(cimd);
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| setup(e))?;
    let authorization_url = session.get_authorization_url().to_owned();
    if !browser_may_open(state, &authorization_url).await {
        return Err(OAuthError::InsecureAuthorizationUrl(authorization_url));
    }
    let (client_id, _) = session.get_credentials().await.map_err(setup)?;
    let (csrf, stored) = capture
        .0
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
        .ok_or_else(|| setup("no authorization state was made"))?;
    let client = ClientRecord {
        client_id,
        client_secret,
        scopes: stored.requested_scopes.clone(),
        redirect_uri: redirect_uri.to_owned(),
    };
    store::save_client(
        &state.db,
        &secrets,
        (user_id, connector_id),
        url,
        &metadata,
        &client,
    )
    .await
    .map_err(|e| OAuthError::Store(e.to_string()))?;
    let in_flight = InFlight {
        state: stored,
        client,
        metadata,
        resource: url.to_owned(),
    };
    store::save_state(
        &state.db,
        &secrets,
        (user_id, connector_id),
        &csrf,
        &in_flight,
    )
    .await
    .map_err(|e| OAuthError::Store(e.to_string()))?;
    Ok(authorization_url)
}

/// Where the Client ID Metadata Document is served, when the deployment
/// has an https public URL (CIMD client ids must be https).
pub fn client_metadata_url(state: &AppState) -> Option<String> {
    state
        .config
        .public_url_is_https()
        .then(|| state.config.public_origin())
        .flatten()
        .map(|origin| format!("{origin}/oauth/client-metadata.json"))
}

/// Completes a sign-in from its callback (`code`, `state`, `iss`), for the
/// signed-in `session_user`. Returns the connector it signed in.
pub async fn finish(
    state: &AppState,
    session_user: UserId,
    code: &str,
    state_param: &str,
    issuer: Option<&str>,
) -> Result<ConnectorId, OAuthError> {
    let secrets = secret_box(state)?;
    let (user_id, connector_id, in_flight) = store::take_state(&state.db, &secrets, state_param)
        .await
        .map_err(|e| OAuthError::Store(e.to_string()))?
        .ok_or(OAuthError::UnknownState)?;
    if user_id != session_user {
        return Err(OAuthError::WrongUser);
    }
    if current_url(state, user_id, connector_id).await?.as_deref() != Some(&in_flight.resource) {
        return Err(OAuthError::ConnectorChanged);
    }
    let mut manager = manager(state, &in_flight.resource).await?;
    manager.set_metadata(in_flight.metadata.clone());
    manager
        .configure_client(in_flight.client.config())
        .map_err(setup)?;
    let states = InMemoryStateStore::new();
    states
        .save(state_param, in_flight.state.clone())
        .await
        .map_err(setup)?;
    manager.set_state_store(states);
    manager.set_credential_store(PgCredentialStore::new(
        state.db.clone(),
        secrets,
        (user_id, connector_id),
        &in_flight.resource,
    ));
    manager
        .exchange_code_for_token_with_issuer(code, state_param, issuer)
        .await
        .map_err(|e| OAuthError::Exchange(e.to_string()))?;
    Ok(connector_id)
}

/// The connector's URL, if it is still the user's.
async fn current_url(
    state: &AppState,
    user_id: UserId,
    connector_id: ConnectorId,
) -> Result<Option<String>, sqlx::Error> {
    let mut tx = crate::db::user_tx(&state.db, user_id).await?;
    let url = sqlx::query_scalar!(
        "select url from connectors where id = $1",
        connector_id as ConnectorId,
    )
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(url)
}

/// Marks the connector's sign-in as refused (the server answered 401 to
/// its token), so it shows "Sign in again" and is not tried again.
pub async fn needs_sign_in(
    state: &AppState,
    ids: (UserId, ConnectorId),
    url: &str,
) -> Result<(), OAuthError> {
    PgCredentialStore::new(state.db.clone(), secret_box(state)?, ids, url)
        .needs_sign_in()
        .await
        .map_err(|e| OAuthError::Store(e.to_string()))
}

/// Signs connector `connector_id` of `user_id` out: asks the authorization
/// server to revoke the refresh token where its metadata offers a
/// `revocation_endpoint` (RFC 7009; best effort, through the guard), then
/// forgets the tokens. The client registration stays, keyed by issuer.
pub async fn disconnect(
    state: &AppState,
    (user_id, connector_id): (UserId, ConnectorId),
    url: &str,
) -> Result<(), OAuthError> {
    use rmcp::transport::auth::CredentialStore as _;
    let secrets = secret_box(state)?;
    let credentials = PgCredentialStore::new(
        state.db.clone(),
        secrets.clone(),
        (user_id, connector_id),
        url,
    );
    let signed_in = store::signed_in(&state.db, &secrets, (user_id, connector_id), url)
        .await
        .map_err(|e| OAuthError::Store(e.to_string()))?;
    let stored = credentials
        .load()
        .await
        .map_err(|e| OAuthError::Store(e.to_string()))?;
    if let (Some(signed_in), Some(stored)) = (signed_in, stored)
        && let Err(err) = revoke(state, &signed_in, &stored).await
    {
        tracing::warn!(connector.id = %connector_id, error = %err, "token revocation failed");
    }
    credentials
        .clear()
        .await
        .map_err(|e| OAuthError::Store(e.to_string()))
}

/// RFC 7009: revokes the refresh token (or, without one, the access
/// token) at the metadata's `revocation_endpoint`, if there is one.
async fn revoke(
    state: &AppState,
    signed_in: &store::SignedIn,
    stored: &rmcp::transport::auth::StoredCredentials,
) -> Result<(), String> {
    let Some(endpoint) = signed_in
        .metadata
        .additional_fields
        .get("revocation_endpoint")
        .and_then(|v| v.as_str())
    else {
        return Ok(());
    };
    let tokens = serde_json::to_value(&stored.token_response).map_err(|e| e.to_string())?;
    let (token, hint) = match tokens.get("refresh_token").and_then(|t| t.as_str()) {
        Some(refresh) => (refresh, "refresh_token"),
        None => match tokens.get("access_token").and_then(|t| t.as_str()) {
            Some(access) => (access, "access_token"),
            None => return Ok(()),
        },
    };
    let mut form = reqwest::Url::parse("http://form/").map_err(|e| e.to_string())?;
    form.query_pairs_mut()
        .append_pair("token", token)
        .append_pair("token_type_hint", hint)
        .append_pair("client_id", &signed_in.client.client_id);
    if let Some(secret) = &signed_in.client.client_secret {
        form.query_pairs_mut().append_pair("client_secret", secret);
    }
    let mut request = reqwest::Request::new(
        reqwest::Method::POST,
        reqwest::Url::parse(endpoint).map_err(|e| e.to_string())?,
    );
    request.headers_mut().insert(
        reqwest::header::CONTENT_TYPE,
        reqwest::header::HeaderValue::from_static("application/x-www-form-urlencoded"),
    );
    *request.body_mut() = Some(form.query().unwrap_or_default().to_owned().into());
    let http = GuardedOAuthHttp::new(
        state.connector_http.clone(),
        state.resolver.clone(),
        state.config.allow_private_connectors.clone(),
    );
    let response = http
        .fetch(request, false)
        .await
        .map_err(|e| e.to_string())?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(format!(
            "the revocation endpoint answered {}",
            response.status()
        ))
    }
}

/// The access token for connector `connector_id` of `user_id` at `url`,
/// refreshed first when it is about to expire. Only tokens issued for
/// `url` are ever returned.
pub async fn access_token(
    state: &AppState,
    (user_id, connector_id): (UserId, ConnectorId),
    url: &str,
) -> Result<String, OAuthError> {
    let secrets = secret_box(state)?;
    let stored = store::signed_in(&state.db, &secrets, (user_id, connector_id), url)
        .await
        .map_err(|e| OAuthError::Store(e.to_string()))?
        .ok_or(OAuthError::NeedsSignIn)?;
    let mut manager = manager(state, url).await?;
    manager.set_metadata(stored.metadata);
    manager
        .configure_client(stored.client.config())
        .map_err(setup)?;
    let credentials =
        PgCredentialStore::new(state.db.clone(), secrets, (user_id, connector_id), url);
    manager.set_credential_store(credentials);
    match manager.get_access_token().await {
        Ok(token) => Ok(token),
        Err(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) => {
            Err(OAuthError::NeedsSignIn)
        }
        Err(e) => Err(setup(e)),
    }
}
