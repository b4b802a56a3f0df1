//! `/api/auth/*`: sign-up, sign-in, sessions, CSRF, Origin, throttling.

use crate::helpers::{GOOD_PASSWORD, TestApp, email, new_client, spawn_app, spawn_app_with};
use argon2::{Params, password_hash::phc::PasswordHash};
use reqwest::{StatusCode, header};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

fn cookie_token(set_cookie: &str) -> String {
    set_cookie
        .split(';')
        .next()
        .and_then(|kv| kv.strip_prefix("countersign_session="))
        .expect("session cookie")
        .to_owned()
}

#[tokio::test]
async fn signup_answers_201_with_an_httponly_samesite_lax_cookie_and_a_csrf_token() {
    let app = spawn_app().await;
    let email = email();

    let (status, cookie, body) = app.signup(&email, GOOD_PASSWORD).await;

    assert_eq!(status, StatusCode::CREATED, "{body}");
    let cookie = cookie.expect("Set-Cookie");
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(
            cookie.contains(attribute),
            "{attribute} missing from {cookie}"
        );
    }
    assert!(
        !cookie.contains("Secure"),
        "plain HTTP gets no Secure flag: {cookie}"
    );
    assert_eq!(body["user"]["email"], email);
    assert!(
        body["csrf_token"].as_str().is_some_and(|t| t.len() >= 32),
        "{body}"
    );
    assert!(body.get("password_hash").is_none() && body["user"].get("password_hash").is_none());
}

#[tokio::test]
async fn the_session_cookie_is_secure_behind_https() {
    let app = spawn_app().await;
    let res = app
        .client
        .post(app.url("/api/auth/signup"))
        .header("x-forwarded-proto", "https")
        .json(&json!({ "email": email(), "password": GOOD_PASSWORD }))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), StatusCode::CREATED);
    let cookie = res.headers()[header::SET_COOKIE].to_str().expect("ascii");
    assert!(cookie.ends_with("; Secure"), "{cookie}");

    let app = spawn_app_with(|c| c.public_url = Some("https://cs.example.org".into())).await;
    let res = app
        .client
        .post(app.url("/api/auth/signup"))
        .header(header::HOST, "cs.example.org")
        .json(&json!({ "email": email(), "password": GOOD_PASSWORD }))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), StatusCode::CREATED);
    let cookie = res.headers()[header::SET_COOKIE].to_str().expect("ascii");
    assert!(cookie.ends_with("; Secure"), "{cookie}");
}

#[tokio::test]
async fn the_first_user_is_admin_and_later_ones_are_not() {
    let app = spawn_app().await;
    let (_, _, first) = app.signup(&email(), GOOD_PASSWORD).await;
    let other = TestApp {
        client: new_client(),
        csrf: Default::default(),
        ..app
    };
    let (_, _, second) = other.signup(&email(), GOOD_PASSWORD).await;
    assert_eq!(first["user"]["is_admin"], true);
    assert_eq!(second["user"]["is_admin"], false);
}

#[tokio::test]
async fn signup_refuses_weak_passwords_with_a_message_that_says_why() {
    let app = spawn_app().await;
    for (password, expected, why) in [
        ("short pw", "at least 12 characters", "too short"),
        ("password1234", "too easy to guess", "a common password"),
        ("123456789012", "too easy to guess", "digits only"),
    ] {
        let (status, cookie, body) = app.signup(&email(), password).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{why}: {body}");
        assert!(cookie.is_none(), "{why}: no session for a refused sign-up");
        let detail = body["detail"].as_str().expect("detail");
        assert!(detail.contains(expected), "{why}: {detail}");
    }
    let too_long = "lantern ".repeat(200);
    let (status, _, body) = app.signup(&email(), &too_long).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .expect("detail")
            .contains("at most 1024")
    );
}

