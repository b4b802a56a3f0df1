//! The two-factor step-up, as the signed-in app shows it: [`StepUp`] (in
//! context) runs an action through [`retry_after_step_up`], and
//! [`StepUpDialog`] is the one modal that asks "Enter the code from your
//! authenticator app to continue", posts it to `/api/auth/mfa/step-up` and
//! lets the waiting actions retry.
//!
//! The dialog is a native `<dialog>` opened with `showModal()`: the rest of
//! the page is inert while it is open, Escape cancels, and the browser puts
//! the focus back where it was when it closes. Which actions need a step-up
//! is never known here: only the server's 403 `mfa_required` opens it.

use std::future::Future;

use leptos::prelude::*;

use crate::api::{self, ApiError};
use crate::components::{FormError, last_error, submit_handler};
use crate::model::step_up::{Answer, Answerer, answer_channel, retry_after_step_up};
use crate::session::SessionState;

/// Handle to the step-up dialog; provided by the signed-in shell.
#[derive(Clone, Copy)]
pub struct StepUp {
    /// The dialog is open.
    open: RwSignal<bool>,
    /// It was opened once: from then on it is drawn (its code is a lazy
    /// chunk that most sessions never load).
    opened: RwSignal<bool>,
    /// The actions waiting for a code; all get the same answer.
    waiting: StoredValue<Vec<Answerer>, LocalStorage>,
}

impl StepUp {
    /// Creates the handle and provides it as context.
    pub fn provide() -> Self {
        let step_up = Self {
            open: RwSignal::new(false),
            opened: RwSignal::new(false),
            waiting: StoredValue::new_local(Vec::new()),
        };
        provide_context(step_up);
        step_up
    }

    /// Whether the dialog was ever opened (so is drawn).
    pub fn opened(self) -> bool {
        self.opened.get()
    }

    /// The handle provided by [`StepUp::provide`].
    pub fn expect() -> Self {
        expect_context::<Self>()
    }

    /// Runs `action`; when the server answers 403 `mfa_required`, asks for a
    /// code and runs it once more (see [`retry_after_step_up`]).
    pub async fn run<T, Action, Fut>(self, action: Action) -> Result<T, ApiError>
    where
        Action: Fn() -> Fut,
        Fut: Future<Output = Result<T, ApiError>>,
    {
        retry_after_step_up(action, move || self.ask()).await
    }

    /// Opens the dialog (or joins the open one); resolves to `true` once the
    /// server accepted a code, `false` when the dialog was cancelled.
    fn ask(self) -> Answer {
        let (answerer, answer) = answer_channel();
        self.waiting.update_value(|waiting| waiting.push(answerer));
        self.opened.set(true);
        self.open.set(true);
        answer
    }

    /// Closes the dialog and answers everyone waiting.
    fn finish(self, accepted: bool) {
        let waiting = self
            .waiting
            .try_update_value(std::mem::take)
            .unwrap_or_default();
        self.open.try_set(false);
        for answerer in waiting {
            answerer.answer(accepted);
        }
    }
}

/// The modal code prompt; render once, inside the signed-in shell, from
/// the first time it is needed on (`lazy::LazyStepUpDialog`).
#[component]
pub fn StepUpDialog() -> impl IntoView {
    let step_up = StepUp::expect();
    let session = SessionState::expect();
    let dialog = NodeRef::<leptos::html::Dialog>::new();
    let input = NodeRef::<leptos::html::Input>::new();
    let code = RwSignal::new(String::new());

    let focus_input = move || {
        request_animation_frame(move || {
            if let Some(input) = input.try_get_untracked().flatten() {
                let _ = input.focus();
                input.select();
            }
        });
    };

    let check = Action::new_local(move |typed: &String| {
        let typed = typed.clone();
        let token = session.csrf_token().unwrap_or_default();
        async move {
            match api::mfa_step_up(&token, &typed).await {
                Ok(()) => {
                    step_up.finish(true);
                    Ok(())
                }
                Err(failure) => {
                    focus_input();
                    Err(failure.detail)
                }
            }
        }
    });
    let busy = check.pending();
    let error = last_error(check);

    // The signal says open or closed; the element follows.
    Effect::new(move |_| {
        let open = step_up.open.get();
        let Some(element) = dialog.get() else {
            return;
        };
        if open && !element.open() {
            code.set(String::new());
            // (A code still being checked when the dialog last closed keeps
            // Continue busy until the server answers it.)
            check.clear();
            if element.show_modal().is_ok() {
                focus_input();
            }
        } else if !open && element.open() {
            element.close();
        }
    });
    // Signing out or leaving the shell closes it: nobody waits for ever.
    on_cleanup(move || step_up.finish(false));

    let submit = submit_handler(check, move || {
        let typed = code.get_untracked().trim().to_owned();
        (!typed.is_empty()).then_some(typed)
    });
    let cancel = move || step_up.finish(false);

    view! {
        <dialog
            class="step-up-dialog"
            node_ref=dialog
            aria-labelledby="step-up-title"
            aria-describedby="step-up-help"
            data-testid="step-up-dialog"
            // Escape closes the element itself; whenever it closes while
            // someone still waits, that is a cancel.
            on:close=move |_: leptos::ev::Event| {
                if step_up.open.get_untracked() {
                    cancel();
                }
            }
        >
            <form on:submit=submit>
                <h2 id="step-up-title">"Confirm it's you"</h2>
                <p id="step-up-help">"Enter the code from your authenticator app to continue."</p>
                <div class="field">
                    <label for="step-up-code">"Two-factor code"</label>
                    <input
                        id="step-up-code"
                        data-testid="step-up-code"
                        type="text"
                        name="code"
                        autocomplete="one-time-code"
                        spellcheck="false"
                        required
                        node_ref=input
                        bind:value=code
                    />
                    <p class="hint">"Six digits, or one of your recovery codes."</p>
                </div>
                <FormError message=error testid="step-up-error" />
                <div class="dialog-buttons">
                    <button
                        type="submit"
                        class="button primary"
                        data-testid="step-up-submit"
                        disabled=move || busy.get()
                    >
                        {move || if busy.get() { "Checking…" } else { "Continue" }}
                    </button>
                    <button
                        type="button"
                        class="button secondary"
                        data-testid="step-up-cancel"
                        on:click=move |_| cancel()
                    >
                        "Cancel"
                    </button>
                </div>
            </form>
        </dialog>
    }
}
