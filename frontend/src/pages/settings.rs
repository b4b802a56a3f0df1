//! `/settings`: the sections `../shared/DESIGN.md` §9 lists. "Models and
//! keys" and "Connectors" work; "Security" is still a placeholder.

use leptos::prelude::*;

use crate::components::{ConnectorsSection, ProviderKeys, set_page_title};

/// Models and keys, connectors, then the sections not built yet.
#[component]
pub fn SettingsPage() -> impl IntoView {
    set_page_title("Settings");

    view! {
        <div class="page">
            <h1>"Settings"</h1>
            <ProviderKeys />
            <ConnectorsSection />
            <section class="panel">
                <h2>"Security"</h2>
                <p>"Password, two-factor sign-in and active sessions."</p>
                <p class="muted">"Coming soon"</p>
            </section>
        </div>
    }
}
