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
}

/// The longest decline reason the server takes, in characters.
pub const MAX_DECLINE_REASON_CHARS: usize = 1000;

/// The answer to a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DecideResponse {
    /// `approved` or `denied`.
    pub status: PendingCallStatus,
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
    /// `user_changed`: the account's email.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}
