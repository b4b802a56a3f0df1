//! OAuth mode (`DemoServer::start_with_oauth`, `--oauth`): the demo server
//! becomes a protected MCP resource *and* its own authorization server, so
//! Countersign's OAuth client can be tested end to end on loopback with
//! the real protocol (MCP authorization 2025-11-25 / 2026-07-28):
//!
//! - `/mcp` answers `401` with `WWW-Authenticate: Bearer
//!   resource_metadata="…", scope="notes.read"` unless the request carries
//!   a live access token issued for this resource (RFC 6750, RFC 9728).
//! - `/.well-known/oauth-protected-resource[/mcp]` — protected-resource
//!   metadata (RFC 9728); `/.well-known/oauth-authorization-server` —
//!   authorization-server metadata (RFC 8414) with PKCE S256 and RFC 9207
//!   `iss` advertised.
//! - `POST /register` — dynamic client registration (RFC 7591).
//! - `GET /authorize` — a sign-in page with one "Allow" button (the demo's
//!   one user); `POST /authorize` (the button) redirects to the client's
//!   `redirect_uri` with `code`, `state` and `iss`. It checks the client,
//!   the registered redirect URI, PKCE S256 and the `resource`.
//! - `POST /token` — `authorization_code` (PKCE verified, single-use code,
//!   `resource` checked) and `refresh_token` (rotating: the old one is spent).
//! - `POST /revoke` — RFC 7009: a refresh token is spent, with the access
//!   tokens of its client.
//! - `GET /admin/oauth` — counters for tests: codes, tokens and refreshes
//!   issued, requests refused for want of a token, and the `Authorization`
//!   headers `/mcp` saw.
//!
//! Tokens carry the scopes their authorization request asked for (the
//! demo grants whatever is asked). Three switches let tests play other
//! authorization servers: [`AuthServer::allow_without_asking`] (`GET
//! /authorize` redirects back at once, for headless clients),
//! [`AuthServer::require_scope`] (`/mcp` answers 403 `insufficient_scope`
//! to a token without that scope: a step-up) and
//! [`AuthServer::confidential_clients`] (registration issues a secret that
//! the token endpoint then requires, as `client_secret_basic`).
//!
//! Everything is in memory; tokens are random and expire after the
//! configured lifetime, so a test can wait for a refresh.

use axum::{
    Form, Json, Router,
    extract::{Query, Request, State},
    http::{HeaderMap, StatusCode, header},
    middleware::Next,
    response::{Html, IntoResponse, Redirect, Response},
    routing::get,
};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

/// The scope the demo's tools need.
pub const SCOPE: &str = "notes.read";

/// The authorization server's state.
#[derive(Debug, Clone)]
pub struct AuthServer {
    base: String,
    token_ttl: Duration,
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    /// client_id → its registered redirect URIs and secret.
    clients: HashMap<String, Client>,
    /// code → what it was issued for.
    codes: HashMap<String, Grant>,
    /// access token → when it expires, and its scopes.
    access: HashMap<String, (Instant, Vec<String>)>,
    /// refresh token → the client it belongs to, and its scopes.
    refresh: HashMap<String, (String, Vec<String>)>,
    counters: Counters,
    /// `Authorization` headers `/mcp` received, in order.
    seen: Vec<String>,
    /// The `scope` of each authorization request, in order.
    asked: Vec<String>,
    /// `/authorize` redirects back without the sign-in page.
    auto_allow: bool,
    /// `/mcp` needs tokens with this scope.
    required_scope: Option<String>,
    /// Registration issues secrets; `/token` requires them (Basic).
    confidential: bool,
}

#[derive(Debug, Clone)]
struct Client {
    redirect_uris: Vec<String>,
    secret: Option<String>,
}

#[derive(Debug, Clone)]
struct Grant {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    scopes: Vec<String>,
}

/// What `GET /admin/oauth` reports.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct Counters {
    /// Clients registered.
    pub registered: u64,
    /// Codes issued.
    pub codes: u64,
    /// Access tokens issued for a code.
    pub tokens: u64,
    /// Access tokens issued for a refresh token.
    pub refreshes: u64,
    /// `/mcp` requests refused for want of a live token.
    pub refused: u64,
    /// Tokens revoked at `/revoke` (RFC 7009).
    pub revoked: u64,
}

