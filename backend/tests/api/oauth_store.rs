//! `connectors::oauth::store` against the real database: an authorization
//! request is single use and expires, sealed values open only in their own
//! row, tokens load and save only for the URL they were issued for, and
//! refreshes of one connector are serialised across instances.

use crate::helpers::{TestApp, spawn_app_with};
use countersign::{
    config::Secret,
    connectors::oauth::store::{
        ClientRecord, InFlight, PgCredentialStore, client_for, save_client, save_state, take_state,
    },
    ids::{ConnectorId, UserId},
    secrets::SecretBox,
};
use reqwest::StatusCode;
use rmcp::transport::auth::{AuthorizationMetadata, CredentialStore, StoredCredentials};
use serde_json::{Value, json};
use std::time::Duration;

const KEY_HEX: &str = "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
const URL: &str = "https://mcp.example.org/mcp";

fn secrets() -> SecretBox {
    SecretBox::from_hex(KEY_HEX).expect("key")
}

/// A signed-up user with one connector at [`URL`]; `(app, user, connector)`.
async fn user_with_connector() -> (TestApp, UserId, ConnectorId) {
    let app = spawn_app_with(|c| c.secret_key = Some(Secret::new(KEY_HEX))).await;
    let (user_id, _) = app.signed_up_user().await;
    let res = app
        .post("/api/connectors", &json!({"name": "Matters", "url": URL}))
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let created: Value = res.json().await.expect("JSON");
    let id: uuid::Uuid = created["id"].as_str().expect("id").parse().expect("uuid");
    (app, user_id.into(), id.into())
}

fn metadata(issuer: &str) -> AuthorizationMetadata {
    serde_json::from_value(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "code_challenge_methods_supported": ["S256"],
    }))
    .expect("metadata")
}

fn client() -> ClientRecord {
    ClientRecord {
        client_id: "countersign-test".into(),
        client_secret: Some("client-secret-DO-NOT-LEAK".into()),
        scopes: vec!["matters.read".into()],
        redirect_uri: "https://countersign.example/oauth/callback".into(),
        step_ups: 0,
        resource_indicator: None,
    }
}

fn in_flight() -> InFlight {
    serde_json::from_value(json!({
        "state": {"pkce_verifier": "verifier-DO-NOT-LEAK", "csrf_token": "the-state",
                  "expected_issuer": "https://as.example", "require_issuer": true,
                  "created_at": 0, "requested_scopes": ["matters.read"]},
        "client": {"client_id": "countersign-test", "client_secret": null,
                   "scopes": ["matters.read"],
                   "redirect_uri": "https://countersign.example/oauth/callback"},
        "metadata": serde_json::to_value(metadata("https://as.example")).expect("json"),
        "resource": URL,
    }))
    .expect("in flight")
}

/// Stores [`client`] for the connector at [`URL`], registered with `issuer`.
async fn with_client(app: &TestApp, ids: (UserId, ConnectorId), issuer: &str) {
    save_client(
        &app.pool,
        &secrets(),
        ids,
        URL,
        &metadata(issuer),
        &client(),
    )
    .await
    .expect("client saved");
}

fn tokens(access: &str) -> StoredCredentials {
    serde_json::from_value(json!({
        "client_id": "countersign-test",
        "token_response": {"access_token": access, "token_type": "bearer",
                           "refresh_token": "refresh-1", "expires_in": 3600},
        "granted_scopes": ["matters.read"],
        "token_received_at": 1_700_000_000,
        "issuer": "https://as.example",
    }))
    .expect("credentials")
}

fn access_token(c: &StoredCredentials) -> String {
    serde_json::to_value(c).expect("json")["token_response"]["access_token"]
        .as_str()
        .expect("a token")
        .to_owned()
}

