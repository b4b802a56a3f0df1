//! The inline error under a form.

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
