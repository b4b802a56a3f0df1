//! Chats, messages, turns and models (DESIGN §7, §8).

use crate::vocab::{MessageStatus, TurnEnding};
use serde::{Deserialize, Serialize};

/// `POST /api/chats`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreateChatRequest {
    /// `provider/model`, e.g. `offline/demo`.
    pub model: String,
    /// Optional title; by default the start of the first message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// `PATCH /api/chats/{id}`: any field present is changed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UpdateChatRequest {
    /// New title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// New model for the next turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A chat in the sidebar list (`GET /api/chats`, newest first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChatSummary {
    /// Chat id (UUID).
    pub id: String,
    /// Title; empty until the first message or a rename.
    pub title: String,
    /// `provider/model`.
    pub model: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339; bumped by every message.
    pub updated_at: String,
}

/// One stored message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChatMessage {
    /// Message id (UUID).
    pub id: String,
    /// The turn it belongs to.
    pub turn_id: String,
    /// `user` or `assistant`.
    pub role: String,
    /// Plain text / Markdown.
    pub content: String,
    /// `complete`, `stopped` (the user pressed Stop) or `failed`.
    pub status: MessageStatus,
    /// RFC 3339.
    pub created_at: String,
}

/// `GET /api/chats/{id}`: the chat, its finished messages, and where to
/// resume its stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChatDetail {
    /// Chat id.
    pub id: String,
    /// Shown in the sidebar; the first message's start until renamed.
    pub title: String,
    /// `provider/model`.
    pub model: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
    /// Messages of finished turns, oldest first.
    pub messages: Vec<ChatMessage>,
    /// The turn still running, if any: its events are replayed by the stream.
    pub running_turn_id: Option<String>,
    /// Open `GET /api/chats/{id}/stream?after=` this: every event after it
    /// belongs to the running turn or later ones.
    pub resume_after: i64,
    /// Finished turns, oldest first: how each ended and its events other
    /// than text (tool calls, results, errors, approvals, input requests),
    /// so a reloaded page shows them as they were.
    #[serde(default)]
    pub turns: Vec<TurnRecord>,
}

/// A finished turn in [`ChatDetail`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TurnRecord {
    /// The turn.
    pub turn_id: String,
    /// `done`, `failed` or `cancelled`.
    pub status: TurnEnding,
    /// Its `tool_call`, `tool_result`, `error`, approval
    /// (`mcp_confirmation_*`, `mcp_tool_call`) and input request
    /// (`mcp_input_*`) events, in order.
    pub events: Vec<crate::ChatEvent>,
    /// For each of `events`, in the same order: how many characters
    /// (Unicode scalar values) of the turn's answer had streamed before
    /// it, so a page puts the text where it stood ("I will call …" above
    /// the block it introduced). Empty from an older server: the blocks
    /// come before the text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub text_before: Vec<u64>,
}

/// `POST /api/chats/{id}/messages`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SendMessageRequest {
    /// What the user wrote.
    pub content: String,
}

/// 202 answer of `POST /api/chats/{id}/messages`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TurnAccepted {
    /// The new turn; its events carry this id.
    pub turn_id: String,
}

/// 202 answer of `POST /api/chats/{id}/turns/{turn_id}/cancel`: the Stop
/// is on its way to whichever instance runs the turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CancelAccepted {
    /// Always `"cancelling"`.
    pub status: String,
}

/// One usable model (`GET /api/models`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ModelInfo {
    /// `provider/model`.
    pub id: String,
    /// Shown in the picker.
    pub label: String,
    /// `anthropic`, `openai` or `offline`.
    pub provider: String,
    /// True for `offline/demo`: not AI, a scripted demo.
    pub offline_demo: bool,
}

/// `GET /api/models`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ModelsResponse {
    /// Models the caller can use now.
    pub models: Vec<ModelInfo>,
}

/// Whether a provider key is stored (`GET /api/settings/provider-keys`).
/// The key itself never leaves the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProviderKeyStatus {
    /// `anthropic` or `openai`.
    pub provider: String,
    /// The user stored a key.
    pub is_set: bool,
    /// The deployment has a key from the environment.
    pub deployment_key: bool,
}

/// `PUT /api/settings/provider-keys/{provider}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SetProviderKeyRequest {
    /// The API key; write-only.
    pub api_key: String,
}
