//! What an operator reads: `X-Request-Id` on every response, and
//! `COUNTERSIGN_LOG_FORMAT=json` from the real binary — one JSON object
//! per line, each request's lines naming its request and its user, no
//! secret anywhere.

use crate::helpers::{GOOD_PASSWORD, TestApp, email, spawn_app};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::{
    io::{BufRead as _, BufReader},
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::Duration,
};
use uuid::Uuid;

const X_REQUEST_ID: &str = "x-request-id";

async fn request_id_for(app: &TestApp, sent: Option<&str>) -> String {
    let mut request = app.client.get(app.url("/api/auth/me"));
    if let Some(id) = sent {
        request = request.header(X_REQUEST_ID, id);
    }
    let res = request.send().await.expect("request");
    res.headers()
        .get(X_REQUEST_ID)
        .expect("every response carries X-Request-Id")
        .to_str()
        .expect("ASCII")
        .to_owned()
}

#[tokio::test]
async fn every_response_carries_a_request_id_and_a_sane_one_from_the_client_is_echoed() {
    let app = spawn_app().await;
    for path in ["/healthz", "/", "/api/no/such/thing", "/api/auth/me"] {
        let res = app.get(path).await;
        let id = res.headers().get(X_REQUEST_ID);
        assert!(
            id.and_then(|id| id.to_str().ok())
                .is_some_and(|id| id.parse::<Uuid>().is_ok()),
            "{path}: a generated id is a UUID: {id:?}"
        );
    }
    let first = request_id_for(&app, None).await;
    assert_ne!(
        request_id_for(&app, None).await,
        first,
        "a new id per request"
    );

    let sane = format!("proxy-{}.7_a", "x".repeat(118));
    assert_eq!(sane.len(), 128);
    assert_eq!(request_id_for(&app, Some(&sane)).await, sane, "echoed");
    // A refused request carries it too.
    let res = app
        .client
        .post(app.url("/api/chats"))
        .header(X_REQUEST_ID, "refused-1")
        .json(&json!({}))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), StatusCode::FORBIDDEN, "no CSRF token");
    assert_eq!(res.headers()[X_REQUEST_ID], "refused-1");
}

#[tokio::test]
async fn an_insane_request_id_is_replaced_by_a_fresh_one() {
    let app = spawn_app().await;
    let too_long = "x".repeat(129);
    for (sent, why) in [
        (too_long.as_str(), "129 characters"),
        ("with space", "a space"),
        ("quote\"d", "a quote"),
        (
            "tab\tbed",
            "a tab (a newline cannot be sent: it ends the header)",
        ),
        ("", "empty"),
    ] {
        let echoed = request_id_for(&app, Some(sent)).await;
        assert_ne!(echoed, sent, "{why}");
        assert!(echoed.parse::<Uuid>().is_ok(), "{why}: {echoed}");
    }
    // Sent twice: which one would a log believe? Neither.
    let res = app
        .client
        .get(app.url("/healthz"))
        .header(X_REQUEST_ID, "one")
        .header(X_REQUEST_ID, "two")
        .send()
        .await
        .expect("request");
    let ids: Vec<_> = res.headers().get_all(X_REQUEST_ID).iter().collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert!(
        ids[0].to_str().is_ok_and(|id| id.parse::<Uuid>().is_ok()),
        "{ids:?}"
    );
}

/// A real `countersign serve` with JSON logs, its stderr read line by line.
struct JsonLogServer {
    child: Child,
    base: String,
    lines: mpsc::Receiver<String>,
}

/// Keys handed to the server only so the test can look for them in its logs.
const SECRET_KEY: &str = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0";
const APPROVAL_KEY: &str = "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9";

impl JsonLogServer {
    async fn start(app: &TestApp) -> Self {
        Self::start_with(app, &[]).await
    }

