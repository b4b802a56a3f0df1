//! The per-connector "Trust this server's safety annotations" switch and the
//! question it asks before turning on.

use countersign_api::Connector;
use leptos::prelude::*;

use super::store::ConnectorStore;
use crate::api;
use crate::components::{FormError, StepUp, last_error};
use crate::session::SessionState;

/// "Trust this server's safety annotations" (DESIGN §5 rule 3): a switch
/// showing what the server stored. Turning it on first says what it means —
/// the server writes its own annotations — and asks again; turning it off
/// (the safe direction) happens at once.
#[component]
pub(super) fn TrustToggle(
    id: String,
    connector: Memo<Option<Connector>>,
    store: ConnectorStore,
) -> impl IntoView {
    let session = SessionState::expect();
    let step_up = StepUp::expect();
    let trusted =
        Memo::new(move |_| connector.with(|c| c.as_ref().is_some_and(|c| c.trust_annotations)));
    // The admin policy forbids it: it cannot be turned on, and where it is
    // on it does not apply (turning it off is still allowed).
    let forbidden = Memo::new(move |_| {
        connector.with(|c| c.as_ref().is_some_and(|c| c.trust_forbidden_by_policy))
    });
    let asking = RwSignal::new(false);
    let id_for_action = id.clone();
    let keep_asking = NodeRef::<leptos::html::Button>::new();
    let switch = NodeRef::<leptos::html::Button>::new();
    // Closing the question puts the keyboard back on the switch.
    let close_question = move || {
        asking.set(false);
        request_animation_frame(move || {
            if let Some(button) = switch.try_get_untracked().flatten() {
                let _ = button.focus();
            }
        });
    };

    let save = Action::new_local(move |trust: &bool| {
        let trust = *trust;
        let token = session.csrf_token().unwrap_or_default();
        let id = id_for_action.clone();
        async move {
            // Turning trust on may need a two-factor step-up first.
            let updated = step_up
                .run(|| api::set_trust_annotations(&token, &id, trust))
                .await
                .map_err(|failure| failure.detail)?;
            store.upsert(updated);
            if asking.get_untracked() {
                close_question();
            }
            Ok(())
        }
    });
    let busy = save.pending();
    let error = last_error(save);
    let on_switch = move |_| {
        if busy.get_untracked() {
            return;
        }
        if trusted.get_untracked() {
            save.dispatch_local(false);
        } else {
            asking.set(true);
            // The safe answer is where the keyboard lands.
            request_animation_frame(move || {
                if let Some(button) = keep_asking.try_get_untracked().flatten() {
                    let _ = button.focus();
                }
            });
        }
    };
    let confirm = move |_| {
        if !busy.get_untracked() {
            save.dispatch_local(true);
        }
    };

    let label_id = format!("connector-{id}-trust-label");
    let note_id = format!("connector-{id}-trust-note");
    let question_id = format!("connector-{id}-trust-question");
    let warning_id = format!("connector-{id}-trust-warning");
    let name = move || connector.with(|c| c.as_ref().map(|c| c.name.clone()).unwrap_or_default());

    view! {
        <div class="trust" data-testid="connector-trust">
            <div class="trust-row">
                <button
                    type="button"
                    class="switch"
                    role="switch"
                    data-testid="connector-trust-toggle"
                    node_ref=switch
                    aria-checked=move || trusted.get().to_string()
                    aria-labelledby=label_id.clone()
                    aria-describedby=note_id.clone()
                    disabled=move || busy.get() || asking.get() || (forbidden.get() && !trusted.get())
                    on:click=on_switch
                >
                    <span class="switch-knob" aria-hidden="true"></span>
                </button>
                <span id=label_id class="trust-label">
                    "Trust this server's safety annotations"
                </span>
            </div>
            <p id=note_id class="muted trust-note" data-testid="connector-trust-note">
                {move || match (forbidden.get(), trusted.get()) {
                    (true, true) => "Suspended: your administrator does not allow trusting servers' annotations, so every tool call asks for your approval.",
                    (true, false) => "Off: your administrator does not allow trusting servers' annotations. Every tool call asks for your approval.",
                    (false, true) => "On: tools this server declares read-only and closed-world run without asking you. Every other call still asks.",
                    (false, false) => "Off (recommended): every tool call asks for your approval.",
                }}
            </p>
            <Show when=move || asking.get()>
                <div
                    class="confirm"
                    role="alertdialog"
                    aria-labelledby=question_id.clone()
                    aria-describedby=warning_id.clone()
                    data-testid="connector-trust-dialog"
                >
                    <p id=question_id.clone() class="confirm-question">
                        {move || format!("Trust the safety annotations of “{}”?", name())}
                    </p>
                    <p id=warning_id.clone() data-testid="connector-trust-warning">
                        "The server writes its own annotations and Countersign cannot check them. Only tools it declares read-only and closed-world would run without asking you; every other call still asks. You can turn this off at any time."
                    </p>
                    <div class="confirm-buttons">
                        <button type="button" class="button danger" data-testid="connector-trust-confirm"
                            disabled=move || busy.get() on:click=confirm>
                            {move || if busy.get() { "Saving…" } else { "Trust its annotations" }}
                        </button>
                        <button type="button" class="button secondary" data-testid="connector-trust-cancel"
                            node_ref=keep_asking on:click=move |_| close_question()>
                            "Keep asking"
                        </button>
                    </div>
                </div>
            </Show>
            <FormError message=error testid="connector-trust-error" />
        </div>
    }
}

/// "Review results first" (docs/design.md §6.5a): what this connector's
/// tools return waits for the user to pass, redact or withhold it before
/// the assistant reads it. Either way at once: on is the careful
/// direction, and off leaves results that give the assistant instructions
/// held all the same.
#[component]
pub(super) fn ReviewToggle(
    id: String,
    connector: Memo<Option<Connector>>,
    store: ConnectorStore,
) -> impl IntoView {
    let session = SessionState::expect();
    let on = Memo::new(move |_| connector.with(|c| c.as_ref().is_some_and(|c| c.review_results)));
    let id_for_action = id.clone();
    let save = Action::new_local(move |review: &bool| {
        let review = *review;
        let token = session.csrf_token().unwrap_or_default();
        let id = id_for_action.clone();
        async move {
            let updated = api::set_review_results(&token, &id, review)
                .await
                .map_err(|failure| failure.detail)?;
            store.upsert(updated);
            Ok(())
        }
    });
    let busy = save.pending();
    let error = last_error(save);
    let label_id = format!("connector-{id}-review-label");
    let note_id = format!("connector-{id}-review-note");
    view! {
        <div class="trust" data-testid="connector-review-results">
            <div class="trust-row">
                <button
                    type="button"
                    class="switch"
                    role="switch"
                    data-testid="connector-review-results-toggle"
                    aria-checked=move || on.get().to_string()
                    aria-labelledby=label_id.clone()
                    aria-describedby=note_id.clone()
                    disabled=move || busy.get()
                    on:click=move |_| {
                        if !busy.get_untracked() {
                            save.dispatch_local(!on.get_untracked());
                        }
                    }
                >
                    <span class="switch-knob" aria-hidden="true"></span>
                </button>
                <span id=label_id class="trust-label">"Review results first"</span>
            </div>
            <p id=note_id class="muted trust-note" data-testid="connector-review-results-note">
                {move || if on.get() {
                    "On: everything this server's tools return waits for you to pass, redact or withhold it before the assistant reads it."
                } else {
                    "Off: results go to the assistant, except those that give it instructions, which always wait for you."
                }}
            </p>
            <FormError message=error testid="connector-review-results-error" />
        </div>
    }
}
