//! The approval card (DESIGN §6, §9): a gated MCP call, in the transcript
//! where the model proposed it, waiting for the user's decision.
//!
//! It shows the evidence the server stored — "<connector>: <tool> wants to
//! run", the full arguments (long strings folded, never cut), the
//! destination, the reason — a countdown to `expires_at`, and Allow once ·
//! Allow for this turn · Always allow this tool · Decline. Its state lives in
//! the [`Transcript`]: pressing a button records "Approving…" there, the
//! server's answer to the POST is folded in (a 403 `mfa_required` for
//! "always" opens the step-up dialog and sends the decision again once a
//! code was accepted; cancelling it reopens the card saying so), and the stream's
//! `mcp_confirmation_resolved` and `mcp_tool_call` say the rest, including
//! when the user approved. It decides nothing itself; when the local
//! countdown reaches zero it only stops offering the buttons (the server
//! would refuse with 410 anyway).

use std::time::Duration;

use countersign_api::characters::visible;
use countersign_api::{self as api_vocab, DecideRequest, GrantKind, PendingCallStatus};
use leptos::html::P;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos::web_sys::js_sys::Date;

use crate::api;
use crate::components::{OriginChip, SignInAgainButton, StepUp, ToolResultFold};
use crate::model::approval::{
    ArgPiece, FLOW_NOTE, always_question, argument_pieces_with, card_status, card_title,
    character_lines, clock_offset_ms, countdown_text, destination_text, duration_text,
    instructions_note, origin_lines, remaining_secs, risk_view,
};
use crate::model::transcript::{Decision, DecisionAnswer, Grant, ToolCall, ToolState, Transcript};
use crate::session::SessionState;

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

    // ---- The countdown, by the server's clock: this clock plus the offset
    // learnt from `GET /api/mcp-pending-calls` (zero until then).
    let now = RwSignal::new(Date::now());
    let open_at_start =
        approval.with_untracked(|a| a.as_ref().is_some_and(|a| !a.state.is_final()));
    let offset = if open_at_start {
        let id = approval_id.clone();
        let skew = LocalResource::new(move || {
            let id = id.clone();
            async move {
                let before = Date::now();
                let pending = api::pending_calls().await.ok()?;
                let local_now = (before + Date::now()) / 2.0;
                let found = pending.iter().find(|p| p.id == id)?;
                clock_offset_ms(&found.expires_at, found.expires_in_secs, local_now)
            }
        });
        Signal::derive(move || skew.get().flatten().unwrap_or(0.0))
    } else {
        Signal::stored(0.0)
    };
    let remaining = Memo::new(move |_| {
        let at = now.get() + offset.get();
        // The turn stops waiting at `decide_by`: counting to the later
        // expiry would show time that is not there.
        approval.with(|a| a.as_ref().and_then(|a| remaining_secs(a.deadline(), at)))
    });
    let status = Memo::new(move |_| {
        approval.with(|a| {
            a.as_ref().map(|a| {
                tool_state.with(|tool| card_status(&a.state, a.grant, tool, remaining.get()))
            })
        })
    });
    if open_at_start
        && let Ok(ticker) =
            set_interval_with_handle(move || _ = now.try_set(Date::now()), Duration::from_secs(1))
    {
        Effect::new(move |_| {
            if approval.with(|a| a.as_ref().is_none_or(|a| a.state.is_final())) {
                ticker.clear();
            }
        });
        on_cleanup(move || ticker.clear());
    }

    // ---- Deciding.
    let status_line = NodeRef::<P>::new();
    // A `Callback` (Copy), so the buttons inside `<Show>` can share it.
    let decide = Callback::new(move |decision: Decision| {
        let Some(card) = approval.get_untracked() else {
            return;
        };
        if !status.with_untracked(|s| s.as_ref().is_some_and(|s| s.buttons_enabled)) {
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
            if let Some(line) = status_line.get_untracked() {
                let _ = line.focus();
            }
        });
        let token = session.csrf_token().unwrap_or_default();
        // Not an `Action`: the decision's progress lives in the transcript
        // ("Approving…", then the answer), where the stream also moves it
        // and where it outlives this card; an action's pending flag and
        // value would be a second copy nobody reads.
        spawn_local(async move {
            let body = match decision {
                Decision::Approve(grant) => DecideRequest {
                    decision: api_vocab::Decision::Approve,
                    grant: Some(grant.wire()),
                    arguments_digest: card.arguments_digest.clone(),
                },
                Decision::Deny => DecideRequest {
                    decision: api_vocab::Decision::Deny,
                    grant: None,
                    arguments_digest: card.arguments_digest.clone(),
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
    });

    let field = move |f: fn(&crate::model::transcript::Approval) -> String| {
        move || approval.with(|a| a.as_deref().map(f).unwrap_or_default())
    };
    let offers = move |grant: GrantKind| {
        move || {
            approval.with(|a| {
                a.as_ref()
                    .is_some_and(|a| a.offered_grants.contains(&grant))
            })
        }
    };
    let risk =
        Memo::new(move |_| approval.with(|a| risk_view(a.as_ref().and_then(|a| a.risk.as_ref()))));
    let risky = move || risk.with(|r| r.risky);
    let tool_title = move || approval.with(|a| a.as_ref().and_then(|a| a.tool_title.clone()));
    let tool_description =
        move || approval.with(|a| a.as_ref().and_then(|a| a.tool_description.clone()));
    // "Always allow" on a risky tool asks once more, in place.
    let confirming_always = RwSignal::new(false);
    let confirm_yes = NodeRef::<leptos::html::Button>::new();
    Effect::new(move |_| {
        if confirming_always.get() {
            request_animation_frame(move || {
                if let Some(button) = confirm_yes.get_untracked() {
                    let _ = button.focus();
                }
            });
        }
    });
    let connector = field(|a| a.connector_name.clone());
    let tool = field(|a| a.tool_name.clone());
    let title = move || {
        let key = status.with(|s| s.as_ref().map_or("", |s| s.key));
        card_title(&connector(), &tool(), key)
    };
    let pieces = Memo::new(move |_| {
        approval.with(|a| {
            a.as_ref()
                .map(|a| argument_pieces_with(&a.arguments, a.provenance.as_deref()))
                .unwrap_or_default()
        })
    });
    // Where the arguments came from (issue 16): the flows that make it
    // ask, the results of this reply that held instructions, and each
    // argument's origin.
    let provenance = move || approval.with(|a| a.as_ref().and_then(|a| a.provenance.clone()));
    let flows = move || provenance().map(|p| p.flows).filter(|f| !f.is_empty());
    let instructions = move || provenance().and_then(|p| instructions_note(&p));
    let origins = move || provenance().map(|p| origin_lines(&p, crate::clock::minutes_east_at));
    // Where the call sends data (issue 45), as the server read it.
    let destinations = move || {
        approval.with(|a| {
            a.as_ref()
                .map(|a| {
                    a.destinations
                        .iter()
                        .map(destination_text)
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
    };
    // What the bytes are (issue 44): look-alike, invisible, bidi.
    let characters = move || {
        approval.with(|a| {
            a.as_ref()
                .map(|a| character_lines(&a.character_warnings))
                .unwrap_or_default()
        })
    };
    let key = move || {
        status.with(|s| {
            s.as_ref()
                .map_or(PendingCallStatus::Pending.as_str(), |s| s.key)
        })
    };
    let flag = move |f: fn(&crate::model::approval::CardStatus) -> bool| {
        move || status.with(|s| s.as_ref().is_some_and(f))
    };
    let buttons_shown = flag(|s| s.buttons_shown);
    let buttons_enabled = flag(|s| s.buttons_enabled);
    let counting_down = flag(|s| s.counting_down);
    let problem_status = flag(|s| s.problem);
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

    // Decided and done with: the card folds (DESIGN §9).
    let folded = move || {
        approval.with(|a| a.as_ref().is_some_and(|a| a.state.is_final()))
            && tool_state.with(|t| *t != ToolState::Running)
    };
    let details_open = RwSignal::new(false);
    let evidence_id = format!("approval-{approval_id}-evidence");
    let evidence_ref = StoredValue::new(evidence_id.clone());
    let title_id = format!("approval-{approval_id}-title");
    let args_id = format!("approval-{approval_id}-args");
    let allow_id = format!("approval-{approval_id}-allow-what");
    let turn_id = format!("approval-{approval_id}-turn-what");
    let always_id = format!("approval-{approval_id}-always-what");
    let decline_id = format!("approval-{approval_id}-decline-what");
    // Read by the buttons inside `<Show>`, which may render more than once.
    let turn_ref = StoredValue::new(turn_id.clone());
    let always_ref = StoredValue::new(always_id.clone());

    view! {
        <section
            class="approval-card"
            role="group"
            aria-labelledby=title_id.clone()
            data-testid="approval-card"
            data-state=key
            data-risky=move || risky().to_string()
            data-folded=move || folded().to_string()
            data-approval-id=approval_id.clone()
        >
            <h2 class="approval-title" id=title_id.clone() data-testid="approval-title">
                {title}
            </h2>
            <div
                class="approval-evidence"
                id=evidence_ref.get_value()
                data-testid="approval-evidence"
                hidden=move || folded() && !details_open.get()
            >
            // Text from a tool's result leaving for elsewhere: first, in
            // the danger colours.
            {move || flows().map(|flows| view! {
                <div class="approval-flows" data-testid="approval-flows">
                    <p class="approval-flows-title">"This call sends text from a tool\u{2019}s result elsewhere"</p>
                    <ul>
                        {flows.into_iter().map(|flow| view! {
                            <li data-testid="approval-flow">{flow.text}</li>
                        }).collect_view()}
                    </ul>
                    <p class="approval-flows-note">{FLOW_NOTE}</p>
                </div>
            })}
            {move || instructions().map(|text| view! {
                <p class="approval-instructions" data-testid="approval-instructions">{text}</p>
            })}
            // The tool as the user reviewed it: its title and description
            // (text only, never markup), then its declared risk.
            <div class="approval-about" data-testid="approval-about">
                {move || tool_title().map(|t| view! {
                    <p class="approval-tool-title" data-testid="approval-tool-title">{t}</p>
                })}
                {move || tool_description().map(|d| view! {
                    <p class="approval-tool-description" data-testid="approval-tool-description">{d}</p>
                })}
            </div>
            <ul class="approval-risk" data-testid="approval-risk" aria-label="What this tool declares">
                {move || {
                    risk.get()
                        .lines
                        .into_iter()
                        .map(|line| view! {
                            <li class:concern=line.concern data-concern=line.concern.to_string()>
                                {line.text}
                            </li>
                        })
                        .collect_view()
                }}
            </ul>
            <dl class="approval-facts">
                <div class="approval-sends-to">
                    <dt>"Sends to"</dt>
                    <dd data-testid="approval-sends-to">
                        {move || {
                            let sends_to = destinations();
                            if sends_to.is_empty() {
                                view! { <span class="muted">"Nothing named in the arguments"</span> }.into_any()
                            } else {
                                view! {
                                    <ul class="approval-destinations">
                                        {sends_to.into_iter().map(|text| view! {
                                            <li><code data-testid="approval-sends-to-item">{text}</code></li>
                                        }).collect_view()}
                                    </ul>
                                }
                                .into_any()
                            }
                        }}
                    </dd>
                </div>
                <div>
                    <dt>"Via"</dt>
                    <dd>
                        <code data-testid="approval-destination">{field(|a| a.destination.clone())}</code>
                    </dd>
                </div>
                <div>
                    <dt>"Why it asks"</dt>
                    <dd data-testid="approval-reason">{field(|a| a.reason.clone())}</dd>
                </div>
            </dl>
            <p class="approval-args-label" id=args_id.clone()>
                "Arguments (exactly what would be sent)"
            </p>
            <div class="approval-args" role="group" aria-labelledby=args_id data-testid="approval-arguments">
                {move || {
                    pieces
                        .get()
                        .into_iter()
                        .map(|piece| match piece {
                            ArgPiece::Code(code) => view! { <span>{visible(&code)}</span> }.into_any(),
                            ArgPiece::Long { preview, literal, chars } => view! {
                                <LongValue preview=preview literal=literal chars=chars />
                            }
                            .into_any(),
                            // Seen before: highlighted, named in the list below.
                            ArgPiece::Marked(runs) => runs
                                .into_iter()
                                .map(|run| match run.mark {
                                    Some(mark) => view! {
                                        <mark
                                            class="arg-seen"
                                            class:flow=mark.flow
                                            data-origin=mark.origin.as_str()
                                            data-testid="approval-seen"
                                            title=mark.label
                                        >
                                            {visible(&run.text)}
                                        </mark>
                                    }
                                    .into_any(),
                                    None => view! { <span>{visible(&run.text)}</span> }.into_any(),
                                })
                                .collect_view()
                                .into_any(),
                        })
                        .collect_view()
                }}
            </div>
            {move || {
                let lines = characters();
                (!lines.is_empty()).then(|| view! {
                    <ul class="approval-characters" data-testid="approval-characters"
                        aria-label="Characters to check before you decide">
                        {lines.into_iter().map(|line| view! {
                            <li data-testid="approval-character">
                                <strong>"Check this value: "</strong>
                                <code>{line.what}</code>" "{line.words}"."
                                {line.ascii.map(|ascii| view! {
                                    " In ASCII: "<code data-testid="approval-character-ascii">{ascii}</code>
                                })}
                            </li>
                        }).collect_view()}
                    </ul>
                })
            }}
            {move || origins().map(|lines| {
                let rest = if lines.is_empty() {
                    "Written by the model: nothing in these arguments was seen earlier in this chat."
                } else {
                    "Everything else was written by the model."
                };
                view! {
                <ul class="approval-origins" data-testid="approval-origins" aria-label="Where the arguments came from">
                    {lines.into_iter().map(|line| view! {
                        <li class:flow=line.flow data-testid="approval-origin">
                            <code>{line.what}</code>": "{line.words}
                        </li>
                    }).collect_view()}
                    <li class="approval-origins-rest">{rest}</li>
                </ul>
                }
            })}
            </div>
            <Show when=counting_down>
                <p class="approval-countdown" role="timer" data-testid="approval-countdown">
                    {move || remaining.get().map(countdown_text)}
                </p>
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
                <div class="approval-actions">
                    // Nothing is preselected for a risky call: no button
                    // stands out as the one to press.
                    <button
                        type="button"
                        class="button"
                        class:primary=move || !risky()
                        class:secondary=risky
                        data-testid="approval-allow-once"
                        aria-describedby=allow_id.clone()
                        disabled=move || !buttons_enabled()
                        on:click=move |_| decide.run(Decision::Approve(Grant::Once))
                    >
                        "Allow once"
                    </button>
                    // Not offered for a tool that changed since it was
                    // reviewed: only this one call can be allowed.
                    <Show when=offers(GrantKind::Turn)>
                        <button
                            type="button"
                            class="button secondary"
                            data-testid="approval-allow-turn"
                            aria-describedby=move || turn_ref.get_value()
                            disabled=move || !buttons_enabled()
                            on:click=move |_| decide.run(Decision::Approve(Grant::Turn))
                        >
                            "Allow for this turn"
                        </button>
                    </Show>
                    <Show when=offers(GrantKind::Always)>
                        <button
                            type="button"
                            class="button secondary"
                            data-testid="approval-allow-always"
                            aria-describedby=move || always_ref.get_value()
                            aria-expanded=move || risky().then(|| confirming_always.get().to_string())
                            disabled=move || !buttons_enabled() || confirming_always.get()
                            on:click=move |_| {
                                if risky() {
                                    confirming_always.set(true);
                                } else {
                                    decide.run(Decision::Approve(Grant::Always));
                                }
                            }
                        >
                            "Always allow this tool"
                        </button>
                    </Show>
                    <button
                        type="button"
                        class="button secondary"
                        data-testid="approval-decline"
                        aria-describedby=decline_id.clone()
                        disabled=move || !buttons_enabled()
                        on:click=move |_| decide.run(Decision::Deny)
                    >
                        "Decline"
                    </button>
                    // What the buttons do, for assistive technology
                    // (descriptions may point at hidden elements).
                    <span id=allow_id.clone() hidden>
                        {move || format!("Allow this one call to {} on {}", tool(), connector())}
                    </span>
                    <span id=turn_id.clone() hidden>
                        {move || format!(
                            "Allow calls to {} on {} for the rest of this reply",
                            tool(),
                            connector(),
                        )}
                    </span>
                    <span id=always_id.clone() hidden>
                        {move || format!(
                            "Always allow {} on {} until you revoke it or the tool changes",
                            tool(),
                            connector(),
                        )}
                    </span>
                    <span id=decline_id.clone() hidden>
                        "Decline this call"
                    </span>
                </div>
                <Show when=move || confirming_always.get() && buttons_enabled()>
                    <div class="approval-confirm" role="group" aria-labelledby=format!("{}-confirm", always_ref.get_value()) data-testid="approval-always-confirm">
                        <p id=format!("{}-confirm", always_ref.get_value())>
                            {move || risk.with(|r| always_question(&tool(), &connector(), r))}
                        </p>
                        <div class="approval-actions">
                            <button
                                type="button"
                                class="button danger"
                                data-testid="approval-always-confirm-yes"
                                node_ref=confirm_yes
                                on:click=move |_| {
                                    confirming_always.set(false);
                                    decide.run(Decision::Approve(Grant::Always));
                                }
                            >
                                "Yes, always allow"
                            </button>
                            <button
                                type="button"
                                class="button secondary"
                                data-testid="approval-always-confirm-cancel"
                                on:click=move |_| confirming_always.set(false)
                            >
                                "Cancel"
                            </button>
                        </div>
                    </div>
                </Show>
            </Show>
        </section>
    }
}

/// A long string value of the arguments: its start, and a button that
/// shows the whole JSON string in place (and folds it again).
#[component]
fn LongValue(preview: String, literal: String, chars: usize) -> impl IntoView {
    let open = RwSignal::new(false);
    let text = move || {
        if open.get() {
            visible(&literal)
        } else {
            visible(&preview)
        }
    };
    view! {
        <span class="arg-long" data-testid="approval-long-value" data-open=move || open.get().to_string()>
            <span class="arg-text">{text}</span>
            " "
            <button
                type="button"
                class="arg-toggle"
                data-testid="approval-long-toggle"
                aria-expanded=move || open.get().to_string()
                on:click=move |_| open.update(|o| *o = !*o)
            >
                {move || if open.get() {
                    "Fold this value".to_owned()
                } else {
                    format!("Show all {chars} characters")
                }}
            </button>
        </span>
    }
}
