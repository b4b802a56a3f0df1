//! Two-factor sign-in (TOTP) and the step-up that guards the four
//! trust-changing actions; sessions.

use crate::helpers::{GOOD_PASSWORD, TestApp, spawn_app_with};
use countersign::{auth::mfa, config::Secret};
use reqwest::StatusCode;
use serde_json::{Value, json};

const KEY_HEX: &str = "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

fn base32_decode(text: &str) -> Vec<u8> {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let (mut buffer, mut bits, mut out) = (0_u32, 0_u32, Vec::new());
    for c in text.bytes() {
        let v = alphabet.iter().position(|&a| a == c).expect("base32") as u32;
        buffer = (buffer << 5) | v;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
    }
    out
}

/// The authenticator app: hands out each code once, newest step first.
pub(crate) struct Authenticator {
    secret: Vec<u8>,
    last: i64,
}

impl Authenticator {
    fn now_secs() -> i64 {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs();
        i64::try_from(secs).expect("time")
    }

    /// A code the server has not seen yet (the server accepts ±1 step).
    ///
    /// A code for the step just past stops working when the next step
    /// starts, so it is only used with 10 s to spare: a request slowed by
    /// a loaded machine must not cross that boundary (a test failed so
    /// once). When no fresh step is left, this waits for the clock to
    /// reach the next one, as a person would wait for the app's next code.
    pub(crate) fn next(&mut self) -> String {
        loop {
            let secs = Self::now_secs();
            let now = mfa::step_of(secs);
            let secs_left = (now + 1) * 30 - secs;
            let earliest = if secs_left > 10 { now - 1 } else { now };
            let step = earliest.max(self.last + 1);
            if step <= now + 1 {
                self.last = step;
                return mfa::code_at(&self.secret, step);
            }
            // Waiting on the clock itself: there is no event to await.
            std::thread::sleep(std::time::Duration::from_secs(
                u64::try_from(secs_left).unwrap_or(1),
            ));
        }
    }
}

/// A user with MFA on; returns their authenticator and recovery codes.
pub(crate) async fn enrolled(app: &TestApp) -> (Authenticator, Vec<String>) {
    let res = app
        .post("/api/auth/mfa/enroll", &json!({"password": GOOD_PASSWORD}))
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let enrolment: Value = res.json().await.expect("JSON");
    let secret = enrolment["secret"].as_str().expect("secret");
    assert!(
        enrolment["otpauth_uri"]
            .as_str()
            .is_some_and(|u| u.starts_with("otpauth://totp/Countersign:")
                && u.contains(&format!("secret={secret}")))
    );
    assert!(
        enrolment["qr_svg"]
            .as_str()
            .is_some_and(|s| s.contains("<svg"))
    );
    let mut app_codes = Authenticator {
        secret: base32_decode(secret),
        last: i64::MIN / 2,
    };
    assert_eq!(
        app.get_json("/api/auth/me").await["mfa_enabled"],
        false,
        "not before confirming"
    );
    let wrong = app
        .post("/api/auth/mfa/confirm", &json!({"code": "000000"}))
        .await;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let res = app
        .post("/api/auth/mfa/confirm", &json!({"code": app_codes.next()}))
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let confirmed: Value = res.json().await.expect("JSON");
    let codes: Vec<String> =
        serde_json::from_value(confirmed["recovery_codes"].clone()).expect("codes");
    assert_eq!(codes.len(), 10);
    assert_eq!(app.get_json("/api/auth/me").await["mfa_enabled"], true);
    (app_codes, codes)
}

async fn login(app: &TestApp, email: &str, code: Option<&str>) -> (StatusCode, Value) {
    let mut body = json!({"email": email, "password": GOOD_PASSWORD});
    if let Some(code) = code {
        body["code"] = json!(code);
    }
    let res = app
        .client
        .post(app.url("/api/auth/login"))
        .json(&body)
        .send()
        .await
        .expect("login");
    let status = res.status();
    let body: Value = res.json().await.unwrap_or(Value::Null);
    if status == StatusCode::OK {
        *app.csrf.lock().expect("lock") = body["csrf_token"].as_str().map(str::to_owned);
    }
    (status, body)
}

