//! `GET /metrics` (DESIGN §8): real traffic through the API, then a scrape
//! read by a parser no one here wrote — the official Python client's
//! (`prometheus_client.parser`, installed by `cargo xtask test` into
//! `COUNTERSIGN_INTEROP_DIR`, run by `tests/interop/parse_metrics.py`).
//! Who may scrape: a loopback peer on the main address, not a forwarded
//! request, and with `COUNTERSIGN_METRICS_BIND` only its own listener
//! (in the harness, and from the real binary started with that variable).
//! (A non-loopback TCP peer cannot be made here honestly — tests talk to
//! 127.0.0.1 only — so that rule is the pure function's, unit-tested in
//! `http::metrics`.)

use crate::helpers::{approve_with, decide, setup, spawn_app_custom, spawn_app_with};
use crate::py_oauth::interop_dir;
use reqwest::StatusCode;
use serde_json::Value;
use std::{
    collections::BTreeMap,
    io::Write as _,
    process::{Command, Stdio},
};

/// What the Python parser read: families by name with their type, and
/// every sample.
#[derive(Debug)]
struct Parsed {
    families: BTreeMap<String, String>,
    samples: Vec<(String, BTreeMap<String, String>, f64)>,
}

impl Parsed {
    /// The value of the one sample `name` whose labels include `labels`.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let found: Vec<f64> = self
            .samples
            .iter()
            .filter(|(n, l, _)| {
                n == name
                    && labels.len() == l.len()
                    && labels
                        .iter()
                        .all(|(k, v)| l.get(*k).is_some_and(|x| x == v))
            })
            .map(|(_, _, v)| *v)
            .collect();
        match found[..] {
            [value] => value,
            _ => panic!("{name} {labels:?}: {found:?} among {:#?}", self.samples),
        }
    }
}

/// Runs the official parser on `text`; panics with its error when it
/// refuses a line.
fn parse(text: &str) -> Parsed {
    let mut child = Command::new("python3")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("PYTHONPATH", interop_dir().join("py"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/interop/parse_metrics.py"
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start parse_metrics.py: {e}"));
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(text.as_bytes())
        .expect("write the scrape");
    let out = child.wait_with_output().expect("parse_metrics.py ends");
    assert!(
        out.status.success(),
        "the Prometheus parser refused the scrape: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read: Value = serde_json::from_slice(&out.stdout).expect("the parser's JSON");
    let families = read["families"]
        .as_object()
        .expect("families")
        .iter()
        .map(|(name, kind)| (name.clone(), kind.as_str().expect("type").to_owned()))
        .collect();
    let samples = read["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|s| {
            let labels = s[1]
                .as_object()
                .expect("labels")
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().expect("label value").to_owned()))
                .collect();
            (
                s[0].as_str().expect("name").to_owned(),
                labels,
                s[2].as_f64().expect("value"),
            )
        })
        .collect();
    Parsed { families, samples }
}

