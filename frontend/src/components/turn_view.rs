//! One turn of the transcript: the user's message and the assistant's
//! answer, which grows while the turn streams.

use leptos::prelude::*;

use crate::components::{Markdown, ToolCallBlock};
use crate::lazy::{LazyApprovalCard, LazyInputCard};
use crate::model::transcript::{Segment, Transcript, TurnStatus};

/// The kind of a segment. A tool call becomes an approval card when its
/// `mcp_confirmation_required` arrives (and a new ledger id is a new card);
/// nothing else ever changes kind. Input cards hang under either.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Text,
    Tool,
    Approval(String),
    Error,
}

/// Turn number `index` of `transcript`. Each piece re-renders only when its
/// own part changes, so a streaming answer updates one element per token.
#[component]
pub fn TurnView(
    /// The chat's transcript.
    transcript: RwSignal<Transcript>,
    /// Which turn (turns are only ever appended, so the index is stable).
    index: usize,
) -> impl IntoView {
    let user = Memo::new(move |_| {
        transcript.with(|t| t.turns.get(index).and_then(|turn| turn.user.clone()))
    });
    let status =
        Memo::new(move |_| transcript.with(|t| t.turns.get(index).map(|turn| turn.status)));
    let has_answer = Memo::new(move |_| {
        transcript.with(|t| t.turns.get(index).is_some_and(|turn| turn.has_answer()))
    });
    let segment_count = Memo::new(move |_| {
        transcript.with(|t| t.turns.get(index).map_or(0, |turn| turn.segments.len()))
    });
    let streaming = move || status.get() == Some(TurnStatus::Running);

    let answer = move || {
        has_answer.get().then(|| {
            view! {
                <article
                    class="message assistant"
                    data-testid="message-assistant"
                    data-streaming=move || streaming().then_some("true")
                    aria-busy=move || streaming().then_some("true")
                    aria-label="Assistant"
                >
                    <For each=move || 0..segment_count.get() key=|segment| *segment let:segment>
                        <SegmentView transcript=transcript turn=index segment=segment />
                    </For>
                    <Show when=move || streaming() && segment_count.get() == 0>
                        <p class="writing muted">"Writing…"</p>
                    </Show>
                    {move || {
                        let label = match status.get() {
                            Some(TurnStatus::Stopped) => "Stopped",
                            Some(TurnStatus::Failed) => "Failed",
                            _ => return None,
                        };
                        Some(
                            view! {
                                <p class="assistant-status" data-testid="assistant-status">
                                    {label}
                                </p>
                            },
                        )
                    }}
                </article>
            }
        })
    };

    view! {
        <div class="turn">
            {move || {
                user.get()
                    .map(|text| {
                        view! {
                            <article class="message user" data-testid="message-user" aria-label="You">
                                <p class="message-text">{text}</p>
                            </article>
                        }
                    })
            }}
            {answer}
        </div>
    }
}

/// The input cards of a tool call (DESIGN §6a), under its block, one per
/// request its server made, oldest first. Each is drawn once, by id.
#[component]
fn CallInputs(transcript: RwSignal<Transcript>, current: Memo<Option<Segment>>) -> impl IntoView {
    let ids = Memo::new(move |_| {
        current.with(|segment| match segment {
            Some(Segment::Tool(call)) => call.inputs.iter().map(|input| input.id.clone()).collect(),
            _ => Vec::new(),
        })
    });
    // A result held for review, after the questions (it comes once the
    // call ran).
    let review = Memo::new(move |_| {
        current.with(|segment| match segment {
            Some(Segment::Tool(call)) => call.review.as_ref().map(|review| review.id.clone()),
            _ => None,
        })
    });
    view! {
        <For each=move || ids.get() key=|id| id.clone() let:id>
            <LazyInputCard transcript=transcript input_id=id />
        </For>
        {move || review.get().map(|id| view! {
            <LazyInputCard transcript=transcript input_id=id review=true />
        })}
    }
}

/// One piece of an answer: Markdown text, a tool call block or an error.
#[component]
fn SegmentView(transcript: RwSignal<Transcript>, turn: usize, segment: usize) -> impl IntoView {
    let current = Memo::new(move |_| {
        transcript.with(|t| {
            t.turns
                .get(turn)
                .and_then(|turn| turn.segments.get(segment))
                .cloned()
        })
    });
    let kind = Memo::new(move |_| {
        current.with(|segment| match segment {
            Some(Segment::Text(_)) => Some(Kind::Text),
            Some(Segment::Tool(call)) => Some(match &call.approval {
                Some(approval) => Kind::Approval(approval.id.clone()),
                None => Kind::Tool,
            }),
            Some(Segment::Error(_)) => Some(Kind::Error),
            None => None,
        })
    });

    move || match kind.get() {
        Some(Kind::Text) => {
            // DOM nodes built from the parsed tree: no HTML from the reply
            // itself can reach the page.
            let source = Signal::derive(move || {
                current.with(|segment| match segment {
                    Some(Segment::Text(text)) => text.clone(),
                    _ => String::new(),
                })
            });
            view! { <Markdown source=source /> }.into_any()
        }
        Some(Kind::Tool) => {
            let call = Signal::derive(move || match current.get() {
                Some(Segment::Tool(call)) => Some(call),
                _ => None,
            });
            view! {
                <ToolCallBlock call=call />
                <CallInputs transcript=transcript current=current />
            }
            .into_any()
        }
        Some(Kind::Approval(approval_id)) => {
            let call = Signal::derive(move || match current.get() {
                Some(Segment::Tool(call)) => Some(call),
                _ => None,
            });
            view! {
                <LazyApprovalCard transcript=transcript call=call approval_id=approval_id />
                <CallInputs transcript=transcript current=current />
            }
            .into_any()
        }
        Some(Kind::Error) => {
            let message = move || match current.get() {
                Some(Segment::Error(message)) => message,
                _ => String::new(),
            };
            view! {
                <p class="turn-error" role="alert" data-testid="turn-error">
                    {message}
                </p>
            }
            .into_any()
        }
        None => ().into_any(),
    }
}
