//! A result held for review before the assistant reads it (docs/design.md
//! §6.5a), under its call's block: why it waits, the whole text (read
//! from `GET /api/mcp-pending-calls/{id}/result` — the event log never
//! has it), a countdown to the moment it is withheld, and *Pass to the
//! assistant* · *Redact the selected text* · *Withhold*. The text sits in
//! a read-only text box, so the keyboard selects as well as the mouse;
//! each redaction is listed (with "Keep it" to undo) and the card shows
//! what the assistant will read. Decided, it folds to one line saying how
//! it ended. Nothing here decides what passes: the server applies the
//! spans to the text it holds.

use std::time::Duration;

use countersign_api::results::redact;
use countersign_api::{Redaction, ResultAction, ResultDecision, ResultReviewStatus};
use leptos::html::Textarea;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos::web_sys::js_sys::Date;

use crate::api;
use crate::model::input_request::countdown_text;
use crate::model::result_review::{excerpt, outcome_text, reason_text, selected_span};
use crate::model::transcript::Transcript;
use crate::session::SessionState;

/// The card for review `review_id` of the chat's transcript.
#[component]
pub fn ReviewCard(transcript: RwSignal<Transcript>, review_id: String) -> impl IntoView {
    let Some(call) = transcript.with_untracked(|t| {
        t.review(&review_id)
            .map(|(_, call)| call.shown_name().to_owned())
    }) else {
        return ().into_any();
    };
    let session = SessionState::expect();
    let id = StoredValue::new(review_id.clone());
    let status = Memo::new(move |_| {
        transcript.with(|t| t.review(&id.get_value()).and_then(|(r, _)| r.status))
    });
    let waiting = move || status.get().is_none();
    // The text, read while it waits (and again on a reload).
    let loaded = LocalResource::new(move || async move {
        let fetched_at = Date::now();
        api::result_review(&id.get_value())
            .await
            .map(|review| (review, fetched_at))
    });
    let text = Memo::new(move |_| {
        loaded
            .get()
            .and_then(|r| r.ok())
            .map(|(review, _)| review.text)
    });
    let now = RwSignal::new(Date::now());
    if status.get_untracked().is_none()
        && let Ok(ticker) =
            set_interval_with_handle(move || _ = now.try_set(Date::now()), Duration::from_secs(1))
    {
        Effect::new(move |_| {
            if status.get().is_some() {
                ticker.clear();
            }
        });
        on_cleanup(move || ticker.clear());
    }
    let remaining = Memo::new(move |_| {
        let (review, fetched_at) = loaded.get().and_then(|r| r.ok())?;
        let left = review.decide_in_secs - (now.get() - fetched_at) / 1000.0;
        Some(left.max(0.0).ceil() as i64)
    });
    let spans = RwSignal::new(Vec::<Redaction>::new());
    let problem = RwSignal::new(None::<String>);
    let sending = RwSignal::new(false);
    let text_box = NodeRef::<Textarea>::new();
    let preview = Memo::new(move |_| {
        let spans = spans.get();
        if spans.is_empty() {
            return None;
        }
        text.with(|text| text.as_deref().and_then(|t| redact(t, &spans)))
    });

    let redact_selection = move |_| {
        problem.set(None);
        let Some(area) = text_box.get_untracked() else {
            return;
        };
        let start = area.selection_start().ok().flatten().unwrap_or(0);
        let end = area.selection_end().ok().flatten().unwrap_or(0);
        let chosen =
            text.with_untracked(|t| t.as_deref().and_then(|t| selected_span(t, start, end)));
        match chosen {
            Some(span) => spans.update(|all| {
                if !all.contains(&span) {
                    all.push(span);
                }
            }),
            None => problem.set(Some(
                "Select the text to redact in the box above first.".to_owned(),
            )),
        }
    };
    let send = move |action: ResultAction| {
        if sending.get_untracked() {
            return;
        }
        let redactions = (action == ResultAction::Redact).then(|| spans.get_untracked());
        sending.set(true);
        problem.set(None);
        let token = session.csrf_token().unwrap_or_default();
        spawn_local(async move {
            let body = ResultDecision { action, redactions };
            let reply = api::decide_result(&token, &id.get_value(), &body).await;
            _ = sending.try_set(false);
            if let Err(error) = reply {
                _ = problem.try_set(Some(match error.status {
                    Some(404) => "It was already decided, in another tab or window.".to_owned(),
                    Some(410) => "Its time is over: it was withheld.".to_owned(),
                    _ => error.detail,
                }));
            }
        });
    };
    let pass = move |_| {
        if spans.with_untracked(Vec::is_empty) {
            send(ResultAction::Pass);
        } else {
            send(ResultAction::Redact);
        }
    };

    let prefix = format!("review-{review_id}");
    let title_id = format!("{prefix}-title");
    let labelled_by = title_id.clone();
    let text_id = format!("{prefix}-text");
    let loaded_review = Memo::new(move |_| loaded.get().and_then(|r| r.ok()).map(|(r, _)| r));

    view! {
        <section
            class="input-card review-card"
            class:folded=move || !waiting()
            role="group"
            aria-labelledby=labelled_by
            data-testid="review-card"
            tabindex="-1"
            data-review-id=review_id.clone()
            // The input card's look: waiting, let through, or kept back.
            data-state=move || match status.get() {
                None => "pending",
                Some(ResultReviewStatus::Passed | ResultReviewStatus::Redacted) => "accepted",
                Some(_) => "declined",
            }
            data-review=move || status.get().map_or("waiting", |s| s.as_str())
        >
            <div class="input-head">
                <h2 class="input-title" id=title_id>
                    {move || if waiting() {
                        "Review this result before the assistant reads it"
                    } else {
                        "Result reviewed"
                    }}
                    " "
                    <span class="input-for">
                        "from "
                        <code>
                            {move || loaded_review.with(|r| match r {
                                Some(r) => format!("{}: {}", r.connector_name, r.tool_name),
                                None => call.clone(),
                            })}
                        </code>
                    </span>
                </h2>
                <Show when=waiting>
                    <p class="input-countdown" role="timer" data-testid="review-countdown">
                        {move || remaining.get().map(|left| format!("{} — or it is withheld", countdown_text(left)))}
                    </p>
                </Show>
            </div>
            {move || status.get().map(|status| view! {
                <p class="input-status" role="status" data-testid="review-outcome">{outcome_text(status)}</p>
            })}
            <Show when=waiting>
                <p class="input-message" data-testid="review-reason">
                    {move || loaded_review.with(|r| r.as_ref().map(|r| reason_text(r.reason, &r.connector_name)))}
                </p>
                // A column: the label, then the box at full width.
                <div class="approval-reason">
                    <label for=text_id.clone()>
                        {move || loaded_review.with(|r| r.as_ref().map(|r| format!("What the tool returned ({} characters). Select text to redact it.", r.chars)))}
                    </label>
                    {move || match loaded.get() {
                        None => view! { <p class="muted">"Loading the result…"</p> }.into_any(),
                        Some(Err(error)) => view! {
                            <p class="form-error" role="alert">{error.detail}</p>
                        }.into_any(),
                        Some(Ok(_)) => ().into_any(),
                    }}
                    <textarea
                        id=text_id.clone()
                        class="tool-args"
                        readonly
                        rows="6"
                        spellcheck="false"
                        data-testid="review-text"
                        node_ref=text_box
                        prop:value=move || text.get().unwrap_or_default()
                    ></textarea>
                </div>
                {move || problem.get().map(|text| view! {
                    <p class="form-error" role="alert" data-testid="review-error">{text}</p>
                })}
                <div class="approval-actions">
                    <button type="button" class="button primary" data-testid="review-pass"
                        disabled=move || sending.get() || text.with(Option::is_none)
                        on:click=pass>
                        {move || match spans.with(Vec::len) {
                            0 => "Pass to the assistant".to_owned(),
                            1 => "Pass with 1 redaction".to_owned(),
                            n => format!("Pass with {n} redactions"),
                        }}
                    </button>
                    <button type="button" class="button secondary" data-testid="review-withhold"
                        disabled=move || sending.get()
                        on:click=move |_| send(ResultAction::Withhold)>
                        "Withhold"
                    </button>
                    <button type="button" class="button secondary" data-testid="review-redact-selection"
                        disabled=move || sending.get() || text.with(Option::is_none)
                        on:click=redact_selection>
                        "Redact the selected text"
                    </button>
                </div>
                <Show when=move || !spans.with(Vec::is_empty)>
                    <ul data-testid="review-redactions">
                        <For each=move || spans.get() key=|span| (span.start, span.end) let:span>
                            <li data-testid="review-redaction">
                                <span>{move || text.with(|t| format!("\u{201c}{}\u{201d}", excerpt(t.as_deref().unwrap_or_default(), span, 60)))}</span>
                                " "
                                <button type="button" class="button secondary small" on:click=move |_| spans.update(|all| all.retain(|s| *s != span))>
                                    "Keep it"
                                </button>
                            </li>
                        </For>
                    </ul>
                    <p class="muted">"The assistant will read:"</p>
                    <pre class="tool-result-text" data-testid="review-preview">{move || preview.get().unwrap_or_default()}</pre>
                </Show>
            </Show>
        </section>
    }
    .into_any()
}