#[tokio::test]
async fn an_authorization_request_is_taken_once_and_never_after_it_expires() {
    let (app, user, connector) = user_with_connector().await;
    let secrets = secrets();
    save_state(
        &app.pool,
        &secrets,
        (user, connector),
        "state-1",
        &in_flight(),
    )
    .await
    .expect("saved");

    let (by, on, taken) = take_state(&app.pool, &secrets, "state-1")
        .await
        .expect("read")
        .expect("there");
    assert_eq!((by, on), (user, connector));
    assert_eq!(taken.state.pkce_verifier, "verifier-DO-NOT-LEAK");
    assert!(
        take_state(&app.pool, &secrets, "state-1")
            .await
            .expect("read")
            .is_none(),
        "a replayed callback finds nothing"
    );
    assert!(
        take_state(&app.pool, &secrets, "never-issued")
            .await
            .expect("read")
            .is_none()
    );

    save_state(
        &app.pool,
        &secrets,
        (user, connector),
        "state-2",
        &in_flight(),
    )
    .await
    .expect("saved");
    let mut su = app.superuser().await;
    sqlx::query("update oauth_states set expires_at = now() - interval '1 second'")
        .execute(&mut su)
        .await
        .expect("age it");
    assert!(
        take_state(&app.pool, &secrets, "state-2")
            .await
            .expect("read")
            .is_none(),
        "expired"
    );
    let left: i64 = sqlx::query_scalar("select count(*) from oauth_states")
        .fetch_one(&mut su)
        .await
        .expect("count");
    assert_eq!(left, 0, "an expired request is gone once looked up");

    let stored: String =
        sqlx::query_scalar("select coalesce(string_agg(s::text, ''), '') from oauth_states s")
            .fetch_one(&mut su)
            .await
            .expect("rows");
    assert!(
        !stored.contains("state-"),
        "only the state's digest is kept"
    );
}

#[tokio::test]
async fn a_sealed_request_moved_to_another_connectors_row_does_not_open() {
    let (app, user, connector) = user_with_connector().await;
    let res = app
        .post("/api/connectors", &json!({"name": "Other", "url": URL}))
        .await;
    let other: uuid::Uuid = res.json::<Value>().await.expect("JSON")["id"]
        .as_str()
        .expect("id")
        .parse()
        .expect("uuid");
    let secrets = secrets();
    save_state(
        &app.pool,
        &secrets,
        (user, connector),
        "state-a",
        &in_flight(),
    )
    .await
    .expect("saved");
    let mut su = app.superuser().await;
    sqlx::query("update oauth_states set connector_id = $1")
        .bind(other)
        .execute(&mut su)
        .await
        .expect("move it");
    assert!(
        take_state(&app.pool, &secrets, "state-a").await.is_err(),
        "its sealed part is bound to the connector it was made for"
    );
}

#[tokio::test]
async fn tokens_load_and_save_only_for_the_url_they_were_issued_for() {
    let (app, user, connector) = user_with_connector().await;
    let secrets = secrets();
    with_client(&app, (user, connector), "https://as.example").await;
    let here = PgCredentialStore::new(app.pool.clone(), secrets.clone(), (user, connector), URL);
    assert!(here.load().await.expect("load").is_none(), "no tokens yet");
    here.save(tokens("access-1")).await.expect("save");
    assert_eq!(
        access_token(&here.load().await.expect("load").expect("tokens")),
        "access-1"
    );

    // The same connector, asked about another URL (its URL changed since):
    // nothing loads, nothing saves.
    let elsewhere = PgCredentialStore::new(
        app.pool.clone(),
        secrets.clone(),
        (user, connector),
        "https://mcp.attacker.example/mcp",
    );
    assert!(elsewhere.load().await.expect("load").is_none());
    elsewhere
        .save(tokens("access-evil"))
        .await
        .expect("a no-op");
    assert_eq!(
        access_token(&here.load().await.expect("load").expect("tokens")),
        "access-1"
    );

    // Client reuse is keyed by issuer.
    let same = client_for(
        &app.pool,
        &secrets,
        (user, connector),
        URL,
        Some("https://as.example"),
    )
    .await
    .expect("read");
    assert_eq!(
        same.expect("reused").client_secret.as_deref(),
        Some("client-secret-DO-NOT-LEAK")
    );
    let other = client_for(
        &app.pool,
        &secrets,
        (user, connector),
        URL,
        Some("https://other-as.example"),
    )
    .await
    .expect("read");
    assert!(other.is_none(), "another issuer registers again");

    // A new client from another issuer drops the old issuer's tokens.
    with_client(&app, (user, connector), "https://other-as.example").await;
    assert!(here.load().await.expect("load").is_none());

    let mut su = app.superuser().await;
    let stored: String = sqlx::query_scalar("select o::text from connector_oauth o")
        .fetch_one(&mut su)
        .await
        .expect("row");
    assert!(
        !stored.contains("DO-NOT-LEAK") && !stored.contains("access-1"),
        "sealed at rest"
    );

    // Pointing the connector elsewhere deletes its OAuth rows.
    save_state(
        &app.pool,
        &secrets,
        (user, connector),
        "state-r",
        &in_flight(),
    )
    .await
    .expect("saved");
    countersign::connectors::repoint(
        &app.pool,
        user.into(),
        connector.into(),
        &"https://mcp.elsewhere.example/mcp".parse().expect("URL"),
    )
    .await
    .expect("re-pointed");
    let left: i64 = sqlx::query_scalar(
        "select (select count(*) from connector_oauth) + (select count(*) from oauth_states)",
    )
    .fetch_one(&mut su)
    .await
    .expect("count");
    assert_eq!(left, 0);
}

