//! Connector OAuth against a hostile server written for the test (issue
//! 44): its protected-resource and authorization-server metadata name
//! whatever endpoints the test sets, and it records every request with
//! the `Host` it was sent to, so a test can tell which names were dialled.

use crate::helpers::{TestApp, spawn_app_with};
use axum::{
    Router,
    extract::State,
    http::{HeaderMap, StatusCode, Uri, header},
    response::{IntoResponse, Response},
};
use countersign::config::Secret;
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, PoisonError};

const KEY_HEX: &str = "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

/// What the hostile server says about itself.
#[derive(Debug, Clone, Default)]
pub(crate) struct Said {
    /// The protected-resource metadata's `authorization_servers[0]`.
    pub authorization_server: String,
    /// The authorization-server metadata's `authorization_endpoint`.
    pub authorization_endpoint: String,
    /// Its `registration_endpoint`.
    pub registration_endpoint: String,
    /// Its metadata says it sends no `iss` on its answers (RFC 9207).
    pub no_iss: bool,
}

#[derive(Debug, Default)]
struct Inner {
    said: Said,
    /// `HOST PATH` of every request.
    seen: Vec<String>,
}

type Shared = Arc<Mutex<Inner>>;

/// A hostile MCP server and authorization server in one, on 127.0.0.1.
pub(crate) struct Hostile {
    pub port: u16,
    shared: Shared,
    _task: tokio::task::JoinHandle<()>,
}

impl Hostile {
    pub(crate) async fn start() -> Self {
        let shared = Shared::default();
        let router = Router::new().fallback(answer).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let task = tokio::spawn(async move {
            axum::serve(listener, router).await.expect("serve");
        });
        let hostile = Self {
            port,
            shared,
            _task: task,
        };
        let honest = hostile.at("127.0.0.1");
        hostile.say(Said {
            authorization_server: honest.clone(),
            authorization_endpoint: format!("{honest}/authorize"),
            registration_endpoint: format!("{honest}/register"),
            no_iss: false,
        });
        hostile
    }

    /// `http://HOST:PORT` of this server under `host`.
    pub(crate) fn at(&self, host: &str) -> String {
        format!("http://{host}:{}", self.port)
    }

    pub(crate) fn say(&self, said: Said) {
        self.lock().said = said;
    }

