//! The turn's task ([`run`]): the store and the reads beside it, then
//! [`setup`] (the model, the history), [`drive`] (per step, [`stream_step`]
//! and [`run_calls`]) and [`finish`] (the answer stored, the turn ended).

use super::{
    EMPTY_RESPONSE, TurnError,
    emitter::{Emitter, Ending},
    heartbeat::heartbeat,
    history::{History, Prefetched, history, prefetch, push_assistant},
    spotlight::{SYSTEM_PROMPT, spotlight},
    store::{Stored, begin},
};
use crate::{
    AppState,
    auth::session,
    db, events,
    ids::{ChatId, TurnId},
    llm::{self, ChatRequest, LlmEvent, Message, ToolCall},
    models,
    tools::{NotRun, ToolContext, ToolRun, TurnSeen},
};
use countersign_api::{ChatEvent, MessageStatus, NoProseReason, ToolCallStatus};
use std::time::Duration;
use tokio::{
    sync::{oneshot, watch},
    time::Instant,
};
use uuid::Uuid;

/// Text deltas are coalesced for this long before they are written.
const FLUSH_EVERY: Duration = Duration::from_millis(40);

/// Why a turn ended without text on purpose: every call was declined or
/// expired.
pub const DECLINED_REASON: NoProseReason = NoProseReason::Declined;

/// The turn's task.
///
/// A turn spends most of its life parked, waiting for a decision on a card
/// (up to `COUNTERSIGN_APPROVAL_WAIT_SECS`), and a future is as large as
/// its largest state. So the steps that are not on the way to that wait —
/// [`setup`], [`stream_step`], [`finish`], each event write — are boxed:
/// their state exists only while they run, and a waiting turn holds little
/// more than its history ([`drive`] reads the tools again for each step;
/// `docs/operations.md`, "Where the memory goes").
///
/// It stores the turn ([`begin`]) and reads what needs nothing from the
/// chat beside it; it tells [`start`](super::start) (`answer`) as soon as the turn is
/// stored, and ends at once, having written nothing, when it was not.
pub async fn run(
    state: AppState,
    ctx: ToolContext,
    stamp: session::Stamp,
    content: String,
    answer: oneshot::Sender<Result<(), TurnError>>,
) {
    // Boxed: a turn waiting for an approval carries none of its state.
    let read = Box::pin(prefetch(&state, ctx, Some(stamp)));
    let store = async {
        match Box::pin(begin(&state, ctx, stamp, content)).await {
            Ok(stored) => {
                // Fails only if the request's handler is gone: the turn
                // runs all the same.
                let _ = answer.send(Ok(()));
                Ok(stored)
            }
            Err(err) => {
                let _ = answer.send(Err(err));
                Err(())
            }
        }
    };
    let Ok((prefetched, stored)) = tokio::try_join!(async { Ok::<_, ()>(read.await) }, store)
    else {
        return;
    };
    // The stamp held for the store but no longer for the reads beside it
    // (the session or the user changed in between): the turn is stored,
    // which is all the stamp was for, and its reads are made again.
    let prefetched = match prefetched {
        Some(prefetched) => prefetched,
        None => Box::pin(prefetch(&state, ctx, None))
            .await
            .unwrap_or_default(),
    };
    let _running = state.metrics.turn_running();
    let mut cancel = state.hub.register_turn(ctx.turn_id);
    if state.hub.first_turn() {
        tokio::spawn(heartbeat(state.clone()));
    }
    let emitter = Emitter { state: &state, ctx };
    let mut outcome = Outcome::default();
    let (text, ending, setup) = match Box::pin(setup(&state, &emitter, stored, prefetched)).await {
        Some(mut setup) => {
            let (text, ending) =
                drive(&state, &emitter, &mut setup, &mut cancel, &mut outcome).await;
            (text, ending, Some(setup))
        }
        None => (String::new(), Ending::Failed, None),
    };
    state.hub.unregister_turn(ctx.turn_id);
    let no_prose_reason = (outcome.not_run > 0 && outcome.ran == 0).then_some(DECLINED_REASON);
    match Box::pin(finish(&state, &emitter, &text, ending, no_prose_reason)).await {
        // The history as this turn leaves it, for the chat's next turn.
        Ok(Some(seq)) => {
            if let Some(setup) = setup {
                let history = setup.into_history(&text, seq);
                state.recent.keep(ctx.chat_id, ctx.user_id, history);
            }
        }
        Ok(None) => {}
        Err(err) => {
            tracing::error!(error = %err, turn.id = %ctx.turn_id, "cannot record the end of a turn");
        }
    }
}

