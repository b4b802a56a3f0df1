//! The approval ledger as the API shows it (DESIGN §6): live pending calls
//! and the decision request.

use crate::vocab::{
    ActivityDecision, ActivityKind, ActivityOutcome, Decision, GrantKind, PendingCallStatus,
};
use serde::{Deserialize, Serialize};

/// `POST /api/mcp-pending-calls/{id}`: the decision, and nothing that could
/// change what runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DecideRequest {
    /// `approve` or `deny` (anything else is a 422).
    pub decision: Decision,
    /// `once` (the default); `turn` and `always` come with grants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<GrantKind>,
    /// The `arguments_digest` the card showed: a mismatch decides nothing.
    pub arguments_digest: String,
    /// On a deny: why, in the user's words. The model reads it as the
    /// tool's error, and the ledger and Activity keep it. At most
    /// [`MAX_DECLINE_REASON_CHARS`] characters (a 422 beyond).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// On an approve, "Edit and allow": the arguments to run instead of
    /// the shown ones (a JSON object). The server checks them against
    /// the tool's reviewed input schema (422 otherwise) and signs them
    /// anew; `grant` must then be `once` (or absent). The model is told
    /// the call ran with the user's edits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_arguments: Option<serde_json::Value>,
}

/// The longest decline reason the server takes, in characters.
pub const MAX_DECLINE_REASON_CHARS: usize = 1000;

/// The answer to a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DecideResponse {
    /// `approved` or `denied`; `awaiting_second` when the policy asks for
    /// a second approval, which an approver gives from their inbox.
    pub status: PendingCallStatus,
    /// With `edited_arguments`: the digest of the edited arguments, which
    /// are what runs. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_digest: Option<String>,
}

/// One live pending call (`GET /api/mcp-pending-calls`): the same evidence
/// as its `mcp_confirmation_required` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PendingCall {
    /// Ledger id: what the decision is posted to.
    pub id: String,
    /// The chat.
    pub chat_id: String,
    /// The turn waiting for it.
    pub turn_id: String,
    /// The model's id for the tool call.
    pub call_id: String,
    /// The connector.
    pub connector_id: String,
    /// Its name.
    pub connector_name: String,
    /// The tool's name on its server.
    pub tool_name: String,
    /// The exact arguments that would run.
    pub arguments: serde_json::Value,
    /// The same, pretty-printed.
    pub arguments_json: String,
    /// SHA-256 (hex) of the arguments' RFC 8785 canonical JSON.
    pub arguments_digest: String,
    /// The host the call goes to.
    pub destination: String,
    /// Why it asks.
    pub reason: String,
    /// RFC 3339; after it the call cannot be approved.
    pub expires_at: String,
    /// Seconds left when this was read (by the server's clock).
    pub expires_in_secs: f64,
    /// RFC 3339: the turn stops waiting then (never after `expires_at`).
    #[serde(default)]
    pub decide_by: String,
    /// Seconds until `decide_by` when this was read (0 once past).
    #[serde(default)]
    pub decide_in_secs: f64,
    /// The grants the card may offer (see `mcp_confirmation_required`).
    #[serde(default = "every_grant")]
    pub offered_grants: Vec<GrantKind>,
    /// Where each argument came from (see `mcp_confirmation_required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<crate::Provenance>,
    /// Arguments holding look-alike, invisible or bidi characters (as
    /// on `mcp_confirmation_required`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub character_warnings: Vec<crate::CharacterWarning>,
    /// Where the call sends data (as on `mcp_confirmation_required`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destinations: Vec<crate::Destination>,
}

/// A call waiting for a second approval, as an approver's inbox shows it
/// (`GET /api/approvals/inbox`): the card, its provenance and
/// destinations, and who asked — never the rest of their chat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SecondApproval {
    /// Ledger id: `POST /api/approvals/inbox/{id}` decides it.
    pub id: String,
    /// Who asked, and approved it first.
    pub requester_email: String,
    /// RFC 3339: when they approved it.
    pub requester_approved_at: String,
    /// The connector (its name as the requester added it).
    pub connector_name: String,
    /// The tool's name on its server.
    pub tool_name: String,
    /// The exact arguments that would run.
    pub arguments: serde_json::Value,
    /// The same, pretty-printed.
    pub arguments_json: String,
    /// SHA-256 (hex) of the arguments' RFC 8785 canonical JSON: the
    /// decision carries it back.
    pub arguments_digest: String,
    /// The host the call goes to.
    pub destination: String,
    /// Why it asked.
    pub reason: String,
    /// RFC 3339; after it the call cannot be approved.
    pub expires_at: String,
    /// Seconds left when this was read (by the server's clock).
    pub expires_in_secs: f64,
    /// Where each argument came from, and the flows that make it warn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<crate::Provenance>,
    /// Arguments holding look-alike, invisible or bidi characters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub character_warnings: Vec<crate::CharacterWarning>,
    /// Where the call sends data.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destinations: Vec<crate::Destination>,
}

