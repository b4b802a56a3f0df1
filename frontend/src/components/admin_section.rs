//! Settings → Admin (administrators only; DESIGN §9, issue 14): the
//! instance at a glance, the policy with what each setting does to
//! everyone, and the accounts — disable or enable one, make or unmake an
//! administrator. Every change may need a two-factor step-up first (the
//! server asks; [`StepUp`] answers) and enters the activity log.

use countersign_api::{AdminUser, AdminUserUpdate, Policy, PolicyUpdate};
use leptos::prelude::*;

use crate::api;
use crate::clock::minutes_east_at;
use crate::components::{FormError, RuleList, StepUp, last_error, submit_handler};
use crate::model::admin::{count_text, list_from_text, text_from_list};
use crate::model::when::date_time_text;
use crate::session::SessionState;

/// The whole section.
#[component]
pub fn AdminSection() -> impl IntoView {
    let overview = LocalResource::new(api::admin_overview);
    let policy = LocalResource::new(api::admin_policy);
    let users = LocalResource::new(api::admin_users);
    view! {
        <div data-testid="admin-section">
            <section class="panel" aria-labelledby="admin-overview-heading" data-testid="admin-overview">
                <h2 id="admin-overview-heading">"This instance"</h2>
                {move || match overview.get() {
                    None => view! { <p class="muted">"Loading…"</p> }.into_any(),
                    Some(Err(failure)) => view! { <p class="form-error" role="alert">{failure.detail}</p> }.into_any(),
                    Some(Ok(o)) => view! {
                        <ul class="admin-figures">
                            <li data-testid="admin-users-count">{count_text(o.users, "account", "accounts")}</li>
                            <li data-testid="admin-connectors-count">{count_text(o.connectors, "connector", "connectors")}</li>
                            <li data-testid="admin-pending-count">{count_text(o.pending_calls, "call waiting for a decision", "calls waiting for a decision")}</li>
                            <li>{count_text(o.turns_running, "reply being written", "replies being written")}</li>
                        </ul>
                    }
                    .into_any(),
                }}
            </section>
            <section class="panel" aria-labelledby="admin-policy-heading" data-testid="admin-policy">
                <h2 id="admin-policy-heading">"Policy"</h2>
                <p class="muted">
                    "Stricter than anyone's own choices: it applies to every account, to the next tool call, and wins over what people allowed."
                </p>
                {move || match policy.get() {
                    None => view! { <p class="muted">"Loading…"</p> }.into_any(),
                    Some(Err(failure)) => view! { <p class="form-error" role="alert">{failure.detail}</p> }.into_any(),
                    Some(Ok(current)) => view! { <PolicyForm current=current on_saved=move || overview.refetch() /> }.into_any(),
                }}
            </section>
            <RuleList admin=true />
            <section class="panel" aria-labelledby="admin-users-heading" data-testid="admin-users">
                <h2 id="admin-users-heading">"Accounts"</h2>
                {move || match users.get() {
                    None => view! { <p class="muted">"Loading…"</p> }.into_any(),
                    Some(Err(failure)) => view! { <p class="form-error" role="alert">{failure.detail}</p> }.into_any(),
                    Some(Ok(list)) => view! {
                        <ul class="admin-user-list">
                            {list
                                .into_iter()
                                .map(|user| view! {
                                    <UserRow user=user on_changed=move || {
                                        users.refetch();
                                        overview.refetch();
                                    } />
                                })
                                .collect_view()}
                        </ul>
                    }
                    .into_any(),
                }}
            </section>
        </div>
    }
}

/// One switch of the policy: a checkbox, its name, and what it does.
#[component]
fn PolicyCheck(
    id: &'static str,
    label: &'static str,
    consequence: &'static str,
    checked: RwSignal<bool>,
) -> impl IntoView {
    let hint = format!("{id}-hint");
    view! {
        <div class="policy-check">
            <input type="checkbox" id=id data-testid=id aria-describedby=hint.clone()
                prop:checked=move || checked.get()
                on:change=move |ev| checked.set(event_target_checked(&ev)) />
            <label for=id>{label}</label>
            <p id=hint class="hint">{consequence}</p>
        </div>
    }
}

