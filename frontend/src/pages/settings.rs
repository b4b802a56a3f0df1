//! `/settings`: one section at a time, each with its own address
//! (DESIGN §9) — Connectors (`/settings`), Models & keys
//! (`/settings/models`), Security (`/settings/security`: two-factor
//! sign-in, sessions, the password) and Always allowed
//! (`/settings/rules`: every standing "always allow" rule, with Revoke) and,
//! for administrators only, Admin (`/settings/admin`: the instance, its
//! policy and its accounts) — under a section list that also leads to the
//! activity log.
//!
//! A connector's OAuth sign-in comes back to `/settings` (`?oauth=connected&connector=
//! <id>` or `?oauth_error=…`, written by the server's callback): the page
//! reads the query once, hands the outcome to the Connectors section, and
//! replaces the address with plain `/settings` so a reload or Back does not
//! say it again.

use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_query_map};

use countersign_api::Grant;

use crate::api;
use crate::clock::minutes_east_at;
use crate::components::{
    AdminSection, ConnectorsSection, FormError, RuleList, last_error, set_page_title,
};
use crate::model::oauth::SignInReturn;
use crate::model::when::date_time_text;
use crate::session::SessionState;

/// The sections of Settings, each at its own address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingsSection {
    /// `/settings`.
    Connectors,
    /// `/settings/models`.
    Models,
    /// `/settings/security`.
    Security,
    /// `/settings/rules`.
    Rules,
    /// `/settings/admin`, for administrators.
    Admin,
}

impl SettingsSection {
    const ALL: [Self; 5] = [
        Self::Connectors,
        Self::Models,
        Self::Security,
        Self::Rules,
        Self::Admin,
    ];

    /// Its address.
    pub fn path(self) -> &'static str {
        match self {
            Self::Connectors => "/settings",
            Self::Models => "/settings/models",
            Self::Security => "/settings/security",
            Self::Rules => "/settings/rules",
            Self::Admin => "/settings/admin",
        }
    }

    /// Its name in the section list and the page title.
    pub fn name(self) -> &'static str {
        match self {
            Self::Connectors => "Connectors",
            Self::Models => "Models & keys",
            Self::Security => "Security",
            Self::Rules => "Always allowed",
            Self::Admin => "Admin",
        }
    }

    fn testid(self) -> &'static str {
        match self {
            Self::Connectors => "settings-tab-connectors",
            Self::Models => "settings-tab-models",
            Self::Security => "settings-tab-security",
            Self::Rules => "settings-tab-rules",
            Self::Admin => "settings-tab-admin",
        }
    }
}

/// The section list, then the section itself (`children`): each section
/// is its own route and its own wasm chunk (`crate::lazy`), so one section
/// never loads another's code.
#[component]
pub fn SettingsPage(
    /// The section shown, marked in the list.
    section: SettingsSection,
    children: Children,
) -> impl IntoView {
    set_page_title(&format!("{} · Settings", section.name()));
    let session = SessionState::expect();
    let is_admin = session.user().is_some_and(|user| user.is_admin);
    let tabs = SettingsSection::ALL
        .into_iter()
        .filter(|tab| *tab != SettingsSection::Admin || is_admin)
        .map(|tab| {
            view! {
                <li>
                    <A href=tab.path() exact=true attr:class="settings-tab" {..} data-testid=tab.testid()>
                        {tab.name()}
                    </A>
                </li>
            }
        })
        .collect_view();

    view! {
        <div class="page">
            <h1>"Settings"</h1>
            <nav class="settings-nav" aria-label="Settings sections">
                <ul>
                    {tabs}
                    <li>
                        <A href="/activity" attr:class="settings-tab" {..} data-testid="settings-activity-link">
                            "Activity log"
                        </A>
                    </li>
                </ul>
            </nav>
            {children()}
        </div>
    }
}

/// Settings → Connectors, with the outcome of a connector's OAuth sign-in
/// when the authorization server just sent the browser back.
#[component]
pub fn ConnectorsSettings() -> impl IntoView {
    let sign_in_return = use_query_map().with_untracked(|query| {
        SignInReturn::from_query(
            query.get("oauth").as_deref(),
            query.get("connector").as_deref(),
            query.get("oauth_error").as_deref(),
        )
    });
    if sign_in_return.is_some() {
        // The router's replace is `history.replaceState`: no new entry, and
        // the router's own idea of the address stays right.
        let navigate = use_navigate();
        Effect::new(move |_| {
            navigate(
                "/settings",
                NavigateOptions {
                    replace: true,
                    scroll: false,
                    ..Default::default()
                },
            );
        });
    }
    view! { <ConnectorsSection sign_in_return=sign_in_return /> }
}

