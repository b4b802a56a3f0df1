//! `/api/admin/…` (issue 14): the admin policy against the gate and the
//! API — each flag wins over every user grant — and the accounts an
//! administrator manages. The fixture's user is the deployment's first,
//! so its admin; a second user on a fresh client is not.

use crate::helpers::{
    GOOD_PASSWORD, Setup, TestApp, add_connector, approve_with, decide, decide_with, ledger,
    propose, setup, spawn_app_with, trust, turn,
};
use countersign_api::PendingCallStatus;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

async fn put_policy(app: &TestApp, body: Value) -> reqwest::Response {
    app.request(Method::PUT, "/api/admin/policy", Some(body))
        .await
}

async fn set_policy(s: &Setup, body: Value) -> Value {
    let res = put_policy(&s.app, body).await;
    assert_eq!(res.status(), StatusCode::OK, "PUT policy");
    res.json().await.expect("JSON")
}

/// A second person on the same server, signed in on a client of their own.
async fn second_user(app: &TestApp) -> (TestApp, uuid::Uuid, String) {
    let other = app.at(&app.base);
    let (id, email) = other.signed_up_user().await;
    (other, id, email)
}

async fn detail(res: reqwest::Response) -> String {
    res.json::<Value>().await.expect("JSON")["detail"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn ran_unasked(events: &[Value], origin: &str) -> bool {
    events
        .iter()
        .any(|e| e["type"] == "mcp_tool_call" && e["status"] == "ok" && e["origin"] == origin)
        && !events
            .iter()
            .any(|e| e["type"] == "mcp_confirmation_required")
}

#[tokio::test]
async fn everyone_but_an_admin_is_refused_on_every_admin_endpoint() {
    let s = setup(|_| {}).await;
    let (other, other_id, _) = second_user(&s.app).await;
    let anonymous = s.app.at(&s.app.base);
    let patch_path = format!("/api/admin/users/{other_id}");
    let calls: [(Method, &str, Option<Value>); 5] = [
        (Method::GET, "/api/admin/policy", None),
        (
            Method::PUT,
            "/api/admin/policy",
            Some(json!({"forbid_always_allow": false})),
        ),
        (Method::GET, "/api/admin/users", None),
        (Method::PATCH, &patch_path, Some(json!({"is_admin": true}))),
        (Method::GET, "/api/admin/overview", None),
    ];
    for (method, path, body) in calls {
        let res = other.request(method.clone(), path, body.clone()).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{method} {path}");
        let res = anonymous.request(method.clone(), path, body).await;
        assert!(
            matches!(
                res.status(),
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
            ),
            "anonymous {method} {path}: {}",
            res.status()
        );
    }
    // The non-admin did not make themselves one.
    let users = s.app.get_array("/api/admin/users").await;
    let them = users
        .iter()
        .find(|u| u["id"] == other_id.to_string())
        .expect("listed");
    assert_eq!(them["is_admin"], false);
    assert_eq!(users.len(), 2);
    let overview = s.app.get_json("/api/admin/overview").await;
    assert_eq!(overview["users"], 2);
    assert_eq!(overview["connectors"], 1);
}

#[tokio::test]
async fn forbid_always_allow_suspends_an_existing_rule_and_refuses_new_ones() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let args = json!({"title": "a", "body": "b"});
    let (_, card) = propose(&s, &mut stream, "add_note", args.clone()).await;
    let res = approve_with(&s.app, &card, "always").await;
    assert_eq!(res.status(), StatusCode::OK);
    stream.until("turn_finished").await;
    let message = format!("use demo__add_note with {args}");
    let events = turn(&s, &mut stream, &message).await;
    assert!(ran_unasked(&events, "always_grant"), "the rule applies");

    // The rule was made before the policy: it stops applying.
    let policy = set_policy(&s, json!({"forbid_always_allow": true})).await;
    assert_eq!(policy["forbid_always_allow"], true);
    assert_eq!(policy["forbid_trust_annotations"], false, "left out: kept");
    let grants = s.app.get_array("/api/grants").await;
    assert_eq!(grants.len(), 1);
    assert_eq!(grants[0]["suspended"], true);
    assert_eq!(grants[0]["suspended_by_policy"], true);

    s.app.send(&s.chat, &message).await;
    let events = stream.until("mcp_confirmation_required").await;
    let card = events.last().expect("a card").1.clone();
    assert_eq!(
        card["reason"],
        "your administrator has turned off \u{201c}Always allow\u{201d}, so your rule for this \
         tool does not apply"
    );
    assert_eq!(
        card["offered_grants"],
        json!(["once", "turn"]),
        "the card does not offer it"
    );
    // Nor does the API take it: not for this card, which never offered it…
    let always = json!({"decision": "approve", "grant": "always", "arguments_digest": card["arguments_digest"]});
    let res = decide_with(&s.app, &card, always.clone()).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(detail(res).await, "forbidden_by_policy");
    assert_eq!(
        ledger(&s.app, card["id"].as_str().expect("id")).await.0,
        PendingCallStatus::Pending,
        "nothing was decided"
    );
    assert_eq!(decide(&s.app, &card, "deny").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;
    assert_eq!(
        s.demo.calls().count("add_note"),
        2,
        "the card's call never ran"
    );

    // Lifted: the same rule applies again (it was suspended, not deleted).
    set_policy(&s, json!({"forbid_always_allow": false})).await;
    let events = turn(&s, &mut stream, &message).await;
    assert!(ran_unasked(&events, "always_grant"));
}

#[tokio::test]
async fn a_card_shown_before_the_policy_cannot_be_approved_always_after_it() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "add_note", json!({"title": "x"})).await;
    assert_eq!(card["offered_grants"], json!(["once", "turn", "always"]));
    set_policy(&s, json!({"forbid_always_allow": true})).await;
    let res = approve_with(&s.app, &card, "always").await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(detail(res).await, "forbidden_by_policy");
    assert!(s.app.get_array("/api/grants").await.is_empty());
    assert_eq!(decide(&s.app, &card, "deny").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;
}

#[tokio::test]
async fn forbid_trust_annotations_stops_trusted_tools_running_unasked_and_the_switch() {
    let s = setup(|_| {}).await;
    trust(&s).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let message = r#"use demo__search_notes with {"query":"lease"}"#;
    let events = turn(&s, &mut stream, message).await;
    assert!(ran_unasked(&events, "trusted_annotations"));

    set_policy(&s, json!({"forbid_trust_annotations": true})).await;
    let connector = s
        .app
        .get_json(&format!("/api/connectors/{}", s.connector))
        .await;
    assert_eq!(
        connector["trust_annotations"], true,
        "the user's switch stays"
    );
    assert_eq!(connector["trust_forbidden_by_policy"], true);
    s.app.send(&s.chat, message).await;
    let events = stream.until("mcp_confirmation_required").await;
    let card = events.last().expect("a card").1.clone();
    assert_eq!(
        card["reason"],
        "your administrator has turned off trusting servers' safety annotations"
    );
    assert_eq!(decide(&s.app, &card, "deny").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;
    assert_eq!(s.demo.calls().count("search_notes"), 1);

    // The switch cannot be turned on (off is always allowed).
    let path = format!("/api/connectors/{}", s.connector);
    let off = s
        .app
        .request(
            Method::PATCH,
            &path,
            Some(json!({"trust_annotations": false})),
        )
        .await;
    assert_eq!(off.status(), StatusCode::OK);
    let on = s
        .app
        .request(
            Method::PATCH,
            &path,
            Some(json!({"trust_annotations": true})),
        )
        .await;
    assert_eq!(on.status(), StatusCode::FORBIDDEN);
    assert_eq!(detail(on).await, "forbidden_by_policy");
    let connector = s.app.get_json(&path).await;
    assert_eq!(connector["trust_annotations"], false);
}

#[tokio::test]
async fn always_ask_tools_ask_whatever_grant_or_trust_exists_and_offer_only_once() {
    let s = setup(|_| {}).await;
    trust(&s).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    // An always-rule for add_note, and search_notes trusted.
    let args = json!({"title": "t"});
    let (_, card) = propose(&s, &mut stream, "add_note", args.clone()).await;
    let res = approve_with(&s.app, &card, "always").await;
    assert_eq!(res.status(), StatusCode::OK);
    stream.until("turn_finished").await;

    // The demo server listens on 127.0.0.1: patterns over host/tool.
    let policy = set_policy(
        &s,
        json!({"always_ask_tools": ["127.0.0.1/add_*", " */SEARCH_notes ", "*/search_notes"]}),
    )
    .await;
    assert_eq!(
        policy["always_ask_tools"],
        json!(["127.0.0.1/add_*", "*/SEARCH_notes", "*/search_notes"]),
        "trimmed; tool names keep their case"
    );
    for (tool, arguments) in [("add_note", args), ("search_notes", json!({"query": "q"}))] {
        let (_, card) = propose(&s, &mut stream, tool, arguments).await;
        assert_eq!(
            card["reason"], "your administrator requires a confirmation for this tool",
            "{tool}"
        );
        assert_eq!(card["offered_grants"], json!(["once"]), "{tool}");
        // "For this turn" is not offered, and not taken.
        let res = approve_with(&s.app, &card, "turn").await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{tool}");
        assert_eq!(
            decide(&s.app, &card, "approve").await.status(),
            StatusCode::OK
        );
        stream.until("turn_finished").await;
    }

    let bad = put_policy(&s.app, json!({"always_ask_tools": ["no-slash"]})).await;
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(detail(bad).await.contains("\"no-slash\""));
}

/// Issue 44, item 3: policy matches what a connector and a tool are. The
/// demo server added again as `localhost` (a name for 127.0.0.1) ran
/// without a card under `127.0.0.1/*`, and `*/SEARCH_NOTES` or a Cyrillic
/// `*/ѕearch_notes` missed `search_notes`. Seen to fail before hosts were
/// matched by their addresses and names folded: the call ran unasked.
#[tokio::test]
async fn always_ask_tools_match_another_name_of_the_host_and_folded_tool_names() {
    // Allowed to reach the demo by its other name too.
    let s = setup(|c| {
        c.allow_private_connectors = "127.0.0.1,localhost".parse().expect("allow list");
    })
    .await;
    let alias_url = format!("http://localhost:{}/mcp", s.demo.addr().port());
    let alias = add_connector(&s.app, json!({"name": "Alias", "url": alias_url})).await;
    for id in [&s.connector, &alias] {
        let res = s
            .app
            .request(
                Method::PATCH,
                &format!("/api/connectors/{id}"),
                Some(json!({"trust_annotations": true})),
            )
            .await;
        assert_eq!(res.status(), StatusCode::OK);
    }
    let mut stream = s.app.stream(&s.chat, None).await;
    let reason = "your administrator requires a confirmation for this tool";

    set_policy(&s, json!({"always_ask_tools": ["127.0.0.1/*"]})).await;
    s.app
        .send(
            &s.chat,
            r#"use alias__search_notes with {"query": "lease"}"#,
        )
        .await;
    let card = stream
        .until("mcp_confirmation_required")
        .await
        .pop()
        .expect("a card for the alias")
        .1;
    assert_eq!(card["reason"], reason, "{card}");
    assert_eq!(decide(&s.app, &card, "deny").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;

    for pattern in [
        "*/SEARCH_NOTES",
        "*/\u{0455}earch_notes",
        "LOCALHOST./search_*",
    ] {
        set_policy(&s, json!({"always_ask_tools": [pattern]})).await;
        s.app
            .send(
                &s.chat,
                r#"use alias__search_notes with {"query": "lease"}"#,
            )
            .await;
        let card = stream
            .until("mcp_confirmation_required")
            .await
            .pop()
            .expect("a card")
            .1;
        assert_eq!(card["reason"], reason, "{pattern}: {card}");
        assert_eq!(decide(&s.app, &card, "deny").await.status(), StatusCode::OK);
        stream.until("turn_finished").await;
    }
    assert_eq!(
        s.demo.calls().count("search_notes"),
        0,
        "nothing ran unasked"
    );

    // A pattern that could never match is refused, saying why.
    for (bad, words) in [
        ("127.0.0.1:3100/*", "port"),
        ("*/send\u{200B}_*", "invisible"),
    ] {
        let res = put_policy(&s.app, json!({"always_ask_tools": [bad]})).await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        assert!(detail(res).await.contains(words), "{bad}");
    }
}

#[tokio::test]
async fn connector_hosts_refuse_adding_re_pointing_and_connecting_elsewhere() {
    let s = setup(|_| {}).await;
    set_policy(
        &s,
        json!({"connector_hosts": ["mcp.example.com", "*.corp.test"]}),
    )
    .await;
    let url = s.demo.mcp_url();
    // Add.
    let res = s
        .app
        .post("/api/connectors", &json!({"name": "Again", "url": url}))
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(detail(res).await, "forbidden_by_policy");
    // Every connection of the connector added before the policy.
    let res = s
        .app
        .post(
            &format!("/api/connectors/{}/refresh", s.connector),
            &json!({}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let connector = s
        .app
        .get_json(&format!("/api/connectors/{}", s.connector))
        .await;
    assert!(
        connector["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("127.0.0.1 is not one of them")),
        "{connector}"
    );
    // A call, approved, never reaches the server.
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "add_note", json!({"title": "t"})).await;
    assert_eq!(
        decide(&s.app, &card, "approve").await.status(),
        StatusCode::OK
    );
    let events = stream.until("turn_finished").await;
    let call = events
        .iter()
        .find(|(_, e)| e["type"] == "mcp_tool_call")
        .expect("the call's end")
        .1
        .clone();
    assert_eq!(call["status"], "error", "{call}");
    assert_eq!(s.demo.calls().count("add_note"), 0);
    // Re-pointing to a host not listed.
    let res = s
        .app
        .request(
            Method::PATCH,
            &format!("/api/connectors/{}", s.connector),
            Some(json!({"url": "https://elsewhere.test/mcp"})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    // An empty list allows every host again.
    set_policy(&s, json!({"connector_hosts": []})).await;
    let res = s
        .app
        .post(
            &format!("/api/connectors/{}/refresh", s.connector),
            &json!({}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);

    let bad = put_policy(&s.app, json!({"connector_hosts": ["https://x.test"]})).await;
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn require_mfa_makes_enrolment_mandatory_before_widening_trust() {
    let s = setup(|_| {}).await;
    set_policy(&s, json!({"require_mfa": true})).await;
    let res = s
        .app
        .request(
            Method::PATCH,
            &format!("/api/connectors/{}", s.connector),
            Some(json!({"trust_annotations": true})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(detail(res).await, "mfa_enrolment_required");
}

#[tokio::test]
async fn every_policy_and_account_change_is_an_entry_in_the_activity_chain() {
    let s = setup(|_| {}).await;
    let (_, other_id, other_email) = second_user(&s.app).await;
    set_policy(
        &s,
        json!({"forbid_always_allow": true, "connector_hosts": ["a.test"]}),
    )
    .await;
    // Nothing changed: no entry.
    set_policy(&s, json!({"forbid_always_allow": true})).await;
    let res = s
        .app
        .request(
            Method::PATCH,
            &format!("/api/admin/users/{other_id}"),
            Some(json!({"is_admin": true})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.json::<Value>().await.expect("JSON")["is_admin"], true);

    let activity = s.app.get_array("/api/activity").await;
    let kinds: Vec<_> = activity.iter().map(|e| e["kind"].clone()).collect();
    assert_eq!(kinds, [json!("user_changed"), json!("policy_changed")]);
    assert_eq!(
        activity[1]["changes"],
        json!([
            {"setting": "forbid_always_allow", "before": "false", "after": "true"},
            {"setting": "connector_hosts", "before": "", "after": "a.test"}
        ])
    );
    assert_eq!(activity[0]["subject"], other_email);
    assert_eq!(
        activity[0]["changes"],
        json!([{"setting": "is_admin", "before": "false", "after": "true"}])
    );
    let policy = s.app.get_json("/api/admin/policy").await;
    assert!(policy["updated_by"].is_string(), "{policy}");
    // The chain holds.
    let verified = countersign::audit::verify(&s.app.pool)
        .await
        .expect("verify");
    assert_eq!(verified, countersign::audit::Verified::Intact(2));
}

/// The words the served document admits for `ActivityEntry.outcome`
/// (through `$ref`s and `oneOf`s).
async fn documented_outcomes(app: &TestApp) -> Vec<Value> {
    let doc = app.get_json("/api/openapi.json").await;
    let schemas = &doc["components"]["schemas"];
    let mut words = Vec::new();
    let mut todo = vec![schemas["ActivityEntry"]["properties"]["outcome"].clone()];
    while let Some(schema) = todo.pop() {
        if let Some(name) = schema["$ref"].as_str() {
            todo.push(schemas[name.rsplit('/').next().expect("a name")].clone());
        }
        todo.extend(schema["oneOf"].as_array().cloned().unwrap_or_default());
        words.extend(schema["enum"].as_array().cloned().unwrap_or_default());
    }
    words
}

/// An administrator's entries record no call, and their `outcome` reads
/// `unknown` (it is in the hash chain, so it stays): the document says so
/// (schemathesis found `GET /api/activity` violating the schema there).
#[tokio::test]
async fn an_administrators_activity_entries_read_as_the_document_says() {
    let s = setup(|_| {}).await;
    set_policy(&s, json!({"require_mfa": true})).await;
    let activity = s.app.get_array("/api/activity").await;
    let entry = activity
        .iter()
        .find(|e| e["kind"] == "policy_changed")
        .expect("the policy change");
    let words = documented_outcomes(&s.app).await;
    assert!(
        words.contains(&entry["outcome"]),
        "{} is not among {words:?}",
        entry["outcome"]
    );
}

async fn patch(app: &TestApp, id: uuid::Uuid, body: Value) -> reqwest::Response {
    app.request(Method::PATCH, &format!("/api/admin/users/{id}"), Some(body))
        .await
}

#[tokio::test]
async fn the_last_active_admin_can_be_neither_unmade_nor_disabled() {
    let s = setup(|_| {}).await;
    let (_other, other_id, _) = second_user(&s.app).await;
    let me = s.user;
    for body in [json!({"is_admin": false}), json!({"disabled": true})] {
        let res = patch(&s.app, me, body.clone()).await;
        assert_eq!(res.status(), StatusCode::CONFLICT, "{body}");
        assert_eq!(detail(res).await, "last_admin");
    }
    // A second admin, disabled, does not count.
    assert_eq!(
        patch(
            &s.app,
            other_id,
            json!({"is_admin": true, "disabled": true})
        )
        .await
        .status(),
        StatusCode::OK
    );
    let res = patch(&s.app, me, json!({"is_admin": false})).await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    // Enabled (and signed in again), it does: now the first may step down.
    assert_eq!(
        patch(&s.app, other_id, json!({"disabled": false}))
            .await
            .status(),
        StatusCode::OK
    );
    let res = patch(&s.app, me, json!({"is_admin": false})).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        s.app.get("/api/admin/users").await.status(),
        StatusCode::FORBIDDEN,
        "no longer an admin, at once"
    );
    let res = patch(&s.app, uuid::Uuid::new_v4(), json!({"is_admin": true})).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn two_admins_unmaking_each_other_at_once_leave_one_admin() {
    for _ in 0..5 {
        let app = spawn_app_with(|_| {}).await;
        let (a, _) = app.signed_up_user().await;
        let (other, b, _) = second_user(&app).await;
        let res = app
            .request(
                Method::PATCH,
                &format!("/api/admin/users/{b}"),
                Some(json!({"is_admin": true})),
            )
            .await;
        assert_eq!(res.status(), StatusCode::OK);
        let (ra, rb) = tokio::join!(
            patch(&app, b, json!({"is_admin": false})),
            patch(&other, a, json!({"is_admin": false})),
        );
        let statuses = [ra.status(), rb.status()];
        assert_eq!(
            statuses.iter().filter(|s| **s == StatusCode::OK).count(),
            1,
            "{statuses:?}"
        );
        let mut db = app.superuser().await;
        let admins: i64 = sqlx::query_scalar("select count(*) from users where is_admin")
            .fetch_one(&mut db)
            .await
            .expect("count");
        assert_eq!(admins, 1);
    }
}

#[tokio::test]
async fn disabling_signs_the_user_out_everywhere_and_denies_their_waiting_calls() {
    let s = setup(|_| {}).await;
    // The second user has the demo connector and a call waiting.
    let (other, other_id, other_email) = second_user(&s.app).await;
    crate::helpers::add_demo_connector(&other, &s.demo).await;
    let chat = other.create_chat("offline/demo").await;
    let mut stream = other.stream(&chat, None).await;
    other
        .send(&chat, r#"use demo__add_note with {"title":"t"}"#)
        .await;
    let events = stream.until("mcp_confirmation_required").await;
    let card = events.last().expect("card").1.clone();
    let second_tab = s.app.at(&s.app.base);
    second_tab.login(&other_email, GOOD_PASSWORD).await;
    let users = s.app.get_array("/api/admin/users").await;
    let listed = users
        .iter()
        .find(|u| u["id"] == other_id.to_string())
        .expect("listed");
    assert_eq!(listed["pending_calls"], 1);
    assert_eq!(listed["connectors"], 1);
    // Their stream ends with their session: the chat's log, announced on
    // the events channel, is where the turn's end is read.
    let mut events = sqlx::postgres::PgListener::connect(&s.app.superuser_db_url)
        .await
        .expect("listener");
    events.listen("countersign_events").await.expect("listen");

    let res = s
        .app
        .request(
            Method::PATCH,
            &format!("/api/admin/users/{other_id}"),
            Some(json!({"disabled": true})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.expect("JSON");
    assert_eq!(body["disabled"], true);
    assert_eq!(body["pending_calls"], 0);

    // The call ended denied, never ran; the turn was told and stopped.
    assert_eq!(
        ledger(&s.app, card["id"].as_str().expect("id")).await.0,
        PendingCallStatus::Denied
    );
    drop(stream);
    let mut db = s.app.superuser().await;
    let finished = || {
        sqlx::query_scalar::<_, bool>(
            "select exists (select 1 from chat_events
                             where chat_id = $1::uuid and type = 'turn_finished')",
        )
        .bind(&chat)
    };
    while !finished().fetch_one(&mut db).await.expect("events") {
        tokio::time::timeout(std::time::Duration::from_secs(10), events.recv())
            .await
            .expect("the turn's events within 10 s")
            .expect("a notification");
    }
    let status: String = sqlx::query_scalar("select status from turns where chat_id = $1::uuid")
        .bind(&chat)
        .fetch_one(&mut db)
        .await
        .expect("turn");
    assert_eq!(status, "cancelled", "the turn was stopped");
    let resolved: Vec<Value> = sqlx::query_scalar(
        "select data from chat_events where chat_id = $1::uuid
            and type = 'mcp_confirmation_resolved'",
    )
    .bind(&chat)
    .fetch_all(&mut db)
    .await
    .expect("events");
    assert_eq!(resolved.len(), 1, "{resolved:?}");
    assert_eq!(resolved[0]["decision"], "denied");
    assert_eq!(s.demo.calls().count("add_note"), 0);
    // Both of their sessions are gone; signing in is refused, saying why.
    for app in [&other, &second_tab] {
        assert_eq!(
            app.get("/api/auth/me").await.status(),
            StatusCode::UNAUTHORIZED
        );
    }
    let (status, _, body) = other.login(&other_email, GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["detail"], "account_disabled");
    let (status, _, body) = other.login(&other_email, "wrong password 123").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");

    // Enabled again: they can sign in.
    let res = s
        .app
        .request(
            Method::PATCH,
            &format!("/api/admin/users/{other_id}"),
            Some(json!({"disabled": false})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let (status, _, _) = other.login(&other_email, GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_reset_password_is_one_time_and_opens_only_the_password_change() {
    let s = setup(|_| {}).await;
    let (other, other_id, other_email) = second_user(&s.app).await;
    let hasher = countersign::auth::PasswordHasher::default();
    let one_time = countersign::admin::reset_password(
        &s.app.pool,
        &hasher,
        countersign::admin::Actor::Operator,
        other_id.into(),
    )
    .await
    .expect("reset");
    // Signed out everywhere; the old password no longer works.
    assert_eq!(
        other.get("/api/auth/me").await.status(),
        StatusCode::UNAUTHORIZED
    );
    let (status, _, _) = other.login(&other_email, GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, body) = other.login(&other_email, &one_time).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["user"]["must_change_password"], true);
    let me = other.get_json("/api/auth/me").await;
    assert_eq!(me["user"]["must_change_password"], true);
    for path in ["/api/chats", "/api/connectors", "/api/grants"] {
        let res = other.get(path).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{path}");
        assert_eq!(detail(res).await, "password_change_required");
    }
    let res = other
        .post(
            "/api/auth/password",
            &json!({"current_password": one_time, "new_password": "a brand new passphrase 42"}),
        )
        .await;
    assert!(res.status().is_success(), "{}", res.status());
    assert_eq!(other.get("/api/chats").await.status(), StatusCode::OK);
    let me = other.get_json("/api/auth/me").await;
    assert_eq!(me["user"]["must_change_password"], false);
}

/// Runs the real `countersign user …` against the test's database as the
/// server's login role; returns (exit ok, stdout, stderr).
fn cli(app: &TestApp, args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_countersign"))
        .arg("user")
        .args(args)
        .env("DATABASE_URL", app.config.database_url.expose())
        .env("RUST_LOG", "warn")
        .output()
        .expect("run countersign");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn the_operator_manages_accounts_from_the_command_line() {
    let app = spawn_app_with(|_| {}).await;
    let (_, admin_email) = app.signed_up_user().await;
    let email = format!("cli-{}@example.org", uuid::Uuid::new_v4().simple());
    let (ok, out, err) = cli(&app, &["create", &email]);
    assert!(ok, "{err}");
    let password = out
        .lines()
        .find_map(|l| l.strip_prefix("one-time password: "))
        .expect("the password is printed")
        .to_owned();
    let user = app.at(&app.base);
    let (status, _, body) = user.login(&email, &password).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["user"]["must_change_password"], true);
    assert_eq!(body["user"]["is_admin"], false);

    let (ok, out, _) = cli(&app, &["list"]);
    assert!(ok);
    assert!(out.contains(&format!("{admin_email}\tyes\tno")), "{out}");
    assert!(out.contains(&format!("{email}\tno\tno")), "{out}");

    let (ok, out, err) = cli(&app, &["disable", &email]);
    assert!(ok, "{err}");
    assert!(out.contains("1 sessions signed out"), "{out}");
    assert_eq!(
        user.get("/api/auth/me").await.status(),
        StatusCode::UNAUTHORIZED
    );
    let (status, _, _) = user.login(&email, &password).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(cli(&app, &["enable", &email]).0);
    let (ok, out, _) = cli(&app, &["reset-password", &email]);
    assert!(ok);
    let fresh = out
        .lines()
        .find_map(|l| l.strip_prefix("one-time password: "))
        .expect("printed");
    assert_ne!(fresh, password);
    assert_eq!(user.login(&email, fresh).await.0, StatusCode::OK);

    // The last admin stays, from the command line too.
    let (ok, _, err) = cli(&app, &["disable", &admin_email]);
    assert!(!ok);
    assert!(err.contains("last active administrator"), "{err}");
    assert!(cli(&app, &["make-admin", &email]).0);
    assert!(cli(&app, &["disable", &admin_email]).0);
    let (ok, _, err) = cli(&app, &["disable", "nobody@example.org"]);
    assert!(!ok);
    assert!(err.contains("No such account"), "{err}");
    // Each change is in the chain, which holds.
    let verified = countersign::audit::verify(&app.pool).await.expect("verify");
    assert_eq!(verified, countersign::audit::Verified::Intact(6));
}

/// A stolen admin session without the second factor cannot loosen the
/// policy or change an account.
#[tokio::test]
async fn admin_changes_need_a_recent_step_up_when_the_admin_has_two_factor_sign_in() {
    let s = setup(|_| {}).await;
    let (_, other_id, _) = second_user(&s.app).await;
    set_policy(&s, json!({"forbid_always_allow": true})).await;
    crate::mfa::enrolled(&s.app).await;
    let mut db = s.app.superuser().await;
    sqlx::query("update sessions set mfa_verified_at = now() - interval '11 minutes'")
        .execute(&mut db)
        .await
        .expect("lapse");
    let res = put_policy(&s.app, json!({"forbid_always_allow": false})).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(detail(res).await, "mfa_required");
    let res = patch(&s.app, other_id, json!({"is_admin": true})).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(detail(res).await, "mfa_required");
    // Reading is not a change.
    let policy = s.app.get_json("/api/admin/policy").await;
    assert_eq!(policy["forbid_always_allow"], true, "unchanged");
}
