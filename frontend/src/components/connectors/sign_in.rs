//! OAuth sign-in in Settings → Connectors: an OAuth connector's sign-in
//! state and its Sign in / Sign out button ([`SignInControls`], part of its
//! row), and the status line shown when the authorization server sends the
//! browser back to Settings ([`SignInReturnLine`]).
//!
//! Sign in asks the server for the authorization URL, then sends the whole
//! window there: the user signs in on the authorization server's own page,
//! and the server's callback brings the browser back to
//! `/settings?oauth=connected&connector=<id>` (or `?oauth_error=…`). The
//! page never sees a code or a token. What it deliberately does not do:
//! decide that a connector is signed in — that is the server's
//! `oauth_status`, shown as it is.

use countersign_api::{AuthType, Connector, ConnectorStatus, OAuthStatus};
use leptos::prelude::*;

use super::store::ConnectorStore;
use crate::api;
use crate::components::{FormError, StepUp, last_error};
use crate::model::oauth::{SignInReturn, browser_may_open, sign_in_state};
use crate::session::SessionState;

/// Whether the connector's stored error belongs beside its Sign in button:
/// an OAuth connector that is not signed in (Test and Refresh answer "Sign
/// in to this connector again." then). The row shows it there instead of
/// with its other facts.
pub(super) fn error_is_about_sign_in(connector: &Connector) -> bool {
    connector.auth_type == AuthType::OAuth && connector.oauth_status != OAuthStatus::Connected
}

/// What the sign-in button asks the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SignInRequest {
    /// Start a sign-in, then go to the authorization server's page.
    SignIn,
    /// Forget (and revoke) the connector's tokens.
    SignOut,
}

/// An OAuth connector's sign-in: "Signed in with <host>" or "Not signed
/// in", the last Test's "Sign in to this connector again." when that is
/// what it said, and one button — Sign in, or Sign out when signed in. It
/// stays the same element when it turns from one into the other, so the
/// keyboard stays on it; `button` lets the row put the keyboard there when
/// a Test asks for a sign-in.
#[component]
pub(super) fn SignInControls(
    id: String,
    connector: Memo<Option<Connector>>,
    store: ConnectorStore,
    button: NodeRef<leptos::html::Button>,
) -> impl IntoView {
    let session = SessionState::expect();
    let status = Memo::new(move |_| {
        connector.with(|c| {
            c.as_ref()
                .map_or(OAuthStatus::NotApplicable, |c| c.oauth_status)
        })
    });
    let connected = move || status.get() == OAuthStatus::Connected;
    let state_text = move || {
        let host = connector.with(|c| {
            c.as_ref()
                .and_then(|c| c.oauth_issuer.as_deref())
                .and_then(hostname_of)
        });
        sign_in_state(status.get(), host.as_deref()).unwrap_or_default()
    };
    let sign_in_error = move || {
        connector.with(|c| {
            c.as_ref()
                .filter(|c| c.status == ConnectorStatus::Error && error_is_about_sign_in(c))
                .and_then(|c| c.last_error.clone())
        })
    };

    let step_up = StepUp::expect();
    let id_for_action = id.clone();
    let act = Action::new_local(move |request: &SignInRequest| {
        let request = *request;
        let token = session.csrf_token().unwrap_or_default();
        let id = id_for_action.clone();
        async move {
            match request {
                // Which account the connector acts as is a credential:
                // both ways may need a two-factor step-up first.
                SignInRequest::SignIn => {
                    let started = step_up
                        .run(|| api::start_connector_sign_in(&token, &id))
                        .await
                        .map_err(|failure| failure.detail)?;
                    open_sign_in_page(&started.authorization_url)
                }
                SignInRequest::SignOut => {
                    let outcome = step_up
                        .run(|| api::sign_out_connector(&token, &id))
                        .await
                        .map_err(|failure| failure.detail);
                    // Either way, show where the sign-in stands now.
                    store.reload();
                    outcome
                }
            }
        }
    });
    let pending = act.pending();
    let running = act.input();
    let error = last_error(act);
    let on_click = move |_| {
        if pending.get_untracked() {
            return;
        }
        act.dispatch_local(if status.get_untracked() == OAuthStatus::Connected {
            SignInRequest::SignOut
        } else {
            SignInRequest::SignIn
        });
    };
    let label = move || match (running.get(), connected()) {
        (Some(SignInRequest::SignIn), _) => "Opening the sign-in page…",
        (Some(SignInRequest::SignOut), _) => "Signing out…",
        (None, true) => "Sign out",
        (None, false) => "Sign in",
    };
    let error_id = format!("connector-{id}-sign-in-error");
    let described_by = {
        let error_id = error_id.clone();
        move || sign_in_error().map(|_| error_id.clone())
    };

    view! {
        <div class="connector-sign-in" data-testid="connector-sign-in-state"
            data-oauth-status=move || status.get().as_str()>
            <div class="connector-sign-in-text">
                <p class="connector-sign-in-words" data-testid="connector-oauth-state">{state_text}</p>
                {move || sign_in_error().map(|text| view! {
                    <p id=error_id.clone() class="connector-last-error" data-testid="connector-last-error">
                        {text}
                    </p>
                })}
            </div>
            <button type="button" node_ref=button
                class=move || if connected() { "button secondary small" } else { "button primary small" }
                data-testid=move || if connected() { "connector-sign-out" } else { "connector-sign-in" }
                aria-describedby=described_by
                // Not `disabled` while it runs: that would throw the keyboard
                // off the button (clicks are ignored meanwhile).
                aria-disabled=move || pending.get().then_some("true")
                on:click=on_click>
                {label}
            </button>
        </div>
        <FormError message=error testid="connector-sign-in-error" />
    }
}

