//! Settings → "Security" (DESIGN §4, §9): changing the password (current,
//! new, confirmation; the server signs the other sessions out), two-factor
//! sign-in — set it up after the current password (QR code and the secret
//! for typing in, confirmed with a first code; the recovery codes shown
//! once), turn it off with a code — and the sessions signed in to the
//! account, with "Sign out other sessions".
//!
//! The server decides everything: whether a code is right, which sessions
//! exist and which is this one. The QR code is the server's SVG shown as an
//! image (a `data:` URL), never inserted into the page.

use countersign_api::{MfaEnrolment, SessionInfo};
use leptos::prelude::*;
use leptos::web_sys::js_sys::Date;

use crate::api;
use crate::clock::minutes_east_at;
use crate::components::{FormError, last_error, last_notice, submit_handler};
use crate::model::security::{
    PASSWORD_CHANGED, device_text, password_form_problem, revoked_text, svg_data_url,
};
use crate::model::when::{ago_text, date_time_text};
use crate::session::SessionState;

/// The section: the password, two-factor sign-in, then sessions.
#[component]
pub fn SecuritySection() -> impl IntoView {
    view! {
        <section class="panel" aria-labelledby="security-heading" data-testid="security-section">
            <h2 id="security-heading">"Security"</h2>
            <ChangePassword />
            <TwoFactor />
            <Sessions />
        </section>
    }
}

/// "Change password": current, new and confirmation. On success the server
/// has signed out every other session; this one stays.
/// "Password": the current one, the new one twice. After an
/// administrator's reset the "current" one is the one-time password, and
/// success reads the session again (the server lifts the restriction).
#[component]
pub fn ChangePassword() -> impl IntoView {
    let session = SessionState::expect();
    let current = RwSignal::new(String::new());
    let new = RwSignal::new(String::new());
    let confirm = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<String>);

    let change = Action::new_local(move |(current_password, new_password): &(String, String)| {
        let (current_password, new_password) = (current_password.clone(), new_password.clone());
        let token = session.csrf_token().unwrap_or_default();
        async move {
            api::change_password(&token, &current_password, &new_password)
                .await
                .map_err(|failure| failure.detail)
        }
    });
    let pending = change.pending();
    let failure = last_error(change);
    let error = Signal::derive(move || problem.get().or_else(|| failure.get()));
    let done = Signal::derive(move || {
        !pending.get() && problem.get().is_none() && matches!(change.value().get(), Some(Ok(())))
    });
    // Forget what was typed once the server said yes.
    Effect::new(move |_| {
        if done.get() {
            current.set(String::new());
            new.set(String::new());
            confirm.set(String::new());
            if session.user().is_some_and(|user| user.must_change_password) {
                session.check();
            }
        }
    });

    let on_submit = submit_handler(change, move || {
        let (typed_current, typed_new, typed_confirm) = (
            current.get_untracked(),
            new.get_untracked(),
            confirm.get_untracked(),
        );
        if let Some(why) = password_form_problem(&typed_current, &typed_new, &typed_confirm) {
            problem.set(Some(why.to_owned()));
            return None;
        }
        problem.set(None);
        Some((typed_current, typed_new))
    });

    view! {
        <div class="security-block" data-testid="password">
            <h3>"Password"</h3>
            <form class="password-form" on:submit=on_submit data-testid="password-form">
                <div class="field">
                    <label for="password-current">"Current password"</label>
                    <input
                        id="password-current"
                        data-testid="password-current"
                        type="password"
                        autocomplete="current-password"
                        required
                        bind:value=current
                    />
                </div>
                <div class="field">
                    <label for="password-new">"New password"</label>
                    <input
                        id="password-new"
                        data-testid="password-new"
                        type="password"
                        autocomplete="new-password"
                        aria-describedby="password-new-hint"
                        required
                        bind:value=new
                    />
                    <p id="password-new-hint" class="hint">
                        "Changing it signs out every other browser signed in to your account."
                    </p>
                </div>
                <div class="field">
                    <label for="password-confirm">"Confirm new password"</label>
                    <input
                        id="password-confirm"
                        data-testid="password-confirm"
                        type="password"
                        autocomplete="new-password"
                        required
                        bind:value=confirm
                    />
                </div>
                <FormError message=error testid="password-error" />
                <button
                    type="submit"
                    class="button primary"
                    data-testid="password-submit"
                    disabled=move || pending.get()
                >
                    {move || if pending.get() { "Changing…" } else { "Change password" }}
                </button>
            </form>
            {move || done.get().then(|| view! {
                <p class="key-notice" role="status" data-testid="password-notice">{PASSWORD_CHANGED}</p>
            })}
        </div>
    }
}