/// One of the policy's lists: a text area, one entry per line, and what
/// the list does.
#[component]
fn ListField(
    id: &'static str,
    label: &'static str,
    hint: &'static str,
    text: RwSignal<String>,
) -> impl IntoView {
    let hint_id = format!("{id}-hint");
    view! {
        <div class="field">
            <label for=id>{label}</label>
            <textarea id=id data-testid=id rows="3" aria-describedby=hint_id.clone() spellcheck="false"
                prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            <p id=hint_id class="hint">{hint}</p>
        </div>
    }
}

/// The policy's form, filled with what the server holds now.
#[component]
fn PolicyForm(
    current: Policy,
    on_saved: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let session = SessionState::expect();
    let step_up = StepUp::expect();
    let forbid_always = RwSignal::new(current.forbid_always_allow);
    let forbid_trust = RwSignal::new(current.forbid_trust_annotations);
    let require_mfa = RwSignal::new(current.require_mfa);
    let always_ask = RwSignal::new(text_from_list(&current.always_ask_tools));
    let hosts = RwSignal::new(text_from_list(&current.connector_hosts));
    let internal = RwSignal::new(text_from_list(&current.internal_destinations));
    let review = RwSignal::new(text_from_list(&current.review_results_tools));
    let second_tools = RwSignal::new(text_from_list(&current.require_second_approval.tools));
    let second_to = RwSignal::new(text_from_list(
        &current.require_second_approval.destinations,
    ));
    let saved_by = RwSignal::new((current.updated_at.clone(), current.updated_by.clone()));
    let notice = RwSignal::new(None::<&'static str>);

    let save = Action::new_local(move |update: &PolicyUpdate| {
        let update = update.clone();
        let token = session.csrf_token().unwrap_or_default();
        async move {
            let stored = step_up
                .run(|| api::put_admin_policy(&token, &update))
                .await
                .map_err(|failure| failure.detail)?;
            // What the server kept: trimmed, lower-cased, without duplicates.
            always_ask.set(text_from_list(&stored.always_ask_tools));
            hosts.set(text_from_list(&stored.connector_hosts));
            internal.set(text_from_list(&stored.internal_destinations));
            review.set(text_from_list(&stored.review_results_tools));
            second_tools.set(text_from_list(&stored.require_second_approval.tools));
            second_to.set(text_from_list(&stored.require_second_approval.destinations));
            saved_by.set((stored.updated_at.clone(), stored.updated_by.clone()));
            notice.set(Some("Saved. It applies from everyone's next tool call."));
            on_saved();
            Ok(())
        }
    });
    let pending = save.pending();
    let error = last_error(save);
    let on_submit = submit_handler(save, move || {
        notice.set(None);
        Some(PolicyUpdate {
            forbid_always_allow: Some(forbid_always.get_untracked()),
            forbid_trust_annotations: Some(forbid_trust.get_untracked()),
            always_ask_tools: Some(list_from_text(&always_ask.get_untracked())),
            connector_hosts: Some(list_from_text(&hosts.get_untracked())),
            require_mfa: Some(require_mfa.get_untracked()),
            internal_destinations: Some(list_from_text(&internal.get_untracked())),
            review_results_tools: Some(list_from_text(&review.get_untracked())),
            require_second_approval: Some(countersign_api::SecondApprovalPolicy {
                tools: list_from_text(&second_tools.get_untracked()),
                destinations: list_from_text(&second_to.get_untracked()),
            }),
        })
    });
    let last_change = move || {
        let (at, by) = saved_by.get();
        by.map(|by| {
            format!(
                "Last changed by {by} on {}.",
                date_time_text(&at, minutes_east_at)
            )
        })
    };

    view! {
        <form class="policy-form" on:submit=on_submit data-testid="admin-policy-form">
            <PolicyCheck id="policy-forbid-always" label="Forbid \u{201c}Always allow\u{201d}" checked=forbid_always
                consequence="No card offers it and nobody can make a new rule. Rules people already made stop applying (they are kept, and apply again if you lift this): the calls they covered ask again." />
            <PolicyCheck id="policy-forbid-trust" label="Forbid trusting servers' safety annotations" checked=forbid_trust
                consequence="Nobody can turn on \u{201c}Trust this server's safety annotations\u{201d}. Where it is on, it stops applying: tools a server declares read-only ask again." />
            <PolicyCheck id="policy-require-mfa" label="Require two-factor sign-in" checked=require_mfa
                consequence="People must set up two-factor sign-in before they trust a server, add credentials, keys or a new URL, or always allow a tool." />
            <ListField id="policy-always-ask" label="Tools that always ask" text=always_ask
                hint="One pattern per line, connector-host/tool: mail.example.com/send_* or */delete_*. Matching calls ask every time, whatever anyone allowed, and their cards offer only \u{201c}Allow once\u{201d}." />
            <ListField id="policy-hosts" label="Allowed connector hosts" text=hosts
                hint="One host per line: mcp.example.com, or *.example.com for its subdomains. Empty: any host. When set, connectors elsewhere can no longer be added or connect." />
            <ListField id="policy-internal" label="Inside the firm" text=internal
                hint="One domain, host or e-mail address per line: firm.example, docs.firm.example. Text from a tool's result going only to these is still shown on the card, but not flagged as leaving the firm." />
            <ListField id="policy-review-results" label="Review results first" text=review
                hint="One pattern per line, as above: */read_file. What these tools return waits for the person to pass, redact or withhold it before the assistant reads it." />
            <ListField id="policy-second-tools" label="A second approval for these tools" text=second_tools
                hint="One pattern per line, as above: mail.example.com/send_*. After the person allows such a call, an approver (an administrator, or someone you mark approver below) must allow it too; nobody approves their own." />
            <ListField id="policy-second-destinations" label="A second approval for calls sending to" text=second_to
                hint="One domain, host or e-mail address per line: opposing-counsel.example. A call whose arguments send to one of these needs an approver's approval too." />
            <FormError message=error testid="policy-error" />
            <button type="submit" class="button primary" data-testid="policy-save" disabled=move || pending.get()>
                {move || if pending.get() { "Saving…" } else { "Save policy" }}
            </button>
            {move || notice.get().map(|text| view! {
                <p class="key-notice" role="status" data-testid="policy-notice">{text}</p>
            })}
            {move || last_change().map(|text| view! { <p class="muted policy-changed">{text}</p> })}
        </form>
    }
}

/// One account, with its facts and the administrator's buttons.
#[component]
fn UserRow(user: AdminUser, on_changed: impl Fn() + Copy + Send + Sync + 'static) -> impl IntoView {
    let session = SessionState::expect();
    let step_up = StepUp::expect();
    let is_me = session.user().is_some_and(|me| me.id == user.id);
    let asking = RwSignal::new(false);
    let id = user.id.clone();
    let change = Action::new_local(move |update: &AdminUserUpdate| {
        let update = update.clone();
        let token = session.csrf_token().unwrap_or_default();
        let id = id.clone();
        async move {
            step_up
                .run(|| api::update_admin_user(&token, &id, &update))
                .await
                .map_err(|failure| failure.detail)?;
            asking.set(false);
            on_changed();
            if is_me && update.is_admin == Some(false) {
                // No longer an admin: the session says so, and the tab goes.
                session.check();
            }
            Ok(())
        }
    });
    let busy = change.pending();
    let error = last_error(change);
    let (disabled, is_admin, is_approver) = (user.disabled, user.is_admin, user.is_approver);
    let mut facts: Vec<String> = Vec::new();
    if user.mfa_enabled {
        facts.push("two-factor on".into());
    }
    facts.push(count_text(user.connectors, "connector", "connectors"));
    if user.pending_calls > 0 {
        facts.push(count_text(
            user.pending_calls,
            "call waiting",
            "calls waiting",
        ));
    }
    facts.push(match &user.last_seen_at {
        Some(at) => format!("last seen {}", date_time_text(at, minutes_east_at)),
        None => "not signed in".into(),
    });
    if user.must_change_password {
        facts.push("must choose a new password".into());
    }
    let email = user.email.clone();
    let question_id = format!("admin-user-{}-question", user.id);
    let pending_calls = user.pending_calls;
    let admin_label = if is_admin {
        "Remove admin"
    } else {
        "Make admin"
    };
    // The name starts with the visible words (axe's
    // label-content-name-mismatch), then says whom.
    let admin_aria = format!("{admin_label}: {}", user.email);
    let approver_label = if is_approver {
        "Remove approver"
    } else {
        "Make approver"
    };
    let approver_aria = format!("{approver_label}: {}", user.email);
    let disable_aria = format!(
        "{} {}",
        if disabled { "Enable" } else { "Disable" },
        user.email
    );
    view! {
        <li class="admin-user" data-testid="admin-user-row" data-email=user.email.clone()
            data-disabled=disabled.to_string() data-admin=is_admin.to_string()
            data-approver=is_approver.to_string()>
            <div class="admin-user-who">
                <strong class="admin-user-email">{user.email.clone()}</strong>
                {is_me.then(|| view! { <span class="badge badge-current">"You"</span> })}
                {is_admin.then(|| view! { <span class="badge badge-new">"Admin"</span> })}
                {is_approver.then(|| view! { <span class="badge badge-new">"Approver"</span> })}
                {disabled.then(|| view! { <span class="badge badge-changed">"Disabled"</span> })}
            </div>
            <p class="muted admin-user-facts">{facts.join(" · ")}</p>
            <div class="admin-user-actions">
                <button type="button" class="button secondary small" data-testid="admin-user-admin"
                    aria-label=admin_aria disabled=move || busy.get()
                    on:click=move |_| {
                        if !busy.get_untracked() {
                            change.dispatch_local(AdminUserUpdate { is_admin: Some(!is_admin), ..Default::default() });
                        }
                    }>
                    {admin_label}
                </button>
                // Administrators approve anyway.
                {(!is_admin).then(|| view! {
                    <button type="button" class="button secondary small" data-testid="admin-user-approver"
                        aria-label=approver_aria disabled=move || busy.get()
                        on:click=move |_| {
                            if !busy.get_untracked() {
                                change.dispatch_local(AdminUserUpdate { is_approver: Some(!is_approver), ..Default::default() });
                            }
                        }>
                        {approver_label}
                    </button>
                })}
                {if disabled {
                    view! {
                        <button type="button" class="button secondary small" data-testid="admin-user-enable"
                            aria-label=disable_aria disabled=move || busy.get()
                            on:click=move |_| {
                                if !busy.get_untracked() {
                                    change.dispatch_local(AdminUserUpdate { disabled: Some(false), ..Default::default() });
                                }
                            }>
                            "Enable"
                        </button>
                    }
                    .into_any()
                } else {
                    view! {
                        <button type="button" class="button secondary small danger-text" data-testid="admin-user-disable"
                            aria-label=disable_aria disabled=move || busy.get() || asking.get()
                            on:click=move |_| asking.set(true)>
                            "Disable"
                        </button>
                    }
                    .into_any()
                }}
            </div>
            <Show when=move || asking.get()>
                <div class="confirm" role="alertdialog" aria-labelledby=question_id.clone() data-testid="admin-user-disable-dialog">
                    <p id=question_id.clone() class="confirm-question">{format!("Disable {email}?")}</p>
                    <p>
                        {if pending_calls > 0 {
                            format!(
                                "They are signed out everywhere at once, their {} declined and their replies stop. You can enable the account again later.",
                                count_text(pending_calls, "waiting call is", "waiting calls are")
                            )
                        } else {
                            "They are signed out everywhere at once and their replies stop. You can enable the account again later.".to_owned()
                        }}
                    </p>
                    <div class="confirm-buttons">
                        <button type="button" class="button danger" data-testid="admin-user-disable-confirm"
                            disabled=move || busy.get()
                            on:click=move |_| {
                                if !busy.get_untracked() {
                                    change.dispatch_local(AdminUserUpdate { disabled: Some(true), ..Default::default() });
                                }
                            }>
                            {move || if busy.get() { "Disabling…" } else { "Disable the account" }}
                        </button>
                        <button type="button" class="button secondary" data-testid="admin-user-disable-cancel"
                            on:click=move |_| asking.set(false)>
                            "Keep it"
                        </button>
                    </div>
                </div>
            </Show>
            <FormError message=error testid="admin-user-error" />
        </li>
    }
}