/// Scrapes `url` (a plain client: no cookie, no CSRF token) and parses it.
async fn scrape(url: &str) -> Parsed {
    let res = reqwest::get(url).await.expect("scrape");
    assert_eq!(res.status(), StatusCode::OK, "scrape {url}");
    let content_type = res.headers()["content-type"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    assert!(
        res.headers().get("content-encoding").is_none(),
        "not compressed"
    );
    parse(&res.text().await.expect("text"))
}

#[tokio::test]
async fn a_scrape_after_real_traffic_parses_and_counts_what_happened() {
    let s = setup(|_| {}).await;
    let metrics_url = s.app.url("/metrics");
    // A wrong sign-in (another client: the fixture's stays signed in).
    let stranger = s.app.at(&s.app.base);
    let (status, _, _) = stranger
        .login("nobody@example.org", "not the password")
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let mut stream = s.app.stream(&s.chat, None).await;
    s.app
        .send(
            &s.chat,
            r#"use search_notes with {"query": "lease"} then use search_notes with {"query": "deed"} then use add_note with {"title": "t", "body": "b"}"#,
        )
        .await;
    let (_, first_card) = stream
        .until("mcp_confirmation_required")
        .await
        .last()
        .expect("card")
        .clone();

    // While the card waits: one pending call, one turn, one open stream.
    let waiting = scrape(&metrics_url).await;
    assert_eq!(waiting.value("countersign_pending_approvals", &[]), 1.0);
    assert_eq!(waiting.value("countersign_turns_running", &[]), 1.0);
    assert_eq!(waiting.value("countersign_sse_streams_open", &[]), 1.0);

    // Approved for the turn: it runs, and the next search runs under the
    // grant; add_note is another tool and asks, and is denied.
    let res = approve_with(&s.app, &first_card, "turn").await;
    assert_eq!(res.status(), StatusCode::OK);
    let (_, second_card) = stream
        .until("mcp_confirmation_required")
        .await
        .last()
        .expect("card")
        .clone();
    assert_eq!(second_card["tool_name"], "add_note");
    let res = decide(&s.app, &second_card, "deny").await;
    assert_eq!(res.status(), StatusCode::OK);
    stream.until("turn_finished").await;
    assert_eq!(s.demo.calls().count("search_notes"), 2, "both searches ran");
    assert_eq!(
        s.demo.calls().count("add_note"),
        0,
        "the denied call did not"
    );

    let after = scrape(&metrics_url).await;
    let decisions = "countersign_approval_decisions_total";
    assert_eq!(after.value(decisions, &[("outcome", "approved")]), 1.0);
    assert_eq!(after.value(decisions, &[("outcome", "denied")]), 1.0);
    assert_eq!(after.value(decisions, &[("outcome", "expired")]), 0.0);
    let calls = "countersign_tool_calls_total";
    for (origin, expected) in [
        ("approved", 1.0),
        ("turn_grant", 1.0),
        ("always_grant", 0.0),
        ("trusted_annotations", 0.0),
        ("none", 0.0),
    ] {
        assert_eq!(
            after.value(calls, &[("outcome", "ok"), ("origin", origin)]),
            expected,
            "tool calls that ran ok with origin {origin}"
        );
    }
    assert_eq!(
        after.value(calls, &[("outcome", "error"), ("origin", "approved")]),
        0.0
    );
    // One approval was claimed: one observation, in seconds, within the
    // largest finite bucket (10 s) and so under +Inf.
    let latency = "countersign_approval_decision_to_execution_seconds";
    assert_eq!(after.families[latency], "histogram");
    assert_eq!(after.value(&format!("{latency}_count"), &[]), 1.0);
    assert_eq!(
        after.value(&format!("{latency}_bucket"), &[("le", "+Inf")]),
        1.0
    );
    assert_eq!(
        after.value(&format!("{latency}_bucket"), &[("le", "10")]),
        1.0
    );
    let sum = after.value(&format!("{latency}_sum"), &[]);
    assert!((0.0..10.0).contains(&sum), "latency {sum} s");
    assert!(
        after.value(
            "countersign_sign_in_failures_total",
            &[("reason", "wrong_credentials")]
        ) >= 1.0
    );
    assert_eq!(after.value("countersign_sign_in_throttled_total", &[]), 0.0);
    assert_eq!(after.value("countersign_pending_approvals", &[]), 0.0);
    assert_eq!(
        after.value("countersign_mcp_errors_total", &[("kind", "timeout")]),
        0.0
    );
    assert!(after.value("countersign_db_pool_connections_open", &[]) >= 1.0);
    assert!(after.value("countersign_db_pool_connections_in_use", &[]) >= 0.0);
    for (name, kind) in &after.families {
        assert!(name.starts_with("countersign_"), "{name} has the prefix");
        assert!(
            ["counter", "gauge", "histogram"].contains(&kind.as_str()),
            "{name}: {kind}"
        );
    }
    // Nothing of the traffic became a label: no id, email, tool or URL.
    for (name, labels, _) in &after.samples {
        for (key, value) in labels {
            assert!(
                ["outcome", "origin", "kind", "reason", "le"].contains(&key.as_str()),
                "{name} has label {key}={value}"
            );
            assert!(
                !value.contains('@') && !value.contains('/') && !value.contains("search"),
                "{name} {key}={value}"
            );
        }
    }
}

#[tokio::test]
async fn a_forwarded_request_cannot_scrape_the_main_address_even_from_loopback() {
    let app = spawn_app_with(|c| {
        c.trusted_proxies = "127.0.0.1".parse().expect("proxies");
    })
    .await;
    // What a proxy on this host sends for a stranger, or a stranger's
    // attempt to pass as local: both refused, as if there were no page.
    for (header, value) in [
        ("x-forwarded-for", "203.0.113.9"),
        ("x-forwarded-for", "127.0.0.1"),
        ("forwarded", "for=127.0.0.1"),
    ] {
        let res = app
            .client
            .get(app.url("/metrics"))
            .header(header, value)
            .send()
            .await
            .expect("request");
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{header}: {value}");
    }
    // The same request unforwarded comes from 127.0.0.1, which is named a
    // proxy: a proxy on this host that adds no header forwards strangers
    // just so (issue 44, item 9; seen served before the fix).
    let res = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .expect("request");
    assert_eq!(
        res.status(),
        StatusCode::NOT_FOUND,
        "a trusted proxy's peer"
    );
    // Without it named, a loopback peer is a local scraper: served.
    let local = spawn_app_with(|_| {}).await;
    scrape(&local.url("/metrics")).await;
}

#[tokio::test]
async fn with_metrics_bind_the_metrics_have_their_own_listener_and_leave_the_main_address() {
    let own = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    let addr = own.local_addr().expect("local addr");
    own.set_nonblocking(true).expect("non-blocking");
    let app = spawn_app_custom(
        |c| c.metrics_bind = Some(addr),
        |state| {
            // What `countersign serve` does with COUNTERSIGN_METRICS_BIND.
            let listener = tokio::net::TcpListener::from_std(own).expect("tokio listener");
            tokio::spawn(countersign::http::metrics::serve(
                listener,
                state.clone(),
                std::future::pending(),
            ));
        },
    )
    .await;
    let (status, _, _) = app.login("nobody@example.org", "not the password").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let res = app.get("/metrics").await;
    assert_eq!(
        res.status(),
        StatusCode::NOT_FOUND,
        "not on the main address"
    );
    let parsed = scrape(&format!("http://{addr}/metrics")).await;
    assert_eq!(
        parsed.value(
            "countersign_sign_in_failures_total",
            &[("reason", "wrong_credentials")]
        ),
        1.0,
        "the listener reports the same instance's counts"
    );
    // It answers /metrics and nothing else.
    let res = reqwest::get(format!("http://{addr}/api/auth/me"))
        .await
        .expect("request");
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
}

/// `countersign serve` as an operator starts it; stopped (SIGTERM) and
/// reaped when dropped, also when the test fails.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

#[tokio::test]
async fn the_real_binary_serves_metrics_on_countersign_metrics_bind_and_not_on_its_main_address() {
    let app = spawn_app_with(|_| {}).await;
    let (main_port, metrics_port) = (free_port(), free_port());
    let mut server = Server(
        Command::new(env!("CARGO_BIN_EXE_countersign"))
            .arg("serve")
            .env("DATABASE_URL", app.config.database_url.expose())
            .env("COUNTERSIGN_MIGRATION_DATABASE_URL", &app.owner_db_url)
            .env("COUNTERSIGN_BIND", format!("127.0.0.1:{main_port}"))
            .env(
                "COUNTERSIGN_METRICS_BIND",
                format!("127.0.0.1:{metrics_port}"),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start countersign serve"),
    );
    // It prints its URL once both listeners are bound.
    let stdout = server.0.stdout.take().expect("stdout");
    let up = tokio::task::spawn_blocking(move || {
        use std::io::BufRead as _;
        std::io::BufReader::new(stdout)
            .lines()
            .next()
            .expect("a line")
            .expect("stdout")
    })
    .await
    .expect("reader");
    assert!(up.contains(&format!("127.0.0.1:{main_port}")), "{up}");

    let parsed = scrape(&format!("http://127.0.0.1:{metrics_port}/metrics")).await;
    assert_eq!(parsed.value("countersign_pending_approvals", &[]), 0.0);
    let res = reqwest::get(format!("http://127.0.0.1:{main_port}/metrics"))
        .await
        .expect("request");
    assert_eq!(
        res.status(),
        StatusCode::NOT_FOUND,
        "not on the main address"
    );
    drop(server);
}
