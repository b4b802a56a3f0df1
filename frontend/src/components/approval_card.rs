//! The approval card (DESIGN §6, §9): a gated MCP call, in the transcript
//! where the model proposed it, waiting for the user's decision.
//!
//! It shows the evidence the server stored ([`evidence`]: "<connector>:
//! <tool> wants to run", the whole arguments, where they send data, the
//! reason, where each value came from), a countdown to the moment the turn
//! stops waiting ([`countdown`]), and the decision bar ([`decision_bar`]).
//! Its state lives in the [`Transcript`]: pressing a button records
//! "Approving…" there, the server's answer to the POST is folded in (a 403
//! `mfa_required` for "always" opens the step-up dialog and sends the
//! decision again once a code was accepted; cancelling it reopens the card
//! saying so), and the stream's `mcp_confirmation_resolved` and
//! `mcp_tool_call` say the rest. It decides nothing itself: when the local
//! countdown reaches zero it only stops offering the buttons (the server
//! would refuse with 410 anyway), and while a long or flagged value has not
//! been shown in full it holds *Allow* (the server holds nothing: this is
//! about the person reading, not about the gate).

mod countdown;
mod decision_bar;
mod edit_form;
mod evidence;
mod long_value;
mod notify;
mod rule_maker;

use std::collections::BTreeSet;

use countersign_api::{self as api_vocab, DecideRequest, PendingCallStatus};
use leptos::html::P;
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api;
use crate::components::{OriginChip, SignInAgainButton, StepUp, ToolResultFold};
use crate::model::approval::{
    ArgPiece, CardStatus, RiskView, argument_pieces_with, card_status, card_title, decided_story,
    duration_text, leans_safe, risk_view,
};
use crate::model::transcript::{
    Approval, Decision, DecisionAnswer, ToolCall, ToolState, Transcript,
};
use crate::model::when::full_time_text;
use crate::session::SessionState;

use countdown::{Countdown, use_remaining};
use decision_bar::DecisionBar;
use evidence::Evidence;
use notify::NotifyOffer;

/// What the card's parts share: the evidence, where the decision stands,
/// and the one way to send it.
#[derive(Clone, Copy)]
struct Card {
    approval: Memo<Option<Box<Approval>>>,
    status: Memo<Option<CardStatus>>,
    risk: Memo<RiskView>,
    /// The arguments as laid out.
    pieces: Memo<Vec<ArgPiece>>,
    /// The pieces that must be shown in full before *Allow* and have not
    /// been yet (indices into `pieces`).
    unread: RwSignal<BTreeSet<usize>>,
    /// Sends a decision (with a decline's reason, or an approval's
    /// edited arguments).
    decide: Callback<(Decision, Option<String>, Option<serde_json::Value>)>,
    /// Destructive or flagged: *Decline* is the primary button.
    leans_safe: Memo<bool>,
}

impl Card {
    fn field(self, f: fn(&Approval) -> String) -> impl Fn() -> String + Copy {
        move || {
            self.approval
                .with(|a| a.as_deref().map(f).unwrap_or_default())
        }
    }

    fn flag(self, f: fn(&CardStatus) -> bool) -> impl Fn() -> bool + Copy {
        move || self.status.with(|s| s.as_ref().is_some_and(f))
    }

    /// Whether every value that must be read was shown in full.
    fn all_read(self) -> bool {
        self.unread.with(BTreeSet::is_empty)
    }
}