/// Where setting up two-factor sign-in stands on this page.
#[derive(Debug, Clone)]
enum Stage {
    /// Showing whether it is on, with "Set up" or "Turn off".
    Idle,
    /// The server made a secret; waiting for the first code.
    Enrolling(MfaEnrolment),
    /// It is on; the recovery codes are shown this once.
    Codes(Vec<String>),
}

/// "Two-factor sign-in".
#[component]
fn TwoFactor() -> impl IntoView {
    let session = SessionState::expect();
    let stage = RwSignal::new(Stage::Idle);
    // "Two-factor sign-in is off.": set by `TurnOff`, which is gone by then.
    let notice = RwSignal::new(None::<&'static str>);
    let enabled = Memo::new(move |_| session.mfa_enabled());
    let password = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<String>);

    let enroll = Action::new_local(move |typed: &String| {
        let typed = typed.clone();
        let token = session.csrf_token().unwrap_or_default();
        notice.set(None);
        async move {
            let enrolment = api::mfa_enroll(&token, &typed)
                .await
                .map_err(|failure| failure.detail)?;
            password.try_set(String::new());
            stage.try_set(Stage::Enrolling(enrolment));
            Ok(())
        }
    });
    let busy = enroll.pending();
    let failure = last_error(enroll);
    let error = Signal::derive(move || problem.get().or_else(|| failure.get()));
    let begin = submit_handler(enroll, move || {
        let typed = password.get_untracked();
        if typed.is_empty() {
            problem.set(Some("Enter your current password.".to_owned()));
            return None;
        }
        problem.set(None);
        Some(typed)
    });

    let body = move || {
        match stage.get() {
        Stage::Enrolling(enrolment) => view! {
            <Enrol enrolment=enrolment stage=stage />
        }
        .into_any(),
        Stage::Codes(codes) => view! { <RecoveryCodes codes=codes stage=stage /> }.into_any(),
        Stage::Idle if enabled.get() => view! { <TurnOff notice=notice /> }.into_any(),
        Stage::Idle => view! {
            <p>
                "Signing in will also ask for a code from an authenticator app on your phone, and so will trusting a connector, always allowing a tool, and changing a connector's credentials or a provider key."
            </p>
            <form class="code-form" on:submit=begin>
                <label for="mfa-enroll-password">"To set it up, enter your current password"</label>
                <div class="key-controls">
                    <input
                        id="mfa-enroll-password"
                        data-testid="mfa-enroll-password"
                        type="password"
                        autocomplete="current-password"
                        required
                        bind:value=password
                    />
                    <button
                        type="submit"
                        class="button primary"
                        data-testid="mfa-enroll"
                        disabled=move || busy.get()
                    >
                        {move || if busy.get() { "Starting…" } else { "Set up two-factor sign-in" }}
                    </button>
                </div>
            </form>
            <FormError message=error testid="mfa-error" />
        }
        .into_any(),
    }
    };

    view! {
        <div class="security-block" data-testid="mfa">
            <div class="security-head">
                <h3>"Two-factor sign-in"</h3>
                <p class="mfa-status" data-testid="mfa-status" data-enabled=move || enabled.get().to_string()>
                    {move || if enabled.get() { "On" } else { "Off" }}
                </p>
            </div>
            {body}
            {move || notice.get().map(|text| view! {
                <p class="key-notice" role="status" data-testid="mfa-notice">{text}</p>
            })}
        </div>
    }
}

