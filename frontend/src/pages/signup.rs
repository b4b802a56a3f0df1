//! `/signup`: email, optional display name, password.

use countersign_api::{PASSWORD_MIN_CHARS, SignupRequest};
use leptos::ev::SubmitEvent;
use leptos::prelude::*;
use leptos_router::components::A;

use crate::api;
use crate::components::{FormError, set_page_title};
use crate::session::SessionState;

/// The sign-up form; on success the new account is signed in and the app
/// goes to `/`. Password rules are the server's: this page only shows its
/// verdict (no `minlength`, which would pre-empt the server's message).
#[component]
pub fn SignUpPage() -> impl IntoView {
    set_page_title("Create account");
    let session = SessionState::expect();
    let email = RwSignal::new(String::new());
    let display_name = RwSignal::new(String::new());
    let password = RwSignal::new(String::new());

    let submit = Action::new_local(move |request: &SignupRequest| {
        let request = request.clone();
        async move {
            let opened = api::signup(&request).await.map_err(|error| error.detail)?;
            // The route guard takes the user to `/` from here.
            session.signed_in(opened);
            Ok::<(), String>(())
        }
    });
    let pending = submit.pending();
    let error = Signal::derive(move || -> Option<String> {
        if pending.get() {
            None
        } else {
            submit.value().get().and_then(Result::err)
        }
    });

    let on_submit = move |event: SubmitEvent| {
        event.prevent_default();
        if pending.get_untracked() {
            return;
        }
        let name = display_name.get_untracked().trim().to_owned();
        submit.dispatch_local(SignupRequest {
            email: email.get_untracked().trim().to_owned(),
            password: password.get_untracked(),
            display_name: (!name.is_empty()).then_some(name),
        });
    };

    view! {
        <div class="auth-page">
            <div class="card">
                <p class="brand-mark">"Countersign"</p>
                <h1>"Create account"</h1>
                <form on:submit=on_submit>
                    <div class="field">
                        <label for="signup-email">"Email"</label>
                        <input
                            id="signup-email"
                            data-testid="signup-email"
                            type="email"
                            name="email"
                            autocomplete="email"
                            required
                            bind:value=email
                        />
                    </div>
                    <div class="field">
                        <label for="signup-name">
                            "Display name " <span class="optional">"(optional)"</span>
                        </label>
                        <input
                            id="signup-name"
                            data-testid="signup-name"
                            type="text"
                            name="display_name"
                            autocomplete="name"
                            bind:value=display_name
                        />
                    </div>
                    <div class="field">
                        <label for="signup-password">"Password"</label>
                        <input
                            id="signup-password"
                            data-testid="signup-password"
                            type="password"
                            name="password"
                            autocomplete="new-password"
                            aria-describedby="signup-password-hint"
                            required
                            bind:value=password
                        />
                        <p id="signup-password-hint" class="hint">
                            {format!(
                                "At least {PASSWORD_MIN_CHARS} characters. A few unrelated words make a strong, memorable passphrase.",
                            )}
                        </p>
                    </div>
                    <FormError message=error testid="signup-error" />
                    <button
                        type="submit"
                        class="button primary wide"
                        data-testid="signup-submit"
                        disabled=move || pending.get()
                    >
                        {move || if pending.get() { "Creating account…" } else { "Create account" }}
                    </button>
                </form>
                <p class="switch">"Already have an account? " <A href="/signin">"Sign in"</A></p>
            </div>
        </div>
    }
}
