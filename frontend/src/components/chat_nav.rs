//! The sidebar's chat section: "New chat" and the list of chats.

use leptos::prelude::*;
use leptos_router::components::A;

use crate::chats::{ChatList, ListState};
use crate::components::NewChatButton;
use crate::model::waiting::badge_label;
use crate::pages::chat_path;
use crate::waiting::WaitingList;

/// "New chat", then the chats, most recently used first; the open one is
/// marked (`aria-current="page"`, set by the link itself).
#[component]
pub fn ChatNav() -> impl IntoView {
    let list = ChatList::expect();
    let waiting = WaitingList::expect();

    let items = move || {
        match list.state() {
        ListState::Loaded(chats) => chats
            .into_iter()
            .map(|chat| {
                let title = if chat.title.trim().is_empty() {
                    "New chat".to_owned()
                } else {
                    chat.title
                };
                let tooltip = title.clone();
                let id = chat.id.clone();
                let count = Memo::new(move |_| waiting.in_chat(&id));
                view! {
                    <li>
                        <A
                            href=chat_path(&chat.id)
                            exact=true
                            attr:class="sidebar-link chat-link"
                            {..}
                            data-testid="chat-link"
                            title=tooltip
                        >
                            <span class="chat-link-title">{title}</span>
                            {move || (count.get() > 0).then(|| view! {
                                <span class="waiting-badge" data-testid="chat-waiting-badge" aria-hidden="true">
                                    {count.get()}
                                </span>
                                <span class="visually-hidden">{format!(", {}", badge_label(count.get()))}</span>
                            })}
                        </A>
                    </li>
                }
            })
            .collect_view()
            .into_any(),
        _ => ().into_any(),
    }
    };
    let note = move || {
        match list.state() {
        ListState::Loading => Some(
            view! {
                <p class="sidebar-empty" role="status">
                    "Loading chats…"
                </p>
            }
            .into_any(),
        ),
        ListState::Failed(message) => Some(
            view! {
                <div class="sidebar-empty" role="alert">
                    <p>{message}</p>
                    <button type="button" class="button secondary small" on:click=move |_| list.refresh()>
                        "Try again"
                    </button>
                </div>
            }
            .into_any(),
        ),
        ListState::Loaded(chats) if chats.is_empty() => Some(
            view! { <p class="sidebar-empty">"No chats yet"</p> }.into_any(),
        ),
        ListState::Loaded(_) => None,
    }
    };

    view! {
        <section class="sidebar-section chats-section" aria-labelledby="chats-heading">
            <h2 id="chats-heading" class="sidebar-heading">
                "Chats"
            </h2>
            <div class="new-chat">
                <NewChatButton testid="new-chat" error_testid="new-chat-error" class="button primary wide" />
            </div>
            <ul class="sidebar-links chat-list" data-testid="chat-list">
                {items}
            </ul>
            {note}
        </section>
    }
}