/// Setting up: the QR code, the secret, and the first code.
#[component]
fn Enrol(enrolment: MfaEnrolment, stage: RwSignal<Stage>) -> impl IntoView {
    let session = SessionState::expect();
    let code = RwSignal::new(String::new());
    let input = NodeRef::<leptos::html::Input>::new();

    let turn_on = Action::new_local(move |typed: &String| {
        let typed = typed.clone();
        let token = session.csrf_token().unwrap_or_default();
        async move {
            match api::mfa_confirm(&token, &typed).await {
                Ok(confirmed) => {
                    session.set_mfa_enabled(true);
                    stage.try_set(Stage::Codes(confirmed.recovery_codes));
                    Ok(())
                }
                Err(failure) => {
                    if let Some(input) = input.get_untracked() {
                        let _ = input.focus();
                        input.select();
                    }
                    Err(failure.detail)
                }
            }
        }
    });
    let busy = turn_on.pending();
    let error = last_error(turn_on);
    let confirm = submit_handler(turn_on, move || {
        let typed = code.get_untracked().trim().to_owned();
        (!typed.is_empty()).then_some(typed)
    });

    view! {
        <ol class="mfa-steps">
            <li>
                <p>"Scan this QR code with your authenticator app:"</p>
                <img
                    class="mfa-qr"
                    data-testid="mfa-qr"
                    src=svg_data_url(&enrolment.qr_svg)
                    alt="QR code to add Countersign to your authenticator app"
                    width="200"
                    height="200"
                />
                <p>
                    "Or type this key into the app by hand: "
                    <code class="mfa-secret" data-testid="mfa-secret">{enrolment.secret.clone()}</code>
                </p>
            </li>
            <li>
                <form class="code-form" on:submit=confirm>
                    <label for="mfa-confirm-code">"Enter the 6-digit code the app shows"</label>
                    <div class="key-controls">
                        <input
                            id="mfa-confirm-code"
                            data-testid="mfa-confirm-code"
                            type="text"
                            inputmode="numeric"
                            autocomplete="one-time-code"
                            spellcheck="false"
                            required
                            node_ref=input
                            bind:value=code
                        />
                        <button type="submit" class="button primary" data-testid="mfa-confirm-submit"
                            disabled=move || busy.get()>
                            {move || if busy.get() { "Checking…" } else { "Turn on" }}
                        </button>
                        <button type="button" class="button secondary" data-testid="mfa-enroll-cancel"
                            on:click=move |_| stage.set(Stage::Idle)>
                            "Cancel"
                        </button>
                    </div>
                </form>
                <FormError message=error testid="mfa-confirm-error" />
            </li>
        </ol>
    }
}

/// The recovery codes, shown once, until the person says they saved them.
#[component]
fn RecoveryCodes(codes: Vec<String>, stage: RwSignal<Stage>) -> impl IntoView {
    let saved = RwSignal::new(false);
    let heading = NodeRef::<leptos::html::H4>::new();
    // Announce the new content and put the keyboard at its start.
    request_animation_frame(move || {
        if let Some(heading) = heading.try_get_untracked().flatten() {
            let _ = heading.focus();
        }
    });

    view! {
        <div class="recovery" data-testid="mfa-recovery">
            <h4 tabindex="-1" node_ref=heading>"Two-factor sign-in is on. Save your recovery codes"</h4>
            <p>
                "If you lose your phone, each of these codes signs you in once instead of a code from the app. Keep them somewhere safe: they are not shown again."
            </p>
            <ul class="recovery-codes" data-testid="mfa-recovery-codes">
                {codes
                    .into_iter()
                    .map(|code| view! { <li><code data-testid="mfa-recovery-code">{code}</code></li> })
                    .collect_view()}
            </ul>
            <label class="check">
                <input type="checkbox" data-testid="mfa-codes-saved" bind:checked=saved />
                " I saved them somewhere safe"
            </label>
            <button type="button" class="button primary" data-testid="mfa-codes-done"
                disabled=move || !saved.get()
                on:click=move |_| stage.set(Stage::Idle)>
                "Done"
            </button>
        </div>
    }
}