    /// [`Self::start`], with `env` set on top (`RUST_LOG` among them).
    async fn start_with(app: &TestApp, env: &[(&str, &str)]) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("port")
            .local_addr()
            .expect("addr")
            .port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_countersign"))
            .arg("serve")
            .env("DATABASE_URL", app.config.database_url.expose())
            .env("COUNTERSIGN_MIGRATION_DATABASE_URL", &app.owner_db_url)
            .env("COUNTERSIGN_BIND", format!("127.0.0.1:{port}"))
            .env("COUNTERSIGN_LOG_FORMAT", "json")
            .env("COUNTERSIGN_SECRET_KEY", SECRET_KEY)
            .env("COUNTERSIGN_APPROVAL_KEY", APPROVAL_KEY)
            // The filter an operator gets by default.
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start countersign serve");
        let stderr = child.stderr.take().expect("stderr");
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        // The server prints its URL once it listens.
        let stdout = child.stdout.take().expect("stdout");
        let up = tokio::task::spawn_blocking(move || {
            BufReader::new(stdout)
                .lines()
                .next()
                .expect("a line")
                .expect("stdout")
        })
        .await
        .expect("reader");
        assert!(up.contains(&format!("127.0.0.1:{port}")), "{up}");
        Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            lines,
        }
    }

    /// Lines until one contains `needle` (that one included).
    fn until(&self, needle: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no log line with {needle} in {seen:#?}"));
            let done = line.contains(needle);
            seen.push(line);
            if done {
                return seen;
            }
        }
    }

    /// Stops the server (SIGTERM) and returns what it wrote after that.
    fn stop(mut self) -> Vec<String> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        self.lines.iter().collect()
    }
}

/// The `request` span of a JSON log line, if it has one.
fn request_span(line: &Value) -> Option<&Value> {
    line["spans"]
        .as_array()?
        .iter()
        .find(|span| span["name"] == "request")
}

#[tokio::test]
async fn json_logs_are_one_object_per_line_naming_the_request_and_user_and_no_secret() {
    let app = spawn_app().await;
    let server = JsonLogServer::start(&app).await;
    let on = app.at(&server.base);
    let address = email();
    let (status, cookie, body) = on.signup(&address, GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let user_id = body["user"]["id"].as_str().expect("user id").to_owned();
    let session = cookie
        .as_deref()
        .and_then(|c| c.split(';').next())
        .and_then(|c| c.split_once('='))
        .map(|(_, token)| token.to_owned())
        .expect("a session cookie");
    let csrf = on.csrf_token();

    // A GET (the extractor resolves the session) and a POST (the CSRF
    // middleware does), each naming itself.
    let res = on
        .client
        .get(on.url("/api/auth/me"))
        .header(X_REQUEST_ID, "log-me-1")
        .send()
        .await
        .expect("me");
    assert_eq!(res.status(), StatusCode::OK);
    let res = on
        .client
        .post(on.url("/api/chats"))
        .header(X_REQUEST_ID, "log-chat-1")
        .header("x-csrf-token", &csrf)
        .json(&json!({"model": "offline/demo"}))
        .send()
        .await
        .expect("chat");
    assert_eq!(res.status(), StatusCode::CREATED);
    // A query string that carries secrets (an OAuth callback's).
    let res = on
        .client
        .get(on.url("/oauth/callback?code=LEAKED-CODE&state=LEAKED-STATE"))
        .header(X_REQUEST_ID, "log-callback-1")
        .send()
        .await
        .expect("callback");
    drop(res);

    let mut lines = server.until("log-callback-1");
    lines.extend(server.stop());

    let parsed: Vec<Value> = lines
        .iter()
        .map(|line| {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("not one JSON object: {err}: {line}"));
            assert!(value.is_object(), "{line}");
            assert!(value["level"].is_string() && value["timestamp"].is_string());
            value
        })
        .collect();
    for (id, path) in [("log-me-1", "/api/auth/me"), ("log-chat-1", "/api/chats")] {
        let of_request: Vec<&Value> = parsed
            .iter()
            .filter(|line| request_span(line).is_some_and(|span| span["request_id"] == id))
            .collect();
        let finished = of_request
            .iter()
            .find(|line| line["message"] == "finished processing request")
            .unwrap_or_else(|| panic!("{id}: a finished line in {lines:#?}"));
        let span = request_span(finished).expect("span");
        assert_eq!(span["user_id"], user_id.as_str(), "{id}: {finished}");
        assert_eq!(span["path"], path, "{id}");
        assert!(finished["status"].is_number(), "{finished}");
    }
    let callback = parsed
        .iter()
        .filter_map(request_span)
        .find(|span| span["request_id"] == "log-callback-1")
        .expect("the callback's span");
    assert_eq!(callback["path"], "/oauth/callback");

    let all = lines.join("\n");
    for (secret, what) in [
        (app.config.database_url.expose(), "the database URL"),
        ("test-app", "the database password"),
        (SECRET_KEY, "COUNTERSIGN_SECRET_KEY"),
        (APPROVAL_KEY, "COUNTERSIGN_APPROVAL_KEY"),
        (session.as_str(), "the session token"),
        (csrf.as_str(), "the CSRF token"),
        (GOOD_PASSWORD, "the password"),
        ("LEAKED-CODE", "an OAuth code"),
        ("LEAKED-STATE", "an OAuth state"),
    ] {
        assert!(!all.contains(secret), "{what} is in the logs:\n{all}");
    }
}

