//! What Settings → Connectors shows about a connector's tools, as plain
//! Rust (unit-tested on the host): the server's safety annotations put into
//! words, what changed in a tool since the user kept it, the review the
//! "Keep these tools" button sends, the user's standing "always allow"
//! rules (a connector's count, a tool's chip), and the two risk groups the
//! list is shown in (by [`countersign_api::risk::assess`], the card's and
//! the gate's own test).
//!
//! It decides nothing about safety (`../shared/DESIGN.md` §5): annotations
//! are the server's own claims about its own tools, so they are worded as
//! such ("The server says: …") and odd values are shown as sent, never
//! coerced — `"true"` is a string, not a yes.

use countersign_api::{
    ConnectorTool, DroppedTool, ReviewState, ReviewToolsRequest, ReviewedTool, risk,
};
use serde_json::Value;

/// The MCP safety hints, with the words for `true` and `false`.
const HINTS: [(&str, &str, &str); 4] = [
    ("readOnlyHint", "read-only", "not read-only"),
    ("destructiveHint", "destructive", "not destructive"),
    ("idempotentHint", "idempotent", "not idempotent"),
    ("openWorldHint", "open world", "closed world"),
];

/// A group of the review list, by what the tools declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RiskGroup {
    /// Declared read-only, closed-world and not destructive.
    ReadOnly,
    /// Everything else: may change data or reach outside, or declares
    /// nothing.
    CanChange,
}

impl RiskGroup {
    /// Its heading.
    pub fn heading(self) -> &'static str {
        match self {
            Self::ReadOnly => "Read-only tools",
            Self::CanChange => "Tools that can change data or reach outside",
        }
    }

    /// The line under the heading.
    pub fn note(self) -> &'static str {
        match self {
            Self::ReadOnly => "They declare that they only read and stay within their server.",
            Self::CanChange => {
                "They declare that they can change or delete data, or reach outside their server, or they declare nothing (treated as the riskiest)."
            }
        }
    }

    /// A stable word for tests and ids.
    pub fn key(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::CanChange => "can-change",
        }
    }
}

/// The group a tool's annotations (as listed now, the ones under review)
/// put it in.
pub fn risk_group(tool: &ConnectorTool) -> RiskGroup {
    if risk::assess(tool.annotations.as_ref()).risky {
        RiskGroup::CanChange
    } else {
        RiskGroup::ReadOnly
    }
}

/// The tools' indices by group, read-only first, each in list order;
/// empty groups left out.
pub fn risk_groups(tools: &[ConnectorTool]) -> Vec<(RiskGroup, Vec<usize>)> {
    [RiskGroup::ReadOnly, RiskGroup::CanChange]
        .into_iter()
        .map(|group| {
            let members: Vec<usize> = tools
                .iter()
                .enumerate()
                .filter(|(_, tool)| risk_group(tool) == group)
                .map(|(index, _)| index)
                .collect();
            (group, members)
        })
        .filter(|(_, members)| !members.is_empty())
        .collect()
}

/// One sentence stating a tool's annotations as the server's claims, e.g.
/// "The server says: read-only, closed world".
pub fn annotation_claims(annotations: Option<&Value>) -> String {
    let object = match annotations {
        None | Some(Value::Null) => return "No safety annotations".into(),
        Some(Value::Object(object)) => object,
        Some(other) => {
            return format!(
                "The server sent annotations this page cannot read: {}",
                compact(other)
            );
        }
    };
    let mut plain = Vec::new();
    let mut odd = Vec::new();
    for (key, yes, no) in HINTS {
        match object.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Bool(true)) => plain.push(yes.to_owned()),
            Some(Value::Bool(false)) => plain.push(no.to_owned()),
            Some(value) => odd.push(format!(
                "{key} = {} ({}, not a yes/no)",
                compact(value),
                kind_of(value)
            )),
        }
    }
    match (plain.is_empty(), odd.is_empty()) {
        (true, true) => "No safety annotations".into(),
        (false, true) => format!("The server says: {}", plain.join(", ")),
        (true, false) => format!("The server says {}", odd.join("; ")),
        (false, false) => format!(
            "The server says: {}; and {}",
            plain.join(", "),
            odd.join("; ")
        ),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
        Value::Bool(_) | Value::Null => "a value",
    }
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Pretty JSON for showing a schema or annotations; `(none)` when absent.
pub fn pretty(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "(none)".into(),
        Some(Value::String(text)) => text.clone(),
        Some(value) => serde_json::to_string_pretty(value).unwrap_or_default(),
    }
}

