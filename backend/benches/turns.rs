//! `cargo xtask bench`: figures, not pass/fail.
//!
//! 1. Server-added time to first token: a local fake OpenAI-compatible
//!    provider streams its first token at once. We time (a) a client asking
//!    the fake directly for its first content chunk, and (b) a chat message
//!    sent to a real Countersign server (a separate release process over a
//!    real Postgres) until the first `text_delta` arrives on the chat's SSE
//!    stream. The difference is what Countersign adds: the turn task, the
//!    provider request, the event append + NOTIFY, and the stream read.
//! 2. Resident memory per idle stream: the server's RSS before and after
//!    10,000 open SSE streams, divided by 10,000; the anchor is a minimal
//!    Express 4 SSE server (one `text/event-stream` response per client, a
//!    keep-alive comment every 15 s) given the same 10,000 clients in the
//!    same run (`COUNTERSIGN_BENCH_EXPRESS`: its script, which the xtask
//!    writes beside an `npm install express@4`); and the floor under it, a
//!    bare axum SSE endpoint on the same stack (this binary, restarted as a
//!    server), which says how much of the figure is ours.
//!
//! Needs `COUNTERSIGN_TEST_SUPERUSER_URL` (a scratch cluster) and
//! `COUNTERSIGN_BENCH_SERVER` (the release server binary); the xtask sets
//! both.

#[path = "support/report.rs"]
mod report;
#[path = "../tests/support/db.rs"]
mod test_db;

use report::{Figure, only_latency, only_memory, report};

use axum::{
    Router,
    body::Body,
    response::{IntoResponse as _, Response},
    routing::{get, post},
};
use serde_json::{Value, json};
use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};
use test_db::TestDb;

