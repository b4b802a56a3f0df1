//! OAuth 2.1 for connectors (DESIGN §2 "Connector authorization", §8), on
//! rmcp's `auth` module, for a multi-user server: the browser only ever
//! sees the authorization URL and the callback; everything else happens
//! here, through [`http::GuardedOAuthHttp`], and lives in [`store`].
//!
//! - [`discover`] and [`begin`] are the pieces the server's sign-in and
//!   the probe's (`probe::oauth`) share: discovery (the MCP URL's own 401
//!   challenge first — `resource_metadata`, `scope` — then the RFC 9728 /
//!   RFC 8414 / OIDC well-known paths; rmcp checks that the resource
//!   metadata names this resource and that the authorization server's
//!   metadata names its issuer), then a client in DESIGN's order
//!   ([`Clients`]: entered → registered earlier with this issuer → the
//!   Client ID Metadata Document where the authorization server supports
//!   it → dynamic registration, keeping the secret it issues), then the
//!   authorization URL (PKCE S256, refused when the authorization server
//!   does not offer it; `resource` per RFC 8707; scopes from the
//!   challenge, else the resource metadata).
//! - [`start`]: the server's sign-in: [`discover`] + [`begin`] as a `web`
//!   client, an https-only authorization URL (or `http` to an
//!   allow-listed private destination); the request in flight is stored
//!   under its `state`.
//! - [`finish`]: the callback. Takes the request once, checks it is the
//!   signed-in user's and that the connector still points where it did,
//!   and exchanges the code (rmcp checks `iss`, RFC 9207) into tokens
//!   bound to that URL.
//! - [`access_token`]: for a session. The stored token, refreshed first
//!   when it is about to expire — one instance at a time (the store's
//!   advisory lock) — or [`OAuthError::NeedsSignIn`].
//! - [`step_up`] (a 403 `insufficient_scope`: the next sign-in asks for
//!   the union, at most [`scopes::MAX_STEP_UPS`] times) and
//!   [`token_refused`] (a 401: sign in again, discovering afresh).

pub mod http;
pub mod scopes;
pub mod store;

use crate::{
    AppState,
    ids::{ConnectorId, UserId},
    secrets::SecretBox,
};
use http::GuardedOAuthHttp;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession, InMemoryStateStore, OAuthClientConfig, StateStore,
    StoredAuthorizationState,
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
    #[error(
        "This server cannot store credentials yet: ask your administrator to set up its secret key."
    )]
    NoSecretKey,
    /// The server or its authorization server could not be used.
    #[error("The connector's sign-in could not be set up: {0}")]
    Setup(String),
    /// The authorization URL is not one a browser should be sent to.
    #[error("The authorization server's sign-in page is not served over https ({0}).")]
    InsecureAuthorizationUrl(String),
    /// The admin policy does not allow connectors at this sign-in page's
    /// host.
    #[error(
        "Your administrator's policy does not allow the sign-in server {0}, so this connector \
         cannot sign in."
    )]
    ForbiddenByPolicy(String),
    /// The authorization server changed since the entered client was
    /// first used: its id and secret are not sent to the new one.
    #[error(
        "This connector's authorization server changed from {was} to {now}. The client id and \
         secret you entered belong to {was}, so Countersign did not send them to {now}. If the \
         change is expected, enter the client details again in this connector's settings."
    )]
    IssuerChanged {
        /// The issuer the entered client was first used with.
        was: String,
        /// The one the server's metadata names now.
        now: String,
    },
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
    /// The connector asked for more access than its token carries (a 403
    /// `insufficient_scope`); the next sign-in asks for it.
    #[error(
        "This connector asks for more access ({scopes}) than its sign-in gave: sign in to it \
         again to grant it."
    )]
    NeedsMoreAccess {
        /// The scopes its challenge named.
        scopes: String,
    },
    /// The connector asked for more access, and asking again would not
    /// help (or it asked too often).
    #[error("This connector asks for more access than its sign-in can get: {0}.")]
    StepUpRefused(scopes::StepUpRefused),
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

fn store_error(err: impl std::fmt::Display) -> OAuthError {
    OAuthError::Store(err.to_string())
}

fn secret_box(state: &AppState) -> Result<SecretBox, OAuthError> {
    state.secrets.clone().ok_or(OAuthError::NoSecretKey)
}

