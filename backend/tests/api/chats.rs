//! `/api/chats…`, `/api/models`, `/api/settings/provider-keys`.

use crate::helpers::{TestApp, new_client, spawn_app, spawn_app_with};
use reqwest::StatusCode;
use serde_json::{Value, json};

const KEY_HEX: &str = "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

/// A deleted row's children are found by an index on their foreign key:
/// without one, Postgres reads the child table whole for each deleted
/// parent, and a chat's deletion (its turns, then each turn's events and
/// messages) read every user's events once per turn: 15.4 s for a chat of
/// 2,000 turns among 158,000 events, 64 ms with the indexes (migration
/// `cascade_indexes`). Left out: the keys to `users` (a user is deleted
/// alone, so each table is read once) and `oauth_states.connector_id` (a
/// state lives ten minutes: the table stays small). Seen failing before
/// that migration, naming the four keys it indexes.
#[tokio::test]
async fn every_foreign_key_is_found_by_an_index() {
    let app = spawn_app().await;
    let mut su = app.superuser().await;
    let unindexed: Vec<String> = sqlx::query_scalar(
        "select c.conrelid::regclass::text || '.' || c.conname
           from pg_constraint c
          where c.contype = 'f' and c.connamespace = 'public'::regnamespace
            and c.confrelid <> 'public.users'::regclass
            and c.conname <> 'oauth_states_connector_id_fkey'
            and not exists (
                select 1 from pg_index i
                 where i.indrelid = c.conrelid
                   and (i.indkey::int2[])[0:cardinality(c.conkey) - 1] @> c.conkey
                   and (i.indkey::int2[])[0:cardinality(c.conkey) - 1] <@ c.conkey)
          order by 1",
    )
    .fetch_all(&mut su)
    .await
    .expect("catalog");
    assert_eq!(unindexed, Vec::<String>::new());
}

/// Every request body in the document is an object; serde alone would read
/// a struct from an array of its fields (schemathesis found `[null, null]`
/// answered 200 on `PATCH /api/chats/{id}` and `PUT /api/admin/policy`).
#[tokio::test]
async fn a_body_that_is_not_a_json_object_is_refused() {
    let app = spawn_app().await;
    app.signed_up_user().await;
    let chat = app.create_chat("offline/demo").await;
    for (method, path) in [
        (reqwest::Method::PATCH, format!("/api/chats/{chat}")),
        (reqwest::Method::PUT, "/api/admin/policy".to_owned()),
        (reqwest::Method::POST, "/api/chats".to_owned()),
    ] {
        for body in [json!([null, null]), json!(["Renamed"]), json!(7)] {
            let res = app.request(method.clone(), &path, Some(body.clone())).await;
            assert_eq!(
                res.status(),
                StatusCode::UNPROCESSABLE_ENTITY,
                "{method} {path} {body}"
            );
            let detail: Value = res.json().await.expect("JSON error");
            assert!(detail["detail"].is_string(), "{detail}");
        }
    }
    let now = app.get_json(&format!("/api/chats/{chat}")).await;
    assert_ne!(now["title"], "Renamed");
}

/// Postgres stores no `\0` in `text` or `jsonb`: a body holding one is a
/// 422, never a 500 (schemathesis found a message with one answered 500).
#[tokio::test]
async fn text_with_a_nul_character_is_refused_not_a_server_error() {
    let app = spawn_app().await;
    app.signed_up_user().await;
    let chat = app.create_chat("offline/demo").await;
    for (method, path, body) in [
        (
            reqwest::Method::POST,
            format!("/api/chats/{chat}/messages"),
            json!({"content": "hello\u{0}there"}),
        ),
        (
            reqwest::Method::PATCH,
            format!("/api/chats/{chat}"),
            json!({"title": "a\u{0}b"}),
        ),
        (
            reqwest::Method::POST,
            "/api/connectors".to_owned(),
            json!({"name": "x\u{0}", "url": "https://mcp.example.org/mcp"}),
        ),
    ] {
        let res = app.request(method.clone(), &path, Some(body)).await;
        assert_eq!(
            res.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "{method} {path}"
        );
    }
    let messages = app.get_json(&format!("/api/chats/{chat}")).await;
    assert_eq!(messages["messages"], json!([]), "{messages}");
}

#[tokio::test]
async fn chats_are_listed_newest_first_renamed_and_deleted() {
    let app = spawn_app().await;
    app.signed_up_user().await;
    let first = app.create_chat("offline/demo").await;
    let second = app.create_chat("offline/demo").await;

    let list = app.get_json("/api/chats").await;
    let ids: Vec<&str> = list
        .as_array()
        .expect("array")
        .iter()
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, vec![second.as_str(), first.as_str()], "newest first");

    let res = app
        .request(
            reqwest::Method::PATCH,
            &format!("/api/chats/{first}"),
            Some(json!({ "title": "Lease review" })),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let list = app.get_json("/api/chats").await;
    assert_eq!(list[0]["id"], first.as_str(), "a rename counts as use");
    assert_eq!(list[0]["title"], "Lease review");

    let res = app
        .request(
            reqwest::Method::DELETE,
            &format!("/api/chats/{first}"),
            None,
        )
        .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        app.get(&format!("/api/chats/{first}")).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.get_json("/api/chats")
            .await
            .as_array()
            .expect("array")
            .len(),
        1
    );
}

