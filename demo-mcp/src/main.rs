//! `countersign-demo-mcp [--bind 127.0.0.1:PORT] [--oauth [--token-ttl-secs N]]
//! [--conformance-fixtures] [--fault-modes]`:
//! runs the demo MCP server until Ctrl-C or SIGTERM. A thin shim over the
//! library.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

const DEFAULT_BIND: &str = "127.0.0.1:3100";
/// How long an access token lives in OAuth mode unless `--token-ttl-secs`.
const DEFAULT_TOKEN_TTL_SECS: u64 = 3600;
const USAGE: &str = "usage: countersign-demo-mcp [--bind 127.0.0.1:PORT] [--oauth [--token-ttl-secs N]] [--conformance-fixtures] [--fault-modes]\n\
    Serves the Countersign demo MCP server at http://ADDR/mcp (loopback only; default 127.0.0.1:3100).\n\
    --oauth: /mcp then needs a bearer token from the server's own authorization server\n\
    (sign-in page at http://ADDR/authorize), whose access tokens live N seconds (default 3600).\n\
    --conformance-fixtures also serves the tools, prompts, resources, completion and logging\n\
    the MCP conformance suite's server scenarios look for.\n\
    --fault-modes also lists the fault_* tools, whose calls are answered wrongly on purpose,\n\
    and prints `call arrived: TOOL` on stdout as each tool call arrives.";

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("countersign-demo-mcp: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("countersign-demo-mcp: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(
    Args {
        bind,
        token_ttl,
        fixtures,
        faults,
    }: Args,
) -> std::io::Result<()> {
    if !bind.ip().is_loopback() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("refusing to bind {bind}: the demo MCP server only listens on loopback"),
        ));
    }
    let listener = tokio::net::TcpListener::bind(bind).await?;
    let addr = listener.local_addr()?;
    let oauth = token_ttl.map(|ttl| countersign_demo_mcp::oauth::AuthServer::new(addr, ttl));
    match &token_ttl {
        Some(ttl) => println!(
            "Demo MCP server on http://{addr}/mcp (OAuth: sign in at http://{addr}/authorize, tokens live {}s)",
            ttl.as_secs()
        ),
        None => println!("Demo MCP server on http://{addr}/mcp"),
    }
    let state = if fixtures {
        countersign_demo_mcp::DemoState::with_conformance_fixtures()
    } else if faults {
        countersign_demo_mcp::DemoState::with_fault_modes()
    } else {
        countersign_demo_mcp::DemoState::new()
    };
    if faults {
        tokio::spawn(print_arrivals(state.clone()));
    }
    countersign_demo_mcp::serve_with(listener, state, oauth, shutdown_signal()).await
}

/// Prints `call arrived: TOOL` for each tool call as it arrives, so a
/// test driving this process can await an arrival (and then kill it).
async fn print_arrivals(state: countersign_demo_mcp::DemoState) {
    use std::io::Write as _;
    let mut seen = state.watch_calls();
    let mut printed = 0;
    while seen.changed().await.is_ok() {
        let calls = state.calls().calls;
        let mut out = std::io::stdout().lock();
        for call in calls.iter().skip(printed) {
            let _ = writeln!(out, "call arrived: {}", call.tool);
        }
        let _ = out.flush();
        printed = calls.len();
    }
}

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq)]
struct Args {
    /// Where to listen.
    bind: SocketAddr,
    /// OAuth mode (`--oauth`), with its access tokens' lifetime.
    token_ttl: Option<Duration>,
    /// `--conformance-fixtures`: the conformance suite's fixtures too.
    fixtures: bool,
    /// `--fault-modes`: the fault tools too, and arrivals on stdout.
    faults: bool,
}

