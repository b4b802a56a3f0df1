//! A ledger row as stored ([`Row`]), what it shows — the card's event,
//! the pending list — and its check against its own signature
//! ([`Row::verify`]). It writes nothing.

use super::keys::{ApprovalKeys, Binding};
use crate::{
    digest::{canonical, sha256_hex},
    ids::{ChatId, ConnectorId, PendingCallId, TurnId, UserId},
};
use countersign_api::{ChatEvent, GrantKind, PendingCall, PendingCallStatus, Provenance, ToolRisk};
use serde_json::Value;
use sqlx::types::Json;
use time::OffsetDateTime;

/// A ledger row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Row {
    /// Ledger id.
    pub id: PendingCallId,
    /// The only user who may decide it.
    pub user_id: UserId,
    pub chat_id: ChatId,
    /// The turn that waits for it.
    pub turn_id: TurnId,
    /// The model's call id.
    pub call_id: String,
    /// No foreign key: a connector deleted while the call waits leaves the
    /// evidence; the claim re-checks that the tool is still the user's.
    pub connector_id: ConnectorId,
    /// Its name when proposed.
    pub connector_name: String,
    /// Tool name on its server.
    pub tool_name: String,
    /// Tool name as offered to the model.
    pub model_tool_name: String,
    /// The arguments.
    pub arguments: Value,
    /// Their canonical JSON.
    pub arguments_canonical: String,
    /// Its SHA-256.
    pub arguments_digest: String,
    /// The tool's descriptor digest when proposed.
    pub descriptor_digest: String,
    /// Host the call goes to.
    pub destination: String,
    /// The connector URL at proposal: the only one it may run against.
    pub destination_url: String,
    /// Why it asks.
    pub reason: String,
    /// The grants its card offers, as stored (`text[]` of [`GrantKind`]
    /// words; read them with [`Row::offered_grants`]).
    pub offered_grants_stored: Vec<String>,
    /// Where it stands.
    pub status: PendingCallStatus,
    /// `once`, `turn` or `always` once approved, as stored (read it with
    /// [`Row::grant`]).
    pub grant_kind: Option<String>,
    /// Which key signed it.
    pub hmac_key_id: String,
    /// The tag.
    pub hmac: String,
    /// Why it failed.
    pub error: Option<String>,
    /// After this it cannot be approved.
    pub expires_at: OffsetDateTime,
    /// Its turn stops waiting then (never after `expires_at`): what the
    /// card counts down to.
    pub decide_by: OffsetDateTime,
    /// When it was decided (or expired).
    pub decided_at: Option<OffsetDateTime>,
    /// When its execution was claimed (`approved → executing`).
    pub claimed_at: Option<OffsetDateTime>,
    /// Where its arguments came from (none on rows from before issue 16).
    pub provenance: Option<Json<Provenance>>,
}

impl Row {
    /// The grants its card offers.
    pub fn offered_grants(&self) -> Vec<GrantKind> {
        self.offered_grants_stored
            .iter()
            .map(|g| GrantKind::from_wire(g))
            .collect()
    }

    /// How far the approval reaches, once approved.
    pub fn grant(&self) -> Option<GrantKind> {
        self.grant_kind.as_deref().map(GrantKind::from_wire)
    }

    fn binding(&self) -> Binding<'_> {
        Binding {
            id: self.id,
            user_id: self.user_id,
            chat_id: self.chat_id,
            turn_id: self.turn_id,
            connector_id: self.connector_id,
            destination_url: &self.destination_url,
            tool_name: &self.tool_name,
            arguments_digest: &self.arguments_digest,
            expires_at_micros: self.expires_at.unix_timestamp_nanos() / 1000,
        }
    }

    /// Whether the stored arguments are the ones that were shown and
    /// signed: both stored forms agree, the digest is theirs, and the HMAC
    /// holds.
    pub fn verify(&self, keys: &ApprovalKeys) -> bool {
        canonical(&self.arguments) == self.arguments_canonical
            && sha256_hex(&self.arguments_canonical) == self.arguments_digest
            && keys.verify(&self.hmac_key_id, &self.binding(), &self.hmac)
    }

    fn expires_at_rfc3339(&self) -> String {
        self.expires_at
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    }

    fn decide_by_rfc3339(&self) -> String {
        self.decide_by
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    }

    /// When it was decided, RFC 3339.
    pub fn decided_at_rfc3339(&self) -> Option<String> {
        self.decided_at.and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
    }

    /// The arguments, pretty-printed for the card.
    pub fn arguments_pretty(&self) -> String {
        serde_json::to_string_pretty(&self.arguments).unwrap_or_default()
    }

    /// The `mcp_confirmation_required` event: the stored evidence, and
    /// what the reviewed descriptor says about the tool.
    pub fn required_event(&self, about: &AboutTool) -> ChatEvent {
        ChatEvent::McpConfirmationRequired {
            turn_id: self.turn_id.to_string(),
            id: self.id.to_string(),
            call_id: self.call_id.clone(),
            connector_id: self.connector_id.to_string(),
            connector_name: self.connector_name.clone(),
            tool_name: self.tool_name.clone(),
            arguments: self.arguments.clone(),
            arguments_json: self.arguments_pretty(),
            arguments_digest: self.arguments_digest.clone(),
            destination: self.destination.clone(),
            reason: self.reason.clone(),
            expires_at: self.expires_at_rfc3339(),
            decide_by: self.decide_by_rfc3339(),
            offered_grants: self.offered_grants(),
            tool_title: about.title.clone(),
            tool_description: about.description.clone(),
            tool_input_schema: about.input_schema.clone().map(Box::new),
            risk: Some(Box::new(about.risk.clone())),
            provenance: self.provenance.as_ref().map(|p| Box::new(p.0.clone())),
            character_warnings: crate::characters::warnings(&self.arguments),
            destinations: crate::destinations::destinations(&self.arguments),
        }
    }

    /// The row as `GET /api/mcp-pending-calls` shows it.
    pub fn to_api(&self, expires_in_secs: f64, decide_in_secs: f64) -> PendingCall {
        PendingCall {
            id: self.id.to_string(),
            chat_id: self.chat_id.to_string(),
            turn_id: self.turn_id.to_string(),
            call_id: self.call_id.clone(),
            connector_id: self.connector_id.to_string(),
            connector_name: self.connector_name.clone(),
            tool_name: self.tool_name.clone(),
            arguments: self.arguments.clone(),
            arguments_json: self.arguments_pretty(),
            arguments_digest: self.arguments_digest.clone(),
            destination: self.destination.clone(),
            reason: self.reason.clone(),
            expires_at: self.expires_at_rfc3339(),
            expires_in_secs,
            decide_by: self.decide_by_rfc3339(),
            decide_in_secs,
            offered_grants: self.offered_grants(),
            provenance: self.provenance.as_ref().map(|p| p.0.clone()),
            character_warnings: crate::characters::warnings(&self.arguments),
            destinations: crate::destinations::destinations(&self.arguments),
        }
    }
}

