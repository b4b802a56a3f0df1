//! Issue 15 item 4: three real `countersign serve` processes on one
//! database behind a real load balancer (HAProxy from Debian, round-robin,
//! no stickiness), all on loopback. HAProxy names the instance that served
//! each response (`X-Served-By`), so the test can sign in through one,
//! stream from another and decide on the third, and then show where each
//! approval was decided.
//!
//! Every instance polls the ledger only every 30 s, so a turn that wakes
//! within milliseconds of a decision taken elsewhere woke by `NOTIFY`. At
//! the end the instance running a waiting turn is killed: the survivors
//! end its card and turn within the heartbeat window.

use super::real_server::{RealServer, browser};
use crate::faults_report::check;
use crate::helpers::{GOOD_PASSWORD, SseReader, TestApp, add_demo_connector, email};
use crate::test_db::TestDb;
use countersign_demo_mcp::DemoServer;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::{
    collections::BTreeMap,
    io::{BufRead as _, BufReader},
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

use time::{OffsetDateTime, format_description::well_known::Rfc3339};

/// The instances, in HAProxy's round-robin order.
const NAMES: [&str; 3] = ["a", "b", "c"];
/// Rounds of the concurrent-approval race.
const ROUNDS: usize = 200;
/// Rounds of the cross-instance wake-up timing.
const WAKE_ROUNDS: usize = 100;
/// Deciders per round, spread over the instances by the balancer.
const DECIDERS: usize = 50;
/// Heartbeat, staleness and recovery of every instance (seconds), short
/// so a dead instance's turns are recovered within the test.
const HEARTBEAT_SECS: u64 = 1;
const STALE_SECS: u64 = 4;
const RECOVERY_SECS: u64 = 1;
/// Far above any latency the test accepts: a wake-up this test sees can
/// only have come from NOTIFY.
const POLL_MS: &str = "30000";

/// An instance: a real server polling the ledger only every 30 s.
async fn start_instance(db: &TestDb, demo: &DemoServer) -> RealServer {
    RealServer::start(
        &db.app_url,
        &db.owner_url,
        &[
            ("COUNTERSIGN_APPROVAL_POLL_MS", POLL_MS.to_owned()),
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
                demo.addr().to_string(),
            ),
            ("RUST_LOG", "warn".to_owned()),
        ],
    )
    .await
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// HAProxy in the foreground; killed when dropped.
struct Balancer {
    child: Child,
    port: u16,
    config: PathBuf,
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.config);
    }
}

/// The HAProxy binary: `COUNTERSIGN_FAULTS_HAPROXY`, else `haproxy` on
/// PATH (`cargo xtask faults` installs Debian's).
fn haproxy() -> PathBuf {
    if let Some(path) = std::env::var_os("COUNTERSIGN_FAULTS_HAPROXY") {
        return path.into();
    }
    let found = Command::new("sh")
        .args(["-c", "command -v haproxy"])
        .output()
        .expect("sh");
    let path = String::from_utf8_lossy(&found.stdout).trim().to_owned();
    assert!(
        found.status.success() && !path.is_empty(),
        "HAProxy is not installed: `cargo xtask faults` installs it (Debian package haproxy)"
    );
    path.into()
}

