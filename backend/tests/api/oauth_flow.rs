//! Connector OAuth through the API, end to end on loopback: the demo MCP
//! server in OAuth mode is the protected resource and its own
//! authorization server (metadata, dynamic registration, a sign-in page,
//! PKCE S256, `iss`, rotating refresh tokens). The test plays the browser:
//! start → the authorization page → "Allow" → the callback.

use crate::helpers::{TestApp, new_client, spawn_app_with};
use countersign::config::Secret;
use countersign_demo_mcp::DemoServer;
use reqwest::{StatusCode, Url};
use serde_json::{Value, json};
use std::time::Duration;

const KEY_HEX: &str = "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

/// Access tokens live this long, so the test can wait for a refresh.
const TOKEN_TTL: Duration = Duration::from_secs(2);

async fn demo() -> DemoServer {
    DemoServer::start_with_oauth("127.0.0.1:0".parse().expect("addr"), TOKEN_TTL)
        .await
        .expect("the demo server")
}

/// An app that may reach the demo server (also as `loopback.test`, which
/// the test resolver answers with 127.0.0.1).
async fn app_for(demo: &DemoServer) -> TestApp {
    let port = demo.addr().port();
    let allow = format!("127.0.0.1:{port},loopback.test:{port}")
        .parse()
        .expect("allow list");
    spawn_app_with(|c| {
        c.secret_key = Some(Secret::new(KEY_HEX));
        c.allow_private_connectors = allow;
    })
    .await
}

/// The value of `key` in `url`'s query.
pub(crate) fn query(url: &Url, key: &str) -> Option<String> {
    url.query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// Plays the browser at the authorization server: opens the page, presses
/// "Allow"; returns where it sends the browser back.
pub(crate) async fn allow_at_the_authorization_server(authorization_url: &str) -> Url {
    let browser = new_client();
    let page = browser
        .get(authorization_url)
        .send()
        .await
        .expect("the page");
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.text().await.expect("HTML").contains(">Allow<"));
    let url = Url::parse(authorization_url).expect("a URL");
    let allowed = browser
        .post(format!("{}/authorize", url.origin().ascii_serialization()))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(url.query().unwrap_or_default().to_owned())
        .send()
        .await
        .expect("allow");
    assert!(allowed.status().is_redirection(), "{}", allowed.status());
    Url::parse(allowed.headers()["location"].to_str().expect("text")).expect("a URL")
}

/// Follows the callback as the signed-in browser; returns the Settings URL
/// it lands on.
pub(crate) async fn callback(app: &TestApp, back: &Url) -> Url {
    let res = app
        .client
        .get(back.as_str())
        .send()
        .await
        .expect("callback");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    Url::parse(&app.url(res.headers()["location"].to_str().expect("text"))).expect("a URL")
}

async fn connector(app: &TestApp, id: &str) -> Value {
    app.get_json(&format!("/api/connectors/{id}")).await
}

/// A signed-up user with an OAuth connector to a demo server in OAuth
/// mode, who started a sign-in and pressed "Allow"; `back` is where the
/// authorization server sends the browser.
async fn allowed() -> (DemoServer, TestApp, String, Url) {
    let demo = demo().await;
    let app = app_for(&demo).await;
    app.signed_up_user().await;
    let res = app
        .post(
            "/api/connectors",
            &json!({"name": "Demo notes", "url": demo.mcp_url(), "auth": {"type": "oauth"}}),
        )
        .await;
    let id = res.json::<Value>().await.expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let started: Value = app
        .post(&format!("/api/connectors/{id}/oauth/start"), &json!({}))
        .await
        .json()
        .await
        .expect("JSON");
    let back =
        allow_at_the_authorization_server(started["authorization_url"].as_str().expect("URL"))
            .await;
    (demo, app, id, back)
}

/// [`allowed`], and the callback followed: the connector is signed in.
async fn signed_in() -> (DemoServer, TestApp, String) {
    let (demo, app, id, back) = allowed().await;
    callback(&app, &back).await;
    assert_eq!(connector(&app, &id).await["oauth_status"], "connected");
    (demo, app, id)
}

