//! Key rotation (docs/operations.md, "Rotating keys"): the real
//! `countersign secrets rotate | status` binary over secrets stored through
//! the API — a connector's bearer token, a provider key, a TOTP secret, an
//! OAuth client, its tokens and a sign-in in flight — and the approval
//! ledger's HMAC key with its previous key.

use crate::{
    helpers::{
        GOOD_PASSWORD, Setup, TestApp, decide, instance_with, ledger, propose, setup,
        spawn_app_with,
    },
    mfa::{Authenticator, enrolled},
    oauth_flow::{
        add_oauth_connector, allow_at_the_authorization_server, long_lived_demo, sign_in,
        test_connector,
    },
};
use countersign::{
    approvals::{ApprovalKeys, Binding},
    config::Secret,
    connectors::{self, Auth},
    models,
    secrets::SecretBox,
};
use countersign_api::PendingCallStatus;
use countersign_demo_mcp::DemoServer;
use reqwest::{StatusCode, Url};
use serde_json::{Value, json};
use sqlx::Row as _;
use uuid::Uuid;

/// The key secrets were sealed with before the rotation.
const OLD_KEY: &str = "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
/// The key they are rotated to.
const NEW_KEY: &str = "3c2b1a09f8e7d6c5b4a3928170f6e5d43c2b1a09f8e7d6c5b4a3928170f6e5d4";

const BEARER: &str = "tok-rotation-7Qx";
const PROVIDER_KEY: &str = "sk-ant-rotation-0123456789abcdef";

fn key_id(hex_key: &str) -> String {
    SecretBox::from_hex(hex_key)
        .expect("key")
        .key_id()
        .to_owned()
}

/// One secret of every sealed kind, stored through the API by a server
/// with only [`OLD_KEY`].
struct Stored {
    /// Serves the bearer connector (kept alive for the test's length).
    _plain: DemoServer,
    oauth: DemoServer,
    app: TestApp,
    user: Uuid,
    email: String,
    /// A connector with a bearer token (`connector_secrets`).
    bearer: String,
    /// A signed-in OAuth connector (`connector_oauth` client and tokens).
    signed_in: String,
    /// Where the authorization server sends the browser back for a second
    /// OAuth connector's sign-in, not yet followed (`oauth_states`).
    pending_back: Url,
    /// The user's authenticator (`mfa_totp`).
    authenticator: Authenticator,
}