/// Round-robin over `instances`, health-checked on `/readyz`, naming the
/// server of every response in `X-Served-By`. Streams get an hour.
async fn start_balancer(instances: &[RealServer]) -> Balancer {
    let port = free_port();
    let mut config = format!(
        "global\n  maxconn 4096\n\
         defaults\n  mode http\n  timeout connect 2s\n  timeout client 120s\n  \
         timeout server 120s\n  timeout tunnel 1h\n  option redispatch\n  retries 2\n\
         frontend fe\n  bind 127.0.0.1:{port}\n  default_backend instances\n\
         backend instances\n  balance roundrobin\n  option httpchk GET /readyz\n  \
         http-response set-header X-Served-By %s\n"
    );
    for (name, instance) in NAMES.iter().zip(instances) {
        config.push_str(&format!(
            "  server {name} 127.0.0.1:{} check inter 500ms fall 1 rise 1\n",
            instance.port
        ));
    }
    let path = std::env::temp_dir().join(format!("countersign-haproxy-{port}.cfg"));
    std::fs::write(&path, config).expect("haproxy.cfg");
    let mut child = Command::new(haproxy())
        .args(["-W", "-db", "-f"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start haproxy");
    let stderr = child.stderr.take().expect("stderr");
    // The master says so once its worker runs with the listeners bound.
    let loaded = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::task::spawn_blocking(move || {
            let mut lines = BufReader::new(stderr).lines();
            let loaded = lines
                .by_ref()
                .map_while(Result::ok)
                .any(|l| l.contains("Loading success"));
            // Keep draining, so HAProxy never blocks on a full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            loaded
        }),
    )
    .await
    .expect("HAProxy started within 30 s")
    .expect("reader");
    assert!(loaded, "HAProxy exited before it loaded its configuration");
    Balancer {
        child,
        port,
        config: path,
    }
}

/// Which instance served `res`.
fn served_by(res: &reqwest::Response) -> String {
    res.headers()
        .get("x-served-by")
        .and_then(|v| v.to_str().ok())
        .expect("HAProxy names the server")
        .to_owned()
}

/// The instance that round-robin picks after `name`.
fn after(name: &str) -> &'static str {
    let i = NAMES.iter().position(|n| *n == name).expect("a known name");
    NAMES[(i + 1) % NAMES.len()]
}

/// Sends cheap requests through the balancer until its next pick is
/// `target` (round-robin over healthy servers is a fixed cycle).
async fn aim_at(app: &TestApp, target: &str) {
    for _ in 0..NAMES.len() {
        let res = app.get("/healthz").await;
        if after(&served_by(&res)) == target {
            return;
        }
    }
    panic!("round-robin never came round to {target}");
}

/// The message that makes the offline model propose a demo call.
const PROPOSE: &str = r#"use demo__search_notes with {"query":"lease"}"#;