/// One field of a tool that differs from the descriptor the user kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldChange {
    /// What people call the field ("Description", "Input schema", …).
    pub label: &'static str,
    /// As the user kept it.
    pub before: String,
    /// As the server lists it now.
    pub after: String,
}

/// The fields of `tool` that differ from `tool.reviewed_descriptor`, in the
/// order a person reads a tool. Empty when there is nothing to compare.
pub fn descriptor_changes(tool: &ConnectorTool) -> Vec<FieldChange> {
    let Some(kept) = tool.reviewed_descriptor.as_ref() else {
        return Vec::new();
    };
    let title = tool.title.clone().map(Value::String);
    let description = tool.description.clone().map(Value::String);
    let current: [(&'static str, &str, Option<&Value>); 4] = [
        ("Title", "title", title.as_ref()),
        ("Description", "description", description.as_ref()),
        ("Input schema", "inputSchema", Some(&tool.input_schema)),
        ("Annotations", "annotations", tool.annotations.as_ref()),
    ];
    current
        .into_iter()
        .filter_map(|(label, key, now)| {
            let before = kept.get(key).filter(|v| !v.is_null());
            let now = now.filter(|v| !v.is_null());
            (before != now).then(|| FieldChange {
                label,
                before: pretty(before),
                after: pretty(now),
            })
        })
        .collect()
}

/// Whether a tool's "Keep" box starts checked: it is on now (`kept`), or
/// was until it changed (`changed`).
pub fn starts_kept(review_state: ReviewState) -> bool {
    matches!(review_state, ReviewState::Kept | ReviewState::Changed)
}

/// The review "Keep these tools" sends: every listed tool (not the removed
/// ones) either kept or declined, each named with the descriptor digest
/// the user was shown (a tool the server changed since is then a 409).
/// `checked` is (name, digest shown, box).
pub fn review_request<'a>(
    checked: impl IntoIterator<Item = (&'a str, &'a str, bool)>,
) -> ReviewToolsRequest {
    let mut request = ReviewToolsRequest::default();
    for (name, digest, keep) in checked {
        let tool = ReviewedTool::Seen {
            name: name.to_owned(),
            descriptor_digest: digest.to_owned(),
        };
        if keep {
            request.keep.push(tool);
        } else {
            request.decline.push(tool);
        }
    }
    request
}

/// A connector's tool counts in words, e.g. "9 tools: 9 new".
pub fn counts_summary(counts: &std::collections::BTreeMap<String, i64>) -> String {
    let total: i64 = counts.values().sum();
    let parts: Vec<String> = [
        ReviewState::New,
        ReviewState::Changed,
        ReviewState::Kept,
        ReviewState::Declined,
    ]
    .into_iter()
    .filter_map(|state| {
        let n = counts.get(state.as_str()).copied().unwrap_or(0);
        (n > 0).then(|| format!("{n} {state}"))
    })
    .collect();
    let noun = if total == 1 { "tool" } else { "tools" };
    if parts.is_empty() {
        format!("{total} {noun}")
    } else {
        format!("{total} {noun}: {}", parts.join(", "))
    }
}

/// The review's first line: how many of the listed tools the assistant is
/// offered now, and, while any is new or changed, that it stays so until
/// the user reviews ("0 of 11 tools offered until you review").
pub fn offered_line(tools: &[ConnectorTool]) -> String {
    let listed: Vec<&ConnectorTool> = tools.iter().filter(|t| !t.removed).collect();
    let kept = listed
        .iter()
        .filter(|t| t.review_state == ReviewState::Kept)
        .count();
    let waiting = listed
        .iter()
        .any(|t| matches!(t.review_state, ReviewState::New | ReviewState::Changed));
    let noun = if listed.len() == 1 { "tool" } else { "tools" };
    if waiting {
        format!("{kept} of {} {noun} offered until you review", listed.len())
    } else {
        format!("{kept} of {} {noun} offered to the assistant", listed.len())
    }
}

/// A connector's standing rules in words, e.g. "2 always-allowed tools".
pub fn grant_count_text(count: i64) -> String {
    match count {
        ..=0 => "No always-allowed tools".into(),
        1 => "1 always-allowed tool".into(),
        n => format!("{n} always-allowed tools"),
    }
}

