//! Events of a chat's stream (DESIGN §7): the `data:` of each SSE event is
//! one of these as JSON, tagged by `type`; the SSE `id:` is the event's
//! sequence number in the chat.
//!
//! Writing is serde's derive; reading is [`Wire`], one flat struct of every
//! field any event has, read in one pass and then checked per `type`.
//! Serde's derive for an internally tagged enum first buffers the whole
//! object (its private `Content`), then reads each variant again from the
//! buffer, so every field type is read by two deserializers; in the web
//! app that was 49 KiB of wasm for this one impl, in the first load of
//! every page (issue 13). The rule it relies on: a field name means one
//! type in every event (`status` is a word in each event that has one).

use crate::provenance::Provenance;
use crate::risk::ToolRisk;
use crate::vocab::{
    CallOrigin, GrantKind, InputMode, InputRequestStatus, NoProseReason, Resolution,
    ResultReviewReason, ResultReviewStatus, ToolCallStatus, TurnEnding,
};
use serde::{Deserialize, Serialize};

/// The most characters of a tool's result `mcp_tool_call.result` carries.
pub const RESULT_PREVIEW_CHARS: usize = 4000;

/// One event. Every event of a turn carries that turn's `turn_id`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatEvent {
    /// A turn began with the user's message.
    TurnStarted {
        /// The turn.
        turn_id: String,
        /// `provider/model` answering.
        model: String,
        /// The user's message that started it.
        user_message: ChatEventMessage,
    },
    /// More of the model's text.
    TextDelta {
        /// The turn.
        turn_id: String,
        /// Text to append.
        text: String,
    },
    /// The model proposed a tool call.
    ToolCall {
        /// The turn.
        turn_id: String,
        /// Call id.
        id: String,
        /// Name of the tool as offered to the model.
        tool_name: String,
        /// Arguments object.
        arguments: serde_json::Value,
    },
    /// A proposed tool call produced a result (or could not run).
    ToolResult {
        /// The turn.
        turn_id: String,
        /// Call id.
        id: String,
        /// Tool name.
        tool_name: String,
        /// `ok` or `error`.
        status: ToolCallStatus,
        /// Why, when not ok.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A gated MCP call waits for the user's decision (DESIGN §6): the
    /// stored evidence, exactly what would run.
    McpConfirmationRequired {
        /// The turn.
        turn_id: String,
        /// Ledger id: `POST /api/mcp-pending-calls/{id}` decides it.
        id: String,
        /// The model's id for the tool call (matches `tool_call.id`).
        #[serde(default)]
        call_id: String,
        /// The connector.
        connector_id: String,
        /// Its name.
        connector_name: String,
        /// The tool's name on its server.
        tool_name: String,
        /// The exact arguments (an object).
        arguments: serde_json::Value,
        /// The same, pretty-printed.
        arguments_json: String,
        /// SHA-256 (hex) of the arguments' RFC 8785 canonical JSON.
        arguments_digest: String,
        /// The host the call goes to, from the user's connector.
        destination: String,
        /// Why it asks.
        reason: String,
        /// RFC 3339, by the database's clock.
        expires_at: String,
        /// RFC 3339, by the database's clock: the turn stops waiting then
        /// (never later than `expires_at`); the card counts down to it.
        /// Empty from an older server (count to `expires_at`).
        #[serde(default)]
        decide_by: String,
        /// The grants the card may offer (`once` always; `turn` and
        /// `always` unless the tool changed since it was reviewed). An
        /// older server that sends none offered all three.
        #[serde(default = "crate::approvals::every_grant")]
        offered_grants: Vec<GrantKind>,
        /// The tool's title, from the descriptor the user reviewed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_title: Option<String>,
        /// Its description as reviewed (plain text; long ones cut).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_description: Option<String>,
        /// Its input schema as reviewed (JSON Schema), for "Edit and
        /// allow": the server checks an edit against it. Absent when it
        /// has none or it is too large to send.
        // Boxed, so the other events stay small.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_input_schema: Option<Box<serde_json::Value>>,
        /// Its risk as the reviewed annotations declare it. Absent from an
        /// older server: the card treats the call as risky.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        // Boxed, like the schema above: the other events stay small.
        risk: Option<Box<ToolRisk>>,
        /// Where each argument came from, and the flows that make the
        /// card warn (issue 16). Absent from an older server.
        // Boxed, so the other events stay small.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provenance: Option<Box<Provenance>>,
        /// Arguments holding look-alike letters, invisible characters or
        /// bidi controls (issue 44): the card flags each beside the
        /// arguments and draws the invisible ones. Empty: none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        character_warnings: Vec<crate::CharacterWarning>,
        /// Where the call sends data, read from the signed arguments: URL
        /// hosts, e-mail addresses, named destinations (`to`, `channel`,
        /// …). The card's "Sends to"; `destination` is the connector it
        /// goes through. Empty: none named.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        destinations: Vec<crate::Destination>,
    },
    /// The user decided, or the call expired.
    McpConfirmationResolved {
        /// The turn.
        turn_id: String,
        /// Ledger id.
        id: String,
        /// `approved`, `denied` or `expired`.
        decision: Resolution,
        /// For `approved`: the grant the user chose (`once`, `turn` or
        /// `always`), so every tab's card says what was allowed. Absent
        /// otherwise, and from an older server.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grant: Option<GrantKind>,
        /// When it was decided (RFC 3339, by the database's clock), so a
        /// decided card says when; absent for `expired` and from an older
        /// server.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decided_at: Option<String>,
        /// For `denied`: the reason the user gave ("Decline and tell the
        /// assistant why"), which the model also read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decline_reason: Option<String>,
        /// For `denied`: nobody declined it — the reply was stopped while
        /// it waited, which denies it. Absent (false) otherwise.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        stopped: bool,
        /// For `approved` after "Edit and allow": the arguments the user
        /// edited, which are what runs (the card shows them instead of
        /// the proposed ones). Absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        edited_arguments: Option<serde_json::Value>,
        /// For a call the policy gave a second approver: who decided it
        /// (their e-mail). Absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        second_approver: Option<String>,
    },
    /// The user approved a call the policy gives a second approver: it
    /// now waits for an approver who is not the user (`awaiting_second`);
    /// `mcp_confirmation_resolved` follows when they decide or it expires.
    McpSecondApprovalRequired {
        /// The turn.
        turn_id: String,
        /// Ledger id.
        id: String,
    },
    /// A running MCP call's server asks the user for input (DESIGN §6a):
    /// the question as stored.
    McpInputRequired {
        /// The turn.
        turn_id: String,
        /// `POST /api/mcp-input-requests/{id}` answers it.
        id: String,
        /// The model's id for the tool call that asks (matches
        /// `tool_call.id`).
        call_id: String,
        /// The connector that asks.
        connector_name: String,
        /// The tool whose call asks.
        tool_name: String,
        /// `form` or `url`.
        mode: InputMode,
        /// The server's message (plain text).
        message: String,
        /// Form mode: the requested schema.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        requested_schema: Option<serde_json::Value>,
        /// URL mode: the URL as sent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        /// URL mode: its host.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url_host: Option<String>,
        /// RFC 3339, by the database's clock: the turn stops waiting then.
        decide_by: String,
        /// Form mode: the fields that ask for a secret (a password, an API
        /// key, a one-time code, a card number…), as the server judged
        /// them: the card warns next to the form.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        secret_fields: Vec<String>,
    },
    /// An input request was answered, or ended unanswered.
    McpInputResolved {
        /// The turn.
        turn_id: String,
        /// The input request.
        id: String,
        /// `accepted`, `declined`, `cancelled` or `expired`.
        status: InputRequestStatus,
        /// For `accepted` in form mode: what the user sent, each secret
        /// field's value replaced by `"••••••"`, so the answered card
        /// keeps its story. Absent otherwise, and from an older server.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answers: Option<serde_json::Value>,
        /// When it was answered (RFC 3339, by the database's clock).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answered_at: Option<String>,
    },
    /// An MCP tool call ran (or could not run).
    McpToolCall {
        /// The turn.
        turn_id: String,
        /// The ledger id when a card was shown, else the model's call id.
        id: String,
        /// The model's id for the tool call (matches `tool_call.id`).
        #[serde(default)]
        call_id: String,
        /// The connector's name.
        connector_name: String,
        /// The tool's name on its server.
        tool_name: String,
        /// `ok` or `error`.
        status: ToolCallStatus,
        /// Why, when not ok.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// How long the call took on its server: the time it waited for
        /// the user (`waited_ms`) is not in it.
        duration_ms: u64,
        /// How long the call waited for the user's answers while it ran
        /// (input requests); absent when it waited for none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        waited_ms: Option<u64>,
        /// What let it run: `approved` (a card), `turn_grant`,
        /// `always_grant`, `trusted_annotations` or `rule`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        origin: Option<CallOrigin>,
        /// With `approved`: when the user approved it (RFC 3339).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approved_at: Option<String>,
        /// When the call failed because its OAuth connector needs a (new)
        /// sign-in: that connector, for the chat's "Sign in to <connector>
        /// again" (`POST /api/connectors/{id}/oauth/start`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sign_in_connector_id: Option<String>,
        /// When ok: the start of what the tool returned, as the model got
        /// it, for people to read — control and bidirectional-override
        /// characters removed, at most [`RESULT_PREVIEW_CHARS`] characters.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<String>,
        /// With `result`: how many characters the whole result had.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result_chars: Option<u64>,
        /// The result contains text aimed at the assistant (instructions);
        /// Countersign treated it as data. Absent (false) otherwise.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        contains_instructions: bool,
        /// The connector's id (absent from an older server): a later
        /// call's provenance tells results of this connector from others'.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        connector_id: Option<String>,
        /// With `origin: "rule"`: the rule that allowed it; on a call a
        /// deny rule refused (`status: "error"`, no origin): that rule.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule: Option<Box<crate::RuleRef>>,
        /// When the result waited for the user before the model read it
        /// (`mcp_result_review_required`): `passed`, `redacted` (then
        /// `result` is the redacted text), `withheld` or `expired` (then
        /// there is no `result`: the model read none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result_review: Option<ResultReviewStatus>,
    },
    /// A call's result waits for the user before the model reads it
    /// (docs/design.md §6.5a). Its text is not in the event log: the card
    /// reads it from `GET /api/mcp-pending-calls/{id}/result` while it
    /// waits, and keeps only what the user let through.
    McpResultReviewRequired {
        /// The turn.
        turn_id: String,
        /// `POST /api/mcp-pending-calls/{id}/result` decides it.
        id: String,
        /// The model's id for the tool call (matches `tool_call.id`).
        call_id: String,
        /// The connector's name.
        connector_name: String,
        /// The tool's name on its server.
        tool_name: String,
        /// Why it waits: `instructions`, `connector` or `policy`.
        reason: ResultReviewReason,
        /// How many characters the result has.
        result_chars: u64,
        /// When the wait ends (RFC 3339): then it is withheld.
        decide_by: String,
    },
    /// The review ended: `passed`, `redacted`, `withheld` or `expired`.
    McpResultReviewResolved {
        /// The turn.
        turn_id: String,
        /// The review.
        id: String,
        /// How it ended.
        status: ResultReviewStatus,
        /// When (RFC 3339, the database's clock).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decided_at: Option<String>,
    },
    /// Something went wrong, in words a user can act on.
    Error {
        /// The turn.
        turn_id: String,
        /// The message.
        message: String,
    },
    /// The turn ended.
    TurnFinished {
        /// The turn.
        turn_id: String,
        /// `done`, `failed` or `cancelled`.
        status: TurnEnding,
        /// Why a turn ended without model text on purpose.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        no_prose_reason: Option<NoProseReason>,
        /// The stored assistant message, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
    },
    /// An event type this build does not know (newer server): ignore it.
    #[serde(other)]
    Unknown,
}