fn is_cancelled(cancel: &watch::Receiver<bool>) -> bool {
    *cancel.borrow()
}

/// What the turn's tool calls came to.
#[derive(Debug, Default)]
struct Outcome {
    /// Calls that ran (or tried to).
    ran: usize,
    /// Calls the user declined or let expire.
    not_run: usize,
}

/// The tool loop, once [`setup`] is done: up to `max_tool_steps` rounds of
/// [`stream_step`] (one model call, streamed) and [`run_calls`] (the calls
/// it asked for, in order). Returns the turn's text (all steps) and how it
/// ended.
async fn drive(
    state: &AppState,
    emitter: &Emitter<'_>,
    setup: &mut Setup,
    cancel: &mut watch::Receiver<bool>,
    outcome_of_calls: &mut Outcome,
) -> (String, Ending) {
    let ctx = emitter.ctx;
    let mut text = String::new();
    // What the turn's calls return, for the provenance of later calls.
    let seen = TurnSeen::default();
    let mut first_tools = Some(std::mem::take(&mut setup.tools));

    for step in 0..state.config.max_tool_steps {
        if is_cancelled(cancel) {
            return (text, Ending::Cancelled);
        }
        // The first step's tools were read with the history; each later
        // step reads them again (as a new turn would), so a turn parked on
        // a card holds no tool specs, and a tool the user set aside in the
        // meantime is no longer offered.
        let tools = match first_tools.take() {
            Some(tools) => tools,
            None => state.tools.tools_for(state, ctx.user_id.into()).await,
        };
        let request = ChatRequest {
            model: setup.model_name.clone(),
            system: SYSTEM_PROMPT.to_owned(),
            messages: std::borrow::Cow::Borrowed(&setup.messages),
            tools,
            max_tokens: 4096,
        };
        let streamed = Box::pin(stream_step(
            state,
            emitter,
            &setup.provider,
            request,
            cancel,
        ))
        .await;
        text.push_str(&streamed.text);
        if let Some(ending) = streamed.ended {
            return (text, ending);
        }
        if streamed.calls.is_empty() {
            return (text, Ending::Done);
        }
        // The calls live in the history only: a turn parked on a card
        // holds them once.
        let calls = streamed.calls.len();
        setup.messages.push(Message::Assistant {
            text: streamed.text,
            tool_calls: streamed.calls,
        });
        if let Some(ending) = run_calls(
            state,
            emitter,
            setup.messages.len() - 1,
            cancel,
            outcome_of_calls,
            &mut setup.messages,
            &seen,
        )
        .await
        {
            return (text, ending);
        }
        tracing::debug!(turn.id = %ctx.turn_id, step, calls, "tool step done");
        if !text.is_empty() && !text.ends_with(char::is_whitespace) {
            text.push_str("\n\n");
        }
    }
    emitter
        .error(format!(
            "Stopped after {} model calls in one turn. Ask again to continue.",
            state.config.max_tool_steps
        ))
        .await;
    (text.trim_end().to_owned(), Ending::Failed)
}

/// What a turn needs before its first model call.
struct Setup {
    provider: llm::Provider,
    model_name: String,
    /// The chat's history, the user's message (at `user_at`), and then
    /// what the turn's steps add (their calls and results).
    messages: Vec<Message>,
    user_at: usize,
    /// How many messages the chat had before the turn's.
    before: i64,
    tools: Vec<llm::ToolSpec>,
}

