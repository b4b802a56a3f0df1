//! The gate and the approval ledger end to end (DESIGN §5, §6): the
//! offline model proposes calls to the demo MCP server's tools, the turn
//! waits on the ledger, decisions come over HTTP, and every execution is
//! counted by the demo server itself.

use crate::helpers::{
    TestApp, decide, decide_with, event_of, ledger, propose, second_instance, setup, setup_custom,
    state_of, text_of,
};
use countersign::{approvals, turns::EMPTY_RESPONSE};
use countersign_api::PendingCallStatus;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::{sync::Arc, time::Duration};
use tokio::sync::{Mutex, mpsc};
use uuid::Uuid;

fn sha256_hex(s: &str) -> String {
    countersign::digest::sha256_hex(s)
}

#[tokio::test]
async fn allow_once_runs_the_exact_call_once_and_the_chat_and_ledger_agree() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "search_notes", json!({"query": "lease"})).await;

    // The card carries the stored evidence.
    assert_eq!(card["connector_id"], s.connector.as_str());
    assert_eq!(card["connector_name"], "Demo");
    assert_eq!(card["tool_name"], "search_notes");
    assert_eq!(card["arguments"], json!({"query": "lease"}));
    assert_eq!(card["arguments_json"], "{\n  \"query\": \"lease\"\n}");
    assert_eq!(
        card["arguments_digest"],
        sha256_hex(r#"{"query":"lease"}"#),
        "SHA-256 of the JCS bytes"
    );
    assert_eq!(card["destination"], s.demo.addr().to_string());
    assert_eq!(card["reason"], "every tool call asks for your approval");
    assert!(
        card["expires_at"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    assert!(!card["call_id"].as_str().unwrap_or_default().is_empty());
    // The card counts down to `decide_by`: when the turn stops waiting
    // (COUNTERSIGN_APPROVAL_WAIT_SECS, 90 s), 30 s before the 120 s expiry.
    let at = |key: &str| {
        time::OffsetDateTime::parse(
            card[key].as_str().expect(key),
            &time::format_description::well_known::Rfc3339,
        )
        .expect("RFC 3339")
    };
    assert_eq!(
        at("expires_at") - at("decide_by"),
        time::Duration::seconds(30)
    );
    assert_eq!(s.demo.calls().total, 0, "nothing runs before the decision");
    // What the reviewed descriptor says, for the card.
    assert_eq!(card["tool_title"], "Search notes");
    assert!(
        card["tool_description"]
            .as_str()
            .is_some_and(|d| d.starts_with("Searches the demo notebook")),
        "{card}"
    );
    assert_eq!(
        card["risk"],
        json!({"risky": false, "flags": ["read_only", "stays_inside"]})
    );

    let live = s.app.get_json("/api/mcp-pending-calls").await;
    assert_eq!(live.as_array().map(Vec::len), Some(1));
    assert_eq!(live[0]["id"], card["id"]);
    assert_eq!(live[0]["chat_id"], s.chat.as_str());
    assert!(
        live[0]["expires_in_secs"]
            .as_f64()
            .is_some_and(|t| t > 100.0)
    );
    // The list across chats: one short row, without the arguments.
    let waiting = s.app.get_array("/api/waiting").await;
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert_eq!(waiting[0]["kind"], "approval");
    assert_eq!(waiting[0]["id"], card["id"]);
    assert_eq!(waiting[0]["chat_id"], s.chat.as_str());
    assert_eq!(waiting[0]["tool_name"], "search_notes");
    assert_eq!(waiting[0]["decide_by"], live[0]["decide_by"]);
    assert!(waiting[0].get("arguments").is_none(), "{waiting:?}");
    assert_eq!(live[0]["decide_by"], card["decide_by"]);
    assert!(
        live[0]["decide_in_secs"]
            .as_f64()
            .is_some_and(|t| t > 70.0 && t <= 90.0),
        "{}",
        live[0]
    );

    let res = decide(&s.app, &card, "approve").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.json::<Value>().await.expect("JSON"),
        json!({"status": "approved"})
    );

    let events = stream.until("turn_finished").await;
    let resolved = events
        .iter()
        .find(|(_, e)| e["type"] == "mcp_confirmation_resolved")
        .expect("resolved");
    assert_eq!(resolved.1["id"], card["id"]);
    assert_eq!(resolved.1["decision"], "approved");
    assert_eq!(resolved.1["grant"], "once", "{}", resolved.1);
    let ran = event_of(&events, "mcp_tool_call");
    assert_eq!(ran["id"], card["id"]);
    assert_eq!(ran["status"], "ok", "{ran}");
    assert_eq!(ran["connector_name"], "Demo");
    assert_eq!(ran["tool_name"], "search_notes");
    assert!(ran["duration_ms"].is_u64());
    // What it returned, for people to read: the text the model got.
    let shown = ran["result"].as_str().expect("result");
    assert!(shown.contains("lease"), "{ran}");
    assert_eq!(ran["result_chars"], json!(shown.chars().count()));
    assert!(
        !events.iter().any(|(_, e)| e["type"] == "tool_result"),
        "MCP calls report as mcp_tool_call"
    );
    assert!(
        text_of(&events).contains("returned"),
        "{}",
        text_of(&events)
    );

    let log = s.demo.calls();
    assert_eq!(log.count("search_notes"), 1);
    assert_eq!(
        log.calls[0].arguments,
        json!({"query": "lease"})
            .as_object()
            .cloned()
            .expect("object")
    );
    assert_eq!(
        ledger(&s.app, card["id"].as_str().expect("id")).await.0,
        PendingCallStatus::Executed
    );
    assert_eq!(s.app.get_json("/api/mcp-pending-calls").await, json!([]));
}

#[tokio::test]
async fn foreign_replayed_mismatched_and_unknown_decisions_change_nothing() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "search_notes", json!({"query": "lease"})).await;
    let id = card["id"].as_str().expect("id").to_owned();

    // Another user: 404, as for an unknown id.
    let other = s.app.at(&s.app.base);
    other.signed_up_user().await;
    assert_eq!(
        decide(&other, &card, "approve").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(other.get_json("/api/mcp-pending-calls").await, json!([]));
    assert_eq!(other.get_json("/api/waiting").await, json!([]));
    let unknown =
        json!({"id": Uuid::new_v4().to_string(), "arguments_digest": card["arguments_digest"]});
    assert_eq!(
        decide(&s.app, &unknown, "approve").await.status(),
        StatusCode::NOT_FOUND
    );

    // A digest that is not the stored arguments': 409, nothing decided.
    let res = decide_with(
        &s.app,
        &card,
        json!({"decision": "approve", "arguments_digest": sha256_hex(r#"{"query":"other"}"#)}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    assert_eq!(ledger(&s.app, &id).await.0, PendingCallStatus::Pending);

    // Nonsense.
    for (body, why) in [
        (
            json!({"decision": "approve", "grant": "forever", "arguments_digest": card["arguments_digest"]}),
            "grant",
        ),
        (
            json!({"decision": "maybe", "arguments_digest": card["arguments_digest"]}),
            "decision",
        ),
        (
            json!({"decision": "approve", "arguments_digest": "zz"}),
            "digest shape",
        ),
    ] {
        let res = decide_with(&s.app, &card, body).await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{why}");
    }
    assert_eq!(ledger(&s.app, &id).await.0, PendingCallStatus::Pending);

    assert_eq!(
        decide(&s.app, &card, "approve").await.status(),
        StatusCode::OK
    );
    // A replay, in either direction: 404.
    assert_eq!(
        decide(&s.app, &card, "approve").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        decide(&s.app, &card, "deny").await.status(),
        StatusCode::NOT_FOUND
    );
    stream.until("turn_finished").await;
    assert_eq!(s.demo.calls().count("search_notes"), 1);
}

#[tokio::test]
async fn fifty_concurrent_approvals_give_one_200_and_one_execution_at_the_server() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(
        &s,
        &mut stream,
        "add_note",
        json!({"title": "Lease", "body": "Renewal due"}),
    )
    .await;
    // The same session in fifty requests at once.
    let decisions = (0..50).map(|_| decide(&s.app, &card, "approve"));
    let responses = futures_util::future::join_all(decisions).await;
    let mut ok = 0;
    for response in responses {
        match response.status() {
            StatusCode::OK => ok += 1,
            StatusCode::NOT_FOUND => {}
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(ok, 1, "exactly one decision wins");
    stream.until("turn_finished").await;
    let log = s.demo.calls();
    assert_eq!(log.count("add_note"), 1, "executed once at the MCP server");
    assert_eq!(log.total, 1);
}

#[tokio::test]
async fn decline_never_contacts_the_server_and_the_chat_goes_on() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "delete_note", json!({"id": "note-2"})).await;
    let res = decide(&s.app, &card, "deny").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.json::<Value>().await.expect("JSON"),
        json!({"status": "denied"})
    );
    let events = stream.until("turn_finished").await;
    let resolved = events
        .iter()
        .find(|(_, e)| e["type"] == "mcp_confirmation_resolved")
        .expect("resolved");
    assert_eq!(resolved.1["decision"], "denied");
    assert!(!events.iter().any(|(_, e)| e["type"] == "mcp_tool_call"));
    // The model got the declined result, and said so.
    let text = text_of(&events);
    assert!(text.contains("The user declined this tool call."), "{text}");
    assert_eq!(events.last().expect("end").1["status"], "done");
    assert_eq!(
        s.demo.calls().total,
        0,
        "the MCP server was never contacted for a call"
    );
    assert_eq!(
        ledger(&s.app, card["id"].as_str().expect("id")).await.0,
        PendingCallStatus::Denied
    );

    // The next message works, without an "empty response".
    s.app.send(&s.chat, "Thanks, that is all").await;
    let next = stream.until("turn_finished").await;
    assert_eq!(next.last().expect("end").1["status"], "done");
    assert!(!text_of(&next).is_empty());
    let detail = s.app.get_json(&format!("/api/chats/{}", s.chat)).await;
    assert!(!detail.to_string().contains(EMPTY_RESPONSE), "{detail}");
}

/// "Decline and tell the assistant why" (issue 45 item 5): the reason
/// reaches the model as the tool's error, is kept in the ledger, the
/// card's resolution and Activity; nothing runs. A reason on an approve,
/// or one too long, is a 422 that decides nothing.
#[tokio::test]
async fn a_decline_reason_reaches_the_model_the_ledger_and_activity_and_nothing_runs() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "delete_note", json!({"id": "note-2"})).await;
    let digest = card["arguments_digest"].clone();
    let id = card["id"].as_str().expect("id");

    // Refused, and nothing decided: a reason with an approve, a reason
    // past 1000 characters.
    let with_approve = decide_with(
        &s.app,
        &card,
        json!({"decision": "approve", "grant": "once", "arguments_digest": digest,
               "reason": "because"}),
    )
    .await;
    assert_eq!(with_approve.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let too_long = decide_with(
        &s.app,
        &card,
        json!({"decision": "deny", "arguments_digest": digest, "reason": "é".repeat(1001)}),
    )
    .await;
    assert_eq!(too_long.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(ledger(&s.app, id).await.0, PendingCallStatus::Pending);

    // Quotes and a would-be SQL ending travel as the user wrote them.
    let reason = "Never delete client notes'); archive them instead — \"always\".";
    let res = decide_with(
        &s.app,
        &card,
        json!({"decision": "deny", "arguments_digest": digest, "reason": format!("  {reason}\n")}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let events = stream.until("turn_finished").await;
    let resolved = events
        .iter()
        .find(|(_, e)| e["type"] == "mcp_confirmation_resolved")
        .expect("resolved");
    assert_eq!(resolved.1["decision"], "denied");
    assert_eq!(resolved.1["decline_reason"], reason);
    assert!(
        resolved.1.get("stopped").is_none(),
        "a decline is not a Stop"
    );
    assert!(
        resolved.1["decided_at"]
            .as_str()
            .is_some_and(|at| at.ends_with('Z')),
        "{}",
        resolved.1
    );
    // The model read it as the tool's error.
    let text = text_of(&events);
    assert!(text.contains("The user declined this tool call."), "{text}");
    assert!(text.contains(reason), "{text}");
    assert_eq!(s.demo.calls().total, 0, "nothing ran");

    // Kept with the call, and in the activity log.
    let mut db = s.app.superuser().await;
    let kept: Option<String> =
        sqlx::query_scalar("select decline_reason from mcp_pending_calls where id = $1::uuid")
            .bind(id)
            .fetch_one(&mut db)
            .await
            .expect("ledger row");
    assert_eq!(kept.as_deref(), Some(reason));
    let activity = s.app.get_json("/api/activity").await;
    let declined = activity
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["call_ref"] == id && e["decision"] == "denied")
        .expect("the declined entry");
    assert_eq!(declined["error"], format!("Declined: {reason}"));
}

/// The chat's row counts its messages (`chats.message_count`, read by the
/// turn's store instead of counting them): an answer stored by a turn
/// that was ended elsewhere meanwhile (no `turn_finished` of its own) is
/// counted too, and so are the next turn's question and answer. Seen
/// failing with `finish` counting only the answers of turns it ended.
#[tokio::test]
async fn the_chat_counts_every_message_even_an_answer_stored_after_its_turn_ended() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (turn, card) = propose(&s, &mut stream, "delete_note", json!({"id": "note-2"})).await;
    let turn: Uuid = turn.parse().expect("turn id");
    let chat: Uuid = s.chat.parse().expect("chat id");
    let mut su = s.app.superuser().await;
    // Ended elsewhere while its call waits, as another instance's
    // recovery would end it.
    sqlx::query("update turns set status = 'failed', finished_at = now() where id = $1")
        .bind(turn)
        .execute(&mut su)
        .await
        .expect("ended elsewhere");
    assert_eq!(decide(&s.app, &card, "deny").await.status(), StatusCode::OK);
    let answered = comes_true_within(Duration::from_secs(10), || {
        let app = &s.app;
        async move {
            let mut su = app.superuser().await;
            sqlx::query_scalar::<_, i64>(
                "select count(*) from messages where turn_id = $1 and role = 'assistant'",
            )
            .bind(turn)
            .fetch_one(&mut su)
            .await
            .expect("answers")
                == 1
        }
    })
    .await;
    assert!(answered, "the turn stored its answer");
    assert_eq!(message_counts(&mut su, chat).await, (2, 2));

    s.app.send(&s.chat, "Thanks, that is all").await;
    stream.until("turn_finished").await;
    assert_eq!(message_counts(&mut su, chat).await, (4, 4));
}

/// The chat's `message_count`, and its messages counted.
async fn message_counts(su: &mut sqlx::PgConnection, chat: Uuid) -> (i64, i64) {
    sqlx::query_as(
        "select c.message_count, (select count(*) from messages m where m.chat_id = c.id)
           from chats c where c.id = $1",
    )
    .bind(chat)
    .fetch_one(su)
    .await
    .expect("counts")
}

#[tokio::test]
async fn an_unanswered_call_expires_and_a_late_decision_gets_410() {
    let s = setup(|c| {
        c.approval_ttl_secs = 3;
        c.approval_wait_secs = 1;
    })
    .await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "search_notes", json!({"query": "lease"})).await;
    let events = stream.until("turn_finished").await;
    let resolved = events
        .iter()
        .find(|(_, e)| e["type"] == "mcp_confirmation_resolved")
        .expect("resolved");
    assert_eq!(resolved.1["decision"], "expired");
    assert!(text_of(&events).contains("did not approve this tool call in time"));
    assert_eq!(
        ledger(&s.app, card["id"].as_str().expect("id")).await.0,
        PendingCallStatus::Expired
    );
    let res = decide(&s.app, &card, "approve").await;
    assert_eq!(res.status(), StatusCode::GONE);
    assert_eq!(
        res.json::<Value>().await.expect("JSON"),
        json!({"detail": "This tool call approval has expired."})
    );
    // Past the TTL too (moved there, rather than waited for): still 410.
    let mut db = s.app.superuser().await;
    sqlx::query(
        "update mcp_pending_calls set created_at = now() - interval '1 hour',
                expires_at = now() - interval '1 minute',
                decide_by = now() - interval '2 minutes' where id = $1::uuid",
    )
    .bind(card["id"].as_str().expect("id"))
    .execute(&mut db)
    .await
    .expect("past the TTL");
    assert_eq!(
        decide(&s.app, &card, "deny").await.status(),
        StatusCode::GONE
    );
    assert_eq!(s.demo.calls().total, 0);
}

/// Whether `check` comes true within `within` (asked every 20 ms).
async fn comes_true_within<F, Fut>(within: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    tokio::time::timeout(within, async {
        let mut tick = tokio::time::interval(Duration::from_millis(20));
        loop {
            tick.tick().await;
            if check().await {
                return;
            }
        }
    })
    .await
    .is_ok()
}

/// A lifecycle hook that stops where it sits: it sends the call's id to
/// the receiver and goes on once the sender is sent `()`.
fn holding_hook() -> (approvals::Hook, mpsc::Receiver<Uuid>, mpsc::Sender<()>) {
    let (at_hook, reached) = mpsc::channel::<Uuid>(1);
    let (go_on, release) = mpsc::channel::<()>(1);
    let release = Arc::new(Mutex::new(release));
    let hook: approvals::Hook = Arc::new(move |id| {
        let at_hook = at_hook.clone();
        let release = release.clone();
        Box::pin(async move {
            at_hook.send(id).await.expect("test listens");
            release.lock().await.recv().await;
        })
    });
    (hook, reached, go_on)
}

#[tokio::test]
async fn a_decision_landing_just_before_the_expiry_update_is_honoured() {
    // The hook stops the turn between "the wait gave up" and the expiry
    // UPDATE; the test approves right there, then lets it go on.
    let (hook, mut reached, go_on) = holding_hook();
    let s = setup_custom(
        |c| c.approval_wait_secs = 1,
        move |state| state.approval_hooks.before_expire = Some(hook),
    )
    .await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "search_notes", json!({"query": "lease"})).await;
    let id = reached.recv().await.expect("the turn reached the race");
    assert_eq!(id.to_string(), card["id"].as_str().expect("id"));
    assert_eq!(
        decide(&s.app, &card, "approve").await.status(),
        StatusCode::OK
    );
    go_on.send(()).await.expect("release");

    let events = stream.until("turn_finished").await;
    let resolved = events
        .iter()
        .find(|(_, e)| e["type"] == "mcp_confirmation_resolved")
        .expect("resolved");
    assert_eq!(
        resolved.1["decision"], "approved",
        "the decision won the race"
    );
    assert!(
        events
            .iter()
            .any(|(_, e)| e["type"] == "mcp_tool_call" && e["status"] == "ok")
    );
    assert_eq!(
        ledger(&s.app, &id.to_string()).await.0,
        PendingCallStatus::Executed
    );
    assert_eq!(s.demo.calls().count("search_notes"), 1);
}

