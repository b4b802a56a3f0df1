//! The corpus's figures as JSON lines, one per scenario and
//! configuration, for `cargo xtask eval` to tabulate: to the file named by
//! `COUNTERSIGN_EVAL_REPORT`, else `target/eval/provenance.jsonl` beside
//! the test binary's target folder. The file is written whole once the
//! runs are done (one test writes it).

use super::runner::Outcome;
use serde_json::{Value, json};
use std::path::PathBuf;

/// The variable naming the report file.
pub const REPORT_VAR: &str = "COUNTERSIGN_EVAL_REPORT";

/// Where the rows go.
pub fn path() -> PathBuf {
    if let Some(path) = std::env::var_os(REPORT_VAR) {
        return path.into();
    }
    // target/debug/deps/api-… → target/eval/.
    let exe = std::env::current_exe().expect("the test binary's path");
    let target = exe
        .ancestors()
        .nth(3)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target"));
    target.join("eval").join("provenance.jsonl")
}

/// One row.
pub fn row(o: &Outcome) -> Value {
    let s = &o.scenario;
    json!({
        "scenario": s.id,
        "suite": s.suite.as_str(),
        "class": s.class.as_str(),
        "kind": s.kind,
        "config": o.config.as_str(),
        "grant": o.grant.map(|g| g.as_str()),
        "document": s.read.map(|d| d.key),
        "injection_style": s.read.and_then(|d| d.injection).map(|i| i.as_str()),
        "from": s.read.map(|d| format!("{}: {}", d.conn.name(), d.tool)),
        "to": format!("{}: {}", s.send.0.name(), s.send.1),
        "expected_flag": s.expected_flag,
        "proposed": o.proposed,
        "flagged": o.flagged(),
        "data_matched": !o.data_spans().is_empty(),
        "data_encodings": data_encodings(o),
        "matched": matched(o),
        "asked": o.asked(),
        "ran_without_card": o.send_executions,
        "other_executions": o.other_executions,
        "read_contains_instructions": o.read_contains_instructions(),
        "instructions_in": o.instructions_in(),
        "reason": o.card.as_ref().and_then(|c| c["reason"].as_str()),
        "flows": o.flows(),
        "arguments": o.arguments,
        "turn_status": o.turn_status,
    })
}

/// The encodings the data was matched under (`plain`, `base64`, …), each
/// once.
fn data_encodings(o: &Outcome) -> Vec<String> {
    let mut out: Vec<String> = o.data_spans().into_iter().map(|(_, e)| e).collect();
    out.sort();
    out.dedup();
    out
}

/// Each argument the card traced to a tool result or the user: its path,
/// origin and the encodings of its spans — where a flag came from.
fn matched(o: &Outcome) -> Vec<Value> {
    let values = o
        .card
        .as_ref()
        .and_then(|c| c["provenance"]["values"].as_array())
        .cloned()
        .unwrap_or_default();
    values
        .iter()
        .filter(|v| v["origin"] != "model")
        .map(|v| {
            let encodings: Vec<&Value> = v["spans"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| &s["encoding"])
                .collect();
            json!({"path": v["path"], "origin": v["origin"], "encodings": encodings})
        })
        .collect()
}

/// Writes every row, replacing the file.
pub fn write(outcomes: &[Outcome]) -> PathBuf {
    let path = path();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("the report's folder");
    }
    let mut text = String::new();
    for o in outcomes {
        text.push_str(&row(o).to_string());
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    path
}
