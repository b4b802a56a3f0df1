//! `cargo xtask bench`: the server's figures (time to first token it adds,
//! memory per idle stream beside Express 4's, approval decision → execution
//! with NOTIFY beside poll-only and with 1,000 calls waiting, database load
//! and memory with 1,000 waiting approvals), printed, never asserted; then
//! the table `figure | Countersign | anchor | ratio | budget`, also written
//! as JSON to `target/bench/latest.json`. See `backend/benches/turns.rs`
//! and `backend/benches/approvals.rs` for what is measured and how, and
//! `backend/benches/report.rs` for the report lines they write.

use crate::{
    pg::StopOnDrop,
    pg::throwaway_cluster,
    proc::{cmd, run},
    tools,
};
use anyhow::Context as _;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The Express 4 anchor: one `text/event-stream` response per client and a
/// keep-alive comment every 15 s, as a minimal Node SSE server is written.
const EXPRESS_SSE: &str = r"// Written by `cargo xtask bench`: the idle-stream anchor.
const express = require('express');
const app = express();
app.get('/stream', (req, res) => {
  res.writeHead(200, {
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-cache',
    Connection: 'keep-alive',
  });
  res.write(': open\n\n');
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), 15000);
  req.on('close', () => clearInterval(keepAlive));
});
// The line the bench waits for.
const server = app.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
";

/// `npm install express@4` into `dir` (once) and the script beside it,
/// which listens on a free loopback port and prints `listening PORT`.
fn express_anchor(dir: &Path) -> anyhow::Result<PathBuf> {
    tools::ensure_node()?;
    std::fs::create_dir_all(dir)?;
    if !dir.join("node_modules/express/package.json").exists() {
        run(cmd("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--no-save",
                "express@4",
            ])
            .current_dir(dir))
        .context("npm install express@4 (the bench's anchor)")?;
    }
    let script = dir.join("sse.js");
    std::fs::write(&script, EXPRESS_SSE)?;
    Ok(script)
}

/// Builds the release server, starts a scratch Postgres and runs the bench:
/// every figure, or with `memory` (`cargo xtask bench memory`) only the
/// memory ones (idle streams and their anchors, 1,000 waiting approvals and
/// decision → execution while they wait), or with `latency` only time to
/// first token and decision → execution with one call waiting, for
/// iterating on them.
pub fn bench(args: &[String]) -> anyhow::Result<()> {
    let only = match args {
        [] => "",
        [mode] if mode == "memory" || mode == "latency" => mode.as_str(),
        _ => anyhow::bail!("usage: cargo xtask bench [memory | latency]"),
    };
    run(cmd("cargo").args(["build", "--release", "-p", "countersign"]))?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::root().join("target"));
    let server = target.join("release/countersign");
    let out = target.join("bench");
    let express = express_anchor(&out.join("express"))?;
    let report = out.join("figures.jsonl");
    if report.exists() {
        std::fs::remove_file(&report)?;
    }
    let cluster = throwaway_cluster("pg-bench")?;
    let _stop = StopOnDrop(&cluster);
    // 10,000 streams (and as many client sockets) need more than the
    // default 1,024 file descriptors: as many as the hard limit allows.
    run(cmd("sh")
        .args([
            "-c",
            "ulimit -n \"$(ulimit -Hn)\"; \
             cargo bench -q -p countersign --bench turns && \
             exec cargo bench -q -p countersign --bench approvals",
        ])
        .env("COUNTERSIGN_TEST_SUPERUSER_URL", cluster.superuser_url())
        .env("COUNTERSIGN_BENCH_SERVER", server)
        .env("COUNTERSIGN_BENCH_EXPRESS", &express)
        .env("COUNTERSIGN_BENCH_REPORT", &report)
        .env("COUNTERSIGN_BENCH_ONLY", only))?;

    let figures: Vec<Value> = std::fs::read_to_string(&report)
        .context("the benches wrote no figures")?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    println!("\n{}", table(&figures));
    let latest = out.join("latest.json");
    std::fs::write(
        &latest,
        serde_json::to_string_pretty(&json!({
            "cores": std::thread::available_parallelism().map_or(0, usize::from),
            "figures": figures,
        }))?,
    )?;
    println!(
        "(figures from `cargo xtask bench` on this machine, also in {}; shared and noisy: \
         read the ratios, measured in the same run)",
        latest.display()
    );
    Ok(())
}

/// A ratio with three significant digits or so: `2.39`, `32.5`, `0.0047`
/// (the NOTIFY design against the poll-only one is not "0.00").
fn ratio_text(ratio: f64) -> String {
    if ratio >= 10.0 {
        format!("{ratio:.1}")
    } else if ratio >= 0.1 {
        format!("{ratio:.2}")
    } else {
        format!("{ratio:.4}")
    }
}

/// The figures as a Markdown table.
fn table(figures: &[Value]) -> String {
    let number = |v: &Value, unit: &str| {
        v.as_f64()
            .map_or_else(|| "–".to_owned(), |x| format!("{x:.2} {unit}"))
    };
    let mut lines = vec![
        "| figure | Countersign | anchor | ratio | budget |".to_owned(),
        "|---|---|---|---|---|".to_owned(),
    ];
    for f in figures {
        let unit = f["unit"].as_str().unwrap_or("");
        let anchor = match f["anchor"].as_str() {
            Some(name) => format!("{name}: {}", number(&f["anchor_value"], unit)),
            None => "–".to_owned(),
        };
        let ratio = f["ratio"]
            .as_f64()
            .map_or_else(|| "–".to_owned(), ratio_text);
        let budget = match (f["budget"].as_f64(), f["value"].as_f64()) {
            (Some(budget), Some(value)) => format!(
                "≤ {budget:.1} {unit} ({})",
                if value <= budget { "met" } else { "not met" }
            ),
            _ => "–".to_owned(),
        };
        lines.push(format!(
            "| {} | {} | {anchor} | {ratio} | {budget} |",
            f["figure"].as_str().unwrap_or("?"),
            number(&f["value"], unit),
        ));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_shows_ratio_and_budget() {
        let figures = [
            json!({"figure": "per stream", "unit": "KiB", "value": 4.0,
                   "anchor": "Express 4", "anchor_value": 16.0, "ratio": 0.25, "budget": 8.0}),
            json!({"figure": "per approval", "unit": "KiB", "value": 20.0,
                   "anchor": null, "anchor_value": null, "ratio": null, "budget": 16.0}),
        ];
        let table = table(&figures);
        assert!(
            table.contains(
                "| per stream | 4.00 KiB | Express 4: 16.00 KiB | 0.25 | ≤ 8.0 KiB (met) |"
            )
        );
        assert!(table.contains("| per approval | 20.00 KiB | – | – | ≤ 16.0 KiB (not met) |"));
        assert_eq!(ratio_text(7.12 / 1511.09), "0.0047");
        assert_eq!(ratio_text(28.01), "28.0");
    }
}