#[tokio::test]
async fn signup_refuses_bad_emails_and_taken_emails_case_insensitively() {
    let app = spawn_app().await;
    let (status, _, body) = app.signup("not-an-email", GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["detail"], "Enter a valid email address.");

    let email = email();
    app.signup(&email, GOOD_PASSWORD).await;
    let again = TestApp {
        client: new_client(),
        csrf: Default::default(),
        ..app
    };
    let (status, _, body) = again.signup(&email.to_uppercase(), GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
}

#[tokio::test]
async fn malformed_bodies_get_json_errors() {
    let app = spawn_app().await;
    let res = app
        .client
        .post(app.url("/api/auth/signup"))
        .header(header::CONTENT_TYPE, "application/json")
        .body("{not json")
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let body: Value = res.json().await.expect("JSON error");
    assert!(body["detail"].as_str().is_some());

    let res = app.post("/api/auth/signup", &json!({ "email": 7 })).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = res.json().await.expect("JSON error");
    assert!(
        body["detail"]
            .as_str()
            .expect("detail")
            .contains("wrong shape")
    );
}

#[tokio::test]
async fn closed_signup_admits_only_the_first_user() {
    let app = spawn_app_with(|c| c.allow_signup = false).await;
    let (status, _, _) = app.signup(&email(), GOOD_PASSWORD).await;
    assert_eq!(
        status,
        StatusCode::CREATED,
        "a fresh deployment still gets its admin"
    );

    let other = TestApp {
        client: new_client(),
        csrf: Default::default(),
        ..app
    };
    let (status, cookie, body) = other.signup(&email(), GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(cookie.is_none());
    assert!(
        body["detail"]
            .as_str()
            .expect("detail")
            .contains("Sign-up is closed")
    );
}

#[tokio::test]
async fn the_stored_hash_is_argon2id_with_owasp_parameters() {
    let app = spawn_app().await;
    let (id, _) = app.signed_up_user().await;
    let mut su = app.superuser().await;
    let phc: String = sqlx::query_scalar("select password_hash from users where id = $1")
        .bind(id)
        .fetch_one(&mut su)
        .await
        .expect("hash");
    let parsed = PasswordHash::new(&phc).expect("a PHC string");
    assert_eq!(parsed.algorithm.as_str(), "argon2id");
    let params = Params::try_from(&parsed).expect("argon2 params");
    assert!(
        params.m_cost() >= 19_456 && params.t_cost() >= 2 && params.p_cost() >= 1,
        "{phc}"
    );
    assert!(!phc.contains(GOOD_PASSWORD));
}

#[tokio::test]
async fn only_a_hash_of_the_session_token_is_stored() {
    let app = spawn_app().await;
    let (_, cookie, _) = app.signup(&email(), GOOD_PASSWORD).await;
    let token = cookie_token(&cookie.expect("cookie"));
    let mut su = app.superuser().await;
    let stored: Vec<Vec<u8>> = sqlx::query_scalar("select token_hash from sessions")
        .fetch_all(&mut su)
        .await
        .expect("sessions");
    assert_eq!(stored, vec![Sha256::digest(token.as_bytes()).to_vec()]);
    let rows_with_plain_token: i64 =
        sqlx::query_scalar("select count(*) from sessions s where position($1 in s::text) > 0")
            .bind(&token)
            .fetch_one(&mut su)
            .await
            .expect("count");
    assert_eq!(rows_with_plain_token, 0);
}

#[tokio::test]
async fn me_returns_the_user_and_csrf_token_and_401_without_a_session() {
    let app = spawn_app().await;
    let res = app.get("/api/auth/me").await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let body: Value = res.json().await.expect("JSON");
    assert_eq!(body["detail"], "Sign in to continue.");

    let email = email();
    let (_, _, signup) = app.signup(&email, GOOD_PASSWORD).await;
    let res = app.get("/api/auth/me").await;
    assert_eq!(res.status(), StatusCode::OK);
    let me: Value = res.json().await.expect("JSON");
    assert_eq!(me["user"]["email"], email);
    assert_eq!(
        me["user"]["display_name"],
        email.split('@').next().expect("local part")
    );
    assert_eq!(me["csrf_token"], signup["csrf_token"]);
}

#[tokio::test]
async fn a_post_without_the_csrf_token_is_403_and_changes_nothing() {
    let app = spawn_app().await;
    app.signed_up_user().await;

    let res = app
        .client
        .post(app.url("/api/auth/logout"))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let body: Value = res.json().await.expect("JSON");
    assert!(body["detail"].as_str().expect("detail").contains("CSRF"));

    let res = app
        .client
        .post(app.url("/api/auth/logout"))
        .header("x-csrf-token", "not-the-token")
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), StatusCode::FORBIDDEN);

    assert_eq!(
        app.get("/api/auth/me").await.status(),
        StatusCode::OK,
        "still signed in"
    );
}

