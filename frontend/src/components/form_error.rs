//! The inline error under a form, and how a form's [`Action`] feeds it:
//! the failure of its last run ([`last_error`]) and the `on:submit` that
//! dispatches it ([`submit_handler`]).
//!
//! A form's action answers `Result<T, String>`, `Err` with the server's
//! `detail`; the error is hidden while the action runs again.

use leptos::ev::SubmitEvent;
use leptos::prelude::*;

/// The server's `detail` for the last failed submission, announced to screen
/// readers (`role="alert"`); renders nothing while there is none.
#[component]
pub fn FormError(
    /// The message to show, if any.
    #[prop(into)]
    message: Signal<Option<String>>,
    /// `data-testid` of the message element.
    testid: &'static str,
) -> impl IntoView {
    move || {
        message.get().map(|message| {
            view! {
                <p class="form-error" role="alert" data-testid=testid>
                    {message}
                </p>
            }
        })
    }
}

/// Why the last run of `action` failed; `None` while it runs again, so a
/// repeated failure is announced anew.
pub fn last_error<I, T>(action: Action<I, Result<T, String>>) -> Signal<Option<String>>
where
    I: 'static,
    T: 'static,
{
    let pending = action.pending();
    Signal::derive(move || {
        if pending.get() {
            return None;
        }
        action
            .value()
            .with(|last| last.as_ref().and_then(|r| r.as_ref().err().cloned()))
    })
}

/// A form's `on:submit`: keeps the browser from submitting it and, unless
/// `action` is still running, dispatches it with what `input` reads from
/// the form (`None`: nothing to send yet).
pub fn submit_handler<I, O>(
    action: Action<I, O>,
    input: impl Fn() -> Option<I> + 'static,
) -> impl Fn(SubmitEvent) + 'static
where
    I: 'static,
    O: 'static,
{
    let pending = action.pending();
    move |event: SubmitEvent| {
        event.prevent_default();
        if pending.get_untracked() {
            return;
        }
        if let Some(input) = input() {
            action.dispatch_local(input);
        }
    }
}
