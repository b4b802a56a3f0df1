//! "New chat": creates a chat and opens it.

use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::hooks::use_navigate;

use crate::chats::{self, ChatList, StartDraft};
use crate::components::{FormError, last_error};
use crate::pages::chat_path;
use crate::session::SessionState;

/// A button that creates a chat with the model the user last picked (or the
/// offline demo) and navigates to it; the server's error shows below it.
#[component]
pub fn NewChatButton(
    /// `data-testid` of the button.
    testid: &'static str,
    /// `data-testid` of its error message.
    error_testid: &'static str,
    /// Classes of the button.
    #[prop(default = "button primary")]
    class: &'static str,
    /// The button's text.
    #[prop(default = "New chat")]
    label: &'static str,
    /// Text to put in the new chat's composer (unsent).
    #[prop(optional)]
    draft: Option<&'static str>,
) -> impl IntoView {
    let session = SessionState::expect();
    let list = ChatList::expect();
    let navigate = use_navigate();

    let create = Action::new_local(move |_: &()| {
        let navigate = navigate.clone();
        async move {
            let token = session.csrf_token().unwrap_or_default();
            let chat = chats::create_chat(&token)
                .await
                .map_err(|error| error.detail)?;
            let path = chat_path(&chat.id);
            // The new chat opens with the keyboard in its composer (and
            // `draft` in it, if any).
            if let Some(handed) = StartDraft::get() {
                handed.offer(&chat.id, draft.unwrap_or_default());
            }
            list.upsert(chat);
            navigate(&path, NavigateOptions::default());
            Ok::<(), String>(())
        }
    });
    let pending = create.pending();
    let error = last_error(create);

    view! {
        <button
            type="button"
            class=class
            data-testid=testid
            disabled=move || pending.get()
            on:click=move |_| {
                create.dispatch_local(());
            }
        >
            {move || if pending.get() { "Creating…" } else { label }}
        </button>
        <FormError message=error testid=error_testid />
    }
}