/// The Settings line for a tool the server listed that is not offered.
pub fn not_offered_line(tool: &DroppedTool) -> String {
    format!("Not offered: {} — {}", tool.name, tool.reason)
}

/// The "always allowed" chip of a tool with a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantChip {
    /// The rule: `DELETE /api/grants/{id}` revokes it.
    pub grant_id: String,
    /// The words before "Revoke".
    pub text: &'static str,
    /// The tool changed since it was allowed: the rule does not apply.
    pub suspended: bool,
}

/// The chip of `tool`, when the user has an "always allow" rule for it.
pub fn grant_chip(tool: &ConnectorTool) -> Option<GrantChip> {
    let grant_id = tool.grant_id.clone()?;
    Some(GrantChip {
        grant_id,
        text: if tool.grant_suspended {
            "always allowed — suspended: the tool changed"
        } else {
            "always allowed"
        },
        suspended: tool.grant_suspended,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_tool_reads_not_offered_with_its_reason() {
        let tool = DroppedTool {
            name: "bad_header_tool".into(),
            reason: "its input schema has an invalid x-mcp-header annotation".into(),
        };
        assert_eq!(
            not_offered_line(&tool),
            "Not offered: bad_header_tool — its input schema has an invalid x-mcp-header annotation"
        );
    }
    use serde_json::json;

    fn tool(state: ReviewState) -> ConnectorTool {
        ConnectorTool {
            name: "t".into(),
            model_name: "demo__t".into(),
            title: None,
            description: Some("new words".into()),
            input_schema: json!({"type": "object"}),
            annotations: Some(json!({"readOnlyHint": true})),
            descriptor_digest: "d".into(),
            review_state: state,
            removed: false,
            reviewed_descriptor: None,
            first_seen_at: String::new(),
            last_seen_at: String::new(),
            changed_at: None,
            grant_id: None,
            grant_suspended: false,
        }
    }

    #[test]
    fn tools_are_grouped_read_only_first_and_declaring_nothing_is_never_read_only() {
        let with = |name: &str, annotations: Option<Value>| ConnectorTool {
            name: name.into(),
            annotations,
            ..tool(ReviewState::New)
        };
        let tools = [
            with(
                "write",
                Some(json!({"readOnlyHint": false, "openWorldHint": false})),
            ),
            with(
                "read",
                Some(json!({"readOnlyHint": true, "openWorldHint": false})),
            ),
            with("nothing", None),
            with("web", Some(json!({"readOnlyHint": true}))),
            with(
                "strings",
                Some(json!({"readOnlyHint": "true", "openWorldHint": "false"})),
            ),
        ];
        assert_eq!(
            risk_groups(&tools),
            vec![
                (RiskGroup::ReadOnly, vec![1]),
                (RiskGroup::CanChange, vec![0, 2, 3, 4]),
            ]
        );
        assert_eq!(
            risk_groups(&tools[1..2]),
            vec![(RiskGroup::ReadOnly, vec![0])]
        );
        assert!(risk_groups(&[]).is_empty());
    }

    #[test]
    fn annotations_are_worded_as_the_servers_claims() {
        let cases = [
            (None, "No safety annotations", "absent"),
            (Some(json!({})), "No safety annotations", "empty object"),
            (
                Some(json!({"title": "x"})),
                "No safety annotations",
                "no hints, only a title",
            ),
            (
                Some(json!({"readOnlyHint": true, "openWorldHint": false})),
                "The server says: read-only, closed world",
                "booleans",
            ),
            (
                Some(json!({"destructiveHint": true})),
                "The server says: destructive",
                "destructive",
            ),
            (
                Some(json!({"readOnlyHint": "true"})),
                "The server says readOnlyHint = \"true\" (a string, not a yes/no)",
                "a string is not a boolean",
            ),
            (
                Some(json!({"readOnlyHint": true, "openWorldHint": 0})),
                "The server says: read-only; and openWorldHint = 0 (a number, not a yes/no)",
                "mixed",
            ),
        ];
        for (annotations, expected, why) in cases {
            assert_eq!(annotation_claims(annotations.as_ref()), expected, "{why}");
        }
    }

    #[test]
    fn only_fields_that_differ_are_listed_as_changes() {
        let mut changed = tool(ReviewState::Changed);
        changed.reviewed_descriptor = Some(json!({
            "name": "t",
            "description": "old words",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true}
        }));
        let changes = descriptor_changes(&changed);
        assert_eq!(
            changes,
            vec![FieldChange {
                label: "Description",
                before: "old words".into(),
                after: "new words".into(),
            }]
        );
        assert!(
            descriptor_changes(&tool(ReviewState::Kept)).is_empty(),
            "nothing to compare"
        );
    }

    #[test]
    fn the_review_keeps_checked_tools_and_declines_the_rest() {
        let request = review_request([("a", "da", true), ("b", "db", false), ("c", "dc", true)]);
        let names = |tools: &[ReviewedTool]| {
            tools
                .iter()
                .map(|t| (t.name().to_owned(), t.digest().map(str::to_owned)))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(&request.keep),
            vec![
                ("a".into(), Some("da".into())),
                ("c".into(), Some("dc".into()))
            ]
        );
        assert_eq!(
            names(&request.decline),
            vec![("b".into(), Some("db".into()))]
        );
        assert!(starts_kept(ReviewState::Kept) && starts_kept(ReviewState::Changed));
        assert!(!starts_kept(ReviewState::New) && !starts_kept(ReviewState::Declined));
    }

    #[test]
    fn counts_read_as_a_sentence() {
        let mut counts = std::collections::BTreeMap::new();
        counts.insert(ReviewState::New.to_string(), 9);
        counts.insert(ReviewState::Kept.to_string(), 0);
        assert_eq!(counts_summary(&counts), "9 tools: 9 new");
        assert_eq!(counts_summary(&Default::default()), "0 tools");
    }

    #[test]
    fn standing_rules_are_counted_in_words() {
        let cases = [
            (0, "No always-allowed tools"),
            (1, "1 always-allowed tool"),
            (2, "2 always-allowed tools"),
        ];
        for (count, expected) in cases {
            assert_eq!(grant_count_text(count), expected, "{count}");
        }
    }

    #[test]
    fn a_tool_with_a_rule_gets_a_chip_and_a_suspended_rule_says_so() {
        assert_eq!(
            grant_chip(&tool(ReviewState::Kept)),
            None,
            "no rule, no chip"
        );

        let mut allowed = tool(ReviewState::Kept);
        allowed.grant_id = Some("g1".into());
        assert_eq!(
            grant_chip(&allowed),
            Some(GrantChip {
                grant_id: "g1".into(),
                text: "always allowed",
                suspended: false,
            })
        );

        let mut changed = tool(ReviewState::Changed);
        changed.grant_id = Some("g2".into());
        changed.grant_suspended = true;
        let chip = grant_chip(&changed).expect("a suspended rule still shows, to revoke");
        assert_eq!(chip.text, "always allowed — suspended: the tool changed");
        assert!(chip.suspended);
        assert_eq!(chip.grant_id, "g2");
    }
}

#[cfg(test)]
mod offered_tests {
    use super::*;

    fn tool(name: &str, state: ReviewState, removed: bool) -> ConnectorTool {
        let mut tool: ConnectorTool = serde_json::from_value(serde_json::json!({
            "name": name, "model_name": name, "input_schema": {}, "descriptor_digest": "d",
            "review_state": "new", "removed": false, "first_seen_at": "t", "last_seen_at": "t"
        }))
        .expect("a tool");
        tool.review_state = state;
        tool.removed = removed;
        tool
    }

    #[test]
    fn the_review_says_how_many_tools_are_offered_and_that_new_ones_wait() {
        let new: Vec<ConnectorTool> = (0..11)
            .map(|i| tool(&format!("t{i}"), ReviewState::New, false))
            .collect();
        assert_eq!(offered_line(&new), "0 of 11 tools offered until you review");
        let reviewed = vec![
            tool("a", ReviewState::Kept, false),
            tool("b", ReviewState::Declined, false),
            tool("gone", ReviewState::Kept, true),
        ];
        assert_eq!(
            offered_line(&reviewed),
            "1 of 2 tools offered to the assistant"
        );
        let changed = vec![tool("a", ReviewState::Changed, false)];
        assert_eq!(
            offered_line(&changed),
            "0 of 1 tool offered until you review"
        );
    }
}
