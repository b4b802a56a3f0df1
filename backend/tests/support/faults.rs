//! One row of `cargo xtask faults`' table: scenario | expected | observed |
//! holds. A scenario states what must hold, what it saw (with its figures),
//! and whether the two agree; [`check`] writes the row and then fails the
//! test when it does not hold, so the same scenario is an ordinary test in
//! `cargo xtask test` and a row in the fault table.
//!
//! Rows go to the file named by `COUNTERSIGN_FAULTS_REPORT` (JSON lines,
//! appended: tests run in parallel, and each row is one `write` of a line
//! well under `PIPE_BUF`). Without the variable, rows are only printed.
//!
//! Pulled into each test crate that has fault scenarios with
//! `#[path = "../support/faults.rs"] mod faults_report;`.

#![allow(
    dead_code,
    reason = "one file compiled into several test crates, each using only part of it"
)]

use std::io::Write as _;

/// The variable naming the report file.
pub const REPORT_VAR: &str = "COUNTERSIGN_FAULTS_REPORT";

/// Writes the row, then panics with it unless `holds`.
#[track_caller]
pub fn check(scenario: &str, expected: &str, observed: &str, holds: bool) {
    // libtest runs each test on a thread named after it; `cargo xtask
    // faults` matches failed tests to their rows by it.
    let test = std::thread::current().name().map(str::to_owned);
    let row = serde_json::json!({
        "test": test,
        "scenario": scenario,
        "expected": expected,
        "observed": observed,
        "holds": holds,
    });
    println!("fault row: {row}");
    if let Some(path) = std::env::var_os(REPORT_VAR) {
        let mut line = row.to_string();
        line.push('\n');
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(err) = written {
            panic!("cannot append to {}: {err}", path.to_string_lossy());
        }
    }
    assert!(
        holds,
        "{scenario}: expected {expected}; observed {observed}"
    );
}