#[tokio::test]
async fn a_chat_refuses_unknown_models_and_bad_ids_with_json_errors() {
    let app = spawn_app().await;
    app.signed_up_user().await;
    let res = app.post("/api/chats", &json!({ "model": "gpt-4" })).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = res.json().await.expect("JSON");
    assert!(
        body["detail"]
            .as_str()
            .expect("detail")
            .contains("provider/model")
    );

    let res = app.get("/api/chats/not-a-uuid").await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let body: Value = res.json().await.expect("JSON");
    assert!(body["detail"].is_string());
}

#[tokio::test]
async fn another_users_chat_is_a_404_everywhere() {
    let app = spawn_app().await;
    app.signed_up_user().await;
    let chat = app.create_chat("offline/demo").await;
    app.send(&chat, "privileged matter").await;

    let other = TestApp {
        client: new_client(),
        csrf: Default::default(),
        ..app
    };
    other.signed_up_user().await;
    assert_eq!(
        other.get(&format!("/api/chats/{chat}")).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        other
            .get(&format!("/api/chats/{chat}/stream"))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    let res = other
        .post(
            &format!("/api/chats/{chat}/messages"),
            &json!({ "content": "hi" }),
        )
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert_eq!(other.get_json("/api/chats").await, json!([]));
}

#[tokio::test]
async fn the_title_defaults_to_the_start_of_the_first_message() {
    let app = spawn_app().await;
    app.signed_up_user().await;
    let chat = app.create_chat("offline/demo").await;
    let mut stream = app.stream(&chat, None).await;
    app.send(
        &chat,
        "Summarise the termination clauses of the Acme supply agreement, please, in detail",
    )
    .await;
    stream.until("turn_finished").await;
    app.send(&chat, "Second message").await;
    stream.until("turn_finished").await;
    let detail = app.get_json(&format!("/api/chats/{chat}")).await;
    let title = detail["title"].as_str().expect("title");
    assert!(
        title.starts_with("Summarise the termination clauses"),
        "{title}"
    );
    assert!(title.chars().count() <= 61, "{title}");
    let messages = detail["messages"].as_array().expect("messages");
    assert_eq!(
        messages.len(),
        4,
        "two turns, a question and an answer each"
    );
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["status"], "complete");
}

#[tokio::test]
async fn models_always_include_the_labelled_offline_demo() {
    let app = spawn_app().await;
    app.signed_up_user().await;
    let models = app.get_json("/api/models").await;
    let demo = models["models"]
        .as_array()
        .expect("models")
        .iter()
        .find(|m| m["id"] == "offline/demo")
        .expect("offline/demo listed");
    assert_eq!(demo["offline_demo"], true);
    assert!(demo["label"].as_str().expect("label").contains("not AI"));
}

#[tokio::test]
async fn a_chat_with_an_unconfigured_provider_fails_the_turn_with_an_actionable_error() {
    let app = spawn_app().await;
    app.signed_up_user().await;
    let chat = app.create_chat("anthropic/claude-sonnet-4-5").await;
    let mut stream = app.stream(&chat, None).await;
    app.send(&chat, "hello").await;
    let events = stream.until("turn_finished").await;
    let error = events
        .iter()
        .find(|(_, e)| e["type"] == "error")
        .expect("an error event");
    assert!(
        error.1["message"]
            .as_str()
            .expect("message")
            .contains("No API key is set for Anthropic")
    );
    assert_eq!(events.last().expect("finished").1["status"], "failed");
}

#[tokio::test]
async fn provider_keys_are_stored_encrypted_and_never_returned() {
    let app =
        spawn_app_with(|c| c.secret_key = Some(countersign::config::Secret::new(KEY_HEX))).await;
    let (user_id, _) = app.signed_up_user().await;
    let secret = "sk-ant-test-DO-NOT-LEAK-1234567890";
    let res = app
        .request(
            reqwest::Method::PUT,
            "/api/settings/provider-keys/anthropic",
            Some(json!({ "api_key": secret })),
        )
        .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);

    let status = app
        .get("/api/settings/provider-keys")
        .await
        .text()
        .await
        .expect("text");
    assert!(!status.contains(secret), "{status}");
    let status: Value = serde_json::from_str(&status).expect("JSON");
    assert_eq!(
        status[0],
        json!({ "provider": "anthropic", "is_set": true, "deployment_key": false })
    );
    assert_eq!(status[1]["is_set"], false);

    let mut su = app.superuser().await;
    let stored: String =
        sqlx::query_scalar("select p::text from provider_keys p where user_id = $1")
            .bind(user_id)
            .fetch_one(&mut su)
            .await
            .expect("row");
    assert!(
        !stored.contains(secret) && !stored.contains(&hex::encode(secret)),
        "{stored}"
    );

    // The key makes Anthropic models available.
    let models = app.get_json("/api/models").await;
    assert!(
        models["models"]
            .as_array()
            .expect("models")
            .iter()
            .any(|m| m["provider"] == "anthropic")
    );

    let res = app
        .request(
            reqwest::Method::DELETE,
            "/api/settings/provider-keys/anthropic",
            None,
        )
        .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        app.get_json("/api/settings/provider-keys").await[0]["is_set"],
        false
    );
}

#[tokio::test]
async fn without_a_secret_key_keys_cannot_be_stored() {
    let app = spawn_app().await;
    app.signed_up_user().await;
    let res = app
        .request(
            reqwest::Method::PUT,
            "/api/settings/provider-keys/openai",
            Some(json!({ "api_key": "sk-x" })),
        )
        .await;
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = res.json().await.expect("JSON");
    // Says why, in words for the user: no setting's name (DESIGN §9).
    let detail = body["detail"].as_str().expect("detail");
    assert!(detail.contains("ask your administrator"), "{detail}");
    assert!(!detail.contains("COUNTERSIGN_"), "{detail}");
}
