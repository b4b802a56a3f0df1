//! Input requests as the API shows them (DESIGN §6a): a server asking the
//! user, during a tool call, for a form's fields or to open a URL.

use crate::vocab::{InputAction, InputMode, InputRequestStatus};
use serde::{Deserialize, Serialize};

/// One live input request (`GET /api/mcp-input-requests`): the same
/// question as its `mcp_input_required` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InputRequest {
    /// What the answer is posted to.
    pub id: String,
    /// The chat.
    pub chat_id: String,
    /// The turn whose call asks.
    pub turn_id: String,
    /// The model's id for the tool call that asks.
    pub call_id: String,
    /// The connector that asks (its name in the user's settings).
    pub connector_name: String,
    /// The tool whose call asks.
    pub tool_name: String,
    /// `form` or `url`.
    pub mode: InputMode,
    /// The server's message, as sent (plain text; never rendered as HTML).
    pub message: String,
    /// Form mode: the server's requested schema (flat primitive fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_schema: Option<serde_json::Value>,
    /// URL mode: the URL, exactly as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// URL mode: its host, as a browser would show it (punycode stays
    /// punycode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_host: Option<String>,
    /// RFC 3339, by the database's clock: the turn stops waiting then.
    pub decide_by: String,
    /// Seconds left when this was read (by the server's clock).
    pub decide_in_secs: f64,
    /// Form mode: the fields that ask for a secret, as the server judged
    /// them (see `mcp_input_required`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_fields: Vec<String>,
}

/// `POST /api/mcp-input-requests/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InputAnswer {
    /// `accept`, `decline` or `cancel` (anything else is a 422).
    pub action: InputAction,
    /// With `accept` in form mode: the fields, checked against the
    /// requested schema (a 422 names the first field that does not fit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The answer to an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InputAnswered {
    /// `accepted`, `declined` or `cancelled`.
    pub status: InputRequestStatus,
}
