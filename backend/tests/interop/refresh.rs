//! Test/Refresh and review (`countersign::connectors`) on a fresh database,
//! against the servers that others wrote.

use crate::{Server, everything, python, test_db::TestDb};
use countersign::{
    AppState, Config,
    connectors::{self, Auth, refresh::refresh},
    db,
};
use reqwest::Url;
use std::collections::BTreeMap;
use uuid::Uuid;

/// App state over a new database, with the guard letting `server`'s port
/// through, and a user in it.
async fn state_for(server: &Server) -> (AppState, Uuid) {
    countersign::telemetry::init_for_tests();
    let test_db = TestDb::migrated().await;
    let pool = db::connect(&test_db.app_url)
        .await
        .expect("connect as the app role");
    let mut config = Config::with_database_url(test_db.app_url);
    config.allow_private_connectors = server.allow();
    let state = AppState::new(pool, config).await.expect("app state");

    let user_id = Uuid::new_v4();
    let mut tx = db::service_tx(&state.db).await.expect("service tx");
    sqlx::query("insert into users (id, email, password_hash) values ($1, $2, 'not-a-hash')")
        .bind(user_id)
        .bind(format!("user-{}@example.org", user_id.simple()))
        .execute(&mut *tx)
        .await
        .expect("a user");
    sqlx::query("insert into profiles (user_id, display_name) values ($1, 'Interop')")
        .bind(user_id)
        .execute(&mut *tx)
        .await
        .expect("a profile");
    tx.commit().await.expect("commit");
    (state, user_id)
}

async fn review_states(state: &AppState, user_id: Uuid, id: Uuid) -> BTreeMap<String, String> {
    let mut tx = db::user_tx(&state.db, user_id).await.expect("user tx");
    let rows: Vec<(String, String)> = sqlx::query_as(
        "select name, review_state from connector_tools where connector_id = $1 and not removed",
    )
    .bind(id)
    .fetch_all(&mut *tx)
    .await
    .expect("tools");
    tx.commit().await.expect("commit");
    rows.into_iter().collect()
}

/// Adds `server` as a connector, refreshes, keeps `keep`, declines
/// `decline`, refreshes again; checks what was stored at each step.
async fn refresh_review_refresh(server: &Server, expected_tools: usize, keep: &str, decline: &str) {
    let (state, user_id) = state_for(server).await;
    let url: Url = server.mcp_url().parse().expect("URL");
    let id = connectors::create(&state.db, None, user_id, "Interop", &url, &Auth::None)
        .await
        .expect("create the connector");

    let first = refresh(&state, user_id, id).await.expect("first refresh");
    assert!(first.tools >= expected_tools, "{} tools", first.tools);
    let states = review_states(&state, user_id, id).await;
    assert_eq!(states.len(), first.tools, "every listed tool is stored");
    assert!(
        states.values().all(|s| s != "kept" && s != "declined"),
        "nothing is reviewed yet: {states:?}"
    );

    // Keeping names the digest the user saw.
    let mut tx = countersign::db::user_tx(&state.db, user_id)
        .await
        .expect("tx");
    let digest: String = sqlx::query_scalar(
        "select descriptor_digest from connector_tools where connector_id = $1 and name = $2",
    )
    .bind(id)
    .bind(keep)
    .fetch_one(&mut *tx)
    .await
    .expect("digest");
    tx.commit().await.expect("commit");
    connectors::review(
        &state.db,
        user_id,
        id,
        &[countersign_api::ReviewedTool::Seen {
            name: keep.to_owned(),
            descriptor_digest: digest,
        }],
        &[countersign_api::ReviewedTool::Name(decline.to_owned())],
    )
    .await
    .expect("review");
    let reviewed = review_states(&state, user_id, id).await;
    assert_eq!(reviewed[keep], "kept");
    assert_eq!(reviewed[decline], "declined");

    let second = refresh(&state, user_id, id).await.expect("second refresh");
    assert_eq!(second.protocol_version, first.protocol_version);
    assert_eq!(
        review_states(&state, user_id, id).await,
        reviewed,
        "an unchanged listing keeps every review state"
    );
}

#[tokio::test]
async fn refresh_stores_server_everything_tools_and_a_second_refresh_keeps_the_review() {
    let server = everything().await;
    refresh_review_refresh(&server, 10, "echo", "get-env").await;
}

#[tokio::test]
async fn refresh_stores_the_python_sdk_tools_and_a_second_refresh_keeps_the_review() {
    let server = python().await;
    refresh_review_refresh(&server, 3, "shout", "forget_note").await;
}