/// `POST path {"code"}` (disable, step-up): `wrong` gets 401, the
/// authenticator's next code 204.
async fn refuses_a_wrong_code_and_takes_a_fresh_one(
    app: &TestApp,
    path: &str,
    wrong: &str,
    authenticator: &mut Authenticator,
) {
    let res = app.post(path, &json!({"code": wrong})).await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{path}: {wrong}");
    let res = app.post(path, &json!({"code": authenticator.next()})).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT, "{path}: a fresh code");
}

#[tokio::test]
async fn sign_in_asks_for_the_code_and_refuses_wrong_or_reused_ones() {
    let app = spawn_app_with(|c| c.secret_key = Some(Secret::new(KEY_HEX))).await;
    let (_, email) = app.signed_up_user().await;
    let (mut authenticator, recovery) = enrolled(&app).await;

    let tab = app.at(&app.base);
    let (status, body) = login(&tab, &email, None).await;
    assert_eq!(
        (status, body),
        (StatusCode::UNAUTHORIZED, json!({"detail": "mfa_required"}))
    );
    let (status, _) = login(&tab, &email, Some("123456")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "a wrong code");
    let code = authenticator.next();
    let (status, body) = login(&tab, &email, Some(&code)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["mfa_enabled"], true);
    let again = app.at(&app.base);
    let (status, _) = login(&again, &email, Some(&code)).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "a code is never accepted twice"
    );

    // A recovery code works once.
    let (status, _) = login(&again, &email, Some(&recovery[0].to_lowercase())).await;
    assert_eq!(status, StatusCode::OK);
    let third = app.at(&app.base);
    let (status, _) = login(&third, &email, Some(&recovery[0])).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "recovery codes are single-use"
    );

    // Disabling needs a code; then sign-in needs none.
    refuses_a_wrong_code_and_takes_a_fresh_one(
        &tab,
        "/api/auth/mfa/disable",
        "000000",
        &mut authenticator,
    )
    .await;
    let (status, _) = login(&third, &email, None).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn the_four_trust_changing_actions_need_a_recent_step_up() {
    // The shared fixture: the demo server, a user with its tools kept, a
    // card waiting.
    let s = crate::helpers::setup(|_| {}).await;
    let (app, connector) = (&s.app, &s.connector);
    let mut stream = app.stream(&s.chat, None).await;
    let (_, card) =
        crate::helpers::propose(&s, &mut stream, "search_notes", json!({"query": "lease"})).await;

    let (mut authenticator, _) = enrolled(app).await;
    // Confirming counted as a step-up; let it lapse.
    let mut db = app.superuser().await;
    let lapse =
        || sqlx::query("update sessions set mfa_verified_at = now() - interval '11 minutes'");
    lapse().execute(&mut db).await.expect("lapse");

    let trust_on = || json!({"trust_annotations": true});
    let credentials = || json!({"auth": {"type": "bearer", "token": "t0ken"}});
    let key = || json!({"api_key": "sk-ant-test-0000000000"});
    let always = json!({"decision": "approve", "grant": "always", "arguments_digest": card["arguments_digest"]});
    let connector_path = format!("/api/connectors/{connector}");
    let decide_path = format!(
        "/api/mcp-pending-calls/{}",
        card["id"].as_str().expect("id")
    );
    // The four trust-changing actions.
    let actions = [
        (
            reqwest::Method::PATCH,
            connector_path.as_str(),
            trust_on(),
            "trust on",
        ),
        (
            reqwest::Method::PATCH,
            connector_path.as_str(),
            credentials(),
            "credentials",
        ),
        (
            reqwest::Method::PUT,
            "/api/settings/provider-keys/anthropic",
            key(),
            "provider key",
        ),
        (
            reqwest::Method::POST,
            decide_path.as_str(),
            always.clone(),
            "always-rule",
        ),
    ];
    for (method, path, body, what) in actions.clone() {
        let res = app.request(method, path, Some(body)).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{what}");
        assert_eq!(
            res.json::<Value>().await.expect("JSON"),
            json!({"detail": "mfa_required"}),
            "{what}"
        );
    }
    let res = app
        .request(
            reqwest::Method::DELETE,
            "/api/settings/provider-keys/anthropic",
            None,
        )
        .await;
    assert_eq!(
        res.status(),
        StatusCode::FORBIDDEN,
        "removing a provider key"
    );
    // Turning trust off and allowing once need none.
    let res = app
        .request(
            reqwest::Method::PATCH,
            &connector_path,
            Some(json!({"trust_annotations": false})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);

    refuses_a_wrong_code_and_takes_a_fresh_one(
        app,
        "/api/auth/mfa/step-up",
        "999999",
        &mut authenticator,
    )
    .await;
    for (method, path, body, what) in actions {
        let res = app.request(method, path, Some(body)).await;
        assert!(res.status().is_success(), "{what}: {}", res.status());
    }
    stream.until("turn_finished").await;
}

#[tokio::test]
async fn sessions_are_listed_and_the_others_can_be_signed_out() {
    let app = spawn_app_with(|_| {}).await;
    let (_, email) = app.signed_up_user().await;
    let other = app.at(&app.base);
    let (status, _) = login(&other, &email, None).await;
    assert_eq!(status, StatusCode::OK);
    let sessions = app.get_json("/api/auth/sessions").await;
    let sessions = sessions.as_array().expect("sessions");
    assert_eq!(sessions.len(), 2);
    assert_eq!(sessions.iter().filter(|s| s["current"] == true).count(), 1);
    let res = app
        .post("/api/auth/sessions/revoke-others", &json!({}))
        .await;
    assert_eq!(
        res.json::<Value>().await.expect("JSON"),
        json!({"revoked": 1})
    );
    assert_eq!(
        other.get("/api/auth/me").await.status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(app.get("/api/auth/me").await.status(), StatusCode::OK);
    // Another user sees only their own.
    let stranger = app.at(&app.base);
    stranger.signed_up_user().await;
    assert_eq!(
        stranger
            .get_json("/api/auth/sessions")
            .await
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

#[tokio::test]
async fn mfa_secrets_and_recovery_codes_are_unreadable_as_authenticated() {
    let app = spawn_app_with(|c| c.secret_key = Some(Secret::new(KEY_HEX))).await;
    let (user, _) = app.signed_up_user().await;
    enrolled(&app).await;
    for table in ["mfa_totp", "mfa_recovery_codes"] {
        let mut tx = countersign::db::user_tx(&app.pool, user).await.expect("tx");
        let err = sqlx::query(sqlx::AssertSqlSafe(format!("select * from {table}")))
            .fetch_all(&mut *tx)
            .await
            .expect_err("refused");
        assert_eq!(
            err.as_database_error().and_then(|e| e.code()).as_deref(),
            Some("42501"),
            "{table}"
        );
    }
}

fn not_429(statuses: &[StatusCode]) -> usize {
    statuses
        .iter()
        .filter(|s| **s != StatusCode::TOO_MANY_REQUESTS)
        .count()
}

#[tokio::test]
async fn twenty_concurrent_wrong_codes_at_sign_in_get_at_most_five_answers_other_than_429() {
    let app = spawn_app_with(|c| c.secret_key = Some(Secret::new(KEY_HEX))).await;
    let (_, email) = app.signed_up_user().await;
    enrolled(&app).await;

    let requests = (0..20).map(|_| {
        let request = crate::helpers::new_client()
            .post(app.url("/api/auth/login"))
            .json(&json!({"email": email, "password": GOOD_PASSWORD, "code": "000000"}));
        async move { request.send().await.expect("request").status() }
    });
    let statuses = futures_util::future::join_all(requests).await;

    assert!(not_429(&statuses) <= 5, "{statuses:?}");
}

#[tokio::test]
async fn twenty_concurrent_wrong_step_up_codes_get_at_most_five_answers_other_than_429() {
    let app = spawn_app_with(|c| c.secret_key = Some(Secret::new(KEY_HEX))).await;
    app.signed_up_user().await;
    enrolled(&app).await;
    // Open the connections first (HTTP keep-alive, and the server's pool),
    // so that the guesses below arrive together rather than one handshake
    // apart.
    let warm_up = (0..20).map(|_| app.get("/api/auth/me"));
    futures_util::future::join_all(warm_up).await;

    let body = json!({"code": "000000"});
    let requests =
        (0..20).map(|_| async { app.post("/api/auth/mfa/step-up", &body).await.status() });
    let statuses = futures_util::future::join_all(requests).await;

    assert!(not_429(&statuses) <= 5, "{statuses:?}");
    assert!(
        statuses.contains(&StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
}

#[tokio::test]
async fn enrolling_mfa_needs_the_current_password() {
    let app = spawn_app_with(|c| c.secret_key = Some(Secret::new(KEY_HEX))).await;
    app.signed_up_user().await;

    let res = app.post("/api/auth/mfa/enroll", &json!({})).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST, "without a password");
    let body: Value = res.json().await.expect("JSON");
    assert_eq!(body["detail"], "Enter your current password.");

    let res = app
        .post(
            "/api/auth/mfa/enroll",
            &json!({"password": "not my password at all"}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "a wrong password");
    let body: Value = res.json().await.expect("JSON");
    assert_eq!(body["detail"], "Wrong password.");

    let mut db = app.superuser().await;
    let secrets: i64 = sqlx::query_scalar("select count(*) from mfa_totp")
        .fetch_one(&mut db)
        .await
        .expect("count");
    assert_eq!(secrets, 0, "no secret was made");

    let res = app
        .post("/api/auth/mfa/enroll", &json!({"password": GOOD_PASSWORD}))
        .await;
    assert_eq!(res.status(), StatusCode::OK);
}

#[tokio::test]
async fn with_require_mfa_an_account_without_mfa_must_enrol_before_widening_trust() {
    // The shared fixture: the demo server, a user with its tools kept, a
    // card waiting.
    let s = crate::helpers::setup(|c| c.require_mfa = true).await;
    let (app, connector) = (&s.app, &s.connector);
    let mut stream = app.stream(&s.chat, None).await;
    let (_, card) =
        crate::helpers::propose(&s, &mut stream, "search_notes", json!({"query": "lease"})).await;
    let connector_path = format!("/api/connectors/{connector}");
    let decide_path = format!(
        "/api/mcp-pending-calls/{}",
        card["id"].as_str().expect("id")
    );
    let actions = [
        (
            reqwest::Method::PATCH,
            connector_path.as_str(),
            Some(json!({"trust_annotations": true})),
            "trust on",
        ),
        (
            reqwest::Method::PATCH,
            connector_path.as_str(),
            Some(json!({"auth": {"type": "bearer", "token": "t0ken"}})),
            "credentials",
        ),
        (
            reqwest::Method::PUT,
            "/api/settings/provider-keys/anthropic",
            Some(json!({"api_key": "sk-ant-test-0000000000"})),
            "provider key",
        ),
        (
            reqwest::Method::DELETE,
            "/api/settings/provider-keys/anthropic",
            None,
            "removing a provider key",
        ),
        (
            reqwest::Method::POST,
            decide_path.as_str(),
            Some(
                json!({"decision": "approve", "grant": "always", "arguments_digest": card["arguments_digest"]}),
            ),
            "always-rule",
        ),
    ];
    for (method, path, body, what) in actions.clone() {
        let res = app.request(method, path, body).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{what}");
        assert_eq!(
            res.json::<Value>().await.expect("JSON"),
            json!({"detail": "mfa_enrolment_required"}),
            "{what}"
        );
    }
    // Narrowing trust needs nothing.
    let res = app
        .request(
            reqwest::Method::PATCH,
            &connector_path,
            Some(json!({"trust_annotations": false})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);

    // Enrolling (confirming counts as a step-up) opens them.
    enrolled(app).await;
    for (method, path, body, what) in actions {
        let res = app.request(method, path, body).await;
        assert!(res.status().is_success(), "{what}: {}", res.status());
    }
    stream.until("turn_finished").await;
}