#[tokio::test]
async fn an_approved_call_reaches_the_server_only_after_the_chat_was_told() {
    // The approved call's section starts beside the `resolved` event (its
    // claim and re-read go ahead): the hook holds that event back, and
    // for as long as it is held the server hears nothing of the call.
    let (hook, mut reached, go_on) = holding_hook();
    let s = setup_custom(
        |_| {},
        move |state| state.approval_hooks.before_resolved = Some(hook),
    )
    .await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "search_notes", json!({"query": "lease"})).await;
    assert_eq!(
        decide(&s.app, &card, "approve").await.status(),
        StatusCode::OK
    );
    let id = reached.recv().await.expect("the decision was taken");
    assert_eq!(id.to_string(), card["id"].as_str().expect("id"));
    // Meanwhile the call is claimed (its section did start)...
    let claimed = comes_true_within(Duration::from_secs(10), || async {
        ledger(&s.app, &id.to_string()).await.0 == PendingCallStatus::Executing
    })
    .await;
    assert!(claimed, "the approved call was claimed at once");
    // ...but it does not reach the server while the chat is not told.
    let reached_server = comes_true_within(Duration::from_secs(2), || async {
        s.demo.calls().total > 0
    })
    .await;
    assert!(
        !reached_server,
        "the call ran before mcp_confirmation_resolved"
    );
    go_on.send(()).await.expect("release");

    let events = stream.until("turn_finished").await;
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|(_, e)| e["type"].as_str())
        .filter(|k| k.starts_with("mcp_"))
        .collect();
    assert_eq!(kinds, ["mcp_confirmation_resolved", "mcp_tool_call"]);
    assert_eq!(s.demo.calls().count("search_notes"), 1);
    assert_eq!(
        ledger(&s.app, &id.to_string()).await.0,
        PendingCallStatus::Executed
    );
}

