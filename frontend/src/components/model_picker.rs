//! The model a chat answers with: a labelled `<select>` of what
//! `GET /api/models` offers.

use countersign_api::{ModelsResponse, UpdateChatRequest};
use leptos::prelude::*;

use crate::api::{self, ApiError};
use crate::chats::{ChatList, remember_model};
use crate::components::{FormError, last_error};
use crate::session::SessionState;

/// Changing the selection saves it on the chat (`PATCH`), for the next
/// turns, and remembers it for the next new chat. A model the chat uses but
/// the server no longer offers stays listed, marked unavailable.
#[component]
pub fn ModelPicker(
    /// The chat.
    chat_id: String,
    /// The chat's model (`provider/model`); updated after a successful save.
    model: RwSignal<String>,
    /// `GET /api/models`, loaded by the page.
    models: LocalResource<Result<ModelsResponse, ApiError>>,
) -> impl IntoView {
    let session = SessionState::expect();
    let chats = ChatList::expect();
    let chat_id = StoredValue::new(chat_id);
    // Each change is saved as it is made, even while an earlier one is on
    // its way: the input is (chosen, shown before).
    let save = Action::new_local(move |(chosen, previous): &(String, String)| {
        let (chosen, previous) = (chosen.clone(), previous.clone());
        let token = session.csrf_token().unwrap_or_default();
        let id = chat_id.get_value();
        async move {
            let body = UpdateChatRequest {
                title: None,
                model: Some(chosen),
            };
            match api::update_chat(&token, &id, &body).await {
                Ok(chat) => {
                    model.set(chat.model.clone());
                    remember_model(&chat.model);
                    chats.upsert(chat);
                    Ok(())
                }
                Err(failure) => {
                    model.set(previous);
                    Err(failure.detail)
                }
            }
        }
    });
    let saving = save.pending();
    let error = last_error(save);

    let options = move || {
        let current = model.get();
        let mut options: Vec<(String, String)> = match models.get() {
            Some(Ok(list)) => list.models.into_iter().map(|m| (m.id, m.label)).collect(),
            _ => Vec::new(),
        };
        if !current.is_empty() && !options.iter().any(|(id, _)| *id == current) {
            let label = if models.get().is_some() {
                format!("{current} (unavailable)")
            } else {
                current.clone()
            };
            options.insert(0, (current.clone(), label));
        }
        options
            .into_iter()
            .map(|(id, label)| {
                let selected = id == current;
                view! {
                    <option value=id prop:selected=selected>
                        {label}
                    </option>
                }
            })
            .collect_view()
    };

    let on_change = move |event: leptos::ev::Event| {
        let chosen = event_target_value(&event);
        let previous = model.get_untracked();
        if chosen == previous || chosen.is_empty() {
            return;
        }
        // Shown at once; put back if the server refuses.
        model.set(chosen.clone());
        save.dispatch_local((chosen, previous));
    };

    let load_error = move || match models.get() {
        Some(Err(failure)) => Some(format!("Could not list the models: {}", failure.detail)),
        _ => None,
    };

    view! {
        <div class="model-picker">
            <label for="model-picker">"Model"</label>
            <select
                id="model-picker"
                data-testid="model-picker"
                aria-busy=move || saving.get().then_some("true")
                on:change=on_change
            >
                {options}
            </select>
            <FormError message=Signal::derive(move || error.get().or_else(load_error)) testid="model-error" />
        </div>
    }
}
