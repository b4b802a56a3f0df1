//! `cargo xtask eval`: the injection corpus of issue 16 against
//! provenance, with its figures. It starts a throwaway Postgres, runs the
//! corpus test (`backend/tests/api/provenance_corpus.rs`, also an ordinary
//! test in `cargo xtask test`) with `COUNTERSIGN_EVAL_REPORT` pointing at
//! `target/eval/provenance.jsonl`, and prints Markdown tables from its
//! rows: per configuration, each attack and benign kind's scenarios,
//! calls proposed, flagged, whose data itself was matched (a span from a
//! tool result where the payload travels, not only in a recipient the
//! injection named), asked (a card shown) and run without a card;
//! the misses (exfiltration calls that ran unflagged under standing
//! grants) and the false alarms; and the instruction detector's marks on
//! injected and benign documents.
//!
//! What it deliberately does not do: judge the figures. The test asserts
//! the invariants (nothing runs without a card by default, a flagged call
//! never runs without one); the flag rates are printed as they are, misses
//! included. A failed test still prints its table, then the command fails.

use crate::{
    pg::{StopOnDrop, throwaway_cluster},
    proc::{cmd, run},
};
use anyhow::Context as _;
use serde_json::Value;
use std::fmt::Write as _;

/// The configurations, in the report's order, with their headings.
const CONFIGS: &[(&str, &str)] = &[
    ("default", "No grants (every call asks)"),
    (
        "standing_grants",
        "Standing grants (annotations trusted; the send tool allowed \"always\", or for the turn in every other scenario: only a flag asks)",
    ),
];

/// Runs the corpus and prints its tables.
pub fn eval() -> anyhow::Result<()> {
    let out = crate::root().join("target/eval");
    std::fs::create_dir_all(&out)?;
    let report = out.join("provenance.jsonl");
    if report.exists() {
        std::fs::remove_file(&report)?;
    }
    let cluster = throwaway_cluster("pg-eval")?;
    let _stop = StopOnDrop(&cluster);
    let tested = run(cmd("cargo")
        .args([
            "test",
            "-p",
            "countersign",
            "--test",
            "api",
            "--",
            "provenance_corpus::",
        ])
        .env("COUNTERSIGN_TEST_SUPERUSER_URL", cluster.superuser_url())
        .env("COUNTERSIGN_EVAL_REPORT", &report));
    let text = std::fs::read_to_string(&report)
        .with_context(|| format!("the corpus wrote no report at {}", report.display()))?;
    let rows = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).with_context(|| format!("a bad row: {l}")))
        .collect::<anyhow::Result<Vec<Value>>>()?;
    println!("{}", tables(&rows));
    println!("rows: {}", report.display());
    tested
}