/// The card of the call in `call`, whose approval has ledger id
/// `approval_id`.
#[component]
pub fn ApprovalCard(
    /// The chat's transcript, where the decision's progress is recorded.
    transcript: RwSignal<Transcript>,
    /// The tool call carrying the card.
    call: Signal<Option<ToolCall>>,
    /// Its ledger id (a different id is a different card).
    approval_id: String,
) -> impl IntoView {
    let session = SessionState::expect();
    let step_up = StepUp::expect();
    let approval = Memo::new(move |_| call.with(|c| c.as_ref().and_then(|c| c.approval.clone())));
    let tool_state = Memo::new(move |_| {
        call.with(|c| c.as_ref().map_or(ToolState::Running, |c| c.state.clone()))
    });
    let duration = Memo::new(move |_| call.with(|c| c.as_ref().and_then(|c| c.duration_ms)));
    let origin = Memo::new(move |_| call.with(|c| c.as_ref().and_then(|c| c.origin.clone())));

    let remaining = use_remaining(approval, &approval_id);
    let status = Memo::new(move |_| {
        approval.with(|a| {
            a.as_ref().map(|a| {
                tool_state.with(|tool| card_status(&a.state, a.grant, tool, remaining.get()))
            })
        })
    });
    let pieces = Memo::new(move |_| {
        approval.with(|a| {
            a.as_ref()
                .map(|a| {
                    argument_pieces_with(
                        &a.arguments,
                        a.provenance.as_deref(),
                        &a.character_warnings,
                    )
                })
                .unwrap_or_default()
        })
    });
    // Every value that must be read starts unread; a new layout (another
    // call's evidence) starts over.
    let unread = RwSignal::new(BTreeSet::new());
    Effect::new(move |_| {
        let must_read = pieces.with(|pieces| {
            pieces
                .iter()
                .enumerate()
                .filter(|(_, p)| matches!(p, ArgPiece::Long(long) if long.must_read))
                .map(|(index, _)| index)
                .collect::<BTreeSet<_>>()
        });
        unread.set(must_read);
    });

    // A card that starts out waiting while the tab is in the background
    // says so, when the user allowed notifications.
    let announced_id = approval_id.clone();
    Effect::new(move |done: Option<()>| {
        if done.is_none()
            && let Some(a) = approval.get_untracked()
            && a.state == crate::model::transcript::ApprovalState::Pending
        {
            notify::announce(
                &announced_id,
                &format!("{}: {}", a.connector_name, a.tool_name),
            );
        }
    });

    // ---- Deciding.
    let status_line = NodeRef::<P>::new();
    let decide = Callback::new(
        move |(decision, reason, edited): (Decision, Option<String>, Option<serde_json::Value>)| {
            let Some(card) = approval.get_untracked() else {
                return;
            };
            if !status.with_untracked(|s| s.as_ref().is_some_and(|s| s.buttons_enabled)) {
                return;
            }
            // The same hold the buttons show: nothing is allowed unread.
            if matches!(decision, Decision::Approve(_))
                && !unread.with_untracked(BTreeSet::is_empty)
            {
                return;
            }
            let mut send = false;
            transcript.update(|t| send = t.decision_sent(&card.id, decision));
            if !send {
                return;
            }
            // The pressed button is disabled now: keep the keyboard user's place
            // on the line that says what happens.
            request_animation_frame(move || {
                if let Some(line) = status_line.try_get_untracked().flatten() {
                    let _ = line.focus();
                }
            });
            let token = session.csrf_token().unwrap_or_default();
            // Not an `Action`: the decision's progress lives in the transcript
            // ("Approving…", then the answer), where the stream also moves it
            // and where it outlives this card.
            spawn_local(async move {
                let body = match decision {
                    Decision::Approve(grant) => DecideRequest {
                        decision: api_vocab::Decision::Approve,
                        grant: Some(grant.wire()),
                        arguments_digest: card.arguments_digest.clone(),
                        reason: None,
                        edited_arguments: edited,
                    },
                    Decision::Deny => DecideRequest {
                        decision: api_vocab::Decision::Deny,
                        grant: None,
                        arguments_digest: card.arguments_digest.clone(),
                        reason,
                        edited_arguments: None,
                    },
                };
                // "Always allow" may need a two-factor step-up first: the dialog
                // asks for a code and the same decision is sent again.
                let decided = step_up
                    .run(|| api::decide_pending_call(&token, &card.id, &body))
                    .await;
                let answer = match decided {
                    Ok(_) => DecisionAnswer::Recorded,
                    Err(error) => DecisionAnswer::from_error(error.status, error.detail),
                };
                transcript.try_update(|t| t.decision_answered(&card.id, answer));
            });
        },
    );

    let risk =
        Memo::new(move |_| approval.with(|a| risk_view(a.as_ref().and_then(|a| a.risk.as_ref()))));
    let leans_safe = Memo::new(move |_| approval.with(|a| a.as_deref().is_some_and(leans_safe)));
    let card = Card {
        approval,
        status,
        risk,
        pieces,
        unread,
        decide,
        leans_safe,
    };

    let connector = card.field(|a| a.connector_name.clone());
    let tool = card.field(|a| a.tool_name.clone());
    let title = move || {
        let key = status.with(|s| s.as_ref().map_or("", |s| s.key));
        card_title(&connector(), &tool(), key)
    };
    let key = move || {
        status.with(|s| {
            s.as_ref()
                .map_or(PendingCallStatus::Pending.as_str(), |s| s.key)
        })
    };
    let counting_down = card.flag(|s| s.counting_down);
    let problem_status = card.flag(|s| s.problem);
    let buttons_shown = card.flag(|s| s.buttons_shown);
    let status_text =
        move || status.with(|s| s.as_ref().map(|s| s.text.clone()).unwrap_or_default());
    let problem = move || approval.with(|a| a.as_ref().and_then(|a| a.problem.clone()));
    let tool_error = move || {
        let approved = approval.with(|a| {
            a.as_ref()
                .is_some_and(|a| a.state == crate::model::transcript::ApprovalState::Approved)
        });
        match tool_state.get() {
            ToolState::Error(error) if approved => {
                Some(error.unwrap_or_else(|| "The server gave no reason.".to_owned()))
            }
            _ => None,
        }
    };
    let ran_for = move || {
        (tool_state.get() == ToolState::Ok)
            .then(|| {
                duration
                    .get()
                    .map(|ms| format!(" in {}", duration_text(ms)))
            })
            .flatten()
    };

    // Its story once decided: who, when, how, and the tool's own time.
    let waited = Memo::new(move |_| {
        call.with(|c| {
            c.as_ref()
                .and_then(|c| c.waited_ms.map(std::num::NonZeroU64::get))
        })
    });
    let story = move || {
        approval.with(|a| {
            a.as_deref().and_then(|a| {
                tool_state.with(|tool| {
                    decided_story(a, tool, duration.get(), waited.get(), |at| {
                        full_time_text(at, crate::clock::minutes_east_at)
                    })
                })
            })
        })
    };

    // Decided and done with: the card folds (DESIGN §9).
    let folded = move || {
        approval.with(|a| a.as_ref().is_some_and(|a| a.state.is_final()))
            && tool_state.with(|t| *t != ToolState::Running)
    };
    let details_open = RwSignal::new(false);
    // Read inside `<Show>`, which may render more than once.
    let bar_id = StoredValue::new(approval_id.clone());
    let evidence_id = format!("approval-{approval_id}-evidence");
    let title_id = format!("approval-{approval_id}-title");

    view! {
        <section
            class="approval-card"
            role="group"
            aria-labelledby=title_id.clone()
            data-testid="approval-card"
            // Focused by the chat's "Go to the call waiting for your
            // decision", never by Tab.
            tabindex="-1"
            data-state=key
            data-risky=move || risk.with(|r| r.risky).to_string()
            data-leans-safe=move || leans_safe.get().to_string()
            data-folded=move || folded().to_string()
            data-approval-id=approval_id.clone()
        >
            <h2 class="approval-title" id=title_id.clone() data-testid="approval-title">
                {title}
            </h2>
            <Evidence
                card=card
                id=evidence_id.clone()
                approval_id=approval_id.clone()
                hidden=Signal::derive(move || folded() && !details_open.get())
            />
            <Show when=counting_down>
                <Countdown remaining=remaining />
            </Show>
            <p
                class="approval-status"
                class:problem=problem_status
                role="status"
                tabindex="-1"
                node_ref=status_line
                data-testid="approval-status"
            >
                {status_text}
                {ran_for}
            </p>
            {move || story().map(|text| view! {
                <p class="approval-story" data-testid="approval-story">{text}</p>
            })}
            {move || tool_error().map(|error| view! {
                <p class="tool-error" data-testid="approval-tool-error">{error}</p>
            })}
            {move || call.get().and_then(|c| c.sign_in).map(|again| view! {
                <SignInAgainButton again=*again />
            })}
            {move || origin.get().map(|origin| view! { <OriginChip origin=origin /> })}
            {move || call.get().and_then(|c| c.result).map(|result| view! { <ToolResultFold result=*result /> })}
            // Once decided the card folds to its title and status line; the
            // request stays one press away.
            <Show when=folded>
                <button
                    type="button"
                    class="approval-details-toggle"
                    data-testid="approval-details-toggle"
                    aria-expanded=move || details_open.get().to_string()
                    aria-controls=evidence_id.clone()
                    on:click=move |_| details_open.update(|open| *open = !*open)
                >
                    {move || if details_open.get() { "Hide the request" } else { "Show the request" }}
                </button>
            </Show>
            {move || problem().map(|text| view! {
                <p class="form-error" role="alert" data-testid="approval-error">{text}</p>
            })}
            <Show when=buttons_shown>
                <DecisionBar card=card approval_id=bar_id.get_value() />
                <NotifyOffer />
            </Show>
        </section>
    }
}
