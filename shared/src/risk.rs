//! A tool's risk as its reviewed annotations declare it (DESIGN §9: "its
//! risk as the server declares it, shown plainly"), for the approval card
//! and the tool review: one pure function, so the server and the web app
//! group tools the same way.
//!
//! The hints are the server's own claims, never verified. A hint that is
//! missing reads as MCP's cautious default (`readOnlyHint` false,
//! `destructiveHint` true, `openWorldHint` true), so a tool that declares
//! nothing is the riskiest kind, never "safe". A tool is low-risk exactly
//! when [`declared_safe`] holds — the same test the gate's rule 3 applies
//! before it lets trusted annotations run a call unseen.
//!
//! This decides nothing: whether a call asks is the gate's (the server's).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::RiskFlag;

/// What the annotations say, for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolRisk {
    /// Anything but declared read-only, closed-world and non-destructive:
    /// the card is styled as risky, "Allow once" is not preselected and
    /// "Always allow" asks to confirm.
    pub risky: bool,
    /// What it declares, in order: data (`declares_nothing`,
    /// `deletes_data`, `changes_data` or `read_only`), then reach
    /// (`reaches_outside` or `stays_inside`).
    pub flags: Vec<RiskFlag>,
}

/// Whether the annotations positively declare the tool safe:
/// `readOnlyHint` is JSON `true`, `openWorldHint` is JSON `false` (omitted
/// means open world) and `destructiveHint` is absent or JSON `false`. Any
/// other value — a string `"true"`, a number, `null` — declares nothing.
pub fn declared_safe(annotations: Option<&Value>) -> bool {
    let Some(Value::Object(hints)) = annotations else {
        return false;
    };
    hints.get("readOnlyHint") == Some(&Value::Bool(true))
        && hints.get("openWorldHint") == Some(&Value::Bool(false))
        && matches!(
            hints.get("destructiveHint"),
            None | Some(Value::Bool(false))
        )
}

/// The risk the annotations (`ToolAnnotations` as reviewed) declare.
pub fn assess(annotations: Option<&Value>) -> ToolRisk {
    let hint = |name: &str| match annotations {
        Some(Value::Object(hints)) => match hints.get(name) {
            Some(Value::Bool(value)) => Some(*value),
            _ => None,
        },
        _ => None,
    };
    let (read_only, destructive, open_world) = (
        hint("readOnlyHint"),
        hint("destructiveHint"),
        hint("openWorldHint"),
    );
    let mut flags = Vec::with_capacity(2);
    if read_only.is_none() && destructive.is_none() && open_world.is_none() {
        flags.push(RiskFlag::DeclaresNothing);
    } else if destructive == Some(true) {
        // Even beside `readOnlyHint: true`: the more cautious claim wins.
        flags.push(RiskFlag::DeletesData);
    } else if read_only == Some(true) {
        flags.push(RiskFlag::ReadOnly);
    } else if destructive == Some(false) {
        flags.push(RiskFlag::ChangesData);
    } else {
        flags.push(RiskFlag::DeletesData);
    }
    flags.push(if open_world == Some(false) {
        RiskFlag::StaysInside
    } else {
        RiskFlag::ReachesOutside
    });
    ToolRisk {
        risky: !declared_safe(annotations),
        flags,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use RiskFlag::*;
    use serde_json::json;

    #[test]
    fn each_combination_of_hints_reads_as_its_flags() {
        let cases = [
            (None, true, vec![DeclaresNothing, ReachesOutside]),
            (
                Some(json!(null)),
                true,
                vec![DeclaresNothing, ReachesOutside],
            ),
            (Some(json!({})), true, vec![DeclaresNothing, ReachesOutside]),
            (
                Some(json!({"title": "Search"})),
                true,
                vec![DeclaresNothing, ReachesOutside],
            ),
            (
                // Strings are not booleans: they declare nothing.
                Some(json!({"readOnlyHint": "true", "openWorldHint": "false"})),
                true,
                vec![DeclaresNothing, ReachesOutside],
            ),
            (
                Some(json!({"readOnlyHint": true, "openWorldHint": false})),
                false,
                vec![ReadOnly, StaysInside],
            ),
            (
                Some(
                    json!({"readOnlyHint": true, "openWorldHint": false, "destructiveHint": false}),
                ),
                false,
                vec![ReadOnly, StaysInside],
            ),
            (
                Some(json!({"readOnlyHint": true})),
                true,
                vec![ReadOnly, ReachesOutside],
            ),
            (
                Some(
                    json!({"readOnlyHint": true, "openWorldHint": false, "destructiveHint": true}),
                ),
                true,
                vec![DeletesData, StaysInside],
            ),
            (
                Some(json!({"destructiveHint": false, "openWorldHint": false})),
                true,
                vec![ChangesData, StaysInside],
            ),
            (
                Some(json!({"readOnlyHint": false})),
                true,
                vec![DeletesData, ReachesOutside],
            ),
            (
                Some(json!({"openWorldHint": false})),
                true,
                vec![DeletesData, StaysInside],
            ),
            (
                Some(json!({"destructiveHint": true, "openWorldHint": true})),
                true,
                vec![DeletesData, ReachesOutside],
            ),
        ];
        for (annotations, risky, flags) in cases {
            let risk = assess(annotations.as_ref());
            assert_eq!(risk, ToolRisk { risky, flags }, "{annotations:?}");
        }
    }

    #[test]
    fn low_risk_is_exactly_what_the_gate_calls_declared_safe() {
        // Every combination of each hint absent, true, false, or a string.
        let values = [
            None,
            Some(json!(true)),
            Some(json!(false)),
            Some(json!("true")),
        ];
        for ro in &values {
            for ow in &values {
                for de in &values {
                    let mut hints = serde_json::Map::new();
                    for (name, value) in [
                        ("readOnlyHint", ro),
                        ("openWorldHint", ow),
                        ("destructiveHint", de),
                    ] {
                        if let Some(value) = value {
                            hints.insert(name.into(), value.clone());
                        }
                    }
                    let annotations = Value::Object(hints);
                    assert_eq!(
                        assess(Some(&annotations)).risky,
                        !declared_safe(Some(&annotations)),
                        "{annotations}"
                    );
                    assert_eq!(assess(Some(&annotations)).flags.len(), 2);
                }
            }
        }
    }
}
