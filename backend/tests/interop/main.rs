//! Countersign against MCP servers that no one here wrote: the reference
//! `@modelcontextprotocol/server-everything` (npm) and a small server on
//! the official Python SDK (`py_server.py`), both on 127.0.0.1. They are
//! installed by `cargo xtask test` (xtask/src/interop.rs) into the folder
//! named by `COUNTERSIGN_INTEROP_DIR`. Also the `connector probe` CLI, run
//! as the real binary (`probe_oauth`: its `--oauth` sign-ins).
//! `py_oauth_server.py`, beside them, belongs to the API tests
//! (`tests/api/py_oauth.rs`): its sign-in goes through the app.

mod clients;
mod probe;
mod probe_oauth;
mod refresh;
#[path = "../support/db.rs"]
mod test_db;

use countersign::{
    mcp::{self, McpSession, McpSettings, McpTarget},
    ssrf,
};
use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::Arc,
    time::Duration,
};

fn interop_dir() -> PathBuf {
    let dir = std::env::var_os("COUNTERSIGN_INTEROP_DIR").unwrap_or_else(|| {
        panic!(
            "COUNTERSIGN_INTEROP_DIR is not set. Run the tests with `cargo xtask test`, which \
             installs server-everything and the Python MCP SDK into target/interop, or point it \
             at such a folder."
        )
    });
    PathBuf::from(dir)
}

/// A server process on 127.0.0.1; killed (and reaped) when dropped.
#[derive(Debug)]
pub struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// `http://127.0.0.1:PORT/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// The allow-list entry that lets the guard through to this server only.
    pub fn allow(&self) -> ssrf::AllowList {
        ssrf::AllowList::parse(&self.allow_entry()).expect("the allow list parses")
    }

    /// `127.0.0.1:PORT`.
    pub fn allow_entry(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port on 127.0.0.1")
        .port()
}

/// A minimal environment: server-everything's `get-env` tool prints its
/// environment, so nothing of ours (no secrets) goes in.
fn bare(program: &str, port: u16) -> Command {
    let mut command = Command::new(program);
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    command
}

/// Starts `command` and waits until its port accepts connections. A port
/// being bound is not an event we can await, so poll, bounded.
async fn start(mut command: Command, port: u16, what: &str) -> Server {
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let mut server = Server { child, port };
    for _ in 0..300 {
        if let Some(status) = server.child.try_wait().expect("try_wait") {
            panic!("{what} exited before it listened ({status})");
        }
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return server;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not listen on 127.0.0.1:{port} within 30 s");
}

/// server-everything, Streamable HTTP, kept on 127.0.0.1 by the preload.
pub async fn everything() -> Server {
    let dir = interop_dir();
    let port = free_port();
    let mut command = bare("node", port);
    command
        .arg("--import")
        .arg(dir.join("loopback.mjs"))
        .arg(dir.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
        .arg("streamableHttp");
    start(command, port, "server-everything").await
}

/// `py_server.py` on the installed Python SDK.
pub async fn python() -> Server {
    let dir = interop_dir();
    let port = free_port();
    let mut command = bare("python3", port);
    command
        .env("PYTHONPATH", dir.join("py"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/interop/py_server.py"
        ))
        .arg(port.to_string())
        .stderr(Stdio::null());
    start(command, port, "the Python MCP server").await
}

/// Runs the SSRF guard on `server`'s URL (with an allow-list for its port
/// only) and connects through the guarded client.
pub async fn connect(server: &Server) -> McpSession {
    let allow = server.allow();
    let guarded = ssrf::check(&server.mcp_url(), &ssrf::SystemResolver, &allow)
        .await
        .expect("the guard lets the allowed loopback port through");
    let http = ssrf::guarded_client(
        reqwest::Client::builder(),
        Arc::new(ssrf::SystemResolver),
        allow,
    )
    .expect("the guarded client builds");
    mcp::connect(
        http,
        &McpTarget::new(guarded.url().clone()),
        &McpSettings::default(),
    )
    .await
    .expect("the client connects")
}