#[tokio::test]
async fn a_user_signs_in_through_the_authorization_server_and_the_token_is_refreshed() {
    let demo = demo().await;
    let app = app_for(&demo).await;
    app.signed_up_user().await;
    let res = app
        .post(
            "/api/connectors",
            &json!({"name": "Demo notes", "url": demo.mcp_url(), "auth": {"type": "oauth"}}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let created: Value = res.json().await.expect("JSON");
    let id = created["id"].as_str().expect("id").to_owned();
    assert_eq!(created["auth_type"], "oauth");
    assert_eq!(created["oauth_status"], "needs_sign_in");

    // Before signing in, nothing connects and no token is sent.
    let res = app
        .post(&format!("/api/connectors/{id}/test"), &json!({}))
        .await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    assert!(demo.oauth().expect("oauth mode").seen().is_empty());

    let res = app
        .post(&format!("/api/connectors/{id}/oauth/start"), &json!({}))
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let started: Value = res.json().await.expect("JSON");
    let authorization_url = started["authorization_url"].as_str().expect("a URL");
    let url = Url::parse(authorization_url).expect("a URL");
    assert_eq!(url.path(), "/authorize");
    assert_eq!(
        query(&url, "code_challenge_method").as_deref(),
        Some("S256")
    );
    assert_eq!(query(&url, "resource"), Some(demo.mcp_url()), "RFC 8707");
    assert_eq!(
        query(&url, "redirect_uri"),
        Some(app.url(&format!("/oauth/callback/{id}"))),
        "back to this server, to this sign-in's own address (registered dynamically)"
    );
    assert_eq!(
        demo.oauth().expect("oauth").counters().registered,
        1,
        "registered itself"
    );

    let back = allow_at_the_authorization_server(authorization_url).await;
    assert_eq!(query(&back, "iss"), Some(demo.base_url()), "RFC 9207");
    let landed = callback(&app, &back).await;
    assert_eq!(landed.path(), "/settings");
    assert_eq!(
        query(&landed, "oauth").as_deref(),
        Some("connected"),
        "{landed}"
    );
    assert_eq!(query(&landed, "connector"), Some(id.clone()));

    let signed_in = connector(&app, &id).await;
    assert_eq!(signed_in["oauth_status"], "connected");
    assert_eq!(signed_in["oauth_issuer"], demo.base_url());

    let res = app
        .post(&format!("/api/connectors/{id}/test"), &json!({}))
        .await;
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "{}",
        res.text().await.unwrap_or_default()
    );
    let seen = demo.oauth().expect("oauth").seen();
    assert!(
        !seen.is_empty() && seen.iter().all(|h| h.starts_with("Bearer ")),
        "{seen:?}"
    );

    // The same callback again: the state was spent.
    let replayed = callback(&app, &back).await;
    assert!(query(&replayed, "oauth_error").is_some(), "{replayed}");

    // Past the token's lifetime, a connect refreshes it first.
    tokio::time::sleep(TOKEN_TTL + Duration::from_millis(500)).await;
    let res = app
        .post(&format!("/api/connectors/{id}/refresh"), &json!({}))
        .await;
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "{}",
        res.text().await.unwrap_or_default()
    );
    assert_eq!(demo.oauth().expect("oauth").counters().refreshes, 1);
}

#[tokio::test]
async fn a_token_is_never_sent_to_another_host_even_the_same_server_by_another_name() {
    let (demo, app, id) = signed_in().await;

    // Change nothing but the host: loopback.test is the very same server.
    let moved = format!("http://loopback.test:{}/mcp", demo.addr().port());
    let res = app
        .request(
            reqwest::Method::PATCH,
            &format!("/api/connectors/{id}"),
            Some(json!({"url": moved, "auth": {"type": "oauth"}})),
        )
        .await;
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "{}",
        res.text().await.unwrap_or_default()
    );
    assert_eq!(connector(&app, &id).await["oauth_status"], "needs_sign_in");
    let before = demo.oauth().expect("oauth").seen().len();
    let res = app
        .post(&format!("/api/connectors/{id}/test"), &json!({}))
        .await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    assert_eq!(
        demo.oauth().expect("oauth").seen().len(),
        before,
        "no token reached the new host"
    );
}

#[tokio::test]
async fn a_callback_for_another_users_sign_in_is_refused_and_spends_it() {
    let (_demo, app, id, back) = allowed().await;

    // Someone else's signed-in browser opens the link.
    let other = app.at(&app.base);
    other.signed_up_user().await;
    let landed = callback(&other, &back).await;
    assert!(query(&landed, "oauth_error").is_some(), "{landed}");
    // And the owner cannot use it afterwards either.
    let landed = callback(&app, &back).await;
    assert!(query(&landed, "oauth_error").is_some(), "{landed}");
    assert_eq!(connector(&app, &id).await["oauth_status"], "needs_sign_in");
}

