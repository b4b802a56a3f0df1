//! Process faults (issue 15 item 3): the real server binary is killed with
//! `SIGKILL` while one call is `executing` and other cards are `pending`,
//! then (a) restarted, or (b) left dead while a surviving instance on the
//! same database carries on. Either way recovery must do exactly DESIGN
//! §6.9 — `executing → failed` ("interrupted; outcome unknown"), approved
//! but never claimed `→ failed` ("interrupted before it ran"), pending of a
//! dead turn `→ expired` — re-run nothing (the MCP server counts arrivals),
//! and end every card and turn truthfully in the chat's event log (what the
//! browser's card renders from) on its own, within the heartbeat window,
//! without the user sending anything. A decision that arrives after
//! recovery gets 410 and runs nothing.
//!
//! Timings are shortened by settings (heartbeat 1 s, stale after 4 s,
//! recovery every 1 s) so a scenario takes seconds.

use super::{
    hold::HoldServer,
    real_server::{RealServer, browser, same_browser},
};
use crate::faults_report::check;
use crate::helpers::{self, SseReader, TestApp, decide, ledger, spawn_app_with};
use countersign::{Config, config::Secret};
use countersign_api::PendingCallStatus;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// `COUNTERSIGN_TURN_HEARTBEAT_SECS` in these scenarios.
const HEARTBEAT_SECS: u64 = 1;
/// `COUNTERSIGN_TURN_STALE_SECS`.
const STALE_SECS: u64 = 4;
/// `COUNTERSIGN_RECOVERY_INTERVAL_SECS`.
const RECOVERY_SECS: u64 = 1;
/// Every card must be truthful this soon after the kill: the stale window,
/// one recovery period, and slack for a loaded machine.
const TRUTHFUL_WITHIN: Duration = Duration::from_secs(STALE_SECS + RECOVERY_SECS + 5);

/// The shortened timings, as the binary's environment.
fn fast_recovery_env(hold: &HoldServer) -> Vec<(&'static str, String)> {
    vec![
        (
            "COUNTERSIGN_TURN_HEARTBEAT_SECS",
            HEARTBEAT_SECS.to_string(),
        ),
        ("COUNTERSIGN_TURN_STALE_SECS", STALE_SECS.to_string()),
        (
            "COUNTERSIGN_RECOVERY_INTERVAL_SECS",
            RECOVERY_SECS.to_string(),
        ),
        (
            "COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS",
            hold.addr().to_string(),
        ),
    ]
}

/// The same timings for an in-process instance.
fn fast_recovery(config: &mut Config, hold: &HoldServer) {
    config.turn_heartbeat_secs = HEARTBEAT_SECS;
    config.turn_stale_secs = STALE_SECS;
    config.recovery_interval_secs = RECOVERY_SECS;
    config.secret_key = Some(Secret::new(super::real_server::SECRET_KEY));
    config.allow_private_connectors = hold.addr().to_string().parse().expect("allow list");
}

/// Adds the hold server as connector "Hold" and keeps its tools (model
/// names `hold__hold`, `hold__note`).
pub async fn add_hold_connector(app: &TestApp, hold: &HoldServer) -> String {
    helpers::add_connector(app, json!({"name": "Hold", "url": hold.url()})).await
}

/// One chat with a card in it, as the browser last saw it.
pub struct Card {
    pub chat: String,
    pub turn: String,
    pub card: Value,
    /// The last event id the browser read.
    pub last_seq: i64,
}

/// Sends `message` in a new chat on `on` and reads its stream until the
/// card.
pub async fn card(on: &TestApp, message: &str) -> Card {
    let chat = on.create_chat("offline/demo").await;
    let mut stream = on.stream(&chat, None).await;
    let turn = on.send(&chat, message).await;
    let events = stream.until("mcp_confirmation_required").await;
    let (last_seq, card) = events.last().expect("the card").clone();
    Card {
        chat,
        turn,
        card,
        last_seq,
    }
}

/// What the killed server left: a call executing (arrived at the MCP
/// server, held there), and two cards pending.
struct Left {
    executing: Card,
    /// Decided after the kill (approved, never claimed).
    approved: Card,
    /// Never decided before recovery; decided after it.
    pending: Card,
}