impl Setup {
    /// The chat's history as the turn leaves it once its answer, `text`,
    /// is stored as the event `seq`: what `HISTORY` would read then, kept
    /// for the chat's next turn ([`super::recent`]).
    fn into_history(mut self, text: &str, seq: i64) -> History {
        self.messages.truncate(self.user_at + 1);
        push_assistant(&mut self.messages, text);
        History {
            last_seq: seq,
            count: self.before + 2,
            messages: self.messages,
        }
    }
}

/// Resolves the chat's model with the keys read beside the turn's
/// transaction, and its history ([`history`]). On failure the chat has
/// been told why, and the turn fails.
async fn setup(
    state: &AppState,
    emitter: &Emitter<'_>,
    stored: Stored,
    prefetched: Prefetched,
) -> Option<Setup> {
    let (provider, model_name) = match models::resolve_with(state, &prefetched.keys, &stored.model)
    {
        Ok(p) => p,
        Err(err) => {
            emitter.error(err.to_string()).await;
            return None;
        }
    };
    let before = stored.messages;
    let messages = match history(state, emitter.ctx, stored, prefetched.history).await {
        Ok(messages) => messages,
        Err(err) => {
            tracing::error!(error = %err, turn.id = %emitter.ctx.turn_id, "cannot read the chat's history");
            emitter
                .error("The chat's history could not be read. Try again.".into())
                .await;
            return None;
        }
    };
    Some(Setup {
        provider,
        model_name,
        user_at: messages.len() - 1,
        before,
        messages,
        tools: prefetched.tools,
    })
}

/// One model call, streamed to the chat.
struct Streamed {
    /// The step's text (all of it reached the chat).
    text: String,
    /// The tool calls it asked for, in order.
    calls: Vec<ToolCall>,
    /// Set when the turn ends here (Stop, a provider error, a cut stream).
    ended: Option<Ending>,
}

/// Streams one model call: text deltas go out at once for the first and
/// then coalesced to at most one write per `FLUSH_EVERY`; each tool call is
/// announced as it arrives. Stop wins over everything (`biased`).
async fn stream_step(
    state: &AppState,
    emitter: &Emitter<'_>,
    provider: &llm::Provider,
    request: ChatRequest<'_>,
    cancel: &mut watch::Receiver<bool>,
) -> Streamed {
    let mut streamed = Streamed {
        text: String::new(),
        calls: Vec::new(),
        ended: None,
    };
    let mut rx = match llm::stream(&state.http, &state.llm_http, provider, request).await {
        Ok(rx) => rx,
        Err(err) => {
            emitter.error(err.to_string()).await;
            streamed.ended = Some(Ending::Failed);
            return streamed;
        }
    };
    let mut pending = String::new();
    let mut last_flush = Instant::now() - FLUSH_EVERY;
    let mut flush_at = last_flush;
    loop {
        let item = tokio::select! {
            biased;
            _ = cancel.changed() => {
                emitter.text(&mut pending).await;
                streamed.ended = Some(Ending::Cancelled);
                return streamed;
            }
            () = tokio::time::sleep_until(flush_at), if !pending.is_empty() => {
                emitter.text(&mut pending).await;
                last_flush = Instant::now();
                continue;
            }
            item = rx.recv() => item,
        };
        match item {
            Some(Ok(LlmEvent::TextDelta(delta))) => {
                let was_empty = pending.is_empty();
                pending.push_str(&delta);
                streamed.text.push_str(&delta);
                if Instant::now() >= last_flush + FLUSH_EVERY {
                    // Nothing written for a while (the first token): out at
                    // once, not on the timer's next tick.
                    emitter.text(&mut pending).await;
                    last_flush = Instant::now();
                } else if was_empty {
                    flush_at = last_flush + FLUSH_EVERY;
                }
            }
            Some(Ok(LlmEvent::ToolCall(call))) => {
                emitter.text(&mut pending).await;
                emitter
                    .emit(&ChatEvent::ToolCall {
                        turn_id: emitter.turn(),
                        id: call.id.clone(),
                        tool_name: call.name.clone(),
                        arguments: call.arguments.clone(),
                    })
                    .await;
                streamed.calls.push(call);
            }
            Some(Ok(LlmEvent::Finished(_))) => {
                emitter.text(&mut pending).await;
                return streamed;
            }
            Some(Err(err)) => {
                emitter.text(&mut pending).await;
                emitter.error(err.to_string()).await;
                streamed.ended = Some(Ending::Failed);
                return streamed;
            }
            None => {
                emitter.text(&mut pending).await;
                emitter
                    .error("The model's response ended unexpectedly. Try again.".into())
                    .await;
                streamed.ended = Some(Ending::Failed);
                return streamed;
            }
        }
    }
}

