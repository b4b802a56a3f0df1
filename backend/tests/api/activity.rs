//! The activity log: every proposed call, what decided it and how it
//! ended, hash-chained; `countersign audit verify` finds tampering; a call
//! that cannot be written down does not run; `audit export` and `audit
//! head` give auditors a copy they can re-compute and a head that anchors
//! the chain against a rewrite.

use crate::helpers::{Setup, TestApp, decide, event_of, ledger, propose, setup, trust};
use countersign::audit::{self, GENESIS, Verified};
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

/// `countersign audit ARGS` as an operator runs it: exit code, stdout,
/// stderr.
fn audit_cli(app: &TestApp, args: &[&str]) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_countersign"))
        .arg("audit")
        .args(args)
        .env("DATABASE_URL", app.config.database_url.expose())
        .env("RUST_LOG", "error")
        .output()
        .expect("run countersign audit");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Two approved calls: four rows (decided + outcome each).
async fn two_calls() -> Setup {
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
    s
}

/// `n` more rows chained after the last one, written by a superuser by the
/// hash rule (so the chain stays valid): enough to span several pages.
async fn append_rows(app: &TestApp, n: i64) {
    let mut db = app.superuser().await;
    let (mut seq, mut prev): (i64, String) =
        sqlx::query_as("select seq, hash from activity order by seq desc limit 1")
            .fetch_one(&mut db)
            .await
            .expect("last row");
    let (mut seqs, mut entries, mut prevs, mut hashes) = (vec![], vec![], vec![], vec![]);
    for _ in 0..n {
        seq += 1;
        let entry = json!({"seq": seq, "at": "2026-12-01T00:00:00.000000Z", "call_ref": format!("bulk-{seq}")});
        let hash = audit::chain_hash(&prev, &entry);
        seqs.push(seq);
        entries.push(entry);
        prevs.push(std::mem::replace(&mut prev, hash.clone()));
        hashes.push(hash);
    }
    sqlx::query(
        "insert into activity (seq, user_id, entry, prev_hash, hash) \
         select seq, gen_random_uuid(), entry, prev_hash, hash \
         from unnest($1::bigint[], $2::jsonb[], $3::text[], $4::text[]) as t(seq, entry, prev_hash, hash)",
    )
    .bind(&seqs)
    .bind(&entries)
    .bind(&prevs)
    .bind(&hashes)
    .execute(&mut db)
    .await
    .expect("append rows");
}

fn temp_file(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("cs-{name}-{}.jsonl", uuid::Uuid::new_v4().simple()))
}

/// The lines of an export: rows, then the head line.
fn parse_export(text: &str) -> (Vec<Value>, Value) {
    let mut lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let head = lines.pop().expect("a head line");
    (lines, head)
}

