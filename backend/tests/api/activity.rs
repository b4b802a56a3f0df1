//! The activity log: every proposed call, what decided it and how it
//! ended, hash-chained; `countersign audit verify` finds tampering; a call
//! that cannot be written down does not run.

use crate::helpers::{decide, event_of, ledger, propose, setup, trust};
use countersign::audit::{self, Verified};
use countersign_api::PendingCallStatus;
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn every_proposed_call_is_logged_with_its_digest_decision_and_outcome_never_its_arguments() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(
        &s,
        &mut stream,
        "search_notes",
        json!({"query": "privileged-lease"}),
    )
    .await;
    assert_eq!(
        decide(&s.app, &card, "approve").await.status(),
        StatusCode::OK
    );
    stream.until("turn_finished").await;
    let (_, declined) = propose(&s, &mut stream, "delete_note", json!({"id": "note-1"})).await;
    assert_eq!(
        decide(&s.app, &declined, "deny").await.status(),
        StatusCode::OK
    );
    stream.until("turn_finished").await;
    trust(&s).await;
    s.app
        .send(&s.chat, r#"use search_notes with {"query": "deed"}"#)
        .await;
    stream.until("turn_finished").await;

    let log = s.app.get_array("/api/activity").await;
    assert!(
        !log.iter()
            .any(|e| e.to_string().contains("privileged-lease")),
        "no arguments"
    );
    let of = |call_ref: &Value| -> Vec<Value> {
        log.iter()
            .filter(|e| &e["call_ref"] == call_ref)
            .cloned()
            .collect()
    };
    let approved = of(&card["id"]);
    assert_eq!(approved.len(), 2, "{approved:?}");
    // Newest first: the outcome, then the decision.
    assert_eq!(approved[1]["kind"], "decided");
    assert_eq!(approved[1]["decision"], "approved");
    assert_eq!(approved[1]["grant"], "once");
    assert_eq!(approved[1]["arguments_digest"], card["arguments_digest"]);
    assert_eq!(approved[0]["kind"], "outcome");
    assert_eq!(approved[0]["outcome"], "ok");
    assert!(approved[0]["duration_ms"].is_u64());
    let denied = of(&declined["id"]);
    assert_eq!(denied.len(), 1);
    assert_eq!(
        (
            denied[0]["decision"].as_str(),
            denied[0]["outcome"].as_str()
        ),
        (Some("denied"), Some("not_run"))
    );
    let trusted: Vec<&Value> = log
        .iter()
        .filter(|e| e["decision"] == "trusted_annotations")
        .collect();
    assert_eq!(
        trusted.len(),
        1,
        "the call that ran without a card is there too"
    );
    assert_eq!(log.len(), 5);

    let other = s.app.at(&s.app.base);
    other.signed_up_user().await;
    assert_eq!(other.get_json("/api/activity").await, json!([]));
}

#[tokio::test]
async fn audit_verify_names_the_first_tampered_row() {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    for query in ["a", "b"] {
        let (_, card) = propose(&s, &mut stream, "search_notes", json!({"query": query})).await;
        assert_eq!(
            decide(&s.app, &card, "approve").await.status(),
            StatusCode::OK
        );
        stream.until("turn_finished").await;
    }
    assert_eq!(
        audit::verify(&s.app.pool).await.expect("verify"),
        Verified::Intact(4)
    );
    let cli = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_countersign"))
            .args(["audit", "verify"])
            .env("DATABASE_URL", s.app.config.database_url.expose())
            .env("RUST_LOG", "error")
            .output()
            .expect("run countersign audit verify")
    };
    let ok = cli();
    assert!(ok.status.success());
    assert_eq!(
        String::from_utf8_lossy(&ok.stdout).trim(),
        "activity log intact: 4 rows"
    );

    // Someone with database access rewrites a decision.
    let mut db = s.app.superuser().await;
    sqlx::query(
        "update activity set entry = jsonb_set(entry, '{decision}', '\"denied\"') where seq = 3",
    )
    .execute(&mut db)
    .await
    .expect("tamper");
    assert_eq!(
        audit::verify(&s.app.pool).await.expect("verify"),
        Verified::Broken {
            seq: 3,
            reason: "its content does not match its hash".into()
        }
    );
    let broken = cli();
    assert_eq!(broken.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&broken.stdout).contains("broken at row 3"),
        "{}",
        String::from_utf8_lossy(&broken.stdout)
    );

    // Re-hashing the tampered row does not help: the next one breaks.
    let (prev, entry): (String, Value) =
        sqlx::query_as("select prev_hash, entry from activity where seq = 3")
            .fetch_one(&mut db)
            .await
            .expect("row");
    sqlx::query("update activity set hash = $1 where seq = 3")
        .bind(audit::chain_hash(&prev, &entry))
        .execute(&mut db)
        .await
        .expect("re-hash");
    assert!(matches!(
        audit::verify(&s.app.pool).await.expect("verify"),
        Verified::Broken { seq: 4, .. }
    ));
    // And the server itself cannot rewrite the log.
    let mut tx = countersign::db::service_tx(&s.app.pool).await.expect("tx");
    assert!(
        sqlx::query("update activity set hash = hash")
            .execute(&mut *tx)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_call_that_cannot_be_written_to_the_log_does_not_run() {
    let s = setup(|_| {}).await;
    let mut db = s.app.superuser().await;
    sqlx::query("revoke insert on activity from service_role")
        .execute(&mut db)
        .await
        .expect("break the log");
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, card) = propose(
        &s,
        &mut stream,
        "add_note",
        json!({"title": "t", "body": "b"}),
    )
    .await;
    assert_eq!(
        decide(&s.app, &card, "approve").await.status(),
        StatusCode::OK
    );
    let events = stream.until("turn_finished").await;
    let ran = event_of(&events, "mcp_tool_call");
    assert_eq!(ran["status"], "error");
    assert!(
        ran["error"]
            .as_str()
            .is_some_and(|e| e.contains("activity log")),
        "{ran}"
    );
    assert_eq!(
        ledger(&s.app, card["id"].as_str().expect("id")).await.0,
        PendingCallStatus::Failed
    );

    // Without a card too.
    trust(&s).await;
    s.app
        .send(&s.chat, r#"use search_notes with {"query": "lease"}"#)
        .await;
    let events = stream.until("turn_finished").await;
    assert!(
        events
            .iter()
            .any(|(_, e)| e["type"] == "mcp_tool_call" && e["status"] == "error")
    );
    assert_eq!(s.demo.calls().total, 0, "nothing ran at the MCP server");
}
