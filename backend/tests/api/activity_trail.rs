//! Activity as an audit trail (issue 45): `GET /api/activity` narrowed by
//! date, connector, tool, decision and flag (a call as a whole); the
//! destinations and flagged flows each call's entry keeps; the CSV and
//! JSON exports, streamed and capped; and the administrators' view
//! across users, whose every read of another account is in the chain.

use crate::helpers::{Setup, TestApp, add_connector, approve_with, decide, propose, setup, trust};
use countersign::audit::{self, Verified};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The offline model copies the search's result into an echo: a flagged
/// flow (search_notes runs unasked under trust; the echo asks).
const COPY: &str = r#"use demo__search_notes with {"query": "lease"} then use demo__echo with {"text": "FYI {{result}}"}"#;

/// Four calls of the fixture's user, in this order: an echo that names
/// an e-mail address, approved and run; a delete, declined; a search
/// that runs under trust; and the echo that copies the search's result
/// (flagged), declined. Returns the fixture and the three cards.
async fn four_calls() -> (Setup, [Value; 3]) {
    let s = setup(|_| {}).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    let (_, mail) = propose(
        &s,
        &mut stream,
        "echo",
        json!({"text": "Please mail partner@firm.example the privileged lease"}),
    )
    .await;
    assert_eq!(
        approve_with(&s.app, &mail, "once").await.status(),
        StatusCode::OK
    );
    stream.until("turn_finished").await;
    let (_, delete) = propose(&s, &mut stream, "delete_note", json!({"id": "note-1"})).await;
    assert_eq!(
        decide(&s.app, &delete, "deny").await.status(),
        StatusCode::OK
    );
    stream.until("turn_finished").await;
    trust(&s).await;
    s.app.send(&s.chat, COPY).await;
    let events = stream.until("mcp_confirmation_required").await;
    let copy = events.last().expect("the flagged card").1.clone();
    assert_eq!(copy["tool_name"], "echo");
    assert_eq!(decide(&s.app, &copy, "deny").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;
    (s, [mail, delete, copy])
}

/// The log narrowed by `query` (`""` for all of it).
async fn log(app: &TestApp, query: &str) -> Vec<Value> {
    app.get_array(&format!("/api/activity{query}")).await
}

/// `(kind, tool, decision)` of each entry, newest first.
fn shape(entries: &[Value]) -> Vec<Row> {
    entries
        .iter()
        .map(|e| {
            let word = |v: &Value| v.as_str().unwrap_or("-").to_owned();
            (
                word(&e["kind"]),
                word(&e["tool_name"]),
                word(&e["decision"]),
            )
        })
        .collect()
}

/// `(kind, tool, decision)` of one entry.
type Row = (String, String, String);

fn row(kind: &str, tool: &str, decision: &str) -> Row {
    (kind.into(), tool.into(), decision.into())
}

#[tokio::test]
async fn each_filter_narrows_the_log_to_whole_calls() {
    let (s, [mail, delete, copy]) = four_calls().await;
    let all = log(&s.app, "").await;
    assert_eq!(
        shape(&all),
        [
            row("decided", "echo", "denied"),
            row("outcome", "search_notes", "-"),
            row("decided", "search_notes", "trusted_annotations"),
            row("decided", "delete_note", "denied"),
            row("outcome", "echo", "-"),
            row("decided", "echo", "approved"),
        ],
        "the whole log, newest first"
    );
    // Each row: the query, the entries it leaves, and why.
    let cases: [(&str, Vec<Row>, &str); 9] = [
        (
            "?decision=denied",
            vec![
                row("decided", "echo", "denied"),
                row("decided", "delete_note", "denied"),
            ],
            "a decision",
        ),
        (
            "?decision=approved",
            vec![
                row("outcome", "echo", "-"),
                row("decided", "echo", "approved"),
            ],
            "an approved call's outcome comes with it",
        ),
        (
            "?tool=ECHO",
            vec![
                row("decided", "echo", "denied"),
                row("outcome", "echo", "-"),
                row("decided", "echo", "approved"),
            ],
            "a tool, in any case",
        ),
        (
            "?tool=echo&decision=approved",
            vec![
                row("outcome", "echo", "-"),
                row("decided", "echo", "approved"),
            ],
            "filters combine",
        ),
        (
            "?flagged=true",
            vec![row("decided", "echo", "denied")],
            "the flagged call only",
        ),
        (
            "?flagged=false",
            shape(&all[1..]),
            "every call but the flagged one",
        ),
        (
            "?connector=demo",
            shape(&all),
            "a connector by its name, any case",
        ),
        (
            &format!("?connector={}", s.connector),
            shape(&all),
            "a connector by its id",
        ),
        ("?connector=Elsewhere", vec![], "another connector: nothing"),
    ];
    for (query, want, why) in cases {
        assert_eq!(shape(&log(&s.app, query).await), want, "{query}: {why}");
    }

    // Dates: from a call's decision on (inclusive), before it (exclusive),
    // whole days, and an offset that is not UTC.
    let declined_at = all[3]["at"].as_str().expect("at");
    let since = log(&s.app, &format!("?from={declined_at}")).await;
    assert_eq!(
        shape(&since),
        shape(&all[..4]),
        "from the declined delete on"
    );
    let before = log(&s.app, &format!("?to={declined_at}")).await;
    assert_eq!(shape(&before), shape(&all[4..]), "before it");
    let today = &declined_at[..10];
    assert_eq!(
        log(&s.app, &format!("?from={today}&to={today}"))
            .await
            .len(),
        6
    );
    assert_eq!(
        log(&s.app, "?to=2000-01-01").await.len(),
        0,
        "nothing before 2000"
    );
    assert_eq!(
        log(&s.app, "?from=2999-01-01T00:00:00%2B05:00").await.len(),
        0,
        "nothing after 2999, an offset encoded"
    );

    // Destinations and the flag, on the decided entries; never arguments.
    let approved = all
        .iter()
        .find(|e| e["call_ref"] == mail["id"] && e["kind"] == "decided");
    let approved = approved.expect("the approved echo");
    assert_eq!(
        approved["destinations"],
        json!([{"kind": "email", "ascii": "partner@firm.example", "path": "/text"}])
    );
    assert!(
        approved.get("flagged").is_none(),
        "absent when false: {approved}"
    );
    let flagged = &all[0];
    assert_eq!(flagged["call_ref"], copy["id"]);
    assert_eq!(flagged["flagged"], true);
    assert_eq!(
        flagged["flows"],
        json!(["This sends text from Demo: search_notes to Demo: echo (reaches outside)"])
    );
    assert_eq!(all[3]["call_ref"], delete["id"]);
    assert!(
        all[3].get("destinations").is_none(),
        "none named: none shown"
    );
    let text = serde_json::to_string(&all).expect("JSON");
    for secret in ["privileged lease", "Harbour Street", "FYI"] {
        assert!(!text.contains(secret), "no argument text: {secret}");
    }
    // Entries with evidence still chain.
    assert_eq!(
        audit::verify(&s.app.pool).await.expect("verify"),
        Verified::Intact(6)
    );

    // What cannot be a filter is named.
    for (query, status, why) in [
        (
            "?decision=maybe",
            StatusCode::UNPROCESSABLE_ENTITY,
            "decision must be",
        ),
        (
            "?from=yesterday",
            StatusCode::UNPROCESSABLE_ENTITY,
            "from must be",
        ),
        (
            "?to=2026-02-30",
            StatusCode::UNPROCESSABLE_ENTITY,
            "to must be",
        ),
        (
            "?flagged=maybe",
            StatusCode::BAD_REQUEST,
            "Bad query string",
        ),
    ] {
        let res = s.app.get(&format!("/api/activity{query}")).await;
        assert_eq!(res.status(), status, "{query}");
        let body: Value = res.json().await.expect("JSON");
        assert!(
            body["detail"].as_str().is_some_and(|d| d.contains(why)),
            "{query}: {body}"
        );
    }
}

/// `n` decided entries of `user` for the tool `bulk`, chained after the
/// last one by a superuser by the hash rule.
async fn bulk_rows(app: &TestApp, user: uuid::Uuid, n: i64) {
    let mut db = app.superuser().await;
    let last: Option<(i64, String)> =
        sqlx::query_as("select seq, hash from activity order by seq desc limit 1")
            .fetch_optional(&mut db)
            .await
            .expect("last row");
    let (mut seq, mut prev) = last.unwrap_or((0, audit::GENESIS.to_owned()));
    let (mut seqs, mut entries, mut prevs, mut hashes) = (vec![], vec![], vec![], vec![]);
    for _ in 0..n {
        seq += 1;
        let entry = json!({
            "seq": seq, "at": "2026-12-01T00:00:00.000000Z", "user_id": user,
            "call_ref": format!("bulk-{seq}"), "kind": "decided", "tool_name": "bulk",
            "connector_name": "Bulk", "decision": "approved", "outcome": "running",
            "arguments_digest": "00"
        });
        let hash = audit::chain_hash(&prev, &entry);
        seqs.push(seq);
        entries.push(entry);
        prevs.push(std::mem::replace(&mut prev, hash.clone()));
        hashes.push(hash);
    }
    sqlx::query(
        "insert into activity (seq, user_id, entry, prev_hash, hash) \
         select seq, $5, entry, prev_hash, hash \
         from unnest($1::bigint[], $2::jsonb[], $3::text[], $4::text[]) as t(seq, entry, prev_hash, hash)",
    )
    .bind(&seqs)
    .bind(&entries)
    .bind(&prevs)
    .bind(&hashes)
    .bind(user)
    .execute(&mut db)
    .await
    .expect("bulk rows");
}

async fn export(app: &TestApp, path: &str) -> (reqwest::header::HeaderMap, String) {
    let res = app.get(path).await;
    assert_eq!(res.status(), StatusCode::OK, "GET {path}");
    let headers = res.headers().clone();
    (headers, res.text().await.expect("body"))
}

#[tokio::test]
async fn exports_carry_the_filtered_entries_as_csv_and_json_and_state_their_cap() {
    let (s, [mail, ..]) = four_calls().await;
    let shown = log(&s.app, "?tool=echo").await;

    let (headers, body) = export(&s.app, "/api/activity/export?format=json&tool=echo").await;
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["x-row-cap"], "10000");
    assert!(
        headers["content-disposition"].to_str().is_ok_and(|d| d
            .starts_with("attachment; filename=\"countersign-activity-")
            && d.ends_with(".json\"")),
        "{headers:?}"
    );
    let file: Value = serde_json::from_str(&body).expect("one JSON document");
    assert_eq!(file["row_cap"], 10000);
    assert_eq!(file["filter"], json!({"tool": "echo"}));
    assert_eq!(file["truncated"], false);
    assert_eq!(file["row_count"], 3);
    assert_eq!(
        file["rows"],
        Value::Array(shown.clone()),
        "what the page shows"
    );
    assert!(!body.contains("privileged lease"), "no arguments");

    let (headers, body) = export(&s.app, "/api/activity/export?format=csv&tool=echo").await;
    assert_eq!(headers["content-type"], "text/csv; charset=utf-8");
    assert_eq!(headers["x-row-cap"], "10000");
    let lines: Vec<&str> = body.lines().collect();
    assert!(
        lines[0].starts_with("# Countersign activity export; at most 10000 rows, newest first;")
            && lines[0].ends_with("filter: tool=echo"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with("seq,at,user_id,user_email,kind,call_ref,"),
        "{}",
        lines[1]
    );
    assert_eq!(lines.len(), 2 + 3 + 1, "{body}");
    assert_eq!(lines[5], "# 3 rows; complete");
    let approved = lines
        .iter()
        .find(|l| l.contains(mail["id"].as_str().expect("id")) && l.contains(",decided,"))
        .expect("the approved echo's row");
    assert!(approved.contains(",approved,once,running,"), "{approved}");
    assert!(approved.contains(",partner@firm.example,"), "{approved}");
    let flagged = lines[2];
    assert!(
        flagged.contains(",true,")
            && flagged.contains(
                ",This sends text from Demo: search_notes to Demo: echo (reaches outside),"
            ),
        "{flagged}"
    );

    // Compressed, as a browser asks for it: the whole body arrives (an
    // export's stream once panicked when polled again after its end).
    let res = s
        .app
        .client
        .get(s.app.url("/api/activity/export?format=csv&tool=echo"))
        .header("accept-encoding", "gzip, br")
        .send()
        .await
        .expect("compressed export");
    assert_eq!(res.status(), StatusCode::OK);
    assert!(
        res.headers().contains_key("content-encoding"),
        "{:?}",
        res.headers()
    );
    assert!(!res.bytes().await.expect("the whole body").is_empty());

    // Nothing matches: a complete, empty file.
    let (_, body) = export(&s.app, "/api/activity/export?format=csv&tool=none").await;
    assert_eq!(body.lines().last(), Some("# 0 rows; complete"));
    let res = s.app.get("/api/activity/export?format=xml").await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let res = s
        .app
        .get("/api/activity/export?format=json&decision=maybe")
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);

    // The bound: 10,005 matching entries give 10,000, and the file says
    // it was cut; the page shows 500.
    bulk_rows(&s.app, s.user, 10_005).await;
    let (_, body) = export(&s.app, "/api/activity/export?format=json&tool=bulk").await;
    let file: Value = serde_json::from_str(&body).expect("one JSON document");
    assert_eq!(file["row_count"], 10_000);
    assert_eq!(file["rows"].as_array().map(Vec::len), Some(10_000));
    assert_eq!(file["truncated"], true);
    assert_eq!(file["rows"][0]["call_ref"], "bulk-10011", "newest first");
    let (_, body) = export(&s.app, "/api/activity/export?format=csv&tool=bulk").await;
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines.len(), 2 + 10_000 + 1);
    assert!(
        lines[lines.len() - 1].starts_with("# 10000 rows; truncated at the cap of 10000 rows"),
        "{}",
        lines[lines.len() - 1]
    );
    // A page holds 500; `before` the last one reads the next, down to
    // the first entry, each exactly once.
    let mut pages = vec![log(&s.app, "?tool=bulk").await];
    while pages.last().is_some_and(|p| p.len() == 500) {
        let last = pages.last().and_then(|p| p.last()).expect("a full page");
        let before = last["seq"].as_i64().expect("seq");
        pages.push(log(&s.app, &format!("?tool=bulk&before={before}")).await);
    }
    assert_eq!(pages.len(), 21, "20 full pages and the rest");
    let seqs: Vec<i64> = pages
        .iter()
        .flatten()
        .map(|e| e["seq"].as_i64().expect("seq"))
        .collect();
    assert_eq!(seqs.len(), 10_005);
    assert!(
        seqs.windows(2).all(|w| w[0] > w[1]),
        "newest first, none twice"
    );
    let res = s.app.get("/api/activity?before=soon").await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn only_administrators_read_across_users_and_each_read_of_another_is_in_the_chain() {
    // The fixture's user is the deployment's first: its administrator.
    let s = setup(|_| {}).await;
    let admin_email = s.app.get_json("/api/auth/me").await["user"]["email"]
        .as_str()
        .expect("email")
        .to_owned();
    let other = s.app.at(&s.app.base);
    let (other_id, other_email) = other.signed_up_user().await;
    add_connector(&other, json!({"name": "Mail", "url": s.demo.mcp_url()})).await;
    let chat = other.create_chat("offline/demo").await;
    let mut stream = other.stream(&chat, None).await;
    other
        .send(
            &chat,
            r#"use mail__echo with {"text": "to counsel@other.example"}"#,
        )
        .await;
    let card = stream.until("mcp_confirmation_required").await;
    let card = card.last().expect("card").1.clone();
    assert_eq!(decide(&other, &card, "deny").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;

    // Everyone else: 403 with a detail, on every admin activity route.
    for path in [
        "/api/admin/activity".to_owned(),
        format!("/api/admin/activity?user={other_id}"),
        "/api/admin/activity/export?format=csv".to_owned(),
        "/api/admin/activity/export?format=json&user=".to_owned() + &admin_email,
    ] {
        let res = other.get(&path).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{path}");
        let body: Value = res.json().await.expect("JSON");
        assert!(body["detail"].is_string(), "{path}: {body}");
    }
    assert_eq!(
        log(&s.app, "").await,
        Vec::<Value>::new(),
        "the refused reads recorded nothing"
    );

    // The administrator reads the other account's log (by email).
    let theirs = s
        .app
        .get_array(&format!(
            "/api/admin/activity?user={other_email}&decision=denied"
        ))
        .await;
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0]["user_email"], other_email.as_str());
    assert_eq!(theirs[0]["user_id"], other_id.to_string());
    assert_eq!(theirs[0]["connector_name"], "Mail");
    assert_eq!(
        theirs[0]["destinations"],
        json!([{"kind": "email", "ascii": "counsel@other.example", "path": "/text"}])
    );
    // …which is an entry of the administrator's own log, before the answer.
    let mine = log(&s.app, "").await;
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert_eq!(mine[0]["kind"], "activity_read");
    assert_eq!(mine[0]["subject"], other_email.as_str());
    assert_eq!(mine[0]["filter"], json!({"decision": "denied"}));
    assert!(mine[0].get("export").is_none());
    // The other account's own log does not change.
    assert_eq!(other.get_array("/api/activity").await.len(), 1);

    // Reading one's own log through the admin view is no read of another.
    let own_id = s.user;
    s.app
        .get_array(&format!("/api/admin/activity?user={own_id}"))
        .await;
    assert_eq!(log(&s.app, "").await.len(), 1, "nothing new");

    // Every account's, exported: recorded with the format, the email on
    // each row.
    let (_, body) = export(&s.app, "/api/admin/activity/export?format=csv&tool=echo").await;
    assert!(body.contains(&other_email), "{body}");
    let mine = log(&s.app, "").await;
    assert_eq!(mine.len(), 2);
    assert_eq!(mine[0]["kind"], "activity_read");
    assert!(mine[0].get("subject").is_none(), "every account's");
    assert_eq!(mine[0]["export"], "csv");
    assert_eq!(mine[0]["filter"], json!({"tool": "echo"}));
    let everyone = s.app.get_array("/api/admin/activity").await;
    assert!(
        everyone
            .iter()
            .any(|e| e["kind"] == "activity_read" && e["user_email"] == admin_email.as_str()),
        "the administrator's reads are in the view across users"
    );
    assert!(
        everyone
            .iter()
            .any(|e| e["user_email"] == other_email.as_str())
    );

    // An account that does not exist.
    let res = s
        .app
        .get("/api/admin/activity?user=nobody@example.org")
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    // The chain holds, reads included.
    assert!(
        audit::verify(&s.app.pool)
            .await
            .expect("verify")
            .is_intact()
    );
}

