//! What the model is given: a chat's history ([`History`], read by
//! [`HISTORY`] as the user), read beside the turn's store with the user's
//! tools and keys ([`prefetch`]), and used only if it [fits](History::fits)
//! the stored turn — or else read again ([`history`]).
//!
//! It writes nothing.

use super::Stored;
use crate::{
    AppState,
    auth::session,
    db::{
        self,
        trip::{Arg, As, Part, Statement},
    },
    llm::{self, Message},
    models,
    tools::ToolContext,
};
use sqlx::{Row as _, postgres::PgRow};

/// The chat's history for the model (`$1`), but for the rows of turn `$2`
/// (the one being started), with the chat's `last_seq` when it was read:
/// every earlier turn's user message and its answer. A turn whose answer
/// was never stored (it was interrupted) is carried with the text of its
/// own events (read from the turn's first event on, by the log's key, not
/// the chat's whole log), or without an answer. No row when the chat is
/// not the user's; one row with no message for a chat without any.
static HISTORY: Statement = Statement {
    name: "cs_history",
    params: "(uuid, uuid)",
    sql: "select c.last_seq, h.role, h.content, h.recovered \
            from chats c \
            left join lateral ( \
              select m.role, m.content, m.created_at, r.text as recovered \
                from (select role, content, turn_id, created_at, \
                             bool_or(role = 'assistant') over (partition by turn_id) as answered \
                        from messages where chat_id = $1 and turn_id <> $2) m \
                left join lateral ( \
                       select string_agg(e.data->>'text', '' order by e.seq) as text \
                         from turns t \
                         join chat_events e \
                           on e.chat_id = $1 and e.seq >= t.started_seq \
                          and e.turn_id = t.id and e.type = 'text_delta' \
                        where t.id = m.turn_id and m.role = 'user' and not m.answered \
                     ) r on true \
            ) h on true \
           where c.id = $1 \
           order by h.created_at, (h.role = 'assistant')",
};

/// The statements [`db::trip`] runs here, for the test that prepares them all.
pub static TRIPS: [&Statement; 1] = [&HISTORY];

/// A chat's history for the model, as [`HISTORY`] read it.
#[derive(Debug)]
pub struct History {
    /// The chat's `last_seq` when it was read.
    pub(super) last_seq: i64,
    /// How many messages it was read from.
    pub(super) count: i64,
    /// The messages, oldest first.
    pub(super) messages: Vec<Message>,
}

impl History {
    /// The read of turn `ctx`'s chat's history, as a part of a trip.
    fn part(ctx: ToolContext) -> Part {
        Part {
            who: As::User(ctx.user_id),
            statement: &HISTORY,
            args: vec![Arg::uuid(ctx.chat_id), Arg::uuid(ctx.turn_id)],
        }
    }

    /// `None`: no such chat of the user's.
    fn from_rows(rows: &[PgRow]) -> Result<Option<Self>, sqlx::Error> {
        let Some(first) = rows.first() else {
            return Ok(None);
        };
        let mut history = History {
            last_seq: first.try_get("last_seq")?,
            count: 0,
            messages: Vec::new(),
        };
        for row in rows {
            let role: Option<String> = row.try_get("role")?;
            let content: Option<String> = row.try_get("content")?;
            let recovered: Option<String> = row.try_get("recovered")?;
            let (Some(role), Some(text)) = (role, content) else {
                // No history: the chat's first message.
                continue;
            };
            history.count += 1;
            if role == "user" {
                history.messages.push(Message::User { text });
                if let Some(text) = &recovered {
                    push_assistant(&mut history.messages, text);
                }
            } else {
                push_assistant(&mut history.messages, &text);
            }
        }
        Ok(Some(history))
    }

    /// Whether this is the history of `stored`'s chat just before its
    /// turn was stored. It was read (or kept by the chat's last turn here,
    /// [`super::recent`], as of its `turn_finished`) either before the turn was stored,
    /// with nothing appended to the chat's event log since (an append bumps
    /// `last_seq`, and the turn's own `turn_started` is the next number),
    /// or after, with nothing appended since the turn's `turn_started`
    /// (`last_seq` is that event's: only a snapshot that sees the turn's
    /// commit has it, and the read leaves the turn's own rows out). And
    /// the chat has as many messages as then (they are only ever added,
    /// and deleted only with their chat; an answer is stored with its
    /// turn's `turn_finished`, except when its turn was ended without it,
    /// which the count sees). The count is the chat row's `message_count`,
    /// which every statement or transaction that adds a message raises
    /// (`store`'s, `finish`).
    fn fits(&self, stored: &Stored) -> bool {
        (self.last_seq == stored.seq - 1 || self.last_seq == stored.seq)
            && self.count == stored.messages
    }
}

/// What a turn reads beside the transaction that stores it: the user's
/// tools (with the policy they are offered under) in one trip; the user's
/// provider keys and the chat's history in another, side by side; or, when
/// this instance kept the history the chat's last turn left ([`super::recent`]),
/// the tools and the keys in one trip ([`crate::tools::ToolBox::tools_with`]).
#[derive(Debug, Default)]
pub struct Prefetched {
    /// The user's provider keys, still sealed.
    pub(super) keys: models::UserKeys,
    /// The tools offered at the first step.
    pub(super) tools: Vec<llm::ToolSpec>,
    /// Read or kept; `None` when it could not be read (it is read again,
    /// once the turn is stored).
    pub(super) history: Option<History>,
}

