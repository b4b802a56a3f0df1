//! `/`: the landing page of a signed-in user.

use leptos::prelude::*;

use crate::components::set_page_title;
use crate::session::SessionState;

/// Welcome heading; chats will live here.
#[component]
pub fn HomePage() -> impl IntoView {
    set_page_title("Home");
    let session = SessionState::expect();
    let name = move || session.user().map(|user| user.display_name);

    view! {
        <div class="page">
            <h1>"Welcome, " {name}</h1>
            <p class="lead">
                "Countersign lets an assistant use your connected tools, and runs nothing consequential without your approval."
            </p>
            <p>"Your chats will appear in the sidebar."</p>
        </div>
    }
}
