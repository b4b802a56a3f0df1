//! A second approver (issue 46 item 4; docs/design.md §6.3). When the
//! admin policy's `require_second_approval` covers a call (its tool, or a
//! destination it sends to), the requester's approve moves it to
//! `awaiting_second`; an approver — an administrator or an account marked
//! approver — who is not the requester decides it from
//! `/api/approvals/inbox`. The call runs only after both, exactly as
//! shown; both decisions are in the activity chain; one TTL covers both;
//! approvers hear of it by e-mail when SMTP is set (a local aiosmtpd
//! sink here).

use crate::helpers::{
    GOOD_PASSWORD, Setup, SseReader, TestApp, approve_with, decide, propose, setup,
};
use crate::py_oauth::interop_dir;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::io::BufRead as _;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The fixture's user (the first account, so an administrator) sets the
/// policy; returns a second account, marked approver by them.
async fn with_policy_and_approver(s: &Setup, policy: Value) -> (TestApp, String) {
    let res = s
        .app
        .request(
            Method::PUT,
            "/api/admin/policy",
            Some(json!({ "require_second_approval": policy })),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK, "policy");
    let stored: Value = res.json().await.expect("JSON");
    assert_eq!(stored["require_second_approval"]["tools"], policy["tools"]);
    let approver = s.app.at(&s.app.base);
    let (id, email) = approver.signed_up_user().await;
    let res = s
        .app
        .request(
            Method::PATCH,
            &format!("/api/admin/users/{id}"),
            Some(json!({"is_approver": true})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK, "make approver");
    let user: Value = res.json().await.expect("JSON");
    assert_eq!(user["is_approver"], true);
    (approver, email)
}

async fn decide_second(app: &TestApp, id: &str, body: Value) -> reqwest::Response {
    app.post(&format!("/api/approvals/inbox/{id}"), &body).await
}

async fn detail(res: reqwest::Response) -> String {
    res.json::<Value>().await.expect("JSON")["detail"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The requester approves `card`; the answer says it now waits for the
/// second approval, and so does the chat.
async fn first_approval(s: &Setup, stream: &mut SseReader, card: &Value) {
    let res = decide(&s.app, card, "approve").await;
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.expect("JSON");
    assert_eq!(body["status"], "awaiting_second");
    let events = stream.until("mcp_second_approval_required").await;
    let (_, waiting) = events.last().expect("event");
    assert_eq!(waiting["id"], card["id"]);
}

#[tokio::test]
async fn a_call_the_policy_gives_a_second_approver_runs_only_after_another_account_allows_it() {
    let s = setup(|_| {}).await;
    let (approver, approver_email) =
        with_policy_and_approver(&s, json!({"tools": ["127.0.0.1/echo"], "destinations": []}))
            .await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "echo", json!({"text": "Board pack v3"})).await;
    assert!(
        card["reason"]
            .as_str()
            .is_some_and(|r| r.contains("second approval")),
        "{card}"
    );
    assert_eq!(card["offered_grants"], json!(["once"]), "no grant skips it");
    // A grant the card does not offer is refused, and decides nothing.
    let res = approve_with(&s.app, &card, "always").await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);

    first_approval(&s, &mut stream, &card).await;
    assert_eq!(s.demo.calls().count("echo"), 0, "one approval runs nothing");
    let id = card["id"].as_str().expect("id");

    // The requester (an administrator, so an approver too) cannot give
    // the second approval, whichever of their sessions asks.
    let me = s.app.get_json("/api/auth/me").await;
    let other_session = s.app.at(&s.app.base);
    let (status, _, _) = other_session
        .login(me["user"]["email"].as_str().expect("email"), GOOD_PASSWORD)
        .await;
    assert_eq!(status, StatusCode::OK);
    for session in [&s.app, &other_session] {
        let res = decide_second(
            session,
            id,
            json!({"decision": "approve", "arguments_digest": card["arguments_digest"]}),
        )
        .await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN);
        assert_eq!(detail(res).await, "own_call");
        assert!(
            session.get_array("/api/approvals/inbox").await.is_empty(),
            "their own call is not in their inbox"
        );
    }

    // The approver sees the card, its destinations and who asked — not
    // the chat.
    let inbox = approver.get_array("/api/approvals/inbox").await;
    assert_eq!(inbox.len(), 1, "{inbox:?}");
    let item = &inbox[0];
    assert_eq!(item["id"], card["id"]);
    assert_eq!(item["tool_name"], "echo");
    assert_eq!(item["arguments"], json!({"text": "Board pack v3"}));
    assert_eq!(item["arguments_digest"], card["arguments_digest"]);
    assert!(
        item["requester_email"]
            .as_str()
            .is_some_and(|e| e.contains('@'))
    );
    assert!(item.get("chat_id").is_none() && item.get("turn_id").is_none());

    // A stale digest decides nothing.
    let res = decide_second(
        &approver,
        id,
        json!({"decision": "approve", "arguments_digest": "0".repeat(64)}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::CONFLICT);
    assert_eq!(s.demo.calls().count("echo"), 0);

    let res = decide_second(
        &approver,
        id,
        json!({"decision": "approve", "arguments_digest": card["arguments_digest"]}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.json::<Value>().await.expect("JSON")["status"],
        "approved"
    );
    let events = stream.until("turn_finished").await;
    let resolved = events
        .iter()
        .map(|(_, e)| e)
        .find(|e| e["type"] == "mcp_confirmation_resolved")
        .expect("resolved");
    assert_eq!(resolved["decision"], "approved");
    assert_eq!(resolved["second_approver"], approver_email.as_str());
    let calls = s.demo.calls();
    assert_eq!(calls.count("echo"), 1, "it ran once, after both");
    // A replay decides nothing.
    let res = decide_second(
        &approver,
        id,
        json!({"decision": "approve", "arguments_digest": card["arguments_digest"]}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);

    // Both decisions are in the chain, bound to the same digest.
    let activity = s.app.get_array("/api/activity").await;
    let of_call: Vec<&Value> = activity
        .iter()
        .filter(|e| e["call_ref"] == card["id"])
        .collect();
    let first = of_call
        .iter()
        .find(|e| e["kind"] == "first_approval")
        .expect("the requester's approval");
    let second = of_call
        .iter()
        .find(|e| e["kind"] == "decided")
        .expect("the approver's");
    assert_eq!(first["arguments_digest"], card["arguments_digest"]);
    assert_eq!(second["arguments_digest"], card["arguments_digest"]);
    assert_eq!(second["decision"], "approved");
    assert_eq!(second["second_approver"], approver_email.as_str());
}

#[tokio::test]
async fn only_an_approver_decides_and_an_approvers_decline_reaches_the_model() {
    let s = setup(|_| {}).await;
    let (approver, _) =
        with_policy_and_approver(&s, json!({"tools": ["*/echo"], "destinations": []})).await;
    let nobody = s.app.at(&s.app.base);
    nobody.signed_up_user().await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "echo", json!({"text": "Q3 figures"})).await;
    let id = card["id"].as_str().expect("id");
    // Not yet approved by the requester: nothing in any inbox.
    assert!(approver.get_array("/api/approvals/inbox").await.is_empty());
    first_approval(&s, &mut stream, &card).await;

    let res = nobody.get("/api/approvals/inbox").await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(detail(res).await, "not_an_approver");
    let res = decide_second(
        &nobody,
        id,
        json!({"decision": "approve", "arguments_digest": card["arguments_digest"]}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert_eq!(detail(res).await, "not_an_approver");
    for bad in [
        json!({"decision": "maybe", "arguments_digest": card["arguments_digest"]}),
        json!({"decision": "approve", "arguments_digest": "xyz"}),
        json!({"decision": "approve", "arguments_digest": card["arguments_digest"], "reason": "no"}),
    ] {
        let res = decide_second(&approver, id, bad.clone()).await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
    }

    let res = decide_second(
        &approver,
        id,
        json!({"decision": "deny", "arguments_digest": card["arguments_digest"], "reason": "Not before the board meets."}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let events = stream.until("turn_finished").await;
    let resolved = events
        .iter()
        .map(|(_, e)| e)
        .find(|e| e["type"] == "mcp_confirmation_resolved")
        .expect("resolved");
    assert_eq!(resolved["decision"], "denied");
    assert_eq!(resolved["decline_reason"], "Not before the board meets.");
    assert_eq!(s.demo.calls().count("echo"), 0, "declined: nothing ran");
}

#[tokio::test]
async fn a_destination_on_the_list_needs_a_second_approval_whatever_grant_exists() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    // An "always" grant for the tool first.
    let (_, card) = propose(&s, &mut stream, "echo", json!({"text": "hello"})).await;
    assert_eq!(
        approve_with(&s.app, &card, "always").await.status(),
        StatusCode::OK
    );
    stream.until("turn_finished").await;
    let (approver, _) = with_policy_and_approver(
        &s,
        json!({"tools": [], "destinations": ["opposing-counsel.example"]}),
    )
    .await;
    // Not to the listed destination: the grant still runs it.
    let events = crate::helpers::turn(
        &s,
        &mut stream,
        r#"use demo__echo with {"text": "to ann@firm.example"}"#,
    )
    .await;
    assert!(
        !events
            .iter()
            .any(|e| e["type"] == "mcp_confirmation_required"),
        "{events:?}"
    );
    // To it: a card, once only, and a second approval.
    let (_, card) = propose(
        &s,
        &mut stream,
        "echo",
        json!({"text": "to j.hart@opposing-counsel.example"}),
    )
    .await;
    assert_eq!(card["offered_grants"], json!(["once"]));
    first_approval(&s, &mut stream, &card).await;
    let inbox = approver.get_array("/api/approvals/inbox").await;
    assert_eq!(inbox.len(), 1);
    assert_eq!(
        inbox[0]["destinations"][0]["ascii"],
        "j.hart@opposing-counsel.example"
    );
    assert_eq!(
        decide_second(
            &approver,
            card["id"].as_str().expect("id"),
            json!({"decision": "approve", "arguments_digest": card["arguments_digest"]}),
        )
        .await
        .status(),
        StatusCode::OK
    );
    stream.until("turn_finished").await;
    // The grant's two runs, then this one after both approvals.
    assert_eq!(s.demo.calls().count("echo"), 3);
}

#[tokio::test]
async fn one_ttl_covers_both_decisions_and_a_late_second_approval_is_refused() {
    let s = setup(|c| {
        c.approval_ttl_secs = 4;
        c.approval_wait_secs = 3;
    })
    .await;
    let (approver, _) =
        with_policy_and_approver(&s, json!({"tools": ["*/echo"], "destinations": []})).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(&s, &mut stream, "echo", json!({"text": "late"})).await;
    first_approval(&s, &mut stream, &card).await;
    let events = stream.until("turn_finished").await;
    let resolved = events
        .iter()
        .map(|(_, e)| e)
        .find(|e| e["type"] == "mcp_confirmation_resolved")
        .expect("resolved");
    // The wait's end wrote `expired` at once: no need to sit out the TTL.
    assert_eq!(resolved["decision"], "expired");
    let res = decide_second(
        &approver,
        card["id"].as_str().expect("id"),
        json!({"decision": "approve", "arguments_digest": card["arguments_digest"]}),
    )
    .await;
    assert_eq!(res.status(), StatusCode::GONE);
    assert!(approver.get_array("/api/approvals/inbox").await.is_empty());
    assert_eq!(s.demo.calls().count("echo"), 0);
}

/// A local SMTP sink (PyPI `aiosmtpd`, `tests/interop/smtp_sink.py`):
/// every message it receives, as the script prints it. Killed when
/// dropped.
struct SmtpSink {
    child: Child,
    port: u16,
    mail: tokio::sync::mpsc::UnboundedReceiver<Value>,
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl SmtpSink {
    fn start() -> Self {
        let mut child = Command::new("python3")
            .env("PYTHONPATH", interop_dir().join("py-smtp"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/interop/smtp_sink.py"
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start smtp_sink.py: {e}"));
        let mut lines = std::io::BufReader::new(child.stdout.take().expect("piped")).lines();
        let ready: Value = serde_json::from_str(
            &lines
                .next()
                .expect("the sink's first line")
                .expect("readable"),
        )
        .expect("JSON");
        let port = u16::try_from(ready["ready"].as_u64().expect("a port")).expect("a port");
        let (sink, mail) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Ok(message) = serde_json::from_str::<Value>(&line) {
                    let _ = sink.send(message);
                }
            }
        });
        Self { child, port, mail }
    }

    /// The next `n` messages, each awaited at most 20 s, then any that
    /// already arrived too.
    async fn at_least(&mut self, n: usize) -> Vec<Value> {
        let mail = &mut self.mail;
        let mut got = Vec::new();
        while got.len() < n {
            match tokio::time::timeout(Duration::from_secs(20), mail.recv()).await {
                Ok(Some(message)) => got.push(message),
                _ => panic!("fewer than {n} e-mails reached the sink"),
            }
        }
        while let Ok(message) = mail.try_recv() {
            got.push(message);
        }
        got
    }
}

#[tokio::test]
async fn approvers_are_emailed_a_notice_that_names_the_call_and_never_its_arguments() {
    let mut sink = SmtpSink::start();
    let port = sink.port;
    let s = setup(move |c| {
        c.smtp_url = Some(countersign::config::Secret::new(format!(
            "smtp://127.0.0.1:{port}"
        )));
        c.smtp_from = "Countersign <countersign@firm.example>".into();
    })
    .await;
    let (_, approver_email) =
        with_policy_and_approver(&s, json!({"tools": ["*/echo"], "destinations": []})).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let secret = "Walk-away figure 2.4 million";
    let (_, card) = propose(&s, &mut stream, "echo", json!({"text": secret})).await;
    first_approval(&s, &mut stream, &card).await;
    let mail = sink.at_least(1).await;
    // The requester is an administrator too, but is never asked.
    assert_eq!(mail.len(), 1, "{mail:?}");
    let message = &mail[0];
    assert_eq!(message["to"], json!([approver_email]));
    // Long header and body lines are folded or soft-broken (quoted-
    // printable): read them joined.
    let data = message["data"]
        .as_str()
        .expect("text")
        .replace("=\r\n", "")
        .replace("\r\n ", " ");
    assert!(
        data.contains("Subject: Approval needed: echo for user-"),
        "{data}"
    );
    // Without a public URL the server knows no link to give (the link's
    // text is `mail`'s unit test); the notice names the page.
    assert!(data.contains("Approvals for you"), "{data}");
    assert!(
        !data.contains(secret),
        "the arguments stay in Countersign: {data}"
    );
    // Nobody decided: it expires; the mail decided nothing.
    assert_eq!(s.demo.calls().count("echo"), 0);
    let res = decide(&s.app, &card, "deny").await;
    assert_eq!(
        res.status(),
        StatusCode::NOT_FOUND,
        "the requester's part is done"
    );
}