#[tokio::test]
async fn a_refused_refresh_asks_for_a_new_sign_in() {
    let (app, user, connector) = user_with_connector().await;
    let secrets = secrets();
    with_client(&app, (user, connector), "https://as.example").await;
    let store = PgCredentialStore::new(app.pool.clone(), secrets, (user, connector), URL);
    store.save(tokens("access-1")).await.expect("save");
    let mut su = app.superuser().await;
    let before: String = sqlx::query_scalar("select status from connector_oauth")
        .fetch_one(&mut su)
        .await
        .expect("row");
    assert_eq!(before, "connected");
    store
        .on_refresh_token_rejected(&tokens("access-1"))
        .await
        .expect("marked");
    let after: String = sqlx::query_scalar("select status from connector_oauth")
        .fetch_one(&mut su)
        .await
        .expect("row");
    assert_eq!(after, "needs_sign_in");
}

#[tokio::test]
async fn refreshes_of_one_connector_wait_for_each_other_across_instances() {
    let (app, user, connector) = user_with_connector().await;
    let second = crate::helpers::second_instance(&app).await;
    let first = PgCredentialStore::new(app.pool.clone(), secrets(), (user, connector), URL);
    let other = PgCredentialStore::new(second.pool.clone(), secrets(), (user, connector), URL);

    let held = first
        .acquire_refresh_guard()
        .await
        .expect("lock")
        .expect("a guard");
    let waiting = tokio::spawn(async move {
        let guard = other.acquire_refresh_guard().await.expect("lock");
        drop(guard);
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !waiting.is_finished(),
        "the second instance waits while the first refreshes"
    );
    drop(held);
    tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("released when the first guard goes")
        .expect("joined");
}

#[tokio::test]
async fn waiting_refreshes_hold_no_connection_so_the_one_refreshing_can_still_save() {
    use rmcp::transport::auth::CredentialStore as _;
    let (app, user, connector) = user_with_connector().await;
    let store = || PgCredentialStore::new(app.pool.clone(), secrets(), (user, connector), URL);
    let held = store()
        .acquire_refresh_guard()
        .await
        .expect("lock")
        .expect("a guard");
    // More waiters than the pool has connections.
    let waiters: Vec<_> = (0..40)
        .map(|_| {
            let waiter = store();
            tokio::spawn(async move {
                let guard = waiter.acquire_refresh_guard().await.expect("lock");
                drop(guard);
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The refresh holding the lock loads (and would save) through the pool.
    let loaded = tokio::time::timeout(Duration::from_secs(5), store().load()).await;
    assert!(
        matches!(loaded, Ok(Ok(_))),
        "the lock holder got a connection: {loaded:?}"
    );
    drop(held);
    for waiter in waiters {
        tokio::time::timeout(Duration::from_secs(20), waiter)
            .await
            .expect("every waiter gets its turn")
            .expect("joined");
    }
}
