//! The activity page's table (DESIGN §5, issue item "Activity"): the log's
//! entries (`GET /api/activity`, newest first) grouped into one row per
//! proposed call, and the words for what decided it and how it ended.
//!
//! Plain Rust, tested on the host. The log carries a digest of each call's
//! arguments and never the arguments, so neither does anything here; the
//! decision and the outcome are the server's, only put into words.

use std::collections::HashMap;

use countersign_api::{
    ActivityDecision, ActivityEntry, ActivityFilter, ActivityKind, ActivityOutcome, Destination,
    GrantKind, ResultReviewStatus, RuleRef, RuleScope,
};

/// One proposed call: its log entries folded together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRow {
    /// What the call's entries share.
    pub call_ref: String,
    /// When it was first logged (RFC 3339): decided, or proposed.
    pub at: String,
    /// The chat it was proposed in (its row links there).
    pub chat_id: String,
    /// The connector's name then.
    pub connector_name: String,
    /// The tool's name on its server.
    pub tool_name: String,
    /// SHA-256 (hex) of the arguments' canonical JSON.
    pub arguments_digest: String,
    /// What decided it, as the log says (`approved`, `denied`, `expired`,
    /// or the rule: `turn_grant`, `always_grant`, `trusted_annotations`).
    pub decision: Option<ActivityDecision>,
    /// With `approved`: `once`, `turn` or `always`.
    pub grant: Option<GrantKind>,
    /// With `rule` and `denied_by_rule`: the rule that decided.
    pub rule: Option<RuleRef>,
    /// How it ended, by its latest entry: `running`, `not_run`, `ok`,
    /// `error`.
    pub outcome: ActivityOutcome,
    /// Why, when not ok.
    pub error: Option<String>,
    /// How long it ran.
    pub duration_ms: Option<u64>,
    /// Where it sends data (from its `decided` entry).
    pub destinations: Vec<Destination>,
    /// Its provenance flagged a flow of chat data to a destination.
    pub flagged: bool,
    /// The flagged flows in words.
    pub flows: Vec<String>,
    /// Whose call it was, in the administrators' view across accounts.
    pub user_email: Option<String>,
    /// How the review of its result ended, when it waited for one (its
    /// `result_reviewed` entry).
    pub result_review: Option<ResultReviewStatus>,
    /// The first entry's place in the chain (rows are ordered by it).
    first_seq: i64,
}

/// Folds the log's call entries (any order) into one row per `call_ref`,
/// the most recently started call first. A call's decision comes from its `decided`
/// entry; its outcome, error and duration from its latest entry.
pub fn group_calls(entries: &[ActivityEntry]) -> Vec<CallRow> {
    // An administrator's changes are not calls (`model::admin`).
    let mut newest_first: Vec<&ActivityEntry> = entries
        .iter()
        .filter(|entry| !crate::model::admin::is_admin_entry(entry))
        .collect();
    newest_first.sort_by_key(|entry| std::cmp::Reverse(entry.seq));
    // A result's review says how the review ended, not how the call did.
    let reviews: HashMap<&str, Option<ResultReviewStatus>> = newest_first
        .iter()
        .filter(|entry| entry.kind == ActivityKind::ResultReviewed)
        .map(|entry| (entry.call_ref.as_str(), entry.result_review))
        .collect();
    newest_first.retain(|entry| entry.kind != ActivityKind::ResultReviewed);
    let mut rows: Vec<CallRow> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for entry in newest_first {
        let row = match index.get(entry.call_ref.as_str()) {
            Some(&at) => &mut rows[at],
            None => {
                index.insert(&entry.call_ref, rows.len());
                rows.push(CallRow {
                    call_ref: entry.call_ref.clone(),
                    at: entry.at.clone(),
                    chat_id: entry.chat_id.clone(),
                    connector_name: entry.connector_name.clone(),
                    tool_name: entry.tool_name.clone(),
                    arguments_digest: entry.arguments_digest.clone(),
                    decision: None,
                    grant: None,
                    rule: None,
                    outcome: entry.outcome,
                    error: entry.error.clone(),
                    duration_ms: entry.duration_ms,
                    destinations: Vec::new(),
                    flagged: false,
                    flows: Vec::new(),
                    user_email: entry.user_email.clone(),
                    result_review: reviews.get(entry.call_ref.as_str()).copied().flatten(),
                    first_seq: entry.seq,
                });
                rows.last_mut().expect("just pushed")
            }
        };
        // Older entries: the start time and the decision.
        row.at.clone_from(&entry.at);
        row.first_seq = entry.seq;
        if row.decision.is_none() && entry.decision.is_some() {
            row.decision = entry.decision;
            row.grant = entry.grant;
            row.rule.clone_from(&entry.rule);
        }
        // What the call sends where is on its `decided` entry.
        if row.destinations.is_empty() {
            row.destinations.clone_from(&entry.destinations);
        }
        row.flagged |= entry.flagged;
        if row.flows.is_empty() {
            row.flows.clone_from(&entry.flows);
        }
    }
    rows.sort_by_key(|row| std::cmp::Reverse(row.first_seq));
    rows
}