/// A message inside an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChatEventMessage {
    /// Message id.
    pub id: String,
    /// The message's text, unrendered (the web app renders Markdown safely).
    pub content: String,
}

impl<'de> Deserialize<'de> for ChatEvent {
    /// As serde's derive for `tag = "type"` reads it: a missing required
    /// field or `type` is an error, a field of another event is ignored, a
    /// `type` this build does not know is [`ChatEvent::Unknown`], and the
    /// `#[serde(default …)]` above hold.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Wire::deserialize(deserializer)?
            .into_event()
            .map_err(serde::de::Error::missing_field)
    }
}

/// Every field of every event, each optional (see the module's note).
#[derive(Deserialize)]
struct Wire {
    #[serde(rename = "type")]
    kind: String,
    turn_id: Option<String>,
    model: Option<String>,
    user_message: Option<ChatEventMessage>,
    text: Option<String>,
    id: Option<String>,
    call_id: Option<String>,
    tool_name: Option<String>,
    // `null` is a value here (as for the derive's `Value` field), not
    // absence.
    #[serde(default, deserialize_with = "present")]
    arguments: Option<serde_json::Value>,
    status: Option<String>,
    error: Option<String>,
    connector_id: Option<String>,
    connector_name: Option<String>,
    arguments_json: Option<String>,
    arguments_digest: Option<String>,
    destination: Option<String>,
    reason: Option<String>,
    expires_at: Option<String>,
    decide_by: Option<String>,
    offered_grants: Option<Vec<GrantKind>>,
    tool_title: Option<String>,
    tool_description: Option<String>,
    tool_input_schema: Option<serde_json::Value>,
    risk: Option<ToolRisk>,
    provenance: Option<Box<Provenance>>,
    decision: Option<Resolution>,
    grant: Option<GrantKind>,
    mode: Option<InputMode>,
    message: Option<String>,
    requested_schema: Option<serde_json::Value>,
    url: Option<String>,
    url_host: Option<String>,
    secret_fields: Option<Vec<String>>,
    character_warnings: Option<Vec<crate::CharacterWarning>>,
    destinations: Option<Vec<crate::Destination>>,
    duration_ms: Option<u64>,
    waited_ms: Option<u64>,
    decided_at: Option<String>,
    decline_reason: Option<String>,
    stopped: Option<bool>,
    edited_arguments: Option<serde_json::Value>,
    // Not read by the web app (its card says "an approver"): each field
    // decoded costs its first load ~300 bytes (`e2e/tests/delivery.spec.ts`).
    #[cfg(not(target_arch = "wasm32"))]
    second_approver: Option<String>,
    answers: Option<serde_json::Value>,
    answered_at: Option<String>,
    origin: Option<CallOrigin>,
    approved_at: Option<String>,
    sign_in_connector_id: Option<String>,
    result: Option<String>,
    result_chars: Option<u64>,
    contains_instructions: Option<bool>,
    // Read as a JSON value (see [`rule_ref`]).
    rule: Option<serde_json::Value>,
    result_review: Option<String>,
    no_prose_reason: Option<NoProseReason>,
    message_id: Option<String>,
}

