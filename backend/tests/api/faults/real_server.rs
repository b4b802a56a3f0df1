//! The real `countersign serve` binary as a child process, for the
//! scenarios that kill it (`SIGKILL`) or watch what it logs while its
//! database goes away, or that measure it from outside (several instances,
//! load): its URL once it listens, its stderr line by line, its memory.

use crate::{helpers::TestApp, test_db::TestDb};
use std::{process::Stdio, time::Duration};
use tokio::{
    io::{AsyncBufReadExt as _, BufReader},
    process::{Child, Command},
    sync::mpsc,
};

/// The approval key the in-process instances of `helpers` use: every
/// instance of a deployment shares it.
pub const APPROVAL_KEY: &str = "5e1f2a3b4c5d6e7f8091a2b3c4d5e6f7a8b9cadbecfd0e1f2031425364758697";
/// A secret key for connector credentials.
pub const SECRET_KEY: &str = "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

/// A running `countersign serve`; killed when dropped.
pub struct RealServer {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Its port on 127.0.0.1.
    pub port: u16,
    lines: mpsc::UnboundedReceiver<String>,
}

impl RealServer {
    /// Starts the binary on a free loopback port against `database_url`
    /// (migrating with `owner_url`), with `settings` as extra environment;
    /// returns once it listens.
    pub async fn start(database_url: &str, owner_url: &str, settings: &[(&str, String)]) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut command = Command::new(binary());
        command
            .arg("serve")
            .env("DATABASE_URL", database_url)
            .env("COUNTERSIGN_MIGRATION_DATABASE_URL", owner_url)
            .env("COUNTERSIGN_BIND", format!("127.0.0.1:{port}"))
            .env("COUNTERSIGN_SECRET_KEY", SECRET_KEY)
            .env("COUNTERSIGN_APPROVAL_KEY", APPROVAL_KEY)
            .env("COUNTERSIGN_DEMO_WORD_DELAY_MS", "0")
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (name, value) in settings {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("start countersign serve");
        let (send, lines) = mpsc::unbounded_channel();
        let stderr = child.stderr.take().expect("stderr");
        tokio::spawn(async move {
            let mut stderr = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = stderr.next_line().await {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        // The server prints its URL once it listens.
        let stdout = child.stdout.take().expect("stdout");
        let first = tokio::time::timeout(
            Duration::from_secs(30),
            BufReader::new(stdout).lines().next_line(),
        )
        .await
        .expect("countersign serve listens within 30 s")
        .expect("stdout")
        .expect("a line on stdout");
        assert!(first.contains(&format!("127.0.0.1:{port}")), "{first}");
        Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            port,
            lines,
        }
    }

    /// Resident memory now, in KiB (0 once it exited).
    pub fn rss_kib(&self) -> u64 {
        let Some(pid) = self.child.id() else { return 0 };
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// `SIGKILL`: no shutdown, no last write, like a crashed host.
    pub async fn kill(&mut self) {
        self.child.start_kill().expect("SIGKILL");
        self.child.wait().await.expect("reaped");
    }

    /// Log lines until one contains `needle` (that one included), or
    /// `None` when none does within `within`.
    pub async fn until_log(&mut self, needle: &str, within: Duration) -> Option<Vec<String>> {
        let deadline = tokio::time::Instant::now() + within;
        let mut seen = Vec::new();
        loop {
            let line = tokio::time::timeout_at(deadline, self.lines.recv())
                .await
                .ok()??;
            let done = line.contains(needle);
            seen.push(line);
            if done {
                return Some(seen);
            }
        }
    }

    /// Every log line written so far that has not been read yet.
    pub fn drain_log(&mut self) -> Vec<String> {
        let mut seen = Vec::new();
        while let Ok(line) = self.lines.try_recv() {
            seen.push(line);
        }
        seen
    }
}

/// The server binary: `COUNTERSIGN_FAULTS_SERVER` (the release build
/// `cargo xtask faults` makes, so the load and latency figures are a
/// release server's) or this package's debug build.
fn binary() -> std::path::PathBuf {
    std::env::var_os("COUNTERSIGN_FAULTS_SERVER")
        .map_or_else(|| env!("CARGO_BIN_EXE_countersign").into(), Into::into)
}

/// `app`'s browser (its cookie jar and CSRF token) talking to the server at
/// `base`: the same user behind a load balancer, or after a restart.
pub fn same_browser(app: &TestApp, base: &str) -> TestApp {
    TestApp {
        base: base.to_owned(),
        pool: app.pool.clone(),
        superuser_db_url: app.superuser_db_url.clone(),
        owner_db_url: app.owner_db_url.clone(),
        client: app.client.clone(),
        csrf: std::sync::Mutex::new(app.csrf.lock().expect("lock").clone()),
        config: app.config.clone(),
    }
}

/// A new browser (no session yet) at `base`, a server on `test_db`; the
/// handles on the database come from `test_db`.
pub async fn browser(test_db: &TestDb, base: &str) -> TestApp {
    TestApp {
        base: base.to_owned(),
        pool: countersign::db::connect(&test_db.app_url)
            .await
            .expect("pool"),
        superuser_db_url: test_db.superuser_url.clone(),
        owner_db_url: test_db.owner_url.clone(),
        client: crate::helpers::new_client(),
        csrf: Default::default(),
        config: countersign::Config::with_database_url(test_db.app_url.clone()),
    }
}
