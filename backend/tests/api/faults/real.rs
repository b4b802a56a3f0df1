//! Real `countersign serve` processes for the fault scenarios that need a
//! process to kill, several instances, or a server measured from outside:
//! started on a free loopback port over a test database, ready once they
//! print the address they listen on, killed when dropped. Their logs go to
//! a folder under the system's temporary directory, kept when a scenario
//! fails and removed by [`remove_logs`] when it passes.

use crate::helpers::{TestApp, new_client};
use crate::test_db::TestDb;
use countersign::{Config, db};
use std::{
    io::{BufRead as _, BufReader},
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

pub const APPROVAL_KEY: &str = "6a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a6978879";
pub const SECRET_KEY: &str = "1f2e3d4c5b6a79880f1e2d3c4b5a69781f2e3d4c5b6a79880f1e2d3c4b5a6978";

/// One real server process; killed when dropped.
pub struct Server {
    pub name: &'static str,
    pub child: Child,
    pub port: u16,
}

impl Server {
    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Resident memory now, in KiB.
    pub fn rss_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr")
        .port()
}

/// Where this test process's servers write their logs.
pub fn log_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("countersign-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("log dir");
    dir
}

/// Removes the logs (a scenario that passed has nothing to show).
pub fn remove_logs() {
    let _ = std::fs::remove_dir_all(log_dir());
}

/// The server binary: `COUNTERSIGN_FAULTS_SERVER` (the release build
/// `cargo xtask faults` makes, for the load figures) or this package's
/// debug build.
fn binary() -> PathBuf {
    std::env::var_os("COUNTERSIGN_FAULTS_SERVER")
        .map_or_else(|| env!("CARGO_BIN_EXE_countersign").into(), PathBuf::from)
}

/// Starts `countersign serve` over `db` with the keys above and `env`
/// added, and waits for the line it prints once it listens.
pub async fn start(name: &'static str, db: &TestDb, env: &[(&str, String)]) -> Server {
    let port = free_port();
    let log = std::fs::File::create(log_dir().join(format!("server-{name}.log"))).expect("log");
    let mut command = Command::new(binary());
    command
        .arg("serve")
        .env("DATABASE_URL", &db.app_url)
        .env("COUNTERSIGN_MIGRATION_DATABASE_URL", &db.owner_url)
        .env("COUNTERSIGN_BIND", format!("127.0.0.1:{port}"))
        .env("COUNTERSIGN_SECRET_KEY", SECRET_KEY)
        .env("COUNTERSIGN_APPROVAL_KEY", APPROVAL_KEY)
        .env("COUNTERSIGN_DEMO_WORD_DELAY_MS", "0")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(log);
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("start countersign serve");
    let stdout = child.stdout.take().expect("stdout");
    let line = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || BufReader::new(stdout).lines().next()),
    )
    .await
    .unwrap_or_else(|_| panic!("server {name} did not listen within 60 s"))
    .expect("reader")
    .unwrap_or_else(|| {
        panic!(
            "server {name} exited before it listened; see {}",
            log_dir().display()
        )
    });
    assert!(
        line.expect("stdout").contains(&format!("127.0.0.1:{port}")),
        "server {name} printed its address"
    );
    Server { name, child, port }
}

/// A client of the server (or balancer) at `base` over `db`, not signed
/// in: the `helpers` API of a `TestApp`.
pub async fn client_of(base: String, db: &TestDb) -> TestApp {
    TestApp {
        base,
        pool: db::connect(&db.app_url).await.expect("pool"),
        superuser_db_url: db.superuser_url.clone(),
        owner_db_url: db.owner_url.clone(),
        client: new_client(),
        csrf: Default::default(),
        config: Config::with_database_url(db.app_url.clone()),
    }
}
