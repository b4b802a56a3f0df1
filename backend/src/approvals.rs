//! The approval ledger (DESIGN §6): the only module that writes
//! `mcp_pending_calls`. Every transition is one conditional UPDATE, so two
//! instances, two tabs or fifty concurrent requests cannot both win:
//!
//! ```text
//! pending → approved → executing → executed | failed
//! pending → denied | expired
//! ```
//!
//! A row binds the exact call: the arguments' RFC 8785 canonical JSON and
//! its SHA-256 are stored, and an HMAC (key `COUNTERSIGN_APPROVAL_KEY`,
//! named by a key id) covers id, user, chat, turn, connector, destination
//! (the connector URL at proposal), tool, arguments digest and expiry. A
//! decision carries only approve/deny and the digest the card showed; it
//! can never change what runs. An approved row runs only through
//! [`run_approved`]: claimed, re-read and re-verified, run, its outcome
//! recorded; a failure still spends the approval.
//!
//! Waiting holds no pooled connection: one [`Watcher`] per instance reads
//! the statuses of every call its turns wait for, woken by `NOTIFY` from
//! whichever instance took the decision and polling as a fallback.
//!
//! Layout: [`keys`] (the HMAC and what it covers), [`row`] (a row as
//! stored, what it shows, its check against its signature), [`ledger`]
//! (every transition but the wait's, and the reads of the ledger),
//! [`wait`] (waiting for a decision; the instance's [`Watcher`]),
//! [`lifecycle`] (an approved call's run, claim → verify → execute →
//! record: [`run_approved`], the only way one runs), [`edit`] ("Edit and
//! allow": an approval with the user's own arguments, checked and signed
//! anew).

mod edit;
mod keys;
mod ledger;
mod lifecycle;
mod row;
pub mod second;
mod wait;

pub use edit::{EditError, Edited, approve_edited, ran_with_edits};
pub use keys::{ApprovalKeys, Binding};
pub use ledger::{
    DecideError, HowDecided, Proposal, RECORD_RETRY_FOR, Recovered, TRIPS, Verdict, decide,
    decided_of, deny_for_connector, deny_for_user, destination, live_for_user, pending_count,
    propose, recover, sweep, turn_grant, waiting_across,
};
pub use lifecycle::{Execution, Ran, Shown, run_approved};
pub use row::{ABOUT_MAX_CHARS, AboutTool, INPUT_SCHEMA_MAX_BYTES, Row};
pub use wait::{Hook, Hooks, Waited, Watcher, expire_or_honour, wait};

/// What the model is told when the user declines.
pub const DECLINED: &str = r#"{"ok":false,"error":"The user declined this tool call."}"#;

/// What the model is told when the user declines and says why: the
/// reason is the user's, in their words, as the tool's error.
pub fn declined_because(reason: &str) -> String {
    serde_json::json!({
        "ok": false,
        "error": format!("The user declined this tool call. Their reason: {reason}"),
    })
    .to_string()
}
/// What the model is told when nobody decided in time.
pub const EXPIRED: &str = "The user did not approve this tool call in time.";
