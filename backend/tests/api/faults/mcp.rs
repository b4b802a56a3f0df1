//! MCP server faults (issue 15 item 1): an approved call whose server
//! hangs, lies or dies. Each scenario runs the real in-process server
//! with the offline model proposing the call and the user approving its
//! card, then reads what everyone was told: the ledger row, the card's
//! `mcp_tool_call` event, the Activity entry, the turn's end, a second
//! decision on the spent approval, the `mcp_errors` metric, and how often
//! the call arrived at the server.
//!
//! The servers: the demo server started with fault modes
//! (`countersign_demo_mcp::faults`: one tool per fault, each call counted
//! as it arrives), in-process for the wire faults and as the real
//! `countersign-demo-mcp --fault-modes` process for the kill; and a
//! third-party server, the official Python MCP SDK running
//! `mcp_blocking_server.py` (beside this file), whose tool blocks until
//! the process is `SIGKILL`ed. Both kills happen while the call is in
//! flight: after the server printed that the call arrived.
//!
//! Every connector carries a bearer token, and the demo's faults echo the
//! request's headers into their bodies and error messages: a reason that
//! shows the token (or a URL, or a Rust debug string) fails the scenario.

use crate::faults_report::check;
use crate::helpers::{
    SseReader, TestApp, add_connector, decide, event_of, ledger, spawn_app_with, text_of,
};
use countersign::Config;
use countersign::config::Secret;
use countersign_api::PendingCallStatus;
use countersign_demo_mcp::faults::{Fault, HUGE_BODY_BYTES, OVERSIZED_BODY_BYTES};
use countersign_demo_mcp::{DemoServer, DemoState};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

/// The deployment key connector credentials are sealed with.
const KEY_HEX: &str = "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

/// The connectors' bearer token: it must never reach a reason.
const TOKEN: &str = "fault-secret-7f3a9c1e5b";

/// How long a child process may take to say something (importing the
/// Python SDK takes seconds on a busy machine).
const CHILD_WAIT: Duration = Duration::from_secs(60);

/// A signed-in user with one connector (every tool kept) and a chat.
struct Rig {
    app: TestApp,
    chat: String,
    /// The connector's slug: its tools are offered as `SLUG__TOOL`.
    slug: String,
}

/// An app allowed to reach `allow`, a user, a connector named `name` at
/// `url` with the bearer [`TOKEN`], its tools kept, and an offline chat.
async fn rig(
    name: &'static str,
    url: &str,
    allow: &str,
    configure: impl FnOnce(&mut Config),
) -> Rig {
    let allow = allow.parse().expect("allow list");
    let app = spawn_app_with(|c| {
        c.secret_key = Some(Secret::new(KEY_HEX));
        c.allow_private_connectors = allow;
        configure(c);
    })
    .await;
    app.signed_up_user().await;
    add_connector(
        &app,
        json!({"name": name, "url": url, "auth": {"type": "bearer", "token": TOKEN}}),
    )
    .await;
    let chat = app.create_chat("offline/demo").await;
    Rig {
        app,
        chat,
        slug: name.to_ascii_lowercase(),
    }
}

/// Asks the model to call `tool`; returns the card.
async fn card_for(rig: &Rig, stream: &mut SseReader, tool: &str, arguments: &Value) -> Value {
    rig.app
        .send(
            &rig.chat,
            &format!("use {}__{tool} with {arguments}", rig.slug),
        )
        .await;
    let (_, card) = stream
        .until("mcp_confirmation_required")
        .await
        .pop()
        .expect("a card");
    assert_eq!(card["tool_name"], tool);
    card
}

/// Approves `card` once, asserting 200.
async fn approve(rig: &Rig, card: &Value) {
    let res = decide(&rig.app, card, "approve").await;
    assert_eq!(res.status(), StatusCode::OK, "approve");
}

/// What one approved call ended as, everywhere the user and the operator
/// can look.
#[derive(Debug)]
struct Seen {
    /// The ledger row.
    status: PendingCallStatus,
    ledger_error: Option<String>,
    /// The card's outcome event.
    event: Value,
    /// The Activity entry of the outcome (`kind: outcome`).
    activity: Value,
    /// `turn_finished`'s status.
    finished: Value,
    /// What the model said after the call.
    text: String,
    /// A second approval of the same card.
    redecide: StatusCode,
    /// From the approval to the outcome event.
    took: Duration,
    /// `countersign_mcp_errors_total` by kind, the non-zero ones.
    mcp_errors: Vec<(String, u64)>,
}

