//! Storing a turn: [`begin`] stores the turn, its user message, the
//! chat's title and its `turn_started` event in one statement, as a
//! transaction of its own in one round trip ([`store_alone`]), or, when
//! that stored nothing, in a transaction that first reaps the chat's dead
//! turn ([`store`]). Also the reaping of turns whose task stopped, in one
//! chat ([`reap_stale`]) or all of them ([`reap_all_stale`]).
//!
//! It runs no model and writes none of a running turn's events.

use super::TurnError;
use crate::{
    AppState,
    auth::session,
    db::{self, Tx},
    events,
    ids::{ChatId, TurnId, UserId},
    tools::ToolContext,
};
use countersign_api::{ChatEvent, ChatEventMessage, TurnEnding};
use uuid::Uuid;

/// Marks running turns of `chat_id` whose task stopped beating for
/// `stale_secs` as failed, with events saying so. Returns how many.
async fn reap_stale(tx: &mut Tx, chat_id: Uuid, stale_secs: f64) -> Result<usize, sqlx::Error> {
    let reaped: Vec<Uuid> = sqlx::query_scalar!(
        "update turns set status = 'failed', error = 'interrupted', finished_at = now()
          where chat_id = $1 and status = 'running'
            and heartbeat_at < now() - make_interval(secs => $2)
          returning id",
        chat_id,
        stale_secs,
    )
    .fetch_all(&mut **tx)
    .await?;
    end_reaped(tx, chat_id, &reaped).await?;
    Ok(reaped.len())
}

/// The events that say the turns `reaped` (marked failed: their task
/// stopped) were interrupted.
async fn end_reaped(tx: &mut Tx, chat_id: Uuid, reaped: &[Uuid]) -> Result<(), sqlx::Error> {
    for turn_id in reaped {
        let turn = turn_id.to_string();
        events::append(
            tx,
            chat_id,
            Some((*turn_id).into()),
            &ChatEvent::Error {
                turn_id: turn.clone(),
                message: "This reply was interrupted: the server stopped while writing it.".into(),
            },
        )
        .await?;
        events::append(
            tx,
            chat_id,
            Some((*turn_id).into()),
            &ChatEvent::TurnFinished {
                turn_id: turn,
                status: TurnEnding::Failed,
                no_prose_reason: None,
                message_id: None,
            },
        )
        .await?;
    }
    Ok(())
}

/// Periodic recovery of turns (every chat): each running turn whose
/// heartbeat is older than `COUNTERSIGN_TURN_STALE_SECS` lost its process,
/// and ends as [`reap_stale`] ends it, so its chat shows no reply still
/// being written. Each chat in its owner's transaction. Returns how many.
pub async fn reap_all_stale(state: &AppState) -> Result<usize, sqlx::Error> {
    let stale_secs = state.config.turn_stale_secs as f64;
    let mut tx = db::service_tx(&state.db).await?;
    let chats = sqlx::query!(
        "select distinct user_id, chat_id from turns
          where status = 'running' and heartbeat_at < now() - make_interval(secs => $1)",
        stale_secs,
    )
    .map(|r| (r.user_id, r.chat_id))
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    let mut reaped = 0;
    for (user_id, chat_id) in chats {
        let mut tx = db::user_tx(&state.db, user_id).await?;
        reaped += reap_stale(&mut tx, chat_id, stale_secs).await?;
        tx.commit().await?;
    }
    if reaped > 0 {
        tracing::warn!(
            turns = reaped,
            "ended turns whose process stopped (interrupted)"
        );
    }
    Ok(reaped)
}

/// What the turn's task learns once its turn is stored: the chat's model,
/// the user's message, and what says whether the history the task read
/// beside the transaction ([`super::history`]) is the chat's history before the
/// turn ([`super::History::fits`]).
#[derive(Debug)]
pub struct Stored {
    /// The chat's model.
    pub(super) model: String,
    /// The sequence number of the turn's `turn_started` event.
    pub(super) seq: i64,
    /// How many messages the chat had before the turn's.
    pub(super) messages: i64,
    /// The user's message.
    pub(super) content: String,
}

