//! `countersign-demo-mcp [--bind 127.0.0.1:PORT]`: runs the demo MCP server
//! until Ctrl-C or SIGTERM. A thin shim over the library.

use std::net::SocketAddr;
use std::process::ExitCode;

const DEFAULT_BIND: &str = "127.0.0.1:3100";
const USAGE: &str = "usage: countersign-demo-mcp [--bind 127.0.0.1:PORT]\n\
    Serves the Countersign demo MCP server at http://ADDR/mcp (loopback only; default 127.0.0.1:3100).";

#[tokio::main]
async fn main() -> ExitCode {
    let bind = match parse_bind(std::env::args().skip(1)) {
        Ok(Some(bind)) => bind,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("countersign-demo-mcp: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(bind).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("countersign-demo-mcp: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(bind: SocketAddr) -> std::io::Result<()> {
    if !bind.ip().is_loopback() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("refusing to bind {bind}: the demo MCP server only listens on loopback"),
        ));
    }
    let listener = tokio::net::TcpListener::bind(bind).await?;
    println!("Demo MCP server on http://{}/mcp", listener.local_addr()?);
    countersign_demo_mcp::serve(listener, shutdown_signal()).await
}

/// `Ok(None)` means `--help`.
fn parse_bind(mut args: impl Iterator<Item = String>) -> Result<Option<SocketAddr>, String> {
    let mut bind = DEFAULT_BIND.to_owned();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--bind" => bind = args.next().ok_or("--bind needs an address")?,
            other => match other.strip_prefix("--bind=") {
                Some(value) => bind = value.to_owned(),
                None => return Err(format!("unexpected argument {other:?}")),
            },
        }
    }
    bind.parse()
        .map(Some)
        .map_err(|_| format!("--bind wants IP:PORT, e.g. 127.0.0.1:3100, not {bind:?}"))
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}
