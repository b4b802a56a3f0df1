//! Delivery (DESIGN §9a): the web app's hashed assets are served from the
//! build's precompressed twins with a year of `immutable` caching,
//! `index.html` is `no-cache` under every client-side route, a missing
//! asset is a 404 (never `index.html` kept for a year under a script's
//! name), JSON answers are compressed when asked for, and an event stream
//! never is. A site laid out as `cargo xtask web` lays it out, in a
//! temporary folder.

use crate::helpers::spawn_app_with;
use reqwest::{StatusCode, header};
use std::io::Read as _;
use std::path::PathBuf;

const WASM: &str = "countersign_web_bg.0123456789abcdef.wasm";

/// `index.html`, `assets/WASM` and their `.br` / `.gz` twins (distinct
/// bytes, so the test sees which one was sent).
fn site() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cs-delivery-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(dir.join("assets")).expect("site folder");
    let write = |path: &str, bytes: &[u8]| std::fs::write(dir.join(path), bytes).expect("write");
    write("index.html", b"<!doctype html><title>Countersign</title>");
    write("index.html.br", b"index as brotli");
    write(&format!("assets/{WASM}"), b"\0asm raw module bytes");
    write(&format!("assets/{WASM}.br"), b"brotli twin");
    write(&format!("assets/{WASM}.gz"), b"gzip twin");
    dir
}

fn header_of(response: &reqwest::Response, name: header::HeaderName) -> &str {
    response
        .headers()
        .get(&name)
        .map_or("", |v| v.to_str().expect("ASCII header"))
}

#[tokio::test]
async fn hashed_assets_come_precompressed_and_immutable_and_pages_are_revalidated() {
    let dir = site();
    let app = spawn_app_with(|config| config.static_dir = dir.clone()).await;
    let get = |path: &str, encoding: Option<&str>| {
        let mut request = app.client.get(app.url(path));
        if let Some(encoding) = encoding {
            request = request.header(header::ACCEPT_ENCODING, encoding);
        }
        request.send()
    };

    // The wasm: its brotli twin when asked for br, the gzip one for gzip
    // alone, the file itself otherwise; always the wasm type (streaming
    // compilation needs it) and kept for a year.
    let wasm = format!("/assets/{WASM}");
    for (encoding, want_encoding, want_body) in [
        (Some("gzip, deflate, br, zstd"), "br", &b"brotli twin"[..]),
        (Some("gzip"), "gzip", b"gzip twin"),
        (None, "", b"\0asm raw module bytes"),
    ] {
        let response = get(&wasm, encoding).await.expect("wasm");
        assert_eq!(response.status(), StatusCode::OK, "{encoding:?}");
        assert_eq!(
            header_of(&response, header::CONTENT_ENCODING),
            want_encoding,
            "{encoding:?}"
        );
        assert_eq!(
            header_of(&response, header::CONTENT_TYPE),
            "application/wasm"
        );
        assert_eq!(
            header_of(&response, header::CACHE_CONTROL),
            "public, max-age=31536000, immutable"
        );
        assert_eq!(header_of(&response, header::VARY), "accept-encoding");
        assert_eq!(
            &response.bytes().await.expect("body")[..],
            want_body,
            "{encoding:?}"
        );
    }

    // A hashed name that is not there (an old build's): 404, not the page,
    // and nothing a browser keeps.
    let gone = get("/assets/app.ffffffffffffffff.js", Some("br"))
        .await
        .expect("gone");
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
    assert_eq!(header_of(&gone, header::CACHE_CONTROL), "no-cache");

    // The page, at its own address and at a client-side route: revalidated
    // on every visit, precompressed too.
    for path in [
        "/",
        "/index.html",
        "/chats/0b6f6c9e-0000-4000-8000-000000000000",
    ] {
        let page = get(path, Some("br")).await.expect("page");
        assert_eq!(page.status(), StatusCode::OK, "{path}");
        assert_eq!(
            header_of(&page, header::CACHE_CONTROL),
            "no-cache",
            "{path}"
        );
        assert_eq!(header_of(&page, header::CONTENT_ENCODING), "br", "{path}");
        assert!(
            header_of(&page, header::CONTENT_TYPE).starts_with("text/html"),
            "{path}"
        );
    }
    let plain = get("/settings", None).await.expect("page");
    assert_eq!(header_of(&plain, header::CONTENT_ENCODING), "");
    assert_eq!(
        plain.text().await.expect("page"),
        "<!doctype html><title>Countersign</title>"
    );
    std::fs::remove_dir_all(&dir).expect("remove the site");
}

