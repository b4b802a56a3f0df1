//! `/`: the landing page of a signed-in user, inviting them to start a chat.

use leptos::prelude::*;

use crate::chats::{ChatList, ListState};
use crate::components::{NewChatButton, set_page_title};
use crate::session::SessionState;

/// Welcome heading, what Countersign does, and "Start a chat".
#[component]
pub fn HomePage() -> impl IntoView {
    set_page_title("Home");
    let session = SessionState::expect();
    let chats = ChatList::expect();
    let name = move || session.user().map(|user| user.display_name);
    let has_chats = move || matches!(chats.state(), ListState::Loaded(list) if !list.is_empty());

    view! {
        <div class="page home">
            <h1>"Welcome, " {name}</h1>
            <p class="lead">
                "Countersign lets an assistant use your connected tools, and runs nothing consequential without your approval."
            </p>
            <section class="panel empty-state" data-testid="home-empty-state">
                <h2>"Start a chat"</h2>
                <p>
                    {move || {
                        if has_chats() {
                            "Pick up a conversation from the sidebar, or start a new one."
                        } else {
                            "You have no chats yet. Start one and ask anything; the offline demo model works without any setup."
                        }
                    }}
                </p>
                <NewChatButton testid="start-chat" error_testid="start-chat-error" label="Start a chat" />
            </section>
        </div>
    }
}