/// What decided a call, in words, naming the rule that did. A word this
/// build does not know (a newer server) is shown as the log's `unknown`,
/// never dropped.
pub fn decision_text(
    decision: Option<ActivityDecision>,
    grant: Option<GrantKind>,
    rule: Option<&RuleRef>,
) -> String {
    use ActivityDecision as D;
    if let (Some(D::Rule | D::DeniedByRule), Some(rule)) = (decision, rule) {
        let whose = if rule.scope == RuleScope::Admin {
            "your organisation's"
        } else {
            "your"
        };
        let what = if decision == Some(D::Rule) {
            "Allowed"
        } else {
            "Refused"
        };
        return format!(
            "{what} by {whose} rule \u{201c}{}\u{201d}",
            rule.description
        );
    }
    match (decision, grant) {
        (Some(D::Approved), Some(GrantKind::Once)) => "You allowed it once".into(),
        (Some(D::Approved), Some(GrantKind::Turn)) => "You allowed it for the turn".into(),
        (Some(D::Approved), Some(GrantKind::Always)) => "You always allowed the tool".into(),
        (Some(D::Approved), _) => "You allowed it".into(),
        (Some(D::Denied), _) => "You declined".into(),
        (Some(D::Expired), _) => "Expired without a decision".into(),
        (Some(D::TurnGrant), _) => "Rule: allowed for the turn".into(),
        (Some(D::AlwaysGrant), _) => "Rule: your always-allow".into(),
        (Some(D::TrustedAnnotations), _) => "Rule: trusted annotations".into(),
        (Some(D::Rule), _) => "Rule: allowed by a rule".into(),
        (Some(D::DeniedByRule), _) => "Rule: refused by a rule".into(),
        (Some(other @ D::Unknown), _) => other.to_string(),
        (None, _) => "Not recorded".into(),
    }
}

/// How a call ended, in words.
pub fn outcome_text(outcome: ActivityOutcome) -> String {
    match outcome {
        ActivityOutcome::Ok => "OK".into(),
        ActivityOutcome::Error => "Error".into(),
        ActivityOutcome::NotRun => "Did not run".into(),
        ActivityOutcome::Running => "Running".into(),
        other @ ActivityOutcome::Unknown => other.to_string(),
    }
}

/// How the review of a call's result ended, for its row.
pub fn result_review_text(status: ResultReviewStatus) -> &'static str {
    match status {
        ResultReviewStatus::Passed => "Result passed to the assistant after review",
        ResultReviewStatus::Redacted => "Result redacted before the assistant read it",
        ResultReviewStatus::Withheld => "Result withheld from the assistant",
        ResultReviewStatus::Expired => "Result not reviewed in time: withheld",
        _ => "Result reviewed",
    }
}

