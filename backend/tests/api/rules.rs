//! Rules with conditions (issue 46, item 3): `/api/rules` and
//! `/api/admin/rules` against the gate, end to end. The demo connector's
//! host is 127.0.0.1; the offline model calls what the message says.

use crate::helpers::{Setup, TestApp, approve_with, decide, propose, setup, trust, turn};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

async fn make(app: &TestApp, path: &str, body: Value) -> reqwest::Response {
    app.post(path, &body).await
}

async fn rule(app: &TestApp, body: Value) -> Value {
    let res = make(app, "/api/rules", body.clone()).await;
    assert_eq!(res.status(), StatusCode::CREATED, "POST /api/rules {body}");
    res.json().await.expect("JSON")
}

async fn admin_rule(app: &TestApp, body: Value) -> Value {
    let res = make(app, "/api/admin/rules", body.clone()).await;
    assert_eq!(
        res.status(),
        StatusCode::CREATED,
        "POST /api/admin/rules {body}"
    );
    res.json().await.expect("JSON")
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn call_of<'a>(events: &'a [Value], tool: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == "mcp_tool_call" && e["tool_name"] == tool)
        .unwrap_or_else(|| panic!("no {tool} call in {events:?}"))
}

async fn decided(s: &Setup, tool: &str) -> Vec<Value> {
    s.app
        .get_array("/api/activity")
        .await
        .into_iter()
        .filter(|e| e["kind"] == "decided" && e["tool_name"] == tool)
        .collect()
}

#[tokio::test]
async fn a_deny_rule_refuses_a_call_without_asking_and_names_itself() {
    let s = setup(|_| {}).await;
    // Even an "always" grant does not outweigh a deny.
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "delete_note", json!({"id": "note-1"})).await;
    assert_eq!(
        approve_with(&s.app, &card, "always").await.status(),
        StatusCode::OK
    );
    stream.until("turn_finished").await;
    assert_eq!(s.demo.calls().count("delete_note"), 1);

    let made = rule(
        &s.app,
        json!({"connector_host": "127.0.0.1", "tool": "delete_*", "effect": "deny"}),
    )
    .await;
    assert_eq!(made["scope"], "user");
    assert_eq!(made["description"], "Deny 127.0.0.1: delete_*");

    let events = turn(
        &s,
        &mut stream,
        r#"use demo__delete_note with {"id": "note-2"}"#,
    )
    .await;
    assert!(
        of_type(&events, "mcp_confirmation_required").is_empty(),
        "{events:?}"
    );
    let call = call_of(&events, "delete_note");
    assert_eq!(call["status"], "error", "{call}");
    assert_eq!(
        call["error"],
        "A rule refuses this call (your rule: \u{201c}Deny 127.0.0.1: delete_*\u{201d}); nobody \
         was asked and nothing ran."
    );
    assert_eq!(call["rule"]["id"], made["id"]);
    assert_eq!(call["rule"]["effect"], "deny");
    assert_eq!(s.demo.calls().count("delete_note"), 1, "nothing ran");
    let log = decided(&s, "delete_note").await;
    let refused = log
        .iter()
        .find(|e| e["decision"] == "denied_by_rule")
        .unwrap_or_else(|| panic!("the refusal in {log:?}"));
    assert_eq!(refused["outcome"], "not_run");
    assert_eq!(refused["rule"]["description"], "Deny 127.0.0.1: delete_*");

    // Removed, the rule decides nothing: the always grant applies again.
    let id = made["id"].as_str().expect("id");
    let res = s
        .app
        .request(Method::DELETE, &format!("/api/rules/{id}"), None)
        .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let events = turn(
        &s,
        &mut stream,
        r#"use demo__delete_note with {"id": "note-3"}"#,
    )
    .await;
    assert_eq!(call_of(&events, "delete_note")["origin"], "always_grant");
}

