//! `cargo xtask bench`, part two: the approval ledger. Figures, never
//! asserted.
//!
//! 1. Decision → execution start: a release server (a separate process over
//!    a real Postgres) with the demo MCP server (in this process, which
//!    stamps every call it executes) and the offline model. Each round the
//!    model proposes a call; when the card arrives on the chat's stream we
//!    note the time and approve; the demo server's stamp of the execution
//!    minus that time is one sample. Once with NOTIFY (the default; 200
//!    rounds, so that its p99 is a percentile, not the slowest sample,
//!    which is printed beside it), once poll-only at the default 1.5 s
//!    interval (30 rounds), in the same run.
//! 2. 1,000 calls waiting at once (1,000 chats, one card each): database
//!    transactions per minute, reads of the ledger per minute, the
//!    server's resident memory before and with them, and decision →
//!    execution start again (another user's rounds) while they wait.
//!
//! Needs `COUNTERSIGN_TEST_SUPERUSER_URL` and `COUNTERSIGN_BENCH_SERVER`;
//! the xtask sets both.

#[path = "support/report.rs"]
mod report;
#[path = "../tests/support/db.rs"]
mod test_db;

use report::{Figure, only_latency, only_memory, report};

use countersign_demo_mcp::DemoServer;
use serde_json::{Value, json};
use sqlx::{Connection as _, PgConnection};
use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};
use test_db::TestDb;
use time::{OffsetDateTime, format_description::well_known::Rfc3339};

/// Decisions timed with NOTIFY: enough that the p99 is a percentile (with
/// 30 it was the slowest sample, one descheduling of this shared host).
const ROUNDS: usize = 200;
/// Decisions made before the timed NOTIFY ones. A fresh server's pool
/// opens its connections as it needs them and hands them out in turn, and
/// each connection plans a statement on its first use (`db::connect`):
/// until every connection has run every statement of a decision once, a
/// round pays for that too. The timed rounds measure the server as it
/// runs after its first minute, not its start. (The poll anchor needs
/// none: its wait is the poll's.)
const WARM_UP: usize = 40;
/// Decisions timed for the poll-only anchor (1.5 s each).
const POLL_ROUNDS: usize = 30;
const WAITING: usize = 1000;
const APPROVAL_KEY: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

struct Server {
    child: Child,
    base: String,
    db: TestDb,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

async fn start_server(demo: &DemoServer, tag: &str, env: &[(&str, &str)]) -> Server {
    let db = TestDb::create(&format!("bench_{tag}")).await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr")
        .port();
    let mut command = Command::new(std::env::var("COUNTERSIGN_BENCH_SERVER").expect("server"));
    command
        .arg("serve")
        .env("DATABASE_URL", &db.app_url)
        .env("COUNTERSIGN_MIGRATION_DATABASE_URL", &db.owner_url)
        .env("COUNTERSIGN_BIND", format!("127.0.0.1:{port}"))
        .env(
            "COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS",
            demo.addr().to_string(),
        )
        .env("COUNTERSIGN_APPROVAL_KEY", APPROVAL_KEY)
        .env("COUNTERSIGN_DEMO_WORD_DELAY_MS", "0")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null());
    for (k, v) in env {
        command.env(k, v);
    }
    let server = Server {
        child: command.spawn().expect("start the server"),
        base: format!("http://127.0.0.1:{port}"),
        db,
    };
    let probe = reqwest::Client::new();
    let start = Instant::now();
    while probe
        .get(format!("{}/readyz", server.base))
        .send()
        .await
        .map(|r| !r.status().is_success())
        .unwrap_or(true)
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "server not ready"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server
}

/// A signed-in user of `server` with the demo connector, every tool kept.
struct User {
    client: reqwest::Client,
    csrf: String,
    base: String,
}

