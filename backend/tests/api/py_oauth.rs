//! Connector OAuth against servers no one here wrote (issue 11 item 5): an
//! MCP server on the official Python SDK (PyPI `mcp`), whose own auth
//! support guards `/mcp`, behind an OAuth 2.1 authorization server written
//! for this test (`tests/interop/py_oauth_server.py`, one process on two
//! loopback ports). Everything goes through the API as the web app would:
//! add the connector, start the sign-in, play the browser (the
//! authorization server approves at once and redirects), the callback,
//! Refresh, the review, then chat turns whose calls are approved by hand.
//! The authorization server counts token requests by grant type, and the
//! Python server records who each call's token speaks for and which grant
//! issued it, so the test sees a refresh happen and the call after it run
//! on the new token.
//!
//! The SDK is installed by `cargo xtask test` (xtask/src/interop.rs) into
//! the folder named by `COUNTERSIGN_INTEROP_DIR`, as for `tests/interop`;
//! this test lives here because the app harness does.

use crate::helpers::{TestApp, decide, event_of, new_client, seen, spawn_app_with, text_of};
use crate::oauth_flow::{callback, query};
use countersign::config::Secret;
use reqwest::{StatusCode, Url};
use serde_json::{Value, json};
use std::{
    io::BufRead as _,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

const KEY_HEX: &str = "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

/// How long the authorization server's access tokens live. rmcp refreshes
/// a token once less than half of it is left, so a call made within 2 s
/// of the last token request uses that token, and one made after
/// `TOKEN_TTL` has passed cannot (the Python SDK refuses expired tokens
/// itself): it needs a refresh.
const TOKEN_TTL: Duration = Duration::from_secs(4);

/// The user the test's authorization server signs everyone in as.
const SUBJECT: &str = "interop-user";

pub(crate) fn interop_dir() -> PathBuf {
    let dir = std::env::var_os("COUNTERSIGN_INTEROP_DIR").unwrap_or_else(|| {
        panic!(
            "COUNTERSIGN_INTEROP_DIR is not set. Run the tests with `cargo xtask test`, which \
             installs the Python MCP SDK into target/interop, or point it at such a folder."
        )
    });
    PathBuf::from(dir)
}

/// `py_oauth_server.py` running: the authorization server at `issuer`, the
/// MCP server at `mcp_url`. Killed (and reaped) when dropped.
#[derive(Debug)]
struct PythonOAuth {
    child: Child,
    issuer: String,
    mcp_url: String,
}

impl PythonOAuth {
    /// Starts the script and waits for the line it prints once both
    /// servers listen (bounded: importing the SDK takes seconds on a busy
    /// machine).
    async fn start() -> Self {
        let mut child = Command::new("python3")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("PYTHONPATH", interop_dir().join("py"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/interop/py_oauth_server.py"
            ))
            .arg(TOKEN_TTL.as_secs().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start py_oauth_server.py: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        // Owned from here on, so a failed start still kills the process.
        let mut servers = Self {
            child,
            issuer: String::new(),
            mcp_url: String::new(),
        };
        let ready = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            std::io::BufReader::new(stdout)
                .read_line(&mut line)
                .map(|_| line)
        });
        let line = tokio::time::timeout(Duration::from_secs(60), ready)
            .await
            .expect("py_oauth_server.py listens within 60 s")
            .expect("the reader thread")
            .expect("its stdout");
        let ready: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("py_oauth_server.py printed {line:?}: {e}"));
        servers.issuer = ready["issuer"].as_str().expect("issuer").to_owned();
        servers.mcp_url = ready["mcp"].as_str().expect("mcp").to_owned();
        servers
    }

    /// The allow-list entries that let the guard through to both servers.
    fn allow_list(&self) -> String {
        [&self.issuer, &self.mcp_url]
            .map(|url| {
                let url = Url::parse(url).expect("a URL");
                format!(
                    "{}:{}",
                    url.host_str().expect("a host"),
                    url.port().expect("a port")
                )
            })
            .join(",")
    }

    /// The authorization server's `/stats`.
    async fn stats(&self) -> Value {
        get_json(&format!("{}/stats", self.issuer)).await
    }

    /// The Python server's record of every `save_note` it ran.
    async fn calls(&self) -> Vec<Value> {
        let origin = Url::parse(&self.mcp_url)
            .expect("a URL")
            .origin()
            .ascii_serialization();
        match get_json(&format!("{origin}/admin/calls")).await {
            Value::Array(calls) => calls,
            other => panic!("/admin/calls: {other}"),
        }
    }
}