fn random() -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 24]>())
}

impl AuthServer {
    /// An authorization server for the demo at `addr` whose access tokens
    /// live `token_ttl`.
    pub fn new(addr: SocketAddr, token_ttl: Duration) -> Self {
        Self {
            base: format!("http://{addr}"),
            token_ttl,
            inner: Arc::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The MCP resource it protects.
    pub fn resource(&self) -> String {
        format!("{}/mcp", self.base)
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        self.lock().counters
    }

    /// The `Authorization` headers `/mcp` received.
    pub fn seen(&self) -> Vec<String> {
        self.lock().seen.clone()
    }

    /// Forgets every token (a test's "the authorization server revoked
    /// everything").
    pub fn revoke_all(&self) {
        let mut inner = self.lock();
        inner.access.clear();
        inner.refresh.clear();
    }

    /// The `scope` parameter of each authorization request so far.
    pub fn asked(&self) -> Vec<String> {
        self.lock().asked.clone()
    }

    /// From now on `GET /authorize` sends the browser back at once (no
    /// sign-in page): an authorization server a headless client can use.
    pub fn allow_without_asking(&self) {
        self.lock().auto_allow = true;
    }

    /// From now on `/mcp` answers a live token without `scope` with 403
    /// `insufficient_scope` naming it (`None`: any live token will do).
    pub fn require_scope(&self, scope: Option<&str>) {
        self.lock().required_scope = scope.map(str::to_owned);
    }

    /// From now on registration issues a client secret, advertised and
    /// required at `/token` as `client_secret_basic`.
    pub fn confidential_clients(&self) {
        self.lock().confidential = true;
    }

    fn issue(&self, inner: &mut Inner, client_id: &str, scopes: Vec<String>) -> Value {
        let access = random();
        let refresh = random();
        inner.access.insert(
            access.clone(),
            (Instant::now() + self.token_ttl, scopes.clone()),
        );
        inner
            .refresh
            .insert(refresh.clone(), (client_id.to_owned(), scopes.clone()));
        json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.token_ttl.as_secs(),
            "refresh_token": refresh,
            "scope": scopes.join(" "),
        })
    }
}

/// The OAuth routes (metadata, registration, authorization, token, admin).
pub fn routes(server: AuthServer) -> Router {
    Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(server_metadata),
        )
        .route("/register", axum::routing::post(register))
        .route("/authorize", get(authorize_page).post(authorize))
        .route("/token", axum::routing::post(token))
        .route("/revoke", axum::routing::post(revoke))
        .route("/admin/oauth", get(admin))
        .with_state(server)
}

/// `/mcp`'s guard: a live access token, or 401 with the challenge.
pub async fn require_bearer(
    State(server): State<AuthServer>,
    request: Request,
    next: Next,
) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (live, missing) = {
        let mut inner = server.lock();
        if let Some(h) = &presented {
            inner.seen.push(h.clone());
        }
        let token = presented
            .as_deref()
            .and_then(|h| h.strip_prefix("Bearer "))
            .and_then(|t| inner.access.get(t))
            .filter(|(expiry, _)| *expiry > Instant::now());
        let missing = match (token, &inner.required_scope) {
            (Some((_, scopes)), Some(required)) if !scopes.contains(required) => {
                Some(required.clone())
            }
            _ => None,
        };
        let live = token.is_some();
        if !live || missing.is_some() {
            inner.counters.refused += 1;
        }
        (live, missing)
    };
    let metadata = format!("{}/.well-known/oauth-protected-resource/mcp", server.base);
    if let Some(scope) = missing {
        let challenge = format!(
            "Bearer error=\"insufficient_scope\", scope=\"{scope}\", resource_metadata=\"{metadata}\""
        );
        return (
            StatusCode::FORBIDDEN,
            [(header::WWW_AUTHENTICATE, challenge)],
            Json(json!({"error": "insufficient_scope"})),
        )
            .into_response();
    }
    if live {
        return next.run(request).await;
    }
    let challenge = format!("Bearer resource_metadata=\"{metadata}\", scope=\"{SCOPE}\"");
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, challenge)],
        Json(json!({"error": "invalid_token"})),
    )
        .into_response()
}