impl User {
    async fn new(server: &Server, demo: &DemoServer) -> Self {
        let client = reqwest::Client::builder()
            .cookie_store(true)
            .pool_max_idle_per_host(64)
            .build()
            .expect("client");
        let body: Value = client
            .post(format!("{}/api/auth/signup", server.base))
            // A new user each time: the 1,000-waiting server gets two.
            .json(&json!({
                "email": format!("bench-{}@example.org", uuid::Uuid::new_v4().simple()),
                "password": "tidal quartz lantern orchard",
            }))
            .send()
            .await
            .expect("signup")
            .json()
            .await
            .expect("json");
        let user = Self {
            client,
            csrf: body["csrf_token"].as_str().expect("csrf").to_owned(),
            base: server.base.clone(),
        };
        let connector = user
            .post(
                "/api/connectors",
                json!({"name": "Demo", "url": demo.mcp_url()}),
            )
            .await;
        let id = connector["id"].as_str().expect("connector id").to_owned();
        user.post(&format!("/api/connectors/{id}/refresh"), json!({}))
            .await;
        let tools: Value = user
            .client
            .get(format!("{}/api/connectors/{id}/tools", user.base))
            .send()
            .await
            .expect("tools")
            .json()
            .await
            .expect("json");
        let seen: Vec<Value> = tools
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| json!({"name": t["name"], "descriptor_digest": t["descriptor_digest"]}))
            .collect();
        let res = user
            .client
            .put(format!("{}/api/connectors/{id}/tools/review", user.base))
            .header("x-csrf-token", &user.csrf)
            .json(&json!({"keep": seen, "decline": []}))
            .send()
            .await
            .expect("review");
        assert!(res.status().is_success(), "review");
        user
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let res = self
            .client
            .post(format!("{}{path}", self.base))
            .header("x-csrf-token", &self.csrf)
            .json(&body)
            .send()
            .await
            .expect("post");
        assert!(res.status().is_success(), "{path}: {}", res.status());
        res.json().await.unwrap_or(Value::Null)
    }

    async fn chat(&self) -> String {
        self.post("/api/chats", json!({"model": "offline/demo"}))
            .await["id"]
            .as_str()
            .expect("chat id")
            .to_owned()
    }

    /// Waits until at least `count` of the user's calls wait for a
    /// decision (at most 300 s after `started`).
    async fn until_waiting(&self, count: usize, started: Instant) {
        loop {
            let live: Value = self
                .client
                .get(format!("{}/api/mcp-pending-calls", self.base))
                .send()
                .await
                .expect("list")
                .json()
                .await
                .expect("json");
            if live.as_array().map_or(0, Vec::len) >= count {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(300),
                "cards did not all arrive"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    async fn send(&self, chat: &str) {
        self.post(
            &format!("/api/chats/{chat}/messages"),
            json!({"content": r#"use search_notes with {"query":"lease"}"#}),
        )
        .await;
    }
}

/// Reads SSE frames until one of `kind`; returns its data.
async fn until(stream: &mut reqwest::Response, buffer: &mut String, kind: &str) -> Value {
    loop {
        if let Some(i) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..i + 2).collect();
            if let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data: ")) {
                let value: Value = serde_json::from_str(data).expect("event JSON");
                if value["type"] == kind {
                    return value;
                }
            }
            continue;
        }
        let bytes = stream.chunk().await.expect("chunk").expect("stream open");
        buffer.push_str(&String::from_utf8_lossy(&bytes));
    }
}

/// Decision → execution start, `rounds` times, in ms.
async fn decision_to_execution(
    server: &Server,
    demo: &DemoServer,
    warm_up: usize,
    rounds: usize,
) -> (Vec<f64>, Vec<f64>) {
    let user = User::new(server, demo).await;
    let chat = user.chat().await;
    let mut stream = user
        .client
        .get(format!("{}/api/chats/{chat}/stream", user.base))
        .send()
        .await
        .expect("stream");
    let mut buffer = String::new();
    let (mut warming, mut samples) = (Vec::new(), Vec::new());
    for round in 0..warm_up + rounds {
        let before = demo.calls().total;
        user.send(&chat).await;
        let card = until(&mut stream, &mut buffer, "mcp_confirmation_required").await;
        let decided_at = OffsetDateTime::now_utc();
        user.post(
            &format!(
                "/api/mcp-pending-calls/{}",
                card["id"].as_str().expect("id")
            ),
            json!({"decision": "approve", "arguments_digest": card["arguments_digest"]}),
        )
        .await;
        until(&mut stream, &mut buffer, "turn_finished").await;
        let log = demo.calls();
        assert_eq!(log.total, before + 1, "one execution per approval");
        let ran = OffsetDateTime::parse(&log.calls[log.total - 1].at, &Rfc3339).expect("stamp");
        let ms = (ran - decided_at).as_seconds_f64() * 1000.0;
        if round < warm_up {
            warming.push(ms);
        } else {
            samples.push(ms);
        }
    }
    (warming, samples)
}

/// The warm-up rounds' line: what a fresh server's first decisions took.
fn warm_up_line(warming: &mut [f64]) -> String {
    if warming.is_empty() {
        return String::new();
    }
    format!(
        "  (the {} warm-up rounds before them, not counted: p50 {:.2}, slowest {:.2})",
        warming.len(),
        percentile(warming, 0.5),
        percentile(warming, 1.0)
    )
}

fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[i]
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// (transactions, reads of the ledger, updates of turns) so far.
async fn db_counters(db: &mut PgConnection, database: &str) -> (i64, i64, i64) {
    // Statistics are flushed by backends at most every second or so.
    let xacts: i64 = sqlx::query_scalar(
        "select (xact_commit + xact_rollback)::int8 from pg_stat_database where datname = $1",
    )
    .bind(database)
    .fetch_one(&mut *db)
    .await
    .expect("xacts");
    let ledger: i64 = sqlx::query_scalar(
        "select (coalesce(seq_scan, 0) + coalesce(idx_scan, 0))::int8
           from pg_stat_user_tables where relname = 'mcp_pending_calls'",
    )
    .fetch_one(&mut *db)
    .await
    .expect("ledger scans");
    let turns: i64 = sqlx::query_scalar(
        "select n_tup_upd::int8 from pg_stat_user_tables where relname = 'turns'",
    )
    .fetch_one(&mut *db)
    .await
    .expect("turn updates");
    (xacts, ledger, turns)
}

/// Database transactions, turn heartbeat rows and ledger reads per minute
/// while the calls wait, over a 60 s window.
async fn database_load(server: &Server) {
    let mut db = PgConnection::connect(&server.db.superuser_url)
        .await
        .expect("stats connection");
    let window = Duration::from_secs(60);
    let (x0, l0, t0) = db_counters(&mut db, &server.db.name).await;
    tokio::time::sleep(window).await;
    let (x1, l1, t1) = db_counters(&mut db, &server.db.name).await;
    let per_min = |a: i64, b: i64| (b - a) as f64 * 60.0 / window.as_secs_f64();
    println!(
        "  database transactions       {:8.0} per minute (everything on the database)",
        per_min(x0, x1)
    );
    println!(
        "    turn heartbeat rows       {:8.0} per minute (every waiting turn every 5 s, one UPDATE per instance)",
        per_min(t0, t1)
    );
    // An `id = any($1)` read of N waiting ids counts N index lookups.
    let lookups = per_min(l0, l1);
    println!(
        "    ledger index lookups      {lookups:8.0} per minute = {:.0} reads of all {WAITING} waiting calls",
        lookups / WAITING as f64
    );
}

/// Decision → execution start with one call waiting, NOTIFY and poll-only
/// in the same run; reports NOTIFY's p99 and returns it.
async fn one_waiting(demo: &DemoServer) -> f64 {
    let (mut warming, mut notify) = {
        let server = start_server(demo, "notify", &[]).await;
        decision_to_execution(&server, demo, WARM_UP, ROUNDS).await
    };
    let mut poll = {
        let server = start_server(
            demo,
            "poll",
            &[
                ("COUNTERSIGN_APPROVAL_NOTIFY", "false"),
                ("COUNTERSIGN_APPROVAL_POLL_MS", "1500"),
            ],
        )
        .await;
        decision_to_execution(&server, demo, 0, POLL_ROUNDS).await.1
    };
    let (n50, n99, nmax) = (
        percentile(&mut notify, 0.5),
        percentile(&mut notify, 0.99),
        percentile(&mut notify, 1.0),
    );
    let (p50, p99) = (percentile(&mut poll, 0.5), percentile(&mut poll, 0.99));
    println!("\napproval decision → execution start at the MCP server (ms):");
    println!(
        "  NOTIFY (default), {ROUNDS} rounds after {WARM_UP}    p50 {n50:8.2}   p99 {n99:8.2}   slowest {nmax:8.2}"
    );
    println!("{}", warm_up_line(&mut warming));
    println!("  poll only, every 1.5 s, {POLL_ROUNDS} rounds  p50 {p50:8.2}   p99 {p99:8.2}");
    println!("  poll / NOTIFY at p50        {:.0}x", p50 / n50.max(0.001));
    report(&Figure {
        name: "decision → execution start, 1 call waiting, p99",
        unit: "ms",
        value: n99,
        anchor: Some(("poll-only design (1.5 s), p99", p99)),
        budget: Some(10.0),
    });

    n99
}

#[tokio::main]
async fn main() {
    let demo = DemoServer::start("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("demo server");

    // 1. Decision → execution start (not with `bench memory`).
    let n99 = if only_memory() {
        None
    } else {
        Some(one_waiting(&demo).await)
    };
    if only_latency() {
        return;
    }

    // 2. 1,000 calls waiting at once.
    let server = start_server(
        &demo,
        "waiting",
        &[
            ("COUNTERSIGN_APPROVAL_TTL_SECS", "900"),
            ("COUNTERSIGN_APPROVAL_WAIT_SECS", "600"),
        ],
    )
    .await;
    let user = User::new(&server, &demo).await;
    let pid = server.child.id();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_before = rss_kib(pid);
    let mut chats = Vec::with_capacity(WAITING);
    for _ in 0..WAITING {
        chats.push(user.chat().await);
    }
    let started = Instant::now();
    // The first half, then the second: what the second adds is what a
    // waiting call costs once the server is warm (its pool at full size,
    // each connection's statements prepared, the allocator's arenas made),
    // which the first half pays for once.
    let (first_half, second_half) = chats.split_at(WAITING / 2);
    for chunk in first_half.chunks(50) {
        futures_util::future::join_all(chunk.iter().map(|chat| user.send(chat))).await;
    }
    user.until_waiting(WAITING / 2, started).await;
    // Past the trim that follows a burst of turn starts (`memory::Trimmer`:
    // a second without one), as the figure at 1,000 is.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss_half = rss_kib(pid);
    for chunk in second_half.chunks(50) {
        futures_util::future::join_all(chunk.iter().map(|chat| user.send(chat))).await;
    }
    user.until_waiting(WAITING, started).await;
    println!(
        "\n{WAITING} calls waiting: all cards up {:.1} s after the first message",
        started.elapsed().as_secs_f64()
    );
    // Postgres flushes a backend's statistics up to 10 s after its last
    // transaction: let the set-up's counts land before the window opens,
    // and make the window long enough that the tail's lag is small.
    tokio::time::sleep(Duration::from_secs(15)).await;
    let rss_with = rss_kib(pid);
    if !only_memory() {
        database_load(&server).await;
    }
    let whole = rss_with.saturating_sub(rss_before) as f64 / WAITING as f64;
    let per_approval = rss_with.saturating_sub(rss_half) as f64 / (WAITING - WAITING / 2) as f64;
    println!(
        "  server RSS                  {rss_before} KiB before, {rss_half} KiB with {} waiting, {rss_with} KiB with {WAITING}: \
         {per_approval:.1} KiB per pending approval from {} to {WAITING} ({whole:.1} from none, the server's warm-up included)",
        WAITING / 2,
        WAITING / 2,
    );
    report(&Figure {
        name: "server RSS per pending approval, 500 → 1,000 waiting",
        unit: "KiB",
        value: per_approval,
        anchor: None,
        budget: Some(16.0),
    });
    report(&Figure {
        name: "server RSS per pending approval, 0 → 1,000 waiting (a fresh server's warm-up included)",
        unit: "KiB",
        value: whole,
        anchor: None,
        budget: None,
    });

    // 3. Decision → execution start while the 1,000 wait.
    let (mut warming, mut loaded) = decision_to_execution(&server, &demo, WARM_UP, ROUNDS).await;
    let (l50, l99, lmax) = (
        percentile(&mut loaded, 0.5),
        percentile(&mut loaded, 0.99),
        percentile(&mut loaded, 1.0),
    );
    println!(
        "\napproval decision → execution start with {WAITING} other calls waiting, {ROUNDS} rounds after {WARM_UP} (ms):"
    );
    println!("  NOTIFY                      p50 {l50:8.2}   p99 {l99:8.2}   slowest {lmax:8.2}");
    println!("{}", warm_up_line(&mut warming));
    report(&Figure {
        name: "decision → execution start, 1,000 calls waiting, p99",
        unit: "ms",
        value: l99,
        anchor: n99.map(|n99| ("the same with 1 call waiting, p99", n99)),
        budget: Some(50.0),
    });
}