/// `POST /api/approvals/inbox/{id}`: an approver's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SecondDecideRequest {
    /// `approve` or `deny`.
    pub decision: Decision,
    /// The `arguments_digest` the inbox showed: a mismatch decides nothing.
    pub arguments_digest: String,
    /// On a deny: why; the requester's model reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A call waiting for a decision as an administrator sees it
/// (`GET /api/admin/pending-calls`): whose it is, which tool, where it
/// sends data and until when it waits — never its arguments or its chat,
/// which are the user's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AdminWaitingCall {
    /// Ledger id.
    pub id: String,
    /// The account it waits for.
    pub user_id: String,
    /// That account's email.
    pub user_email: String,
    /// The connector's name.
    pub connector_name: String,
    /// The tool's name on its server.
    pub tool_name: String,
    /// RFC 3339: when it started waiting.
    pub waiting_since: String,
    /// RFC 3339: the turn stops waiting then.
    pub decide_by: String,
    /// Where the call sends data (as on `mcp_confirmation_required`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destinations: Vec<crate::Destination>,
    /// Its provenance flagged it (a flow, or instructions read earlier
    /// in its turn). Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flagged: bool,
}

/// `once`, `turn` and `always`: what a card offers unless the tool changed
/// since it was reviewed.
pub fn every_grant() -> Vec<GrantKind> {
    GrantKind::ALL.to_vec()
}

/// An always-allow rule (`GET /api/grants`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Grant {
    /// Rule id: `DELETE /api/grants/{id}` revokes it.
    pub id: String,
    /// The connector.
    pub connector_id: String,
    /// Its name.
    pub connector_name: String,
    /// The tool's name on its server.
    pub tool_name: String,
    /// The descriptor digest the user allowed.
    pub descriptor_digest: String,
    /// The tool changed since: the rule is suspended until allowed again.
    /// Also `true` while the instance's policy forbids "Always allow".
    pub suspended: bool,
    /// The instance's policy forbids "Always allow": the rule does not
    /// apply until an administrator allows it again.
    #[serde(default)]
    pub suspended_by_policy: bool,
    /// RFC 3339.
    pub created_at: String,
}

/// The schema of [`ActivityEntry::outcome`]: a word of the vocabulary, or
/// `unknown` on an administrator's entry (the fuzz test found the document
/// leaving that out).
#[cfg(feature = "openapi")]
fn entry_outcome_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Ref, Type};
    OneOfBuilder::new()
        .item(Ref::from_schema_name("ActivityOutcome"))
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(["unknown"]))
                .description(Some(
                    "On `policy_changed` and `user_changed` entries, which record no call.",
                )),
        )
        .description(Some(
            "`running`, `not_run`, `ok` or `error`; `unknown` on `policy_changed` and `user_changed` entries, which record no call.",
        ))
        .into()
}

/// One line of the activity log (`GET /api/activity`): never arguments,
/// only their digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ActivityEntry {
    /// Its place in the hash chain.
    pub seq: i64,
    /// Its chain hash.
    pub hash: String,
    /// RFC 3339, by the database's clock.
    pub at: String,
    /// Entries of one call share it (the ledger id after a card, else the
    /// model's call id).
    pub call_ref: String,
    /// `decided` or `outcome`.
    pub kind: ActivityKind,
    /// The chat.
    pub chat_id: String,
    /// The connector.
    pub connector_id: String,
    /// Its name then.
    pub connector_name: String,
    /// The tool's name on its server.
    pub tool_name: String,
    /// SHA-256 of the arguments' canonical JSON.
    pub arguments_digest: String,
    /// `approved`, `denied`, `expired`, or the rule that let it run.
    pub decision: Option<ActivityDecision>,
    /// With `approved`: `once`, `turn` or `always`.
    pub grant: Option<GrantKind>,
    /// `running`, `not_run`, `ok` or `error`; `unknown` on `policy_changed`
    /// and `user_changed` entries, which record no call (so written in the
    /// chain, which cannot change).
    #[cfg_attr(feature = "openapi", schema(schema_with = entry_outcome_schema))]
    pub outcome: ActivityOutcome,
    /// Why, when not ok.
    pub error: Option<String>,
    /// How long it ran.
    pub duration_ms: Option<u64>,
    /// `policy_changed` and `user_changed`: what an administrator changed
    /// (the entry's other call fields are empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<crate::admin::SettingChange>,
    /// `user_changed`: the account's email; `activity_read`: the account
    /// whose log was read (absent: every account's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Whose log the entry is in (a UUID): the caller's, except in the
    /// administrators' view across users. (Absent when empty: a body of
    /// an older server writes back the same bytes.)
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user_id: String,
    /// That account's email, in the administrators' view across users
    /// (`GET /api/admin/activity`); absent in a user's own log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_email: Option<String>,
    /// Where the call sends data, as its card's "Sends to" listed them
    /// (read from the signed arguments when the call was decided; the log
    /// keeps these, never the arguments). On `decided` entries; empty on
    /// entries written before issue 45 and on calls that name none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destinations: Vec<crate::Destination>,
    /// The call's provenance flagged it: text from a tool result would
    /// leave for a destination outside its source (DESIGN §5), or the
    /// call came after a result of its turn that gives the assistant
    /// instructions. On `decided` entries; such a call always asked.
    /// Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flagged: bool,
    /// Why it was flagged, in words: the flows as the card said them
    /// ("This sends text from Matter notes: read_matter to Mail: send
    /// …"), then the results that gave instructions ("This reply read
    /// text that gives the assistant instructions (…); this call may be
    /// following them").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<String>,
    /// `activity_read`: what the administrator asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<ActivityFilter>,
    /// `activity_read`: `csv` or `json` when it was an export.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<String>,
    /// `activity_read`: the calls waiting for a decision were read
    /// (`GET /api/admin/pending-calls`), not the log. Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waiting: bool,
    /// `decided`: the user edited the arguments before allowing the call
    /// ("Edit and allow"); `arguments_digest` is then the edited ones'
    /// and this the digest of those the card showed. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown_arguments_digest: Option<String>,
    /// `decided`: the rule that allowed (`decision: "rule"`) or refused
    /// (`"denied_by_rule"`) the call. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<crate::RuleRef>,
    /// `result_reviewed`: how the user's review of the call's result
    /// ended — `passed`, `redacted`, `withheld` or `expired` (withheld:
    /// nobody reviewed it in time). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_review: Option<crate::ResultReviewStatus>,
    /// `decided`, for a call the policy gave a second approver: who
    /// decided it (their e-mail), after the requester's `first_approval`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub second_approver: Option<String>,
}

