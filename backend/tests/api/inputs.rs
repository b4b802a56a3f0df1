//! Elicitation in the product (DESIGN §6a): the demo server's `file_note`
//! (a form) and `confirm_identity` (a URL) ask while an approved call
//! runs; the question is a card in the chat, answered over HTTP, and the
//! server receives exactly the answer — in both protocol eras (2026-07-28's
//! `InputRequiredResult` retry and 2025-11-25's `elicitation/create` on
//! the call's stream).

use crate::helpers::{Setup, SseReader, TestApp, decide, ledger, propose, setup, text_of};
use countersign_api::PendingCallStatus;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

/// Approves a `tool` call and waits for its server's question.
async fn asked(s: &Setup, stream: &mut SseReader, tool: &str, arguments: Value) -> (Value, Value) {
    let (_, card) = propose(s, stream, tool, arguments).await;
    assert_eq!(
        decide(&s.app, &card, "approve").await.status(),
        StatusCode::OK
    );
    let events = stream.until("mcp_input_required").await;
    let question = events.last().expect("asked").1.clone();
    (card, question)
}

async fn answer(app: &TestApp, question: &Value, body: Value) -> reqwest::Response {
    let id = question["id"].as_str().expect("id");
    app.post(&format!("/api/mcp-input-requests/{id}"), &body)
        .await
}

/// The stored row's status and content, read as the superuser.
async fn stored(app: &TestApp, id: &str) -> (String, Option<Value>, Option<String>) {
    let mut db = app.superuser().await;
    sqlx::query_as(
        "select status, content, request_state from mcp_input_requests where id = $1::uuid",
    )
    .bind(id)
    .fetch_one(&mut db)
    .await
    .expect("the row")
}

fn file_note_question() -> Value {
    countersign_demo_mcp::tools::ask::file_note_schema()
}

