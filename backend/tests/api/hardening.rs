//! The gate against a hostile server and a crafted argument (issue 9,
//! DESIGN §5, §6): a changed tool runs only as reviewed, a URL change is a
//! new trust decision, what is shown is what runs, and a review binds the
//! descriptor the user saw. The demo MCP server counts every execution.

use crate::helpers::SseReader;
use crate::helpers::{Setup, decide_with, ledger, propose, refreshed, setup, state_of};
use countersign::tools::ToolBox as _;
use countersign_api::PendingCallStatus;
use countersign_demo_mcp::DriftField;
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn patch(s: &Setup, body: Value) -> reqwest::Response {
    s.app
        .request(
            reqwest::Method::PATCH,
            &format!("/api/connectors/{}", s.connector),
            Some(body),
        )
        .await
}

async fn tool(s: &Setup, name: &str) -> Value {
    let tools = s
        .app
        .get_json(&format!("/api/connectors/{}/tools", s.connector))
        .await;
    tools
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// `PUT …/tools/review` with `body`.
async fn review(s: &Setup, body: Value) -> reqwest::Response {
    s.app
        .request(
            reqwest::Method::PUT,
            &format!("/api/connectors/{}/tools/review", s.connector),
            Some(body),
        )
        .await
}

/// `PUT …/tools/review` keeping `name` with `digest` (what the user saw).
async fn keep(s: &Setup, name: &str, digest: &Value) -> reqwest::Response {
    review(
        s,
        json!({"keep": [{"name": name, "descriptor_digest": digest}], "decline": []}),
    )
    .await
}

async fn turn_events(s: &Setup, stream: &mut SseReader, message: &str) -> Vec<Value> {
    s.app.send(&s.chat, message).await;
    stream
        .until("turn_finished")
        .await
        .into_iter()
        .map(|(_, e)| e)
        .collect()
}

async fn approve(s: &Setup, card: &Value, grant: &str) -> reqwest::Response {
    decide_with(
        &s.app,
        card,
        json!({"decision": "approve", "grant": grant, "arguments_digest": card["arguments_digest"]}),
    )
    .await
}

/// The attack: with trust on, `delete_note` (reviewed as destructive)
/// re-declares itself read-only and closed-world. It must still ask, be
/// offered to the model as reviewed, and no grant may cover it; only
/// keeping it again accepts the new claims.
#[tokio::test]
async fn a_changed_tool_runs_only_as_reviewed_even_when_it_re_declares_itself_safe() {
    let s = setup(|_| {}).await;
    assert_eq!(
        patch(&s, json!({"trust_annotations": true})).await.status(),
        StatusCode::OK
    );
    let reviewed = tool(&s, "delete_note").await;
    assert!(s.demo.state().drift(DriftField::Disguise));
    refreshed(&s).await;
    let changed = tool(&s, "delete_note").await;
    assert_eq!(changed["review_state"], "changed");
    assert_ne!(changed["descriptor_digest"], reviewed["descriptor_digest"]);

    // The model is offered the descriptor the user reviewed.
    let state = state_of(&s.app).await;
    let specs = countersign::tools::connector::ConnectorTools
        .tools_for(&state, s.user)
        .await;
    let spec = specs
        .iter()
        .find(|t| t.name == "demo__delete_note")
        .expect("still offered");
    assert!(
        spec.description.starts_with("Permanently deletes"),
        "reviewed description, not the server's new one: {}",
        spec.description
    );

    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "delete_note", json!({"id": "note-2"})).await;
    assert_eq!(card["reason"], "This tool changed since you reviewed it");
    assert_eq!(card["offered_grants"], json!(["once"]));
    // The card states the reviewed risk and words, not the disguise.
    assert_eq!(
        card["risk"],
        json!({"risky": true, "flags": ["deletes_data", "stays_inside"]}),
        "{card}"
    );
    assert!(
        card["tool_description"]
            .as_str()
            .is_some_and(|d| d.starts_with("Permanently deletes")),
        "{card}"
    );
    assert_eq!(s.demo.calls().count("delete_note"), 0, "asked, did not run");
    // No grant covers a changed tool: "turn" and "always" are refused and
    // decide nothing.
    for grant in ["turn", "always"] {
        let res = approve(&s, &card, grant).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{grant}");
        let body: Value = res.json().await.expect("JSON");
        assert_eq!(body["detail"], "grant_not_offered");
    }
    assert_eq!(
        ledger(&s.app, card["id"].as_str().expect("id")).await.0,
        PendingCallStatus::Pending
    );
    assert_eq!(approve(&s, &card, "once").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;
    assert_eq!(s.demo.calls().count("delete_note"), 1);

    // Keeping it again (with the digest now shown) accepts the change: its
    // new, trusted claims now let it run without a card.
    assert_eq!(
        keep(&s, "delete_note", &changed["descriptor_digest"])
            .await
            .status(),
        StatusCode::NO_CONTENT
    );
    let events = turn_events(
        &s,
        &mut stream,
        r#"use demo__delete_note with {"id": "note-3"}"#,
    )
    .await;
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "mcp_tool_call" && e["origin"] == "trusted_annotations"),
        "{events:?}"
    );
    assert_eq!(s.demo.calls().count("delete_note"), 2);
}

