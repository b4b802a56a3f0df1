//! The inline error under a form, and how a form's [`Action`] feeds it:
//! the failure and the notice of its last run ([`last_error`],
//! [`last_notice`]) and the `on:submit` that dispatches it
//! ([`submit_handler`]).
//!
//! Every write of the app is an `Action` answering `Result<T, String>`:
//! `Ok` with what the page says afterwards (if anything), `Err` with the
//! server's `detail`. Both are hidden while the action runs again, as the
//! hand-made signals they replace were cleared when a request started.

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
    /// Its element id, for the fields' `aria-describedby`.
    #[prop(optional)]
    id: Option<&'static str>,
    /// Move the keyboard focus to it when it appears (a form whose only
    /// feedback it is: a failed sign-in).
    #[prop(optional)]
    focus: bool,
) -> impl IntoView {
    let line = NodeRef::<leptos::html::P>::new();
    if focus {
        Effect::new(move |_| {
            if message.with(Option::is_some) {
                request_animation_frame(move || {
                    if let Some(line) = line.try_get_untracked().flatten() {
                        let _ = line.focus();
                    }
                });
            }
        });
    }
    move || {
        message.get().map(|message| {
            view! {
                <p class="form-error" role="alert" id=id tabindex=focus.then_some("-1")
                    node_ref=line data-testid=testid>
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
    last_outcome(action, |last| last.as_ref().err().cloned())
}

/// What the last run of `action` answered when it succeeded (a notice to
/// show); `None` after a failure and while it runs again.
pub fn last_notice<I, T>(action: Action<I, Result<T, String>>) -> Signal<Option<T>>
where
    I: 'static,
    T: Clone + Send + Sync + 'static,
{
    last_outcome(action, |last| last.as_ref().ok().cloned())
}

/// `pick` of the last run's result, hidden while `action` runs.
fn last_outcome<I, T, U>(
    action: Action<I, Result<T, String>>,
    pick: fn(&Result<T, String>) -> Option<U>,
) -> Signal<Option<U>>
where
    I: 'static,
    T: 'static,
    U: Send + Sync + 'static,
{
    let pending = action.pending();
    Signal::derive(move || {
        if pending.get() {
            return None;
        }
        action.value().with(|last| last.as_ref().and_then(pick))
    })
}

/// A form's `on:submit`: keeps the browser from submitting it and, unless
/// `action` is still running, dispatches it with what `input` reads from
/// the form (`None`: nothing to send yet).
pub fn submit_handler<I, O>(
    action: Action<I, O>,
    input: impl Fn() -> Option<I> + Copy + 'static,
) -> impl Fn(SubmitEvent) + Copy + 'static
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