/// Stores the turn (its message, the chat's title, its `turn_started`
/// event) as a transaction of its own; tells this instance's streams.
///
/// One round trip ([`store_alone`]); the chat's streams here wake with the
/// stored event. A chat where that stored nothing (none of the caller's,
/// or one with a running turn) is looked at closer, in a transaction: it
/// may hold a turn whose task stopped, which is ended first; then the turn
/// is stored, or the chat is busy, and the streams wake to read it.
pub(super) async fn begin(
    state: &AppState,
    ctx: ToolContext,
    stamp: session::Stamp,
    content: String,
) -> Result<Stored, TurnError> {
    let message_id = Uuid::new_v4();
    // This instance's streams of the chat wake with the stored
    // `turn_started` itself, not with its NOTIFY (held meanwhile), and
    // need not read it back.
    let writing = state.hub.writing(ctx.chat_id.into());
    let stored = match store_alone(state, ctx, stamp, message_id, &content).await {
        Ok(Some((stored, direct))) => {
            writing.done(direct);
            stored
        }
        Err(err) => return Err(err.into()),
        Ok(None) => {
            // The wake-ups held meanwhile are given.
            drop(writing);
            let mut tx = db::user_tx(&state.db, ctx.user_id).await?;
            // Nothing is written for a session whose stamp no longer
            // holds, here either.
            sqlx::query_scalar!(
                "select check_session_stamp($1, $2)",
                stamp.epoch,
                stamp.ends_ms
            )
            .fetch_one(&mut *tx)
            .await?;
            // The chat, locked: what its turns are now is what counts.
            let found: Option<Uuid> = sqlx::query_scalar!(
                "select id from chats where id = $1 for update",
                ctx.chat_id as ChatId
            )
            .fetch_optional(&mut *tx)
            .await?;
            if found.is_none() {
                return Err(TurnError::ChatNotFound);
            }
            reap_stale(
                &mut tx,
                ctx.chat_id.into(),
                state.config.turn_stale_secs as f64,
            )
            .await?;
            let stored = store(&mut tx, ctx, message_id, &content)
                .await?
                .ok_or(TurnError::Busy)?;
            tx.commit().await?;
            state.hub.appended(events::Appended {
                chat_id: ctx.chat_id.into(),
                seq: stored.seq,
            });
            stored
        }
    };
    Ok(Stored {
        model: stored.model,
        seq: stored.seq,
        messages: stored.messages,
        content,
    })
}

/// What [`store`] stored and read.
struct StoredRow {
    seq: i64,
    model: String,
    /// How many messages the chat had before the new one.
    messages: i64,
}

/// The SQLSTATE of the migration's `store_turn` when it stored nothing.
const NOTHING_STORED: &str = "CSNOT";

/// `None` for [`NOTHING_STORED`].
fn unless_nothing_stored<T>(result: Result<T, sqlx::Error>) -> Result<Option<T>, sqlx::Error> {
    match result {
        Ok(row) => Ok(Some(row)),
        Err(err)
            if err
                .as_database_error()
                .and_then(|e| e.code())
                .is_some_and(|code| code == NOTHING_STORED) =>
        {
            Ok(None)
        }
        Err(err) => Err(err),
    }
}

/// One statement (the migration's `store_turn`), inside `tx`: the turn, its
/// user message, the chat's title (the first message names an untitled
/// chat), the `turn_started` event with its NOTIFY, and how many messages
/// the chat had before them. `None` when nothing was stored: no such chat
/// of the caller's, or a turn of it still running; `tx` is then aborted.
async fn store(
    tx: &mut Tx,
    ctx: ToolContext,
    message_id: Uuid,
    content: &str,
) -> Result<Option<StoredRow>, sqlx::Error> {
    let row = sqlx::query_as!(
        StoredRow,
        r#"select seq as "seq!", model as "model!", messages as "messages!"
             from store_turn($1, $2, $3, $4, $5, $6, $7)"#,
        ctx.chat_id as ChatId,
        ctx.turn_id as TurnId,
        message_id,
        default_title(content),
        content,
        started_data(ctx, message_id, content)?,
        events::EVENTS_CHANNEL,
    )
    .fetch_one(&mut **tx)
    .await;
    unless_nothing_stored(row)
}