#[tokio::test]
async fn an_export_recomputes_by_the_hash_rule_and_ends_with_the_head_audit_head_prints() {
    let s = two_calls().await;
    // Past two page boundaries (1000 rows a page).
    append_rows(&s.app, 2100).await;
    let (code, head, _) = audit_cli(&s.app, &["head"]);
    assert_eq!(code, Some(0));
    let head = head.trim().to_owned();
    let (last_seq, last_hash): (i64, String) = {
        let mut db = s.app.superuser().await;
        sqlx::query_as("select seq, hash from activity order by seq desc limit 1")
            .fetch_one(&mut db)
            .await
            .expect("last row")
    };
    assert_eq!(head, format!("{last_seq}:{last_hash}"));
    assert_eq!(last_seq, 2104);

    let file = temp_file("export");
    let path = file.to_str().expect("UTF-8 path");
    let (code, _, stderr) = audit_cli(&s.app, &["export", "--output", path]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("exported 2104 rows; head {head}")),
        "{stderr}"
    );
    let (rows, head_line) = parse_export(&std::fs::read_to_string(&file).expect("export"));
    assert_eq!(rows.len(), 2104);
    // Re-computed here by the rule the docs give, not by the server's walk.
    let mut prev = GENESIS.to_owned();
    for (row, seq) in rows.iter().zip(1_i64..) {
        let keys: Vec<&String> = row.as_object().expect("object").keys().collect();
        assert_eq!(
            keys,
            ["at", "entry", "hash", "prev_hash", "seq"],
            "row {seq}"
        );
        assert_eq!(row["seq"], seq);
        assert_eq!(row["entry"]["seq"], seq);
        assert_eq!(
            row["prev_hash"],
            prev.as_str(),
            "row {seq} follows row {}",
            seq - 1
        );
        let hash = audit::chain_hash(&prev, &row["entry"]);
        assert_eq!(row["hash"], hash.as_str(), "row {seq}'s hash");
        assert!(
            row["at"].as_str().is_some_and(|at| at.ends_with('Z')),
            "{row}"
        );
        prev = hash;
    }
    assert_eq!(head_line, json!({"head": {"seq": 2104, "hash": prev}}));
    // The entries are the stored JSON itself.
    let stored: Vec<(Value,)> = {
        let mut db = s.app.superuser().await;
        sqlx::query_as("select entry from activity where seq <= 4 order by seq")
            .fetch_all(&mut db)
            .await
            .expect("entries")
    };
    for (row, (entry,)) in rows.iter().zip(&stored) {
        assert_eq!(&row["entry"], entry);
    }
    assert_eq!(rows[0]["entry"]["decision"], "approved");

    // The CLI verifies the file without the database, and the database
    // against the head.
    let (code, out, _) = audit_cli(
        &s.app,
        &[
            "verify",
            "--file",
            path,
            "--database-url",
            "postgres://127.0.0.1:1/none",
        ],
    );
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(out.trim(), "export intact: 2104 rows");
    let (code, out, _) = audit_cli(&s.app, &["verify", "--file", path, "--head", &head]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        out.trim(),
        format!("export intact: 2104 rows, the recorded head {head} among them")
    );
    let (code, out, _) = audit_cli(&s.app, &["verify", "--head", &head]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        out.trim(),
        format!("activity log intact: 2104 rows, the recorded head {head} among them")
    );

    // --since a row: from that row, linked to the one before; --since a
    // time: from the first row written then.
    let (code, out, _) = audit_cli(&s.app, &["export", "--since", "1999"]);
    assert_eq!(code, Some(0));
    let (since, since_head) = parse_export(&out);
    assert_eq!(since.len(), 106);
    assert_eq!(since[0]["seq"], 1999);
    assert_eq!(since[0]["prev_hash"], rows[1997]["hash"]);
    assert_eq!(since_head, head_line);
    std::fs::write(&file, &out).expect("write");
    let row_1998 = format!("1998:{}", rows[1997]["hash"].as_str().expect("hash"));
    let (code, out, _) = audit_cli(&s.app, &["verify", "--file", path, "--head", &row_1998]);
    assert_eq!(
        code,
        Some(0),
        "the export chains on from a head recorded before it: {out}"
    );
    let (code, out, _) = audit_cli(&s.app, &["export", "--since", "2000-01-01T00:00:00Z"]);
    assert_eq!(code, Some(0));
    assert_eq!(parse_export(&out).0.len(), 2104);
    let (code, out, _) = audit_cli(&s.app, &["export", "--since", "2999-01-01T00:00:00Z"]);
    assert_eq!(code, Some(0));
    assert_eq!(parse_export(&out), (vec![], head_line));
    let (code, _, stderr) = audit_cli(&s.app, &["export", "--since", "yesterday"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("RFC 3339"), "{stderr}");
    let _ = std::fs::remove_file(&file);
}