/// Runs the step's calls (those of the assistant message `messages[at]`)
/// one after another; every call gets a result, even when it cannot run,
/// and each result is added to `messages` (spotlighted). A call is not
/// dropped half-way: the tool box watches Stop itself (a waiting approval
/// is then denied; a running call finishes and is recorded). Returns `Some(Cancelled)` when a Stop came between calls.
async fn run_calls(
    state: &AppState,
    emitter: &Emitter<'_>,
    at: usize,
    cancel: &mut watch::Receiver<bool>,
    outcome_of_calls: &mut Outcome,
    messages: &mut Vec<Message>,
    seen: &TurnSeen,
) -> Option<Ending> {
    let count = match messages.get(at) {
        Some(Message::Assistant { tool_calls, .. }) => tool_calls.len(),
        _ => 0,
    };
    for i in 0..count {
        let Some(Message::Assistant { tool_calls, .. }) = messages.get(at) else {
            break;
        };
        let call = &tool_calls[i];
        if is_cancelled(cancel) {
            return Some(Ending::Cancelled);
        }
        let run = ToolRun {
            state,
            ctx: emitter.ctx,
            events: emitter,
            cancel: cancel.clone(),
            seen,
        };
        let outcome = state.tools.call(&run, call).await;
        match outcome.not_run {
            Some(NotRun::Declined | NotRun::Expired) => outcome_of_calls.not_run += 1,
            None => outcome_of_calls.ran += 1,
        }
        if !outcome.reported {
            emitter
                .emit(&ChatEvent::ToolResult {
                    turn_id: emitter.turn(),
                    id: call.id.clone(),
                    tool_name: call.name.clone(),
                    status: if outcome.ok {
                        ToolCallStatus::Ok
                    } else {
                        ToolCallStatus::Error
                    },
                    error: (!outcome.ok).then(|| outcome.content.clone()),
                })
                .await;
        }
        messages.push(Message::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: spotlight(&call.name, &outcome.content),
            is_error: !outcome.ok,
        });
    }
    None
}

