//! A loopback OpenID Connect provider for Countersign's single sign-on
//! tests (the API tests link it; `cargo xtask e2e` runs its binary): it speaks
//! the protocol as a real one does — discovery, JWKS, the authorization
//! endpoint (which signs in whoever the test says, at once) and the token
//! endpoint (client authentication, single-use codes, PKCE S256), with ID
//! tokens signed RS256 by `openidconnect`'s own provider-side types — and
//! can be told to misbehave as a hostile or broken provider would.
//!
//! Its two RSA keys (`keys/k1.pem`, `keys/k2.pem`) exist only for these
//! tests. A browser test says who signs in next with
//! `POST /test/sign-in-as` (a [`Person`] as JSON).

use axum::{
    Form, Json, Router,
    extract::{Query, State},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Redirect, Response},
    routing::{get, post},
};
use base64::Engine as _;
use openidconnect::{
    AdditionalClaims, Audience, EndUserEmail, EndUserName, IssuerUrl, JsonWebKeyId, LocalizedClaim,
    Nonce, PrivateSigningKey, StandardClaims, SubjectIdentifier,
    core::{
        CoreGenderClaim, CoreJsonWebKeySet, CoreJweContentEncryptionAlgorithm,
        CoreJwsSigningAlgorithm, CoreRsaPrivateSigningKey,
    },
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

/// The client this provider knows.
pub const CLIENT_ID: &str = "countersign-test";
/// Its secret.
pub const CLIENT_SECRET: &str = "test-client-secret-5f1c";

/// The groups claim, as providers send it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Groups {
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    groups: Vec<String>,
}
impl AdditionalClaims for Groups {}

type IdToken = openidconnect::IdToken<
    Groups,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
>;

/// Who is signed in at the provider.
#[derive(Debug, Clone, Deserialize)]
pub struct Person {
    /// `sub`.
    pub sub: String,
    /// `email`.
    pub email: String,
    /// `email_verified`.
    #[serde(default = "yes")]
    pub email_verified: bool,
    /// `name`.
    #[serde(default = "robin")]
    pub name: String,
    /// `groups`.
    #[serde(default)]
    pub groups: Vec<String>,
}

fn yes() -> bool {
    true
}

fn robin() -> String {
    "Robin Firm".to_owned()
}

impl Person {
    /// A verified person of `firm.example`.
    pub fn new(sub: &str, email: &str) -> Self {
        Self {
            sub: sub.into(),
            email: email.into(),
            email_verified: true,
            name: "Robin Firm".into(),
            groups: Vec::new(),
        }
    }
}

/// How the next ID token is spoiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tamper {
    #[default]
    None,
    /// Another `nonce` than the one asked for.
    WrongNonce,
    /// Issued for another client.
    WrongAudience,
    /// Another issuer.
    WrongIssuer,
    /// Expired a minute ago.
    Expired,
    /// Issued an hour ago (`exp` still ahead).
    IssuedLongAgo,
    /// `alg: none`, no signature.
    AlgNone,
    /// HS256 with the client secret as the key (valid per the crate's
    /// defaults for a confidential client; refused by Countersign).
    Hs256,
    /// Signed by a key the provider never published.
    UnknownKey,
}

/// A code handed out and not yet redeemed.
#[derive(Debug, Clone)]
struct Grant {
    person: Person,
    nonce: Option<String>,
    challenge: String,
    redirect_uri: String,
}

#[derive(Default)]
struct Inner {
    person: Option<Person>,
    codes: HashMap<String, Grant>,
    tamper: Tamper,
    /// Signing with `k2` and publishing only it (a rotation).
    rotated: bool,
    /// JWKS fetches served.
    jwks_fetches: usize,
    /// The last authorization request's query.
    last_authorize: HashMap<String, String>,
}

/// The running provider.
#[derive(Clone)]
pub struct Provider {
    /// `http://127.0.0.1:PORT`, the issuer.
    pub issuer: String,
    inner: Arc<Mutex<Inner>>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

fn key(rotated: bool) -> CoreRsaPrivateSigningKey {
    let (pem, kid) = if rotated {
        (include_str!("../keys/k2.pem"), "k2")
    } else {
        (include_str!("../keys/k1.pem"), "k1")
    };
    CoreRsaPrivateSigningKey::from_pem(pem, Some(JsonWebKeyId::new(kid.into()))).expect("test key")
}

impl Provider {
    /// Starts it on a free loopback port.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        Self::start_on(listener)
    }

    /// Starts it on `listener`.
    pub fn start_on(listener: tokio::net::TcpListener) -> Self {
        let issuer = format!("http://{}", listener.local_addr().expect("addr"));
        let provider = Self {
            issuer,
            inner: Arc::default(),
        };
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(jwks))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .route("/test/sign-in-as", post(sign_in_as))
            .with_state(provider.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        provider
    }

    /// Whoever signs in next.
    pub fn sign_in_as(&self, person: Person) {
        self.inner.lock().expect("lock").person = Some(person);
    }

    /// Spoils the ID tokens from now on.
    pub fn tamper(&self, tamper: Tamper) {
        self.inner.lock().expect("lock").tamper = tamper;
    }

    /// Rotates the signing key: `k2` signs, and only `k2` is published.
    pub fn rotate_keys(&self) {
        self.inner.lock().expect("lock").rotated = true;
    }

    /// How many times the keys were fetched.
    pub fn jwks_fetches(&self) -> usize {
        self.inner.lock().expect("lock").jwks_fetches
    }

    /// The last authorization request's parameters.
    pub fn last_authorize(&self) -> HashMap<String, String> {
        self.inner.lock().expect("lock").last_authorize.clone()
    }
}