#[tokio::test]
async fn an_administrator_sees_whose_calls_wait_but_not_their_arguments_and_the_read_is_recorded() {
    // The fixture's user is the deployment's first: its administrator.
    let s = setup(|_| {}).await;
    let other = s.app.at(&s.app.base);
    let (other_id, other_email) = other.signed_up_user().await;
    add_connector(&other, json!({"name": "Mail", "url": s.demo.mcp_url()})).await;
    let chat = other.create_chat("offline/demo").await;
    let mut stream = other.stream(&chat, None).await;
    other
        .send(
            &chat,
            r#"use mail__echo with {"text": "privileged: mail counsel@other.example"}"#,
        )
        .await;
    let card = stream.until("mcp_confirmation_required").await;
    let card = card.last().expect("card").1.clone();

    // Not for anyone else.
    let res = other.get("/api/admin/pending-calls").await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);

    // The administrator: whose, which tool, where it sends data — no
    // arguments, no chat.
    let res = s
        .app
        .get(&format!("/api/admin/pending-calls?user={other_email}"))
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let body = res.text().await.expect("body");
    assert!(!body.contains("privileged"), "no arguments: {body}");
    assert!(!body.contains(&chat), "no chat: {body}");
    let waiting: Vec<Value> = serde_json::from_str(&body).expect("JSON");
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert_eq!(waiting[0]["id"], card["id"]);
    assert_eq!(waiting[0]["user_id"], other_id.to_string());
    assert_eq!(waiting[0]["user_email"], other_email.as_str());
    assert_eq!(waiting[0]["connector_name"], "Mail");
    assert_eq!(waiting[0]["tool_name"], "echo");
    assert_eq!(
        waiting[0]["destinations"][0]["ascii"],
        "counsel@other.example"
    );
    assert!(
        waiting[0]["waiting_since"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    // The read is in the administrator's own log, said to be of waiting
    // calls.
    let mine = log(&s.app, "").await;
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert_eq!(mine[0]["kind"], "activity_read");
    assert_eq!(mine[0]["subject"], other_email.as_str());
    assert_eq!(mine[0]["waiting"], true);
    // Every account's: the same call; the administrator's own list is
    // empty, and reading it records nothing.
    assert_eq!(s.app.get_array("/api/admin/pending-calls").await.len(), 1);
    let own = s
        .app
        .get_array(&format!("/api/admin/pending-calls?user={}", s.user))
        .await;
    assert!(own.is_empty());
    assert_eq!(log(&s.app, "").await.len(), 2, "every account's read only");

    // Decided, it waits no more.
    assert_eq!(decide(&other, &card, "deny").await.status(), StatusCode::OK);
    stream.until("turn_finished").await;
    assert!(s.app.get_array("/api/admin/pending-calls").await.is_empty());
    let res = s
        .app
        .get("/api/admin/pending-calls?user=nobody@example.org")
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert!(
        audit::verify(&s.app.pool)
            .await
            .expect("verify")
            .is_intact()
    );
}
