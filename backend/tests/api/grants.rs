//! Grants (DESIGN §5 rules 1 and 2): "Allow for this turn" recorded on the
//! ledger row, "Always allow this tool" as a rule pinned to the tool's
//! descriptor digest; and every way a rule must not apply.

use crate::helpers::{
    Setup, add_demo_connector, approve_with, decide_with, keep_as_seen, propose, refreshed, setup,
    turn,
};
use countersign_demo_mcp::DriftField;
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn approve(s: &Setup, card: &Value, grant: &str) {
    let res = approve_with(&s.app, card, grant).await;
    assert_eq!(res.status(), StatusCode::OK, "approve {grant}");
}

fn ran_with(events: &[Value], origin: &str) -> bool {
    events
        .iter()
        .any(|e| e["type"] == "mcp_tool_call" && e["status"] == "ok" && e["origin"] == origin)
}

fn asked(events: &[Value]) -> bool {
    events
        .iter()
        .any(|e| e["type"] == "mcp_confirmation_required")
}

#[tokio::test]
async fn an_always_rule_runs_the_next_identical_call_without_a_card_until_revoked() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(
        &s,
        &mut stream,
        "add_note",
        json!({"title": "a", "body": "b"}),
    )
    .await;
    approve(&s, &card, "always").await;
    let events: Vec<Value> = stream
        .until("turn_finished")
        .await
        .into_iter()
        .map(|(_, e)| e)
        .collect();
    let ran = events
        .iter()
        .find(|e| e["type"] == "mcp_tool_call")
        .expect("ran");
    assert_eq!(ran["origin"], "approved");
    // Every tab's card can say what was allowed.
    let resolved = events
        .iter()
        .find(|e| e["type"] == "mcp_confirmation_resolved")
        .expect("resolved");
    assert_eq!(resolved["decision"], "approved");
    assert_eq!(resolved["grant"], "always", "{resolved}");
    assert!(
        ran["approved_at"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{ran}"
    );

    let rules = s.app.get_array("/api/grants").await;
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["tool_name"], "add_note");
    assert_eq!(rules[0]["suspended"], false);

    let events = turn(
        &s,
        &mut stream,
        r#"use add_note with {"title": "a", "body": "b"}"#,
    )
    .await;
    assert!(!asked(&events), "no card under the rule");
    assert!(ran_with(&events, "always_grant"));
    assert_eq!(s.demo.calls().count("add_note"), 2);

    // Another user cannot see or revoke it.
    let other = s.app.at(&s.app.base);
    other.signed_up_user().await;
    assert_eq!(other.get_json("/api/grants").await, json!([]));
    let id = rules[0]["id"].as_str().expect("id");
    let res = other
        .request(reqwest::Method::DELETE, &format!("/api/grants/{id}"), None)
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);

    let res = s
        .app
        .request(reqwest::Method::DELETE, &format!("/api/grants/{id}"), None)
        .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let (_, card) = propose(
        &s,
        &mut stream,
        "add_note",
        json!({"title": "a", "body": "b"}),
    )
    .await;
    assert_eq!(card["reason"], "every tool call asks for your approval");
    assert_eq!(
        s.demo.calls().count("add_note"),
        2,
        "revoked: it asks again"
    );
}

#[tokio::test]
async fn a_turn_grant_covers_the_rest_of_its_turn_and_not_the_next() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    s.app
        .send(
            &s.chat,
            r#"use search_notes with {"query": "lease"} then use search_notes with {"query": "deed"} then use add_note with {"title": "t", "body": "b"}"#,
        )
        .await;
    let card = stream
        .until("mcp_confirmation_required")
        .await
        .last()
        .expect("card")
        .1
        .clone();
    approve(&s, &card, "turn").await;
    // The second search runs without a card; add_note is another tool: it asks.
    let events: Vec<Value> = stream
        .until("mcp_confirmation_required")
        .await
        .into_iter()
        .map(|(_, e)| e)
        .collect();
    assert!(ran_with(&events, "approved"));
    assert!(ran_with(&events, "turn_grant"));
    let other_tool = events.last().expect("card");
    assert_eq!(other_tool["tool_name"], "add_note");
    assert_eq!(s.demo.calls().count("search_notes"), 2);
    let res = decide_with(
        &s.app,
        other_tool,
        json!({"decision": "deny", "arguments_digest": other_tool["arguments_digest"]}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    stream.until("turn_finished").await;

    // The next turn asks again.
    let (_, card) = propose(&s, &mut stream, "search_notes", json!({"query": "lease"})).await;
    assert_eq!(card["tool_name"], "search_notes");
    assert_eq!(s.demo.calls().count("search_notes"), 2);
}

#[tokio::test]
async fn a_changed_tool_suspends_its_rule_for_each_field_and_allowing_again_pins_the_new_digest() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let args = json!({"matter": "M-1"});
    let (_, card) = propose(&s, &mut stream, "drifting_tool", args.clone()).await;
    approve(&s, &card, "always").await;
    stream.until("turn_finished").await;
    let mut runs = 1;

    for field in [
        DriftField::Description,
        DriftField::Schema,
        DriftField::Annotations,
    ] {
        assert!(s.demo.state().drift(field), "{field:?} drifts");
        refreshed(&s).await;
        assert_eq!(
            s.app.get_array("/api/grants").await[0]["suspended"],
            true,
            "{field:?}"
        );
        // Until the user keeps the change, the tool runs only as reviewed.
        let (_, card) = propose(&s, &mut stream, "drifting_tool", args.clone()).await;
        assert_eq!(
            card["reason"], "This tool changed since you reviewed it",
            "{field:?}"
        );
        let res = decide_with(
            &s.app,
            &card,
            json!({"decision": "deny", "arguments_digest": card["arguments_digest"]}),
        )
        .await;
        assert_eq!(res.status(), StatusCode::OK);
        stream.until("turn_finished").await;
        keep_as_seen(&s, &["drifting_tool"]).await;
        // Kept again: the rule is still for the old descriptor.
        let (_, card) = propose(&s, &mut stream, "drifting_tool", args.clone()).await;
        assert_eq!(
            card["reason"], "This tool changed since you allowed it",
            "{field:?}"
        );
        assert_eq!(
            s.demo.calls().count("drifting_tool"),
            runs,
            "{field:?}: 0 auto-runs"
        );
        // Allowing again pins the new descriptor.
        approve(&s, &card, "always").await;
        stream.until("turn_finished").await;
        runs += 1;
        assert_eq!(
            s.app.get_array("/api/grants").await[0]["suspended"],
            false,
            "{field:?}"
        );
        let events = turn(
            &s,
            &mut stream,
            r#"use drifting_tool with {"matter": "M-1"}"#,
        )
        .await;
        assert!(ran_with(&events, "always_grant"), "{field:?}");
        runs += 1;
        assert_eq!(s.demo.calls().count("drifting_tool"), runs);
    }
}