/// Settings → Admin: the instance for an administrator, a line saying so
/// for anyone else.
#[component]
pub fn AdminSettings() -> impl IntoView {
    let session = SessionState::expect();
    if session.user().is_some_and(|user| user.is_admin) {
        view! { <AdminSection /> }.into_any()
    } else {
        view! {
            <section class="panel" data-testid="admin-only">
                <h2>"Admin"</h2>
                <p>"Only an administrator of this instance can see this section."</p>
            </section>
        }
        .into_any()
    }
}

/// Every "always allow" rule of the user, with Revoke; a suspended one
/// (the tool changed since) says so.
#[component]
pub fn StandingRules() -> impl IntoView {
    let session = SessionState::expect();
    let rules = LocalResource::new(api::grants);
    let notice = RwSignal::new(None::<String>);
    let revoke = Action::new_local(move |rule: &Grant| {
        let rule = rule.clone();
        let token = session.csrf_token().unwrap_or_default();
        async move {
            match api::revoke_grant(&token, &rule.id).await {
                // Gone already is what the user wanted.
                Ok(()) => {}
                Err(failure) if failure.status == Some(404) => {}
                Err(failure) => return Err(failure.detail),
            }
            notice.set(Some(format!(
                "Revoked. The next call to {} on {} asks for your approval again.",
                rule.tool_name, rule.connector_name
            )));
            rules.refetch();
            Ok(())
        }
    });
    let busy = revoke.pending();
    let error = last_error(revoke);
    view! {
        <section class="panel" data-testid="rules-section" aria-labelledby="rules-heading">
            <h2 id="rules-heading">"Always allowed"</h2>
            <p class="muted">
                "Tools you chose to always allow run without a card, with any arguments, until you revoke the rule or the tool changes."
            </p>
            {move || notice.get().map(|text| view! {
                <p class="key-notice" role="status" data-testid="rules-notice">{text}</p>
            })}
            <FormError message=error testid="rules-error" />
            {move || match rules.get() {
                None => view! { <p class="muted">"Loading…"</p> }.into_any(),
                Some(Err(failure)) => view! {
                    <p class="form-error" role="alert">{failure.detail}</p>
                }
                .into_any(),
                Some(Ok(list)) if list.is_empty() => view! {
                    <p data-testid="rules-empty">"No always-allowed tools."</p>
                }
                .into_any(),
                Some(Ok(list)) => view! {
                    <ul class="rules-list">
                        {list
                            .into_iter()
                            .map(|rule| {
                                let since = date_time_text(&rule.created_at, minutes_east_at);
                                let label = format!("Revoke the always-allow rule for {} on {}", rule.tool_name, rule.connector_name);
                                let suspended = rule.suspended;
                                let why = if rule.suspended_by_policy {
                                    " · suspended: your administrator turned off \u{201c}Always allow\u{201d}"
                                } else {
                                    " · suspended: the tool changed since"
                                };
                                let for_button = rule.clone();
                                view! {
                                    <li class="rule" data-testid="rule-row" data-tool-name=rule.tool_name.clone()
                                        data-suspended=suspended.to_string()>
                                        <span class="rule-what">
                                            <strong>{rule.connector_name.clone()}</strong>
                                            ": "
                                            <code>{rule.tool_name.clone()}</code>
                                        </span>
                                        <span class="muted rule-since">
                                            {format!("since {since}")}
                                            {suspended.then_some(why)}
                                        </span>
                                        <button type="button" class="button secondary small" data-testid="rule-revoke"
                                            aria-label=label disabled=move || busy.get()
                                            on:click=move |_| {
                                                if !busy.get_untracked() {
                                                    revoke.dispatch_local(for_button.clone());
                                                }
                                            }>
                                            "Revoke"
                                        </button>
                                    </li>
                                }
                            })
                            .collect_view()}
                    </ul>
                }
                .into_any(),
            }}
        </section>
        <RuleList admin=false />
    }
}