/// Sends the window to the authorization server's sign-in page, if it is
/// one a browser should open (https, or http on this machine: see
/// [`browser_may_open`]); the URL goes exactly as the browser parsed it.
pub(crate) fn open_sign_in_page(url: &str) -> Result<(), String> {
    let refused = || {
        "The server's sign-in page is not on an https address, so Countersign does not open it."
            .to_owned()
    };
    let parsed = web_sys::Url::new(url).map_err(|_| refused())?;
    if !browser_may_open(&parsed.protocol(), &parsed.hostname()) {
        return Err(refused());
    }
    window()
        .location()
        .assign(&parsed.href())
        .map_err(|_| "The browser did not open the sign-in page. Try again.".to_owned())
}

/// The host of an issuer URL, as the browser reads it.
fn hostname_of(url: &str) -> Option<String> {
    web_sys::Url::new(url).ok().map(|u| u.hostname())
}

/// The line Settings shows once after a sign-in came back: "Signed in to
/// <connector>." (once the list has loaded, so the name is known) or the
/// error. It brings the Connectors section into view: on a narrow screen it
/// starts below the fold.
#[component]
pub(super) fn SignInReturnLine(outcome: SignInReturn, store: ConnectorStore) -> impl IntoView {
    let line = NodeRef::<leptos::html::P>::new();
    let failed = matches!(outcome, SignInReturn::Failed { .. });
    let text = Memo::new(move |_| match &outcome {
        SignInReturn::Connected { connector_id } => {
            if store.list.with(Option::is_some) {
                let name = store.get(connector_id).map(|c| c.name);
                outcome.text(name.as_deref())
            } else {
                String::new()
            }
        }
        SignInReturn::Failed { .. } => outcome.text(None),
    });
    let shown = Memo::new(move |_| text.with(|t| !t.is_empty()));
    Effect::new(move |scrolled: Option<bool>| {
        if scrolled == Some(true) || !shown.get() {
            return scrolled.unwrap_or(false);
        }
        request_animation_frame(move || {
            if let Some(line) = line.try_get_untracked().flatten() {
                match line.closest("section") {
                    Ok(Some(section)) => section.scroll_into_view(),
                    _ => line.scroll_into_view(),
                }
            }
        });
        true
    });

    if failed {
        view! {
            <p class="form-error" role="alert" data-testid="oauth-return-error" node_ref=line>{text}</p>
        }
        .into_any()
    } else {
        // A live region that fills in once the name is known: announced then.
        view! {
            <p class="key-notice sign-in-return" role="status" data-testid="oauth-return" node_ref=line>
                {text}
            </p>
        }
        .into_any()
    }
}