/// On: what it guards, and "Turn off" with a code.
#[component]
fn TurnOff(notice: RwSignal<Option<&'static str>>) -> impl IntoView {
    let session = SessionState::expect();
    let code = RwSignal::new(String::new());

    let turn_off = Action::new_local(move |typed: &String| {
        let typed = typed.clone();
        let token = session.csrf_token().unwrap_or_default();
        notice.set(None);
        async move {
            api::mfa_disable(&token, &typed)
                .await
                .map_err(|failure| failure.detail)?;
            notice.try_set(Some("Two-factor sign-in is off."));
            session.set_mfa_enabled(false);
            Ok(())
        }
    });
    let busy = turn_off.pending();
    let error = last_error(turn_off);
    let submit = submit_handler(turn_off, move || {
        let typed = code.get_untracked().trim().to_owned();
        (!typed.is_empty()).then_some(typed)
    });

    view! {
        <p>
            "Signing in asks for a code from your authenticator app. Trusting a connector, always allowing a tool, and changing a connector's credentials or a provider key ask for one again after 10 minutes."
        </p>
        <form class="code-form" on:submit=submit>
            <label for="mfa-disable-code">"To turn it off, enter a code from the app or a recovery code"</label>
            <div class="key-controls">
                <input
                    id="mfa-disable-code"
                    data-testid="mfa-disable-code"
                    type="text"
                    autocomplete="one-time-code"
                    spellcheck="false"
                    required
                    bind:value=code
                />
                <button type="submit" class="button secondary danger-text" data-testid="mfa-disable-submit"
                    disabled=move || busy.get()>
                    {move || if busy.get() { "Turning off…" } else { "Turn off" }}
                </button>
            </div>
        </form>
        <FormError message=error testid="mfa-disable-error" />
    }
}

/// "Sessions": where the account is signed in, and signing the others out.
#[component]
fn Sessions() -> impl IntoView {
    let session = SessionState::expect();
    let sessions = LocalResource::new(api::list_sessions);
    let revoke_others = Action::new_local(move |(): &()| {
        let token = session.csrf_token().unwrap_or_default();
        async move {
            let revoked = api::revoke_other_sessions(&token)
                .await
                .map_err(|failure| failure.detail)?;
            sessions.refetch();
            Ok(revoked_text(revoked))
        }
    });
    let busy = revoke_others.pending();
    let error = last_error(revoke_others);
    let notice = last_notice(revoke_others);

    let others = move || match sessions.get() {
        Some(Ok(list)) => list.iter().filter(|s| !s.current).count(),
        _ => 0,
    };
    let revoke = move |_| {
        if !busy.get_untracked() {
            revoke_others.dispatch_local(());
        }
    };

    let list = move || {
        match sessions.get() {
        None => view! { <p class="muted">"Loading…"</p> }.into_any(),
        Some(Err(failure)) => view! {
            <p class="form-error" role="alert" data-testid="sessions-load-error">{failure.detail}</p>
        }
        .into_any(),
        Some(Ok(list)) => {
            let now = Date::now();
            view! {
                <ul class="session-list" data-testid="session-list">
                    {list.into_iter().map(|info| view! { <SessionRow info=info now=now /> }).collect_view()}
                </ul>
            }
            .into_any()
        }
    }
    };

    view! {
        <div class="security-block" data-testid="sessions">
            <h3>"Sessions"</h3>
            <p>"The browsers signed in to your account. Sign the others out if you do not recognise one, or left one signed in."</p>
            {list}
            <FormError message=error testid="sessions-error" />
            {move || notice.get().map(|text| view! {
                <p class="key-notice" role="status" data-testid="sessions-notice">{text}</p>
            })}
            <button type="button" class="button secondary" data-testid="sessions-revoke-others"
                disabled=move || busy.get() || others() == 0
                on:click=revoke>
                {move || if busy.get() { "Signing out…" } else { "Sign out other sessions" }}
            </button>
        </div>
    }
}

/// One session: browser, address, when it was last active.
#[component]
fn SessionRow(info: SessionInfo, now: f64) -> impl IntoView {
    let device = device_text(info.user_agent.as_deref());
    let agent = info.user_agent.clone().unwrap_or_default();
    let address = info.ip.clone().unwrap_or_else(|| "Unknown address".into());
    let last_seen = ago_text(&info.last_seen_at, now)
        .map_or_else(|| info.last_seen_at.clone(), |ago| format!("active {ago}"));
    let since = date_time_text(&info.created_at, minutes_east_at);
    view! {
        <li class="session-row" data-testid="session-row" data-current=info.current.to_string()>
            <p class="session-device" title=agent>
                {device}
                {info.current.then(|| view! {
                    " " <span class="badge badge-current" data-testid="session-current">"This device"</span>
                })}
            </p>
            <p class="muted session-facts">
                <span data-testid="session-ip">{address}</span>
                " · "
                <time datetime=info.last_seen_at.clone() title=info.last_seen_at.clone()>{last_seen}</time>
                " · signed in "
                <time datetime=info.created_at.clone()>{since}</time>
            </p>
        </li>
    }
}