/// This server's OAuth client: the connector client, through the guard
/// and the admin policy's allowed hosts, read now (DESIGN §5: the same
/// host policy covers every OAuth endpoint).
async fn guarded(state: &AppState) -> Result<GuardedOAuthHttp, OAuthError> {
    let policy = crate::policy::current(&state.db).await?;
    Ok(GuardedOAuthHttp::new(
        state.connector_http.clone(),
        state.resolver.clone(),
        state.config.allow_private_connectors.clone(),
    )
    .with_policy(policy))
}

/// An rmcp manager for the resource at `base`, all of whose HTTP goes
/// through `http`. `base` is also the `resource` (RFC 8707) rmcp sends
/// when no discovery ran (the token requests of [`finish`] and
/// [`access_token`]).
pub async fn manager(
    http: &GuardedOAuthHttp,
    base: &str,
) -> Result<AuthorizationManager, OAuthError> {
    AuthorizationManager::new_with_oauth_http_client(base, Arc::new(http.clone()))
        .await
        .map_err(setup)
}

/// The `WWW-Authenticate` of the MCP URL's answer to an unauthenticated
/// request, if it is a 401 that carries one.
pub async fn challenge(http: &GuardedOAuthHttp, url: &str) -> Option<String> {
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

/// What discovery found for one MCP URL: a manager that knows the
/// authorization server (and the resource's scopes and `resource`), and
/// that server's metadata.
pub struct Discovered {
    /// rmcp's manager, its metadata set.
    pub manager: AuthorizationManager,
    /// The authorization server's metadata (its issuer checked by rmcp).
    pub metadata: AuthorizationMetadata,
}

impl std::fmt::Debug for Discovered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Discovered")
            .field("issuer", &self.metadata.issuer)
            .finish_non_exhaustive()
    }
}

/// Discovery for the MCP resource at `url`, through `http`: from
/// `challenge` (a `WWW-Authenticate` the caller already has, e.g. the one
/// a 403 carried) or else the one the URL answers an unauthenticated
/// request with, then the RFC 9728 / RFC 8414 / OIDC well-known paths.
/// rmcp checks that the protected-resource metadata names this resource
/// and that the authorization server's metadata names its issuer.
pub async fn discover(
    http: &GuardedOAuthHttp,
    url: &str,
    challenge_header: Option<&str>,
) -> Result<Discovered, OAuthError> {
    let mut manager = manager(http, url).await?;
    let fetched = match challenge_header {
        Some(_) => None,
        None => challenge(http, url).await,
    };
    let resolution = manager
        .resolve_metadata_from_challenge(challenge_header.or(fetched.as_deref()))
        .await
        .map_err(setup)?;
    manager.set_metadata(resolution.metadata.clone());
    Ok(Discovered {
        manager,
        metadata: resolution.metadata,
    })
}

/// rmcp's state store for one [`begin`]: keeps the one request it saves
/// (shared, so [`begin`] can read it after rmcp took the store, and rmcp
/// can load it for a callback handled by the same manager).
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Option<(String, StoredAuthorizationState)>>>);

impl Capture {
    fn saved(&self) -> Option<(String, StoredAuthorizationState)> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

#[async_trait::async_trait]
impl StateStore for Capture {
    async fn save(&self, csrf: &str, state: StoredAuthorizationState) -> Result<(), AuthError> {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((csrf.to_owned(), state));
        Ok(())
    }

    async fn load(&self, csrf: &str) -> Result<Option<StoredAuthorizationState>, AuthError> {
        Ok(self
            .saved()
            .filter(|(saved, _)| saved == csrf)
            .map(|(_, state)| state))
    }

