//! The top of a chat: its title, Rename and Delete, and whatever the page
//! adds (the model picker).

use countersign_api::UpdateChatRequest;
use leptos::ev::KeyboardEvent;
use leptos::html::{Button, Input};
use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::hooks::use_navigate;

use crate::api;
use crate::chats::ChatList;
use crate::components::{FormError, last_error, submit_handler};
use crate::session::SessionState;

/// What the header is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Showing,
    Renaming,
    ConfirmingDelete,
}

/// What the header asks the server.
#[derive(Debug, Clone)]
enum HeaderRequest {
    /// Rename the chat.
    Rename(UpdateChatRequest),
    /// Delete it.
    Delete,
}

/// Title, "Rename" (inline form; Escape cancels) and "Delete" (asks first,
/// then goes home). Keyboard focus moves into the form or the question when
/// it opens and back to the button when it closes.
#[component]
pub fn ChatHeader(
    /// The chat.
    chat_id: String,
    /// Title to show ("New chat" when it has none).
    #[prop(into)]
    title: Signal<String>,
    /// Called with the new title after a rename.
    #[prop(into)]
    on_renamed: Callback<String>,
    /// Controls shown beside the title.
    children: Children,
) -> impl IntoView {
    let session = SessionState::expect();
    let chats = ChatList::expect();
    let navigate = use_navigate();
    let chat_id = StoredValue::new(chat_id);

    let mode = RwSignal::new(Mode::Showing);
    let new_title = RwSignal::new(String::new());

    let rename_input = NodeRef::<Input>::new();
    let rename_button = NodeRef::<Button>::new();
    let delete_button = NodeRef::<Button>::new();
    let delete_cancel = NodeRef::<Button>::new();

    // Focus follows the mode, after the DOM changed.
    Effect::new(move |previous: Option<Mode>| {
        let current = mode.get();
        request_animation_frame(move || match (previous, current) {
            (_, Mode::Renaming) => {
                if let Some(input) = rename_input.try_get_untracked().flatten() {
                    let _ = input.focus();
                    input.select();
                }
            }
            (_, Mode::ConfirmingDelete) => {
                if let Some(button) = delete_cancel.try_get_untracked().flatten() {
                    let _ = button.focus();
                }
            }
            (Some(Mode::Renaming), Mode::Showing) => {
                if let Some(button) = rename_button.get_untracked() {
                    let _ = button.focus();
                }
            }
            (Some(Mode::ConfirmingDelete), Mode::Showing) => {
                if let Some(button) = delete_button.get_untracked() {
                    let _ = button.focus();
                }
            }
            _ => {}
        });
        current
    });

    // Rename and Delete share one action: one runs at a time, and its
    // failure is the header's error.
    let act = Action::new_local(move |request: &HeaderRequest| {
        let request = request.clone();
        let token = session.csrf_token().unwrap_or_default();
        let id = chat_id.get_value();
        let navigate = navigate.clone();
        async move {
            match request {
                HeaderRequest::Rename(body) => {
                    let chat = api::update_chat(&token, &id, &body)
                        .await
                        .map_err(|failure| failure.detail)?;
                    on_renamed.run(chat.title.clone());
                    chats.upsert(chat);
                    chats.refresh();
                    mode.set(Mode::Showing);
                }
                HeaderRequest::Delete => {
                    match api::delete_chat(&token, &id).await {
                        // Already gone (another tab): the outcome the user wanted.
                        Ok(()) => {}
                        Err(failure) if failure.status == Some(404) => {}
                        Err(failure) => return Err(failure.detail),
                    }
                    chats.remove(&id);
                    chats.refresh();
                    navigate("/", NavigateOptions::default());
                }
            }
            Ok(())
        }
    });
    let busy = act.pending();
    let error = last_error(act);

    let start_rename = move |_| {
        let current = title.get_untracked();
        new_title.set(if current == "New chat" {
            String::new()
        } else {
            current
        });
        act.clear();
        mode.set(Mode::Renaming);
    };
    let cancel = move || {
        act.clear();
        mode.set(Mode::Showing);
    };
    let save_rename = submit_handler(act, move || {
        Some(HeaderRequest::Rename(UpdateChatRequest {
            title: Some(new_title.get_untracked().trim().to_owned()),
            model: None,
        }))
    });
    let on_rename_key = move |event: KeyboardEvent| {
        if event.key() == "Escape" {
            event.prevent_default();
            cancel();
        }
    };
    let delete = move |_| {
        if !busy.get_untracked() {
            act.dispatch_local(HeaderRequest::Delete);
        }
    };
    let on_confirm_key = move |event: KeyboardEvent| {
        if event.key() == "Escape" {
            event.prevent_default();
            cancel();
        }
    };

    view! {
        <header class="chat-header">
            <div class="chat-heading">
                {move || match mode.get() {
                    Mode::Renaming => view! {
                        <form class="rename-form" on:submit=save_rename on:keydown=on_rename_key>
                            <label for="rename-input" class="visually-hidden">
                                "Chat title"
                            </label>
                            <input
                                id="rename-input"
                                data-testid="rename-input"
                                type="text"
                                maxlength="200"
                                autocomplete="off"
                                node_ref=rename_input
                                bind:value=new_title
                            />
                            <button
                                type="submit"
                                class="button primary small"
                                data-testid="rename-save"
                                disabled=move || busy.get()
                            >
                                "Save"
                            </button>
                            <button
                                type="button"
                                class="button secondary small"
                                data-testid="rename-cancel"
                                on:click=move |_| cancel()
                            >
                                "Cancel"
                            </button>
                        </form>
                    }
                    .into_any(),
                    _ => view! {
                        <h1 class="chat-title" data-testid="chat-title" title=move || title.get()>
                            {move || title.get()}
                        </h1>
                    }
                    .into_any(),
                }}
            </div>
            <div class="chat-tools">
                {children()}
                <button
                    type="button"
                    class="button secondary small"
                    data-testid="rename-chat"
                    aria-label="Rename chat"
                    node_ref=rename_button
                    disabled=move || mode.get() != Mode::Showing
                    on:click=start_rename
                >
                    "Rename"
                </button>
                <button
                    type="button"
                    class="button secondary small danger-text"
                    data-testid="delete-chat"
                    aria-label="Delete chat"
                    node_ref=delete_button
                    disabled=move || mode.get() != Mode::Showing
                    on:click=move |_| {
                        act.clear();
                        mode.set(Mode::ConfirmingDelete);
                    }
                >
                    "Delete"
                </button>
            </div>
        </header>
        <Show when=move || mode.get() == Mode::ConfirmingDelete>
            <div
                class="confirm"
                role="alertdialog"
                aria-labelledby="delete-question"
                aria-describedby="delete-detail"
                data-testid="delete-dialog"
                on:keydown=on_confirm_key
            >
                <p id="delete-question" class="confirm-question">
                    {move || format!("Delete “{}”?", title.get())}
                </p>
                <p id="delete-detail" class="muted">
                    "Its messages are deleted with it. This cannot be undone."
                </p>
                <div class="confirm-buttons">
                    <button
                        type="button"
                        class="button danger"
                        data-testid="delete-confirm"
                        disabled=move || busy.get()
                        on:click=delete
                    >
                        {move || if busy.get() { "Deleting…" } else { "Delete chat" }}
                    </button>
                    <button
                        type="button"
                        class="button secondary"
                        data-testid="delete-cancel"
                        node_ref=delete_cancel
                        on:click=move |_| cancel()
                    >
                        "Cancel"
                    </button>
                </div>
            </div>
        </Show>
        <FormError message=error testid="chat-header-error" />
    }
}