/// Titles and descriptions longer than this (in characters) are cut on
/// the card.
pub const ABOUT_MAX_CHARS: usize = 1000;

/// What the card says about a tool, from the descriptor the user reviewed
/// (not stored with the row: it is not part of what was approved).
#[derive(Debug, Clone)]
pub struct AboutTool {
    /// Its title, if it has one.
    pub title: Option<String>,
    /// Its description.
    pub description: Option<String>,
    /// What its annotations declare.
    pub risk: ToolRisk,
    /// Its input schema, for "Edit and allow" (none past
    /// [`INPUT_SCHEMA_MAX_BYTES`]).
    pub input_schema: Option<Value>,
}

/// Input schemas larger than this (as JSON) are not sent with the card;
/// the server still checks an edit against the stored one.
pub const INPUT_SCHEMA_MAX_BYTES: usize = 64 * 1024;

/// A row as `propose` would store it for `tool_name` with `arguments`,
/// signed with `keys` (tests here and in the lifecycle's).
#[cfg(test)]
pub(super) fn signed_row(keys: &ApprovalKeys, tool_name: &str, arguments: Value) -> Row {
    use uuid::Uuid;
    let arguments_canonical = canonical(&arguments);
    let expires_at = OffsetDateTime::from_unix_timestamp(1_700_000_000).expect("a time");
    let mut row = Row {
        id: PendingCallId(Uuid::from_u128(1)),
        user_id: UserId(Uuid::from_u128(2)),
        chat_id: ChatId(Uuid::from_u128(3)),
        turn_id: TurnId(Uuid::from_u128(4)),
        call_id: "call-1".into(),
        connector_id: ConnectorId(Uuid::from_u128(5)),
        connector_name: "Docs".into(),
        tool_name: tool_name.into(),
        model_tool_name: format!("docs__{tool_name}"),
        arguments_digest: sha256_hex(&arguments_canonical),
        arguments,
        arguments_canonical,
        descriptor_digest: "0".repeat(64),
        destination: "mcp.example".into(),
        destination_url: "https://mcp.example/mcp".into(),
        reason: "It changes data.".into(),
        offered_grants_stored: vec!["once".into(), "turn".into()],
        status: PendingCallStatus::Executing,
        grant_kind: Some("turn".into()),
        hmac_key_id: String::new(),
        hmac: String::new(),
        error: None,
        expires_at,
        decide_by: expires_at,
        decided_at: Some(expires_at),
        claimed_at: Some(expires_at),
        provenance: None,
    };
    (row.hmac_key_id, row.hmac) = keys.sign(&row.binding());
    row
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_row_verifies_only_as_it_was_signed() {
        let keys = ApprovalKeys::from_bytes(&[7; 32]).expect("key");
        let row = signed_row(&keys, "delete", json!({"id": 7}));
        assert!(row.verify(&keys), "as signed");

        let mut other_arguments = row.clone();
        other_arguments.arguments = json!({"id": 8});
        assert!(
            !other_arguments.verify(&keys),
            "arguments that are not the stored canonical JSON"
        );

        let mut other_bytes = row.clone();
        other_bytes.arguments = json!({"id": 8});
        other_bytes.arguments_canonical = canonical(&other_bytes.arguments);
        assert!(
            !other_bytes.verify(&keys),
            "canonical JSON whose digest is another"
        );

        let mut re_digested = other_bytes.clone();
        re_digested.arguments_digest = sha256_hex(&re_digested.arguments_canonical);
        assert!(
            !re_digested.verify(&keys),
            "a consistent rewrite the HMAC does not cover"
        );

        let mut elsewhere = row.clone();
        elsewhere.destination_url = "https://mcp.example.evil/mcp".into();
        assert!(!elsewhere.verify(&keys), "another URL");

        let other_keys = ApprovalKeys::from_bytes(&[8; 32]).expect("key");
        assert!(!row.verify(&other_keys), "another key");
    }

    #[test]
    fn stored_grant_words_read_as_grants() {
        let keys = ApprovalKeys::from_bytes(&[7; 32]).expect("key");
        let mut row = signed_row(&keys, "search", json!({}));
        assert_eq!(row.offered_grants(), [GrantKind::Once, GrantKind::Turn]);
        assert_eq!(row.grant(), Some(GrantKind::Turn));
        row.grant_kind = None;
        assert_eq!(row.grant(), None, "not approved: no grant");
    }
}