/// A destination as the table shows it: the ASCII form, and the form as
/// written beside it when that differs ("xn--bcher-kva.example
/// (bücher.example)").
pub fn destination_text(destination: &Destination) -> String {
    match &destination.unicode {
        Some(unicode) if *unicode != destination.ascii => {
            format!("{} ({unicode})", destination.ascii)
        }
        _ => destination.ascii.clone(),
    }
}

/// Whose log the page reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Scope {
    /// The caller's own (`GET /api/activity`).
    #[default]
    Own,
    /// An administrator's view: every account's.
    Everyone,
    /// An administrator's view: one account's (its id).
    Account(String),
}

impl Scope {
    /// The value of the page's "Whose activity" select.
    pub fn value(&self) -> String {
        match self {
            Self::Own => String::new(),
            Self::Everyone => "*".into(),
            Self::Account(id) => id.clone(),
        }
    }

    /// The scope a select value names.
    pub fn from_value(value: &str) -> Self {
        match value {
            "" => Self::Own,
            "*" => Self::Everyone,
            id => Self::Account(id.to_owned()),
        }
    }

    /// The administrators' view, which shows each call's account.
    pub fn is_admin_view(&self) -> bool {
        !matches!(self, Self::Own)
    }
}

/// The filter form as the person filled it in (dates as a date input
/// gives them, `YYYY-MM-DD` in their own zone).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FilterForm {
    /// First day shown.
    pub from_date: String,
    /// Last day shown.
    pub to_date: String,
    /// A connector's name.
    pub connector: String,
    /// A tool's name.
    pub tool: String,
    /// A decision word, or empty for any.
    pub decision: String,
    /// `flagged`, `unflagged`, or empty for any.
    pub flagged: String,
}

impl FilterForm {
    /// The API's filter: days from the person's midnight to the midnight
    /// after the last day (`minutes_east_at` gives their zone).
    pub fn to_filter(&self, minutes_east_at: impl Fn(f64) -> i64 + Copy) -> ActivityFilter {
        let text = |value: &str| Some(value.trim().to_owned()).filter(|v| !v.is_empty());
        ActivityFilter {
            from: crate::model::when::day_start_rfc3339(&self.from_date, false, minutes_east_at),
            to: crate::model::when::day_start_rfc3339(&self.to_date, true, minutes_east_at),
            connector: text(&self.connector),
            tool: text(&self.tool),
            decision: text(&self.decision),
            flagged: match self.flagged.as_str() {
                "flagged" => Some(true),
                "unflagged" => Some(false),
                _ => None,
            },
        }
    }
}

/// The decisions the filter offers, with their words.
pub const DECISION_CHOICES: [(ActivityDecision, &str); 6] = [
    (ActivityDecision::Approved, "You allowed it"),
    (ActivityDecision::Denied, "You declined"),
    (ActivityDecision::Expired, "Expired without a decision"),
    (ActivityDecision::TurnGrant, "Rule: allowed for the turn"),
    (ActivityDecision::AlwaysGrant, "Rule: always-allow"),
    (
        ActivityDecision::TrustedAnnotations,
        "Rule: trusted annotations",
    ),
];