#[tokio::test]
async fn decline_failure_and_expiry_never_create_a_rule() {
    let s = setup(|c| {
        c.approval_ttl_secs = 4;
        c.approval_wait_secs = 2;
    })
    .await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "echo", json!({"text": "hi"})).await;
    let res = decide_with(
        &s.app,
        &card,
        json!({"decision": "deny", "grant": "always", "arguments_digest": card["arguments_digest"]}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    stream.until("turn_finished").await;

    let (_, card) = propose(&s, &mut stream, "failing_tool", json!({})).await;
    approve(&s, &card, "always").await;
    stream.until("turn_finished").await;

    propose(&s, &mut stream, "search_notes", json!({"query": "x"})).await;
    stream.until("turn_finished").await;

    assert_eq!(s.app.get_array("/api/grants").await, Vec::<Value>::new());
    let (_, card) = propose(&s, &mut stream, "failing_tool", json!({})).await;
    assert_eq!(
        card["tool_name"], "failing_tool",
        "a failed call left no rule: it asks"
    );
}

#[tokio::test]
async fn a_deleted_connector_or_a_removed_tool_takes_its_rules_along() {
    let s = setup(|_| {}).await;
    // A tool the server adds later, kept and always allowed, then removed.
    s.demo.state().add_late_arrival();
    refreshed(&s).await;
    keep_as_seen(&s, &["late_arrival"]).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "late_arrival", json!({})).await;
    approve(&s, &card, "always").await;
    stream.until("turn_finished").await;
    let (_, card) = propose(&s, &mut stream, "search_notes", json!({"query": "lease"})).await;
    approve(&s, &card, "always").await;
    stream.until("turn_finished").await;
    assert_eq!(s.app.get_array("/api/grants").await.len(), 2);

    s.demo.state().reset();
    refreshed(&s).await;
    let left = s.app.get_array("/api/grants").await;
    assert_eq!(left.len(), 1, "the removed tool lost its rule");
    assert_eq!(left[0]["tool_name"], "search_notes");

    // Deleting the connector deletes its rules; the same URL added again
    // inherits nothing.
    let res = s
        .app
        .request(
            reqwest::Method::DELETE,
            &format!("/api/connectors/{}", s.connector),
            None,
        )
        .await;
    assert!(res.status().is_success());
    assert_eq!(s.app.get_array("/api/grants").await, Vec::<Value>::new());
    add_demo_connector(&s.app, &s.demo).await;
    let before = s.demo.calls().count("search_notes");
    let (_, card) = propose(&s, &mut stream, "search_notes", json!({"query": "lease"})).await;
    assert_eq!(card["reason"], "every tool call asks for your approval");
    assert_eq!(s.demo.calls().count("search_notes"), before);
}

#[tokio::test]
async fn an_old_tool_list_is_refreshed_before_a_turn_so_a_silent_change_still_suspends_the_rule() {
    // Every list is "old": each turn refreshes first.
    let s = setup(|c| c.tools_max_age_secs = 0).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "drifting_tool", json!({"matter": "M-2"})).await;
    approve(&s, &card, "always").await;
    stream.until("turn_finished").await;
    let events = turn(
        &s,
        &mut stream,
        r#"use drifting_tool with {"matter": "M-2"}"#,
    )
    .await;
    assert!(ran_with(&events, "always_grant"));

    // The server changes the tool and says nothing; nobody presses Refresh.
    // (The refresh marks it changed since review, which outranks the rule.)
    assert!(s.demo.state().drift(DriftField::Annotations));
    let (_, card) = propose(&s, &mut stream, "drifting_tool", json!({"matter": "M-2"})).await;
    assert_eq!(card["reason"], "This tool changed since you reviewed it");
    assert_eq!(
        s.demo.calls().count("drifting_tool"),
        2,
        "no auto-run after the change"
    );
}
