//! `/signin`: email and password, then — when the server answers that the
//! account has two-factor sign-in (401 `mfa_required`) — the code from the
//! authenticator app or a recovery code, sent with the same email and
//! password.

use countersign_api::LoginRequest;
use leptos::prelude::*;

use crate::api;
use crate::components::{
    AuthForm, AuthPage, EmailField, last_error, set_page_title, submit_handler,
};
use crate::session::SessionState;

/// The sign-in form; on success the app goes to `/`.
#[component]
pub fn SignInPage() -> impl IntoView {
    set_page_title("Sign in");
    let session = SessionState::expect();
    let email = RwSignal::new(String::new());
    let password = RwSignal::new(String::new());
    let code = RwSignal::new(String::new());
    // The server asked for a second factor: the code field is shown.
    let needs_code = RwSignal::new(false);
    let code_input = NodeRef::<leptos::html::Input>::new();

    let submit = Action::new_local(move |request: &LoginRequest| {
        let request = request.clone();
        async move {
            match api::login(&request).await {
                Ok(opened) => {
                    // The route guard takes the user to `/` from here.
                    session.signed_in(opened);
                    Ok(())
                }
                Err(error) if error.is_mfa_required() => {
                    needs_code.set(true);
                    request_animation_frame(move || {
                        if let Some(input) = code_input.try_get_untracked().flatten() {
                            let _ = input.focus();
                        }
                    });
                    // Not a failure: the page now asks for the code.
                    Ok(())
                }
                Err(error) => Err(error.detail),
            }
        }
    });
    let pending = submit.pending();
    let error = last_error(submit);
    let on_submit = submit_handler(submit, move || {
        let typed = code.get_untracked().trim().to_owned();
        Some(LoginRequest {
            email: email.get_untracked().trim().to_owned(),
            password: password.get_untracked(),
            code: (needs_code.get_untracked() && !typed.is_empty()).then_some(typed),
        })
    });

    view! {
        <AuthForm page=AuthPage::SignIn on_submit=on_submit pending=pending error=error>
            <EmailField page=AuthPage::SignIn value=email error=error />
            <div class="field">
                <label for="signin-password">"Password"</label>
                <input
                    id="signin-password"
                    data-testid="signin-password"
                    type="password"
                    name="password"
                    autocomplete="current-password"
                    aria-describedby=AuthPage::SignIn.error_id()
                    aria-invalid=move || error.with(Option::is_some).then_some("true")
                    required
                    bind:value=password
                />
            </div>
            <Show when=move || needs_code.get()>
                <div class="field">
                    <label for="signin-code">"Two-factor code"</label>
                    <input
                        id="signin-code"
                        data-testid="signin-code"
                        type="text"
                        name="code"
                        autocomplete="one-time-code"
                        spellcheck="false"
                        aria-describedby="signin-code-hint signin-error-message"
                        required
                        node_ref=code_input
                        bind:value=code
                    />
                    <p id="signin-code-hint" class="hint" data-testid="signin-code-hint">
                        "Enter the code from your authenticator app, or one of your recovery codes."
                    </p>
                </div>
            </Show>
        </AuthForm>
    }
}
