//! How a turn's events reach its chat: [`Emitter`] writes each as a user
//! transaction of its own in one round trip, and is the tool box's
//! [`EventSink`]; [`Ending`] is how a turn ended.

use crate::{
    AppState, events,
    tools::{BoxFuture, EventSink, ToolContext},
};
use countersign_api::{ChatEvent, TurnEnding};

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ending {
    /// The model finished.
    Done,
    /// An error ended it.
    Failed,
    /// Stop.
    Cancelled,
}

impl Ending {
    /// The `turn_finished.status` word (also the `turns.status` column).
    pub(super) fn wire(self) -> TurnEnding {
        match self {
            Self::Done => TurnEnding::Done,
            Self::Failed => TurnEnding::Failed,
            Self::Cancelled => TurnEnding::Cancelled,
        }
    }

    /// The word as stored.
    pub(super) fn as_str(self) -> &'static str {
        self.wire().as_str()
    }
}

/// Writes a turn's events, each a user transaction of its own in one round
/// trip ([`events::append_alone`]).
pub(super) struct Emitter<'a> {
    pub(super) state: &'a AppState,
    /// The turn it writes for.
    pub(super) ctx: ToolContext,
}

impl Emitter<'_> {
    /// Appends `event` (a failure is logged: the turn goes on).
    pub(super) async fn emit(&self, event: &ChatEvent) {
        // Boxed, like every database round trip and model call on the
        // turn's way: the turn's future is as large as its largest state,
        // and a turn waiting for an approval should not carry the state of
        // writes it is not making (see [`super::run`]).
        // This instance's streams of the chat need not wait for the
        // NOTIFY to come back, nor read the event back: they wake with it.
        let writing = self.state.hub.writing(self.ctx.chat_id.into());
        let result = Box::pin(events::append_alone(
            &self.state.db,
            self.ctx.user_id,
            self.ctx.chat_id,
            Some(self.ctx.turn_id),
            event,
        ))
        .await;
        match result {
            Ok(direct) => writing.done(direct),
            Err(err) => {
                tracing::error!(error = %err, turn.id = %self.ctx.turn_id, "cannot write a turn event");
            }
        }
    }

    /// The turn's id, as events carry it.
    pub(super) fn turn(&self) -> String {
        self.ctx.turn_id.to_string()
    }

    /// Writes the text deltas `pending` holds, if any, and empties it.
    pub(super) async fn text(&self, pending: &mut String) {
        if !pending.is_empty() {
            let text = std::mem::take(pending);
            self.emit(&ChatEvent::TextDelta {
                turn_id: self.turn(),
                text,
            })
            .await;
        }
    }

    /// Writes an `error` event.
    pub(super) async fn error(&self, message: String) {
        self.emit(&ChatEvent::Error {
            turn_id: self.turn(),
            message,
        })
        .await;
    }
}

impl EventSink for Emitter<'_> {
    fn emit<'a>(&'a self, event: ChatEvent) -> BoxFuture<'a, ()> {
        Box::pin(async move { Emitter::emit(self, &event).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_ending_is_stored_as_the_word_the_wire_uses() {
        let cases = [
            (Ending::Done, TurnEnding::Done, "done"),
            (Ending::Failed, TurnEnding::Failed, "failed"),
            (Ending::Cancelled, TurnEnding::Cancelled, "cancelled"),
        ];
        for (ending, wire, word) in cases {
            assert_eq!(ending.wire(), wire, "{word}");
            assert_eq!(ending.as_str(), word, "{word}: the `turns.status` column");
        }
    }
}