/// On `on` (the server about to die): the executing call and the two
/// pending cards.
async fn before_the_kill(on: &TestApp, hold: &HoldServer) -> Left {
    let executing = card(on, r#"use hold__hold with {"text": "x"}"#).await;
    let res = decide(on, &executing.card, "approve").await;
    assert_eq!(res.status(), StatusCode::OK, "approve the held call");
    hold.until_arrivals(1, Duration::from_secs(15))
        .await
        .expect("the approved call reaches the MCP server");
    let id = executing.card["id"].as_str().expect("id");
    assert_eq!(
        ledger(on, id).await.0,
        PendingCallStatus::Executing,
        "the held call is executing"
    );
    let approved = card(on, r#"use hold__note with {"text": "z"}"#).await;
    let pending = card(on, r#"use hold__note with {"text": "y"}"#).await;
    Left {
        executing,
        approved,
        pending,
    }
}

/// A chat's events after the browser's last one, until its turn finishes
/// (or `None` when it has not by `deadline`).
pub async fn until_finished(
    on: &TestApp,
    card: &Card,
    deadline: tokio::time::Instant,
) -> Option<Vec<Value>> {
    let mut stream: SseReader = on.stream(&card.chat, Some(card.last_seq)).await;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match stream.next_frame(left).await? {
            helpers::Frame::Event(_, event) => {
                let done = event["type"] == "turn_finished" && event["turn_id"] == card.turn;
                seen.push(event);
                if done {
                    return Some(seen);
                }
            }
            helpers::Frame::Comment(_) => {}
        }
    }
}

/// Each card's events (in `left`'s order), and the time from `killed` to
/// the last of them ending, or which did not end by [`TRUTHFUL_WITHIN`].
async fn cards_end(
    on: &TestApp,
    left: &Left,
    killed: Instant,
) -> Result<([Vec<Value>; 3], Duration), String> {
    let deadline = tokio::time::Instant::from_std(killed + TRUTHFUL_WITHIN);
    let (x, z, y) = tokio::join!(
        until_finished(on, &left.executing, deadline),
        until_finished(on, &left.approved, deadline),
        until_finished(on, &left.pending, deadline),
    );
    let took = killed.elapsed();
    match (x, z, y) {
        (Some(x), Some(z), Some(y)) => Ok(([x, z, y], took)),
        (x, z, y) => Err(format!(
            "turns still running {} ms after the kill: executing {}, approved {}, pending {}",
            took.as_millis(),
            if x.is_some() { "ended" } else { "RUNNING" },
            if z.is_some() { "ended" } else { "RUNNING" },
            if y.is_some() { "ended" } else { "RUNNING" },
        )),
    }
}

/// `events` end with this turn's `turn_finished` `failed`, after an event
/// of `kind` for the card whose `field` contains `says`.
fn card_then_failed(events: &[Value], card: &Card, kind: &str, field: &str, says: &str) -> bool {
    let id = card.card["id"].as_str().unwrap_or_default();
    let resolved = events.iter().position(|e| {
        e["type"] == kind
            && e["id"] == id
            && e[field].as_str().is_some_and(|text| text.contains(says))
    });
    let finished = events.iter().position(|e| {
        e["type"] == "turn_finished" && e["turn_id"] == card.turn && e["status"] == "failed"
    });
    matches!((resolved, finished), (Some(r), Some(f)) if r < f)
}

/// The turn's stored status and error.
async fn turn_row(app: &TestApp, turn: &str) -> (String, Option<String>) {
    let mut db = app.superuser().await;
    sqlx::query_as("select status, error from turns where id = $1::uuid")
        .bind(turn)
        .fetch_one(&mut db)
        .await
        .expect("turn row")
}

/// After the kill, on `on` (the restarted server or the survivor): the
/// approval that lands before recovery, the cards ending, the late
/// decision, and every check, each its own row under `case`.
async fn after_the_kill(case: &str, on: &TestApp, hold: &HoldServer, left: &Left, killed: Instant) {
    // The user approves a card of the dead turn before recovery reached it
    // (the turn's heartbeat is not yet stale): approved, never claimed.
    let res = decide(on, &left.approved.card, "approve").await;
    let approved_status = res.status();
    assert_eq!(
        approved_status,
        StatusCode::OK,
        "{case}: the decision landed before recovery (within {STALE_SECS} s of the kill)"
    );

    let ended = cards_end(on, left, killed).await;
    // A decision after recovery: refused, and nothing runs.
    let late = decide(on, &left.pending.card, "approve").await.status();
    hold.release();
    let pending_now = on.get_array("/api/mcp-pending-calls").await.len();

    let id = |c: &Card| c.card["id"].as_str().expect("id").to_owned();
    let x = ledger(on, &id(&left.executing)).await;
    let z = ledger(on, &id(&left.approved)).await;
    let y = ledger(on, &id(&left.pending)).await;
    let (events, took) = match &ended {
        Ok((events, took)) => (Some(events), Some(*took)),
        Err(_) => (None, None),
    };
    let told = |i: usize, card: &Card, kind: &str, field: &str, says: &str| {
        events.is_some_and(|e| card_then_failed(&e[i], card, kind, field, says))
    };

    let mut turns = Vec::new();
    for card in [&left.executing, &left.approved, &left.pending] {
        turns.push(turn_row(on, &card.turn).await);
    }
    let all_failed = turns
        .iter()
        .all(|(status, error)| status == "failed" && error.as_deref() == Some("interrupted"));
    check(
        &format!("process: {case}: every card truthful, on its own"),
        &format!(
            "every turn of the dead process ends failed (\"interrupted\") with turn_finished in \
             its chat, without the user sending anything, within the heartbeat window \
             (heartbeat {HEARTBEAT_SECS} s, stale after {STALE_SECS} s, recovery every \
             {RECOVERY_SECS} s: ≤ {} ms)",
            TRUTHFUL_WITHIN.as_millis()
        ),
        &match &ended {
            Ok(_) => format!(
                "kill → every card truthful: {} ms; turns {turns:?}",
                took.unwrap_or_default().as_millis()
            ),
            Err(why) => format!("{why}; turns {turns:?}"),
        },
        ended.is_ok() && all_failed,
    );

    check(
        &format!("process: {case}: executing call"),
        "a call executing when the server died is failed \"interrupted; outcome unknown\", \
         its card says so, then its turn ends failed",
        &format!(
            "ledger {x:?}; card told: {}",
            told(
                0,
                &left.executing,
                "mcp_tool_call",
                "error",
                "outcome is unknown"
            )
        ),
        x == (
            PendingCallStatus::Failed,
            Some("interrupted; outcome unknown".into()),
        ) && told(
            0,
            &left.executing,
            "mcp_tool_call",
            "error",
            "outcome is unknown",
        ),
    );
    check(
        &format!("process: {case}: approved, never claimed"),
        "a call approved after the crash but never claimed is failed \"interrupted before it \
         ran\", its card says so, then its turn ends failed",
        &format!(
            "decision {approved_status}; ledger {z:?}; card told: {}",
            told(
                1,
                &left.approved,
                "mcp_tool_call",
                "error",
                "before this call ran"
            )
        ),
        z == (
            PendingCallStatus::Failed,
            Some("interrupted before it ran".into()),
        ) && told(
            1,
            &left.approved,
            "mcp_tool_call",
            "error",
            "before this call ran",
        ),
    );
    check(
        &format!("process: {case}: pending card, late decision"),
        "a card of a dead turn expires, its card says so, its turn ends failed; a decision \
         after recovery gets 404/410 and runs nothing; no card is left open",
        &format!(
            "ledger {y:?}; card told: {}; late decision {late}; open cards {pending_now}",
            told(
                2,
                &left.pending,
                "mcp_confirmation_resolved",
                "decision",
                "expired"
            )
        ),
        y.0 == PendingCallStatus::Expired
            && told(
                2,
                &left.pending,
                "mcp_confirmation_resolved",
                "decision",
                "expired",
            )
            && matches!(late, StatusCode::GONE | StatusCode::NOT_FOUND)
            && pending_now == 0,
    );

    let arrivals = hold.arrivals();
    check(
        &format!("process: {case}: nothing re-executed"),
        "the MCP server saw exactly one call (the one executing at the kill), once; nothing \
         ran without an approval, nothing twice",
        &format!(
            "arrivals {}: {:?}",
            arrivals.len(),
            arrivals.iter().map(|(tool, _)| tool).collect::<Vec<_>>()
        ),
        arrivals.len() == 1 && arrivals[0].0 == "hold",
    );
}

#[tokio::test]
async fn sigkill_mid_call_then_restart_recovers_exactly_and_every_card_ends_truthfully() {
    countersign::telemetry::init_for_tests();
    let hold = HoldServer::start().await;
    let test_db = crate::test_db::TestDb::migrated().await;
    let env = fast_recovery_env(&hold);
    let mut first = RealServer::start(&test_db.app_url, &test_db.owner_url, &env).await;
    let browser = browser(&test_db, &first.base).await;
    browser.signed_up_user().await;
    add_hold_connector(&browser, &hold).await;
    let left = before_the_kill(&browser, &hold).await;

    first.kill().await;
    let killed = Instant::now();
    let second = RealServer::start(&test_db.app_url, &test_db.owner_url, &env).await;
    let on = same_browser(&browser, &second.base);
    after_the_kill("SIGKILL, restart", &on, &hold, &left, killed).await;
}

#[tokio::test]
async fn sigkill_mid_call_with_a_surviving_instance_recovers_exactly_and_every_card_ends_truthfully()
 {
    let hold = HoldServer::start().await;
    let survivor = spawn_app_with(|c| fast_recovery(c, &hold)).await;
    let mut doomed = RealServer::start(
        survivor.config.database_url.expose(),
        &survivor.owner_db_url,
        &fast_recovery_env(&hold),
    )
    .await;
    survivor.signed_up_user().await;
    add_hold_connector(&survivor, &hold).await;
    // The turns run on the doomed instance (the browser sends through it).
    let left = before_the_kill(&same_browser(&survivor, &doomed.base), &hold).await;

    doomed.kill().await;
    let killed = Instant::now();
    after_the_kill(
        "SIGKILL, surviving instance",
        &survivor,
        &hold,
        &left,
        killed,
    )
    .await;
}