#[test]
fn an_unknown_log_format_is_refused_naming_the_setting() {
    let out = Command::new(env!("CARGO_BIN_EXE_countersign"))
        .args(["migrate", "--database-url", "postgres://127.0.0.1:1/none"])
        .env("COUNTERSIGN_LOG_FORMAT", "xml")
        .output()
        .expect("run countersign");
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("COUNTERSIGN_LOG_FORMAT")
            && stderr.contains("`text` or `json`, not \"xml\""),
        "{stderr}"
    );
}

/// Users' content (a message, a model's answer, a tool's arguments)
/// reaches Postgres only as bound values, and Postgres writes bound values
/// to its log when told to: with a failed statement
/// (`log_parameter_max_length_on_error`, which any session may set, so the
/// server sets it to 0 on each of its connections, whatever the database's
/// default), or with a logged statement (`log_parameter_max_length`, which
/// only a superuser sets: the server says at start-up when statements are
/// logged with their values).
#[tokio::test]
async fn postgres_is_not_let_log_users_content_and_says_when_it_would() {
    use countersign::db;
    let app = spawn_app().await;
    let mut su = app.superuser().await;
    let database: String = sqlx::query_scalar("select current_database()")
        .fetch_one(&mut su)
        .await
        .expect("name");
    let set = |setting: &'static str| {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "alter database \"{database}\" set {setting}"
        )))
    };
    let fresh_pool = || db::connect(app.config.database_url.expose());

    // An operator's default that would log a failed statement's values.
    set("log_parameter_max_length_on_error = 1000")
        .execute(&mut su)
        .await
        .expect("set");
    let pool = fresh_pool().await.expect("pool");
    let on_error: String = sqlx::query_scalar("show log_parameter_max_length_on_error")
        .fetch_one(&pool)
        .await
        .expect("show");
    assert_eq!(on_error, "0", "a failed statement's values would be logged");
    assert!(
        !db::logs_parameters(&pool).await.expect("settings"),
        "no statement is logged by default"
    );

    // Slow statements logged, with their values (the default length, -1).
    set("log_min_duration_statement = 250")
        .execute(&mut su)
        .await
        .expect("set");
    let pool = fresh_pool().await.expect("pool");
    assert!(db::logs_parameters(&pool).await.expect("settings"));

    // … without their values.
    set("log_parameter_max_length = 0")
        .execute(&mut su)
        .await
        .expect("set");
    let pool = fresh_pool().await.expect("pool");
    assert!(!db::logs_parameters(&pool).await.expect("settings"));

    // Every data-modifying statement logged, with its values.
    set("log_parameter_max_length = 64")
        .execute(&mut su)
        .await
        .expect("set");
    set("log_min_duration_statement = -1")
        .execute(&mut su)
        .await
        .expect("set");
    set("log_statement = 'mod'")
        .execute(&mut su)
        .await
        .expect("set");
    let pool = fresh_pool().await.expect("pool");
    assert!(db::logs_parameters(&pool).await.expect("settings"));
}