/// The start of a digest, enough to tell calls apart at a glance; the
/// page shows the whole one on hover.
pub fn short_digest(digest: &str) -> String {
    const SHOWN: usize = 12;
    match digest.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{}…", &digest[..cut]),
        None => digest.to_owned(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use countersign_api::ActivityKind;

    pub(crate) fn entry(seq: i64, call_ref: &str, kind: ActivityKind) -> ActivityEntry {
        ActivityEntry {
            seq,
            hash: format!("h{seq}"),
            at: format!("2026-11-30T10:00:{seq:02}Z"),
            call_ref: call_ref.into(),
            kind,
            chat_id: "c1".into(),
            connector_id: "k1".into(),
            connector_name: "Demo".into(),
            tool_name: "search_notes".into(),
            arguments_digest: "ab".repeat(32),
            decision: None,
            grant: None,
            outcome: ActivityOutcome::Running,
            error: None,
            duration_ms: None,
            changes: Vec::new(),
            subject: None,
            user_id: String::new(),
            user_email: None,
            destinations: Vec::new(),
            flagged: false,
            flows: Vec::new(),
            filter: None,
            export: None,
            waiting: false,
            shown_arguments_digest: None,
            rule: None,
            result_review: None,
            second_approver: None,
        }
    }

    fn decided(
        seq: i64,
        call_ref: &str,
        decision: ActivityDecision,
        grant: Option<GrantKind>,
        outcome: ActivityOutcome,
    ) -> ActivityEntry {
        ActivityEntry {
            decision: Some(decision),
            grant,
            outcome,
            ..entry(seq, call_ref, ActivityKind::Decided)
        }
    }

    fn ended(
        seq: i64,
        call_ref: &str,
        outcome: ActivityOutcome,
        error: Option<&str>,
        ms: u64,
    ) -> ActivityEntry {
        ActivityEntry {
            outcome,
            error: error.map(Into::into),
            duration_ms: Some(ms),
            ..entry(seq, call_ref, ActivityKind::Outcome)
        }
    }

    #[test]
    fn entries_of_one_call_become_one_row_with_its_decision_and_outcome() {
        // As the API sends them: newest first.
        let log = vec![
            ended(5, "p3", ActivityOutcome::Error, Some("boom"), 9),
            decided(
                4,
                "p3",
                ActivityDecision::TrustedAnnotations,
                None,
                ActivityOutcome::Running,
            ),
            decided(
                3,
                "p2",
                ActivityDecision::Denied,
                None,
                ActivityOutcome::NotRun,
            ),
            ended(2, "p1", ActivityOutcome::Ok, None, 42),
            decided(
                1,
                "p1",
                ActivityDecision::Approved,
                Some(GrantKind::Once),
                ActivityOutcome::Running,
            ),
        ];
        let rows = group_calls(&log);
        let summary: Vec<_> = rows
            .iter()
            .map(|r| {
                (
                    r.call_ref.as_str(),
                    r.decision,
                    r.grant,
                    r.outcome,
                    r.duration_ms,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "p3",
                    Some(ActivityDecision::TrustedAnnotations),
                    None,
                    ActivityOutcome::Error,
                    Some(9)
                ),
                (
                    "p2",
                    Some(ActivityDecision::Denied),
                    None,
                    ActivityOutcome::NotRun,
                    None
                ),
                (
                    "p1",
                    Some(ActivityDecision::Approved),
                    Some(GrantKind::Once),
                    ActivityOutcome::Ok,
                    Some(42)
                ),
            ]
        );
        assert_eq!(rows[0].error.as_deref(), Some("boom"));
        assert_eq!(rows[2].at, "2026-11-30T10:00:01Z", "when it was decided");
    }

    #[test]
    fn a_result_review_names_how_it_ended_and_leaves_the_calls_outcome() {
        let mut ran = entry(2, "p1", ActivityKind::Outcome);
        ran.outcome = ActivityOutcome::Ok;
        ran.duration_ms = Some(40);
        let mut reviewed = entry(3, "p1", ActivityKind::ResultReviewed);
        reviewed.outcome = ActivityOutcome::Ok;
        reviewed.result_review = Some(ResultReviewStatus::Redacted);
        let rows = group_calls(&[entry(1, "p1", ActivityKind::Decided), ran, reviewed]);
        assert_eq!(rows.len(), 1, "one call, one row");
        assert_eq!(rows[0].result_review, Some(ResultReviewStatus::Redacted));
        assert_eq!(
            (rows[0].outcome, rows[0].duration_ms),
            (ActivityOutcome::Ok, Some(40))
        );
        for status in ResultReviewStatus::ALL {
            assert!(!result_review_text(*status).is_empty());
        }
    }

    #[test]
    fn rows_are_ordered_by_when_the_call_started_whatever_order_entries_come_in() {
        // p1 started first but finished after p2 started.
        let mut log = vec![
            decided(
                1,
                "p1",
                ActivityDecision::Approved,
                Some(GrantKind::Turn),
                ActivityOutcome::Running,
            ),
            decided(
                2,
                "p2",
                ActivityDecision::TurnGrant,
                None,
                ActivityOutcome::Running,
            ),
            ended(3, "p1", ActivityOutcome::Ok, None, 1500),
            ended(4, "p2", ActivityOutcome::Ok, None, 3),
        ];
        log.reverse();
        let order: Vec<_> = group_calls(&log).into_iter().map(|r| r.call_ref).collect();
        assert_eq!(order, ["p2", "p1"]);
        log.reverse();
        let order: Vec<_> = group_calls(&log).into_iter().map(|r| r.call_ref).collect();
        assert_eq!(
            order,
            ["p2", "p1"],
            "oldest-first input gives the same rows"
        );
    }

    #[test]
    fn a_call_still_running_shows_running_and_an_empty_log_no_rows() {
        let rows = group_calls(&[decided(
            7,
            "p9",
            ActivityDecision::Approved,
            Some(GrantKind::Always),
            ActivityOutcome::Running,
        )]);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].outcome, ActivityOutcome::Running);
        assert_eq!(rows[0].duration_ms, None);
        assert!(group_calls(&[]).is_empty());
    }

    #[test]
    fn decisions_and_outcomes_read_as_words() {
        let cases = [
            (
                Some(ActivityDecision::Approved),
                Some(GrantKind::Once),
                "You allowed it once",
            ),
            (
                Some(ActivityDecision::Approved),
                Some(GrantKind::Turn),
                "You allowed it for the turn",
            ),
            (
                Some(ActivityDecision::Approved),
                Some(GrantKind::Always),
                "You always allowed the tool",
            ),
            (Some(ActivityDecision::Approved), None, "You allowed it"),
            (Some(ActivityDecision::Denied), None, "You declined"),
            (
                Some(ActivityDecision::Expired),
                None,
                "Expired without a decision",
            ),
            (
                Some(ActivityDecision::TurnGrant),
                None,
                "Rule: allowed for the turn",
            ),
            (
                Some(ActivityDecision::AlwaysGrant),
                None,
                "Rule: your always-allow",
            ),
            (
                Some(ActivityDecision::TrustedAnnotations),
                None,
                "Rule: trusted annotations",
            ),
            (Some(ActivityDecision::Unknown), None, "unknown"),
            (None, None, "Not recorded"),
        ];
        for (decision, grant, want) in cases {
            assert_eq!(
                decision_text(decision, grant, None),
                want,
                "{decision:?} {grant:?}"
            );
        }
        let rule = |scope| RuleRef {
            id: "r1".into(),
            scope,
            effect: countersign_api::RuleEffect::Allow,
            description: "Allow Demo: search_notes".into(),
        };
        assert_eq!(
            decision_text(
                Some(ActivityDecision::Rule),
                None,
                Some(&rule(RuleScope::User))
            ),
            "Allowed by your rule \u{201c}Allow Demo: search_notes\u{201d}"
        );
        assert_eq!(
            decision_text(
                Some(ActivityDecision::DeniedByRule),
                None,
                Some(&rule(RuleScope::Admin))
            ),
            "Refused by your organisation's rule \u{201c}Allow Demo: search_notes\u{201d}"
        );
        assert_eq!(
            decision_text(Some(ActivityDecision::Rule), None, None),
            "Rule: allowed by a rule",
            "an older entry without its rule"
        );
        let outcomes = [
            (ActivityOutcome::Ok, "OK"),
            (ActivityOutcome::Error, "Error"),
            (ActivityOutcome::NotRun, "Did not run"),
            (ActivityOutcome::Running, "Running"),
            (ActivityOutcome::Unknown, "unknown"),
        ];
        for (outcome, want) in outcomes {
            assert_eq!(outcome_text(outcome), want, "{outcome:?}");
        }
    }

    #[test]
    fn a_newer_servers_words_are_shown_as_unknown_not_dropped() {
        let entry: ActivityEntry = serde_json::from_value(serde_json::json!({
            "seq": 1, "hash": "h", "at": "2026-11-30T10:00:01Z", "call_ref": "p1",
            "kind": "decided", "chat_id": "c1", "connector_id": "k1",
            "connector_name": "Demo", "tool_name": "search_notes",
            "arguments_digest": "ab", "decision": "something_new", "grant": null,
            "outcome": "later", "error": null, "duration_ms": null
        }))
        .expect("an entry with words this build does not know still reads");
        let rows = group_calls(&[entry]);
        assert_eq!(rows[0].decision, Some(ActivityDecision::Unknown));
        assert_eq!(
            decision_text(rows[0].decision, rows[0].grant, None),
            "unknown"
        );
        assert_eq!(outcome_text(rows[0].outcome), "unknown");
    }

    #[test]
    fn a_digest_is_shortened_for_the_table_and_short_ones_are_kept() {
        let digest = "0123456789abcdef".repeat(4);
        assert_eq!(short_digest(&digest), "0123456789ab…");
        assert_eq!(short_digest("0123456789ab"), "0123456789ab");
        assert_eq!(short_digest(""), "");
    }

    #[test]
    fn a_calls_destinations_and_flag_come_from_its_decided_entry() {
        let mut decided_entry = decided(
            1,
            "p1",
            ActivityDecision::Denied,
            None,
            ActivityOutcome::NotRun,
        );
        decided_entry.destinations = vec![Destination {
            kind: countersign_api::DestinationKind::Email,
            ascii: "partner@xn--bcher-kva.example".into(),
            unicode: Some("partner@bücher.example".into()),
            path: "/to".into(),
        }];
        decided_entry.flagged = true;
        decided_entry.flows = vec!["This sends text from Docs: read to Mail: send".into()];
        let log = vec![ended(2, "p1", ActivityOutcome::Ok, None, 5), decided_entry];
        let rows = group_calls(&log);
        assert_eq!(rows.len(), 1);
        assert!(rows[0].flagged, "the flag of the decided entry");
        assert_eq!(rows[0].flows.len(), 1);
        assert_eq!(
            destination_text(&rows[0].destinations[0]),
            "partner@xn--bcher-kva.example (partner@bücher.example)"
        );
    }

    #[test]
    fn the_form_becomes_the_apis_filter() {
        let form = FilterForm {
            from_date: "2026-12-01".into(),
            to_date: "2026-12-07".into(),
            connector: " Docs ".into(),
            tool: String::new(),
            decision: "denied".into(),
            flagged: "flagged".into(),
        };
        let filter = form.to_filter(|_| 60);
        assert_eq!(filter.from.as_deref(), Some("2026-12-01T00:00:00+01:00"));
        assert_eq!(
            filter.to.as_deref(),
            Some("2026-12-08T00:00:00+01:00"),
            "through the last day"
        );
        assert_eq!(filter.connector.as_deref(), Some("Docs"));
        assert_eq!(filter.tool, None, "blank is any");
        assert_eq!(filter.decision.as_deref(), Some("denied"));
        assert_eq!(filter.flagged, Some(true));
        assert_eq!(
            FilterForm::default().to_filter(|_| 0),
            ActivityFilter::default()
        );
        let unflagged = FilterForm {
            flagged: "unflagged".into(),
            ..FilterForm::default()
        };
        assert_eq!(unflagged.to_filter(|_| 0).flagged, Some(false));
    }

    #[test]
    fn scopes_round_trip_through_the_select() {
        for scope in [Scope::Own, Scope::Everyone, Scope::Account("u1".into())] {
            assert_eq!(Scope::from_value(&scope.value()), scope);
        }
        assert!(!Scope::Own.is_admin_view());
        assert!(Scope::Everyone.is_admin_view());
    }
}
