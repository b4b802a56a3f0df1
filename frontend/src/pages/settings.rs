//! `/settings`: the sections `../shared/DESIGN.md` §9 lists. "Models and
//! keys" works; the others are still placeholders.

use leptos::prelude::*;

use crate::components::{ProviderKeys, set_page_title};

/// Models and keys, then the sections not built yet.
#[component]
pub fn SettingsPage() -> impl IntoView {
    set_page_title("Settings");
    let sections = [
        (
            "Connectors",
            "The MCP servers whose tools the assistant may use.",
        ),
        (
            "Security",
            "Password, two-factor sign-in and active sessions.",
        ),
    ];

    view! {
        <div class="page">
            <h1>"Settings"</h1>
            <ProviderKeys />
            {sections
                .into_iter()
                .map(|(title, blurb)| {
                    view! {
                        <section class="panel">
                            <h2>{title}</h2>
                            <p>{blurb}</p>
                            <p class="muted">"Coming soon"</p>
                        </section>
                    }
                })
                .collect_view()}
        </div>
    }
}