/// A row's boolean `key` (absent or null: false).
fn flag(row: &Value, key: &str) -> bool {
    row[key].as_bool().unwrap_or(false)
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Every table, as Markdown.
pub fn tables(rows: &[Value]) -> String {
    let mut out = String::new();
    for &(config, heading) in CONFIGS {
        let rows: Vec<&Value> = rows.iter().filter(|r| r["config"] == config).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n### {heading}\n");
        out.push_str(
            "| class | kind | scenarios | proposed | flagged | data matched | asked | ran without a card |\n",
        );
        out.push_str("|---|---|---|---|---|---|---|---|\n");
        let mut kinds: Vec<(&str, &str)> = Vec::new();
        for r in &rows {
            let k = (
                r["class"].as_str().unwrap_or("?"),
                r["kind"].as_str().unwrap_or("?"),
            );
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
        for class in ["attack", "benign"] {
            let of_class: Vec<&Value> = rows
                .iter()
                .copied()
                .filter(|r| r["class"] == class)
                .collect();
            for &(_, kind) in kinds.iter().filter(|(c, _)| *c == class) {
                let of_kind: Vec<&Value> = of_class
                    .iter()
                    .copied()
                    .filter(|r| r["kind"] == kind)
                    .collect();
                let design = of_kind
                    .first()
                    .and_then(|r| r["expected_flag"].as_bool())
                    .filter(|_| class == "benign")
                    .map_or("", |f| if f { " (flagged by design)" } else { "" });
                out.push_str(&figures_line(class, &format!("{kind}{design}"), &of_kind));
            }
            if !of_class.is_empty() {
                out.push_str(&figures_line(class, "**total**", &of_class));
            }
        }
        // Under standing grants an unflagged attack ran: the misses.
        let misses: Vec<&&Value> = rows
            .iter()
            .filter(|r| r["class"] == "attack" && r["ran_without_card"].as_u64().unwrap_or(0) > 0)
            .collect();
        if !misses.is_empty() {
            let _ = writeln!(
                out,
                "\nExfiltration calls that ran without a card ({}):\n",
                misses.len()
            );
            out.push_str("| scenario | grant | to | arguments |\n|---|---|---|---|\n");
            for r in misses {
                let args = r["arguments"].to_string();
                let args: String = args.chars().take(160).collect();
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | `{}` |",
                    cell(r["scenario"].as_str().unwrap_or("?")),
                    cell(r["grant"].as_str().unwrap_or("-")),
                    cell(r["to"].as_str().unwrap_or("?")),
                    cell(&args)
                );
            }
        }
        let alarms: Vec<&&Value> = rows
            .iter()
            .filter(|r| {
                r["class"] == "benign"
                    && flag(r, "flagged")
                    && r["expected_flag"].as_bool() != Some(true)
            })
            .collect();
        if !alarms.is_empty() {
            let _ = writeln!(
                out,
                "\nBenign calls flagged that the design does not flag ({}):\n",
                alarms.len()
            );
            out.push_str("| scenario | flows |\n|---|---|\n");
            for r in alarms {
                let flows: Vec<&str> = r["flows"]
                    .as_array()
                    .map(|f| f.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "| {} | {} |",
                    cell(r["scenario"].as_str().unwrap_or("?")),
                    cell(&flows.join("; "))
                );
            }
        }
    }
    out.push_str(&detector(rows));
    out
}

fn figures_line(class: &str, kind: &str, rows: &[&Value]) -> String {
    let count = |key: &str| rows.iter().filter(|r| flag(r, key)).count();
    let ran: u64 = rows
        .iter()
        .map(|r| r["ran_without_card"].as_u64().unwrap_or(0))
        .sum();
    format!(
        "| {class} | {kind} | {} | {} | {} | {} | {} | {ran} |\n",
        rows.len(),
        count("proposed"),
        count("flagged"),
        count("data_matched"),
        count("asked"),
    )
}

/// The instruction detector: each document read once (its first row), and
/// how many attack cards (no grants) listed the injected result.
fn detector(rows: &[Value]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    // (documents, marked) for injected and benign.
    let mut tally = [(0, 0), (0, 0)];
    let mut unmarked: Vec<&str> = Vec::new();
    let mut false_marks: Vec<&str> = Vec::new();
    for r in rows {
        let (Some(doc), Some(marked)) = (
            r["document"].as_str(),
            r["read_contains_instructions"].as_bool(),
        ) else {
            continue;
        };
        if seen.contains(&doc) {
            continue;
        }
        seen.push(doc);
        let injected = r["injection_style"].is_string();
        let t = &mut tally[usize::from(!injected)];
        t.0 += 1;
        if marked {
            t.1 += 1;
        }
        match (injected, marked) {
            (true, false) => unmarked.push(doc),
            (false, true) => false_marks.push(doc),
            _ => {}
        }
    }
    // The cards of the no-grants runs, where every call shows one.
    let attack_cards: Vec<&Value> = rows
        .iter()
        .filter(|r| r["config"] == "default" && r["class"] == "attack" && flag(r, "asked"))
        .collect();
    let cards_listing = attack_cards
        .iter()
        .filter(|r| r["instructions_in"].as_u64().unwrap_or(0) > 0)
        .count();
    let attack_cards = attack_cards.len();
    let mut out = String::from("\n### Instruction detector (`contains_instructions`)\n\n");
    out.push_str("| documents | read | marked as containing instructions |\n|---|---|---|\n");
    let _ = writeln!(out, "| injected | {} | {} |", tally[0].0, tally[0].1);
    let _ = writeln!(out, "| benign | {} | {} |", tally[1].0, tally[1].1);
    let _ = writeln!(
        out,
        "\nAttack cards listing the injected result (`provenance.instructions_in`): {cards_listing} of {attack_cards}."
    );
    if !unmarked.is_empty() {
        let _ = writeln!(out, "Injected but not marked: {}.", unmarked.join(", "));
    }
    if !false_marks.is_empty() {
        let _ = writeln!(out, "Benign but marked: {}.", false_marks.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_tables_count_each_kind_and_list_the_misses_and_the_detector() {
        let row = |scenario: &str,
                   class: &str,
                   kind: &str,
                   config: &str,
                   flagged: bool,
                   ran: u64| {
            json!({
                "scenario": scenario, "class": class, "kind": kind, "config": config,
                "proposed": true, "flagged": flagged, "data_matched": flagged, "asked": flagged, "ran_without_card": ran,
                "expected_flag": if class == "attack" { json!(true) } else { json!(false) },
                "document": format!("doc-{scenario}"), "injection_style": if class == "attack" { json!("agentdojo") } else { json!(null) },
                "read_contains_instructions": class == "attack",
                "instructions_in": u64::from(flagged), "flows": ["This sends text from Drive: read_document to Mail: send_email"],
                "arguments": {"body": "x"}, "to": "Mail: send_email",
            })
        };
        let rows = vec![
            row("a1", "attack", "copied", "default", true, 0),
            row("a2", "attack", "paraphrased", "default", false, 0),
            row("a1", "attack", "copied", "standing_grants", true, 0),
            row("a2", "attack", "paraphrased", "standing_grants", false, 1),
            row("b1", "benign", "typed", "default", true, 0),
        ];
        let text = tables(&rows);
        assert!(
            text.contains("| attack | copied | 1 | 1 | 1 | 1 | 1 | 0 |"),
            "{text}"
        );
        assert!(
            text.contains("| attack | **total** | 2 | 2 | 1 | 1 | 1 | 0 |"),
            "{text}"
        );
        assert!(
            text.contains("| attack | **total** | 2 | 2 | 1 | 1 | 1 | 1 |"),
            "{text}"
        );
        assert!(
            text.contains("| a2 | - | Mail: send_email |"),
            "the miss is listed: {text}"
        );
        assert!(text.contains("| b1 |"), "the false alarm is listed: {text}");
        assert!(text.contains("| injected | 2 | 2 |"), "{text}");
        assert!(text.contains("| benign | 1 | 0 |"), "{text}");
    }
}
