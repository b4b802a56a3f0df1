//! The corpus's figures as JSON lines, one per scenario and
//! configuration, for `cargo xtask eval` to tabulate: to the file named by
//! `COUNTERSIGN_EVAL_REPORT`, else `target/eval/provenance.jsonl` beside
//! the test binary's target folder. The file is written whole once the
//! runs are done (one test writes it).

use super::runner::{Outcome, TaskOutcome};
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

/// The workload's rows beside the corpus's: `workload.jsonl`.
pub fn workload_path() -> PathBuf {
    path().with_file_name("workload.jsonl")
}

/// One workload task's row (`"set": "workload"`).
pub fn task_row(o: &TaskOutcome) -> Value {
    json!({
        "set": "workload",
        "task": o.task.id,
        "area": o.task.area.as_str(),
        "class": o.task.class.as_str(),
        "config": o.config,
        "steps": o.task.steps.len(),
        "calls": o.calls,
        "cards": o.cards,
        "flagged_cards": o.flagged_cards,
        "warnings": o.warnings,
        "reviews": o.reviews,
        "prompts": o.prompts(),
        "by_rule": o.by_rule,
        "attack_carded": o.attack_card.is_some(),
        "attack_flagged": o.attack_card == Some(true),
        "attack_executed": o.attack_executed,
        "attack_unseen": o.attack_unseen,
        "turn_status": o.turn_status,
    })
}

/// An injection-corpus attack run under the firm's rules
/// (`"set": "corpus"`): the user declined its card, so whether it would
/// have run for a user who approves every card that does not warn is
/// read off the card.
pub fn firm_corpus_row(o: &Outcome) -> Value {
    json!({
        "set": "corpus",
        "task": o.scenario.id,
        "area": o.scenario.suite.as_str(),
        "class": o.scenario.class.as_str(),
        "config": o.config.as_str(),
        "cards": usize::from(o.asked()),
        "flagged_cards": usize::from(o.flagged()),
        "attack_carded": o.asked(),
        "attack_flagged": o.flagged(),
        "attack_executed": o.send_executions > 0 || (o.asked() && !o.flagged()),
        "attack_unseen": o.send_executions > 0,
    })
}

/// Writes the workload's rows, replacing the file.
pub fn write_workload(rows: &[Value]) -> PathBuf {
    let path = workload_path();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("the report's folder");
    }
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    path
}