async fn resource_metadata(State(server): State<AuthServer>) -> Json<Value> {
    Json(json!({
        "resource": server.resource(),
        "authorization_servers": [server.base],
        "scopes_supported": [SCOPE],
        "bearer_methods_supported": ["header"],
    }))
}

async fn server_metadata(State(server): State<AuthServer>) -> Json<Value> {
    let base = &server.base;
    let auth_method = if server.lock().confidential {
        "client_secret_basic"
    } else {
        "none"
    };
    Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "revocation_endpoint": format!("{base}/revoke"),
        "scopes_supported": [SCOPE],
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": [auth_method],
        "authorization_response_iss_parameter_supported": true,
    }))
}

async fn register(State(server): State<AuthServer>, Json(body): Json<Value>) -> Response {
    let redirect_uris: Vec<String> = body["redirect_uris"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|u| u.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if redirect_uris.is_empty() {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_redirect_uri");
    }
    let client_id = format!("demo-client-{}", random());
    let mut inner = server.lock();
    inner.counters.registered += 1;
    let secret = inner.confidential.then(random);
    inner.clients.insert(
        client_id.clone(),
        Client {
            redirect_uris: redirect_uris.clone(),
            secret: secret.clone(),
        },
    );
    let mut answer = json!({
        "client_id": client_id,
        "redirect_uris": redirect_uris,
        "token_endpoint_auth_method": if secret.is_some() { "client_secret_basic" } else { "none" },
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
    });
    if let Some(secret) = secret {
        answer["client_secret"] = json!(secret);
    }
    (StatusCode::CREATED, Json(answer)).into_response()
}

/// The query (`GET`) or form (`POST`) of an authorization request.
#[derive(Debug, Deserialize)]
struct AuthorizeParams {
    response_type: String,
    client_id: String,
    redirect_uri: String,
    state: String,
    code_challenge: String,
    code_challenge_method: String,
    resource: Option<String>,
    scope: Option<String>,
}

impl AuthorizeParams {
    /// Why the request cannot be granted, if it cannot.
    fn refusal(&self, server: &AuthServer) -> Option<&'static str> {
        let inner = server.lock();
        let registered = inner.clients.get(&self.client_id)?;
        if !registered.redirect_uris.contains(&self.redirect_uri) {
            return Some("the redirect_uri is not the registered one");
        }
        if self.response_type != "code" {
            return Some("response_type must be code");
        }
        if self.code_challenge_method != "S256" || self.code_challenge.is_empty() {
            return Some("PKCE S256 is required");
        }
        if self.resource.as_deref() != Some(server.resource().as_str()) {
            return Some("resource must name this server's MCP endpoint");
        }
        None
    }

    fn known(&self, server: &AuthServer) -> bool {
        server.lock().clients.contains_key(&self.client_id)
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

async fn authorize_page(
    State(server): State<AuthServer>,
    Query(params): Query<AuthorizeParams>,
) -> Response {
    if !params.known(&server) {
        return (StatusCode::BAD_REQUEST, "unknown client_id").into_response();
    }
    if let Some(why) = params.refusal(&server) {
        return (StatusCode::BAD_REQUEST, why).into_response();
    }
    if server.lock().auto_allow {
        return grant(&server, &params);
    }
    let hidden = [
        ("response_type", params.response_type.as_str()),
        ("client_id", &params.client_id),
        ("redirect_uri", &params.redirect_uri),
        ("state", &params.state),
        ("code_challenge", &params.code_challenge),
        ("code_challenge_method", &params.code_challenge_method),
        ("resource", params.resource.as_deref().unwrap_or_default()),
        ("scope", params.scope.as_deref().unwrap_or_default()),
    ]
    .iter()
    .map(|(k, v)| format!(r#"<input type="hidden" name="{k}" value="{}">"#, escape(v)))
    .collect::<String>();
    Html(format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in to Demo notes</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem">
<h1>Sign in to Demo notes</h1>
<p>Countersign asks to read your notes (<code>{SCOPE}</code>) as the demo user.</p>
<form method="post" action="/authorize">{hidden}<button type="submit">Allow</button></form>
</body></html>"#
    ))
    .into_response()
}

async fn authorize(
    State(server): State<AuthServer>,
    Form(params): Form<AuthorizeParams>,
) -> Response {
    if !params.known(&server) {
        return (StatusCode::BAD_REQUEST, "unknown client_id").into_response();
    }
    if let Some(why) = params.refusal(&server) {
        return (StatusCode::BAD_REQUEST, why).into_response();
    }
    grant(&server, &params)
}

/// A code for the request (the demo grants the scopes asked for, or
/// [`SCOPE`] when none), and the redirect back with `code`, `state`, `iss`.
fn grant(server: &AuthServer, params: &AuthorizeParams) -> Response {
    let code = random();
    let asked = params.scope.clone().unwrap_or_default();
    let mut scopes: Vec<String> = asked.split_whitespace().map(str::to_owned).collect();
    if scopes.is_empty() {
        scopes.push(SCOPE.to_owned());
    }
    {
        let mut inner = server.lock();
        inner.counters.codes += 1;
        inner.asked.push(asked);
        inner.codes.insert(
            code.clone(),
            Grant {
                client_id: params.client_id.clone(),
                redirect_uri: params.redirect_uri.clone(),
                challenge: params.code_challenge.clone(),
                scopes,
            },
        );
    }
    let Ok(mut target) = url::Url::parse(&params.redirect_uri) else {
        return (StatusCode::BAD_REQUEST, "bad redirect_uri").into_response();
    };
    target
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &params.state)
        .append_pair("iss", &server.base);
    Redirect::to(target.as_str()).into_response()
}

fn oauth_error(status: StatusCode, error: &str) -> Response {
    (status, Json(json!({ "error": error }))).into_response()
}

#[derive(Debug, Deserialize)]
struct TokenForm {
    grant_type: String,
    code: Option<String>,
    redirect_uri: Option<String>,
    client_id: Option<String>,
    code_verifier: Option<String>,
    refresh_token: Option<String>,
    resource: Option<String>,
}

async fn token(
    State(server): State<AuthServer>,
    headers: HeaderMap,
    Form(form): Form<TokenForm>,
) -> Response {
    if let Some(resource) = &form.resource
        && *resource != server.resource()
    {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_target");
    }
    let mut inner = server.lock();
    // A confidential client authenticates with HTTP Basic (RFC 6749 §2.3.1).
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok());
    let client_id = match &basic {
        Some(pair) => pair.split(':').next().map(str::to_owned),
        None => form.client_id.clone(),
    };
    if inner.confidential {
        let secret = client_id
            .as_deref()
            .and_then(|id| inner.clients.get(id))
            .and_then(|c| c.secret.clone());
        let expected = client_id
            .as_deref()
            .zip(secret)
            .map(|(id, s)| format!("{id}:{s}"));
        if basic.is_none() || basic != expected {
            return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
        }
    }
    match form.grant_type.as_str() {
        "authorization_code" => {
            let Some(grant) = form.code.as_deref().and_then(|c| inner.codes.remove(c)) else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            };
            let verifier = form.code_verifier.unwrap_or_default();
            let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(Sha256::digest(verifier.as_bytes()));
            if challenge != grant.challenge
                || form.redirect_uri.as_deref() != Some(grant.redirect_uri.as_str())
                || client_id.as_deref() != Some(grant.client_id.as_str())
            {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            }
            inner.counters.tokens += 1;
            let body = server.issue(&mut inner, &grant.client_id, grant.scopes);
            Json(body).into_response()
        }
        "refresh_token" => {
            let Some((owner, scopes)) = form
                .refresh_token
                .as_deref()
                .and_then(|r| inner.refresh.remove(r))
            else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
            };
            inner.counters.refreshes += 1;
            let body = server.issue(&mut inner, &owner, scopes);
            Json(body).into_response()
        }
        _ => oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type"),
    }
}

#[derive(Debug, Deserialize)]
struct RevokeForm {
    token: String,
}

async fn revoke(State(server): State<AuthServer>, Form(form): Form<RevokeForm>) -> StatusCode {
    let mut inner = server.lock();
    if inner.refresh.remove(&form.token).is_some() || inner.access.remove(&form.token).is_some() {
        inner.counters.revoked += 1;
        // The demo has one user: its access tokens go with it.
        inner.access.clear();
    }
    // RFC 7009 §2.2: 200 whether or not the token was known.
    StatusCode::OK
}

async fn admin(State(server): State<AuthServer>, _headers: HeaderMap) -> Json<Value> {
    let inner = server.lock();
    Json(json!({ "counters": inner.counters, "seen": inner.seen }))
}