impl Seen {
    /// The reason the card shows.
    fn reason(&self) -> &str {
        self.event["error"].as_str().unwrap_or_default()
    }

    /// What keeps this call from being "failed, and said so alike in the
    /// ledger, on the card and in Activity, in plain words; the turn went
    /// on and finished with the model told; the approval spent": empty
    /// when nothing does.
    fn not_failed_and_told(&self) -> Vec<&'static str> {
        let reason = self.reason();
        [
            (
                self.status == PendingCallStatus::Failed,
                "ledger not failed",
            ),
            (
                self.ledger_error.as_deref() == Some(reason),
                "ledger error differs from the card's",
            ),
            (self.event["status"] == "error", "card not error"),
            (self.activity["outcome"] == "error", "Activity not error"),
            (
                self.activity["error"] == reason,
                "Activity error differs from the card's",
            ),
            (plain_words(reason), "reason not plain words"),
            (self.finished == "done", "turn not done"),
            (
                self.text.contains(first_words(reason)),
                "model not told the reason",
            ),
            (self.redecide == StatusCode::NOT_FOUND, "re-decide not 404"),
        ]
        .into_iter()
        .filter_map(|(holds, why)| (!holds).then_some(why))
        .collect()
    }

    /// [`Self::not_failed_and_told`] is empty.
    fn failed_and_told(&self) -> bool {
        self.not_failed_and_told().is_empty()
    }

    /// The figures of a row.
    fn figures(&self, arrivals: usize) -> String {
        format!(
            "{}: {:?}; card {}, Activity {}; turn {}, model told: {}; re-decide {}; \
             arrivals {arrivals}; {} ms; mcp_errors {:?}{}",
            self.status,
            self.reason(),
            self.event["status"],
            self.activity["outcome"],
            self.finished,
            self.text.contains(first_words(self.reason())),
            self.redecide.as_u16(),
            self.took.as_millis(),
            self.mcp_errors,
            match self.not_failed_and_told() {
                wrong if wrong.is_empty() => String::new(),
                wrong => format!("; NOT: {}", wrong.join(", ")),
            }
        )
    }
}

/// A reason fit to show: words, not a Rust debug string, a URL or a
/// credential. (The server's own words may name the header it was sent,
/// `authorization: Bearer [redacted]`, and the host it was reached at: the
/// user's own connector settings, minus the secret.)
fn plain_words(reason: &str) -> bool {
    !reason.trim().is_empty()
        && reason.chars().count() <= 600
        && ![
            TOKEN, "http://", "::", "Error {", "Some(", "reqwest", "hyper",
        ]
        .iter()
        .any(|bad| reason.contains(bad))
}

/// The reason's first words, which the model's summary repeats.
fn first_words(reason: &str) -> &str {
    let end = reason
        .char_indices()
        .nth(40)
        .map_or(reason.len(), |(at, _)| at);
    &reason[..end]
}

/// Approves `card`, follows the turn to its end and reads every record of
/// the call.
async fn approve_and_follow(rig: &Rig, stream: &mut SseReader, card: &Value) -> Seen {
    let approved = Instant::now();
    approve(rig, card).await;
    observe(rig, stream, card, approved).await
}

/// Follows the turn of `card` (already approved at `approved`) to its end
/// and reads every record of the call.
async fn observe(rig: &Rig, stream: &mut SseReader, card: &Value, approved: Instant) -> Seen {
    let mut events = stream.until("mcp_tool_call").await;
    let took = approved.elapsed();
    events.extend(stream.until("turn_finished").await);
    let id = card["id"].as_str().expect("id");
    let (status, ledger_error) = ledger(&rig.app, id).await;
    let activity = rig
        .app
        .get_array("/api/activity")
        .await
        .into_iter()
        .find(|e| e["call_ref"] == id && e["kind"] == "outcome")
        .unwrap_or(Value::Null);
    Seen {
        status,
        ledger_error,
        event: event_of(&events, "mcp_tool_call"),
        activity,
        finished: event_of(&events, "turn_finished")["status"].clone(),
        text: text_of(&events),
        redecide: decide(&rig.app, card, "approve").await.status(),
        took,
        mcp_errors: mcp_errors(&rig.app).await,
    }
}

