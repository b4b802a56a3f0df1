//! `/settings`: placeholders for the sections `../shared/DESIGN.md` §9 lists.

use leptos::prelude::*;

use crate::components::set_page_title;

/// The settings sections, none of them built yet.
#[component]
pub fn SettingsPage() -> impl IntoView {
    set_page_title("Settings");
    let sections = [
        (
            "Connectors",
            "The MCP servers whose tools the assistant may use.",
        ),
        (
            "Models and keys",
            "Which language models you chat with, and their API keys.",
        ),
        (
            "Security",
            "Password, two-factor sign-in and active sessions.",
        ),
    ];

    view! {
        <div class="page">
            <h1>"Settings"</h1>
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