#[tokio::test]
async fn a_post_with_a_foreign_origin_is_403() {
    let app = spawn_app().await;
    let res = app
        .client
        .post(app.url("/api/auth/signup"))
        .header(header::ORIGIN, "http://evil.example")
        .json(&json!({ "email": email(), "password": GOOD_PASSWORD }))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(res.headers().get(header::SET_COOKIE).is_none());

    app.signed_up_user().await;
    let csrf = app.csrf.lock().expect("lock").clone().expect("token");
    let res = app
        .client
        .post(app.url("/api/auth/logout"))
        .header("x-csrf-token", csrf)
        .header(header::ORIGIN, "http://evil.example")
        .send()
        .await
        .expect("request");
    assert_eq!(
        res.status(),
        StatusCode::FORBIDDEN,
        "a valid token does not excuse a foreign origin"
    );

    let same_origin = app
        .client
        .post(app.url("/api/auth/login"))
        .header(header::ORIGIN, app.base.clone())
        .json(&json!({ "email": email(), "password": "whatever whatever" }))
        .send()
        .await
        .expect("request");
    assert_eq!(
        same_origin.status(),
        StatusCode::UNAUTHORIZED,
        "same origin passes the check"
    );
}

#[tokio::test]
async fn unknown_email_and_wrong_password_get_the_same_answer() {
    let app = spawn_app().await;
    let (_, email) = app.signed_up_user().await;
    let anonymous = TestApp {
        client: new_client(),
        csrf: Default::default(),
        ..app
    };

    let (wrong_status, wrong_cookie, wrong_body) =
        anonymous.login(&email, "tidal quartz lantern orchid").await;
    let (unknown_status, unknown_cookie, unknown_body) = anonymous
        .login("nobody-here@example.org", GOOD_PASSWORD)
        .await;

    assert_eq!(wrong_status, StatusCode::UNAUTHORIZED);
    assert_eq!(wrong_status, unknown_status);
    assert_eq!(wrong_body, unknown_body);
    assert_eq!(wrong_body["detail"], "Wrong email or password.");
    assert!(wrong_cookie.is_none() && unknown_cookie.is_none());

    let (status, cookie, body) = anonymous.login(&email.to_uppercase(), GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(cookie.is_some());
}

#[tokio::test]
async fn repeated_wrong_passwords_end_in_429_with_retry_after() {
    let app = spawn_app().await;
    let (_, email) = app.signed_up_user().await;

    for attempt in 1..=5 {
        let (status, _, _) = app.login(&email, "wrong wrong wrong wrong").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "attempt {attempt}");
    }
    let res = app
        .post(
            "/api/auth/login",
            &json!({ "email": email, "password": GOOD_PASSWORD }),
        )
        .await;
    assert_eq!(
        res.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "even the right password waits"
    );
    let retry: u64 = res.headers()[header::RETRY_AFTER]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!((1..=900).contains(&retry), "Retry-After {retry}");
    let body: Value = res.json().await.expect("JSON");
    assert!(
        body["detail"]
            .as_str()
            .expect("detail")
            .contains("Too many failed sign-ins")
    );
}