#[tokio::test]
async fn json_is_compressed_when_asked_and_an_event_stream_never_is() {
    let app = spawn_app_with(|_| {}).await;
    app.signed_up_user().await;

    // A JSON answer of some size (four chats listed), asked for with br.
    for _ in 0..4 {
        app.create_chat("offline/demo").await;
    }
    let listed = app
        .client
        .get(app.url("/api/chats"))
        .header(header::ACCEPT_ENCODING, "br")
        .send()
        .await
        .expect("available");
    assert_eq!(listed.status(), StatusCode::OK);
    let plain = app.get_json("/api/chats").await;
    assert!(
        plain.to_string().len() > 256,
        "big enough to compress: {plain}"
    );
    assert_eq!(header_of(&listed, header::CONTENT_ENCODING), "br");
    let body = listed.bytes().await.expect("body");
    let mut json = Vec::new();
    brotli::Decompressor::new(&body[..], 4096)
        .read_to_end(&mut json)
        .expect("valid brotli");
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&json).expect("JSON"),
        plain
    );
    // The answers that carry the session's CSRF token are never
    // compressed, however big: a compressed secret beside text an attacker
    // can put in the same answer leaks through its length (BREACH).
    let other = app.at(&app.base);
    let signup = other
        .client
        .post(other.url("/api/auth/signup"))
        .header(header::ACCEPT_ENCODING, "br")
        .json(&serde_json::json!({
            "email": crate::helpers::email(),
            "password": crate::helpers::GOOD_PASSWORD,
            // The longest name allowed (100 characters).
            "display_name": "Long name ".repeat(10).trim_end(),
        }))
        .send()
        .await
        .expect("signup");
    assert_eq!(signup.status(), StatusCode::CREATED);
    assert_eq!(
        header_of(&signup, header::CONTENT_ENCODING),
        "",
        "sign-up answer"
    );
    assert!(
        signup.bytes().await.expect("body").len() > 256,
        "big enough to compress"
    );
    let me = other
        .client
        .get(other.url("/api/auth/me"))
        .header(header::ACCEPT_ENCODING, "br")
        .send()
        .await
        .expect("me");
    assert_eq!(me.status(), StatusCode::OK);
    assert_eq!(header_of(&me, header::CONTENT_ENCODING), "", "/api/auth/me");
    let me = me.bytes().await.expect("body");
    assert!(me.len() > 256, "big enough to compress");
    assert!(String::from_utf8_lossy(&me).contains("csrf_token"));

    // A client that does not ask gets plain JSON.
    let unasked = app.get("/api/chats").await;
    assert_eq!(header_of(&unasked, header::CONTENT_ENCODING), "");

    // The chat's event stream, asked for with every encoding: sent as is,
    // event by event.
    let chat = app.create_chat("offline/demo").await;
    let stream = app
        .client
        .get(app.url(&format!("/api/chats/{chat}/stream")))
        .header(header::ACCEPT_ENCODING, "gzip, deflate, br, zstd")
        .send()
        .await
        .expect("stream");
    assert_eq!(stream.status(), StatusCode::OK);
    assert!(header_of(&stream, header::CONTENT_TYPE).starts_with("text/event-stream"));
    assert_eq!(header_of(&stream, header::CONTENT_ENCODING), "");
}