#[tokio::test]
async fn disconnecting_revokes_the_token_at_the_authorization_server_and_forgets_it() {
    let (demo, app, id) = signed_in().await;

    let res = app
        .request(
            reqwest::Method::DELETE,
            &format!("/api/connectors/{id}/oauth"),
            None,
        )
        .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert_eq!(demo.oauth().expect("oauth").counters().revoked, 1);
    assert_eq!(connector(&app, &id).await["oauth_status"], "needs_sign_in");
    let res = app
        .post(&format!("/api/connectors/{id}/test"), &json!({}))
        .await;
    assert_eq!(res.status(), StatusCode::CONFLICT, "sign in again");
}

#[tokio::test]
async fn the_client_metadata_document_is_served_only_with_an_https_public_url() {
    let app = spawn_app_with(|c| c.public_url = Some("https://countersign.example".into())).await;
    let res = app
        .client
        .get(app.url("/oauth/client-metadata.json"))
        .header("host", "countersign.example")
        .send()
        .await
        .expect("GET");
    assert_eq!(res.status(), StatusCode::OK);
    let doc: Value = res.json().await.expect("JSON");
    assert_eq!(
        doc["client_id"], "https://countersign.example/oauth/client-metadata.json",
        "a CIMD client id is the document's own URL"
    );
    assert_eq!(
        doc["redirect_uris"],
        json!(["https://countersign.example/oauth/callback"])
    );
    assert_eq!(doc["application_type"], "web");

    let plain = spawn_app_with(|_| {}).await;
    let res = plain
        .client
        .get(plain.url("/oauth/client-metadata.json"))
        .send()
        .await
        .expect("GET");
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    // As documented: every error is `{"detail": "…"}` (schemathesis found an
    // empty body here, faults::fuzz).
    let body: Value = res.json().await.expect("a JSON error body");
    assert!(body["detail"].is_string(), "{body}");
}

#[tokio::test]
async fn a_token_the_server_refuses_asks_for_a_new_sign_in_instead_of_retrying() {
    let (demo, app, id) = signed_in().await;
    demo.oauth().expect("oauth").revoke_all();
    let res = app
        .post(&format!("/api/connectors/{id}/test"), &json!({}))
        .await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    let body: Value = res.json().await.expect("JSON");
    assert_eq!(body["detail"], "Sign in to this connector again.");
    assert_eq!(connector(&app, &id).await["oauth_status"], "needs_sign_in");
    let refused = demo.oauth().expect("oauth").counters().refused;
    let res = app
        .post(&format!("/api/connectors/{id}/test"), &json!({}))
        .await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    assert_eq!(
        demo.oauth().expect("oauth").counters().refused,
        refused,
        "the refused token is not sent again"
    );
}

/// A demo server whose tokens outlive the test (no refresh in between).
pub(crate) async fn long_lived_demo() -> DemoServer {
    DemoServer::start_with_oauth(
        "127.0.0.1:0".parse().expect("addr"),
        Duration::from_secs(600),
    )
    .await
    .expect("the demo server")
}

