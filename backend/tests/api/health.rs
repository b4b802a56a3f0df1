//! Probes, security headers, the static web app and JSON 404s.

use crate::helpers::spawn_app;
use countersign::{AppState, Config, events::EventHub};
use reqwest::{StatusCode, header};
use serde_json::Value;
use tower::ServiceExt as _;

#[tokio::test]
async fn healthz_and_readyz_answer_when_the_database_is_up() {
    let app = spawn_app().await;
    assert_eq!(app.get("/healthz").await.status(), StatusCode::OK);
    let res = app.get("/readyz").await;
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.expect("JSON");
    assert_eq!(body["status"], "ready");
}

#[tokio::test]
async fn readyz_is_503_when_the_database_is_unreachable() {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .acquire_timeout(std::time::Duration::from_millis(500))
        .connect_lazy("postgres://nobody@127.0.0.1:1/nothing")
        .expect("lazy pool");
    let state = AppState::with_hub(
        pool,
        Config::with_database_url("postgres://nobody@127.0.0.1:1/nothing"),
        EventHub::local(),
    )
    .expect("state");
    let request = axum::http::Request::get("/readyz")
        .body(axum::body::Body::empty())
        .expect("request");
    let res = countersign::router(state)
        .oneshot(request)
        .await
        .expect("response");
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body = axum::body::to_bytes(res.into_body(), 4096)
        .await
        .expect("body");
    let body: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(body["detail"], "The database is not reachable.");
}

#[tokio::test]
async fn every_response_carries_the_security_headers() {
    let app = spawn_app().await;
    for path in ["/", "/signin", "/api/auth/me", "/healthz"] {
        let res = app.get(path).await;
        let h = res.headers();
        let csp = h[header::CONTENT_SECURITY_POLICY].to_str().expect("ascii");
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert!(
            csp.contains("script-src 'self' 'wasm-unsafe-eval'"),
            "{path}: {csp}"
        );
        assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
        assert_eq!(h[header::X_CONTENT_TYPE_OPTIONS], "nosniff", "{path}");
        assert_eq!(h[header::REFERRER_POLICY], "no-referrer", "{path}");
        assert_eq!(h[header::X_FRAME_OPTIONS], "DENY", "{path}");
    }
    let api = app.get("/api/auth/me").await;
    assert_eq!(api.headers()[header::CACHE_CONTROL], "no-store");
}

#[tokio::test]
async fn client_routes_fall_back_to_index_html_and_unknown_api_paths_are_json_404() {
    let app = spawn_app().await;
    let res = app.get("/settings/connectors").await;
    assert_eq!(res.status(), StatusCode::OK);
    let html = res.text().await.expect("text");
    assert!(html.contains("/app.js"), "index.html is served: {html}");
    assert!(!html.contains("<script>"), "no inline script under the CSP");

    let res = app.get("/api/no/such/thing").await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let body: Value = res.json().await.expect("JSON");
    assert_eq!(body["detail"], "No such API endpoint.");
}

/// The OpenAPI document is served, and `docs/openapi.json` is exactly it:
/// a change to a handler's annotation or a wire type without the copy
/// fails here (DESIGN §8).
#[tokio::test]
async fn the_served_openapi_document_is_the_committed_copy() {
    let app = crate::helpers::spawn_app().await;
    let res = app.get("/api/openapi.json").await;
    assert_eq!(res.status(), reqwest::StatusCode::OK);
    assert_eq!(
        res.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/json")
    );
    let served = res.text().await.expect("body");
    let doc: serde_json::Value = serde_json::from_str(&served).expect("JSON");
    assert_eq!(doc["openapi"], "3.1.0");
    let copy_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json");
    let copy = std::fs::read_to_string(copy_path).unwrap_or_default();
    assert!(
        served.trim_end() == copy.trim_end(),
        "docs/openapi.json is not what /api/openapi.json serves: run `cargo xtask openapi` and \
         commit it"
    );
}

/// The served document is valid OpenAPI 3.1, by a validator no one here
/// wrote (PyPI `openapi-spec-validator`, installed by `cargo xtask test`).
#[tokio::test]
async fn the_openapi_document_passes_a_real_validator() {
    use std::io::Write as _;
    let app = crate::helpers::spawn_app().await;
    let served = app
        .get("/api/openapi.json")
        .await
        .text()
        .await
        .expect("body");
    let mut child = std::process::Command::new("python3")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env(
            "PYTHONPATH",
            crate::py_oauth::interop_dir().join("py-openapi"),
        )
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args([
            "-c",
            "import json, sys\n\
             from openapi_spec_validator import validate\n\
             doc = json.load(sys.stdin)\n\
             validate(doc)\n\
             print(doc['openapi'])",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(served.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("validator ends");
    assert!(
        out.status.success(),
        "openapi-spec-validator refused the document: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "3.1.0");
}
