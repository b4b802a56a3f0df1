//! The `Host` check, HSTS, and whose address `X-Forwarded-For` names
//! (DESIGN §4 "Behind a proxy").

use crate::helpers::{GOOD_PASSWORD, TestApp, spawn_app, spawn_app_with};
use reqwest::{StatusCode, header};
use serde_json::{Value, json};

async fn get_with_host(app: &TestApp, path: &str, host: &str) -> reqwest::Response {
    app.client
        .get(app.url(path))
        .header(header::HOST, host)
        .send()
        .await
        .expect("request")
}

#[tokio::test]
async fn with_a_public_url_a_request_for_another_host_is_403() {
    let app = spawn_app_with(|c| c.public_url = Some("https://cs.example.org".into())).await;

    for (host, why) in [
        ("evil.example", "a rebound DNS name"),
        ("127.0.0.1", "the bare address"),
        ("cs.example.org.evil.example", "a suffix trick"),
        ("cs.example.org:8443", "another port"),
    ] {
        let res = get_with_host(&app, "/api/auth/me", host).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{why}: {host}");
        let body: Value = res.json().await.expect("JSON");
        assert!(
            body["detail"].as_str().is_some_and(|d| d.contains("host")),
            "{why}: {body}"
        );
        let res = get_with_host(&app, "/", host).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{why}: the web app");
    }
    let res = app
        .client
        .post(app.url("/api/auth/login"))
        .header(header::HOST, "evil.example")
        .json(&json!({"email": "a@example.org", "password": GOOD_PASSWORD}))
        .send()
        .await
        .expect("request");
    assert_eq!(
        res.status(),
        StatusCode::FORBIDDEN,
        "sign-in on a foreign host"
    );

    for host in ["cs.example.org", "CS.Example.org", "cs.example.org:443"] {
        let res = get_with_host(&app, "/api/auth/me", host).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{host} is ours");
    }
    let res = get_with_host(&app, "/healthz", "10.0.0.7:3000").await;
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "a load balancer's probe by address still works"
    );
}

#[tokio::test]
async fn without_a_public_url_any_host_is_served() {
    let app = spawn_app().await;
    let res = get_with_host(&app, "/api/auth/me", "whatever.example").await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert!(
        res.headers()
            .get(header::STRICT_TRANSPORT_SECURITY)
            .is_none()
    );
}

#[tokio::test]
async fn an_https_public_url_adds_hsts_and_an_http_one_does_not() {
    let app = spawn_app_with(|c| c.public_url = Some("https://cs.example.org".into())).await;
    let res = get_with_host(&app, "/api/auth/me", "cs.example.org").await;
    assert_eq!(
        res.headers()
            .get(header::STRICT_TRANSPORT_SECURITY)
            .map(|v| v.to_str().expect("ascii")),
        Some("max-age=31536000; includeSubDomains")
    );

    let app = spawn_app_with(|c| c.public_url = Some("http://cs.example.org".into())).await;
    let res = get_with_host(&app, "/api/auth/me", "cs.example.org").await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert!(
        res.headers()
            .get(header::STRICT_TRANSPORT_SECURITY)
            .is_none()
    );
}

async fn wrong_login_from(app: &TestApp, n: usize, forwarded_for: &str) -> StatusCode {
    app.client
        .post(app.url("/api/auth/login"))
        .header("x-forwarded-for", forwarded_for)
        .json(&json!({"email": format!("guess-{n}@example.org"), "password": "wrong wrong wrong"}))
        .send()
        .await
        .expect("request")
        .status()
}

#[tokio::test]
async fn x_forwarded_for_from_an_untrusted_peer_is_ignored() {
    let app = spawn_app_with(|c| c.login_max_failures_per_ip = 3).await;
    for n in 0..3 {
        assert_eq!(
            wrong_login_from(&app, n, "203.0.113.1").await,
            StatusCode::UNAUTHORIZED
        );
    }
    assert_eq!(
        wrong_login_from(&app, 3, "203.0.113.2").await,
        StatusCode::TOO_MANY_REQUESTS,
        "a made-up X-Forwarded-For does not buy a new bucket"
    );
}

#[tokio::test]
async fn x_forwarded_for_from_a_trusted_proxy_names_the_client() {
    let app = spawn_app_with(|c| {
        c.login_max_failures_per_ip = 3;
        c.trusted_proxies = "127.0.0.1/32, 10.0.0.0/8".parse().expect("CIDRs");
    })
    .await;
    for n in 0..3 {
        assert_eq!(
            wrong_login_from(&app, n, "203.0.113.1").await,
            StatusCode::UNAUTHORIZED
        );
    }
    assert_eq!(
        wrong_login_from(&app, 3, "203.0.113.1").await,
        StatusCode::TOO_MANY_REQUESTS,
        "the same client behind the proxy is throttled"
    );
    assert_eq!(
        wrong_login_from(&app, 4, "203.0.113.2").await,
        StatusCode::UNAUTHORIZED,
        "another client behind the same proxy has its own bucket"
    );
    assert_eq!(
        wrong_login_from(&app, 5, "198.51.100.9, 203.0.113.1, 10.1.2.3").await,
        StatusCode::TOO_MANY_REQUESTS,
        "the right-most address that is not a proxy counts, not what the client prepended"
    );

    // Sessions record the client's address too.
    let res = app
        .client
        .post(app.url("/api/auth/signup"))
        .header("x-forwarded-for", "203.0.113.77")
        .json(&json!({"email": crate::helpers::email(), "password": GOOD_PASSWORD}))
        .send()
        .await
        .expect("signup");
    assert_eq!(res.status(), StatusCode::CREATED);
    let body: Value = res.json().await.expect("JSON");
    *app.csrf.lock().expect("lock") = body["csrf_token"].as_str().map(str::to_owned);
    let sessions = app.get_json("/api/auth/sessions").await;
    assert_eq!(sessions[0]["ip"], "203.0.113.77", "{sessions}");
}