/// Adds the demo as an OAuth connector of the signed-in user; its id.
pub(crate) async fn add_oauth_connector(app: &TestApp, demo: &DemoServer) -> String {
    let res = app
        .post(
            "/api/connectors",
            &json!({"name": "Demo notes", "url": demo.mcp_url(), "auth": {"type": "oauth"}}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    res.json::<Value>().await.expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

/// Starts a sign-in, allows it, follows the callback; returns the
/// authorization URL it went through.
pub(crate) async fn sign_in(app: &TestApp, id: &str) -> Url {
    let res = app
        .post(&format!("/api/connectors/{id}/oauth/start"), &json!({}))
        .await;
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "{}",
        res.text().await.unwrap_or_default()
    );
    let started: Value = res.json().await.expect("JSON");
    let authorization_url = started["authorization_url"].as_str().expect("URL");
    let back = allow_at_the_authorization_server(authorization_url).await;
    let landed = callback(app, &back).await;
    assert_eq!(
        query(&landed, "oauth").as_deref(),
        Some("connected"),
        "{landed}"
    );
    Url::parse(authorization_url).expect("a URL")
}

/// `POST /api/connectors/{id}/test`: the status and the detail.
pub(crate) async fn test_connector(app: &TestApp, id: &str) -> (StatusCode, String) {
    let res = app
        .post(&format!("/api/connectors/{id}/test"), &json!({}))
        .await;
    let status = res.status();
    let body: Value = res.json().await.unwrap_or_default();
    (
        status,
        body["detail"].as_str().unwrap_or_default().to_owned(),
    )
}

#[tokio::test]
async fn a_step_up_asks_for_the_union_at_the_next_sign_in_and_stops_after_two() {
    let demo = long_lived_demo().await;
    let oauth = demo.oauth().expect("oauth mode");
    let app = app_for(&demo).await;
    app.signed_up_user().await;
    let id = add_oauth_connector(&app, &demo).await;
    let first = sign_in(&app, &id).await;
    assert_eq!(query(&first, "scope").as_deref(), Some("notes.read"));
    assert_eq!(test_connector(&app, &id).await.0, StatusCode::OK);

    for (round, (needed, union)) in [
        ("notes.write", "notes.read notes.write"),
        ("notes.admin", "notes.read notes.write notes.admin"),
    ]
    .into_iter()
    .enumerate()
    {
        oauth.require_scope(Some(needed));
        let (status, detail) = test_connector(&app, &id).await;
        assert_eq!(status, StatusCode::CONFLICT, "round {round}: {detail}");
        assert!(
            detail.contains(&format!("more access ({needed})")),
            "round {round}: {detail}"
        );
        let again = sign_in(&app, &id).await;
        assert_eq!(
            query(&again, "scope").as_deref(),
            Some(union),
            "round {round}: what was asked and granted, then what the challenge names"
        );
        assert_eq!(
            test_connector(&app, &id).await.0,
            StatusCode::OK,
            "round {round}"
        );
    }

    // A third step-up is not made: the next sign-in asks for nothing new.
    oauth.require_scope(Some("notes.audit"));
    let (status, detail) = test_connector(&app, &id).await;
    assert_eq!(status, StatusCode::CONFLICT, "{detail}");
    assert!(detail.contains("stopped asking"), "{detail}");
    let last = sign_in(&app, &id).await;
    assert_eq!(
        query(&last, "scope").as_deref(),
        Some("notes.read notes.write notes.admin")
    );
}

#[tokio::test]
async fn a_confidential_client_from_dynamic_registration_signs_in_with_its_secret() {
    let demo = long_lived_demo().await;
    demo.oauth().expect("oauth mode").confidential_clients();
    let app = app_for(&demo).await;
    app.signed_up_user().await;
    let id = add_oauth_connector(&app, &demo).await;

    sign_in(&app, &id).await;

    assert_eq!(connector(&app, &id).await["oauth_status"], "connected");
    assert_eq!(test_connector(&app, &id).await.0, StatusCode::OK);
}

#[tokio::test]
async fn a_call_whose_token_is_refused_offers_the_sign_in_in_the_chat() {
    let (demo, app, id) = signed_in().await;
    let res = app
        .post(&format!("/api/connectors/{id}/refresh"), &json!({}))
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let keep = crate::helpers::seen(&app, &id, Some(&["search_notes"])).await;
    let res = app
        .request(
            reqwest::Method::PUT,
            &format!("/api/connectors/{id}/tools/review"),
            Some(json!({"keep": keep, "decline": []})),
        )
        .await;
    assert!(res.status().is_success(), "review: {}", res.status());
    let slug = connector(&app, &id).await["slug"]
        .as_str()
        .expect("slug")
        .to_owned();
    demo.oauth().expect("oauth").revoke_all();

    let chat = app.create_chat("offline/demo").await;
    let mut stream = app.stream(&chat, None).await;
    app.send(
        &chat,
        &format!("use {slug}__search_notes with {{\"query\": \"lease\"}}"),
    )
    .await;
    let card = stream.until("mcp_confirmation_required").await;
    let card = card.last().expect("card").1.clone();
    assert_eq!(
        crate::helpers::decide(&app, &card, "approve")
            .await
            .status(),
        StatusCode::OK
    );
    let events = stream.until("turn_finished").await;
    let ran = events
        .iter()
        .find(|(_, e)| e["type"] == "mcp_tool_call")
        .expect("the call's outcome")
        .1
        .clone();
    assert_eq!(ran["status"], "error", "{ran}");
    assert_eq!(ran["error"], "Sign in to this connector again.", "{ran}");
    assert_eq!(ran["sign_in_connector_id"], id.as_str(), "{ran}");
    assert_eq!(connector(&app, &id).await["oauth_status"], "needs_sign_in");
    assert_eq!(demo.calls().count("search_notes"), 0);
}

/// Which account a connector acts as is a credential (issue 44, item 4):
/// a stolen session without the second factor must not start a sign-in
/// (which could move the connector onto the attacker's account, so later
/// approved writes land there while the card looks the same), finish one,
/// or sign out. Seen to fail without the step-up guard: the start answered
/// 200 with an authorization URL.
#[tokio::test]
async fn signing_in_to_a_connector_or_out_of_it_needs_a_recent_step_up_and_is_logged() {
    let demo = long_lived_demo().await;
    let app = app_for(&demo).await;
    app.signed_up_user().await;
    let id = add_oauth_connector(&app, &demo).await;
    let (mut authenticator, _) = crate::mfa::enrolled(&app).await;
    let mut db = app.superuser().await;
    let lapse = "update sessions set mfa_verified_at = now() - interval '11 minutes'";
    sqlx::query(lapse).execute(&mut db).await.expect("lapse");

    let start = format!("/api/connectors/{id}/oauth/start");
    let res = app.post(&start, &json!({})).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        res.json::<Value>().await.expect("JSON"),
        json!({"detail": "mfa_required"})
    );

    // Stepped up, the sign-in starts; lapsed before the callback, its code
    // is refused and the state spent.
    let step_up = |code: String| json!({"code": code});
    let res = app
        .post("/api/auth/mfa/step-up", &step_up(authenticator.next()))
        .await;
    assert!(res.status().is_success(), "step-up: {}", res.status());
    let started: Value = app
        .post(&start, &json!({}))
        .await
        .json()
        .await
        .expect("JSON");
    let back =
        allow_at_the_authorization_server(started["authorization_url"].as_str().expect("URL"))
            .await;
    sqlx::query(lapse).execute(&mut db).await.expect("lapse");
    let landed = callback(&app, &back).await;
    assert!(
        query(&landed, "oauth_error").is_some_and(|e| e.contains("second factor")),
        "{landed}"
    );
    assert_eq!(connector(&app, &id).await["oauth_status"], "needs_sign_in");
    let res = app
        .post("/api/auth/mfa/step-up", &step_up(authenticator.next()))
        .await;
    assert!(res.status().is_success(), "step-up: {}", res.status());
    let replay = callback(&app, &back).await;
    assert!(query(&replay, "oauth_error").is_some(), "{replay}");
    assert_eq!(connector(&app, &id).await["oauth_status"], "needs_sign_in");

    // With a fresh step-up it completes, and the activity log says so.
    sign_in(&app, &id).await;
    assert_eq!(connector(&app, &id).await["oauth_status"], "connected");
    sign_in(&app, &id).await;

    sqlx::query(lapse).execute(&mut db).await.expect("lapse");
    let res = app
        .request(
            reqwest::Method::DELETE,
            &format!("/api/connectors/{id}/oauth"),
            None,
        )
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN, "sign-out");
    assert_eq!(connector(&app, &id).await["oauth_status"], "connected");
    let res = app
        .post("/api/auth/mfa/step-up", &step_up(authenticator.next()))
        .await;
    assert!(res.status().is_success(), "step-up: {}", res.status());
    let res = app
        .request(
            reqwest::Method::DELETE,
            &format!("/api/connectors/{id}/oauth"),
            None,
        )
        .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);

    let log = app.get_array("/api/activity").await;
    let changes: Vec<(String, String)> = log
        .iter()
        .filter(|e| e["kind"] == "connector_account_changed")
        .map(|e| {
            assert_eq!(e["connector_id"], id.as_str(), "{e}");
            assert_eq!(e["connector_name"], "Demo notes", "{e}");
            let change = &e["changes"][0];
            assert_eq!(change["setting"], "oauth_account");
            (
                change["before"].as_str().expect("before").to_owned(),
                change["after"].as_str().expect("after").to_owned(),
            )
        })
        .collect();
    assert_eq!(changes.len(), 3, "{log:?}");
    let mut befores: Vec<&str> = changes.iter().map(|(b, _)| b.as_str()).collect();
    befores.sort_unstable();
    assert_eq!(
        befores,
        ["signed in", "signed in", "signed out"],
        "{changes:?}"
    );
    assert!(
        changes
            .iter()
            .filter(|(_, a)| a.starts_with("signed in at "))
            .count()
            == 2,
        "{changes:?}"
    );
    assert!(
        changes.iter().any(|(_, a)| a == "signed out"),
        "{changes:?}"
    );
}