/// A turn grant is for the descriptor it was given on: re-keeping a
/// changed tool in the middle of a turn does not carry the grant over.
#[tokio::test]
async fn a_turn_grant_does_not_cover_a_tool_that_changed_and_was_kept_again_in_the_same_turn() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    s.app
        .send(
            &s.chat,
            r#"use demo__drifting_tool with {"matter": "M-1"} then use demo__echo with {"text": "hold"} then use demo__drifting_tool with {"matter": "M-2"}"#,
        )
        .await;
    let first = crate::helpers::event_of(
        &stream.until("mcp_confirmation_required").await,
        "mcp_confirmation_required",
    );
    assert_eq!(approve(&s, &first, "turn").await.status(), StatusCode::OK);
    // The echo card holds the turn while the tool changes and is kept again.
    let hold = crate::helpers::event_of(
        &stream.until("mcp_confirmation_required").await,
        "mcp_confirmation_required",
    );
    assert_eq!(hold["tool_name"], "echo");
    assert!(s.demo.state().drift(DriftField::Description));
    refreshed(&s).await;
    let changed = tool(&s, "drifting_tool").await;
    assert_eq!(
        keep(&s, "drifting_tool", &changed["descriptor_digest"])
            .await
            .status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(approve(&s, &hold, "once").await.status(), StatusCode::OK);
    let events = stream.until("mcp_confirmation_required").await;
    let third = crate::helpers::event_of(&events, "mcp_confirmation_required");
    assert_eq!(third["tool_name"], "drifting_tool", "the third call asks");
    assert_eq!(s.demo.calls().count("drifting_tool"), 1);
    decide_with(
        &s.app,
        &third,
        json!({"decision": "deny", "arguments_digest": third["arguments_digest"]}),
    )
    .await;
    stream.until("turn_finished").await;
}