/// What `GET /api/activity`, its export and the administrators' view
/// narrow the log to: every field optional, all that are given must hold.
/// A call matches as a whole (its `decided` entry decides, and its
/// `outcome` entry comes with it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema, utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
pub struct ActivityFilter {
    /// From this instant on (inclusive): RFC 3339 with its offset, or a
    /// date `YYYY-MM-DD` (its start, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Before this instant (exclusive): RFC 3339, or a date `YYYY-MM-DD`
    /// (through its end, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The connector: its id (a UUID) or its name then (any case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector: Option<String>,
    /// The tool's name on its server (any case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What decided the call: `approved`, `denied`, `expired`,
    /// `turn_grant`, `always_grant` or `trusted_annotations`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// `true`: only calls whose provenance flagged a flow; `false`: only
    /// the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flagged: Option<bool>,
}

impl ActivityFilter {
    /// Whether no field narrows anything.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The filter as a query string (`from=…&tool=…`, percent-encoded),
    /// empty when nothing is set: what the web app puts after `?`.
    pub fn query_string(&self) -> String {
        let flagged = self.flagged.map(|f| f.to_string());
        [
            ("from", self.from.as_deref()),
            ("to", self.to.as_deref()),
            ("connector", self.connector.as_deref()),
            ("tool", self.tool.as_deref()),
            ("decision", self.decision.as_deref()),
            ("flagged", flagged.as_deref()),
        ]
        .into_iter()
        .filter_map(|(key, value)| {
            let value = value?.trim();
            (!value.is_empty()).then(|| format!("{key}={}", percent_encode(value)))
        })
        .collect::<Vec<_>>()
        .join("&")
    }
}

/// `value` with everything but unreserved characters (RFC 3986)
/// percent-encoded as UTF-8.
fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Most entries an export carries (`GET /api/activity/export`): the cap
/// is stated in the file and in the `X-Row-Cap` header, and an export it
/// cut says so.
pub const EXPORT_ROW_CAP: usize = 10_000;

/// Most entries `GET /api/activity` answers with (newest first).
pub const LIST_ROW_CAP: usize = 500;

/// The JSON export of the activity log (`format=json`): the filtered
/// entries, newest first, with the cap that bounds them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ActivityExport {
    /// The most entries an export carries.
    pub row_cap: usize,
    /// What it was narrowed to.
    pub filter: ActivityFilter,
    /// RFC 3339, by the server's clock: when the export was made.
    pub exported_at: String,
    /// The entries, newest first (at most `row_cap`).
    pub rows: Vec<ActivityEntry>,
    /// How many entries `rows` holds.
    pub row_count: usize,
    /// More entries matched than the cap let through: narrow the filter
    /// (e.g. the date range) for the rest.
    pub truncated: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_becomes_a_query_string_of_what_is_set() {
        assert_eq!(ActivityFilter::default().query_string(), "");
        let filter = ActivityFilter {
            from: Some("2026-12-01T00:00:00+01:00".into()),
            tool: Some("send mail".into()),
            flagged: Some(true),
            connector: Some("  ".into()),
            ..ActivityFilter::default()
        };
        assert_eq!(
            filter.query_string(),
            "from=2026-12-01T00%3A00%3A00%2B01%3A00&tool=send%20mail&flagged=true",
            "encoded, blanks left out"
        );
        assert!(!filter.is_empty());
    }
}