#[tokio::test]
async fn a_rewrite_that_rehashes_every_later_row_passes_verify_but_not_the_recorded_head() {
    let s = two_calls().await;
    let (_, recorded, _) = audit_cli(&s.app, &["head"]);
    let recorded = recorded.trim().to_owned();
    let (seq, digest) = recorded.split_once(':').expect("SEQ:DIGEST");
    assert_eq!(seq, "4");
    let earlier: String = {
        let mut db = s.app.superuser().await;
        sqlx::query_scalar("select hash from activity where seq = 2")
            .fetch_one(&mut db)
            .await
            .expect("row 2")
    };
    let earlier = format!("2:{earlier}");
    // The auditor's copy, taken with the head.
    let copy = temp_file("copy");
    let copy_path = copy.to_str().expect("UTF-8 path");
    assert_eq!(
        audit_cli(&s.app, &["export", "--output", copy_path]).0,
        Some(0)
    );

    // Someone with database rights turns an approval into a denial and
    // re-hashes every row from there on.
    let mut db = s.app.superuser().await;
    sqlx::query(
        "update activity set entry = jsonb_set(entry, '{decision}', '\"denied\"') where seq = 3",
    )
    .execute(&mut db)
    .await
    .expect("tamper");
    for seq in 3_i64..=4 {
        let prev: String = sqlx::query_scalar("select hash from activity where seq = $1")
            .bind(seq - 1)
            .fetch_one(&mut db)
            .await
            .expect("previous row");
        let entry: Value = sqlx::query_scalar("select entry from activity where seq = $1")
            .bind(seq)
            .fetch_one(&mut db)
            .await
            .expect("row");
        sqlx::query("update activity set prev_hash = $1, hash = $2 where seq = $3")
            .bind(&prev)
            .bind(audit::chain_hash(&prev, &entry))
            .bind(seq)
            .execute(&mut db)
            .await
            .expect("re-hash");
    }
    assert_eq!(
        audit::verify(&s.app.pool).await.expect("verify"),
        Verified::Intact(4),
        "the chain alone cannot tell"
    );
    let (code, out, _) = audit_cli(&s.app, &["verify"]);
    assert_eq!((code, out.trim()), (Some(0), "activity log intact: 4 rows"));

    // The head recorded before the rewrite can.
    let (code, out, _) = audit_cli(&s.app, &["verify", "--head", &recorded]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!("does not contain the recorded head {recorded}"))
            && out.contains("row 4's hash is now"),
        "{out}"
    );
    let (code, out, _) = audit_cli(&s.app, &["verify", "--head", digest]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("no row has that hash"), "{out}");
    // A head from before the rewritten row still holds.
    let (code, out, _) = audit_cli(&s.app, &["verify", "--head", &earlier]);
    assert_eq!(code, Some(0), "{out}");

    // A fresh export fails against the head too; the auditor's copy holds.
    let fresh = temp_file("fresh");
    let fresh_path = fresh.to_str().expect("UTF-8 path");
    assert_eq!(
        audit_cli(&s.app, &["export", "--output", fresh_path]).0,
        Some(0)
    );
    let (code, out, _) = audit_cli(
        &s.app,
        &["verify", "--file", fresh_path, "--head", &recorded],
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.starts_with("export does not contain the recorded head"),
        "{out}"
    );
    let (code, out, _) = audit_cli(
        &s.app,
        &["verify", "--file", copy_path, "--head", &recorded],
    );
    assert_eq!(code, Some(0), "{out}");

    // Cutting the chain back to before the head is caught the same way.
    sqlx::query("delete from activity where seq = 4")
        .execute(&mut db)
        .await
        .expect("truncate");
    let (code, out, _) = audit_cli(&s.app, &["verify", "--head", &recorded]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("the chain ends at row 3, before row 4"),
        "{out}"
    );
    let _ = std::fs::remove_file(&copy);
    let _ = std::fs::remove_file(&fresh);
}

/// Appends from many tasks at once chain one after another: each entry
/// reads the one before it only after taking the lock that orders them
/// (`audit::append` takes it with its `BEGIN`), so no two get one sequence
/// number and the chain verifies.
#[tokio::test]
async fn appends_at_once_chain_one_after_another() {
    let s = setup(|_| {}).await;
    const APPENDS: usize = 40;
    let pool = s.app.pool.clone();
    let appends = (0..APPENDS).map(|i| {
        let pool = pool.clone();
        tokio::spawn(async move {
            let call_ref = format!("at-once-{i}");
            audit::append(
                &pool,
                &audit::Entry {
                    user_id: uuid::Uuid::new_v4().into(),
                    chat_id: uuid::Uuid::new_v4().into(),
                    turn_id: uuid::Uuid::new_v4().into(),
                    call_ref: &call_ref,
                    kind: countersign_api::ActivityKind::Decided,
                    connector_id: uuid::Uuid::new_v4().into(),
                    connector_name: "c",
                    tool_name: "t",
                    arguments_digest: "d",
                    decision: None,
                    grant: None,
                    outcome: countersign_api::ActivityOutcome::Running,
                    error: None,
                    duration_ms: None,
                    evidence: audit::Evidence::NONE,
                },
            )
            .await
        })
    });
    let mut seqs: Vec<i64> = futures_util::future::join_all(appends)
        .await
        .into_iter()
        .map(|joined| joined.expect("task").expect("append"))
        .collect();
    seqs.sort_unstable();
    let first = seqs[0];
    assert_eq!(
        seqs,
        (first..first + APPENDS as i64).collect::<Vec<_>>(),
        "one sequence number each, none skipped"
    );
    let rows = u64::try_from(first - 1).expect("a sequence number") + APPENDS as u64;
    assert_eq!(
        audit::verify(&s.app.pool).await.expect("verify"),
        Verified::Intact(rows)
    );
}