    async fn delete(&self, csrf: &str) -> Result<(), AuthError> {
        let mut saved = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if saved.as_ref().is_some_and(|(s, _)| s == csrf) {
            *saved = None;
        }
        Ok(())
    }
}

/// The clients a sign-in may present, tried in DESIGN §2's order: the one
/// entered, the one registered earlier with this issuer, the Client ID
/// Metadata Document (when the authorization server supports CIMD), then
/// dynamic registration.
#[derive(Debug, Clone, Default)]
pub struct Clients {
    /// A client id (and secret) registered out of band.
    pub entered: Option<(String, Option<String>)>,
    /// The client registered earlier with the same issuer.
    pub registered: Option<ClientRecord>,
    /// The https URL of our Client ID Metadata Document.
    pub metadata_document: Option<String>,
}

/// One authorization request about to be made.
#[derive(Debug, Clone)]
pub struct SignIn<'a> {
    /// Where the authorization server sends the browser back.
    pub redirect_uri: &'a str,
    /// SEP-837's `application_type` for dynamic registration: `web` for
    /// the server (an https redirect), `native` for the probe (a loopback
    /// one, RFC 8252).
    pub application_type: &'a str,
    /// The name registered under.
    pub client_name: &'a str,
    /// The scopes to ask for; empty: the challenge's, else the resource
    /// metadata's (none when neither names any).
    pub scopes: Vec<String>,
    /// Which client to present.
    pub clients: Clients,
    /// Step-ups made so far (kept in the [`ClientRecord`]).
    pub step_ups: u32,
    /// Where a client registered now (dynamic registration) has the
    /// browser sent back instead of `redirect_uri`: a URI of this sign-in's
    /// own (the server's `/oauth/callback/{connector}`), so its
    /// registration is good for this connector's sign-ins alone (OAuth
    /// mix-up defence, issue 44). An entered client and the metadata
    /// document keep `redirect_uri`, the one registered out of band.
    pub own_redirect_uri: Option<&'a str>,
}

/// A started authorization request.
pub struct Begun {
    /// rmcp's session: the manager, its client configured and the
    /// request's state saved (the probe completes it in place).
    pub session: AuthorizationSession,
    /// Where to send the browser (PKCE S256, `resource`, `state`).
    pub authorization_url: String,
    /// The request's `state`.
    pub csrf: String,
    /// What its callback needs (the server stores it under `state`).
    pub in_flight: InFlight,
}

impl std::fmt::Debug for Begun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Begun")
            .field("authorization_url", &self.authorization_url)
            .finish_non_exhaustive()
    }
}

/// Starts an authorization request for the MCP resource at `resource`:
/// the client ([`Clients`], registering one when it comes to that — so its
/// secret, if the authorization server issues one, is kept), the scopes,
/// and the authorization URL (rmcp refuses an authorization server whose
/// metadata lacks PKCE S256, and adds `offline_access` where it is
/// offered).
pub async fn begin(
    discovered: Discovered,
    resource: &str,
    sign_in: SignIn<'_>,
) -> Result<Begun, OAuthError> {
    let Discovered {
        mut manager,
        metadata,
    } = discovered;
    let capture = Capture::default();
    manager.set_state_store(capture.clone());
    let scopes = if sign_in.scopes.is_empty() {
        manager.select_initial_scopes(&[]).await
    } else {
        sign_in.scopes.clone()
    };
    let supports_cimd = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(serde_json::Value::as_bool)
        == Some(true);
    let Clients {
        entered,
        registered,
        metadata_document,
    } = sign_in.clients.clone();
    let (client_id, client_secret, redirect_uri) = match (entered, registered, metadata_document) {
        (Some((id, secret)), _, _) => (id, secret, sign_in.redirect_uri.to_owned()),
        (None, Some(registered), _) => (
            registered.client_id,
            registered.client_secret,
            registered.redirect_uri,
        ),
        (None, None, Some(document)) if supports_cimd => {
            if !is_metadata_document_url(&document) {
                return Err(setup(format!(
                    "a client metadata document URL must be https with a path: {document}"
                )));
            }
            (document, None, sign_in.redirect_uri.to_owned())
        }
        (None, None, _) => {
            let own = sign_in.own_redirect_uri.unwrap_or(sign_in.redirect_uri);
            let (id, secret) = register(&mut manager, &sign_in, own, &scopes).await?;
            (id, secret, own.to_owned())
        }
    };
    let mut request = AuthorizationRequest::new(&redirect_uri)
        .with_client_name(sign_in.client_name)
        .with_application_type(sign_in.application_type)
        .with_initial_scope_selection()
        .with_preregistered_client(&client_id);
    if !scopes.is_empty() {
        request = request.with_scopes(scopes.iter().cloned());
    }
    if let Some(secret) = &client_secret {
        request = request.with_client_secret(secret);
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| setup(e))?;
    let authorization_url = session.get_authorization_url().to_owned();
    let (csrf, state) = capture
        .saved()
        .ok_or_else(|| setup("no authorization state was made"))?;
    let resource_indicator = reqwest::Url::parse(&authorization_url).ok().and_then(|u| {
        u.query_pairs()
            .find(|(key, _)| key == "resource")
            .map(|(_, value)| value.into_owned())
    });
    let client = ClientRecord {
        client_id,
        client_secret,
        scopes: state.requested_scopes.clone(),
        redirect_uri,
        step_ups: sign_in.step_ups,
        resource_indicator,
    };
    Ok(Begun {
        session,
        authorization_url,
        csrf,
        in_flight: InFlight {
            state,
            client,
            metadata,
            resource: resource.to_owned(),
        },
    })
}