/// A field that is there, whatever its value (`null` included).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

/// A required field's value, or its name.
fn required<T>(value: Option<T>, name: &'static str) -> Result<T, &'static str> {
    value.ok_or(name)
}

/// A call's `rule`, taken from the JSON value the decoder reads anyway: a
/// derived decoder for [`crate::RuleRef`] would add 1.2 KB (brotli) to the
/// web app's first load, past its budget (`e2e/tests/delivery.spec.ts`).
/// As the derive would, a field missing is an error (named `rule`).
fn rule_ref(value: serde_json::Value) -> Result<crate::RuleRef, &'static str> {
    let text = |name: &str| {
        value
            .get(name)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
            .ok_or("rule")
    };
    Ok(crate::RuleRef {
        id: text("id")?,
        scope: crate::RuleScope::from_wire(&text("scope")?),
        effect: crate::RuleEffect::from_wire(&text("effect")?),
        description: text("description")?,
    })
}

impl Wire {
    /// The event its `type` names; the name of a required field it lacks.
    fn into_event(self) -> Result<ChatEvent, &'static str> {
        // Checked in each event's arm: `Unknown` needs no field.
        let turn_id = required(self.turn_id, "turn_id");
        Ok(match self.kind.as_str() {
            "turn_started" => ChatEvent::TurnStarted {
                turn_id: turn_id?,
                model: required(self.model, "model")?,
                user_message: required(self.user_message, "user_message")?,
            },
            "text_delta" => ChatEvent::TextDelta {
                turn_id: turn_id?,
                text: required(self.text, "text")?,
            },
            "tool_call" => ChatEvent::ToolCall {
                turn_id: turn_id?,
                id: required(self.id, "id")?,
                tool_name: required(self.tool_name, "tool_name")?,
                arguments: required(self.arguments, "arguments")?,
            },
            "tool_result" => ChatEvent::ToolResult {
                turn_id: turn_id?,
                id: required(self.id, "id")?,
                tool_name: required(self.tool_name, "tool_name")?,
                status: ToolCallStatus::from_wire(&required(self.status, "status")?),
                error: self.error,
            },
            "mcp_confirmation_required" => ChatEvent::McpConfirmationRequired {
                turn_id: turn_id?,
                id: required(self.id, "id")?,
                call_id: self.call_id.unwrap_or_default(),
                connector_id: required(self.connector_id, "connector_id")?,
                connector_name: required(self.connector_name, "connector_name")?,
                tool_name: required(self.tool_name, "tool_name")?,
                arguments: required(self.arguments, "arguments")?,
                arguments_json: required(self.arguments_json, "arguments_json")?,
                arguments_digest: required(self.arguments_digest, "arguments_digest")?,
                destination: required(self.destination, "destination")?,
                reason: required(self.reason, "reason")?,
                expires_at: required(self.expires_at, "expires_at")?,
                decide_by: self.decide_by.unwrap_or_default(),
                offered_grants: self
                    .offered_grants
                    .unwrap_or_else(crate::approvals::every_grant),
                tool_title: self.tool_title,
                tool_description: self.tool_description,
                tool_input_schema: self.tool_input_schema.map(Box::new),
                risk: self.risk.map(Box::new),
                provenance: self.provenance,
                character_warnings: self.character_warnings.unwrap_or_default(),
                destinations: self.destinations.unwrap_or_default(),
            },
            "mcp_confirmation_resolved" => ChatEvent::McpConfirmationResolved {
                turn_id: turn_id?,
                id: required(self.id, "id")?,
                decision: required(self.decision, "decision")?,
                grant: self.grant,
                decided_at: self.decided_at,
                decline_reason: self.decline_reason,
                stopped: self.stopped.unwrap_or_default(),
                edited_arguments: self.edited_arguments,
                #[cfg(not(target_arch = "wasm32"))]
                second_approver: self.second_approver,
                #[cfg(target_arch = "wasm32")]
                second_approver: None,
            },
            "mcp_second_approval_required" => ChatEvent::McpSecondApprovalRequired {
                turn_id: turn_id?,
                id: required(self.id, "id")?,
            },
            "mcp_input_required" => ChatEvent::McpInputRequired {
                turn_id: turn_id?,
                id: required(self.id, "id")?,
                call_id: required(self.call_id, "call_id")?,
                connector_name: required(self.connector_name, "connector_name")?,
                tool_name: required(self.tool_name, "tool_name")?,
                mode: required(self.mode, "mode")?,
                message: required(self.message, "message")?,
                requested_schema: self.requested_schema,
                url: self.url,
                url_host: self.url_host,
                decide_by: required(self.decide_by, "decide_by")?,
                secret_fields: self.secret_fields.unwrap_or_default(),
            },
            "mcp_input_resolved" => ChatEvent::McpInputResolved {
                turn_id: turn_id?,
                id: required(self.id, "id")?,
                status: InputRequestStatus::from_wire(&required(self.status, "status")?),
                answers: self.answers,
                answered_at: self.answered_at,
            },
            "mcp_tool_call" => ChatEvent::McpToolCall {
                turn_id: turn_id?,
                id: required(self.id, "id")?,
                call_id: self.call_id.unwrap_or_default(),
                connector_name: required(self.connector_name, "connector_name")?,
                tool_name: required(self.tool_name, "tool_name")?,
                status: ToolCallStatus::from_wire(&required(self.status, "status")?),
                error: self.error,
                duration_ms: required(self.duration_ms, "duration_ms")?,
                waited_ms: self.waited_ms,
                origin: self.origin,
                approved_at: self.approved_at,
                sign_in_connector_id: self.sign_in_connector_id,
                result: self.result,
                result_chars: self.result_chars,
                contains_instructions: self.contains_instructions.unwrap_or(false),
                connector_id: self.connector_id,
                rule: self.rule.map(rule_ref).transpose()?.map(Box::new),
                result_review: self
                    .result_review
                    .as_deref()
                    .map(ResultReviewStatus::from_wire),
            },
            "mcp_result_review_required" => ChatEvent::McpResultReviewRequired {
                turn_id: turn_id?,
                id: required(self.id, "id")?,
                call_id: required(self.call_id, "call_id")?,
                connector_name: required(self.connector_name, "connector_name")?,
                tool_name: required(self.tool_name, "tool_name")?,
                reason: ResultReviewReason::from_wire(&required(self.reason, "reason")?),
                result_chars: required(self.result_chars, "result_chars")?,
                decide_by: required(self.decide_by, "decide_by")?,
            },
            "mcp_result_review_resolved" => ChatEvent::McpResultReviewResolved {
                turn_id: turn_id?,
                id: required(self.id, "id")?,
                status: ResultReviewStatus::from_wire(&required(self.status, "status")?),
                decided_at: self.decided_at,
            },
            "error" => ChatEvent::Error {
                turn_id: turn_id?,
                message: required(self.message, "message")?,
            },
            "turn_finished" => ChatEvent::TurnFinished {
                turn_id: turn_id?,
                status: TurnEnding::from_wire(&required(self.status, "status")?),
                no_prose_reason: self.no_prose_reason,
                message_id: self.message_id,
            },
            _ => ChatEvent::Unknown,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RiskFlag;
    use serde_json::json;

    fn message() -> ChatEventMessage {
        ChatEventMessage {
            id: "m1".into(),
            content: "hi".into(),
        }
    }

    /// Every event, once with every optional field and once without.
    fn every_event() -> Vec<ChatEvent> {
        let confirmation = |full: bool| ChatEvent::McpConfirmationRequired {
            turn_id: "t".into(),
            id: "p".into(),
            call_id: "c".into(),
            connector_id: "k".into(),
            connector_name: "Notes".into(),
            tool_name: "search".into(),
            arguments: json!({"q": [1, null, "x"]}),
            arguments_json: "{}".into(),
            arguments_digest: "ab".into(),
            destination: "mcp.example".into(),
            reason: "why".into(),
            expires_at: "2026-12-01T10:00:00Z".into(),
            decide_by: "2026-12-01T09:59:30Z".into(),
            offered_grants: vec![GrantKind::Once],
            tool_title: full.then(|| "Search".into()),
            tool_description: full.then(|| "Finds.".into()),
            tool_input_schema: full.then(|| {
                Box::new(json!({"type": "object", "properties": {"q": {"type": "array"}}}))
            }),
            risk: full.then(|| {
                Box::new(ToolRisk {
                    risky: true,
                    flags: vec![RiskFlag::DeclaresNothing],
                })
            }),
            provenance: full.then(|| {
                Box::new(
                    serde_json::from_value(json!({
                        "values": [{"path": "/q", "origin": "tool_result", "spans": [
                            {"start": 0, "end": 3, "origin": "tool_result", "encoding": "base64",
                             "digest": "d", "source": {"call": "c0", "connector_name": "N",
                             "tool_name": "r", "at": "a"}}]}],
                        "flows": [{"from": {"call": "c0", "connector_name": "N",
                                   "tool_name": "r", "at": "a"},
                                   "to_connector_name": "M", "to_tool_name": "s",
                                   "reaches_outside": true, "other_connector": true,
                                   "text": "This sends text"}],
                        "instructions_in": []
                    }))
                    .expect("provenance"),
                )
            }),
            character_warnings: if full {
                vec![crate::CharacterWarning {
                    path: "/to".into(),
                    key: false,
                    characters: vec![crate::UnusualCharacter {
                        code: "U+0456".into(),
                        kind: crate::vocab::CharacterKind::LookAlike,
                        looks_like: Some("i".into()),
                    }],
                    ascii: Some("a@xn--frm-k4b.example".into()),
                }]
            } else {
                Vec::new()
            },
            destinations: if full {
                vec![crate::Destination {
                    kind: crate::vocab::DestinationKind::Email,
                    ascii: "a@xn--frm-jhd.example".into(),
                    unicode: Some("a@f\u{0456}rm.example".into()),
                    path: "/to".into(),
                }]
            } else {
                Vec::new()
            },
        };
        let input = |full: bool| ChatEvent::McpInputRequired {
            turn_id: "t".into(),
            id: "i".into(),
            call_id: "c".into(),
            connector_name: "Notes".into(),
            tool_name: "search".into(),
            mode: InputMode::Form,
            message: "Which?".into(),
            requested_schema: full.then(|| json!({"type": "object"})),
            url: full.then(|| "https://x.example/".into()),
            url_host: full.then(|| "x.example".into()),
            decide_by: "d".into(),
            secret_fields: if full { vec!["pin".into()] } else { Vec::new() },
        };
        let call = |full: bool| ChatEvent::McpToolCall {
            turn_id: "t".into(),
            id: "p".into(),
            call_id: "c".into(),
            connector_name: "Notes".into(),
            tool_name: "search".into(),
            status: ToolCallStatus::Ok,
            error: full.then(|| "no".into()),
            duration_ms: 4,
            waited_ms: full.then_some(9),
            origin: full.then_some(CallOrigin::Approved),
            approved_at: full.then(|| "a".into()),
            sign_in_connector_id: full.then(|| "k".into()),
            result: full.then(|| "r".into()),
            result_chars: full.then_some(1),
            contains_instructions: full,
            connector_id: full.then(|| "k".into()),
            rule: full.then(|| {
                Box::new(crate::RuleRef {
                    id: "r".into(),
                    scope: crate::RuleScope::Admin,
                    effect: crate::RuleEffect::Allow,
                    description: "Allow every read".into(),
                })
            }),
            result_review: full.then_some(ResultReviewStatus::Redacted),
        };
        vec![
            ChatEvent::TurnStarted {
                turn_id: "t".into(),
                model: "demo/offline".into(),
                user_message: message(),
            },
            ChatEvent::TextDelta {
                turn_id: "t".into(),
                text: "Hello".into(),
            },
            ChatEvent::ToolCall {
                turn_id: "t".into(),
                id: "c".into(),
                tool_name: "search".into(),
                arguments: json!({}),
            },
            ChatEvent::ToolResult {
                turn_id: "t".into(),
                id: "c".into(),
                tool_name: "search".into(),
                status: ToolCallStatus::Error,
                error: Some("boom".into()),
            },
            confirmation(true),
            confirmation(false),
            ChatEvent::McpConfirmationResolved {
                turn_id: "t".into(),
                id: "p".into(),
                decision: Resolution::Approved,
                grant: Some(GrantKind::Always),
                decided_at: Some("2026-12-06T10:00:00Z".into()),
                decline_reason: None,
                stopped: false,
                edited_arguments: None,
                second_approver: None,
            },
            ChatEvent::McpConfirmationResolved {
                turn_id: "t".into(),
                id: "p".into(),
                decision: Resolution::Approved,
                grant: Some(GrantKind::Once),
                decided_at: Some("2026-12-06T10:00:00Z".into()),
                decline_reason: None,
                stopped: false,
                edited_arguments: Some(json!({"to": "partner@firm.example"})),
                second_approver: None,
            },
            ChatEvent::McpSecondApprovalRequired {
                turn_id: "t".into(),
                id: "p".into(),
            },
            ChatEvent::McpConfirmationResolved {
                turn_id: "t".into(),
                id: "p".into(),
                decision: Resolution::Denied,
                grant: None,
                decided_at: None,
                decline_reason: Some("Archive it instead.".into()),
                stopped: false,
                edited_arguments: None,
                second_approver: None,
            },
            ChatEvent::McpConfirmationResolved {
                turn_id: "t".into(),
                id: "p".into(),
                decision: Resolution::Denied,
                grant: None,
                decided_at: Some("2026-12-06T10:00:00Z".into()),
                decline_reason: None,
                stopped: true,
                edited_arguments: None,
                second_approver: Some("partner@firm.example".into()),
            },
            input(true),
            input(false),
            ChatEvent::McpInputResolved {
                turn_id: "t".into(),
                id: "i".into(),
                status: InputRequestStatus::Accepted,
                answers: Some(json!({"matter": "2026-114", "pin": "\u{2022}\u{2022}"})),
                answered_at: Some("2026-12-06T10:00:00Z".into()),
            },
            call(true),
            call(false),
            ChatEvent::McpResultReviewRequired {
                turn_id: "t".into(),
                id: "v".into(),
                call_id: "c".into(),
                connector_name: "Notes".into(),
                tool_name: "search".into(),
                reason: ResultReviewReason::Instructions,
                result_chars: 120,
                decide_by: "d".into(),
            },
            ChatEvent::McpResultReviewResolved {
                turn_id: "t".into(),
                id: "v".into(),
                status: ResultReviewStatus::Withheld,
                decided_at: Some("2026-12-06T10:00:00Z".into()),
            },
            ChatEvent::McpResultReviewResolved {
                turn_id: "t".into(),
                id: "v".into(),
                status: ResultReviewStatus::Expired,
                decided_at: None,
            },
            ChatEvent::Error {
                turn_id: "t".into(),
                message: "It broke.".into(),
            },
            ChatEvent::TurnFinished {
                turn_id: "t".into(),
                status: TurnEnding::Done,
                no_prose_reason: Some(NoProseReason::Declined),
                message_id: Some("m".into()),
            },
        ]
    }

    #[test]
    fn every_event_reads_back_as_written_whatever_the_order_of_its_fields() {
        for event in every_event() {
            let written = serde_json::to_value(&event).expect("writes");
            assert_eq!(
                serde_json::from_value::<ChatEvent>(written.clone()).expect("reads"),
                event,
                "{written}"
            );
            // `type` last: nothing relies on it coming first. (A
            // `serde_json` map sorts its keys: the text is put together.)
            let mut object = written.as_object().expect("an object").clone();
            let kind = object.remove("type").expect("tagged");
            let rest = serde_json::to_string(&object).expect("writes");
            let text = format!(
                "{},\"type\":{kind}}}",
                rest.strip_suffix('}').expect("an object")
            );
            assert_eq!(
                serde_json::from_str::<ChatEvent>(&text).expect("reads"),
                event,
                "{text}"
            );
        }
    }

    #[test]
    fn a_missing_required_field_or_type_is_an_error_naming_it() {
        for (json, field) in [
            (r#"{"type":"text_delta","turn_id":"t"}"#, "text"),
            (r#"{"type":"text_delta","text":"x"}"#, "turn_id"),
            (
                r#"{"type":"tool_call","turn_id":"t","id":"c","tool_name":"x"}"#,
                "arguments",
            ),
            (
                r#"{"type":"mcp_tool_call","turn_id":"t","id":"p","connector_name":"N","tool_name":"s","status":"ok"}"#,
                "duration_ms",
            ),
            (r#"{"type":"turn_finished","turn_id":"t"}"#, "status"),
            (r#"{"turn_id":"t","text":"x"}"#, "type"),
        ] {
            let error = serde_json::from_str::<ChatEvent>(json).expect_err(json);
            assert!(
                error.to_string().contains(&format!("`{field}`")),
                "{json}: {error}"
            );
        }
        // A required field of the wrong type is an error too.
        assert!(
            serde_json::from_str::<ChatEvent>(r#"{"type":"text_delta","turn_id":"t","text":5}"#)
                .is_err()
        );
    }

    #[test]
    fn a_calls_rule_missing_a_field_is_an_error_and_a_null_rule_is_none() {
        let call = |rule: &str| {
            serde_json::from_str::<ChatEvent>(&format!(
                r#"{{"type":"mcp_tool_call","turn_id":"t","id":"p","connector_name":"N","tool_name":"s","status":"ok","duration_ms":1,"rule":{rule}}}"#
            ))
        };
        assert!(call(r#"{"id":"r","scope":"user","effect":"allow"}"#).is_err());
        assert!(matches!(
            call("null").expect("reads"),
            ChatEvent::McpToolCall { rule: None, .. }
        ));
        let Ok(ChatEvent::McpToolCall {
            rule: Some(rule), ..
        }) = call(r#"{"id":"r","scope":"user","effect":"ask","description":"d","more":1}"#)
        else {
            panic!("no rule read");
        };
        assert_eq!(
            (rule.scope, rule.effect, rule.description.as_str()),
            (crate::RuleScope::User, crate::RuleEffect::Ask, "d")
        );
    }

    #[test]
    fn an_unknown_type_is_unknown_and_other_events_fields_are_ignored() {
        assert_eq!(
            serde_json::from_str::<ChatEvent>(
                r#"{"type":"turn_paused","turn_id":"t","until":"later"}"#
            )
            .expect("reads"),
            ChatEvent::Unknown
        );
        assert_eq!(
            serde_json::from_str::<ChatEvent>(
                r#"{"type":"text_delta","turn_id":"t","text":"x","model":"m","shiny":{"new":true}}"#
            )
            .expect("reads"),
            ChatEvent::TextDelta {
                turn_id: "t".into(),
                text: "x".into()
            }
        );
    }

    #[test]
    fn an_older_servers_confirmation_gets_the_defaults_and_null_arguments_are_a_value() {
        let event: ChatEvent = serde_json::from_str(
            r#"{"type":"mcp_confirmation_required","turn_id":"t","id":"p","connector_id":"k","connector_name":"N","tool_name":"s","arguments":null,"arguments_json":"null","arguments_digest":"ab","destination":"h","reason":"r","expires_at":"e"}"#,
        )
        .expect("reads");
        let ChatEvent::McpConfirmationRequired {
            call_id,
            decide_by,
            offered_grants,
            arguments,
            risk,
            ..
        } = event
        else {
            panic!("not a confirmation: {event:?}");
        };
        assert_eq!((call_id.as_str(), decide_by.as_str()), ("", ""));
        assert_eq!(offered_grants, GrantKind::ALL);
        assert_eq!(arguments, serde_json::Value::Null);
        assert_eq!(risk, None);
    }
}
