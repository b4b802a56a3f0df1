//! `/signin`: email and password.

use countersign_api::LoginRequest;
use leptos::ev::SubmitEvent;
use leptos::prelude::*;
use leptos_router::components::A;

use crate::api;
use crate::components::{FormError, set_page_title};
use crate::session::SessionState;

/// The sign-in form; on success the app goes to `/`.
#[component]
pub fn SignInPage() -> impl IntoView {
    set_page_title("Sign in");
    let session = SessionState::expect();
    let email = RwSignal::new(String::new());
    let password = RwSignal::new(String::new());

    let submit = Action::new_local(move |request: &LoginRequest| {
        let request = request.clone();
        async move {
            let opened = api::login(&request).await.map_err(|error| error.detail)?;
            // The route guard takes the user to `/` from here.
            session.signed_in(opened);
            Ok::<(), String>(())
        }
    });
    let pending = submit.pending();
    // Hidden while a retry is in flight, so a repeated error is announced anew.
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
        submit.dispatch_local(LoginRequest {
            email: email.get_untracked().trim().to_owned(),
            password: password.get_untracked(),
            code: None,
        });
    };

    view! {
        <div class="auth-page">
            <div class="card">
                <p class="brand-mark">"Countersign"</p>
                <h1>"Sign in"</h1>
                <form on:submit=on_submit>
                    <div class="field">
                        <label for="signin-email">"Email"</label>
                        <input
                            id="signin-email"
                            data-testid="signin-email"
                            type="email"
                            name="email"
                            autocomplete="username"
                            required
                            bind:value=email
                        />
                    </div>
                    <div class="field">
                        <label for="signin-password">"Password"</label>
                        <input
                            id="signin-password"
                            data-testid="signin-password"
                            type="password"
                            name="password"
                            autocomplete="current-password"
                            required
                            bind:value=password
                        />
                    </div>
                    <FormError message=error testid="signin-error" />
                    <button
                        type="submit"
                        class="button primary wide"
                        data-testid="signin-submit"
                        disabled=move || pending.get()
                    >
                        {move || if pending.get() { "Signing in…" } else { "Sign in" }}
                    </button>
                </form>
                <p class="switch">"New here? " <A href="/signup">"Create an account"</A></p>
            </div>
        </div>
    }
}