#[tokio::test]
async fn a_stale_row_with_trust_on_still_asks_and_declared_safe_tools_run_without_a_card() {
    let s = setup(|_| {}).await;
    let res = s
        .app
        .request(
            reqwest::Method::PATCH,
            &format!("/api/connectors/{}", s.connector),
            Some(json!({"trust_annotations": true})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.json::<Value>().await.expect("JSON")["trust_annotations"],
        true
    );

    // Trusted, read-only and closed-world: runs without a card.
    let mut stream = s.app.stream(&s.chat, None).await;
    s.app
        .send(&s.chat, r#"use demo__search_notes with {"query":"lease"}"#)
        .await;
    let events = stream.until("turn_finished").await;
    assert!(
        !events
            .iter()
            .any(|(_, e)| e["type"] == "mcp_confirmation_required")
    );
    assert!(
        events
            .iter()
            .any(|(_, e)| e["type"] == "mcp_tool_call" && e["status"] == "ok")
    );
    assert_eq!(s.demo.calls().count("search_notes"), 1);

    // Strings are not booleans: stringly_annotated asks even when trusted.
    s.app
        .send(&s.chat, r#"use demo__stringly_annotated with {}"#)
        .await;
    let events = stream.until("mcp_confirmation_required").await;
    let card = events
        .last()
        .expect("a card for string annotations")
        .1
        .clone();
    assert_eq!(
        card["reason"],
        "the server does not declare this tool read-only and closed-world"
    );
    assert_eq!(decide(&s.app, &card, "deny").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;

    // A stale row: requires_confirmation = false, annotations {} (in the
    // reviewed descriptor, which is what the gate reads).
    let mut db = s.app.superuser().await;
    sqlx::query(
        "update connector_tools set requires_confirmation = false,
                descriptor = jsonb_set(descriptor, '{annotations}', '{}'::jsonb),
                reviewed_descriptor = jsonb_set(reviewed_descriptor, '{annotations}', '{}'::jsonb)
          where name = 'search_notes'",
    )
    .execute(&mut db)
    .await
    .expect("stale row");
    s.app
        .send(&s.chat, r#"use demo__search_notes with {"query":"deed"}"#)
        .await;
    let events = stream.until("mcp_confirmation_required").await;
    let card = events.last().expect("card").1.clone();
    assert_eq!(decide(&s.app, &card, "deny").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;
    assert_eq!(
        s.demo.calls().count("search_notes"),
        1,
        "the stale row never ran"
    );
}

#[tokio::test]
async fn an_approved_call_that_fails_is_recorded_failed_and_spent() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "failing_tool", json!({})).await;
    assert_eq!(
        decide(&s.app, &card, "approve").await.status(),
        StatusCode::OK
    );
    let events = stream.until("turn_finished").await;
    let ran = event_of(&events, "mcp_tool_call");
    assert_eq!(ran["status"], "error");
    assert!(
        ran["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{ran}"
    );
    let (status, error) = ledger(&s.app, card["id"].as_str().expect("id")).await;
    assert_eq!(status, PendingCallStatus::Failed, "never executed");
    assert!(error.is_some());
    assert_eq!(
        decide(&s.app, &card, "approve").await.status(),
        StatusCode::NOT_FOUND,
        "spent"
    );
    assert_eq!(s.demo.calls().count("failing_tool"), 1);
}

#[tokio::test]
async fn unknown_and_foreign_tool_names_get_an_error_result_never_a_call() {
    let s = setup(|_| {}).await;
    // Another user, without connectors, names the first user's tool.
    let other = s.app.at(&s.app.base);
    other.signed_up_user().await;
    let chat = other.create_chat("offline/demo").await;
    let mut stream = other.stream(&chat, None).await;
    other
        .send(&chat, r#"use demo__delete_note with {"id":"note-1"}"#)
        .await;
    let events = stream.until("turn_finished").await;
    let result = events
        .iter()
        .find(|(_, e)| e["type"] == "tool_result")
        .expect("tool_result");
    assert_eq!(result.1["status"], "error");
    assert!(
        result.1["error"]
            .as_str()
            .is_some_and(|e| e.contains("no tool named"))
    );
    assert!(
        !events
            .iter()
            .any(|(_, e)| e["type"] == "mcp_confirmation_required")
    );

    // A declined tool is not offered and cannot be called either.
    let mut db = s.app.superuser().await;
    sqlx::query("update connector_tools set review_state = 'declined' where name = 'echo'")
        .execute(&mut db)
        .await
        .expect("decline");
    let mut stream = s.app.stream(&s.chat, None).await;
    s.app
        .send(&s.chat, r#"use demo__echo with {"text":"hi"}"#)
        .await;
    let events = stream.until("turn_finished").await;
    assert!(
        events
            .iter()
            .any(|(_, e)| e["type"] == "tool_result" && e["status"] == "error")
    );
    assert_eq!(s.demo.calls().total, 0);
}

#[tokio::test]
async fn stop_while_a_call_waits_denies_it() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (turn, card) = propose(
        &s,
        &mut stream,
        "add_note",
        json!({"title": "t", "body": "b"}),
    )
    .await;
    let res = s
        .app
        .post(
            &format!("/api/chats/{}/turns/{turn}/cancel", s.chat),
            &json!({}),
        )
        .await;
    assert!(res.status().is_success(), "{}", res.status());
    let events = stream.until("turn_finished").await;
    // Denied, and said to be the Stop's doing: nobody declined it.
    assert!(events.iter().any(|(_, e)| {
        e["type"] == "mcp_confirmation_resolved"
            && e["decision"] == "denied"
            && e["stopped"] == true
            && e.get("decline_reason").is_none()
    }));
    assert_eq!(events.last().expect("end").1["status"], "cancelled");
    assert_eq!(
        ledger(&s.app, card["id"].as_str().expect("id")).await.0,
        PendingCallStatus::Denied
    );
    assert_eq!(
        decide(&s.app, &card, "approve").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(s.demo.calls().total, 0);
}

#[tokio::test]
async fn a_decision_taken_on_another_instance_wakes_the_turn_by_notify() {
    // Polling every 10 minutes: only NOTIFY can wake the turn in time.
    let s = setup(|c| c.approval_poll_ms = 600_000).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "search_notes", json!({"query": "lease"})).await;
    let other = second_instance(&s.app).await;
    let other = TestApp {
        client: s.app.client.clone(),
        csrf: std::sync::Mutex::new(s.app.csrf.lock().expect("lock").clone()),
        ..other
    };
    assert_eq!(
        decide(&other, &card, "approve").await.status(),
        StatusCode::OK
    );
    let events = tokio::time::timeout(Duration::from_secs(10), stream.until("turn_finished"))
        .await
        .expect("woken well before the poll");
    assert!(
        events
            .iter()
            .any(|(_, e)| e["type"] == "mcp_tool_call" && e["status"] == "ok")
    );
}

#[tokio::test]
async fn without_notify_the_poll_alone_finds_the_decision() {
    let s = setup(|c| {
        c.approval_notify = false;
        c.approval_poll_ms = 200;
    })
    .await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "search_notes", json!({"query": "lease"})).await;
    assert_eq!(
        decide(&s.app, &card, "approve").await.status(),
        StatusCode::OK
    );
    let events = stream.until("turn_finished").await;
    assert!(
        events
            .iter()
            .any(|(_, e)| e["type"] == "mcp_tool_call" && e["status"] == "ok")
    );
}

#[tokio::test]
async fn a_waiting_turn_holds_no_pooled_connection_and_the_stream_keeps_alive() {
    let s = setup(|c| c.keepalive_secs = 1).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "search_notes", json!({"query": "lease"})).await;
    // Sampled for 1.5 s: a connection held across the wait would be in use
    // at every sample, on top of what an idle server holds (its LISTEN
    // connection, the open stream's).
    let least_in_use = || async {
        let mut least = usize::MAX;
        for _ in 0..30 {
            least = least.min(s.app.pool.size() as usize - s.app.pool.num_idle());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        least
    };
    let waiting = least_in_use().await;
    assert_eq!(decide(&s.app, &card, "deny").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;
    let idle = least_in_use().await;
    assert_eq!(waiting, idle, "no connection is held while the call waits");
    let (_, card) = propose(&s, &mut stream, "search_notes", json!({"query": "lease"})).await;
    let mut keepalives = 0;
    while keepalives == 0 {
        match stream.next_frame(Duration::from_secs(5)).await {
            Some(crate::helpers::Frame::Comment(c)) if c == "keep-alive" => keepalives += 1,
            Some(_) => {}
            None => panic!("the stream went silent while the call waits"),
        }
    }
    assert_eq!(decide(&s.app, &card, "deny").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;
}

/// A chat, a finished turn and raw ledger rows for the sweep and recovery.
async fn ledger_fixture(app: &TestApp, user: Uuid) -> (Uuid, Uuid, Uuid) {
    let chat: Uuid = app.create_chat("offline/demo").await.parse().expect("uuid");
    let mut db = app.superuser().await;
    let done_turn = Uuid::new_v4();
    let live_turn = Uuid::new_v4();
    for (turn, status) in [(done_turn, "done"), (live_turn, "running")] {
        sqlx::query(
            "insert into turns (id, chat_id, user_id, status, model, started_seq)
             values ($1, $2, $3, $4, 'offline/demo', 0)",
        )
        .bind(turn)
        .bind(chat)
        .bind(user)
        .bind(status)
        .execute(&mut db)
        .await
        .expect("turn");
    }
    (chat, done_turn, live_turn)
}

async fn raw_row(
    app: &TestApp,
    user: Uuid,
    chat: Uuid,
    turn: Uuid,
    status: PendingCallStatus,
    age_hours: f64,
) -> Uuid {
    let id = Uuid::new_v4();
    let mut db = app.superuser().await;
    sqlx::query(
        "insert into mcp_pending_calls (id, user_id, chat_id, turn_id, call_id, connector_id,
             connector_name, tool_name, model_tool_name, arguments, arguments_canonical,
             arguments_digest, descriptor_digest, destination, destination_url, reason,
             offered_grants, status, hmac_key_id, hmac, created_at, expires_at, decide_by)
         values ($1, $2, $3, $4, 'c1', $5, 'Demo', 'search_notes', 'demo__search_notes', '{}',
                 '{}', $6, $6, '127.0.0.1', 'http://127.0.0.1/mcp', 'test', '{once}', $7, 'k', 'h',
                 now() - make_interval(secs => $8), now() - make_interval(secs => $8) + interval '2 minutes',
                 now() - make_interval(secs => $8) + interval '90 seconds')",
    )
    .bind(id)
    .bind(user)
    .bind(chat)
    .bind(turn)
    .bind(Uuid::new_v4())
    .bind(sha256_hex("{}"))
    .bind(status.as_str())
    .bind(age_hours * 3600.0)
    .execute(&mut db)
    .await
    .expect("ledger row");
    id
}

#[tokio::test]
async fn the_sweep_deletes_only_aged_terminal_rows() {
    let s = setup(|_| {}).await;
    let (chat, done, _) = ledger_fixture(&s.app, s.user).await;
    let mut aged = Vec::new();
    for status in [
        PendingCallStatus::Executed,
        PendingCallStatus::Failed,
        PendingCallStatus::Denied,
        PendingCallStatus::Expired,
    ] {
        aged.push(raw_row(&s.app, s.user, chat, done, status, 25.0).await);
    }
    let young = raw_row(&s.app, s.user, chat, done, PendingCallStatus::Denied, 1.0).await;
    let old_pending = raw_row(&s.app, s.user, chat, done, PendingCallStatus::Pending, 25.0).await;
    let old_executing = raw_row(
        &s.app,
        s.user,
        chat,
        done,
        PendingCallStatus::Executing,
        25.0,
    )
    .await;

    let state = state_of(&s.app).await;
    assert_eq!(approvals::sweep(&state).await.expect("sweep"), 4);
    let mut db = s.app.superuser().await;
    let left: Vec<Uuid> = sqlx::query_scalar("select id from mcp_pending_calls")
        .fetch_all(&mut db)
        .await
        .expect("rows");
    for id in &aged {
        assert!(!left.contains(id), "aged terminal rows go");
    }
    for id in [young, old_pending, old_executing] {
        assert!(left.contains(&id), "young or open rows stay");
    }
}

#[tokio::test]
async fn start_up_recovery_closes_calls_of_turns_that_no_longer_run_and_reruns_nothing() {
    let s = setup(|_| {}).await;
    let (chat, done, live) = ledger_fixture(&s.app, s.user).await;
    let executing = raw_row(
        &s.app,
        s.user,
        chat,
        done,
        PendingCallStatus::Executing,
        0.0,
    )
    .await;
    let approved = raw_row(&s.app, s.user, chat, done, PendingCallStatus::Approved, 0.0).await;
    let pending = raw_row(&s.app, s.user, chat, done, PendingCallStatus::Pending, 0.0).await;
    let alive = raw_row(
        &s.app,
        s.user,
        chat,
        live,
        PendingCallStatus::Executing,
        0.0,
    )
    .await;

    let state = state_of(&s.app).await;
    let recovered = approvals::recover(&state, 30.0).await.expect("recover");
    assert_eq!(
        recovered,
        approvals::Recovered {
            executing: 1,
            approved: 1,
            pending: 1
        }
    );
    assert_eq!(
        ledger(&s.app, &executing.to_string()).await,
        (
            PendingCallStatus::Failed,
            Some("interrupted; outcome unknown".into())
        )
    );
    assert_eq!(
        ledger(&s.app, &approved.to_string()).await,
        (
            PendingCallStatus::Failed,
            Some("interrupted before it ran".into())
        )
    );
    assert_eq!(
        ledger(&s.app, &pending.to_string()).await.0,
        PendingCallStatus::Expired
    );
    assert_eq!(
        ledger(&s.app, &alive.to_string()).await.0,
        PendingCallStatus::Executing,
        "a live turn's call is left alone"
    );
    assert_eq!(s.demo.calls().total, 0, "nothing re-executed");
    // The chat heard of each.
    let mut stream = s.app.stream(&chat.to_string(), None).await;
    let mut kinds = Vec::new();
    while let Some(crate::helpers::Frame::Event(_, e)) =
        stream.next_frame(Duration::from_millis(500)).await
    {
        kinds.push(e["type"].as_str().unwrap_or_default().to_owned());
    }
    assert_eq!(
        kinds.iter().filter(|k| *k == "mcp_tool_call").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(
        kinds
            .iter()
            .filter(|k| *k == "mcp_confirmation_resolved")
            .count(),
        1
    );
    // Running it again changes nothing.
    assert_eq!(
        approvals::recover(&state, 30.0).await.expect("again"),
        approvals::Recovered::default()
    );
}

#[tokio::test]
async fn the_ledger_is_unreadable_and_unwritable_as_anon_and_authenticated() {
    let s = setup(|_| {}).await;
    let (chat, done, _) = ledger_fixture(&s.app, s.user).await;
    let id = raw_row(&s.app, s.user, chat, done, PendingCallStatus::Pending, 0.0).await;
    for role in ["authenticated", "anon"] {
        for statement in [
            "select * from mcp_pending_calls",
            "update mcp_pending_calls set status = 'approved'",
            "delete from mcp_pending_calls",
            "insert into mcp_pending_calls (id) values (gen_random_uuid())",
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
    assert_eq!(
        ledger(&s.app, &id.to_string()).await.0,
        PendingCallStatus::Pending
    );
}

#[tokio::test]
async fn one_heartbeat_keeps_every_waiting_turn_alive_and_carries_a_stored_stop() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (turn, _) = propose(&s, &mut stream, "search_notes", json!({"query": "a"})).await;
    let other_chat = s.app.create_chat("offline/demo").await;
    let mut other_stream = s.app.stream(&other_chat, None).await;
    let other_turn = s
        .app
        .send(&other_chat, r#"use search_notes with {"query": "b"}"#)
        .await;
    other_stream.until("mcp_confirmation_required").await;

    // Both turns look dead; a Stop is stored for one without any NOTIFY.
    let mut db = s.app.superuser().await;
    sqlx::query("update turns set heartbeat_at = now() - interval '1 hour'")
        .execute(&mut db)
        .await
        .expect("age");
    sqlx::query("update turns set cancel_requested = true where id = $1::uuid")
        .bind(&other_turn)
        .execute(&mut db)
        .await
        .expect("stored stop");

    let events = tokio::time::timeout(Duration::from_secs(15), other_stream.until("turn_finished"))
        .await
        .expect("the heartbeat carried the stored Stop");
    assert_eq!(events.last().expect("end").1["status"], "cancelled");
    let fresh: bool = sqlx::query_scalar(
        "select heartbeat_at > now() - interval '10 seconds' from turns where id = $1::uuid",
    )
    .bind(&turn)
    .fetch_one(&mut db)
    .await
    .expect("heartbeat");
    assert!(fresh, "the waiting turn's heartbeat was refreshed");
}