/// SEP-991: a client id that is a URL must be https with a path.
fn is_metadata_document_url(url: &str) -> bool {
    reqwest::Url::parse(url).is_ok_and(|u| u.scheme() == "https" && u.path() != "/")
}

/// Dynamic client registration (RFC 7591) as `sign_in.application_type`:
/// the client id and the secret, when the authorization server issued one.
async fn register(
    manager: &mut AuthorizationManager,
    sign_in: &SignIn<'_>,
    redirect_uri: &str,
    scopes: &[String],
) -> Result<(String, Option<String>), OAuthError> {
    // rmcp registers under the application type of the client configured
    // last, and offers no other way to set it: configure a placeholder.
    manager
        .configure_client(
            OAuthClientConfig::new("", redirect_uri)
                .with_application_type(sign_in.application_type),
        )
        .map_err(setup)?;
    let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
    let config = manager
        .register_client(sign_in.client_name, redirect_uri, &scopes)
        .await
        .map_err(setup)?;
    Ok((config.client_id, config.client_secret))
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
    let discovered = discover(&guarded(state).await?, url, None).await?;
    same_origin_unless_iss(&discovered.metadata)?;
    // A client id (and secret) the user entered belongs to the issuer it
    // was first used with: one the server's metadata now names instead
    // never sees it.
    if let Some(entered) = &settings.client_id
        && let Some((bound, client)) =
            store::stored_client(&state.db, &secrets, (user_id, connector_id))
                .await
                .map_err(store_error)?
        && client.client_id == *entered
        && bound.as_deref() != discovered.metadata.issuer.as_deref()
    {
        return Err(OAuthError::IssuerChanged {
            was: bound.unwrap_or_default(),
            now: discovered.metadata.issuer.clone().unwrap_or_default(),
        });
    }
    let reused = store::client_for(
        &state.db,
        &secrets,
        (user_id, connector_id),
        url,
        discovered.metadata.issuer.as_deref(),
    )
    .await
    .map_err(store_error)?;
    // A step-up the connector asked for: its union, with the user's own.
    let (scopes, step_ups) = match reused.as_ref().filter(|r| r.step_ups > 0) {
        Some(stepped) => (
            scopes::union(&settings.scopes, &stepped.scopes),
            stepped.step_ups,
        ),
        None => (settings.scopes.clone(), 0),
    };
    let clients = Clients {
        entered: settings
            .client_id
            .clone()
            .map(|id| (id, settings.client_secret.clone())),
        registered: reused,
        metadata_document: client_metadata_url(state),
    };
    let begun = begin(
        discovered,
        url,
        SignIn {
            redirect_uri,
            application_type: "web",
            client_name: CLIENT_NAME,
            scopes,
            clients,
            step_ups,
            own_redirect_uri: Some(&format!("{redirect_uri}/{}", connector_id.0)),
        },
    )
    .await?;
    // The page the browser is sent to is an OAuth endpoint like the rest.
    if !crate::policy::current(&state.db)
        .await?
        .allows_host(&begun.authorization_url)
    {
        return Err(OAuthError::ForbiddenByPolicy(
            crate::policy::host_of(&begun.authorization_url).unwrap_or_default(),
        ));
    }
    if !browser_may_open(state, &begun.authorization_url).await {
        return Err(OAuthError::InsecureAuthorizationUrl(
            begun.authorization_url,
        ));
    }
    store::save_client(
        &state.db,
        &secrets,
        (user_id, connector_id),
        url,
        &begun.in_flight.metadata,
        &begun.in_flight.client,
    )
    .await
    .map_err(store_error)?;
    store::save_state(
        &state.db,
        &secrets,
        (user_id, connector_id),
        &begun.csrf,
        &begun.in_flight,
    )
    .await
    .map_err(store_error)?;
    Ok(begun.authorization_url)
}

