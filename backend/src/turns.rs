//! Turns (DESIGN §7): a user message starts a turn that runs on the server
//! as its own task, independent of any browser connection. The task calls
//! the model, streams its text into the chat's event log, runs the tool
//! calls it proposes one after another (every call gets a result), and
//! writes the final assistant message.
//!
//! Stop: `cancel` sets `cancel_requested` and notifies every instance; the
//! one running the turn stops generating and keeps the partial text,
//! marked `stopped`. A running turn whose task died (its heartbeat is older
//! than `COUNTERSIGN_TURN_STALE_SECS`) is marked failed, with events saying
//! so, by the periodic recovery ([`reap_all_stale`]) or the next time its
//! chat is used, whichever comes first.
//!
//! Layout: this file holds the entry points (`start`, `cancel`,
//! `stop_all_for_user`) and `TurnError`; the task's concerns each have a
//! module — [`store`] (storing a turn, reaping dead ones), [`history`]
//! (what the model is given, read beside the store), [`drive`] (the task:
//! set-up, the model stream, the tool loop, the end), [`emitter`] (the
//! turn's event writes), [`heartbeat`] (proof of life, stored Stops),
//! [`spotlight`] (tool results as untrusted data) and [`recent`] (the
//! histories turns here left behind).

mod drive;
mod emitter;
mod heartbeat;
mod history;
pub mod recent;
mod spotlight;
mod store;

pub use drive::{DECLINED_REASON, run};
pub use heartbeat::beat;
pub use history::{History, Prefetched, TRIPS};
pub use spotlight::{MAX_TOOL_RESULT_CHARS, SYSTEM_PROMPT, spotlight};
pub use store::{Stored, default_title, reap_all_stale};

use crate::{AppState, auth::session, db, events, tools::ToolContext};
use tokio::sync::oneshot;
use uuid::Uuid;

/// Longest user message, in characters.
pub const MAX_MESSAGE_CHARS: usize = 100_000;

/// Shown when a turn ends with no text and no reason for it.
pub const EMPTY_RESPONSE: &str = "The model returned an empty response.";

/// Why a turn could not be started or stopped.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    /// No such chat for this user.
    #[error("No such chat.")]
    ChatNotFound,
    /// No such turn in this chat for this user.
    #[error("No such turn.")]
    TurnNotFound,
    /// A turn of this chat is still running.
    #[error("A reply is still being written in this chat. Wait for it to finish or press Stop.")]
    Busy,
    /// The turn already ended.
    #[error("This turn has already finished.")]
    AlreadyFinished,
    /// Empty or oversized message.
    #[error("{0}")]
    InvalidMessage(String),
    /// The session's [stamp](session::Stamp) no longer holds: something
    /// about the session or its user changed since it was looked up.
    /// Nothing was stored; look the session up again.
    #[error("Your session changed while the message was sent. Send it again.")]
    SessionChanged,
    /// Database failure.
    #[error(transparent)]
    Database(sqlx::Error),
}

impl From<sqlx::Error> for TurnError {
    fn from(err: sqlx::Error) -> Self {
        if session::is_stale_stamp(&err) {
            Self::SessionChanged
        } else {
            Self::Database(err)
        }
    }
}

/// Starts a turn with the user's message and spawns its task. Returns the
/// turn id. `stamp` is the [stamp](session::Stamp) of the session the
/// request came with: the turn is stored only if it still holds
/// ([`TurnError::SessionChanged`] if not), and the reads beside the store
/// that could lead to writes on the user's behalf check it too, so a
/// session known to this instance from an earlier request need not be
/// looked up again in front of the turn (`http::extract::StampedUser`).
#[tracing::instrument(skip_all, fields(user.id = %user_id, chat.id = %chat_id))]
pub async fn start(
    state: &AppState,
    user_id: Uuid,
    stamp: session::Stamp,
    chat_id: Uuid,
    content: &str,
) -> Result<Uuid, TurnError> {
    let content = content.trim();
    if content.is_empty() {
        return Err(TurnError::InvalidMessage("Write a message first.".into()));
    }
    if content.chars().count() > MAX_MESSAGE_CHARS {
        return Err(TurnError::InvalidMessage(format!(
            "The message is too long: at most {MAX_MESSAGE_CHARS} characters."
        )));
    }

    let turn_id = Uuid::new_v4();
    let ctx = ToolContext {
        user_id: user_id.into(),
        chat_id: chat_id.into(),
        turn_id: turn_id.into(),
    };
    // The turn's task stores the turn, reads beside it what does not
    // depend on the chat (the user's tools, the policy, the provider
    // keys), answers here once the turn is stored (or could not be), and
    // goes on to the model without waiting for this handler: the first
    // token's way has no hand-over between tasks, and a request whose
    // client went away meanwhile leaves no stored turn without its task.
    let (answer, answered) = oneshot::channel();
    tokio::spawn(run(state.clone(), ctx, stamp, content.to_owned(), answer));
    match answered.await {
        Ok(result) => result?,
        // The task panicked before it answered; a turn it stored is
        // reaped like any turn whose task stopped.
        Err(_) => return Err(TurnError::Database(sqlx::Error::WorkerCrashed)),
    }
    state.trimmer.turn_started();
    tracing::info!(turn.id = %turn_id, "turn started");
    Ok(turn_id)
}

/// Asks the turn to stop, wherever it runs.
pub async fn cancel(
    state: &AppState,
    user_id: Uuid,
    chat_id: Uuid,
    turn_id: Uuid,
) -> Result<(), TurnError> {
    let mut tx = db::user_tx(&state.db, user_id).await?;
    let status: Option<String> = sqlx::query_scalar!(
        "select status from turns where id = $1 and chat_id = $2",
        turn_id,
        chat_id,
    )
    .fetch_optional(&mut *tx)
    .await?;
    match status.as_deref() {
        None => return Err(TurnError::TurnNotFound),
        Some("running") => {}
        Some(_) => return Err(TurnError::AlreadyFinished),
    }
    sqlx::query!(
        "update turns set cancel_requested = true where id = $1",
        turn_id,
    )
    .execute(&mut *tx)
    .await?;
    events::request_cancel(&mut tx, turn_id).await?;
    tx.commit().await?;
    state.hub.cancel_local(turn_id);
    Ok(())
}

/// Asks every running turn of `user_id` to stop, on whichever instance
/// runs it (an administrator disabled the account). Inside `tx`, so the
/// stop commits with the change that caused it; the caller passes the
/// returned ids to [`crate::events::EventHub::cancel_local`] after the
/// commit.
pub async fn stop_all_for_user(tx: &mut db::Tx, user_id: Uuid) -> Result<Vec<Uuid>, sqlx::Error> {
    let ids = sqlx::query_scalar!(
        "update turns set cancel_requested = true
          where user_id = $1 and status = 'running' returning id",
        user_id,
    )
    .fetch_all(&mut **tx)
    .await?;
    for id in &ids {
        events::request_cancel(tx, *id).await?;
    }
    Ok(ids)
}