async fn sign_in_as(State(p): State<Provider>, Json(person): Json<Person>) -> StatusCode {
    p.sign_in_as(person);
    StatusCode::NO_CONTENT
}

async fn discovery(State(p): State<Provider>) -> Json<Value> {
    Json(json!({
        "issuer": p.issuer,
        "authorization_endpoint": format!("{}/authorize", p.issuer),
        "token_endpoint": format!("{}/token", p.issuer),
        "jwks_uri": format!("{}/jwks", p.issuer),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
        "scopes_supported": ["openid", "email", "profile"],
    }))
}

async fn jwks(State(p): State<Provider>) -> Json<CoreJsonWebKeySet> {
    let mut inner = p.inner.lock().expect("lock");
    inner.jwks_fetches += 1;
    Json(CoreJsonWebKeySet::new(vec![
        key(inner.rotated).as_verification_key(),
    ]))
}

async fn authorize(
    State(p): State<Provider>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let mut inner = p.inner.lock().expect("lock");
    inner.last_authorize = query.clone();
    let get = |k: &str| query.get(k).cloned().unwrap_or_default();
    if get("client_id") != CLIENT_ID
        || get("response_type") != "code"
        || get("code_challenge_method") != "S256"
        || get("code_challenge").is_empty()
    {
        return (StatusCode::BAD_REQUEST, "bad authorization request").into_response();
    }
    let Some(person) = inner.person.clone() else {
        return (StatusCode::UNAUTHORIZED, "nobody signed in").into_response();
    };
    let code = format!("code-{}", uuid::Uuid::new_v4().simple());
    inner.codes.insert(
        code.clone(),
        Grant {
            person,
            nonce: query.get("nonce").cloned(),
            challenge: get("code_challenge"),
            redirect_uri: get("redirect_uri"),
        },
    );
    let Ok(mut target) = url::Url::parse(&get("redirect_uri")) else {
        return (StatusCode::BAD_REQUEST, "bad redirect_uri").into_response();
    };
    target
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &get("state"));
    Redirect::to(target.as_str()).into_response()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

async fn token(
    State(p): State<Provider>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"))
    );
    if headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        != Some(&expected)
    {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "invalid_client"})),
        )
            .into_response();
    }
    let mut inner = p.inner.lock().expect("lock");
    let invalid = || {
        (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "invalid_grant"})),
        )
            .into_response()
    };
    let Some(grant) = form.get("code").and_then(|c| inner.codes.remove(c)) else {
        return invalid();
    };
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    if b64(&Sha256::digest(verifier.as_bytes())) != grant.challenge
        || form.get("redirect_uri") != Some(&grant.redirect_uri)
        || form.get("grant_type").map(String::as_str) != Some("authorization_code")
    {
        return invalid();
    }
    let now = chrono::Utc::now();
    let tamper = inner.tamper;
    let issuer = if tamper == Tamper::WrongIssuer {
        "http://127.0.0.1:9/".to_owned()
    } else {
        p.issuer.clone()
    };
    let audience = if tamper == Tamper::WrongAudience {
        "another-client"
    } else {
        CLIENT_ID
    };
    let (issued, expires) = match tamper {
        Tamper::Expired => (
            now - chrono::Duration::minutes(5),
            now - chrono::Duration::minutes(1),
        ),
        Tamper::IssuedLongAgo => (
            now - chrono::Duration::hours(1),
            now + chrono::Duration::minutes(5),
        ),
        _ => (now, now + chrono::Duration::minutes(5)),
    };
    let person = grant.person;
    let mut name = LocalizedClaim::new();
    name.insert(None, EndUserName::new(person.name.clone()));
    let claims = openidconnect::IdTokenClaims::new(
        IssuerUrl::new(issuer).expect("issuer"),
        vec![Audience::new(audience.into())],
        expires,
        issued,
        StandardClaims::new(SubjectIdentifier::new(person.sub.clone()))
            .set_email(Some(EndUserEmail::new(person.email.clone())))
            .set_email_verified(Some(person.email_verified))
            .set_name(Some(name)),
        Groups {
            groups: person.groups.clone(),
        },
    )
    .set_nonce(match tamper {
        Tamper::WrongNonce => Some(Nonce::new("not-the-nonce".into())),
        _ => grant.nonce.map(Nonce::new),
    });
    let id_token = match tamper {
        Tamper::AlgNone | Tamper::Hs256 => {
            let payload = b64(&serde_json::to_vec(&claims).expect("claims"));
            if tamper == Tamper::AlgNone {
                format!("{}.{payload}.", b64(br#"{"alg":"none","typ":"JWT"}"#))
            } else {
                use hmac::{KeyInit as _, Mac as _};
                let header = b64(br#"{"alg":"HS256","typ":"JWT"}"#);
                let mut mac = hmac::Hmac::<Sha256>::new_from_slice(CLIENT_SECRET.as_bytes())
                    .expect("hmac key");
                mac.update(format!("{header}.{payload}").as_bytes());
                format!("{header}.{payload}.{}", b64(&mac.finalize().into_bytes()))
            }
        }
        _ => {
            // An unknown key: k2 while k1 is what is published.
            let signing = key(inner.rotated || tamper == Tamper::UnknownKey);
            IdToken::new(
                claims,
                &signing,
                CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
                None,
                None,
            )
            .expect("sign")
            .to_string()
        }
    };
    Json(json!({
        "access_token": format!("at-{}", uuid::Uuid::new_v4().simple()),
        "token_type": "Bearer",
        "expires_in": 300,
        "id_token": id_token,
    }))
    .into_response()
}