#[tokio::test]
async fn one_address_guessing_many_accounts_is_throttled() {
    let app = spawn_app_with(|c| c.login_max_failures_per_ip = 3).await;
    for n in 0..3 {
        let (status, _, _) = app
            .login(&format!("guess-{n}@example.org"), "wrong wrong wrong")
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let (status, _, _) = app.login("guess-99@example.org", "wrong wrong wrong").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn logout_revokes_the_session_server_side() {
    let app = spawn_app().await;
    let (_, cookie, _) = app.signup(&email(), GOOD_PASSWORD).await;
    let token = cookie_token(&cookie.expect("cookie"));

    let res = app.post("/api/auth/logout", &json!({})).await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let cleared = res.headers()[header::SET_COOKIE].to_str().expect("ascii");
    assert!(cleared.contains("Max-Age=0"), "{cleared}");

    // A copy of the old cookie is worthless now.
    let replay = reqwest::Client::new()
        .get(app.url("/api/auth/me"))
        .header(header::COOKIE, format!("countersign_session={token}"))
        .send()
        .await
        .expect("request");
    assert_eq!(replay.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn idle_and_absolute_expiry_end_a_session() {
    let app = spawn_app().await;
    let (id, _) = app.signed_up_user().await;
    assert_eq!(app.get("/api/auth/me").await.status(), StatusCode::OK);
    let mut su = app.superuser().await;

    // Unused for longer than the idle limit (8 h by default).
    sqlx::query("update sessions set last_seen_at = now() - interval '9 hours' where user_id = $1")
        .bind(id)
        .execute(&mut su)
        .await
        .expect("age the session");
    assert_eq!(
        app.get("/api/auth/me").await.status(),
        StatusCode::UNAUTHORIZED
    );

    // Recently used, but past its absolute expiry.
    sqlx::query(
        "update sessions set last_seen_at = now(), expires_at = now() - interval '1 second' where user_id = $1",
    )
    .bind(id)
    .execute(&mut su)
    .await
    .expect("expire the session");
    assert_eq!(
        app.get("/api/auth/me").await.status(),
        StatusCode::UNAUTHORIZED
    );

    sqlx::query("update sessions set expires_at = now() + interval '1 hour' where user_id = $1")
        .bind(id)
        .execute(&mut su)
        .await
        .expect("revive the session");
    assert_eq!(
        app.get("/api/auth/me").await.status(),
        StatusCode::OK,
        "control: the same cookie works"
    );
}

/// Sends `n` requests at once (each from a fresh client, as from many
/// tabs) and returns their statuses.
async fn all_at_once(
    app: &TestApp,
    n: usize,
    path: &str,
    body: impl Fn(usize) -> Value,
) -> Vec<StatusCode> {
    let requests = (0..n).map(|i| {
        let request = new_client().post(app.url(path)).json(&body(i));
        async move { request.send().await.expect("request").status() }
    });
    futures_util::future::join_all(requests).await
}

fn not_429(statuses: &[StatusCode]) -> usize {
    statuses
        .iter()
        .filter(|s| **s != StatusCode::TOO_MANY_REQUESTS)
        .count()
}

#[tokio::test]
async fn twenty_concurrent_wrong_passwords_for_one_account_get_at_most_five_answers_other_than_429()
{
    let app = spawn_app().await;
    let (_, email) = app.signed_up_user().await;

    let statuses = all_at_once(
        &app,
        20,
        "/api/auth/login",
        |_| json!({ "email": email, "password": "wrong wrong wrong wrong" }),
    )
    .await;

    assert!(not_429(&statuses) <= 5, "{statuses:?}");
    assert!(
        statuses
            .iter()
            .all(|s| matches!(*s, StatusCode::UNAUTHORIZED | StatusCode::TOO_MANY_REQUESTS)),
        "{statuses:?}"
    );
    let (status, _, _) = app.login(&email, GOOD_PASSWORD).await;
    assert_eq!(
        status,
        StatusCode::TOO_MANY_REQUESTS,
        "the account is still throttled"
    );
}

#[tokio::test]
async fn twenty_concurrent_wrong_passwords_from_one_address_get_at_most_the_per_ip_limit() {
    let app = spawn_app_with(|c| {
        c.login_max_failures_per_ip = 5;
        c.login_max_failures_per_account = 100;
    })
    .await;

    let statuses = all_at_once(
        &app,
        20,
        "/api/auth/login",
        |i| json!({ "email": format!("guess-{i}@example.org"), "password": "wrong wrong wrong" }),
    )
    .await;

    assert!(not_429(&statuses) <= 5, "{statuses:?}");
}

#[tokio::test]
async fn twenty_concurrent_sign_ups_from_one_address_get_at_most_the_per_ip_limit() {
    let app = spawn_app_with(|c| c.signup_max_per_ip = 3).await;

    let statuses = all_at_once(
        &app,
        20,
        "/api/auth/signup",
        |i| json!({ "email": format!("new-{i}@example.org"), "password": GOOD_PASSWORD }),
    )
    .await;

    assert!(not_429(&statuses) <= 3, "{statuses:?}");
    let created = statuses
        .iter()
        .filter(|s| **s == StatusCode::CREATED)
        .count();
    assert!(created >= 1, "the limit still lets some in: {statuses:?}");
    let mut su = app.superuser().await;
    let users: i64 = sqlx::query_scalar("select count(*) from users")
        .fetch_one(&mut su)
        .await
        .expect("count");
    assert_eq!(users, created as i64);
}

#[tokio::test]
async fn changing_the_password_signs_out_the_other_sessions_and_keeps_this_one() {
    let app = spawn_app().await;
    let (_, email) = app.signed_up_user().await;
    let other = app.at(&app.base);
    let (status, _, _) = other.login(&email, GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::OK);
    let new_password = "amber falcon meadow cipher";

    let res = app
        .post(
            "/api/auth/password",
            &json!({ "current_password": GOOD_PASSWORD, "new_password": new_password }),
        )
        .await;

    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert_eq!(app.get("/api/auth/me").await.status(), StatusCode::OK);
    assert_eq!(
        other.get("/api/auth/me").await.status(),
        StatusCode::UNAUTHORIZED,
        "the other session is signed out"
    );
    let fresh = app.at(&app.base);
    let (status, _, _) = fresh.login(&email, GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "the old password is gone");
    let (status, _, _) = fresh.login(&email, new_password).await;
    assert_eq!(status, StatusCode::OK, "the new one works");
}

#[tokio::test]
async fn a_wrong_current_password_or_a_weak_new_one_changes_nothing() {
    let app = spawn_app().await;
    let (_, email) = app.signed_up_user().await;
    let other = app.at(&app.base);
    other.login(&email, GOOD_PASSWORD).await;

    let res = app
        .post(
            "/api/auth/password",
            &json!({ "current_password": "not my password at all", "new_password": "amber falcon meadow cipher" }),
        )
        .await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let body: Value = res.json().await.expect("JSON");
    assert_eq!(body["detail"], "Wrong password.");

    let res = app
        .post(
            "/api/auth/password",
            &json!({ "current_password": GOOD_PASSWORD, "new_password": "password1234" }),
        )
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = res.json().await.expect("JSON");
    assert!(
        body["detail"]
            .as_str()
            .expect("detail")
            .contains("too easy to guess"),
        "{body}"
    );

    let res = app
        .client
        .post(app.url("/api/auth/password"))
        .json(&json!({ "current_password": GOOD_PASSWORD, "new_password": "amber falcon meadow cipher" }))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status(), StatusCode::FORBIDDEN, "no CSRF token");

    assert_eq!(other.get("/api/auth/me").await.status(), StatusCode::OK);
    let fresh = app.at(&app.base);
    let (status, _, _) = fresh.login(&email, GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::OK, "the password is unchanged");
}

#[tokio::test]
async fn twenty_concurrent_wrong_current_passwords_get_at_most_five_answers_other_than_429() {
    let app = spawn_app().await;
    app.signed_up_user().await;

    let body = json!({ "current_password": "not my password at all", "new_password": "amber falcon meadow cipher" });
    let requests = (0..20).map(|_| async { app.post("/api/auth/password", &body).await.status() });
    let statuses = futures_util::future::join_all(requests).await;

    assert!(not_429(&statuses) <= 5, "{statuses:?}");
}