/// Sends [`PROPOSE`] through the balancer; returns the instance that took
/// it (and so runs the turn) and the card from `stream`.
async fn propose_via(app: &TestApp, chat: &str, stream: &mut SseReader) -> (String, Value) {
    let res = app
        .post(
            &format!("/api/chats/{chat}/messages"),
            &json!({"content": PROPOSE}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let (_, card) = stream
        .until("mcp_confirmation_required")
        .await
        .pop()
        .expect("card");
    (served_by(&res), card)
}

/// When the demo server started its most recent call.
fn last_execution(demo: &DemoServer) -> OffsetDateTime {
    let log = demo.calls();
    let last = log.calls.last().expect("a call ran");
    OffsetDateTime::parse(&last.at, &Rfc3339).expect("an RFC 3339 stamp")
}

fn percentile(samples: &[f64], p: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow, issue 15: run by cargo xtask faults"]
async fn three_instances_behind_haproxy_decide_once_and_wake_by_notify() {
    let demo = DemoServer::start("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("demo server");
    let db = TestDb::migrated().await;
    let (a, b, c) = tokio::join!(
        start_instance(&db, &demo),
        start_instance(&db, &demo),
        start_instance(&db, &demo),
    );
    let mut instances = [a, b, c];
    let balancer = start_balancer(&instances).await;
    let app = browser(&db, &format!("http://127.0.0.1:{}", balancer.port)).await;

    // Sign in through one instance, stream from another, decide on the third.
    let res = app
        .post(
            "/api/auth/signup",
            &json!({"email": email(), "password": GOOD_PASSWORD}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let signed_in_on = served_by(&res);
    let body: Value = res.json().await.expect("JSON");
    *app.csrf.lock().expect("lock") = body["csrf_token"].as_str().map(str::to_owned);
    add_demo_connector(&app, &demo).await;
    let chat = app.create_chat("offline/demo").await;

    let stream_on = after(&signed_in_on);
    aim_at(&app, stream_on).await;
    let res = app
        .client
        .get(app.url(&format!("/api/chats/{chat}/stream")))
        .send()
        .await
        .expect("stream");
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(served_by(&res), stream_on);
    let mut stream = SseReader::from_response(res);

    let decide_on = after(stream_on);
    app.send(&chat, PROPOSE).await;
    let (_, card) = stream
        .until("mcp_confirmation_required")
        .await
        .pop()
        .expect("card");
    aim_at(&app, decide_on).await;
    let decided_at = OffsetDateTime::now_utc();
    let res = app
        .post(
            &format!(
                "/api/mcp-pending-calls/{}",
                card["id"].as_str().expect("id")
            ),
            &json!({"decision": "approve", "arguments_digest": card["arguments_digest"]}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    let decided_by = served_by(&res);
    let finished = stream.until("turn_finished").await;
    let woke_ms = (last_execution(&demo) - decided_at).as_seconds_f64() * 1000.0;
    let distinct =
        signed_in_on != stream_on && stream_on != decided_by && decided_by != signed_in_on;
    let streamed_all = finished.iter().any(|(_, e)| e["type"] == "mcp_tool_call");
    check(
        "three instances: sign in on one, stream from another, decide on the third",
        "every step on a different instance; the stream carries the turn's events; \
         the call runs once, woken by NOTIFY (poll 30 s)",
        &format!(
            "signed in on {signed_in_on}, streamed from {stream_on}, decided on {decided_by}; \
             tool result on the stream: {streamed_all}; executions {}; decision → execution {woke_ms:.1} ms",
            demo.calls().total
        ),
        distinct && streamed_all && demo.calls().total == 1 && woke_ms < 1000.0,
    );

    // Wake-ups across instances: the card's turn runs where the message
    // was sent; the decision is taken on the next instance round-robin.
    let mut samples = Vec::with_capacity(WAKE_ROUNDS);
    let mut woke_elsewhere = 0usize;
    for _ in 0..WAKE_ROUNDS {
        let (turn_on, card) = propose_via(&app, &chat, &mut stream).await;
        let decided_at = OffsetDateTime::now_utc();
        let res = app
            .post(
                &format!(
                    "/api/mcp-pending-calls/{}",
                    card["id"].as_str().expect("id")
                ),
                &json!({"decision": "approve", "arguments_digest": card["arguments_digest"]}),
            )
            .await;
        assert_eq!(res.status(), StatusCode::OK);
        if served_by(&res) != turn_on {
            woke_elsewhere += 1;
        }
        stream.until("turn_finished").await;
        samples.push((last_execution(&demo) - decided_at).as_seconds_f64() * 1000.0);
    }
    let (p50, p99) = (
        percentile(&samples, 0.5),
        percentile(&samples, 1.0 - 1.0 / 100.0),
    );
    check(
        "three instances: decision on one instance wakes the turn on another",
        "decision → execution start p99 ≤ 50 ms, by NOTIFY (every instance polls only every 30 s)",
        &format!(
            "{WAKE_ROUNDS} rounds, {woke_elsewhere} decided on another instance than the turn's: \
             p50 {p50:.1} ms, p99 {p99:.1} ms, max {:.1} ms",
            percentile(&samples, 1.0)
        ),
        woke_elsewhere == WAKE_ROUNDS && p99 <= 50.0,
    );

    // The race: fifty deciders a card, spread over the instances.
    let before_race = demo.calls().total;
    let mut winners = 0usize;
    let mut losers = 0usize;
    let mut other = BTreeMap::<u16, usize>::new();
    let mut decided_on = BTreeMap::<String, usize>::new();
    let mut executions_ok = 0usize;
    for _ in 0..ROUNDS {
        let before = demo.calls().total;
        app.send(&chat, PROPOSE).await;
        let (_, card) = stream
            .until("mcp_confirmation_required")
            .await
            .pop()
            .expect("card");
        let path = format!(
            "/api/mcp-pending-calls/{}",
            card["id"].as_str().expect("id")
        );
        let body = json!({"decision": "approve", "arguments_digest": card["arguments_digest"]});
        let responses =
            futures_util::future::join_all((0..DECIDERS).map(|_| app.post(&path, &body))).await;
        for res in &responses {
            match res.status() {
                StatusCode::OK => {
                    winners += 1;
                    *decided_on.entry(served_by(res)).or_default() += 1;
                }
                StatusCode::NOT_FOUND => losers += 1,
                status => *other.entry(status.as_u16()).or_default() += 1,
            }
        }
        stream.until("turn_finished").await;
        if demo.calls().total == before + 1 {
            executions_ok += 1;
        }
    }
    check(
        &format!("three instances: {DECIDERS} concurrent approvals of one card, {ROUNDS} rounds"),
        "exactly one 200 (the rest 404) and exactly one execution at the MCP server per card",
        &format!(
            "{winners} × 200, {losers} × 404, other statuses {other:?}; \
             rounds with exactly one execution {executions_ok}/{ROUNDS}; \
             winning decisions by instance {decided_on:?}"
        ),
        winners == ROUNDS
            && losers == ROUNDS * (DECIDERS - 1)
            && other.is_empty()
            && executions_ok == ROUNDS
            && demo.calls().total == before_race + ROUNDS,
    );

    // An instance dies mid-turn: its card and turn are ended by the
    // survivors' recovery within the heartbeat window, on the stream the
    // browser already has open on another instance.
    aim_at(&app, after(stream_on)).await;
    let (doomed, card) = propose_via(&app, &chat, &mut stream).await;
    let before_kill = demo.calls().total;
    let index = NAMES
        .iter()
        .position(|n| *n == doomed)
        .expect("a known name");
    let killed = std::time::Instant::now();
    instances[index].kill().await;
    let ended = stream.until("turn_finished").await;
    let truthful_after = killed.elapsed();
    let resolved = ended
        .iter()
        .find(|(_, e)| e["type"] == "mcp_confirmation_resolved" && e["id"] == card["id"])
        .map(|(_, e)| e["decision"].clone());
    let turn_status = ended.last().map(|(_, e)| e["status"].clone());
    let late = app
        .post(
            &format!(
                "/api/mcp-pending-calls/{}",
                card["id"].as_str().expect("id")
            ),
            &json!({"decision": "approve", "arguments_digest": card["arguments_digest"]}),
        )
        .await
        .status();
    let window = Duration::from_secs(STALE_SECS + 2 * RECOVERY_SECS + HEARTBEAT_SECS);
    check(
        "three instances: the instance running a turn is killed (SIGKILL) while its card waits",
        &format!(
            "the survivors end the card (expired) and the turn (failed) within the heartbeat \
             window ({} s here: stale after {STALE_SECS} s, recovery every {RECOVERY_SECS} s); \
             the stream on another instance says so; a late approval runs nothing",
            window.as_secs()
        ),
        &format!(
            "killed {doomed} (stream on {stream_on}); card {}, turn {}, {:.1} s after the kill; \
             late approval {}; executions since {}",
            resolved.clone().unwrap_or(Value::Null),
            turn_status.clone().unwrap_or(Value::Null),
            truthful_after.as_secs_f64(),
            late.as_u16(),
            demo.calls().total - before_kill
        ),
        resolved == Some(json!("expired"))
            && turn_status == Some(json!("failed"))
            && truthful_after <= window
            && matches!(late, StatusCode::NOT_FOUND | StatusCode::GONE)
            && demo.calls().total == before_kill,
    );
    drop(balancer);
    drop(instances);
}
