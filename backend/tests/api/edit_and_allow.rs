//! "Edit and allow" (issue 46 item 1; docs/design.md §6.3): the user
//! approves a call with arguments of their own. What runs is exactly the
//! edit, once; an edit that does not fit the reviewed schema, comes with
//! a stale digest, a deny or a wider grant decides nothing; a flagged call
//! stays flagged; the model and the log are told.

use crate::helpers::{decide, decide_with, event_of, ledger, propose, setup, text_of, trust};
use countersign_api::PendingCallStatus;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// SHA-256 of `value`'s RFC 8785 canonical JSON, as the server digests.
fn digest(value: &Value) -> String {
    countersign::digest::sha256_hex(countersign::digest::canonical(value))
}

#[tokio::test]
async fn an_edited_call_runs_once_with_exactly_the_edited_arguments() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(
        &s,
        &mut stream,
        "add_note",
        json!({"title": "Wire", "body": "Wire $50,000 to account 12345678"}),
    )
    .await;
    // The card carries the reviewed input schema the edit is checked by.
    assert_eq!(
        card["tool_input_schema"]["required"],
        json!(["title", "body"])
    );
    let edited = json!({"title": "Wire", "body": "Call the client before any transfer."});
    let res = decide_with(
        &s.app,
        &card,
        json!({"decision": "approve", "arguments_digest": card["arguments_digest"],
               "edited_arguments": edited}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.expect("JSON");
    assert_eq!(body["status"], "approved");
    assert_eq!(body["arguments_digest"], digest(&edited));
    let events = stream.until("turn_finished").await;

    // The server received the edit, exactly, once; never the proposal.
    let calls = s.demo.calls();
    assert_eq!(calls.by_tool.get("add_note"), Some(&1));
    let ran = calls
        .calls
        .iter()
        .find(|c| c.tool == "add_note")
        .expect("the call");
    assert_eq!(Value::Object(ran.arguments.clone()), edited);

    // Every tab's card shows what ran; the model reads that it was edited.
    let resolved = event_of(&events, "mcp_confirmation_resolved");
    assert_eq!(resolved["decision"], "approved");
    assert_eq!(resolved["grant"], "once");
    assert_eq!(resolved["edited_arguments"], edited);
    let ran = event_of(&events, "mcp_tool_call");
    assert_eq!(ran["status"], "ok");
    let text = text_of(&events);
    assert!(
        text.contains("The user edited the arguments before allowing this call"),
        "the model's tool result says so: {text}"
    );

    // The ledger and the chain keep both digests and who edited.
    let id = card["id"].as_str().expect("id");
    let mut db = s.app.superuser().await;
    let (shown, now, editor): (Option<String>, String, Option<uuid::Uuid>) = sqlx::query_as(
        "select shown_arguments_digest, arguments_digest, edited_by from mcp_pending_calls where id = $1::uuid",
    )
    .bind(id)
    .fetch_one(&mut db)
    .await
    .expect("ledger row");
    assert_eq!(shown.as_deref(), card["arguments_digest"].as_str());
    assert_eq!(now, digest(&edited));
    assert_eq!(editor, Some(s.user));
    let log = s.app.get_array("/api/activity").await;
    let decided = log
        .iter()
        .find(|e| e["kind"] == "decided" && e["call_ref"] == id)
        .expect("the decided entry");
    assert_eq!(decided["arguments_digest"], digest(&edited));
    assert_eq!(decided["shown_arguments_digest"], card["arguments_digest"]);
    assert_eq!(decided["decision"], "approved");
    assert_eq!(ledger(&s.app, id).await.0, PendingCallStatus::Executed);
}

#[tokio::test]
async fn an_edit_that_does_not_fit_or_comes_late_or_widens_decides_nothing() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(
        &s,
        &mut stream,
        "add_note",
        json!({"title": "Filing", "body": "Routine."}),
    )
    .await;
    let id = card["id"].as_str().expect("id");
    let edit = |extra: Value| {
        let mut body = json!({"decision": "approve", "arguments_digest": card["arguments_digest"],
                              "edited_arguments": {"title": "Filing", "body": "Edited."}});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        body
    };
    let refused = |body: Value| {
        let app = &s.app;
        let card = &card;
        async move {
            let res = decide_with(app, card, body).await;
            let status = res.status();
            let detail = res.json::<Value>().await.expect("JSON")["detail"].clone();
            (status, detail.as_str().unwrap_or_default().to_owned())
        }
    };

    // Against the reviewed schema: a missing required field, a wrong type,
    // an empty title (minLength 1) — each named, nothing decided.
    for (edited, at) in [
        (json!({"title": "Filing"}), "at /:"),
        (json!({"title": 7, "body": "b"}), "at /title:"),
        (json!({"title": "", "body": "b"}), "at /title:"),
    ] {
        let (status, detail) = refused(edit(json!({"edited_arguments": edited}))).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{detail}");
        assert!(detail.contains(at), "{detail}");
    }
    let (status, detail) = refused(edit(json!({"edited_arguments": ["a"]}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(detail, "edited_arguments must be a JSON object.");
    // Numbers that cannot be carried exactly.
    let inexact: Value = serde_json::from_str(
        r#"{"decision": "approve", "arguments_digest": "__", "edited_arguments": {"title": "t", "body": "b", "n": 9007199254740993}}"#
            .replace("__", card["arguments_digest"].as_str().expect("digest"))
            .as_str(),
    )
    .expect("JSON");
    let (status, detail) = refused(inexact).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(detail.contains("cannot be carried exactly"), "{detail}");
    // Only with an approve, and only once.
    let (status, _) = refused(edit(json!({"decision": "deny"}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    for grant in ["turn", "always"] {
        let (status, detail) = refused(edit(json!({"grant": grant}))).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{grant}");
        assert!(detail.contains("once"), "{detail}");
    }
    // A stale digest: 409.
    let (status, _) = refused(edit(json!({"arguments_digest": "0".repeat(64)}))).await;
    assert_eq!(status, StatusCode::CONFLICT);

    // Nothing of it was decided or ran; the card still waits.
    assert_eq!(ledger(&s.app, id).await.0, PendingCallStatus::Pending);
    assert_eq!(s.demo.calls().total, 0);
    assert_eq!(decide(&s.app, &card, "deny").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;
    assert_eq!(s.demo.calls().total, 0);
    // Decided: an edit is a replay now.
    let (status, _) = refused(edit(json!({}))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_edit_cannot_unflag_a_flagged_call() {
    // The offline model copies the search's result into an echo: a
    // flagged flow (search_notes runs unasked under trust).
    const COPY: &str = r#"use demo__search_notes with {"query": "lease"} then use demo__echo with {"text": "FYI {{result}}"}"#;
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    trust(&s).await;
    s.app.send(&s.chat, COPY).await;
    let events = stream.until("mcp_confirmation_required").await;
    let card = events.last().expect("the flagged card").1.clone();
    assert_eq!(card["tool_name"], "echo");
    assert!(
        card["provenance"]["flows"]
            .as_array()
            .is_some_and(|f| !f.is_empty()),
        "flagged: {card}"
    );
    // Only "Allow once" is offered for a flagged call, and an edit to
    // harmless text is still recorded as the flagged call it was.
    let edited = json!({"text": "Nothing from the notes."});
    let res = decide_with(
        &s.app,
        &card,
        json!({"decision": "approve", "arguments_digest": card["arguments_digest"],
               "edited_arguments": edited}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    stream.until("turn_finished").await;
    let ran = s.demo.calls();
    let echo = ran
        .calls
        .iter()
        .find(|c| c.tool == "echo")
        .expect("the echo ran");
    assert_eq!(Value::Object(echo.arguments.clone()), edited);
    let id = card["id"].as_str().expect("id");
    let log = s.app.get_array("/api/activity?flagged=true").await;
    let decided = log
        .iter()
        .find(|e| e["kind"] == "decided" && e["call_ref"] == id)
        .expect("still a flagged call in the log");
    assert_eq!(decided["flagged"], true);
    assert!(decided["flows"].as_array().is_some_and(|f| !f.is_empty()));
    assert_eq!(decided["shown_arguments_digest"], card["arguments_digest"]);
}