#[tokio::test]
async fn an_allow_rule_runs_only_the_calls_whose_every_value_meets_it() {
    let s = setup(|_| {}).await;
    let made = rule(
        &s.app,
        json!({
            "connector_host": "127.0.0.1",
            "tool": "echo",
            "conditions": [{"argument": "text", "op": "ends_with", "value": "@firm.example"}],
            "effect": "allow"
        }),
    )
    .await;
    assert_eq!(
        made["description"],
        "Allow 127.0.0.1: echo when text ends with @firm.example"
    );
    assert_eq!(s.app.get_array("/api/rules").await.len(), 1);
    let mut stream = s.app.stream(&s.chat, None).await;
    let events = turn(
        &s,
        &mut stream,
        r#"use demo__echo with {"text": "ann@firm.example"}"#,
    )
    .await;
    assert!(
        of_type(&events, "mcp_confirmation_required").is_empty(),
        "{events:?}"
    );
    let call = call_of(&events, "echo");
    assert_eq!(call["status"], "ok");
    assert_eq!(call["origin"], "rule");
    assert_eq!(call["rule"]["description"], made["description"]);
    let log = decided(&s, "echo").await;
    assert_eq!(log[0]["decision"], "rule", "{log:?}");
    assert_eq!(log[0]["rule"]["id"], made["id"]);

    // A second address hidden in the same text, or one outside: a card.
    for text in ["x@evil.example, ann@firm.example", "x@evil.example"] {
        s.app
            .send(
                &s.chat,
                &format!(r#"use demo__echo with {{"text": "{text}"}}"#),
            )
            .await;
        let events = stream.until("mcp_confirmation_required").await;
        let (_, card) = events.last().expect("card").clone();
        assert_eq!(card["tool_name"], "echo");
        assert_eq!(decide(&s.app, &card, "deny").await.status(), StatusCode::OK);
        stream.until("turn_finished").await;
    }
    assert_eq!(s.demo.calls().count("echo"), 1);
}

/// An allow rule never lets a flagged call run: text from a tool result
/// going to an open-world tool asks whatever rule covers the tool. Seen
/// to fail with the allow rule checked before the flow in `gate::decide`.
#[tokio::test]
async fn an_allow_rule_never_lets_a_call_carrying_a_result_run_unseen() {
    let s = setup(|_| {}).await;
    trust(&s).await;
    rule(
        &s.app,
        json!({"connector_host": "*", "tool": "*", "effect": "allow"}),
    )
    .await;
    let mut stream = s.app.stream(&s.chat, None).await;
    s.app
        .send(
            &s.chat,
            r#"use demo__search_notes with {"query": "lease"} then use demo__echo with {"text": "FYI {{result}}"}"#,
        )
        .await;
    let events = stream.until("mcp_confirmation_required").await;
    let (_, card) = events.last().expect("card").clone();
    assert_eq!(card["tool_name"], "echo");
    assert_eq!(
        card["reason"],
        "this call sends text from a tool's result elsewhere, so it always asks"
    );
    assert_eq!(card["offered_grants"], json!(["once"]));
    assert_eq!(decide(&s.app, &card, "deny").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;
    assert_eq!(s.demo.calls().count("echo"), 0);
}

#[tokio::test]
async fn an_ask_rule_asks_despite_an_always_grant_and_the_card_names_it() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "echo", json!({"text": "hello"})).await;
    assert_eq!(
        approve_with(&s.app, &card, "always").await.status(),
        StatusCode::OK
    );
    stream.until("turn_finished").await;
    rule(
        &s.app,
        json!({
            "connector_host": "127.0.0.1",
            "tool": "echo",
            "conditions": [{"argument": "text", "op": "glob", "value": "*privileged*"}],
            "effect": "ask"
        }),
    )
    .await;
    // Not matching: the always grant runs it.
    let events = turn(
        &s,
        &mut stream,
        r#"use demo__echo with {"text": "hello again"}"#,
    )
    .await;
    assert_eq!(call_of(&events, "echo")["origin"], "always_grant");
    // Matching: a card, naming the rule, with "Allow once" only.
    let (_, card) = propose(
        &s,
        &mut stream,
        "echo",
        json!({"text": "a PRIVILEGED memo"}),
    )
    .await;
    assert_eq!(
        card["reason"],
        "Your rule asks for this call: \u{201c}Always ask for 127.0.0.1: echo when text matches \
         *privileged*\u{201d}"
    );
    assert_eq!(card["offered_grants"], json!(["once"]));
    assert_eq!(decide(&s.app, &card, "deny").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;
}

#[tokio::test]
async fn admin_rules_decide_before_a_users_and_each_change_enters_the_chain() {
    let s = setup(|_| {}).await;
    // A second user is no administrator.
    let other = s.app.at(&s.app.base);
    other.signed_up_user().await;
    let body = json!({"connector_host": "*", "tool": "echo", "effect": "deny"});
    for (method, path) in [
        (Method::GET, "/api/admin/rules"),
        (Method::POST, "/api/admin/rules"),
    ] {
        let res = other
            .request(method.clone(), path, Some(body.clone()))
            .await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{method} {path}");
    }
    // The user allows echo; the administrator denies it for everyone.
    rule(
        &s.app,
        json!({"connector_host": "127.0.0.1", "tool": "echo", "effect": "allow"}),
    )
    .await;
    let admin = admin_rule(&s.app, body).await;
    assert_eq!(admin["scope"], "admin");
    assert!(admin["created_by"].is_string(), "{admin}");
    // The user's list holds their own rules only; the admin's lists the
    // admin's.
    assert_eq!(s.app.get_array("/api/rules").await.len(), 1);
    assert_eq!(s.app.get_array("/api/admin/rules").await.len(), 1);
    assert_eq!(other.get_json("/api/rules").await, json!([]));
    let mut stream = s.app.stream(&s.chat, None).await;
    let events = turn(&s, &mut stream, r#"use demo__echo with {"text": "hi"}"#).await;
    let call = call_of(&events, "echo");
    assert_eq!(call["status"], "error");
    assert_eq!(call["rule"]["scope"], "admin");
    assert!(
        call["error"]
            .as_str()
            .is_some_and(|e| e.contains("your organisation's rule")),
        "{call}"
    );
    assert_eq!(s.demo.calls().count("echo"), 0);
    // Removing it is recorded too; a user cannot remove it.
    let id = admin["id"].as_str().expect("id");
    let res = s
        .app
        .request(Method::DELETE, &format!("/api/rules/{id}"), None)
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND, "not the user's own");
    let res = s
        .app
        .request(Method::DELETE, &format!("/api/admin/rules/{id}"), None)
        .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let changes: Vec<Value> = s
        .app
        .get_array("/api/activity")
        .await
        .into_iter()
        .filter(|e| e["kind"] == "policy_changed")
        .flat_map(|e| e["changes"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["setting"] == "rules")
        .collect();
    assert_eq!(
        changes,
        [
            json!({"setting": "rules", "before": "Deny any connector: echo", "after": ""}),
            json!({"setting": "rules", "before": "", "after": "Deny any connector: echo"}),
        ],
        "newest first"
    );
    // With the admin's rule gone, the user's allow applies.
    let events = turn(&s, &mut stream, r#"use demo__echo with {"text": "hi"}"#).await;
    assert_eq!(call_of(&events, "echo")["origin"], "rule");
}

#[tokio::test]
async fn a_users_allow_rule_is_refused_and_suspended_while_the_policy_forbids_always_allow() {
    let s = setup(|_| {}).await;
    let allow = json!({"connector_host": "127.0.0.1", "tool": "echo", "effect": "allow"});
    rule(&s.app, allow.clone()).await;
    let res = s
        .app
        .request(
            Method::PUT,
            "/api/admin/policy",
            Some(json!({"forbid_always_allow": true})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let res = make(&s.app, "/api/rules", allow).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        res.json::<Value>().await.expect("JSON")["detail"],
        "forbidden_by_policy"
    );
    // Ask and deny rules only narrow: still allowed.
    rule(
        &s.app,
        json!({"connector_host": "127.0.0.1", "tool": "add_note", "effect": "ask"}),
    )
    .await;
    let listed = s.app.get_array("/api/rules").await;
    assert_eq!(listed[0]["suspended_by_policy"], true, "{listed:?}");
    assert!(listed[1].get("suspended_by_policy").is_none());
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "echo", json!({"text": "hi"})).await;
    assert_eq!(decide(&s.app, &card, "deny").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;
}

#[tokio::test]
async fn a_rule_that_cannot_be_read_is_422_and_anothers_is_404() {
    let s = setup(|_| {}).await;
    for (body, words) in [
        (
            json!({"connector_host": "https://x.example/mcp", "tool": "*", "effect": "deny"}),
            "is not a connector host",
        ),
        (
            json!({"connector_host": "*", "tool": "send mail", "effect": "deny"}),
            "spaces",
        ),
        (
            json!({"connector_host": "*", "tool": "*", "effect": "deny",
                   "conditions": [{"argument": "amount", "op": "at_most", "value": "lots"}]}),
            "need a number",
        ),
        (
            json!({"connector_host": "*", "tool": "*", "effect": "deny",
                   "conditions": [{"op": "destination_in", "value": ["not a host at all"]}]}),
            "not a domain",
        ),
        (
            json!({"connector_host": "*", "tool": "*", "effect": "maybe"}),
            "allow, ask or deny",
        ),
    ] {
        let res = make(&s.app, "/api/rules", body.clone()).await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        let detail = res.json::<Value>().await.expect("JSON")["detail"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(detail.contains(words), "{body}: {detail}");
    }
    let mine = rule(
        &s.app,
        json!({"connector_host": "*", "tool": "*", "effect": "ask"}),
    )
    .await;
    let other = s.app.at(&s.app.base);
    other.signed_up_user().await;
    let id = mine["id"].as_str().expect("id");
    let res = other
        .request(Method::DELETE, &format!("/api/rules/{id}"), None)
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert_eq!(s.app.get_array("/api/rules").await.len(), 1);
}

/// Admin policy `internal_destinations`: a flow whose connector and every
/// destination are inside the firm is shown with its provenance but not
/// flagged, so the user's "Always allow" runs it; one address outside
/// flags it again.
#[tokio::test]
async fn a_flow_that_stays_inside_the_firm_is_not_flagged_as_leaving() {
    let s = setup(|_| {}).await;
    trust(&s).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "echo", json!({"text": "hello"})).await;
    assert_eq!(
        approve_with(&s.app, &card, "always").await.status(),
        StatusCode::OK
    );
    stream.until("turn_finished").await;
    let res = s
        .app
        .request(
            Method::PUT,
            "/api/admin/policy",
            Some(json!({"internal_destinations": ["127.0.0.1", "Firm.Example", "not ok/x"]})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let res = s
        .app
        .request(
            Method::PUT,
            "/api/admin/policy",
            Some(json!({"internal_destinations": ["127.0.0.1", "Firm.Example"]})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let policy: Value = res.json().await.expect("JSON");
    assert_eq!(
        policy["internal_destinations"],
        json!(["127.0.0.1", "firm.example"])
    );

    let events = turn(
        &s,
        &mut stream,
        r#"use demo__search_notes with {"query": "lease"} then use demo__echo with {"text": "to ann@firm.example: {{result}}"}"#,
    )
    .await;
    assert!(
        of_type(&events, "mcp_confirmation_required").is_empty(),
        "{events:?}"
    );
    assert_eq!(call_of(&events, "echo")["origin"], "always_grant");

    s.app
        .send(
            &s.chat,
            r#"use demo__search_notes with {"query": "lease"} then use demo__echo with {"text": "to ann@firm.example, x@evil.example: {{result}}"}"#,
        )
        .await;
    let events = stream.until("mcp_confirmation_required").await;
    let (_, card) = events.last().expect("card").clone();
    assert_eq!(
        card["provenance"]["flows"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(decide(&s.app, &card, "deny").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;
}

/// A stolen session without the second factor cannot widen what runs
/// unseen: an allow rule needs a recent step-up, as "Always allow" does;
/// ask and deny rules only narrow and need none. Seen to fail without
/// `require_step_up` in `create_rule`.
#[tokio::test]
async fn an_allow_rule_needs_a_recent_step_up_and_a_narrowing_one_does_not() {
    let s = setup(|_| {}).await;
    crate::mfa::enrolled(&s.app).await;
    let mut db = s.app.superuser().await;
    sqlx::query("update sessions set mfa_verified_at = now() - interval '11 minutes'")
        .execute(&mut db)
        .await
        .expect("lapse");
    let allow = json!({"connector_host": "*", "tool": "*", "effect": "allow"});
    let res = make(&s.app, "/api/rules", allow).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        res.json::<Value>().await.expect("JSON")["detail"],
        "mfa_required"
    );
    assert_eq!(s.app.get_json("/api/rules").await, json!([]));
    rule(
        &s.app,
        json!({"connector_host": "*", "tool": "*", "effect": "deny"}),
    )
    .await;
    let res = make(
        &s.app,
        "/api/admin/rules",
        json!({"connector_host": "*", "tool": "*", "effect": "deny"}),
    )
    .await;
    assert_eq!(
        res.status(),
        StatusCode::FORBIDDEN,
        "admin changes need it too"
    );
}
