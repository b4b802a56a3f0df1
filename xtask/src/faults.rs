//! `cargo xtask faults`: the fault harness of issue 15. It breaks things on
//! purpose — MCP servers that die, hang and lie, Postgres restarts, a
//! killed server, several instances behind a load balancer, a fuzzed API,
//! hostile URLs, load — and prints one table: scenario | expected |
//! observed | holds, ending with `N passed, N failed`.
//!
//! Each scenario is a test in `backend/tests/api/faults/` that writes its
//! row through `backend/tests/support/faults.rs` (JSON lines in
//! `target/faults/report.jsonl`). The fast ones are plain tests, so
//! `cargo xtask test` runs them too; the slow ones are
//! `#[ignore = "slow, issue 15: run by cargo xtask faults"]` and run only here. A test that
//! fails before it writes its row still gets one (`panicked`).

use crate::{
    interop,
    pg::{StopOnDrop, throwaway_cluster},
    proc::{cmd, describe, on_path, output, run},
    run::server_bin,
    tools,
};
use anyhow::Context as _;
use std::{
    io::{BufRead as _, BufReader},
    path::Path,
    process::Stdio,
};

/// The test binaries that hold fault scenarios; every scenario's path
/// contains `faults::`.
const TEST_BINARIES: &[&str] = &["api"];

/// One row of the table, as the scenarios write it.
#[derive(Debug)]
struct Row {
    /// The test that wrote it (libtest's thread name), if known.
    test: Option<String>,
    scenario: String,
    expected: String,
    observed: String,
    holds: bool,
}

impl Row {
    fn parse(line: &str) -> anyhow::Result<Self> {
        let v: serde_json::Value =
            serde_json::from_str(line).with_context(|| format!("a bad row: {line}"))?;
        let text = |key: &str| -> anyhow::Result<String> {
            Ok(v[key]
                .as_str()
                .with_context(|| format!("a row without `{key}`: {line}"))?
                .to_owned())
        };
        Ok(Self {
            test: v["test"].as_str().map(str::to_owned),
            scenario: text("scenario")?,
            expected: text("expected")?,
            observed: text("observed")?,
            holds: v["holds"]
                .as_bool()
                .with_context(|| format!("a row without `holds`: {line}"))?,
        })
    }
}

/// Runs every scenario and prints the table.
pub fn faults() -> anyhow::Result<()> {
    let root = crate::root();
    let out = root.join("target/faults");
    std::fs::create_dir_all(&out)?;
    let report = out.join("report.jsonl");
    if report.exists() {
        std::fs::remove_file(&report)?;
    }

    let cluster = throwaway_cluster("pg-faults")?;
    let _stop = StopOnDrop(&cluster);
    let interop_dir = interop::prepare()?;
    let schemathesis = interop::prepare_schemathesis()?;
    let pg_bin = tools::postgres_bin_dir()?;
    let haproxy = ensure_haproxy()?;
    // The MCP fault scenarios kill a real demo server process.
    run(cmd("cargo").args(["build", "-p", "countersign-demo-mcp"]))?;
    let demo_bin = server_bin().with_file_name("countersign-demo-mcp");

    // The load scenario measures the release build, as the bench does.
    run(cmd("cargo").args(["build", "--release", "-p", "countersign"]))?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"));

    // 10,000 streams (and as many client sockets) need more than the
    // default 1,024 file descriptors: as many as the hard limit allows.
    let mut cargo_test =
        String::from("ulimit -n \"$(ulimit -Hn)\"; exec cargo test -p countersign");
    for binary in TEST_BINARIES {
        cargo_test.push_str(" --test ");
        cargo_test.push_str(binary);
    }
    // One scenario at a time: each measures, and several start servers.
    cargo_test.push_str(" -- faults:: --include-ignored --test-threads=1");
    let mut test = cmd("sh");
    test.args(["-c", &cargo_test])
        .env(
            "COUNTERSIGN_FAULTS_SERVER",
            target.join("release/countersign"),
        )
        .env("COUNTERSIGN_TEST_SUPERUSER_URL", cluster.superuser_url())
        .env("COUNTERSIGN_INTEROP_DIR", &interop_dir)
        .env("COUNTERSIGN_FAULTS_REPORT", &report)
        .env("COUNTERSIGN_FAULTS_PG_BIN", &pg_bin)
        .env("COUNTERSIGN_FAULTS_HAPROXY", &haproxy)
        .env("COUNTERSIGN_DEMO_MCP_BIN", &demo_bin)
        .env("COUNTERSIGN_FAULTS_SCHEMATHESIS", &schemathesis);
    let failed_tests = run_reading_failures(&mut test)?;

    let mut rows = read_rows(&report)?;
    for name in failed_tests {
        // A failing check wrote its own row; a panic elsewhere did not.
        if !rows
            .iter()
            .any(|r| !r.holds && r.test.as_deref() == Some(name.as_str()))
        {
            rows.push(Row {
                test: Some(name.clone()),
                scenario: name.rsplit("::").next().unwrap_or(&name).replace('_', " "),
                expected: "the scenario runs to its checks".into(),
                observed: format!("test `{name}` panicked before writing its row (see above)"),
                holds: false,
            });
        }
    }
    print_table(&rows);
    let failed = rows.iter().filter(|r| !r.holds).count();
    println!("\n{} passed, {failed} failed", rows.len() - failed);
    if failed > 0 {
        anyhow::bail!("{failed} fault scenario(s) did not hold");
    }
    Ok(())
}

/// HAProxy, the load balancer of the several-instances scenario: Debian's
/// package, installed when missing.
fn ensure_haproxy() -> anyhow::Result<std::path::PathBuf> {
    if !on_path("haproxy") {
        tools::apt_install(&["haproxy"])?;
    }
    let path = output(cmd("sh").args(["-c", "command -v haproxy"]))?;
    Ok(path.trim().into())
}

/// Runs `c`, echoing its output, and returns the names of the tests that
/// libtest reported `FAILED`.
fn run_reading_failures(c: &mut std::process::Command) -> anyhow::Result<Vec<String>> {
    let what = describe(c);
    println!("$ {what}");
    let mut child = c
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start `{what}`"))?;
    let stdout = child.stdout.take().context("no stdout")?;
    let mut failed = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        println!("{line}");
        if let Some(name) = line
            .strip_prefix("test ")
            .and_then(|rest| rest.strip_suffix(" ... FAILED"))
        {
            failed.push(name.to_owned());
        }
    }
    let status = child.wait()?;
    if !status.success() && failed.is_empty() {
        anyhow::bail!("`{what}` failed ({status}) before any scenario ran");
    }
    Ok(failed)
}

fn read_rows(report: &Path) -> anyhow::Result<Vec<Row>> {
    let text = match std::fs::read_to_string(report) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(err).context(format!("cannot read {}", report.display())),
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(Row::parse)
        .collect()
}

/// A Markdown table, so the output can be pasted into a note.
fn print_table(rows: &[Row]) {
    println!("\n| scenario | expected | observed | holds |");
    println!("|---|---|---|---|");
    for r in rows {
        let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
        println!(
            "| {} | {} | {} | {} |",
            cell(&r.scenario),
            cell(&r.expected),
            cell(&r.observed),
            if r.holds { "yes" } else { "**no**" }
        );
    }
}