async fn stored() -> Stored {
    let plain = DemoServer::start("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("demo server");
    let oauth = long_lived_demo().await;
    let allow = format!("{},{}", plain.addr(), oauth.addr())
        .parse()
        .expect("allow list");
    let app = spawn_app_with(|c| {
        c.secret_key = Some(Secret::new(OLD_KEY));
        c.allow_private_connectors = allow;
    })
    .await;
    let (user, email) = app.signed_up_user().await;

    let res = app
        .post(
            "/api/connectors",
            &json!({"name": "Bearer", "url": plain.mcp_url(), "auth": {"type": "bearer", "token": BEARER}}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let bearer = res.json::<Value>().await.expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned();

    let res = app
        .request(
            reqwest::Method::PUT,
            "/api/settings/provider-keys/anthropic",
            Some(json!({"api_key": PROVIDER_KEY})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT, "provider key");

    let signed_in = add_oauth_connector(&app, &oauth).await;
    sign_in(&app, &signed_in).await;

    let res = app
        .post(
            "/api/connectors",
            &json!({"name": "Demo notes 2", "url": oauth.mcp_url(), "auth": {"type": "oauth"}}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let pending = res.json::<Value>().await.expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let started: Value = app
        .post(
            &format!("/api/connectors/{pending}/oauth/start"),
            &json!({}),
        )
        .await
        .json()
        .await
        .expect("JSON");
    let pending_back =
        allow_at_the_authorization_server(started["authorization_url"].as_str().expect("URL"))
            .await;

    // Last: with MFA on, the actions above would need a step-up.
    let (authenticator, _) = enrolled(&app).await;
    Stored {
        _plain: plain,
        oauth,
        app,
        user,
        email,
        bearer,
        signed_in,
        pending_back,
        authenticator,
    }
}

/// Runs the real binary: `countersign secrets ARGS` as the server's login
/// role with `keys` as (COUNTERSIGN_SECRET_KEY, …_PREVIOUS). Returns the
/// exit code and stdout.
async fn secrets_cli(
    app: &TestApp,
    args: &[&str],
    keys: (Option<&str>, Option<&str>),
) -> (i32, String) {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_countersign"));
    cmd.arg("secrets")
        .args(args)
        .env("DATABASE_URL", app.config.database_url.expose())
        .env_remove("COUNTERSIGN_SECRET_KEY")
        .env_remove("COUNTERSIGN_SECRET_KEY_PREVIOUS")
        .env("RUST_LOG", "warn");
    if let Some(current) = keys.0 {
        cmd.env("COUNTERSIGN_SECRET_KEY", current);
    }
    if let Some(previous) = keys.1 {
        cmd.env("COUNTERSIGN_SECRET_KEY_PREVIOUS", previous);
    }
    let out = cmd.output().await.expect("run countersign secrets");
    let stdout = String::from_utf8(out.stdout).expect("UTF-8");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stdout.contains(OLD_KEY) && !stdout.contains(NEW_KEY) && !stderr.contains(NEW_KEY),
        "never prints a key"
    );
    (out.status.code().expect("exit code"), stdout)
}

/// The line of `report` for `table`, e.g. `connector_secrets  1 re-sealed, …`.
fn line_of<'a>(report: &'a str, table: &str) -> &'a str {
    report
        .lines()
        .find(|l| l.split_whitespace().next() == Some(table))
        .unwrap_or_else(|| panic!("no line for {table} in:\n{report}"))
}

/// Every sealed kind the fixture stores, as `rotate` names them, with how
/// many values of it the fixture holds (an OAuth connector's client
/// settings are sealed in `connector_secrets` too).
const KINDS: [(&str, usize); 6] = [
    ("connector_secrets", 3),
    ("provider_keys", 1),
    ("mfa_totp", 1),
    ("connector_oauth.client", 2),
    ("connector_oauth.tokens", 1),
    ("oauth_states", 1),
];

/// `instance`, seen through the fixture's browser (its session and CSRF
/// token, which every instance accepts).
fn as_the_user(s: &Stored, instance: TestApp) -> TestApp {
    TestApp {
        client: s.app.client.clone(),
        csrf: std::sync::Mutex::new(s.app.csrf.lock().expect("lock").clone()),
        ..instance
    }
}

/// Follows the authorization server's redirect `back` to `instance` (as a
/// load balancer would route it) in the fixture's browser; returns where
/// it lands.
async fn callback_at(s: &Stored, instance: &TestApp, back: &Url) -> String {
    let url = format!(
        "{}{}?{}",
        instance.base,
        back.path(),
        back.query().unwrap_or_default()
    );
    let res = s.app.client.get(url).send().await.expect("callback");
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    res.headers()["location"].to_str().expect("text").to_owned()
}

/// Signs in with password and code on `app`'s own client: the status.
async fn login_with_code(app: &TestApp, email: &str, code: &str) -> StatusCode {
    app.post(
        "/api/auth/login",
        &json!({"email": email, "password": GOOD_PASSWORD, "code": code}),
    )
    .await
    .status()
}

/// What a server with `app`'s settings reads of the bearer token and the
/// provider key: each Ok when it opens, the error's text otherwise.
async fn opened(s: &Stored, app: &TestApp) -> (Result<Auth, String>, Result<(), String>) {
    let state = crate::helpers::state_of(app).await;
    let auth = connectors::load_auth(
        &app.pool,
        state.secrets.as_ref(),
        s.user,
        s.bearer.parse().expect("uuid"),
    )
    .await
    .map_err(|e| e.to_string());
    let key = models::user_key(&state, s.user, "anthropic")
        .await
        .map_err(|e| e.to_string())
        .and_then(|k| match k {
            Some(k) if k.expose() == PROVIDER_KEY => Ok(()),
            other => Err(format!("not the stored key: {:?}", other.is_some())),
        });
    (auth, key)
}

#[tokio::test]
async fn after_secrets_rotate_a_server_with_only_the_new_key_uses_every_stored_secret() {
    let mut s = stored().await;
    let (old_id, new_id) = (key_id(OLD_KEY), key_id(NEW_KEY));

    let (code, status) = secrets_cli(&s.app, &["status"], (Some(OLD_KEY), None)).await;
    assert_eq!(code, 0, "{status}");
    for (table, n) in KINDS {
        let line = line_of(&status, table);
        assert!(
            line.contains(&format!("{old_id} (current)")) && line.ends_with(&format!(" {n}")),
            "{line}"
        );
    }

    // The rolling deploy: an instance with the new key and the old one as
    // previous still opens everything (here: the TOTP secret).
    let rolling = instance_with(&s.app, |c| {
        c.secret_key = Some(Secret::new(NEW_KEY));
        c.secret_key_previous = Some(Secret::new(OLD_KEY));
    })
    .await;
    let code = s.authenticator.next();
    assert_eq!(
        login_with_code(&rolling, &s.email, &code).await,
        StatusCode::OK
    );

    // Rotate, in batches of one row (a transaction each).
    let (code, report) = secrets_cli(
        &s.app,
        &["rotate", "--batch-size", "1"],
        (Some(NEW_KEY), Some(OLD_KEY)),
    )
    .await;
    assert_eq!(code, 0, "{report}");
    assert!(
        report.contains(&format!("re-sealing under key {new_id}")),
        "{report}"
    );
    for (table, n) in KINDS {
        assert!(
            line_of(&report, table).contains(&format!(" {n} re-sealed, 0 could not be opened")),
            "{table}: {report}"
        );
    }

    // Idempotent: the second run finds nothing.
    let (code, again) = secrets_cli(&s.app, &["rotate"], (Some(NEW_KEY), Some(OLD_KEY))).await;
    assert_eq!(code, 0, "{again}");
    for (table, _) in KINDS {
        assert!(
            line_of(&again, table).contains(" 0 re-sealed, 0 could not be opened"),
            "{again}"
        );
    }
    let (_, status) = secrets_cli(&s.app, &["status"], (Some(NEW_KEY), Some(OLD_KEY))).await;
    assert!(
        !status.contains(&old_id),
        "nothing left under the old key: {status}"
    );
    assert!(
        status.contains("COUNTERSIGN_SECRET_KEY_PREVIOUS is no longer needed"),
        "{status}"
    );

    // A server with only the new key uses every secret.
    let after = instance_with(&s.app, |c| {
        c.secret_key = Some(Secret::new(NEW_KEY));
        c.secret_key_previous = None;
    })
    .await;
    let (auth, provider_key) = opened(&s, &after).await;
    assert_eq!(
        auth,
        Ok(Auth::Bearer(BEARER.to_owned())),
        "connector_secrets"
    );
    assert_eq!(provider_key, Ok(()), "provider_keys");

    let code = s.authenticator.next();
    assert_eq!(
        login_with_code(&after, &s.email, &code).await,
        StatusCode::OK,
        "mfa_totp"
    );
    let after = as_the_user(&s, after);
    let res = after
        .post(&format!("/api/connectors/{}/refresh", s.bearer), &json!({}))
        .await;
    let status = res.status();
    let body = res.text().await.unwrap_or_default();
    assert_eq!(
        status,
        StatusCode::OK,
        "the bearer connector connects: {body}"
    );

    let seen = s.oauth.oauth().expect("oauth").seen().len();
    let (status, detail) = test_connector(&after, &s.signed_in).await;
    assert_eq!(status, StatusCode::OK, "connector_oauth: {detail}");
    let seen_now = s.oauth.oauth().expect("oauth").seen();
    assert!(
        seen_now.len() > seen && seen_now.last().is_some_and(|h| h.starts_with("Bearer ")),
        "the token went to the server"
    );

    // The sign-in that was in flight completes (its PKCE verifier opens).
    let landed = callback_at(&s, &after, &s.pending_back).await;
    assert!(landed.contains("oauth=connected"), "oauth_states: {landed}");
}

#[tokio::test]
async fn without_a_rotation_a_server_with_only_the_new_key_fails_closed() {
    let mut s = stored().await;
    let new_only = instance_with(&s.app, |c| {
        c.secret_key = Some(Secret::new(NEW_KEY));
        c.secret_key_previous = None;
    })
    .await;
    let (auth, provider_key) = opened(&s, &new_only).await;
    let old_id = key_id(OLD_KEY);
    let names_the_key = |text: &str| {
        text.contains(&old_id)
            && text.contains("neither COUNTERSIGN_SECRET_KEY nor COUNTERSIGN_SECRET_KEY_PREVIOUS")
    };
    assert!(auth.as_ref().is_err_and(|e| names_the_key(e)), "{auth:?}");
    assert!(
        provider_key.as_ref().is_err_and(|e| names_the_key(e)),
        "{provider_key:?}"
    );

    // Each refusal says which key the value was sealed with.
    let code = s.authenticator.next();
    assert_eq!(
        login_with_code(&new_only, &s.email, &code).await,
        StatusCode::UNAUTHORIZED,
        "mfa_totp: the code cannot be checked, so it is refused"
    );
    let new_only = as_the_user(&s, new_only);
    let res = new_only
        .post(&format!("/api/connectors/{}/refresh", s.bearer), &json!({}))
        .await;
    let (status, body) = (res.status(), res.text().await.unwrap_or_default());
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(names_the_key(&body), "connector_secrets: {body}");

    let seen = s.oauth.oauth().expect("oauth").seen().len();
    let (status, detail) = test_connector(&new_only, &s.signed_in).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{detail}");
    assert!(names_the_key(&detail), "connector_oauth: {detail}");
    assert_eq!(
        s.oauth.oauth().expect("oauth").seen().len(),
        seen,
        "no token was sent"
    );
    let landed = callback_at(&s, &new_only, &s.pending_back).await;
    assert!(
        landed.contains("oauth_error=") && !landed.contains("oauth=connected"),
        "oauth_states: {landed}"
    );
}

#[tokio::test]
async fn a_value_that_opens_under_neither_key_is_named_left_alone_and_the_run_exits_1() {
    let s = stored().await;
    const STRANGER: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    // Rotating with the wrong previous key: nothing opens.
    let (code, report) = secrets_cli(&s.app, &["rotate"], (Some(NEW_KEY), Some(STRANGER))).await;
    assert_eq!(code, 1, "{report}");
    assert!(
        report.contains(&format!(
            "connector_secrets row {}: sealed with key {}",
            s.bearer,
            key_id(OLD_KEY)
        )),
        "{report}"
    );
    assert!(
        report.contains(&format!("mfa_totp row {}", s.user)),
        "{report}"
    );
    assert!(
        line_of(&report, "connector_oauth.client").contains(" 0 re-sealed, 2 could not be opened"),
        "{report}"
    );
    // Left as they were: still under the old key, still opening with it.
    let (_, status) = secrets_cli(&s.app, &["status"], (Some(OLD_KEY), None)).await;
    for (table, n) in KINDS {
        assert!(
            line_of(&status, table).ends_with(&format!(" {n}")),
            "{status}"
        );
    }
    let (auth, provider_key) = opened(&s, &s.app).await;
    assert_eq!(auth, Ok(Auth::Bearer(BEARER.to_owned())));
    assert_eq!(provider_key, Ok(()));
}

// ---- The approval ledger's HMAC key.

const APPROVAL_A: &str = "a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0";
const APPROVAL_B: &str = "b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0";

/// Re-signs ledger row `id` with key `hex_key`, as an instance that still
/// had that key when it proposed the call would have written it.
async fn signed_under(s: &Setup, id: &str, hex_key: &str) {
    let mut config = s.app.config.clone();
    config.approval_key = Some(Secret::new(hex_key));
    config.approval_key_previous = None;
    let keys = ApprovalKeys::from_config(&config).expect("keys");
    let mut db = s.app.superuser().await;
    let row = sqlx::query(
        "select user_id, chat_id, turn_id, connector_id, destination_url, tool_name,
                arguments_digest, expires_at from mcp_pending_calls where id = $1::uuid",
    )
    .bind(id)
    .fetch_one(&mut db)
    .await
    .expect("ledger row");
    let id: Uuid = id.parse().expect("uuid");
    let expires_at: time::OffsetDateTime = row.get("expires_at");
    let (destination_url, tool_name, arguments_digest): (String, String, String) = (
        row.get("destination_url"),
        row.get("tool_name"),
        row.get("arguments_digest"),
    );
    let binding = Binding {
        id: id.into(),
        user_id: row.get::<Uuid, _>("user_id").into(),
        chat_id: row.get::<Uuid, _>("chat_id").into(),
        turn_id: row.get::<Uuid, _>("turn_id").into(),
        connector_id: row.get::<Uuid, _>("connector_id").into(),
        destination_url: &destination_url,
        tool_name: &tool_name,
        arguments_digest: &arguments_digest,
        expires_at_micros: expires_at.unix_timestamp_nanos() / 1000,
    };
    let (key_id, tag) = keys.sign(&binding);
    sqlx::query("update mcp_pending_calls set hmac_key_id = $2, hmac = $3 where id = $1")
        .bind(id)
        .bind(key_id)
        .bind(tag)
        .execute(&mut db)
        .await
        .expect("re-sign");
}

#[tokio::test]
async fn a_call_signed_under_the_previous_approval_key_still_runs_after_the_rotation() {
    // The instance after the rotation: current B, previous A.
    let s = setup(|c| {
        c.approval_key = Some(Secret::new(APPROVAL_B));
        c.approval_key_previous = Some(Secret::new(APPROVAL_A));
    })
    .await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "search_notes", json!({"query": "lease"})).await;
    let id = card["id"].as_str().expect("id");
    signed_under(&s, id, APPROVAL_A).await;

    assert_eq!(
        decide(&s.app, &card, "approve").await.status(),
        StatusCode::OK
    );
    stream.until("turn_finished").await;
    assert_eq!(ledger(&s.app, id).await.0, PendingCallStatus::Executed);
    assert_eq!(s.demo.calls().count("search_notes"), 1);
}

#[tokio::test]
async fn a_call_signed_under_a_dropped_approval_key_fails_closed_and_never_runs() {
    // The previous key was dropped too early: current B, no previous.
    let s = setup(|c| {
        c.approval_key = Some(Secret::new(APPROVAL_B));
        c.approval_key_previous = None;
    })
    .await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "search_notes", json!({"query": "lease"})).await;
    let id = card["id"].as_str().expect("id");
    signed_under(&s, id, APPROVAL_A).await;

    assert_eq!(
        decide(&s.app, &card, "approve").await.status(),
        StatusCode::OK
    );
    let events = stream.until("turn_finished").await;
    let failed = events
        .iter()
        .find(|(_, e)| e["type"] == "mcp_tool_call")
        .expect("the call's outcome")
        .1
        .clone();
    assert_eq!(failed["status"], "error", "{failed}");
    assert!(
        failed["error"]
            .as_str()
            .is_some_and(|e| e.contains("integrity check")),
        "{failed}"
    );
    assert_eq!(ledger(&s.app, id).await.0, PendingCallStatus::Failed);
    assert_eq!(s.demo.calls().count("search_notes"), 0, "never executed");
}