/// [`store`] as a transaction of its own, as the turn's user, in one round
/// trip, if the session's `stamp` still holds (the migration's
/// `store_turn_stamped_as`: run outside any transaction, its first act is
/// the switch to `authenticated` with `auth.uid()` = the user, local to
/// its implicit transaction; then the user's session lock, shared, and
/// the stamp's check, which fails with [`session::STAMP_STALE`]). With the
/// row, the stored `turn_started` as this instance's streams may take it
/// without a read: its epoch is the stamp's, checked under that lock
/// (`http::stream`). `None` when nothing was stored, and then nothing was
/// written.
async fn store_alone(
    state: &AppState,
    ctx: ToolContext,
    stamp: session::Stamp,
    message_id: Uuid,
    content: &str,
) -> Result<Option<(StoredRow, events::Direct)>, sqlx::Error> {
    let title = default_title(content);
    let mut data = started_data(ctx, message_id, content)?;
    let content = content.to_owned();
    let pool = state.db.clone();
    // In a task of its own, like every way into a transaction
    // (`db::detached`).
    db::detached(async move {
        let row = sqlx::query!(
            r#"select seq as "seq!", model as "model!", messages as "messages!",
                      epoch as "epoch!", at_ms as "at_ms!"
                 from store_turn_stamped_as($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"#,
            ctx.user_id as UserId,
            stamp.epoch,
            stamp.ends_ms,
            ctx.chat_id as ChatId,
            ctx.turn_id as TurnId,
            message_id,
            title,
            content,
            &data,
            events::EVENTS_CHANNEL,
        )
        .fetch_one(&pool)
        .await;
        let Some(row) = unless_nothing_stored(row)? else {
            return Ok(None);
        };
        // What the statement stored: the event, with the chat's model.
        data["model"] = serde_json::Value::String(row.model.clone());
        let direct = events::Direct::new(row.seq, &data, Some(row.epoch), row.at_ms);
        let stored = StoredRow {
            seq: row.seq,
            model: row.model,
            messages: row.messages,
        };
        Ok(Some((stored, direct)))
    })
    .await
}

/// The `turn_started` event's data, but for the chat's model, which the
/// statement that stores it adds.
fn started_data(
    ctx: ToolContext,
    message_id: Uuid,
    content: &str,
) -> Result<serde_json::Value, sqlx::Error> {
    let started = ChatEvent::TurnStarted {
        turn_id: ctx.turn_id.to_string(),
        model: String::new(),
        user_message: ChatEventMessage {
            id: message_id.to_string(),
            content: content.to_owned(),
        },
    };
    serde_json::to_value(&started).map_err(|e| sqlx::Error::Encode(Box::new(e)))
}

/// A title from the start of the first message: its first line, at most
/// 60 characters, cut at a word.
pub fn default_title(content: &str) -> String {
    let line = content
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    if line.chars().count() <= 60 {
        return line.to_owned();
    }
    let cut: String = line.chars().take(60).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_turn_started_event_leaves_the_model_to_the_statement() {
        let ctx = ToolContext {
            user_id: Uuid::from_u128(1).into(),
            chat_id: Uuid::from_u128(2).into(),
            turn_id: Uuid::from_u128(3).into(),
        };
        let message_id = Uuid::from_u128(4);
        let data = started_data(ctx, message_id, "Summarise the memo").expect("encodes");
        assert_eq!(data["type"], "turn_started");
        assert_eq!(data["turn_id"], ctx.turn_id.to_string());
        assert_eq!(data["model"], "", "store_turn writes the chat's model here");
        assert_eq!(data["user_message"]["id"], message_id.to_string());
        assert_eq!(data["user_message"]["content"], "Summarise the memo");
    }

    #[test]
    fn titles_come_from_the_first_line_cut_at_a_word() {
        assert_eq!(default_title("  Hello there\nsecond line"), "Hello there");
        let long =
            "Please review the indemnification clause in the attached master services agreement";
        let title = default_title(long);
        assert!(
            title.ends_with('…') && title.chars().count() <= 61,
            "{title}"
        );
        assert!(long.starts_with(title.trim_end_matches('…')));
    }
}
