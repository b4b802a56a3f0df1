//! `countersign connector probe --oauth`, the real binary: a headless
//! sign-in (`--oauth-follow`) at the demo server's own authorization
//! server, a step-up, what a 401 says without `--oauth`, and the bound on
//! step-ups against a server that never has enough.

use super::probe::{probe_command, run_probe, stdout};
use axum::{
    Json, Router,
    extract::{Query, State},
    http::{HeaderMap, StatusCode, header},
    response::IntoResponse,
    routing::{get, post},
};
use countersign_demo_mcp::DemoServer;
use serde_json::{Value, json};
use std::{
    collections::HashMap,
    process::Output,
    sync::{Arc, Mutex},
    time::Duration,
};

/// The demo server in OAuth mode, signing in without a page.
async fn headless_demo() -> DemoServer {
    let demo = DemoServer::start_with_oauth(
        "127.0.0.1:0".parse().expect("addr"),
        Duration::from_secs(600),
    )
    .await
    .expect("the demo server starts");
    demo.oauth().expect("oauth mode").allow_without_asking();
    demo
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn oauth_follow_signs_in_headlessly_then_lists_and_calls() {
    let demo = headless_demo().await;
    let allow = demo.addr().to_string();

    let output = run_probe(&[
        &demo.mcp_url(),
        "--allow-private",
        &allow,
        "--oauth-follow",
        "--call",
        "echo",
        "--args",
        r#"{"text":"hi"}"#,
    ])
    .await;

    let report = stdout(&output);
    assert!(report.contains("- search_notes"), "{report}");
    assert!(
        report.ends_with("call echo: is_error=false\nhi\n"),
        "{report}"
    );
    assert!(
        stderr(&output).contains(&format!(
            "authorization URL: http://{}/authorize?",
            demo.addr()
        )),
        "the authorization URL is printed: {}",
        stderr(&output)
    );
    let oauth = demo.oauth().expect("oauth mode");
    assert_eq!(
        (oauth.counters().registered, oauth.counters().tokens),
        (1, 1)
    );
    assert_eq!(oauth.asked(), ["notes.read"], "the challenge's scope");
}

#[tokio::test]
async fn a_step_up_signs_in_again_with_the_union_and_repeats_the_request() {
    let demo = headless_demo().await;
    let oauth = demo.oauth().expect("oauth mode");
    oauth.require_scope(Some("notes.write"));
    let allow = demo.addr().to_string();

    let output = run_probe(&[&demo.mcp_url(), "--allow-private", &allow, "--oauth-follow"]).await;

    assert!(stdout(&output).contains("- search_notes"));
    assert_eq!(
        oauth.asked(),
        ["notes.read", "notes.read notes.write"],
        "what was asked and granted, then what the 403 named"
    );
    assert_eq!(
        oauth.counters().registered,
        1,
        "the same issuer: the client registered once is presented again"
    );
}

#[tokio::test]
async fn without_oauth_a_401_says_what_the_servers_metadata_names() {
    let demo = headless_demo().await;
    let allow = demo.addr().to_string();

    let output = run_probe(&[&demo.mcp_url(), "--allow-private", &allow]).await;

    assert_eq!(output.status.code(), Some(1));
    let said = stderr(&output);
    for words in [
        "wants an OAuth sign-in (HTTP 401)".to_owned(),
        format!("authorization server is http://{}", demo.addr()),
        "the scopes it asks for: notes.read".to_owned(),
        "client registration: dynamic registration".to_owned(),
        "--oauth".to_owned(),
    ] {
        assert!(said.contains(&words), "{words:?} in {said}");
    }
    assert_eq!(
        demo.oauth().expect("oauth mode").counters().registered,
        0,
        "nothing registered without --oauth"
    );
}

/// A protected resource and its authorization server in one, that never
/// has enough: its 401 asks for `s0`, and each token it issued is answered
/// with 403 `insufficient_scope` for one more scope (`s1`, `s2`, …).
#[derive(Clone, Default)]
struct Greedy {
    base: Arc<Mutex<String>>,
    /// The `scope` of each authorization request.
    asked: Arc<Mutex<Vec<String>>>,
}

impl Greedy {
    fn base(&self) -> String {
        self.base.lock().expect("lock").clone()
    }

    fn challenge(&self, rest: &str) -> String {
        format!(
            "Bearer {rest}resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            self.base()
        )
    }

    fn router(&self) -> Router {
        Router::new()
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                get(|State(g): State<Greedy>| async move {
                    Json(json!({"resource": format!("{}/mcp", g.base()),
                                "authorization_servers": [g.base()]}))
                }),
            )
            .route(
                "/.well-known/oauth-authorization-server",
                get(|State(g): State<Greedy>| async move {
                    let base = g.base();
                    Json(json!({
                        "issuer": base,
                        "authorization_endpoint": format!("{base}/authorize"),
                        "token_endpoint": format!("{base}/token"),
                        "registration_endpoint": format!("{base}/register"),
                        "response_types_supported": ["code"],
                        "code_challenge_methods_supported": ["S256"],
                        "token_endpoint_auth_methods_supported": ["none"],
                    }))
                }),
            )
            .route(
                "/register",
                post(|Json(body): Json<Value>| async move {
                    (
                        StatusCode::CREATED,
                        Json(json!({"client_id": "greedy-client",
                                    "redirect_uris": body["redirect_uris"]})),
                    )
                }),
            )
            .route(
                "/authorize",
                get(
                    |State(g): State<Greedy>, Query(q): Query<HashMap<String, String>>| async move {
                        let mut asked = g.asked.lock().expect("lock");
                        asked.push(q.get("scope").cloned().unwrap_or_default());
                        let mut back = reqwest::Url::parse(&q["redirect_uri"]).expect("URL");
                        back.query_pairs_mut()
                            .append_pair("code", &format!("code-{}", asked.len()))
                            .append_pair("state", &q["state"]);
                        (StatusCode::FOUND, [(header::LOCATION, back.to_string())])
                    },
                ),
            )
            .route(
                "/token",
                post(|body: String| async move {
                    let n = body
                        .split('&')
                        .find_map(|kv| kv.strip_prefix("code=code-"))
                        .unwrap_or("0")
                        .to_owned();
                    Json(json!({"access_token": format!("token-{n}"),
                                "token_type": "Bearer", "expires_in": 3600}))
                }),
            )
            .route(
                "/mcp",
                post(|State(g): State<Greedy>, headers: HeaderMap| async move {
                    let token = headers
                        .get(header::AUTHORIZATION)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.strip_prefix("Bearer token-"))
                        .map(str::to_owned);
                    let (status, challenge) = match token {
                        None => (StatusCode::UNAUTHORIZED, g.challenge("scope=\"s0\", ")),
                        Some(n) => (
                            StatusCode::FORBIDDEN,
                            g.challenge(&format!("error=\"insufficient_scope\", scope=\"s{n}\", ")),
                        ),
                    };
                    (status, [(header::WWW_AUTHENTICATE, challenge)]).into_response()
                }),
            )
            .with_state(self.clone())
    }
}

/// Runs the probe; `None` when it had to be killed after `limit`.
async fn run_probe_within(args: Vec<String>, limit: Duration) -> Option<Output> {
    // On the timeout the output future is dropped, which kills the probe.
    tokio::time::timeout(limit, probe_command(&args).output())
        .await
        .ok()
        .map(|output| output.expect("the binary runs"))
}

#[tokio::test]
async fn step_ups_stop_after_two_rounds_against_a_server_that_never_has_enough() {
    let greedy = Greedy::default();
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let addr = tcp.local_addr().expect("an address");
    *greedy.base.lock().expect("lock") = format!("http://{addr}");
    let router = greedy.router();
    tokio::spawn(async move { axum::serve(tcp, router).await });

    let output = run_probe_within(
        vec![
            format!("http://{addr}/mcp"),
            "--allow-private".into(),
            addr.to_string(),
            "--oauth-follow".into(),
        ],
        Duration::from_secs(30),
    )
    .await
    .expect("the probe stops by itself");

    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("stopped asking"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        *greedy.asked.lock().expect("lock"),
        ["s0", "s0 s1", "s0 s1 s2"],
        "the first sign-in and two step-ups, each with the union"
    );
}