    /// The requests that reached it under `host`.
    pub(crate) fn seen_at(&self, host: &str) -> Vec<String> {
        let prefix = format!("{host}:{} ", self.port);
        self.lock()
            .seen
            .iter()
            .filter(|s| s.starts_with(&prefix))
            .cloned()
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn answer(State(shared): State<Shared>, headers: HeaderMap, uri: Uri) -> Response {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let said = {
        let mut inner = shared.lock().unwrap_or_else(PoisonError::into_inner);
        inner.seen.push(format!("{host} {}", uri.path()));
        inner.said.clone()
    };
    let here = format!("http://{host}");
    match uri.path() {
        "/mcp" => (
            StatusCode::UNAUTHORIZED,
            [(
                header::WWW_AUTHENTICATE,
                format!(
                    "Bearer resource_metadata=\"{here}/.well-known/oauth-protected-resource/mcp\""
                ),
            )],
        )
            .into_response(),
        p if p.starts_with("/.well-known/oauth-protected-resource") => axum::Json(json!({
            "resource": format!("{here}/mcp"),
            "authorization_servers": [said.authorization_server],
        }))
        .into_response(),
        p if p.starts_with("/.well-known/oauth-authorization-server")
            || p.starts_with("/.well-known/openid-configuration") =>
        {
            axum::Json(json!({
                "issuer": here,
                "authorization_endpoint": said.authorization_endpoint,
                "token_endpoint": format!("{here}/token"),
                "registration_endpoint": said.registration_endpoint,
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_post"],
                "authorization_response_iss_parameter_supported": !said.no_iss,
            }))
            .into_response()
        }
        "/register" => (
            StatusCode::CREATED,
            axum::Json(json!({"client_id": "hostile-client", "redirect_uris": []})),
        )
            .into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// An app that may reach the hostile server by both its names, with one
/// signed-up user (the admin).
pub(crate) async fn app_for(hostile: &Hostile) -> TestApp {
    let allow = format!("127.0.0.1:{0},localhost:{0}", hostile.port)
        .parse()
        .expect("allow list");
    let app = spawn_app_with(|c| {
        c.secret_key = Some(Secret::new(KEY_HEX));
        c.allow_private_connectors = allow;
    })
    .await;
    app.signed_up_user().await;
    app
}

/// Adds the hostile server as an OAuth connector; its id.
pub(crate) async fn add(app: &TestApp, hostile: &Hostile, auth: Value) -> String {
    let res = app
        .post(
            "/api/connectors",
            &json!({"name": "Hostile", "url": format!("{}/mcp", hostile.at("127.0.0.1")), "auth": auth}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    res.json::<Value>().await.expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

/// Issue 44, item 7: the admin's allowed connector hosts cover every
/// OAuth URL — discovery, registration, token, revocation and the page
/// the browser is sent to. The hostile connector is on an allowed host;
/// its metadata names endpoints on another name of the same machine
/// (`localhost`), which the policy does not allow. Seen to fail before:
/// the server fetched the metadata and registered there.
#[tokio::test]
async fn the_admin_host_policy_covers_every_oauth_endpoint() {
    let hostile = Hostile::start().await;
    let app = app_for(&hostile).await;
    let res = app
        .request(
            Method::PUT,
            "/api/admin/policy",
            Some(json!({"connector_hosts": ["127.0.0.1"]})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let id = add(&app, &hostile, json!({"type": "oauth"})).await;
    let start = format!("/api/connectors/{id}/oauth/start");
    let (honest, elsewhere) = (hostile.at("127.0.0.1"), hostile.at("localhost"));

    for (said, what) in [
        (
            Said {
                authorization_server: elsewhere.clone(),
                authorization_endpoint: format!("{elsewhere}/authorize"),
                registration_endpoint: format!("{elsewhere}/register"),
                no_iss: false,
            },
            "the authorization server",
        ),
        (
            Said {
                authorization_server: honest.clone(),
                authorization_endpoint: format!("{honest}/authorize"),
                registration_endpoint: format!("{elsewhere}/register"),
                no_iss: false,
            },
            "the registration endpoint",
        ),
    ] {
        hostile.say(said);
        let res = app.post(&start, &json!({})).await;
        assert_eq!(res.status(), StatusCode::BAD_GATEWAY, "{what}");
        assert_eq!(hostile.seen_at("localhost"), Vec::<String>::new(), "{what}");
    }

    // The page the browser would be sent to.
    hostile.say(Said {
        authorization_server: honest.clone(),
        authorization_endpoint: format!("{elsewhere}/authorize"),
        registration_endpoint: format!("{honest}/register"),
        no_iss: false,
    });
    let res = app.post(&start, &json!({})).await;
    assert_eq!(
        res.status(),
        StatusCode::FORBIDDEN,
        "the authorization page"
    );
    assert_eq!(
        res.json::<Value>().await.expect("JSON"),
        json!({"detail": "forbidden_by_policy"})
    );
    assert!(
        !hostile.seen_at("127.0.0.1").is_empty(),
        "the allowed host was used"
    );
    assert_eq!(hostile.seen_at("localhost"), Vec::<String>::new());
}

/// Issue 44, item 6: a client id and secret the user entered belong to
/// the issuer they were first used with. After the MCP server's metadata
/// switched to another issuer, the sign-in is refused, saying so, and
/// nothing — no registration, no token request — goes to the new one;
/// entering the client again is the user's decision to move. Seen to
/// fail before: the second start answered 200 with an authorization URL
/// at the new issuer, whose token endpoint would have received the
/// secret.
#[tokio::test]
async fn an_entered_client_is_never_offered_to_another_issuer() {
    let hostile = Hostile::start().await;
    let app = app_for(&hostile).await;
    let entered = || json!({"type": "oauth", "client_id": "firm-client", "client_secret": "firm-secret-9f3e"});
    let id = add(&app, &hostile, entered()).await;
    let start = format!("/api/connectors/{id}/oauth/start");
    let res = app.post(&start, &json!({})).await;
    assert_eq!(res.status(), StatusCode::OK, "the first issuer");
    let first: Value = res.json().await.expect("JSON");
    assert!(
        first["authorization_url"]
            .as_str()
            .is_some_and(|u| u.contains("client_id=firm-client")),
        "{first}"
    );

    let elsewhere = hostile.at("localhost");
    hostile.say(Said {
        authorization_server: elsewhere.clone(),
        authorization_endpoint: format!("{elsewhere}/authorize"),
        registration_endpoint: format!("{elsewhere}/register"),
        no_iss: false,
    });
    let res = app.post(&start, &json!({})).await;
    assert_eq!(res.status(), StatusCode::CONFLICT, "another issuer");
    let detail = res.json::<Value>().await.expect("JSON")["detail"]
        .as_str()
        .expect("detail")
        .to_owned();
    assert!(
        detail.contains(&hostile.at("127.0.0.1")) && detail.contains(&elsewhere),
        "{detail}"
    );
    assert!(detail.contains("did not send them"), "{detail}");
    let sent: Vec<String> = hostile
        .seen_at("localhost")
        .into_iter()
        .filter(|r| r.ends_with("/token") || r.ends_with("/register"))
        .collect();
    assert_eq!(sent, Vec::<String>::new());

    // Entered again: the user's decision; the sign-in starts there.
    let res = app
        .request(
            Method::PATCH,
            &format!("/api/connectors/{id}"),
            Some(json!({"auth": entered()})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let res = app.post(&start, &json!({})).await;
    assert_eq!(res.status(), StatusCode::OK, "after entering it again");
}

/// Whether the hostile server saw a token request (a code exchanged).
fn token_requests(hostile: &Hostile) -> usize {
    ["127.0.0.1", "localhost"]
        .iter()
        .flat_map(|h| hostile.seen_at(h))
        .filter(|r| r.ends_with("/token"))
        .count()
}

/// Starts a sign-in; its `state` and the `redirect_uri` it asked for.
async fn started(app: &TestApp, id: &str) -> (String, String) {
    let res = app
        .post(&format!("/api/connectors/{id}/oauth/start"), &json!({}))
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.expect("JSON");
    let url = reqwest::Url::parse(body["authorization_url"].as_str().expect("URL")).expect("URL");
    let get = |key: &str| {
        url.query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
            .expect(key)
    };
    (get("state"), get("redirect_uri"))
}

/// The browser comes back to `path` with `query`; the Settings URL it
/// lands on.
async fn back_to(app: &TestApp, path: &str, query: &str) -> reqwest::Url {
    let res = app
        .client
        .get(app.url(&format!("{path}?{query}")))
        .send()
        .await
        .expect("callback");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    reqwest::Url::parse(&app.url(res.headers()["location"].to_str().expect("text"))).expect("URL")
}

fn refused(landed: &reqwest::Url) -> bool {
    landed.query_pairs().any(|(k, _)| k == "oauth_error")
}

/// Issue 44, item 5 (OAuth mix-up): each sign-in has its own redirect
/// URI (a client registered dynamically is registered with it), and a
/// code that comes back elsewhere — to the shared callback or another
/// connector's — or without the `iss` its server says it sends, is never
/// exchanged: no token request, the state spent. Seen to fail before:
/// the code without `iss` went to the token endpoint.
#[tokio::test]
async fn a_code_is_exchanged_only_at_its_own_sign_ins_address_and_with_iss() {
    let hostile = Hostile::start().await;
    let app = app_for(&hostile).await;
    let id = add(&app, &hostile, json!({"type": "oauth"})).await;
    // Another connector (the same server by its other name): its id
    // names another sign-in's address.
    let res = app
        .post(
            "/api/connectors",
            &json!({"name": "Other", "url": format!("{}/mcp", hostile.at("localhost")),
                    "auth": {"type": "oauth"}}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let other = res.json::<Value>().await.expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let issuer = hostile.at("127.0.0.1");
    let own = format!("/oauth/callback/{id}");

    let (state, redirect_uri) = started(&app, &id).await;
    assert_eq!(redirect_uri, app.url(&own), "the sign-in's own address");
    let landed = back_to(&app, &own, &format!("code=c1&state={state}")).await;
    assert!(refused(&landed), "no iss: {landed}");
    let replay = back_to(&app, &own, &format!("code=c1&state={state}&iss={issuer}")).await;
    assert!(refused(&replay), "the state was spent: {replay}");

    for elsewhere in [
        "/oauth/callback".to_owned(),
        format!("/oauth/callback/{other}"),
    ] {
        let (state, _) = started(&app, &id).await;
        let landed = back_to(
            &app,
            &elsewhere,
            &format!("code=c2&state={state}&iss={issuer}"),
        )
        .await;
        assert!(refused(&landed), "{elsewhere}: {landed}");
    }
    assert_eq!(token_requests(&hostile), 0, "no code was exchanged");
}

/// Issue 44, item 5: an authorization server that sends no `iss` must
/// keep its sign-in page and token endpoint at its issuer's origin, or
/// nothing tells its answers from another server's.
#[tokio::test]
async fn without_iss_the_endpoints_must_be_at_the_issuers_origin() {
    let hostile = Hostile::start().await;
    let app = app_for(&hostile).await;
    let id = add(&app, &hostile, json!({"type": "oauth"})).await;
    let start = format!("/api/connectors/{id}/oauth/start");
    let (honest, elsewhere) = (hostile.at("127.0.0.1"), hostile.at("localhost"));
    hostile.say(Said {
        authorization_server: honest.clone(),
        authorization_endpoint: format!("{elsewhere}/authorize"),
        registration_endpoint: format!("{honest}/register"),
        no_iss: true,
    });
    let res = app.post(&start, &json!({})).await;
    assert_eq!(res.status(), StatusCode::BAD_GATEWAY);
    let detail = res.json::<Value>().await.expect("JSON")["detail"].clone();
    assert!(
        detail.as_str().is_some_and(|d| d.contains("sends no iss")),
        "{detail}"
    );
    hostile.say(Said {
        authorization_server: honest.clone(),
        authorization_endpoint: format!("{honest}/authorize"),
        registration_endpoint: format!("{honest}/register"),
        no_iss: true,
    });
    let res = app.post(&start, &json!({})).await;
    assert_eq!(res.status(), StatusCode::OK, "all at the issuer's origin");
}