impl Drop for PythonOAuth {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn get_json(url: &str) -> Value {
    let res = new_client().get(url).send().await.expect("GET");
    assert_eq!(res.status(), StatusCode::OK, "GET {url}");
    res.json().await.expect("JSON")
}

/// Sends `use py_notes__save_note with {arguments}` in `chat`, approves the
/// card it brings, and returns the turn's events up to its end.
async fn approved_save(
    app: &TestApp,
    chat: &str,
    stream: &mut crate::helpers::SseReader,
    arguments: &Value,
) -> Vec<(i64, Value)> {
    app.send(chat, &format!("use py_notes__save_note with {arguments}"))
        .await;
    let (_, card) = stream
        .until("mcp_confirmation_required")
        .await
        .pop()
        .expect("a card");
    assert_eq!(card["tool_name"], "save_note");
    assert_eq!(&card["arguments"], arguments);
    let res = decide(app, &card, "approve").await;
    assert_eq!(res.status(), StatusCode::OK, "approve");
    stream.until("turn_finished").await
}

#[tokio::test]
async fn signing_in_to_a_python_sdk_server_runs_approved_calls_before_and_after_a_refresh() {
    let py = PythonOAuth::start().await;
    let allow = py.allow_list().parse().expect("allow list");
    let app = spawn_app_with(|c| {
        c.secret_key = Some(Secret::new(KEY_HEX));
        c.allow_private_connectors = allow;
    })
    .await;
    app.signed_up_user().await;

    // The connector, as Settings adds it: OAuth, nothing entered.
    let res = app
        .post(
            "/api/connectors",
            &json!({"name": "Py notes", "url": py.mcp_url, "auth": {"type": "oauth"}}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let created: Value = res.json().await.expect("JSON");
    let id = created["id"].as_str().expect("id").to_owned();
    assert_eq!(created["oauth_status"], "needs_sign_in");

    // Start: discovery from the SDK's 401 challenge, our registration.
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
    let authorization_url =
        Url::parse(started["authorization_url"].as_str().expect("URL")).expect("a URL");
    assert_eq!(
        authorization_url.origin().ascii_serialization(),
        py.issuer,
        "the authorization server the SDK's resource metadata names"
    );
    assert_eq!(
        query(&authorization_url, "code_challenge_method").as_deref(),
        Some("S256")
    );
    assert_eq!(
        query(&authorization_url, "resource"),
        Some(py.mcp_url.clone())
    );
    assert_eq!(
        query(&authorization_url, "scope").as_deref(),
        Some("notes:write"),
        "the scopes the resource metadata lists"
    );
    let stats = py.stats().await;
    assert_eq!(
        stats["clients"].as_array().map(Vec::len),
        Some(1),
        "{stats}"
    );
    let client_id = stats["clients"][0].clone();

    // The browser: the authorization server approves at once and redirects.
    let res = app
        .client
        .get(authorization_url.as_str())
        .send()
        .await
        .expect("the authorization request");
    assert_eq!(res.status(), StatusCode::FOUND);
    let back = Url::parse(res.headers()["location"].to_str().expect("text")).expect("a URL");
    // Registered dynamically: the sign-in's own callback.
    assert!(
        back.as_str()
            .starts_with(&app.url(&format!("/oauth/callback/{id}?"))),
        "{back}"
    );
    assert_eq!(query(&back, "iss"), Some(py.issuer.clone()), "RFC 9207");
    let landed = callback(&app, &back).await;
    assert_eq!(
        query(&landed, "oauth").as_deref(),
        Some("connected"),
        "{landed}"
    );
    let signed_in = app.get_json(&format!("/api/connectors/{id}")).await;
    assert_eq!(signed_in["oauth_status"], "connected");
    assert_eq!(signed_in["oauth_issuer"], py.issuer.as_str());

    // Refresh lists the tools with the token; keep the write, decline the
    // read.
    let res = app
        .post(&format!("/api/connectors/{id}/refresh"), &json!({}))
        .await;
    assert_eq!(
        res.status(),
        StatusCode::OK,
        "{}",
        res.text().await.unwrap_or_default()
    );
    let mut names: Vec<String> = seen(&app, &id, None)
        .await
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["list_notes", "save_note"]);
    let res = app
        .request(
            reqwest::Method::PUT,
            &format!("/api/connectors/{id}/tools/review"),
            Some(json!({
                "keep": seen(&app, &id, Some(&["save_note"])).await,
                "decline": seen(&app, &id, Some(&["list_notes"])).await,
            })),
        )
        .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT, "review");

    // A call the gate asks about, approved, runs at the Python server with
    // the signed-in token.
    let chat = app.create_chat("offline/demo").await;
    let mut stream = app.stream(&chat, None).await;
    let first = json!({"title": "lease", "body": "renew by May"});
    let events = approved_save(&app, &chat, &mut stream, &first).await;
    let ran = event_of(&events, "mcp_tool_call");
    assert_eq!(ran["status"], "ok", "{ran}");
    assert!(
        text_of(&events).contains(&format!("saved 'lease' for {SUBJECT}")),
        "{}",
        text_of(&events)
    );
    let calls = py.calls().await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["arguments"], first);
    assert_eq!(calls[0]["subject"], SUBJECT);
    assert_eq!(calls[0]["client_id"], client_id);
    assert_eq!(py.stats().await["token_requests"]["authorization_code"], 1);

    // Past the token's lifetime the next call needs a new token: Countersign
    // refreshes it (rotating the refresh token) and the call runs on it.
    tokio::time::sleep(TOKEN_TTL + Duration::from_secs(1)).await;
    let second = json!({"title": "keys", "body": "two sets"});
    let events = approved_save(&app, &chat, &mut stream, &second).await;
    let ran = event_of(&events, "mcp_tool_call");
    assert_eq!(ran["status"], "ok", "{ran}");
    let calls = py.calls().await;
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[1]["arguments"], second);
    assert_eq!(calls[1]["subject"], SUBJECT);
    assert_eq!(calls[1]["client_id"], client_id);
    assert_eq!(
        calls[1]["grant_type"], "refresh_token",
        "the second call's token came from a refresh"
    );
    assert_ne!(calls[1]["token"], calls[0]["token"]);
    let stats = py.stats().await;
    assert_eq!(stats["token_requests"]["authorization_code"], 1, "{stats}");
    assert!(
        stats["token_requests"]["refresh_token"]
            .as_u64()
            .is_some_and(|n| n >= 1),
        "{stats}"
    );
    assert_eq!(
        stats["refused"],
        json!([]),
        "every request passed the authorization server's checks (PKCE, redirect URI, resource, \
         rotation)"
    );
    assert_eq!(
        app.get_json(&format!("/api/connectors/{id}")).await["oauth_status"],
        "connected"
    );
}