/// `{"n": 9007199254740993}` would be shown exactly and sent as
/// 9007199254740992: refused before any card, the model told why.
#[tokio::test]
async fn numbers_that_json_canonicalisation_cannot_carry_exactly_are_refused_before_any_card() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    for (arguments, why) in [
        (r#"{"text": "x", "n": 9007199254740993}"#, "2^53 + 1"),
        (r#"{"text": "x", "n": -9007199254740993}"#, "-(2^53 + 1)"),
        (r#"{"text": "x", "n": 18446744073709551615}"#, "u64::MAX"),
        (
            r#"{"text": "x", "deep": [{"n": 12345678901234567890}]}"#,
            "nested",
        ),
        (r#"{"text": "x", "z": -0.0}"#, "negative zero"),
    ] {
        let events =
            turn_events(&s, &mut stream, &format!("use demo__echo with {arguments}")).await;
        assert!(
            !events
                .iter()
                .any(|e| e["type"] == "mcp_confirmation_required"),
            "{why}: no card"
        );
        let refused = events
            .iter()
            .find(|e| e["type"] == "mcp_tool_call")
            .unwrap_or_else(|| panic!("{why}: the call is reported: {events:?}"));
        assert_eq!(refused["status"], "error", "{why}");
        let error = refused["error"].as_str().expect("error text");
        assert!(
            error.contains("cannot be carried exactly"),
            "{why}: {error}"
        );
    }
    assert_eq!(s.demo.calls().total, 0, "nothing reached the server");

    // The largest safe integer is shown, signed and sent as itself.
    let (_, card) = propose(
        &s,
        &mut stream,
        "echo",
        json!({"text": "x", "n": 9_007_199_254_740_991_i64}),
    )
    .await;
    assert_eq!(card["arguments"]["n"], json!(9_007_199_254_740_991_i64));
    assert_eq!(approve(&s, &card, "once").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;
    let calls = s.demo.calls();
    assert_eq!(calls.total, 1);
    assert_eq!(
        calls.calls[0].arguments["n"],
        json!(9_007_199_254_740_991_i64)
    );
}

/// A token stored for one host must never reach another: changing the URL
/// clears credentials, grants, trust and every review, ends waiting calls
/// as denied, and is checked by the SSRF guard at the PATCH.
#[tokio::test]
async fn a_url_change_is_a_new_trust_decision_that_clears_credentials_grants_trust_and_review() {
    let s = setup(|_| {}).await;
    let res = patch(
        &s,
        json!({"trust_annotations": true, "auth": {"type": "bearer", "token": "s3cret-for-the-demo"}}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    // An always-rule and a waiting card.
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(
        &s,
        &mut stream,
        "add_note",
        json!({"title": "t", "body": "b"}),
    )
    .await;
    assert_eq!(approve(&s, &card, "always").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;
    let (_, waiting) = propose(&s, &mut stream, "delete_note", json!({"id": "note-1"})).await;

    // The SSRF guard answers at the PATCH: a private address is refused
    // and nothing changes.
    let res = patch(&s, json!({"url": "http://10.0.0.7/mcp"})).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let before = s
        .app
        .get_json(&format!("/api/connectors/{}", s.connector))
        .await;
    assert_eq!(before["token_set"], true);
    assert_eq!(before["trust_annotations"], true);

    // Same server under another spelling: a new URL all the same.
    let new_url = format!("{}?v=2", s.demo.mcp_url());
    let res = patch(&s, json!({"url": new_url})).await;
    assert_eq!(res.status(), StatusCode::OK);
    let after: Value = res.json().await.expect("JSON");
    assert_eq!(after["url"], new_url.as_str());
    assert_eq!(after["token_set"], false, "credentials cleared");
    assert_eq!(after["auth_type"], "none");
    assert_eq!(after["trust_annotations"], false, "trust cleared");
    assert_eq!(after["grant_count"], 0, "grants cleared");
    assert_eq!(after["tool_counts"], json!({}), "every review cleared");
    let mut db = s.app.superuser().await;
    let secrets: i64 =
        sqlx::query_scalar("select count(*) from connector_secrets where connector_id = $1::uuid")
            .bind(&s.connector)
            .fetch_one(&mut db)
            .await
            .expect("count");
    assert_eq!(secrets, 0, "the sealed token is gone");
    // The waiting call ended denied; the server never saw it.
    let events = stream.until("turn_finished").await;
    let resolved = crate::helpers::event_of(&events, "mcp_confirmation_resolved");
    assert_eq!(resolved["decision"], "denied");
    assert_eq!(
        ledger(&s.app, waiting["id"].as_str().expect("id")).await.0,
        PendingCallStatus::Denied
    );
    assert_eq!(s.demo.calls().count("delete_note"), 0);
    // After a refresh the tools are new again, and nothing is offered
    // until the user keeps them.
    refreshed(&s).await;
    assert_eq!(tool(&s, "add_note").await["review_state"], "new");
    let state = state_of(&s.app).await;
    let specs = countersign::tools::connector::ConnectorTools
        .tools_for(&state, s.user)
        .await;
    assert!(specs.is_empty(), "{specs:?}");
}

/// The ledger binds the URL shown on the card: an approved call whose
/// connector now points elsewhere does not run there.
#[tokio::test]
async fn an_approved_call_never_runs_against_another_url_than_the_one_it_was_proposed_for() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "echo", json!({"text": "hello"})).await;
    // Behind the API's back (as a racing PATCH would between the decision
    // and the claim): the stored URL moves, the tools stay kept.
    let mut db = s.app.superuser().await;
    sqlx::query("update connectors set url = $2 where id = $1::uuid")
        .bind(&s.connector)
        .bind(s.demo.mcp_url().replace("/mcp", "/mcp?moved=1"))
        .execute(&mut db)
        .await
        .expect("move");
    assert_eq!(approve(&s, &card, "once").await.status(), StatusCode::OK);
    let events = stream.until("turn_finished").await;
    let call = crate::helpers::event_of(&events, "mcp_tool_call");
    assert_eq!(call["status"], "error");
    assert!(
        call["error"]
            .as_str()
            .expect("error")
            .contains("address changed"),
        "{call}"
    );
    assert_eq!(s.demo.calls().total, 0);
    assert_eq!(
        ledger(&s.app, card["id"].as_str().expect("id")).await.0,
        PendingCallStatus::Failed
    );
}

/// A URL change replaces the credentials with the URL. Whoever read the
/// URL before the change and dials it now (a call's card; an approved
/// call's session opens at the card's URL beside its claim) must not get
/// the new URL's credentials to send there: they are read together with
/// the URL they belong to, and only while it is the one being dialled.
#[tokio::test]
async fn credentials_are_read_only_for_the_url_they_belong_to() {
    use countersign::connectors::{self, Auth, ConnectorError};
    let s = setup(|_| {}).await;
    let old_url = s.demo.mcp_url();
    let res = patch(
        &s,
        json!({"auth": {"type": "bearer", "token": "for-the-old-url"}}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let state = state_of(&s.app).await;
    let id = s.connector.parse().expect("uuid");
    let read = |url: String| {
        let state = state.clone();
        let user = s.user;
        async move { connectors::load_auth_at(&state.db, state.secrets.as_ref(), user, id, &url).await }
    };
    let auth = read(old_url.clone()).await.expect("read");
    assert!(
        matches!(&auth, Auth::Bearer(t) if t == "for-the-old-url"),
        "{auth:?}"
    );

    // The user moves the connector and gives the new URL its own token.
    let new_url = format!("{old_url}?moved=1");
    let res = patch(
        &s,
        json!({"url": new_url, "auth": {"type": "bearer", "token": "for-the-new-url"}}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let stale = read(old_url).await;
    assert!(
        matches!(stale, Err(ConnectorError::Moved)),
        "the old URL would get: {stale:?}"
    );
    let auth = read(new_url).await.expect("read");
    assert!(
        matches!(&auth, Auth::Bearer(t) if t == "for-the-new-url"),
        "{auth:?}"
    );
}

/// Adding a connector with credentials, or changing its URL, needs a
/// recent second factor when the user has one.
#[tokio::test]
async fn credentials_on_add_and_a_url_change_need_a_step_up_with_mfa() {
    let s = setup(|_| {}).await;
    crate::mfa::enrolled(&s.app).await;
    // Confirming counted as a step-up; let it lapse.
    let mut db = s.app.superuser().await;
    sqlx::query("update sessions set mfa_verified_at = now() - interval '11 minutes'")
        .execute(&mut db)
        .await
        .expect("lapse");
    let res = s
        .app
        .post(
            "/api/connectors",
            &json!({"name": "Other", "url": s.demo.mcp_url(), "auth": {"type": "bearer", "token": "t0ken"}}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let body: Value = res.json().await.expect("JSON");
    assert_eq!(body["detail"], "mfa_required");
    let res = patch(&s, json!({"url": format!("{}?v=2", s.demo.mcp_url())})).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let unchanged = s
        .app
        .get_json(&format!("/api/connectors/{}", s.connector))
        .await;
    assert_eq!(unchanged["url"], s.demo.mcp_url().as_str());
    // Without credentials, adding needs none.
    let res = s
        .app
        .post(
            "/api/connectors",
            &json!({"name": "Plain", "url": s.demo.mcp_url()}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
}

/// "Keep" names the descriptor the user saw: if the server changed the
/// tool after they looked, nothing is kept.
#[tokio::test]
async fn a_review_naming_a_stale_digest_is_a_409_and_changes_nothing() {
    let s = setup(|_| {}).await;
    let reviewed = tool(&s, "drifting_tool").await;
    assert!(s.demo.state().drift(DriftField::Description));
    refreshed(&s).await;
    let looked_at = tool(&s, "drifting_tool").await;
    assert_eq!(looked_at["review_state"], "changed");
    // While the user reads "what changed", the server changes it again.
    assert!(s.demo.state().drift(DriftField::Annotations));
    refreshed(&s).await;
    let now = tool(&s, "drifting_tool").await;
    assert_ne!(now["descriptor_digest"], looked_at["descriptor_digest"]);

    // Alone, or beside a tool whose digest is current: 409, nothing saved.
    let echo = tool(&s, "echo").await;
    let res = review(
        &s,
        json!({
            "keep": [{"name": "drifting_tool", "descriptor_digest": looked_at["descriptor_digest"]}],
            "decline": [{"name": "echo", "descriptor_digest": echo["descriptor_digest"]}]
        }),
    )
    .await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    let body: Value = res.json().await.expect("JSON");
    assert!(
        body["detail"]
            .as_str()
            .is_some_and(|d| d.contains("changed since you looked")),
        "{body}"
    );
    let after = tool(&s, "drifting_tool").await;
    assert_eq!(after["review_state"], "changed");
    assert_eq!(
        after["reviewed_descriptor"]["description"],
        reviewed["description"]
    );
    assert_eq!(
        tool(&s, "echo").await["review_state"],
        "kept",
        "rolled back"
    );

    // A bare name cannot keep anything.
    let res = review(&s, json!({"keep": ["drifting_tool"]})).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(tool(&s, "drifting_tool").await["review_state"], "changed");
    // The digest now shown keeps it.
    assert_eq!(
        keep(&s, "drifting_tool", &now["descriptor_digest"])
            .await
            .status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(tool(&s, "drifting_tool").await["review_state"], "kept");
}