/// [`Prefetched`]; with a `stamp`, `None` when the tool box found it no
/// longer holds. The reads are reads; the tool box may also write on the
/// user's behalf once its trip is back (a connector whose tool list is old
/// is fetched again, and what changed recorded), and checks the stamp
/// before it does ([`crate::tools::ToolBox::tools_with`]'s `first_check`:
/// one more round trip, only then).
pub(super) async fn prefetch(
    state: &AppState,
    ctx: ToolContext,
    stamp: Option<session::Stamp>,
) -> Option<Prefetched> {
    let user_id = ctx.user_id;
    let check = || stamp.map(|stamp| session::stamp_check(user_id.into(), stamp));
    // The history this instance's last turn of the chat left, if any (it
    // goes to the model only if it fits the stored turn, like a read one:
    // `history`): the keys are then the only read left, and go in the
    // tools' trip; otherwise the keys and the history are a trip of their
    // own, beside the tools' (one trip of five parts, on one backend,
    // measured slower than two side by side: the history read is long).
    let kept = state.recent.take(ctx.chat_id, user_id);
    let keys = models::UserKeys::part(user_id.into());
    let stale = |rows: &Result<Vec<Vec<PgRow>>, sqlx::Error>| {
        rows.as_ref().is_err_and(session::is_stale_stamp)
    };
    let (keys, tools, history) = match kept {
        // Only the keys to read: in the tools' trip.
        Some(kept) => {
            let (tools, rows) = state
                .tools
                .tools_with(state, user_id.into(), vec![keys], check())
                .await;
            if stale(&rows) {
                return None;
            }
            let keys = rows.and_then(|rows| models::UserKeys::from_rows(user_id.into(), &rows[0]));
            (keys, tools, Ok(Some(kept)))
        }
        // The keys and the history: a trip of their own, beside the tools'.
        None => {
            let read = db::trip::run_parts(&state.db, vec![keys, History::part(ctx)]);
            let tools = state
                .tools
                .tools_with(state, user_id.into(), Vec::new(), check());
            let ((tools, checked), rows) = tokio::join!(tools, read);
            if stale(&checked) {
                return None;
            }
            match rows {
                Ok(rows) => (
                    models::UserKeys::from_rows(user_id.into(), &rows[0]),
                    tools,
                    History::from_rows(&rows[1]),
                ),
                Err(err) => (Err(err), tools, Ok(None)),
            }
        }
    };
    let keys = keys.unwrap_or_else(|err| {
        tracing::error!(error = %err, user.id = %user_id, "cannot read the user's keys");
        models::UserKeys::default()
    });
    let history = history.unwrap_or_else(|err| {
        tracing::warn!(error = %err, chat.id = %ctx.chat_id, "cannot read the chat's history beside its turn");
        None
    });
    Some(Prefetched {
        keys,
        tools,
        history,
    })
}

/// The history the turn gives the model, its user message last: the one
/// read beside the turn's transaction, or kept by the chat's last turn
/// here, when it [fits](History::fits), or else read now (the chat changed
/// since, or the read failed).
pub(super) async fn history(
    state: &AppState,
    ctx: ToolContext,
    stored: Stored,
    prefetched: Option<History>,
) -> Result<Vec<Message>, sqlx::Error> {
    let history = match prefetched.filter(|h| h.fits(&stored)) {
        Some(history) => history,
        None => {
            let rows = db::trip::run(&state.db, History::part(ctx)).await?;
            History::from_rows(&rows)?.ok_or(sqlx::Error::RowNotFound)?
        }
    };
    let mut messages = history.messages;
    messages.push(Message::User {
        text: stored.content,
    });
    Ok(messages)
}

/// Adds `text` as an assistant message, unless it is blank (a provider
/// refuses an empty one).
pub(super) fn push_assistant(messages: &mut Vec<Message>, text: &str) {
    if !text.trim().is_empty() {
        messages.push(Message::Assistant {
            text: text.to_owned(),
            tool_calls: Vec::new(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blank_answer_never_reaches_the_history() {
        let mut messages = Vec::new();
        push_assistant(&mut messages, "");
        push_assistant(&mut messages, " \n\t ");
        assert!(messages.is_empty(), "{messages:?}");
        push_assistant(&mut messages, "Done.");
        assert_eq!(
            messages,
            [Message::Assistant {
                text: "Done.".into(),
                tool_calls: Vec::new(),
            }]
        );
    }

    #[test]
    fn a_history_fits_only_the_chat_it_was_read_from_unchanged() {
        let read = History {
            last_seq: 41,
            count: 6,
            messages: Vec::new(),
        };
        let stored = |seq, messages| Stored {
            model: "offline/demo".into(),
            seq,
            messages,
            content: "hi".into(),
        };
        assert!(read.fits(&stored(42, 6)), "nothing happened in between");
        assert!(
            !read.fits(&stored(43, 6)),
            "an event was appended in between"
        );
        assert!(
            !read.fits(&stored(42, 7)),
            "an answer was stored without an event"
        );
        assert!(
            read.fits(&stored(41, 6)),
            "read just after the turn was stored: its own rows are left out"
        );
        assert!(
            !read.fits(&stored(40, 6)),
            "read after the turn was stored and an event after it"
        );
    }
}
