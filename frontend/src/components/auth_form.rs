//! The card the signed-out pages share: the brand, the page's heading,
//! single sign-on's part when there is one, the form (fields, error,
//! submit button) and the way to the other page.

use leptos::ev::SubmitEvent;
use leptos::prelude::*;
use leptos_router::components::A;

use crate::components::FormError;

/// Which signed-out page a card belongs to: its words and `data-testid`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthPage {
    /// `/signin`.
    SignIn,
    /// `/signup`.
    SignUp,
    /// `/signin?link=1`: the password of the account that single sign-on
    /// found by its e-mail, proved once to link the two.
    Link,
}

impl AuthPage {
    /// The heading, which is also the submit button's text.
    fn title(self) -> &'static str {
        match self {
            Self::SignIn => "Sign in",
            Self::SignUp => "Create account",
            Self::Link => "Link your account",
        }
    }

    /// The submit button's text while the page's action runs.
    fn busy_label(self) -> &'static str {
        match self {
            Self::SignIn => "Signing in…",
            Self::SignUp => "Creating account…",
            Self::Link => "Linking…",
        }
    }

    /// The form error's element id: every field is described by it, so a
    /// screen reader reads the server's reason with the field.
    pub fn error_id(self) -> &'static str {
        match self {
            Self::SignIn => "signin-error-message",
            Self::SignUp => "signup-error-message",
            Self::Link => "link-error-message",
        }
    }

    /// `data-testid`s of the error and of the submit button.
    fn testids(self) -> (&'static str, &'static str) {
        match self {
            Self::SignIn => ("signin-error", "signin-submit"),
            Self::SignUp => ("signup-error", "signup-submit"),
            Self::Link => ("link-error", "link-submit"),
        }
    }

    /// The email field's element id (also its `data-testid`) and autofill
    /// hint.
    fn email_field(self) -> (&'static str, &'static str) {
        match self {
            Self::SignIn | Self::Link => ("signin-email", "username"),
            Self::SignUp => ("signup-email", "email"),
        }
    }

    /// The line under the form: a question, and the link to the other page.
    fn switch(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Self::SignIn => ("New here? ", "/signup", "Create an account"),
            Self::SignUp => ("Already have an account? ", "/signin", "Sign in"),
            Self::Link => ("Not now? ", "/signin", "Back to sign-in"),
        }
    }
}

/// Sign-in's or sign-up's card; the page brings the fields and the action.
#[component]
pub fn AuthForm(
    /// Whose card it is.
    page: AuthPage,
    /// The form's `on:submit` (see [`crate::components::submit_handler`]).
    on_submit: impl Fn(SubmitEvent) + 'static,
    /// The page's action is running: the button is disabled and says so.
    pending: Memo<bool>,
    /// Why the last attempt failed.
    error: Signal<Option<String>>,
    /// What comes between the heading and the form: single sign-on's
    /// button, what it said.
    #[prop(optional, into)]
    lead: ViewFn,
    /// Whether the form is drawn (`false` when passwords do not sign in).
    #[prop(optional, into)]
    form_shown: Option<Signal<bool>>,
    /// The fields.
    children: Children,
) -> impl IntoView {
    let (title, busy_label) = (page.title(), page.busy_label());
    let (error_testid, submit_testid) = page.testids();
    let (switch_text, switch_href, switch_link) = page.switch();
    view! {
        <main class="auth-page">
            <div class="card">
                <p class="brand-mark">"Countersign"</p>
                <h1>{title}</h1>
                {lead.run()}
                <form on:submit=on_submit hidden=move || form_shown.is_some_and(|shown| !shown.get())>
                    {children()}
                    <FormError message=error testid=error_testid id=page.error_id() focus=true />
                    <button
                        type="submit"
                        class="button primary wide"
                        data-testid=submit_testid
                        disabled=move || pending.get()
                    >
                        {move || if pending.get() { busy_label } else { title }}
                    </button>
                </form>
                <p class="auth-switch" data-testid="auth-switch" hidden=move || form_shown.is_some_and(|shown| !shown.get())>
                    {switch_text} <A href=switch_href>{switch_link}</A>
                </p>
            </div>
        </main>
    }
}

/// The email field both forms open with.
#[component]
pub fn EmailField(
    /// Whose form it is.
    page: AuthPage,
    /// What was typed.
    value: RwSignal<String>,
    /// The form's error, which describes the field while there is one.
    #[prop(into)]
    error: Signal<Option<String>>,
) -> impl IntoView {
    let (id, autocomplete) = page.email_field();
    let invalid = move || error.with(Option::is_some).then_some("true");
    view! {
        <div class="field">
            <label for=id>"Email"</label>
            <input
                id=id
                data-testid=id
                type="email"
                name="email"
                autocomplete=autocomplete
                aria-describedby=page.error_id()
                aria-invalid=invalid
                required
                bind:value=value
            />
        </div>
    }
}
