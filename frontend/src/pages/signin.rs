//! `/signin`: the organisation's single sign-on button when the server has
//! an identity provider (and what the provider's sign-in came back with,
//! `?sso_error=`), then email and password unless the server turned
//! passwords off — and, when the server answers that the account has
//! two-factor sign-in (401 `mfa_required`), the code from the
//! authenticator app or a recovery code, sent with the same email and
//! password.
//!
//! `/signin?link=1`: single sign-on found an existing account by its
//! e-mail; its password (and code) is asked once to link the two.

use countersign_api::{LoginRequest, SessionResponse, SsoLinkRequest};
use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::hooks::{use_navigate, use_query_map};

use crate::api::{self, ApiError};
use crate::components::{
    AuthForm, AuthPage, EmailField, last_error, set_page_title, submit_handler,
};
use crate::model::return_to::{encode, return_to};
use crate::session::SessionState;

/// The sign-in page, or the link page with `?link=1`.
#[component]
pub fn SignInPage() -> impl IntoView {
    let query = use_query_map();
    let (linking, sso_error, next) =
        query.with_untracked(|q| (q.get("link").is_some(), q.get("sso_error"), q.get("next")));
    if sso_error.is_some() {
        // Said once: a reload does not say it again.
        let navigate = use_navigate();
        Effect::new(move |_| {
            navigate(
                "/signin",
                NavigateOptions {
                    replace: true,
                    scroll: false,
                    ..Default::default()
                },
            );
        });
    }
    if linking {
        view! { <LinkPage /> }.into_any()
    } else {
        let start = format!(
            "/auth/oidc/start?return_to={}",
            encode(return_to(next.as_deref()))
        );
        view! { <PasswordPage sso_error=sso_error start=start /> }.into_any()
    }
}

/// The password and the two-factor code fields, shared by both pages.
#[component]
fn SecretFields(
    password: RwSignal<String>,
    code: RwSignal<String>,
    needs_code: RwSignal<bool>,
    code_input: NodeRef<leptos::html::Input>,
    error: Signal<Option<String>>,
    page: AuthPage,
) -> impl IntoView {
    view! {
        <div class="field">
            <label for="signin-password">"Password"</label>
            <input
                id="signin-password"
                data-testid="signin-password"
                type="password"
                name="password"
                autocomplete="current-password"
                aria-describedby=page.error_id()
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
                    aria-describedby=format!("signin-code-hint {}", page.error_id())
                    required
                    node_ref=code_input
                    bind:value=code
                />
                <p id="signin-code-hint" class="hint" data-testid="signin-code-hint">
                    "Enter the code from your authenticator app, or one of your recovery codes."
                </p>
            </div>
        </Show>
    }
}

/// What an answer to a password does: a session signs in, `mfa_required`
/// shows the code field (not a failure), anything else is the error.
fn opened_or_code(
    answer: Result<SessionResponse, ApiError>,
    session: SessionState,
    needs_code: RwSignal<bool>,
    code_input: NodeRef<leptos::html::Input>,
) -> Result<(), String> {
    match answer {
        Ok(opened) => {
            // The route guard takes the user on from here.
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
            Ok(())
        }
        Err(error) => Err(error.detail),
    }
}

/// The typed code, when the code field is shown and not blank.
fn typed_code(needs_code: RwSignal<bool>, code: RwSignal<String>) -> Option<String> {
    let typed = code.get_untracked().trim().to_owned();
    (needs_code.get_untracked() && !typed.is_empty()).then_some(typed)
}

/// Sign-in: single sign-on's button when the server has a provider, and
/// the password form unless passwords are off; on success the app goes
/// to `/` (or `?next=`).
#[component]
fn PasswordPage(sso_error: Option<String>, start: String) -> impl IntoView {
    set_page_title("Sign in");
    let session = SessionState::expect();
    let email = RwSignal::new(String::new());
    let password = RwSignal::new(String::new());
    let code = RwSignal::new(String::new());
    // The server asked for a second factor: the code field is shown.
    let needs_code = RwSignal::new(false);
    let code_input = NodeRef::<leptos::html::Input>::new();
    let options = LocalResource::new(api::auth_options);
    let options = Signal::derive(move || options.get().and_then(Result::ok));
    let passwords =
        Signal::derive(move || options.with(|o| o.as_ref().is_none_or(|o| o.password_signin)));

    let submit = Action::new_local(move |request: &LoginRequest| {
        let request = request.clone();
        async move { opened_or_code(api::login(&request).await, session, needs_code, code_input) }
    });
    let pending = submit.pending();
    let error = last_error(submit);
    let on_submit = submit_handler(submit, move || {
        Some(LoginRequest {
            email: email.get_untracked().trim().to_owned(),
            password: password.get_untracked(),
            code: typed_code(needs_code, code),
        })
    });

    let lead = move || {
        let start = start.clone();
        view! {
            {sso_error.clone().map(|said| view! {
                <p class="form-error" role="alert" data-testid="sso-error">{said}</p>
            })}
            {move || {
                let start = start.clone();
                options.get().and_then(|o| o.sso_label).map(|label| view! {
                    <a class="button primary wide sso-button" href=start rel="external" data-testid="sso-signin">
                        {label}
                    </a>
                    <p class="auth-or muted" hidden=move || !passwords.get()>
                        "or with your email and password"
                    </p>
                })
            }}
        }
    };

    view! {
        <AuthForm
            page=AuthPage::SignIn
            on_submit=on_submit
            pending=pending
            error=error
            lead=lead
            form_shown=passwords
        >
            <EmailField page=AuthPage::SignIn value=email error=error />
            <SecretFields
                password=password
                code=code
                needs_code=needs_code
                code_input=code_input
                error=error
                page=AuthPage::SignIn
            />
        </AuthForm>
    }
}

/// `/signin?link=1`: the existing account's password, once.
#[component]
fn LinkPage() -> impl IntoView {
    set_page_title("Link your account");
    let session = SessionState::expect();
    let password = RwSignal::new(String::new());
    let code = RwSignal::new(String::new());
    let needs_code = RwSignal::new(false);
    let code_input = NodeRef::<leptos::html::Input>::new();

    let submit = Action::new_local(move |request: &SsoLinkRequest| {
        let request = request.clone();
        async move {
            opened_or_code(
                api::link_sso(&request).await,
                session,
                needs_code,
                code_input,
            )
        }
    });
    let pending = submit.pending();
    let error = last_error(submit);
    let on_submit = submit_handler(submit, move || {
        Some(SsoLinkRequest {
            password: password.get_untracked(),
            code: typed_code(needs_code, code),
        })
    });
    let lead = || {
        view! {
            <p class="lead" data-testid="link-lead">
                "An account with your email address already exists here. Enter its password once to link it to your organisation's sign-in; from then on, that sign-in is enough."
            </p>
        }
    };

    view! {
        <AuthForm page=AuthPage::Link on_submit=on_submit pending=pending error=error lead=lead>
            <SecretFields
                password=password
                code=code
                needs_code=needs_code
                code_input=code_input
                error=error
                page=AuthPage::Link
            />
        </AuthForm>
    }
}
