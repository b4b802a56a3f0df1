//! Single sign-on with OpenID Connect (issue 47 item 1), against a local
//! provider that speaks the protocol (`countersign-test-idp`): the account is
//! keyed by issuer and subject, made just in time for an allowed domain,
//! linked to a password account only after that password, and given or
//! refused the admin role by its groups at every sign-in; and, thought of
//! as an attacker would, a sign-in link made in another browser, a
//! replayed callback and every spoiled ID token sign nobody in.

use crate::helpers::{GOOD_PASSWORD, TestApp, new_client, spawn_app_with};
use countersign::config::{Config, Secret};
use countersign_test_idp::{CLIENT_ID, CLIENT_SECRET, Person, Provider, Tamper};
use reqwest::{StatusCode, header};
use serde_json::{Value, json};

fn configure(config: &mut Config, idp: &Provider) {
    config.oidc.issuer = Some(idp.issuer.clone());
    config.oidc.client_id = Some(CLIENT_ID.into());
    config.oidc.client_secret = Some(Secret::new(CLIENT_SECRET));
    config.oidc.allowed_domains = "firm.example".into();
    config.oidc.admin_groups = "Legal-IT".into();
    config.oidc.approver_groups = "Partners".into();
    config.oidc.button_label = "Sign in with Firm ID".into();
}

/// A provider and a server that signs in with it; a password account
/// exists already (so that no single sign-on account is the first, which
/// would be admin).
async fn setup() -> (TestApp, Provider) {
    let idp = Provider::start().await;
    let app = spawn_app_with(|c| configure(c, &idp)).await;
    app.at(&app.base).signed_up_user().await;
    (app, idp)
}