/// `Ok(None)` means `--help`.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut bind = DEFAULT_BIND.to_owned();
    let mut oauth = false;
    let mut ttl_secs = None;
    let mut fixtures = false;
    let mut faults = false;
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = |what: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or(format!("{flag} needs {what}"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--bind" => bind = value("an address")?,
            "--oauth" if inline.is_none() => oauth = true,
            "--conformance-fixtures" if inline.is_none() => fixtures = true,
            "--fault-modes" if inline.is_none() => faults = true,
            "--token-ttl-secs" => {
                let text = value("a number of seconds")?;
                ttl_secs = Some(text.parse::<u64>().ok().filter(|secs| *secs > 0).ok_or(
                    format!(
                        "--token-ttl-secs wants a whole number of seconds above 0, not {text:?}"
                    ),
                )?);
            }
            _ => return Err(format!("unexpected argument {arg:?}")),
        }
    }
    if fixtures && faults {
        return Err("--conformance-fixtures and --fault-modes do not go together".into());
    }
    if ttl_secs.is_some() && !oauth {
        return Err("--token-ttl-secs only applies with --oauth".into());
    }
    let bind = bind
        .parse()
        .map_err(|_| format!("--bind wants IP:PORT, e.g. 127.0.0.1:3100, not {bind:?}"))?;
    let token_ttl = oauth.then(|| Duration::from_secs(ttl_secs.unwrap_or(DEFAULT_TOKEN_TTL_SECS)));
    Ok(Some(Args {
        bind,
        token_ttl,
        fixtures,
        faults,
    }))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Args>, String> {
        parse_args(args.iter().map(|a| (*a).to_owned()))
    }

    fn addr(text: &str) -> SocketAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn the_flags_read_as_they_did_and_oauth_mode_takes_a_token_lifetime() {
        for (args, want, why) in [
            (&[][..], (DEFAULT_BIND, None), "no flags"),
            (
                &["--bind", "127.0.0.1:9"][..],
                ("127.0.0.1:9", None),
                "--bind ADDR",
            ),
            (
                &["--bind=127.0.0.1:9"][..],
                ("127.0.0.1:9", None),
                "--bind=ADDR",
            ),
            (
                &["--oauth"][..],
                (DEFAULT_BIND, Some(DEFAULT_TOKEN_TTL_SECS)),
                "OAuth, default lifetime",
            ),
            (
                &["--oauth", "--token-ttl-secs", "5", "--bind", "127.0.0.1:9"][..],
                ("127.0.0.1:9", Some(5)),
                "OAuth with a lifetime",
            ),
            (
                &["--token-ttl-secs=7", "--oauth"][..],
                (DEFAULT_BIND, Some(7)),
                "any order, inline value",
            ),
        ] {
            let (bind, ttl) = want;
            assert_eq!(
                parse(args),
                Ok(Some(Args {
                    bind: addr(bind),
                    token_ttl: ttl.map(Duration::from_secs),
                    fixtures: false,
                    faults: false,
                })),
                "{why}"
            );
        }
        assert_eq!(parse(&["--help"]), Ok(None));
        assert_eq!(
            parse(&["--fault-modes"]).map(|a| a.map(|a| a.faults)),
            Ok(Some(true))
        );
    }

    #[test]
    fn a_bad_command_line_is_refused_with_the_reason() {
        for (args, says, why) in [
            (
                &["--token-ttl-secs", "5"][..],
                "only applies with --oauth",
                "a lifetime without OAuth",
            ),
            (
                &["--oauth", "--token-ttl-secs", "0"][..],
                "above 0",
                "a zero lifetime",
            ),
            (
                &["--oauth", "--token-ttl-secs", "soon"][..],
                "whole number",
                "not a number",
            ),
            (
                &["--oauth", "--token-ttl-secs"][..],
                "needs a number",
                "no value",
            ),
            (
                &["--oauth=yes"][..],
                "unexpected argument",
                "--oauth takes no value",
            ),
            (&["--bind", "localhost"][..], "IP:PORT", "not an address"),
            (
                &["--fault-modes", "--conformance-fixtures"][..],
                "do not go together",
                "two test modes at once",
            ),
            (
                &["--frobnicate"][..],
                "unexpected argument",
                "an unknown flag",
            ),
        ] {
            let refused = parse(args).expect_err(why);
            assert!(refused.contains(says), "{why}: {refused}");
        }
    }
}
