//! What a bench reports (`cargo xtask bench`, issue 13 item 5): each figure
//! is printed, and appended as one JSON object per line to the file named
//! by `COUNTERSIGN_BENCH_REPORT` (the xtask sets it), which the xtask turns
//! into the table `figure | Countersign | anchor | ratio` and
//! `target/bench/latest.json`. An anchor is the same thing measured in the
//! same run on something to compare with (the provider directly, Express 4,
//! the poll-only design), so the ratio survives a noisy, shared machine.
//! Figures are never asserted.

use serde_json::json;
use std::io::Write as _;

/// One figure; smaller is better for every figure here.
#[derive(Debug)]
pub struct Figure<'a> {
    pub name: &'a str,
    pub unit: &'a str,
    pub value: f64,
    /// What it is compared with, measured in the same run, and its value.
    pub anchor: Option<(&'a str, f64)>,
    /// The budget for it, in `unit`.
    pub budget: Option<f64>,
}

/// Prints `figure` and appends it to the report file.
pub fn report(figure: &Figure<'_>) {
    let anchor = figure
        .anchor
        .map(|(name, value)| {
            format!(
                " (anchor {name}: {value:.2} {}, ratio {:.2})",
                figure.unit,
                figure.value / value.max(1e-9)
            )
        })
        .unwrap_or_default();
    println!(
        "  → {}: {:.2} {}{anchor}",
        figure.name, figure.value, figure.unit
    );
    let Some(path) = std::env::var_os("COUNTERSIGN_BENCH_REPORT") else {
        return;
    };
    let line = json!({
        "figure": figure.name,
        "unit": figure.unit,
        "value": figure.value,
        "anchor": figure.anchor.map(|(name, _)| name),
        "anchor_value": figure.anchor.map(|(_, value)| value),
        "ratio": figure.anchor.map(|(_, value)| figure.value / value.max(1e-9)),
        "budget": figure.budget,
    });
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("the bench report file");
    writeln!(file, "{line}").expect("write the bench report");
}

/// `cargo xtask bench memory`: only the memory figures
/// (`COUNTERSIGN_BENCH_ONLY=memory`); the timing phases are skipped.
pub fn only_memory() -> bool {
    std::env::var("COUNTERSIGN_BENCH_ONLY").is_ok_and(|only| only == "memory")
}

/// `cargo xtask bench latency`: only the timing figures with nothing else
/// loaded (`COUNTERSIGN_BENCH_ONLY=latency`): time to first token and
/// decision → execution with one call waiting.
pub fn only_latency() -> bool {
    std::env::var("COUNTERSIGN_BENCH_ONLY").is_ok_and(|only| only == "latency")
}