/// The whole form journey: the card's evidence, the live list, the answer
/// at the server, the same approved call (one card, one execution).
async fn a_form_answer_reaches_the_server(s: Setup) {
    let mut stream = s.app.stream(&s.chat, None).await;
    let (card, question) = asked(
        &s,
        &mut stream,
        "file_note",
        json!({"title": "Engagement letter"}),
    )
    .await;
    assert_eq!(question["connector_name"], "Demo");
    assert_eq!(question["tool_name"], "file_note");
    assert_eq!(question["call_id"], card["call_id"]);
    assert_eq!(question["mode"], "form");
    assert_eq!(
        question["message"],
        "Which matter should \"Engagement letter\" be filed under?"
    );
    assert_eq!(question["requested_schema"], file_note_question());
    assert!(question.get("url").is_none());
    assert!(
        question["decide_by"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    assert_eq!(
        s.demo.calls().total,
        0,
        "nothing is filed before the answer"
    );

    // A reload (or a second tab) finds it.
    let live = s.app.get_json("/api/mcp-input-requests").await;
    assert_eq!(live.as_array().map(Vec::len), Some(1), "{live}");
    assert_eq!(live[0]["id"], question["id"]);
    assert_eq!(live[0]["chat_id"], s.chat.as_str());
    assert_eq!(live[0]["decide_by"], question["decide_by"]);
    assert!(live[0]["decide_in_secs"].as_f64().is_some_and(|t| t > 60.0));
    // The list across chats names it, in short.
    let waiting = s.app.get_array("/api/waiting").await;
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert_eq!(waiting[0]["kind"], "input");
    assert_eq!(waiting[0]["id"], question["id"]);
    assert_eq!(waiting[0]["decide_by"], question["decide_by"]);
    assert!(waiting[0].get("message").is_none(), "{waiting:?}");

    let res = answer(
        &s.app,
        &question,
        json!({"action": "accept", "content":
            {"matter": "2024-0117", "confidentiality": "privileged", "notify_team": true}}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.json::<Value>().await.expect("JSON"),
        json!({"status": "accepted"})
    );

    let events = stream.until("turn_finished").await;
    let resolved = events
        .iter()
        .find(|(_, e)| e["type"] == "mcp_input_resolved")
        .expect("resolved");
    assert_eq!(resolved.1["id"], question["id"]);
    assert_eq!(resolved.1["status"], "accepted");
    let ran = events
        .iter()
        .find(|(_, e)| e["type"] == "mcp_tool_call")
        .expect("ran");
    assert_eq!(ran.1["status"], "ok", "{}", ran.1);
    assert_eq!(ran.1["id"], card["id"], "the same approved call");
    assert!(
        !events
            .iter()
            .any(|(_, e)| e["type"] == "mcp_confirmation_required"),
        "no second approval"
    );
    assert!(
        text_of(&events).contains(
            "Filed \"Engagement letter\" under matter 2024-0117 as privileged; the team was told."
        ),
        "{}",
        text_of(&events)
    );
    assert_eq!(s.demo.calls().count("file_note"), 1);
    assert_eq!(
        ledger(&s.app, card["id"].as_str().expect("id")).await.0,
        PendingCallStatus::Executed
    );
    assert_eq!(s.app.get_json("/api/mcp-input-requests").await, json!([]));

    // A reload shows the finished turn with its question and how it ended
    // (the web app draws the card folded).
    let detail = s.app.get_json(&format!("/api/chats/{}", s.chat)).await;
    let kinds: Vec<&str> = detail["turns"][0]["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["type"].as_str().expect("type"))
        .collect();
    assert_eq!(
        kinds,
        [
            "tool_call",
            "mcp_confirmation_required",
            "mcp_confirmation_resolved",
            "mcp_input_required",
            "mcp_input_resolved",
            "mcp_tool_call"
        ],
        "{detail}"
    );
}

#[tokio::test]
async fn a_form_answer_reaches_the_server_through_an_input_required_result() {
    let mut s = setup(|_| {}).await;
    let question_id = {
        // 2026-07-28: the stored requestState is the server's, opaque.
        let mut stream = s.app.stream(&s.chat, None).await;
        let (_, question) = asked(&s, &mut stream, "file_note", json!({"title": "t"})).await;
        let id = question["id"].as_str().expect("id").to_owned();
        let (status, _, request_state) = stored(&s.app, &id).await;
        assert_eq!(status, "pending");
        assert!(request_state.is_some_and(|state| !state.is_empty()));
        let res = answer(&s.app, &question, json!({"action": "cancel"})).await;
        assert_eq!(res.status(), StatusCode::OK);
        let events = stream.until("turn_finished").await;
        assert!(text_of(&events).contains("Not filed: the user cancelled."));
        id
    };
    assert_eq!(stored(&s.app, &question_id).await.0, "cancelled");
    s.demo.state().reset_calls();
    s.chat = s.app.create_chat("offline/demo").await;
    a_form_answer_reaches_the_server(s).await;
}

#[tokio::test]
async fn a_form_answer_reaches_a_legacy_server_on_the_calls_stream_and_its_timeout_waits() {
    // One second for the call: only the pause while the user is asked lets
    // an answer given after two seconds through.
    let s = setup(|c| c.mcp_timeout_secs = 1).await;
    s.demo.state().set_legacy_only(true);
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, question) = asked(&s, &mut stream, "file_note", json!({"title": "Lease"})).await;
    let id = question["id"].as_str().expect("id").to_owned();
    assert_eq!(
        stored(&s.app, &id).await.2,
        None,
        "no requestState in 2025-11-25"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let res = answer(
        &s.app,
        &question,
        json!({"action": "accept", "content": {"matter": "7"}}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let events = stream.until("turn_finished").await;
    assert!(
        text_of(&events).contains("Filed \"Lease\" under matter 7 as privileged; nobody was told."),
        "the server's default is not sent for the user: {}",
        text_of(&events)
    );
    assert_eq!(
        stored(&s.app, &id).await.1,
        Some(json!({"matter": "7"})),
        "exactly what the user sent"
    );
}

#[tokio::test]
async fn a_url_request_shows_its_host_and_a_decline_ends_the_call_as_the_server_answers() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, question) = asked(
        &s,
        &mut stream,
        "confirm_identity",
        json!({"document": "Privileged memo"}),
    )
    .await;
    assert_eq!(question["mode"], "url");
    assert_eq!(
        question["message"],
        "Confirm it is you before \"Privileged memo\" is shared."
    );
    let url = question["url"].as_str().expect("url");
    assert!(
        url.starts_with(&format!(
            "http://{}/confirm-identity?request=",
            s.demo.addr()
        )),
        "{url}"
    );
    assert_eq!(question["url_host"], s.demo.addr().to_string());
    assert!(question.get("requested_schema").is_none());

    // URL mode takes no content, whatever is sent.
    let res = answer(
        &s.app,
        &question,
        json!({"action": "decline", "content": {"anything": 1}}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.json::<Value>().await.expect("JSON"),
        json!({"status": "declined"})
    );
    let events = stream.until("turn_finished").await;
    assert!(
        events
            .iter()
            .any(|(_, e)| e["type"] == "mcp_input_resolved" && e["status"] == "declined")
    );
    assert!(
        text_of(&events).contains("Not shared: the user declined to confirm their identity."),
        "{}",
        text_of(&events)
    );
    let id = question["id"].as_str().expect("id");
    assert_eq!(stored(&s.app, id).await.1, None);
}

#[tokio::test]
async fn foreign_invalid_replayed_and_unknown_answers_change_nothing() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, question) = asked(&s, &mut stream, "file_note", json!({"title": "t"})).await;
    let id = question["id"].as_str().expect("id").to_owned();

    // Another user: 404, and nothing of it in their list.
    let other = s.app.at(&s.app.base);
    other.signed_up_user().await;
    let accept = json!({"action": "accept", "content": {"matter": "1"}});
    assert_eq!(
        answer(&other, &question, accept.clone()).await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(other.get_json("/api/mcp-input-requests").await, json!([]));

    // Content that does not fit the form: 422 naming the field; nothing
    // answered.
    for (content, detail) in [
        (json!({}), "\"Matter number\" is required."),
        (
            json!({"matter": ""}),
            "\"Matter number\" must be at least 1 characters long.",
        ),
        (
            json!({"matter": "1", "confidentiality": "secret"}),
            "\"Confidentiality\" must be one of the choices offered.",
        ),
        (
            json!({"matter": "1", "notify_team": "yes"}),
            "\"Tell the matter team\" must be yes or no.",
        ),
        (
            json!({"matter": "1", "password": "hunter2"}),
            "\"password\" is not a field of this form.",
        ),
    ] {
        let res = answer(
            &s.app,
            &question,
            json!({"action": "accept", "content": content}),
        )
        .await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{content}");
        assert_eq!(
            res.json::<Value>().await.expect("JSON")["detail"],
            detail,
            "{content}"
        );
    }
    let res = answer(&s.app, &question, json!({"action": "maybe"})).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(stored(&s.app, &id).await.0, "pending");
    let unknown = json!({"id": uuid::Uuid::new_v4().to_string()});
    assert_eq!(
        answer(&s.app, &unknown, accept.clone()).await.status(),
        StatusCode::NOT_FOUND
    );

    assert_eq!(
        answer(&s.app, &question, accept.clone()).await.status(),
        StatusCode::OK
    );
    // A replay (or the other tab): 404, the first answer stands.
    assert_eq!(
        answer(&s.app, &question, json!({"action": "decline"}))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    stream.until("turn_finished").await;
    assert_eq!(stored(&s.app, &id).await.0, "accepted");
    assert_eq!(s.demo.calls().count("file_note"), 1);
}

#[tokio::test]
async fn an_unanswered_request_expires_the_server_hears_cancel_and_a_late_answer_gets_410() {
    let s = setup(|c| c.approval_wait_secs = 1).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "file_note", json!({"title": "t"})).await;
    assert_eq!(
        decide(&s.app, &card, "approve").await.status(),
        StatusCode::OK
    );
    let events = stream.until("turn_finished").await;
    let question = events
        .iter()
        .find(|(_, e)| e["type"] == "mcp_input_required")
        .expect("asked")
        .1
        .clone();
    assert!(
        events
            .iter()
            .any(|(_, e)| e["type"] == "mcp_input_resolved" && e["status"] == "expired")
    );
    assert!(text_of(&events).contains("Not filed: the user cancelled."));
    let res = answer(
        &s.app,
        &question,
        json!({"action": "accept", "content": {"matter": "1"}}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::GONE);
    assert_eq!(
        res.json::<Value>().await.expect("JSON")["detail"],
        "This input request has expired."
    );
}

#[tokio::test]
async fn stop_while_the_server_asks_cancels_the_request() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (card, question) = asked(&s, &mut stream, "file_note", json!({"title": "t"})).await;
    let turn = question["turn_id"].as_str().expect("turn");
    let res = s
        .app
        .post(
            &format!("/api/chats/{}/turns/{turn}/cancel", s.chat),
            &json!({}),
        )
        .await;
    assert!(res.status().is_success(), "{}", res.status());
    let events = stream.until("turn_finished").await;
    assert!(
        events
            .iter()
            .any(|(_, e)| e["type"] == "mcp_input_resolved" && e["status"] == "cancelled"),
        "{events:?}"
    );
    let id = question["id"].as_str().expect("id");
    assert_eq!(stored(&s.app, id).await.0, "cancelled");
    assert_eq!(
        answer(&s.app, &question, json!({"action": "decline"}))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    // The approved call ran and heard "cancel": nothing was filed.
    assert_eq!(
        ledger(&s.app, card["id"].as_str().expect("id")).await.0,
        PendingCallStatus::Executed
    );
}

#[tokio::test]
async fn the_input_requests_are_unreadable_and_unwritable_as_anon_and_authenticated() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, question) = asked(&s, &mut stream, "file_note", json!({"title": "t"})).await;
    for role in ["authenticated", "anon"] {
        for statement in [
            "select * from mcp_input_requests",
            "update mcp_input_requests set status = 'accepted'",
            "delete from mcp_input_requests",
            "insert into mcp_input_requests (id) values (gen_random_uuid())",
        ] {
            let mut db = s.app.superuser().await;
            let mut tx = sqlx::Connection::begin(&mut db).await.expect("tx");
            sqlx::query(
                "select set_config('role', $1, true), set_config('countersign.user_id', $2, true)",
            )
            .bind(role)
            .bind(s.user.to_string())
            .execute(&mut *tx)
            .await
            .expect("set role");
            let err = sqlx::query(statement)
                .execute(&mut *tx)
                .await
                .expect_err("must be refused");
            assert_eq!(
                err.as_database_error().and_then(|e| e.code()).as_deref(),
                Some("42501"),
                "{role}: {statement}: {err}"
            );
        }
    }
    let id = question["id"].as_str().expect("id");
    assert_eq!(stored(&s.app, id).await.0, "pending");
}

/// Issue 44, item 11: the server says which fields of a form ask for a
/// secret, on the event and in the live list; the card warns and names
/// them. The demo's form for a note titled for the portal also asks for
/// the portal's API key.
#[tokio::test]
async fn a_form_that_asks_for_a_secret_names_the_field_on_the_event_and_in_the_list() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, plain) = asked(
        &s,
        &mut stream,
        "file_note",
        json!({"title": "Engagement letter"}),
    )
    .await;
    assert!(plain.get("secret_fields").is_none(), "{plain}");
    let res = answer(&s.app, &plain, json!({"action": "decline"})).await;
    assert_eq!(res.status(), StatusCode::OK);
    stream.until("turn_finished").await;

    let (_, question) = asked(
        &s,
        &mut stream,
        "file_note",
        json!({"title": "Docketing portal filing"}),
    )
    .await;
    assert_eq!(
        question["secret_fields"],
        json!(["portal_key"]),
        "{question}"
    );
    let live = s.app.get_json("/api/mcp-input-requests").await;
    assert_eq!(live[0]["secret_fields"], json!(["portal_key"]), "{live}");
    let res = answer(&s.app, &question, json!({"action": "cancel"})).await;
    assert_eq!(res.status(), StatusCode::OK);
    stream.until("turn_finished").await;
}

/// A decided input card keeps its story (issue 45 item 6): the resolved
/// event carries what the user sent, a secret field's value masked (the
/// event is kept in the chat), and when; the call's `duration_ms` is its
/// own run time, the time the question waited for the user apart in
/// `waited_ms`.
#[tokio::test]
async fn an_answer_is_kept_with_secrets_masked_and_the_wait_is_not_the_tools_time() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, question) = asked(
        &s,
        &mut stream,
        "file_note",
        json!({"title": "Docketing portal filing"}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let secret = "pk-live-7f3a9c";
    let res = answer(
        &s.app,
        &question,
        json!({"action": "accept", "content": {"matter": "2026-114", "portal_key": secret}}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let events = stream.until("turn_finished").await;
    let resolved = &events
        .iter()
        .find(|(_, e)| e["type"] == "mcp_input_resolved")
        .expect("resolved")
        .1;
    assert_eq!(resolved["status"], "accepted");
    assert_eq!(
        resolved["answers"],
        json!({"matter": "2026-114", "portal_key": countersign::inputs::MASKED}),
        "{resolved}"
    );
    assert!(
        resolved["answered_at"]
            .as_str()
            .is_some_and(|at| at.ends_with('Z'))
    );
    let ran = &events
        .iter()
        .find(|(_, e)| e["type"] == "mcp_tool_call")
        .expect("ran")
        .1;
    let waited = ran["waited_ms"].as_u64().expect("waited_ms");
    let own = ran["duration_ms"].as_u64().expect("duration_ms");
    assert!(waited >= 1400, "the question waited {waited} ms");
    assert!(
        own < waited,
        "the tool's own time ({own} ms) leaves the wait out"
    );
    // The secret is in no event the chat keeps.
    let detail = s.app.get_json(&format!("/api/chats/{}", s.chat)).await;
    let kept: Vec<String> = events.iter().map(|(_, e)| e.to_string()).collect();
    assert!(!kept.iter().any(|e| e.contains(secret)), "{kept:?}");
    assert!(!detail.to_string().contains(secret));
}
