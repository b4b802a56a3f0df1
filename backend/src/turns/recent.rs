//! The histories this instance's turns left behind: a chat's history for
//! the model as its last turn here ended it, kept so that the chat's next
//! turn need not read it again (issue 13: the read was the longest of the
//! reads beside a turn's store, and grows with the chat).
//!
//! A kept history is a guess, never a fact: the next turn takes it only as
//! the history the prefetch would have read, and it goes to the model only
//! if it [fits](super::History::fits) the stored turn — the chat's event log
//! has grown by nothing but that turn's `turn_started` since, and the chat
//! has exactly as many messages as the history was built from. Anything
//! another instance, a late answer of a reaped turn or a planted row did to
//! the chat changes one of the two, and the history is read again.
//!
//! It holds users' content in memory, so it is bounded: entries older than
//! [`MAX_AGE`] are not used, at most [`MAX_ENTRIES`] chats and
//! [`MAX_BYTES`] of text are kept (the least recently kept go first), and a
//! history larger than [`MAX_ENTRY_BYTES`] is not kept at all. A turn takes
//! its chat's entry out (a turn runs alone in its chat), so no two turns
//! share one, and one that ends any other way than with its answer stored
//! puts nothing back.

use super::History;
use crate::{
    ids::{ChatId, UserId},
    llm::Message,
};
use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

/// How long a kept history may wait for the chat's next turn.
pub const MAX_AGE: Duration = Duration::from_secs(10 * 60);
/// Chats kept at most.
pub const MAX_ENTRIES: usize = 4096;
/// Text kept at most, all chats together.
pub const MAX_BYTES: usize = 16 << 20;
/// The largest history kept.
pub const MAX_ENTRY_BYTES: usize = 1 << 20;

/// The kept histories (one per chat).
#[derive(Debug, Default)]
pub struct Recent {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    chats: HashMap<ChatId, Entry>,
    bytes: usize,
}

#[derive(Debug)]
struct Entry {
    user_id: UserId,
    history: History,
    bytes: usize,
    kept_at: Instant,
}

/// About how much memory a history's messages hold (their text, and a
/// little for each).
fn size_of(history: &History) -> usize {
    history
        .messages
        .iter()
        .map(|message| {
            64 + match message {
                Message::User { text } => text.len(),
                Message::Assistant { text, tool_calls } => {
                    text.len() + tool_calls.iter().map(|c| c.name.len() + 64).sum::<usize>()
                }
                Message::ToolResult { content, name, .. } => content.len() + name.len(),
            }
        })
        .sum()
}

impl Recent {
    /// Takes out chat `chat_id`'s kept history, if `user_id`'s and not too
    /// old. It is gone from here either way.
    pub fn take(&self, chat_id: ChatId, user_id: UserId) -> Option<History> {
        let mut inner = self.lock();
        let entry = inner.chats.remove(&chat_id)?;
        inner.bytes -= entry.bytes;
        (entry.user_id == user_id && entry.kept_at.elapsed() < MAX_AGE).then_some(entry.history)
    }

    /// Keeps `history` as chat `chat_id`'s, as `user_id`'s turn there left
    /// it; makes room by dropping the oldest.
    pub fn keep(&self, chat_id: ChatId, user_id: UserId, history: History) {
        let bytes = size_of(&history);
        let mut inner = self.lock();
        if let Some(old) = inner.chats.remove(&chat_id) {
            inner.bytes -= old.bytes;
        }
        if bytes > MAX_ENTRY_BYTES {
            return;
        }
        inner
            .chats
            .retain(|_, entry| entry.kept_at.elapsed() < MAX_AGE);
        inner.bytes = inner.chats.values().map(|e| e.bytes).sum();
        while inner.chats.len() >= MAX_ENTRIES || inner.bytes + bytes > MAX_BYTES {
            let Some(oldest) = inner
                .chats
                .iter()
                .min_by_key(|(_, entry)| entry.kept_at)
                .map(|(id, _)| *id)
            else {
                break;
            };
            if let Some(entry) = inner.chats.remove(&oldest) {
                inner.bytes -= entry.bytes;
            }
        }
        inner.bytes += bytes;
        inner.chats.insert(
            chat_id,
            Entry {
                user_id,
                history,
                bytes,
                kept_at: Instant::now(),
            },
        );
    }

    /// How many chats have a kept history (for tests).
    pub fn len(&self) -> usize {
        self.lock().chats.len()
    }

    /// Whether none has.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn history(text: &str) -> History {
        History {
            last_seq: 7,
            count: 1,
            messages: vec![Message::User { text: text.into() }],
        }
    }

    fn ids() -> (ChatId, UserId) {
        (Uuid::new_v4().into(), Uuid::new_v4().into())
    }

    #[test]
    fn a_kept_history_is_taken_once_and_only_by_its_user() {
        let recent = Recent::default();
        let (chat, user) = ids();
        recent.keep(chat, user, history("hello"));
        let (_, other) = ids();
        assert!(recent.take(chat, other).is_none(), "another user's");
        assert!(recent.take(chat, user).is_none(), "gone after any take");

        recent.keep(chat, user, history("hello"));
        let taken = recent.take(chat, user).expect("kept");
        assert_eq!((taken.last_seq, taken.count), (7, 1));
        assert!(recent.take(chat, user).is_none(), "taken once");
        assert!(recent.is_empty());
    }

    #[test]
    fn it_holds_no_more_than_its_bounds() {
        let recent = Recent::default();
        let (chat, user) = ids();
        recent.keep(chat, user, history(&"x".repeat(MAX_ENTRY_BYTES + 1)));
        assert!(recent.is_empty(), "too large to keep");

        // Each near the largest kept: the budget holds fewer than this many,
        // and the first ones kept go first.
        let large = "y".repeat(MAX_ENTRY_BYTES - 100);
        let n = MAX_BYTES / MAX_ENTRY_BYTES + 1;
        let chats: Vec<ChatId> = (0..n).map(|_| ids().0).collect();
        for chat in &chats {
            recent.keep(*chat, user, history(&large));
        }
        assert!(recent.lock().bytes <= MAX_BYTES);
        assert!(recent.len() < n);
        assert!(recent.take(chats[0], user).is_none(), "the oldest went");
        assert!(recent.take(chats[n - 1], user).is_some());
    }
}