/// Timed rounds of the time to first token: 40, or
/// `COUNTERSIGN_BENCH_ROUNDS` (more rounds for a steadier median when
/// two builds are compared side by side; the chat's history then grows
/// longer too).
fn rounds() -> usize {
    std::env::var("COUNTERSIGN_BENCH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(40)
}
/// Turns sent before the timed ones. A fresh server's pool opens its
/// connections as it needs them and hands them out in turn, and each
/// connection plans a statement on its first use (`db::connect`): until
/// every connection has run every statement of a turn once, a round pays
/// for that too. The timed rounds measure the server as it runs after
/// its first minute, not its start.
const WARM_UP: usize = 40;
/// How long a person pauses before their next message, for the time to
/// first token "after a pause": long enough for the machine to go idle
/// (on a VM, its vCPUs halt) and for the pool's connections to be idle
/// longer than `db::PING_IF_IDLE_FOR` (1 s), so that each is pinged
/// before it is handed out, as between a real user's messages.
const PAUSE: Duration = Duration::from_millis(1500);
/// Timed rounds after a pause, each way (through Countersign, and the fake
/// directly): the server is warm by then, and each round costs `PAUSE`.
const PAUSED_ROUNDS: usize = 30;
const STREAMS: usize = 10_000;

fn chunk(content: &str) -> String {
    let data = json!({
        "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "fake",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]
    });
    format!("data: {data}\n\n")
}

/// When the fake last got a request: the time-to-first-token breakdown's
/// middle mark (the server's set-up done, its provider request out).
static ASKED_AT: std::sync::Mutex<Option<Instant>> = std::sync::Mutex::new(None);

/// The fake provider: the first token at once, the rest 2 ms apart.
async fn fake_completions() -> Response {
    *ASKED_AT.lock().expect("lock") = Some(Instant::now());
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<String, std::convert::Infallible>>(16);
    tokio::spawn(async move {
        let _ = tx.send(Ok(chunk("Hello"))).await;
        for word in [" from", " the", " fake", " provider."] {
            tokio::time::sleep(Duration::from_millis(2)).await;
            let _ = tx.send(Ok(chunk(word))).await;
        }
        let done = json!({
            "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "fake",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]
        });
        let _ = tx
            .send(Ok(format!("data: {done}\n\ndata: [DONE]\n\n")))
            .await;
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .expect("response")
}

async fn start_fake() -> String {
    let app = Router::new()
        .route("/v1/chat/completions", post(fake_completions))
        .route(
            "/v1/models",
            get(|| async {
                axum::Json(json!({"object": "list", "data": [{"id": "fake", "object": "model"}]}))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    // Like a real provider's edge, the fake writes small SSE chunks without
    // Nagle's delay.
    use axum::serve::ListenerExt as _;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/v1")
}

fn median_and_p90(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (
        ms(samples[samples.len() / 2]),
        ms(samples[samples.len() * 9 / 10]),
    )
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

struct Server(Child);
impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

/// The floor under Countersign's streams: a bare axum SSE endpoint (same
/// axum, hyper and tokio, `Sse` with a keep-alive, nothing else, served by
/// the server's own accept loop, `countersign::http::conn`), run as a
/// separate process — this very binary, started with
/// `COUNTERSIGN_BENCH_BARE_SSE=1` — so its RSS is its own.
async fn bare_sse_server() {
    let app = Router::new().route(
        "/stream",
        get(|| async {
            let mut response = axum::response::sse::Sse::new(futures_util::stream::pending::<
                Result<axum::response::sse::Event, std::convert::Infallible>,
            >())
            .keep_alive(
                axum::response::sse::KeepAlive::new()
                    .interval(Duration::from_secs(15))
                    .text("keep-alive"),
            )
            .into_response();
            // Detached as the server's stream is.
            response
                .extensions_mut()
                .insert(countersign::http::conn::Detach);
            response
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    // The line `spawn_listening` waits for.
    println!("listening {port}");
    // Served as the server serves (`http::conn`): what is left above this
    // floor is the app's own.
    countersign::http::conn::serve(listener, app, std::future::pending())
        .await
        .expect("serve");
}

/// Starts `command` — a server that binds a free loopback port itself and
/// prints `listening PORT` once it accepts connections — and waits for that
/// line. Returns the process and its base URL.
async fn spawn_listening(mut command: Command, what: &'static str) -> (Server, String) {
    use std::io::BufRead as _;
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("start {what}: {err}"));
    let stdout = child.stdout.take().expect("piped stdout");
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .map(|_| line)
    })
    .await
    .expect("reader")
    .unwrap_or_else(|err| panic!("read {what}'s first line: {err}"));
    let port: u16 = line
        .trim()
        .strip_prefix("listening ")
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("{what} said {line:?}, not `listening PORT`"));
    (Server(child), format!("http://127.0.0.1:{port}"))
}

/// A Countersign server under test (a release process), on a database of
/// its own, and a user of it with one chat.
struct Target {
    server: Server,
    /// Dropped after the server (fields drop in order).
    _db: TestDb,
    base: String,
    client: reqwest::Client,
    csrf: String,
    chat_id: String,
}

/// Starts `server_bin` with the fake provider at `fake`; signs a user up
/// and makes a chat.
async fn start_target(server_bin: &str, fake: &str) -> Target {
    let db = TestDb::create("bench").await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr")
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let child = Command::new(server_bin)
        .arg("serve")
        .env("DATABASE_URL", &db.app_url)
        .env("COUNTERSIGN_MIGRATION_DATABASE_URL", &db.owner_url)
        .env("COUNTERSIGN_BIND", format!("127.0.0.1:{port}"))
        .env("OPENAI_BASE_URL", fake)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .expect("start the server");
    let server = Server(child);
    let client = reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .expect("client");
    let start = Instant::now();
    while client
        .get(format!("{base}/readyz"))
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

    // A user and a chat (the streams below are this chat's).
    let body: Value = client
        .post(format!("{base}/api/auth/signup"))
        .json(&json!({"email": "bench@example.org", "password": "tidal quartz lantern orchard"}))
        .send()
        .await
        .expect("signup")
        .json()
        .await
        .expect("json");
    let csrf = body["csrf_token"].as_str().expect("csrf").to_owned();
    let chat: Value = client
        .post(format!("{base}/api/chats"))
        .header("x-csrf-token", &csrf)
        .json(&json!({"model": "openai/fake"}))
        .send()
        .await
        .expect("chat")
        .json()
        .await
        .expect("json");
    let chat_id = chat["id"].as_str().expect("id").to_owned();
    Target {
        server,
        _db: db,
        base,
        client,
        csrf,
        chat_id,
    }
}

#[tokio::main]
async fn main() {
    if std::env::var_os("COUNTERSIGN_BENCH_BARE_SSE").is_some() {
        bare_sse_server().await;
        return;
    }
    let server_bin = std::env::var("COUNTERSIGN_BENCH_SERVER").expect("COUNTERSIGN_BENCH_SERVER");
    let fake = start_fake().await;
    let target = start_target(&server_bin, &fake).await;
    if let Ok(other) = std::env::var("COUNTERSIGN_BENCH_COMPARE") {
        let other = start_target(&other, &fake).await;
        compare(&target, &other).await;
        return;
    }
    let Target {
        base,
        client,
        chat_id,
        ..
    } = &target;
    if !only_memory() {
        time_to_first_token(&fake, &target).await;
    }
    if only_latency() {
        return;
    }

    // Idle streams: Countersign, then Express 4 with the same client.
    let ours = idle_stream_kib(target.server.0.id(), || {
        client
            .get(format!("{base}/api/chats/{chat_id}/stream?after=1000000"))
            .send()
    })
    .await;
    drop(target.server);
    println!("  Countersign                 {ours:.1} KiB per idle stream");
    let express = match std::env::var_os("COUNTERSIGN_BENCH_EXPRESS") {
        Some(script) => {
            let mut node = Command::new("node");
            node.arg(script);
            let (express, base) = spawn_listening(node, "Express").await;
            let plain = reqwest::Client::new();
            let url = format!("{base}/stream");
            let kib = idle_stream_kib(express.0.id(), || plain.get(&url).send()).await;
            println!("  Express 4 (anchor)          {kib:.1} KiB per idle stream");
            Some(kib)
        }
        None => {
            println!("  (no COUNTERSIGN_BENCH_EXPRESS: no Express anchor)");
            None
        }
    };
    // What axum, hyper and tokio cost per stream by themselves.
    let floor = {
        let mut this = Command::new(std::env::current_exe().expect("this binary"));
        this.env("COUNTERSIGN_BENCH_BARE_SSE", "1");
        let (bare, base) = spawn_listening(this, "the bare SSE server").await;
        let plain = reqwest::Client::new();
        let url = format!("{base}/stream");
        let kib = idle_stream_kib(bare.0.id(), || plain.get(&url).send()).await;
        println!("  bare axum SSE (the floor)   {kib:.1} KiB per idle stream");
        kib
    };
    report(&Figure {
        name: "server RSS per idle SSE stream, bare axum + hyper (the floor)",
        unit: "KiB",
        value: floor,
        anchor: express.map(|kib| ("Express 4, same client, same run", kib)),
        budget: None,
    });
    report(&Figure {
        name: "server RSS per idle SSE stream, 10,000 open",
        unit: "KiB",
        value: ours,
        anchor: express.map(|kib| ("Express 4, same client, same run", kib)),
        budget: Some(express.map_or(8.0, |kib| (kib / 2.0).min(8.0))),
    });
}

/// A chat's stream, followed across rounds.
struct Follow {
    stream: reqwest::Response,
    buffer: String,
}

async fn follow(target: &Target) -> Follow {
    let Target {
        base,
        client,
        chat_id,
        ..
    } = target;
    let stream = client
        .get(format!("{base}/api/chats/{chat_id}/stream"))
        .send()
        .await
        .expect("stream");
    Follow {
        stream,
        buffer: String::new(),
    }
}

/// One turn's marks, from the client's POST: the POST answered, the
/// `turn_started` event on the stream, the provider asked, the first
/// token on the stream.
struct Marks {
    post: Duration,
    started: Duration,
    asked: Duration,
    first: Duration,
}

/// Sends message `round` to `target`'s chat, `pause` after the last turn
/// ended (not timed), and follows its turn on the stream to its end.
async fn one_turn(target: &Target, follow: &mut Follow, round: usize, pause: Duration) -> Marks {
    let Target {
        base,
        client,
        csrf,
        chat_id,
        ..
    } = target;
    if !pause.is_zero() {
        tokio::time::sleep(pause).await;
    }
    let t = Instant::now();
    let res = client
        .post(format!("{base}/api/chats/{chat_id}/messages"))
        .header("x-csrf-token", csrf)
        .json(&json!({"content": format!("round {round}")}))
        .send()
        .await
        .expect("send");
    assert_eq!(res.status(), 202, "send");
    let post = t.elapsed();
    let mut first = None;
    let mut turn_started = None;
    loop {
        if let Some(i) = follow.buffer.find("\n\n") {
            let frame: String = follow.buffer.drain(..i + 2).collect();
            if frame.contains("\"type\":\"turn_started\"") && turn_started.is_none() {
                turn_started = Some(t.elapsed());
            }
            if frame.contains("\"type\":\"text_delta\"") && first.is_none() {
                first = Some(t.elapsed());
            }
            if frame.contains("\"type\":\"turn_finished\"") {
                assert!(
                    frame.contains("\"status\":\"done\""),
                    "turn failed: {frame}"
                );
                break;
            }
            continue;
        }
        let bytes = follow
            .stream
            .chunk()
            .await
            .expect("chunk")
            .expect("stream open");
        follow.buffer.push_str(&String::from_utf8_lossy(&bytes));
    }
    let asked_at = ASKED_AT
        .lock()
        .expect("lock")
        .take()
        .expect("the fake was asked");
    Marks {
        post,
        started: turn_started.expect("turn_started"),
        asked: asked_at.duration_since(t),
        first: first.expect("a text delta"),
    }
}

/// `COUNTERSIGN_BENCH_COMPARE=<another server binary>`: the time to first
/// token of two builds, each on a database of its own, their rounds
/// interleaved (which goes first alternates), so that the host's noise
/// falls on both alike. Prints each one's medians and the median of the
/// paired differences (B − A). For comparing a change; it reports no
/// figure. `COUNTERSIGN_BENCH_PAUSE_MS`: a pause before each message (none
/// by default), to compare builds on a machine gone idle.
async fn compare(a: &Target, b: &Target) {
    let rounds = rounds();
    let pause = Duration::from_millis(
        std::env::var("COUNTERSIGN_BENCH_PAUSE_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
            .unwrap_or(0),
    );
    let (mut follow_a, mut follow_b) = (follow(a).await, follow(b).await);
    let (mut marks_a, mut marks_b) = (Vec::new(), Vec::new());
    for round in 0..WARM_UP + rounds {
        let (ma, mb) = if round % 2 == 0 {
            let ma = one_turn(a, &mut follow_a, round, pause).await;
            (ma, one_turn(b, &mut follow_b, round, pause).await)
        } else {
            let mb = one_turn(b, &mut follow_b, round, pause).await;
            (one_turn(a, &mut follow_a, round, pause).await, mb)
        };
        if round >= WARM_UP {
            marks_a.push(ma);
            marks_b.push(mb);
        }
    }
    let ms = |d: &Duration| d.as_secs_f64() * 1000.0;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!("\nA/B, {rounds} interleaved rounds each after {WARM_UP} to warm up, medians (ms):");
    println!("  {:44} {:>7} {:>7} {:>7}", "", "A", "B", "B − A");
    for (what, mark) in [
        (
            "POST answered (202)",
            (|m: &Marks| m.post) as fn(&Marks) -> Duration,
        ),
        ("turn_started on the stream", |m: &Marks| m.started),
        ("provider asked (set-up done)", |m: &Marks| m.asked),
        ("first token on the stream", |m: &Marks| m.first),
    ] {
        let a: Vec<f64> = marks_a.iter().map(|m| ms(&mark(m))).collect();
        let b: Vec<f64> = marks_b.iter().map(|m| ms(&mark(m))).collect();
        let diff: Vec<f64> = a.iter().zip(&b).map(|(a, b)| b - a).collect();
        println!(
            "  {what:44} {:7.2} {:7.2} {:+7.2}",
            median(a),
            median(b),
            median(diff)
        );
    }
}

/// The fake provider's first content chunk, asked directly `rounds`
/// times, each `pause` after the last answer (not timed).
async fn direct(
    client: &reqwest::Client,
    fake: &str,
    rounds: usize,
    pause: Duration,
) -> Vec<Duration> {
    let mut times = Vec::new();
    for _ in 0..rounds {
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
        let t = Instant::now();
        let mut res = client
            .post(format!("{fake}/chat/completions"))
            .json(&json!({"model": "fake", "stream": true, "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .expect("fake");
        let mut seen = String::new();
        while let Some(bytes) = res.chunk().await.expect("chunk") {
            seen.push_str(&String::from_utf8_lossy(&bytes));
            if seen.contains("\"content\"") {
                break;
            }
        }
        times.push(t.elapsed());
    }
    times
}

/// Time to first token, (a) from the fake provider directly and (b)
/// through Countersign (a chat message until the first `text_delta` on the
/// chat's stream), [`rounds`] each, every message sent as the last turn
/// ends; then both again, [`PAUSED_ROUNDS`] each, every message sent a
/// [`PAUSE`] after the last, as a person would. Reports the p50s and their
/// difference.
async fn time_to_first_token(fake: &str, target: &Target) {
    let client = &target.client;
    let rounds = rounds();
    // (a) Directly.
    let direct_now = direct(client, fake, rounds, Duration::ZERO).await;

    // (b) Through Countersign.
    let mut follow = follow(target).await;
    let mut through = Vec::new();
    // Where the time goes: the POST answered; the provider asked; the
    // turn_started event on the stream; the first token on the stream.
    let (mut posted, mut asked, mut started, mut token) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut warming = Vec::new();
    for round in 0..WARM_UP + rounds {
        let marks = one_turn(target, &mut follow, round, Duration::ZERO).await;
        if round < WARM_UP {
            warming.push(marks.first);
            continue;
        }
        through.push(marks.first);
        posted.push(marks.post);
        asked.push(marks.asked);
        started.push(marks.started);
        token.push(marks.first.saturating_sub(marks.asked));
    }
    // After a pause: the machine gone idle, the pool's connections pinged
    // before use.
    let mut paused = Vec::new();
    for round in 0..PAUSED_ROUNDS {
        paused.push(
            one_turn(target, &mut follow, WARM_UP + rounds + round, PAUSE)
                .await
                .first,
        );
    }
    let direct_paused = direct(client, fake, PAUSED_ROUNDS, PAUSE).await;
    drop(follow);
    println!(
        "\nwhere the time to first token goes, {rounds} rounds after {WARM_UP} to warm up, median (ms):"
    );
    for (what, samples) in [
        ("POST answered (202)", posted),
        ("turn_started on the stream", started),
        ("provider asked (set-up done)", asked),
        ("provider asked → first token on the stream", token),
    ] {
        println!("  {what:44} {:7.2}", median_and_p90(samples).0);
    }

    let (d_med, d_p90) = median_and_p90(direct_now);
    let (t_med, t_p90) = median_and_p90(through);
    println!("\ntime to first token, {rounds} rounds (ms):");
    println!("  fake provider directly      median {d_med:7.2}   p90 {d_p90:7.2}");
    println!("  through Countersign         median {t_med:7.2}   p90 {t_p90:7.2}");
    let (w_med, w_p90) = median_and_p90(warming);
    println!(
        "  (the {WARM_UP} warm-up rounds before them, not counted: median {w_med:.2}, p90 {w_p90:.2})"
    );
    report(&Figure {
        name: "time to first token, through Countersign, p50",
        unit: "ms",
        value: t_med,
        anchor: Some(("the fake provider asked directly, p50", d_med)),
        budget: None,
    });
    report(&Figure {
        name: "server-added time to first token, p50",
        unit: "ms",
        value: t_med - d_med,
        anchor: None,
        budget: Some(2.0),
    });

    let (dp_med, dp_p90) = median_and_p90(direct_paused);
    let (tp_med, tp_p90) = median_and_p90(paused);
    let pause_s = PAUSE.as_secs_f64();
    println!(
        "\ntime to first token, each message {pause_s} s after the last, {PAUSED_ROUNDS} rounds (ms):"
    );
    println!("  fake provider directly      median {dp_med:7.2}   p90 {dp_p90:7.2}");
    println!("  through Countersign         median {tp_med:7.2}   p90 {tp_p90:7.2}");
    report(&Figure {
        name: &format!("time to first token after a {pause_s} s pause, through Countersign, p50"),
        unit: "ms",
        value: tp_med,
        anchor: Some((
            "the fake provider asked directly after the same pause, p50",
            dp_med,
        )),
        budget: None,
    });
    report(&Figure {
        name: &format!("server-added time to first token after a {pause_s} s pause, p50"),
        unit: "ms",
        value: tp_med - dp_med,
        anchor: None,
        budget: None,
    });
}

/// RSS growth of process `pid` per stream while `STREAMS` streams that
/// `open` starts are held open and idle, in KiB.
async fn idle_stream_kib<F, Fut>(pid: u32, open: F) -> f64
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = reqwest::Result<reqwest::Response>>,
{
    // RSS has no event to wait for: give the previous phase's frees a
    // moment, then read it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_kib(pid);
    let mut streams = Vec::with_capacity(STREAMS);
    // 100 at a time: a browser-like trickle, not a connection storm.
    while streams.len() < STREAMS {
        let batch = futures_util::future::join_all((0..100).map(|_| open())).await;
        for res in batch {
            let res = res.expect("stream");
            assert!(res.status().is_success(), "stream status {}", res.status());
            streams.push(res);
        }
    }
    // Let the opening work (session checks, first reads) settle: the
    // server says nothing when a stream goes idle, so this is a pause.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rss_kib(pid);
    println!(
        "\nidle SSE streams: RSS {before} KiB with none, {after} KiB with {STREAMS} open (pid {pid})"
    );
    drop(streams);
    after.saturating_sub(before) as f64 / STREAMS as f64
}
