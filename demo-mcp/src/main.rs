//! `countersign-demo-mcp [--bind 127.0.0.1:PORT] [--conformance-fixtures]`:
//! runs the demo MCP server until Ctrl-C or SIGTERM. A thin shim over the
//! library.

use std::net::SocketAddr;
use std::process::ExitCode;

const DEFAULT_BIND: &str = "127.0.0.1:3100";
const USAGE: &str = "usage: countersign-demo-mcp [--bind 127.0.0.1:PORT] [--conformance-fixtures]\n\
    Serves the Countersign demo MCP server at http://ADDR/mcp (loopback only; default 127.0.0.1:3100).\n\
    --conformance-fixtures also lists the tools the MCP conformance suite's server scenarios call.";

#[tokio::main]
async fn main() -> ExitCode {
    let options = match parse_options(std::env::args().skip(1)) {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("countersign-demo-mcp: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(options).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("countersign-demo-mcp: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(Options { bind, fixtures }: Options) -> std::io::Result<()> {
    if !bind.ip().is_loopback() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("refusing to bind {bind}: the demo MCP server only listens on loopback"),
        ));
    }
    let listener = tokio::net::TcpListener::bind(bind).await?;
    println!("Demo MCP server on http://{}/mcp", listener.local_addr()?);
    let state = if fixtures {
        countersign_demo_mcp::DemoState::with_conformance_fixtures()
    } else {
        countersign_demo_mcp::DemoState::new()
    };
    countersign_demo_mcp::serve_with_state(listener, state, shutdown_signal()).await
}

/// What the command line asked for.
struct Options {
    bind: SocketAddr,
    fixtures: bool,
}

/// `Ok(None)` means `--help`.
fn parse_options(mut args: impl Iterator<Item = String>) -> Result<Option<Options>, String> {
    let mut bind = DEFAULT_BIND.to_owned();
    let mut fixtures = false;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--conformance-fixtures" => fixtures = true,
            "--bind" => bind = args.next().ok_or("--bind needs an address")?,
            other => match other.strip_prefix("--bind=") {
                Some(value) => bind = value.to_owned(),
                None => return Err(format!("unexpected argument {other:?}")),
            },
        }
    }
    let bind = bind
        .parse()
        .map_err(|_| format!("--bind wants IP:PORT, e.g. 127.0.0.1:3100, not {bind:?}"))?;
    Ok(Some(Options { bind, fixtures }))
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