/// Secrets stay out of the log at any level (issue 44, item 10): the
/// real binary at `RUST_LOG=trace` signs a connector in through OAuth (a
/// confidential client: code, client secret, tokens) and answers a
/// server's form with an API key; none of it is in what it wrote. Seen
/// to fail before the caps: rmcp's debug lines carried the answer and the
/// authorization code.
#[tokio::test]
async fn at_rust_log_trace_no_oauth_secret_or_elicitation_answer_is_logged() {
    use crate::oauth_flow::{allow_at_the_authorization_server, long_lived_demo, query};
    let demo = long_lived_demo().await;
    let oauth = demo.oauth().expect("oauth mode");
    oauth.confidential_clients();
    let app = spawn_app().await;
    let allow = format!("127.0.0.1:{}", demo.addr().port());
    let server = JsonLogServer::start_with(
        &app,
        &[
            ("RUST_LOG", "trace"),
            ("COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS", allow.as_str()),
        ],
    )
    .await;
    let on = app.at(&server.base);
    let (status, cookie, _) = on.signup(&email(), GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::CREATED);
    let session = cookie
        .as_deref()
        .and_then(|c| c.split(';').next())
        .and_then(|c| c.split_once('='))
        .map(|(_, token)| token.to_owned())
        .expect("a session cookie");

    let res = on
        .post(
            "/api/connectors",
            &json!({"name": "Demo", "url": demo.mcp_url(), "auth": {"type": "oauth"}}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let id = res.json::<Value>().await.expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let started: Value = on
        .post(&format!("/api/connectors/{id}/oauth/start"), &json!({}))
        .await
        .json()
        .await
        .expect("JSON");
    let back =
        allow_at_the_authorization_server(started["authorization_url"].as_str().expect("URL"))
            .await;
    let code = query(&back, "code").expect("a code");
    let landed = crate::oauth_flow::callback(&on, &back).await;
    assert_eq!(
        query(&landed, "oauth").as_deref(),
        Some("connected"),
        "{landed}"
    );
    let res = on
        .post(&format!("/api/connectors/{id}/refresh"), &json!({}))
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let tools = crate::helpers::seen(&on, &id, Some(&["file_note"])).await;
    let res = on
        .request(
            reqwest::Method::PUT,
            &format!("/api/connectors/{id}/tools/review"),
            Some(json!({"keep": tools, "decline": []})),
        )
        .await;
    assert!(res.status().is_success(), "review: {}", res.status());

    // A form answered with an API key.
    let answer_secret = "sk-live-ANSWER-7f3c9d2e1b0a";
    let chat = on.create_chat("offline/demo").await;
    let mut stream = on.stream(&chat, None).await;
    on.send(
        &chat,
        r#"use demo__file_note with {"title": "Engagement letter"}"#,
    )
    .await;
    let card = stream
        .until("mcp_confirmation_required")
        .await
        .pop()
        .expect("card")
        .1;
    let res = crate::helpers::decide(&on, &card, "approve").await;
    assert_eq!(res.status(), StatusCode::OK);
    let question = stream
        .until("mcp_input_required")
        .await
        .pop()
        .expect("asked")
        .1;
    let res = on
        .post(
            &format!(
                "/api/mcp-input-requests/{}",
                question["id"].as_str().expect("id")
            ),
            &json!({"action": "accept", "content":
                {"matter": answer_secret, "confidentiality": "privileged", "notify_team": true}}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    stream.until("turn_finished").await;
    let tokens: Vec<String> = oauth
        .seen()
        .iter()
        .filter_map(|h| h.strip_prefix("Bearer ").map(str::to_owned))
        .collect();
    assert!(!tokens.is_empty(), "the connector was called with a token");

    // A line after all of that, so everything before it has been read.
    let res = on
        .client
        .get(on.url("/api/auth/me"))
        .header(X_REQUEST_ID, "log-last-1")
        .send()
        .await
        .expect("me");
    assert_eq!(res.status(), StatusCode::OK);
    let mut lines = server.until("log-last-1");
    lines.extend(server.stop());
    let all = lines.join("\n");
    assert!(
        lines.iter().any(|l| l.contains(r#""level":"DEBUG""#)),
        "RUST_LOG=trace took effect: {all}"
    );
    let mut secrets = vec![
        (code.as_str(), "the OAuth authorization code"),
        (answer_secret, "the form's answer"),
        (session.as_str(), "the session token"),
        (GOOD_PASSWORD, "the password"),
        (SECRET_KEY, "COUNTERSIGN_SECRET_KEY"),
    ];
    for token in &tokens {
        secrets.push((token.as_str(), "an access token"));
    }
    for (secret, what) in secrets {
        assert!(
            !all.contains(secret),
            "{what} is in the log at RUST_LOG=trace:\n{}",
            lines
                .iter()
                .filter(|l| l.contains(secret))
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}
