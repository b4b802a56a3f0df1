//! `/settings`: the sections `../shared/DESIGN.md` §9 lists — models and
//! keys, connectors, security (two-factor sign-in and sessions), and the
//! way to the activity log. Changing a password is not offered yet.

use leptos::prelude::*;
use leptos_router::components::A;

use crate::components::{ConnectorsSection, ProviderKeys, SecuritySection, set_page_title};

/// Models and keys, connectors, security, then activity.
#[component]
pub fn SettingsPage() -> impl IntoView {
    set_page_title("Settings");

    view! {
        <div class="page">
            <h1>"Settings"</h1>
            <ProviderKeys />
            <ConnectorsSection />
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