/// Whether the authorization server says it sends `iss` on its
/// authorization responses (RFC 9207 §3).
fn sends_iss(metadata: &AuthorizationMetadata) -> bool {
    metadata
        .additional_fields
        .get("authorization_response_iss_parameter_supported")
        .and_then(serde_json::Value::as_bool)
        == Some(true)
}

/// OAuth mix-up (RFC 9207; issue 44): an authorization server that sends
/// no `iss` on its responses cannot tell the callback whose code it is,
/// so its authorization and token endpoints must be where its issuer is.
/// A server's metadata that names another issuer's sign-in page beside a
/// token endpoint of its own would get that issuer's code and PKCE
/// verifier. With `iss` sent, the callback checks it instead ([`finish`]).
fn same_origin_unless_iss(metadata: &AuthorizationMetadata) -> Result<(), OAuthError> {
    if sends_iss(metadata) {
        return Ok(());
    }
    let origin = |url: &str| reqwest::Url::parse(url).ok().map(|u| u.origin());
    let issuer = metadata.issuer.as_deref().and_then(origin);
    for (what, endpoint) in [
        ("sign-in page", metadata.authorization_endpoint.as_str()),
        ("token endpoint", metadata.token_endpoint.as_str()),
    ] {
        if issuer.is_none() || origin(endpoint) != issuer {
            return Err(OAuthError::Setup(format!(
                "the authorization server {} sends no iss and names a {what} elsewhere ({endpoint}), \
                 which a sign-in cannot tell apart from another server's",
                metadata.issuer.as_deref().unwrap_or("(no issuer)")
            )));
        }
    }
    Ok(())
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

/// What a completed sign-in changed, for the activity log.
#[derive(Debug, Clone)]
pub struct AccountChange {
    /// The connector's name.
    pub connector_name: String,
    /// "signed in" (tokens were replaced: perhaps another account) or
    /// "signed out".
    pub before: String,
    /// "signed in at <issuer>".
    pub after: String,
}

/// Completes a sign-in from its callback (`code`, `state`, `iss`), for the
/// signed-in `session_user`. Returns the connector it signed in, and what
/// it changed.
pub async fn finish(
    state: &AppState,
    session_user: UserId,
    (code, state_param, issuer): (&str, &str, Option<&str>),
    arrived_at: &str,
) -> Result<(ConnectorId, AccountChange), OAuthError> {
    let secrets = secret_box(state)?;
    let (user_id, connector_id, in_flight) = store::take_state(&state.db, &secrets, state_param)
        .await
        .map_err(store_error)?
        .ok_or(OAuthError::UnknownState)?;
    if user_id != session_user {
        return Err(OAuthError::WrongUser);
    }
    // The answer must come back where this sign-in asked it to, and say
    // who sent it when its server says it does (RFC 9207): a code for
    // another sign-in, or from another issuer, is never exchanged.
    let expected = reqwest::Url::parse(&in_flight.client.redirect_uri)
        .map(|u| u.path().to_owned())
        .unwrap_or_default();
    if expected != arrived_at {
        return Err(OAuthError::Exchange(
            "it came back to another sign-in's address".into(),
        ));
    }
    if issuer.is_none() && sends_iss(&in_flight.metadata) {
        return Err(OAuthError::Exchange(
            "the authorization server's answer did not say who sent it (iss)".into(),
        ));
    }
    let Some((url, connector_name)) = current(state, user_id, connector_id).await? else {
        return Err(OAuthError::ConnectorChanged);
    };
    if url != in_flight.resource {
        return Err(OAuthError::ConnectorChanged);
    }
    let had_tokens = has_tokens(state, (user_id, connector_id), &in_flight.resource).await?;
    let mut manager = stored_manager(
        state,
        &secrets,
        (user_id, connector_id),
        &in_flight.resource,
        &in_flight.metadata,
        &in_flight.client,
    )
    .await?;
    let states = InMemoryStateStore::new();
    states
        .save(state_param, in_flight.state.clone())
        .await
        .map_err(setup)?;
    manager.set_state_store(states);
    manager
        .exchange_code_for_token_with_issuer(code, state_param, issuer)
        .await
        .map_err(|e| OAuthError::Exchange(e.to_string()))?;
    let issuer = in_flight
        .metadata
        .issuer
        .clone()
        .unwrap_or_else(|| in_flight.metadata.authorization_endpoint.clone());
    Ok((
        connector_id,
        AccountChange {
            connector_name,
            before: if had_tokens {
                "signed in"
            } else {
                "signed out"
            }
            .to_owned(),
            after: format!("signed in at {issuer}"),
        },
    ))
}

/// Whether connector `connector_id` of `user_id` holds tokens for `url`.
pub async fn has_tokens(
    state: &AppState,
    (user_id, connector_id): (UserId, ConnectorId),
    url: &str,
) -> Result<bool, OAuthError> {
    use rmcp::transport::auth::CredentialStore as _;
    let secrets = secret_box(state)?;
    let credentials =
        PgCredentialStore::new(state.db.clone(), secrets, (user_id, connector_id), url);
    Ok(credentials.load().await.map_err(store_error)?.is_some())
}

/// Enters a change of the account a connector acts as (a sign-in, perhaps
/// to another account than before, or a sign-out) in the activity chain:
/// every later call of the connector acts as that account.
pub async fn record_account_change(
    state: &AppState,
    (user_id, connector_id): (UserId, ConnectorId),
    connector_name: &str,
    before: &str,
    after: &str,
) -> Result<(), sqlx::Error> {
    let mut tx = crate::db::service_tx(&state.db).await?;
    crate::audit::append_admin(
        &mut tx,
        &crate::audit::AdminEntry {
            admin: user_id,
            kind: countersign_api::ActivityKind::ConnectorAccountChanged,
            subject: None,
            connector: Some((connector_id, connector_name.to_owned())),
            changes: vec![countersign_api::SettingChange {
                setting: "oauth_account".into(),
                before: before.to_owned(),
                after: after.to_owned(),
            }],
        },
    )
    .await?;
    tx.commit().await
}

/// The connector's URL and name, if it is still the user's.
async fn current(
    state: &AppState,
    user_id: UserId,
    connector_id: ConnectorId,
) -> Result<Option<(String, String)>, sqlx::Error> {
    let mut tx = crate::db::user_tx(&state.db, user_id).await?;
    let row = sqlx::query!(
        "select url, name from connectors where id = $1",
        connector_id as ConnectorId,
    )
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(row.map(|r| (r.url, r.name)))
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
        .map_err(store_error)?;
    let stored = credentials.load().await.map_err(store_error)?;
    if let (Some(signed_in), Some(stored)) = (&signed_in, stored)
        && let Err(err) = revoke(state, signed_in, &stored).await
    {
        tracing::warn!(connector.id = %connector_id, error = %err, "token revocation failed");
    }
    // A new chain of sign-ins may step up again.
    if let Some(signed_in) = signed_in.filter(|s| s.client.step_ups > 0) {
        let client = ClientRecord {
            step_ups: 0,
            ..signed_in.client.clone()
        };
        save_client_of(
            state,
            &secrets,
            (user_id, connector_id),
            url,
            &signed_in,
            &client,
        )
        .await?;
    }
    credentials.clear().await.map_err(store_error)
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
    let response = guarded(state)
        .await
        .map_err(|e| e.to_string())?
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
        .map_err(store_error)?
        .ok_or(OAuthError::NeedsSignIn)?;
    let manager = stored_manager(
        state,
        &secrets,
        (user_id, connector_id),
        url,
        &stored.metadata,
        &stored.client,
    )
    .await?;
    if refresh_due(state, (user_id, connector_id), url, rand::random::<f64>()).await {
        match manager.refresh_token().await {
            Ok(_) => {}
            Err(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) => {
                return Err(OAuthError::NeedsSignIn);
            }
            // The token may still be good: rmcp tries again below.
            Err(e) => tracing::warn!(error = %e, "oauth: an early refresh failed"),
        }
    }
    match manager.get_access_token().await {
        Ok(token) => Ok(token),
        Err(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) => {
            Err(OAuthError::NeedsSignIn)
        }
        Err(e) => Err(setup(e)),
    }
}

/// Whether the stored token of the connector is in its early-refresh
/// window, at `jitter` (0..1) of it ([`refresh_early`]).
async fn refresh_due(state: &AppState, ids: (UserId, ConnectorId), url: &str, jitter: f64) -> bool {
    use rmcp::transport::auth::CredentialStore as _;
    let Ok(secrets) = secret_box(state) else {
        return false;
    };
    let stored = PgCredentialStore::new(state.db.clone(), secrets, ids, url)
        .load()
        .await
        .ok()
        .flatten();
    let Some(stored) = stored else {
        return false;
    };
    let lifetime = stored
        .token_response
        .as_ref()
        .and_then(|t| serde_json::to_value(t).ok())
        .and_then(|t| t.get("expires_in").and_then(serde_json::Value::as_u64));
    let (Some(lifetime), Some(received_at)) = (lifetime, stored.token_received_at) else {
        return false;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let left = i128::from(received_at) + i128::from(lifetime) - i128::from(now);
    refresh_early(lifetime, left, jitter)
}

/// Refresh jitter. rmcp refreshes a token once fewer than
/// `min(30 s, lifetime / 2)` seconds are left, so every call of every
/// instance near that moment would refresh at once (each waiting on the
/// advisory lock, each rotating the token again). A call refreshes a
/// little earlier instead, once fewer than that plus `jitter` (0..1) of a
/// window of `min(30 s, lifetime / 4)` seconds are left: the refreshes of
/// one connector spread over the window, and the first one's new token
/// puts the others out of it.
pub(crate) fn refresh_early(lifetime: u64, left: i128, jitter: f64) -> bool {
    let rmcp_buffer = 30.min(lifetime / 2) as f64;
    let window = 30.min(lifetime / 4) as f64;
    (left as f64) < rmcp_buffer + window * jitter.clamp(0.0, 1.0)
}

/// Replaces the client of a stored sign-in (its tokens stay: same issuer,
/// same resource).
async fn save_client_of(
    state: &AppState,
    secrets: &SecretBox,
    ids: (UserId, ConnectorId),
    url: &str,
    signed_in: &store::SignedIn,
    client: &ClientRecord,
) -> Result<(), OAuthError> {
    store::save_client(&state.db, secrets, ids, url, &signed_in.metadata, client)
        .await
        .map_err(store_error)
}

/// rmcp's manager for a stored sign-in of connector `connector_id` at
/// `url`: the metadata and client of its sign-in, tokens in
/// [`PgCredentialStore`]. Its token requests send the `resource` the
/// authorization request sent (a pathless one with the `/` URL parsing
/// adds, which RFC 3986 §6.2.3 makes the same URI: rmcp sets the exact
/// string only during discovery, which these requests do not repeat).
async fn stored_manager(
    state: &AppState,
    secrets: &SecretBox,
    ids: (UserId, ConnectorId),
    url: &str,
    metadata: &AuthorizationMetadata,
    client: &ClientRecord,
) -> Result<AuthorizationManager, OAuthError> {
    let base = client.resource_indicator.as_deref().unwrap_or(url);
    let mut manager = manager(&guarded(state).await?, base).await?;
    manager.set_metadata(metadata.clone());
    manager.configure_client(client.config()).map_err(setup)?;
    manager.set_credential_store(PgCredentialStore::new(
        state.db.clone(),
        secrets.clone(),
        ids,
        url,
    ));
    Ok(manager)
}

/// The connector at `url` answered its token with HTTP 403 and
/// `www_authenticate`: when that asks for more access
/// (`insufficient_scope`), records the union of what the sign-in asked
/// for, what it was granted and what the challenge names
/// ([`scopes::step_up`]) as the scopes of the user's next sign-in, at most
/// [`scopes::MAX_STEP_UPS`] times until the user disconnects. Returns what
/// to tell the user: [`OAuthError::NeedsMoreAccess`], or
/// [`OAuthError::StepUpRefused`] with the reason.
pub async fn step_up(
    state: &AppState,
    (user_id, connector_id): (UserId, ConnectorId),
    url: &str,
    www_authenticate: &str,
) -> OAuthError {
    use rmcp::transport::auth::CredentialStore as _;
    let recorded = async {
        let secrets = secret_box(state)?;
        let signed_in = store::signed_in(&state.db, &secrets, (user_id, connector_id), url)
            .await
            .map_err(store_error)?
            .ok_or(OAuthError::NeedsSignIn)?;
        let granted = PgCredentialStore::new(
            state.db.clone(),
            secrets.clone(),
            (user_id, connector_id),
            url,
        )
        .load()
        .await
        .map_err(store_error)?
        .map(|c| c.granted_scopes)
        .unwrap_or_default();
        let base = reqwest::Url::parse(url).map_err(setup)?;
        let challenge = scopes::Challenge::parse(www_authenticate, &base);
        let asked = scopes::union(&signed_in.client.scopes, &granted);
        let union = scopes::step_up(&asked, &challenge, signed_in.client.step_ups)
            .map_err(OAuthError::StepUpRefused)?;
        let client = ClientRecord {
            scopes: union,
            step_ups: signed_in.client.step_ups + 1,
            ..signed_in.client.clone()
        };
        save_client_of(
            state,
            &secrets,
            (user_id, connector_id),
            url,
            &signed_in,
            &client,
        )
        .await?;
        Ok::<_, OAuthError>(OAuthError::NeedsMoreAccess {
            scopes: challenge.scopes.join(" "),
        })
    }
    .await;
    recorded.unwrap_or_else(|err| err)
}

/// The connector at `url` refused its token (HTTP 401): the connector
/// needs a new sign-in (the token was revoked, or the server moved to
/// another authorization server — SEP-2352: the next sign-in discovers
/// afresh, and a client registered with another issuer is never reused).
/// Returns [`OAuthError::NeedsSignIn`].
pub async fn token_refused(
    state: &AppState,
    (user_id, connector_id): (UserId, ConnectorId),
    url: &str,
) -> OAuthError {
    let marked = match secret_box(state) {
        Ok(secrets) => {
            PgCredentialStore::new(state.db.clone(), secrets, (user_id, connector_id), url)
                .needs_sign_in()
                .await
                .map_err(store_error)
        }
        Err(err) => Err(err),
    };
    match marked {
        Ok(()) => OAuthError::NeedsSignIn,
        Err(err) => err,
    }
}

/// Whether connector `connector_id` of `user_id` at `url` is an OAuth
/// connector without a sign-in for that URL (never signed in, a refused
/// refresh or token, or a new URL): what the chat offers "Sign in to
/// <connector> again" for, after a call that failed.
pub async fn needs_sign_in(
    state: &AppState,
    (user_id, connector_id): (UserId, ConnectorId),
    url: &str,
) -> bool {
    let secrets = state.secrets.as_ref();
    let oauth = matches!(
        super::load_auth(&state.db, secrets, user_id.into(), connector_id.into()).await,
        Ok(super::Auth::OAuth(_))
    );
    if !oauth {
        return false;
    }
    let Ok(secrets) = secret_box(state) else {
        return false;
    };
    matches!(
        store::signed_in(&state.db, &secrets, (user_id, connector_id), url).await,
        Ok(None)
    )
}

#[cfg(test)]
mod tests {
    use super::refresh_early;

    #[test]
    fn refreshes_come_early_at_a_random_point_of_a_bounded_window() {
        // An hour-long token: rmcp's 30 s, then up to 30 s more.
        assert!(!refresh_early(3600, 61, 1.0));
        assert!(refresh_early(3600, 59, 1.0));
        assert!(!refresh_early(3600, 31, 0.0));
        assert!(refresh_early(3600, 29, 0.0));
        assert!(refresh_early(3600, 44, 0.5));
        // A 4 s token: rmcp's 2 s, then at most 1 s more.
        assert!(!refresh_early(4, 3, 1.0));
        assert!(refresh_early(4, 2, 0.9));
        // Expired is always due; jitter outside 0..1 is clamped.
        assert!(refresh_early(60, -5, 0.0));
        assert!(!refresh_early(3600, 100, 7.0));
    }
}