/// Stores the answer and ends the turn. Returns the sequence number of its
/// `turn_finished` when this ended it with its answer stored (the turn may
/// have been ended elsewhere already, and an empty answer is not stored).
async fn finish(
    state: &AppState,
    emitter: &Emitter<'_>,
    text: &str,
    ending: Ending,
    no_prose_reason: Option<NoProseReason>,
) -> Result<Option<i64>, sqlx::Error> {
    let ctx = emitter.ctx;
    let mut tx = db::user_tx(&state.db, ctx.user_id).await?;
    let message_id = if text.trim().is_empty() {
        None
    } else {
        let id = Uuid::new_v4();
        let status = match ending {
            Ending::Done => MessageStatus::Complete,
            Ending::Cancelled => MessageStatus::Stopped,
            Ending::Failed => MessageStatus::Failed,
        }
        .as_str();
        sqlx::query!(
            "insert into messages (id, chat_id, turn_id, role, content, status)
             values ($1, $2, $3, 'assistant', $4, $5)",
            id,
            ctx.chat_id as ChatId,
            ctx.turn_id as TurnId,
            text,
            status,
        )
        .execute(&mut *tx)
        .await?;
        Some(id)
    };
    let no_prose_reason = no_prose_reason.filter(|_| message_id.is_none());
    if ending == Ending::Done && message_id.is_none() && no_prose_reason.is_none() {
        events::append(
            &mut tx,
            ctx.chat_id,
            Some(ctx.turn_id),
            &ChatEvent::Error {
                turn_id: ctx.turn_id.to_string(),
                message: EMPTY_RESPONSE.into(),
            },
        )
        .await?;
    }
    let updated = sqlx::query!(
        "update turns set status = $2, finished_at = now(), no_prose_reason = $3
          where id = $1 and status = 'running'",
        ctx.turn_id as TurnId,
        ending.as_str(),
        no_prose_reason.map(NoProseReason::as_str),
    )
    .execute(&mut *tx)
    .await?;
    let mut finished = None;
    let ended_here = updated.rows_affected() == 1;
    if ended_here {
        let seq = events::append(
            &mut tx,
            ctx.chat_id,
            Some(ctx.turn_id),
            &ChatEvent::TurnFinished {
                turn_id: ctx.turn_id.to_string(),
                status: ending.wire(),
                no_prose_reason,
                message_id: message_id.map(|id| id.to_string()),
            },
        )
        .await?;
        finished = message_id.map(|_| seq);
    }
    // The chat's row counts its messages (`History::fits`), the answer
    // included when the turn was ended elsewhere first.
    if ended_here || message_id.is_some() {
        sqlx::query!(
            "update chats set updated_at = case when $2 then now() else updated_at end,
                              message_count = message_count + $3
              where id = $1",
            ctx.chat_id as ChatId,
            ended_here,
            i64::from(message_id.is_some()),
        )
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    tracing::info!(turn.id = %ctx.turn_id, turn.status = ending.as_str(), "turn finished");
    Ok(finished)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A turn waiting for a decision is parked inside its task's future,
    /// which is as large as its largest state: the steps off that path are
    /// boxed (see [`run`]). Unboxed, it was ~19 KiB in a release build; a
    /// thousand waiting turns carried that each. Sizes, not times (debug
    /// build here: 1,848 B when this was written).
    #[test]
    fn a_waiting_turns_task_is_small() {
        fn future_size<A, B, C, D, E, F>(_: fn(A, B, C, D, E) -> F) -> usize {
            std::mem::size_of::<F>()
        }
        let run = future_size(run);
        assert!(run <= 4096, "the turn's future is {run} B");
    }

    #[test]
    fn a_turn_leaves_its_question_and_answer_but_not_its_steps() {
        let question = Message::User {
            text: "Find the memo".into(),
        };
        let earlier = Message::User {
            text: "Hello".into(),
        };
        let call = ToolCall {
            id: "c1".into(),
            name: "docs__search".into(),
            arguments: serde_json::json!({"q": "memo"}),
        };
        let setup = Setup {
            provider: llm::Provider::Offline {
                word_delay: Duration::ZERO,
            },
            model_name: "demo".into(),
            messages: vec![
                earlier.clone(),
                question.clone(),
                Message::Assistant {
                    text: "Searching.".into(),
                    tool_calls: vec![call],
                },
                Message::ToolResult {
                    call_id: "c1".into(),
                    name: "docs__search".into(),
                    content: "memo.txt".into(),
                    is_error: false,
                },
            ],
            user_at: 1,
            before: 1,
            tools: Vec::new(),
        };
        let history = setup.into_history("Searching.\n\nFound memo.txt.", 12);
        assert_eq!(history.last_seq, 12, "as of its turn_finished");
        assert_eq!(
            history.count, 3,
            "the chat's one message, the question, the answer"
        );
        assert_eq!(
            history.messages,
            [
                earlier,
                question,
                Message::Assistant {
                    text: "Searching.\n\nFound memo.txt.".into(),
                    tool_calls: Vec::new(),
                },
            ]
        );
    }
}