/// The non-zero `countersign_mcp_errors_total` samples, by kind.
async fn mcp_errors(app: &TestApp) -> Vec<(String, u64)> {
    let text = reqwest::get(app.url("/metrics"))
        .await
        .expect("scrape")
        .text()
        .await
        .expect("text");
    text.lines()
        .filter_map(|line| line.strip_prefix("countersign_mcp_errors_total{kind=\""))
        .filter_map(|rest| rest.split_once("\"} "))
        .filter_map(|(kind, n)| Some((kind.to_owned(), n.trim().parse::<f64>().ok()? as u64)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// The demo server with fault modes, in-process, and a rig on it.
async fn demo_rig(configure: impl FnOnce(&mut Config)) -> (DemoServer, Rig) {
    let demo = DemoServer::start_with(
        "127.0.0.1:0".parse().expect("addr"),
        DemoState::with_fault_modes(),
    )
    .await
    .expect("demo server");
    let rig = rig("Demo", &demo.mcp_url(), &demo.addr().to_string(), configure).await;
    (demo, rig)
}

/// One approved call of `fault`'s tool on the in-process demo server: the
/// records, and how often the call arrived.
async fn approved_fault(
    fault: Fault,
    configure: impl FnOnce(&mut Config),
) -> (Seen, usize, DemoServer) {
    let (demo, rig) = demo_rig(configure).await;
    let mut stream = rig.app.stream(&rig.chat, None).await;
    let card = card_for(&rig, &mut stream, fault.tool_name(), &json!({})).await;
    let seen = approve_and_follow(&rig, &mut stream, &card).await;
    let arrivals = demo.calls().count(fault.tool_name());
    (seen, arrivals, demo)
}

/// What the reason must say when the connection ended before the answer:
/// the call arrived, so "could not reach" or "could not be sent" would be
/// untrue, and whether it ran is unknown.
const BROKE_OFF: &str = "broke off before it answered";

/// The invariant every failing mode shares.
const FAILED: &str = "call failed with a clear reason (no token, URL or debug text) alike in \
                      the ledger, on the card and in Activity; turn finishes, the model told; \
                      approval spent (re-decide 404); 1 arrival";

/// Runs `fault` and writes its row: failed and told, once, and the reason
/// says `says`.
async fn fault_row(scenario: &str, fault: Fault, says: &str, configure: impl FnOnce(&mut Config)) {
    let (seen, arrivals, _demo) = approved_fault(fault, configure).await;
    check(
        scenario,
        &format!("{FAILED}; the reason says \"{says}\""),
        &seen.figures(arrivals),
        seen.failed_and_told() && arrivals == 1 && seen.reason().contains(says),
    );
}

#[tokio::test]
async fn an_mcp_server_answering_http_500_fails_the_call_once_with_a_clear_reason() {
    fault_row(
        "MCP server answers HTTP 500 to an approved call",
        Fault::Http500,
        "failed with HTTP 500",
        |_| {},
    )
    .await;
}

#[tokio::test]
async fn an_mcp_server_answering_a_json_rpc_error_fails_the_call_once_with_its_words() {
    fault_row(
        "MCP server answers an approved call with a JSON-RPC error",
        Fault::JsonRpcError,
        "fault_jsonrpc_error failed on purpose",
        |_| {},
    )
    .await;
}

#[tokio::test]
async fn an_mcp_server_answering_garbage_fails_the_call_once_with_a_clear_reason() {
    fault_row(
        "MCP server answers an approved call with garbage (not JSON)",
        Fault::Garbage,
        "not JSON-RPC",
        |_| {},
    )
    .await;
}

#[tokio::test]
async fn an_mcp_server_cutting_its_event_stream_mid_event_fails_the_call_once() {
    fault_row(
        "MCP server's event stream ends mid-event",
        Fault::TruncatedSse,
        BROKE_OFF,
        |_| {},
    )
    .await;
}

#[tokio::test]
async fn an_mcp_server_dropping_the_connection_mid_answer_fails_the_call_once() {
    fault_row(
        "MCP server drops the connection mid-answer (dies mid-call, in-process)",
        Fault::DropConnection,
        BROKE_OFF,
        |_| {},
    )
    .await;
}

#[tokio::test]
async fn an_mcp_server_that_hangs_past_the_call_timeout_fails_the_call_once_in_time() {
    let (seen, arrivals, _demo) = approved_fault(Fault::Hang, |c| c.mcp_timeout_secs = 1).await;
    let in_time = seen.took < Duration::from_secs(10);
    check(
        "MCP server hangs past the call timeout (1 s)",
        &format!("{FAILED}; the reason names the 1 s timeout; the call ends within 10 s"),
        &seen.figures(arrivals),
        seen.failed_and_told() && arrivals == 1 && seen.reason().contains("within 1 s") && in_time,
    );
}

#[tokio::test]
async fn an_mcp_server_sending_more_than_the_response_bound_fails_the_call_without_reading_it_all()
{
    let (seen, arrivals, demo) = approved_fault(Fault::OversizedBody, |_| {}).await;
    let written = demo.state().body_bytes_written();
    check(
        "MCP server sends a 64 MiB body (over the 16 MiB bound)",
        &format!(
            "{FAILED}; the reason names the 16 MiB bound; the body is not read whole \
             (the server wrote less than {OVERSIZED_BODY_BYTES} bytes)"
        ),
        &format!(
            "{}; the server wrote {written} of {OVERSIZED_BODY_BYTES} bytes",
            seen.figures(arrivals)
        ),
        seen.failed_and_told()
            && arrivals == 1
            && seen.reason().contains("16 MiB")
            && written < OVERSIZED_BODY_BYTES,
    );
}

#[tokio::test]
async fn an_mcp_server_sending_a_10_mb_result_within_the_bound_runs_once_and_the_model_gets_it_cut()
{
    let (seen, arrivals, _demo) = approved_fault(Fault::HugeBody, |_| {}).await;
    // The MCP layer cuts the text to `max_result_chars` (20,000) and
    // says so; the card counts what was handed on.
    let chars = seen.event["result_chars"].as_u64();
    let cut = chars.is_some_and(|c| c > 20_000 && c < 20_200);
    check(
        "MCP server sends a well-formed 10 MB result (under the 16 MiB bound)",
        &format!(
            "call executed once (DESIGN §2 accepts up to 16 MiB); the card says ok; the model \
             gets the first 20,000 characters and a note saying it was cut (the card counts \
             20,000 < chars < 20,200 of the {HUGE_BODY_BYTES} sent); turn finishes; approval \
             spent (re-decide 404); 1 arrival"
        ),
        &format!(
            "{}: card {} with result_chars {chars:?}; turn {}; re-decide {}; arrivals {arrivals}; \
             {} ms",
            seen.status,
            seen.event["status"],
            seen.finished,
            seen.redecide.as_u16(),
            seen.took.as_millis()
        ),
        seen.status == PendingCallStatus::Executed
            && seen.event["status"] == "ok"
            && cut
            && seen.finished == "done"
            && seen.redecide == StatusCode::NOT_FOUND
            && arrivals == 1,
    );
}

// ---- Servers killed for real.

/// A server process; `SIGKILL`ed (and reaped) when dropped.
struct Process {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Process {
    /// Starts `command` with its stdout piped.
    fn spawn(mut command: Command, what: &str) -> Self {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        Self {
            child,
            lines: BufReader::new(stdout).lines(),
        }
    }

    /// The next line on stdout that `wanted` accepts (bounded).
    async fn line(&mut self, wanted: impl Fn(&str) -> bool) -> String {
        let read = async {
            while let Some(line) = self.lines.next_line().await.expect("read stdout") {
                if wanted(&line) {
                    return line;
                }
            }
            panic!("the process ended before printing the line awaited");
        };
        tokio::time::timeout(CHILD_WAIT, read)
            .await
            .expect("the line comes within 60 s")
    }

    /// `SIGKILL`, then reaps it.
    async fn kill(&mut self) {
        self.child.start_kill().expect("SIGKILL");
        self.child.wait().await.expect("reaped");
    }
}

/// `countersign-demo-mcp`: `COUNTERSIGN_DEMO_MCP_BIN`, else the binary
/// beside this test's `countersign` (`cargo xtask test` and `cargo xtask
/// faults` build it).
fn demo_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("COUNTERSIGN_DEMO_MCP_BIN") {
        return path.into();
    }
    let beside =
        PathBuf::from(env!("CARGO_BIN_EXE_countersign")).with_file_name("countersign-demo-mcp");
    assert!(
        beside.exists(),
        "{} is missing: build it with `cargo build -p countersign-demo-mcp` (cargo xtask test \
         and cargo xtask faults do), or name it in COUNTERSIGN_DEMO_MCP_BIN",
        beside.display()
    );
    beside
}

/// `countersign-demo-mcp --fault-modes --bind BIND` running; returns it and
/// its address once it listens.
async fn demo_process(bind: &str) -> (Process, String) {
    let mut command = Command::new(demo_binary());
    command.args(["--fault-modes", "--bind", bind]);
    let mut process = Process::spawn(command, "countersign-demo-mcp");
    let line = process
        .line(|l| l.starts_with("Demo MCP server on http://"))
        .await;
    let addr = line
        .trim_start_matches("Demo MCP server on http://")
        .trim_end_matches("/mcp")
        .to_owned();
    (process, addr)
}

#[tokio::test]
async fn the_demo_server_killed_mid_call_fails_the_call_once_and_a_restart_sees_no_retry() {
    let (mut demo, addr) = demo_process("127.0.0.1:0").await;
    let rig = rig("Demo", &format!("http://{addr}/mcp"), &addr, |_| {}).await;
    let mut stream = rig.app.stream(&rig.chat, None).await;
    let card = card_for(&rig, &mut stream, Fault::Hang.tool_name(), &json!({})).await;
    let approved = Instant::now();
    approve(&rig, &card).await;
    demo.line(|l| l == "call arrived: fault_hang").await;
    demo.kill().await;
    let killed_after = approved.elapsed();
    let seen = observe(&rig, &mut stream, &card, approved).await;

    // The same port again: the next call arrives there, the killed one
    // never does.
    let (mut again, _) = demo_process(&addr).await;
    let next = card_for(
        &rig,
        &mut stream,
        "echo",
        &json!({"text": "after the kill"}),
    )
    .await;
    approve(&rig, &next).await;
    let first = again.line(|l| l.starts_with("call arrived: ")).await;
    stream.until("turn_finished").await;
    check(
        "countersign-demo-mcp SIGKILLed while an approved call is in flight",
        &format!(
            "{FAILED} (before the kill); the reason says \"{BROKE_OFF}\"; after a restart on the same port, the next call is \
             the first to arrive (the killed one is not re-sent)"
        ),
        &format!(
            "{}; killed {} ms after the approval; after the restart the first arrival was {:?}",
            seen.figures(1),
            killed_after.as_millis(),
            first
        ),
        seen.failed_and_told()
            && seen.reason().contains(BROKE_OFF)
            && first == "call arrived: echo",
    );
}

/// `mcp_blocking_server.py` on the Python SDK in
/// `$COUNTERSIGN_INTEROP_DIR/py`, once it listens.
async fn python_process() -> (Process, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut command = Command::new("python3");
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("PYTHONPATH", crate::py_oauth::interop_dir().join("py"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/api/faults/mcp_blocking_server.py"
        ))
        .arg(port.to_string())
        .stderr(Stdio::piped());
    let mut process = Process::spawn(command, "mcp_blocking_server.py");
    // Uvicorn says on stderr when it listens.
    let stderr = process.child.stderr.take().expect("piped stderr");
    let mut errors = BufReader::new(stderr).lines();
    let listening = async {
        while let Some(line) = errors.next_line().await.expect("read stderr") {
            if line.contains("Uvicorn running on") {
                return;
            }
        }
        panic!("mcp_blocking_server.py ended before it listened");
    };
    tokio::time::timeout(CHILD_WAIT, listening)
        .await
        .expect("mcp_blocking_server.py listens within 60 s");
    // Keep draining stderr, so the server never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = errors.next_line().await {} });
    (process, format!("127.0.0.1:{port}"))
}

#[tokio::test]
async fn a_python_sdk_server_killed_mid_call_fails_the_call_once_with_a_clear_reason() {
    let (mut py, addr) = python_process().await;
    let rig = rig("Py", &format!("http://{addr}/mcp"), &addr, |_| {}).await;
    let mut stream = rig.app.stream(&rig.chat, None).await;
    let card = card_for(&rig, &mut stream, "wait_for_kill", &json!({})).await;
    let approved = Instant::now();
    approve(&rig, &card).await;
    py.line(|l| l == "call arrived: wait_for_kill").await;
    py.kill().await;
    let seen = observe(&rig, &mut stream, &card, approved).await;
    check(
        "Python MCP SDK server (third party) SIGKILLed while an approved call is in flight",
        &format!("{FAILED}; the reason says \"{BROKE_OFF}\""),
        &seen.figures(1),
        seen.failed_and_told() && seen.reason().contains(BROKE_OFF),
    );
}
