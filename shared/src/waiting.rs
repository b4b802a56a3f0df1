//! What waits for the user across chats: `GET /api/waiting` (DESIGN §9: a
//! waiting card is never lost). One short row per live approval, input
//! request and result review — what the chat list's badges, the tab
//! title's count and Home's "Waiting for you" need, and nothing more (the
//! arguments, questions and result texts stay with their own endpoints).

use crate::vocab::WaitingKind;
use serde::{Deserialize, Serialize};

/// One decision that waits for the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WaitingItem {
    /// An approval, a server's question or a result to review.
    pub kind: WaitingKind,
    /// The pending call's, input request's or review's id (what its own
    /// endpoint takes).
    pub id: String,
    /// The chat it waits in.
    pub chat_id: String,
    /// The connector (its name in the user's settings).
    pub connector_name: String,
    /// The tool.
    pub tool_name: String,
    /// When the wait ends (RFC 3339, the database's clock).
    pub decide_by: String,
    /// Seconds left, by the server's clock (always above zero: what is
    /// past its time is not listed).
    pub decide_in_secs: f64,
}
