//! `/signup`: email, optional display name, password.

use countersign_api::{PASSWORD_MIN_CHARS, SignupRequest};
use leptos::prelude::*;

use crate::api;
use crate::components::{
    AuthForm, AuthPage, EmailField, last_error, set_page_title, submit_handler,
};
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
    let error = last_error(submit);
    let on_submit = submit_handler(submit, move || {
        let name = display_name.get_untracked().trim().to_owned();
        Some(SignupRequest {
            email: email.get_untracked().trim().to_owned(),
            password: password.get_untracked(),
            display_name: (!name.is_empty()).then_some(name),
        })
    });

    view! {
        <AuthForm page=AuthPage::SignUp on_submit=on_submit pending=pending error=error>
            <EmailField page=AuthPage::SignUp value=email error=error />
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
                    aria-describedby="signup-password-hint signup-error-message"
                    aria-invalid=move || error.with(Option::is_some).then_some("true")
                    required
                    bind:value=password
                />
                <p id="signup-password-hint" class="hint">
                    {format!(
                        "At least {PASSWORD_MIN_CHARS} characters. A few unrelated words make a strong, memorable passphrase.",
                    )}
                </p>
            </div>
        </AuthForm>
    }
}