fn location(res: &reqwest::Response) -> String {
    res.headers()
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// Starts a sign-in in `app`'s browser and follows it to the provider;
/// returns the callback address the provider sends the browser to.
async fn to_the_provider(app: &TestApp, return_to: &str) -> String {
    let start = app
        .get(&format!("/auth/oidc/start?return_to={return_to}"))
        .await;
    assert_eq!(start.status(), StatusCode::SEE_OTHER);
    let at_provider = location(&start);
    assert!(
        at_provider.starts_with(&app.config.oidc.issuer.clone().unwrap_or_default()),
        "{at_provider}"
    );
    let back = app.client.get(&at_provider).send().await.expect("provider");
    assert_eq!(
        back.status(),
        StatusCode::SEE_OTHER,
        "{:?}",
        back.text().await
    );
    location(&back)
}

/// A whole sign-in in `app`'s browser: returns the callback's answer.
async fn sign_in(app: &TestApp, return_to: &str) -> reqwest::Response {
    let callback = to_the_provider(app, return_to).await;
    app.client.get(&callback).send().await.expect("callback")
}

/// `GET /api/auth/me` of `app`'s browser (remembering the CSRF token).
async fn me(app: &TestApp) -> (StatusCode, Value) {
    let res = app.get("/api/auth/me").await;
    let status = res.status();
    let body: Value = res.json().await.unwrap_or(Value::Null);
    if status == StatusCode::OK {
        *app.csrf.lock().expect("lock") = body["csrf_token"].as_str().map(str::to_owned);
    }
    (status, body)
}

fn refused(res: &reqwest::Response) -> String {
    let to = location(res);
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(to.starts_with("/signin?sso_error="), "{to}");
    let url = reqwest::Url::parse(&format!("http://x{to}")).expect("url");
    url.query_pairs()
        .find(|(k, _)| k == "sso_error")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

async fn identities(app: &TestApp) -> Vec<(String, String)> {
    sqlx::query_as("select subject, email from user_identities order by created_at")
        .fetch_all(&mut app.superuser().await)
        .await
        .expect("identities")
}

#[tokio::test]
async fn a_first_sign_in_makes_the_account_and_the_subject_not_the_email_finds_it_again() {
    let (app, idp) = setup().await;
    idp.sign_in_as(Person::new("sub-ann", "Ann@Firm.example"));
    let browser = app.at(&app.base);
    let res = sign_in(&browser, "/chats/42").await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        location(&res),
        "/chats/42",
        "back where the sign-in started"
    );
    let (status, who) = me(&browser).await;
    assert_eq!(status, StatusCode::OK, "{who}");
    assert_eq!(who["user"]["email"], "ann@firm.example");
    assert_eq!(who["user"]["display_name"], "Robin Firm");
    assert_eq!(who["user"]["is_admin"], false);
    let id = who["user"]["id"].clone();

    // The request asked for PKCE, a nonce and the configured scopes.
    let asked = idp.last_authorize();
    assert_eq!(asked["code_challenge_method"], "S256");
    assert!(!asked["nonce"].is_empty() && !asked["state"].is_empty());
    assert_eq!(asked["scope"], "openid email profile");

    // The same subject with another e-mail is the same account.
    idp.sign_in_as(Person::new("sub-ann", "ann.new@firm.example"));
    let other = app.at(&app.base);
    sign_in(&other, "/").await;
    let (_, again) = me(&other).await;
    assert_eq!(again["user"]["id"], id);
    assert_eq!(
        identities(&app).await,
        [("sub-ann".to_owned(), "ann.new@firm.example".to_owned())]
    );

    // Nobody knows the account's password: guessing the dummy fails.
    let guess = app.at(&app.base);
    let (status, _, _) = guess.login("ann@firm.example", GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_callback_link_made_in_another_browser_or_used_twice_signs_nobody_in() {
    let (app, idp) = setup().await;
    idp.sign_in_as(Person::new("sub-mallory", "mallory@firm.example"));

    // The attacker starts a sign-in and sends the victim the callback
    // address (their own code and state): the victim's browser holds no
    // such state, so it is not signed in as the attacker.
    let attacker = app.at(&app.base);
    let link = to_the_provider(&attacker, "/").await;
    let victim = app.at(&app.base);
    let res = victim.client.get(&link).send().await.expect("callback");
    assert!(refused(&res).contains("used or too old"));
    assert_eq!(me(&victim).await.0, StatusCode::UNAUTHORIZED);

    // The attacker's own browser can use it once; a replay is refused.
    let res = attacker.client.get(&link).send().await.expect("callback");
    assert_eq!(location(&res), "/");
    let replay = attacker.client.get(&link).send().await.expect("replay");
    refused(&replay);

    // A state nobody started.
    let stranger = app.at(&app.base);
    let res = stranger
        .get("/auth/oidc/callback?code=x&state=made-up")
        .await;
    refused(&res);
    assert_eq!(me(&stranger).await.0, StatusCode::UNAUTHORIZED);

    // A provider's error is said, and spends the state.
    let res = stranger
        .get(
            "/auth/oidc/callback?error=access_denied&error_description=You+cancelled&state=made-up",
        )
        .await;
    refused(&res);
}

#[tokio::test]
async fn every_spoiled_id_token_signs_nobody_in() {
    let (app, idp) = setup().await;
    for (n, tamper) in [
        Tamper::WrongNonce,
        Tamper::WrongAudience,
        Tamper::WrongIssuer,
        Tamper::Expired,
        Tamper::IssuedLongAgo,
        Tamper::AlgNone,
        Tamper::Hs256,
        Tamper::UnknownKey,
    ]
    .into_iter()
    .enumerate()
    {
        idp.tamper(tamper);
        idp.sign_in_as(Person::new(
            &format!("sub-{n}"),
            &format!("p{n}@firm.example"),
        ));
        let browser = app.at(&app.base);
        let res = sign_in(&browser, "/").await;
        let said = refused(&res);
        assert!(said.contains("failed a check"), "{tamper:?}: {said}");
        assert_eq!(me(&browser).await.0, StatusCode::UNAUTHORIZED, "{tamper:?}");
    }
    assert!(identities(&app).await.is_empty(), "no account was made");

    // And the same provider, behaving, signs in.
    idp.tamper(Tamper::None);
    let browser = app.at(&app.base);
    sign_in(&browser, "/").await;
    assert_eq!(me(&browser).await.0, StatusCode::OK);
}

#[tokio::test]
async fn a_rotated_key_is_fetched_once_and_then_kept() {
    let (app, idp) = setup().await;
    idp.sign_in_as(Person::new("sub-rot", "rot@firm.example"));
    sign_in(&app.at(&app.base), "/").await;
    assert_eq!(idp.jwks_fetches(), 1);
    let browser = app.at(&app.base);
    sign_in(&browser, "/").await;
    assert_eq!(me(&browser).await.0, StatusCode::OK);
    assert_eq!(idp.jwks_fetches(), 1, "kept, not fetched per sign-in");

    idp.rotate_keys();
    let browser = app.at(&app.base);
    sign_in(&browser, "/").await;
    assert_eq!(
        me(&browser).await.0,
        StatusCode::OK,
        "the new key was fetched"
    );
    assert_eq!(idp.jwks_fetches(), 2);
    sign_in(&app.at(&app.base), "/").await;
    assert_eq!(idp.jwks_fetches(), 2);
}

#[tokio::test]
async fn another_subject_with_a_linked_accounts_email_is_refused() {
    let (app, idp) = setup().await;
    idp.sign_in_as(Person::new("sub-first", "kim@firm.example"));
    let first = app.at(&app.base);
    sign_in(&first, "/").await;
    assert_eq!(me(&first).await.0, StatusCode::OK);

    // The provider now says another subject has Kim's address.
    idp.sign_in_as(Person::new("sub-second", "kim@firm.example"));
    let browser = app.at(&app.base);
    let said = refused(&sign_in(&browser, "/").await);
    assert!(said.contains("under another identity"), "{said}");
    assert_eq!(me(&browser).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(identities(&app).await.len(), 1);
}

#[tokio::test]
async fn a_domain_not_allowed_makes_no_account() {
    let (app, idp) = setup().await;
    idp.sign_in_as(Person::new("sub-out", "someone@elsewhere.example"));
    let browser = app.at(&app.base);
    let said = refused(&sign_in(&browser, "/").await);
    assert_eq!(
        said,
        "Accounts for elsewhere.example cannot be created here. Ask your administrator."
    );
    assert!(identities(&app).await.is_empty());
}

#[tokio::test]
async fn a_password_account_is_linked_only_after_a_verified_email_and_its_password() {
    let (app, idp) = setup().await;
    let owner = app.at(&app.base);
    let (status, _, body) = owner.signup("dana@firm.example", GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let owner_id = body["user"]["id"].clone();

    // The provider does not vouch for the address: no link, no account.
    let mut person = Person::new("sub-dana", "dana@firm.example");
    person.email_verified = false;
    idp.sign_in_as(person.clone());
    let browser = app.at(&app.base);
    let said = refused(&sign_in(&browser, "/").await);
    assert!(said.contains("did not confirm the address"), "{said}");
    assert_eq!(me(&browser).await.0, StatusCode::UNAUTHORIZED);

    // Vouched for: the browser is asked for the account's password.
    person.email_verified = true;
    idp.sign_in_as(person);
    let res = sign_in(&browser, "/").await;
    assert_eq!(location(&res), "/signin?link=1");
    assert_eq!(me(&browser).await.0, StatusCode::UNAUTHORIZED, "not yet");
    assert!(identities(&app).await.is_empty());

    // Another browser has no link to complete.
    let other = app.at(&app.base);
    let res = other
        .post("/api/auth/oidc/link", &json!({"password": GOOD_PASSWORD}))
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);

    let wrong = browser
        .post(
            "/api/auth/oidc/link",
            &json!({"password": "not the password at all"}),
        )
        .await;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert!(identities(&app).await.is_empty());
    let right = browser
        .post("/api/auth/oidc/link", &json!({"password": GOOD_PASSWORD}))
        .await;
    assert_eq!(right.status(), StatusCode::OK);
    let (_, who) = me(&browser).await;
    assert_eq!(who["user"]["id"], owner_id);
    assert_eq!(identities(&app).await.len(), 1);

    // From now on the provider alone signs Dana in, to the same account.
    let later = app.at(&app.base);
    let res = sign_in(&later, "/").await;
    assert_eq!(location(&res), "/");
    assert_eq!(me(&later).await.1["user"]["id"], owner_id);
}

#[tokio::test]
async fn the_admin_and_approver_groups_give_and_take_the_roles_at_every_sign_in() {
    let (app, idp) = setup().await;
    let is_approver = |user_id: Value| {
        let app = &app;
        async move {
            let id: uuid::Uuid = user_id.as_str().expect("id").parse().expect("uuid");
            sqlx::query_scalar::<_, bool>("select is_approver from users where id = $1")
                .bind(id)
                .fetch_one(&mut app.superuser().await)
                .await
                .expect("is_approver")
        }
    };
    let mut person = Person::new("sub-it", "it@firm.example");
    person.groups = vec!["legal-it".into(), "Partners".into()];
    idp.sign_in_as(person.clone());
    let browser = app.at(&app.base);
    sign_in(&browser, "/").await;
    let who = me(&browser).await.1;
    assert_eq!(who["user"]["is_admin"], true);
    assert!(is_approver(who["user"]["id"].clone()).await);

    person.groups = vec!["lawyers".into()];
    idp.sign_in_as(person);
    let browser = app.at(&app.base);
    sign_in(&browser, "/").await;
    let who = me(&browser).await.1;
    assert_eq!(who["user"]["is_admin"], false);
    assert!(!is_approver(who["user"]["id"].clone()).await);
}

#[tokio::test]
async fn a_return_address_elsewhere_lands_on_the_home_page() {
    let (app, idp) = setup().await;
    idp.sign_in_as(Person::new("sub-ret", "ret@firm.example"));
    for evil in [
        "//evil.example/x",
        "https://evil.example/",
        "/%5Cevil.example",
    ] {
        let browser = app.at(&app.base);
        let res = sign_in(&browser, evil).await;
        let to = location(&res);
        assert!(to == "/" || to == "/%5Cevil.example", "{evil} → {to}");
    }
}

#[tokio::test]
async fn with_passwords_off_the_provider_is_the_only_way_in() {
    let idp = Provider::start().await;
    let app = spawn_app_with(|c| {
        configure(c, &idp);
        c.oidc.admin_groups = String::new();
        c.password_signin = false;
    })
    .await;
    let options: Value = app
        .get("/api/auth/options")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(
        options,
        json!({"password_signin": false, "sso_label": "Sign in with Firm ID"})
    );
    let res = app
        .post(
            "/api/auth/signup",
            &json!({"email": "x@firm.example", "password": GOOD_PASSWORD}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        res.json::<Value>().await.expect("json"),
        json!({"detail": "password_signin_disabled"})
    );
    let (status, _, body) = app.login("x@firm.example", GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body, json!({"detail": "password_signin_disabled"}));

    // Without admin groups, the first account is the server's admin, as
    // with sign-up.
    idp.sign_in_as(Person::new("sub-first", "first@firm.example"));
    sign_in(&app, "/").await;
    let (status, who) = me(&app).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(who["user"]["is_admin"], true);
}

#[tokio::test]
async fn without_a_provider_there_is_no_button_and_no_start() {
    let app = spawn_app_with(|_| {}).await;
    let options: Value = app
        .get("/api/auth/options")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(options, json!({"password_signin": true}));
    let client = new_client();
    let res = client
        .get(app.url("/auth/oidc/start"))
        .send()
        .await
        .expect("start");
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
}
