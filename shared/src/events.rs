//! Events of a chat's stream (DESIGN §7): the `data:` of each SSE event is
//! one of these as JSON, tagged by `type`; the SSE `id:` is the event's
//! sequence number in the chat.

use crate::provenance::Provenance;
use crate::risk::ToolRisk;
use crate::vocab::{
    CallOrigin, GrantKind, InputMode, InputRequestStatus, NoProseReason, Resolution,
    ToolCallStatus, TurnEnding,
};
use serde::{Deserialize, Serialize};

/// The most characters of a tool's result `mcp_tool_call.result` carries.
pub const RESULT_PREVIEW_CHARS: usize = 4000;

/// One event. Every event of a turn carries that turn's `turn_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
        /// Its risk as the reviewed annotations declare it. Absent from an
        /// older server: the card treats the call as risky.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        risk: Option<ToolRisk>,
        /// Where each argument came from, and the flows that make the
        /// card warn (issue 16). Absent from an older server.
        // Boxed, so the other events stay small.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provenance: Option<Box<Provenance>>,
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
    },
    /// An input request was answered, or ended unanswered.
    McpInputResolved {
        /// The turn.
        turn_id: String,
        /// The input request.
        id: String,
        /// `accepted`, `declined`, `cancelled` or `expired`.
        status: InputRequestStatus,
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
        /// How long the call took.
        duration_ms: u64,
        /// What let it run: `approved` (a card), `turn_grant`,
        /// `always_grant` or `trusted_annotations`.
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
