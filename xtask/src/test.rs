//! `cargo xtask test`: every check, in the order that fails fastest.

use crate::{
    conformance, interop,
    pg::{Cluster, StopOnDrop, throwaway_cluster},
    proc::{Counts, cmd, free_port, output, run, run_counting, spawn, terminate, wait_for_http},
    run::{bootstrap_db, build_server, server_bin},
    schema, sqlx, tools, web,
};
use std::time::{Duration, Instant};

fn step(
    timings: &mut Vec<(&'static str, Duration)>,
    name: &'static str,
    f: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    println!("\n==> {name}");
    let start = Instant::now();
    let result = f();
    timings.push((name, start.elapsed()));
    result.map_err(|e| e.context(format!("step `{name}` failed")))
}

/// How long the e2e server's turns wait for a decision (the browser's
/// expiry test waits it out).
const E2E_APPROVAL_WAIT_SECS: &str = "30";

/// `cargo`, with incremental compilation off unless the caller chose: a
/// full test run gains nothing from it, and its caches are most of what
/// fills a small CI disk.
fn cargo() -> std::process::Command {
    let mut c = cmd("cargo");
    if std::env::var_os("CARGO_INCREMENTAL").is_none() {
        c.env("CARGO_INCREMENTAL", "0");
    }
    c
}

/// Runs everything CI runs.
pub fn test() -> anyhow::Result<()> {
    let start = Instant::now();
    let mut t = Vec::new();
    let mut counts = Counts::default();
    step(&mut t, "rustfmt", || {
        run(cargo().args(["fmt", "--all", "--check"]))
    })?;
    let cluster = throwaway_cluster("pg-test")?;
    let _stop = StopOnDrop(&cluster);
    step(
        &mut t,
        "compile-checked SQL (backend/.sqlx up to date)",
        || sqlx::prepare(&cluster, true),
    )?;
    step(&mut t, "clippy (host crates)", || {
        run(cargo().args([
            "clippy",
            "--workspace",
            "--exclude",
            "countersign-web",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]))
    })?;
    step(&mut t, "clippy (web app tests, host)", || {
        run(cargo().args([
            "clippy",
            "-p",
            "countersign-web",
            "--lib",
            "--tests",
            "--",
            "-D",
            "warnings",
        ]))
    })?;
    step(&mut t, "clippy (web app, wasm32)", || {
        tools::ensure_wasm_target()?;
        run(cargo().args([
            "clippy",
            "-p",
            "countersign-web",
            "--target",
            "wasm32-unknown-unknown",
            "--",
            "-D",
            "warnings",
        ]))
    })?;

    // MCP servers that no one here wrote, for the interop tests (and the
    // API test of OAuth against the Python SDK).
    let mut interop_dir = std::path::PathBuf::new();
    step(&mut t, "interop servers (npm, PyPI)", || {
        interop_dir = interop::prepare()?;
        Ok(())
    })?;

    step(&mut t, "unit and API tests (real Postgres)", || {
        run_counting(
            cargo()
                .args(["test", "--workspace", "--exclude", "countersign-web"])
                .env("COUNTERSIGN_TEST_SUPERUSER_URL", cluster.superuser_url())
                .env("COUNTERSIGN_INTEROP_DIR", &interop_dir),
            &mut counts,
        )?;
        // The web app's pure logic (Markdown safety, transcript) on the host.
        run_counting(
            cargo().args(["test", "-p", "countersign-web", "--lib"]),
            &mut counts,
        )
    })?;
    step(
        &mut t,
        "MCP conformance suite (client and demo server)",
        || conformance::conformance(&[]),
    )?;
    step(&mut t, "schema.sql drift", || schema::check(&cluster))?;
    step(&mut t, "browser e2e (headless Chromium)", || {
        e2e(&cluster, &mut counts, &[])
    })?;

    println!("\nAll checks passed in {:.0?}:", start.elapsed());
    for (name, took) in &t {
        println!("  {took:>8.1?}  {name}");
    }
    // The plain closing line CI reads: every Rust and browser test.
    println!("\n{} passed, {} failed", counts.passed, counts.failed);
    Ok(())
}

/// `cargo xtask e2e [ARGS…]`: only the browser journeys, against a
/// throwaway Postgres (for iterating on the web app; `test` runs them
/// too). ARGS go to `playwright test` as they are: spec names to run, a
/// `-g` title filter, `--repeat-each 2`.
pub fn e2e_only(playwright_args: &[String]) -> anyhow::Result<()> {
    let cluster = throwaway_cluster("pg-e2e")?;
    let _stop = StopOnDrop(&cluster);
    let mut counts = Counts::default();
    let result = e2e(&cluster, &mut counts, playwright_args);
    println!("\n{} passed, {} failed", counts.passed, counts.failed);
    result
}

/// Builds the web app and the server, serves them on a free port against a
/// fresh database, and runs the Playwright specs in `e2e/` against it
/// (only those `playwright_args` pick, when it names any).
/// The e2e instance's administrator (`countersign user create … --admin`).
const E2E_ADMIN: &str = "e2e-admin@example.org";

fn e2e(cluster: &Cluster, counts: &mut Counts, playwright_args: &[String]) -> anyhow::Result<()> {
    tools::ensure_chromium()?;
    web::build()?;
    build_server()?;
    run(cargo().args([
        "build",
        "-p",
        "countersign-demo-mcp",
        "-p",
        "countersign-test-idp",
    ]))?;
    bootstrap_db(cluster, "e2e", "e2e", "e2e")?;

    // The demo MCP server the connector journeys add, and a second one in
    // OAuth mode (its own loopback authorization server) for the connector
    // sign-in journey.
    let demo_port = free_port()?;
    let demo_addr = format!("127.0.0.1:{demo_port}");
    let oauth_demo_addr = format!("127.0.0.1:{}", free_port()?);
    let mut demo = spawn(
        cmd(server_bin().with_file_name("countersign-demo-mcp")).args(["--bind", &demo_addr]),
    )?;
    let oauth_demo = spawn(
        cmd(server_bin().with_file_name("countersign-demo-mcp")).args([
            "--bind",
            &oauth_demo_addr,
            "--oauth",
        ]),
    );
    let mut oauth_demo = match oauth_demo {
        Ok(oauth_demo) => oauth_demo,
        Err(err) => {
            terminate(&mut demo);
            return Err(err);
        }
    };

    // The SMTP sink the approvers' e-mails go to; the specs read its log.
    let smtp_port = free_port()?;
    let mail_log = crate::root().join("target/e2e-mail.jsonl");
    let _ = std::fs::remove_file(&mail_log);
    let sink = crate::interop::prepare_smtp().and_then(|py| {
        spawn(
            cmd("python3")
                .env("PYTHONPATH", py)
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .arg(crate::root().join("backend/tests/interop/smtp_sink.py"))
                .arg(smtp_port.to_string())
                .arg(&mail_log),
        )
    });
    let mut sink = match sink {
        Ok(sink) => sink,
        Err(err) => {
            terminate(&mut oauth_demo);
            terminate(&mut demo);
            return Err(err);
        }
    };

    // The organisation's identity provider for single sign-on (a loopback
    // one that signs in whoever the spec names).
    let idp_addr = format!("127.0.0.1:{}", free_port()?);
    let idp =
        spawn(cmd(server_bin().with_file_name("countersign-test-idp")).args(["--bind", &idp_addr]));
    let mut idp = match idp {
        Ok(idp) => idp,
        Err(err) => {
            terminate(&mut sink);
            terminate(&mut oauth_demo);
            terminate(&mut demo);
            return Err(err);
        }
    };

    let port = free_port()?;
    let server = spawn(
        cmd(server_bin())
            .arg("serve")
            .env(
                "COUNTERSIGN_SMTP_URL",
                format!("smtp://127.0.0.1:{smtp_port}"),
            )
            .env(
                "COUNTERSIGN_SMTP_FROM",
                "Countersign <countersign@example.org>",
            )
            .env("COUNTERSIGN_OIDC_ISSUER", format!("http://{idp_addr}"))
            // The one client the test provider knows
            // (`countersign_test_idp::CLIENT_ID` / `CLIENT_SECRET`).
            .env("COUNTERSIGN_OIDC_CLIENT_ID", "countersign-test")
            .env("COUNTERSIGN_OIDC_CLIENT_SECRET", "test-client-secret-5f1c")
            .env("COUNTERSIGN_OIDC_BUTTON_LABEL", "Sign in with Firm ID")
            .env("COUNTERSIGN_OIDC_ALLOWED_DOMAINS", "firm.example")
            .env("DATABASE_URL", cluster.url("countersign_app", None, "e2e"))
            .env(
                "COUNTERSIGN_MIGRATION_DATABASE_URL",
                cluster.url("countersign_owner", None, "e2e"),
            )
            .env("COUNTERSIGN_BIND", format!("127.0.0.1:{port}"))
            .env("COUNTERSIGN_STATIC_DIR", web::site_dir())
            .env("RUST_LOG", "warn")
            .env(
                "COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS",
                format!("{demo_addr},{oauth_demo_addr}"),
            )
            .env(
                "COUNTERSIGN_DEMO_CONNECTOR_URL",
                format!("http://{demo_addr}/mcp"),
            )
            // Slow enough to reload, open a second tab or press Stop mid-reply.
            .env("COUNTERSIGN_DEMO_WORD_DELAY_MS", "150")
            .env(
                "COUNTERSIGN_SECRET_KEY",
                "4e2f1c9d8b7a6f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6",
            )
            // Every spec signs up its own users from 127.0.0.1: the per-IP
            // sign-up limit (10 a window by default) would stop the suite.
            .env("COUNTERSIGN_SIGNUP_MAX_PER_IP", "1000")
            // Short enough for the expiry test to wait out, long enough
            // for every other test to click in time.
            .env("COUNTERSIGN_APPROVAL_TTL_SECS", "40")
            .env("COUNTERSIGN_APPROVAL_WAIT_SECS", E2E_APPROVAL_WAIT_SECS)
            .env(
                "COUNTERSIGN_APPROVAL_KEY",
                "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90",
            ),
    );
    let mut server = match server {
        Ok(server) => server,
        Err(err) => {
            terminate(&mut idp);
            terminate(&mut sink);
            terminate(&mut oauth_demo);
            terminate(&mut demo);
            return Err(err);
        }
    };
    let base_url = format!("http://127.0.0.1:{port}");
    let result =
        wait_for_http(port, "/readyz", &mut server, Duration::from_secs(60)).and_then(|()| {
            // The instance's administrator, made by the operator's command
            // before anyone signs up (so every spec's account is not one):
            // admin.spec signs in with the one-time password and must
            // choose a new one first.
            let created = output(
                cmd(server_bin())
                    .args(["user", "create", E2E_ADMIN, "--admin"])
                    .env("DATABASE_URL", cluster.url("countersign_app", None, "e2e"))
                    .env("RUST_LOG", "warn"),
            )?;
            let one_time = created
                .lines()
                .find_map(|line| line.strip_prefix("one-time password: "))
                .ok_or_else(|| anyhow::anyhow!("`countersign user create` printed no password"))?
                .to_owned();
            run_counting(
                cmd("npx")
                    .args(["playwright", "test"])
                    .args(playwright_args)
                    .current_dir(crate::root().join("e2e"))
                    .env("COUNTERSIGN_E2E_ADMIN_EMAIL", E2E_ADMIN)
                    .env("COUNTERSIGN_E2E_ADMIN_PASSWORD", one_time)
                    .env("COUNTERSIGN_E2E_BASE_URL", &base_url)
                    .env("COUNTERSIGN_E2E_APPROVAL_WAIT_SECS", E2E_APPROVAL_WAIT_SECS)
                    .env("COUNTERSIGN_E2E_DEMO_ADMIN", format!("http://{demo_addr}"))
                    .env("COUNTERSIGN_E2E_MAIL_LOG", &mail_log)
                    .env("COUNTERSIGN_E2E_IDP", format!("http://{idp_addr}"))
                    .env(
                        "COUNTERSIGN_E2E_OAUTH_DEMO",
                        format!("http://{oauth_demo_addr}"),
                    ),
                counts,
            )
        });
    terminate(&mut server);
    terminate(&mut idp);
    terminate(&mut sink);
    terminate(&mut oauth_demo);
    terminate(&mut demo);
    result
}
