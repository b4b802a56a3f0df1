//! `/settings`: the sections `../shared/DESIGN.md` §9 lists — models and
//! keys, connectors, security (two-factor sign-in and sessions), and the
//! way to the activity log. Changing a password is not offered yet.
//!
//! A connector's OAuth sign-in comes back here (`?oauth=connected&connector=
//! <id>` or `?oauth_error=…`, written by the server's callback): the page
//! reads the query once, hands the outcome to the Connectors section, and
//! replaces the address with plain `/settings` so a reload or Back does not
//! say it again.

use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_query_map};

use crate::components::{ConnectorsSection, ProviderKeys, SecuritySection, set_page_title};
use crate::model::oauth::SignInReturn;

/// Models and keys, connectors, security, then activity.
#[component]
pub fn SettingsPage() -> impl IntoView {
    set_page_title("Settings");
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

    view! {
        <div class="page">
            <h1>"Settings"</h1>
            <ProviderKeys />
            <ConnectorsSection sign_in_return=sign_in_return />
            <SecuritySection />
            <section class="panel" aria-labelledby="activity-heading">
                <h2 id="activity-heading">"Activity"</h2>
                <p>
                    "Every tool call the assistant proposed: what decided it and how it ended. "
                    <A href="/activity" {..} data-testid="settings-activity-link">"Open the activity log"</A>
                </p>
            </section>
        </div>
    }
}
