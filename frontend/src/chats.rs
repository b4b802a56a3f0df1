//! The signed-in user's chat list, shared through context: the sidebar
//! shows it, the chat page refreshes it when a turn starts or ends or the
//! chat is renamed or deleted, and "New chat" adds to it.
//!
//! It also remembers, in this browser, the model the user last picked, so a
//! new chat starts with it. It holds no rules of its own: the list is what
//! `GET /api/chats` said last.

use countersign_api::ChatSummary;
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api::{self, ApiError};

/// The model a new chat gets when the user never picked another one (or the
/// one they picked is no longer offered).
pub const DEFAULT_MODEL: &str = "offline/demo";

/// `localStorage` key of the last model the user picked.
const MODEL_KEY: &str = "countersign.model";

/// What the list shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListState {
    /// The first `GET /api/chats` has not answered.
    Loading,
    /// It failed; the message says why. (A failed *refresh* keeps the list.)
    Failed(String),
    /// The chats, most recently used first.
    Loaded(Vec<ChatSummary>),
}

/// Handle to the shared list; cheap to copy into closures.
#[derive(Debug, Clone, Copy)]
pub struct ChatList {
    state: RwSignal<ListState>,
    /// Bumped by every refresh, so a slow answer cannot overwrite a newer one.
    generation: StoredValue<u64>,
}

impl ChatList {
    /// Creates the list, provides it as context and starts loading it.
    pub fn provide() -> Self {
        let list = Self {
            state: RwSignal::new(ListState::Loading),
            generation: StoredValue::new(0),
        };
        provide_context(list);
        list.refresh();
        list
    }

    /// The list provided by [`ChatList::provide`].
    pub fn expect() -> Self {
        expect_context::<Self>()
    }

    /// What to show (tracked).
    pub fn state(self) -> ListState {
        self.state.get()
    }

    /// Asks the server for the list again.
    pub fn refresh(self) {
        let Some(generation) = self.generation.try_update_value(|g| {
            *g += 1;
            *g
        }) else {
            return;
        };
        // Not a resource: a failed refresh keeps the list already shown,
        // and `upsert` / `remove` edit that list ahead of the server, which
        // a resource's value (replaced by every answer) would not allow.
        spawn_local(async move {
            let result = api::list_chats().await;
            if self.generation.try_get_value() != Some(generation) {
                return;
            }
            match result {
                Ok(chats) => self.state.set(ListState::Loaded(chats)),
                Err(error) => self.state.update(|state| {
                    // Keep a list we already show; a page's own actions
                    // report their errors.
                    if !matches!(state, ListState::Loaded(_)) {
                        *state = ListState::Failed(error.detail);
                    }
                }),
            }
        });
    }

    /// The title of chat `id` as the list knows it (tracked); `None` when
    /// the list does not have it (yet).
    pub fn title_of(self, id: &str) -> Option<String> {
        self.state.with(|state| match state {
            ListState::Loaded(chats) => chats
                .iter()
                .find(|chat| chat.id == id)
                .map(|chat| chat.title.clone()),
            _ => None,
        })
    }

    /// Shows `chat` at once (new or renamed), ahead of the next refresh.
    pub fn upsert(self, chat: ChatSummary) {
        self.state.update(|state| match state {
            ListState::Loaded(chats) => match chats.iter_mut().find(|c| c.id == chat.id) {
                Some(existing) => *existing = chat,
                None => chats.insert(0, chat),
            },
            _ => *state = ListState::Loaded(vec![chat]),
        });
    }

    /// Drops chat `id` at once (deleted), ahead of the next refresh.
    pub fn remove(self, id: &str) {
        self.state.update(|state| {
            if let ListState::Loaded(chats) = state {
                chats.retain(|chat| chat.id != id);
            }
        });
    }
}

/// Creates a chat with the model the user last picked, when the server still
/// offers it, or with [`DEFAULT_MODEL`].
pub async fn create_chat(csrf_token: &str) -> Result<ChatSummary, ApiError> {
    let model = match remembered_model() {
        Some(model) => {
            let offered = api::list_models()
                .await
                .is_ok_and(|list| list.models.iter().any(|m| m.id == model));
            if offered {
                model
            } else {
                DEFAULT_MODEL.to_owned()
            }
        }
        None => DEFAULT_MODEL.to_owned(),
    };
    api::create_chat(csrf_token, &model).await
}

/// A draft handed to a chat that was just created ("Try: use … with …" on
/// the home page): the chat page puts it in its composer, unsent. Held in
/// memory only — never in the URL, where a link from elsewhere could fill
/// someone's composer.
#[derive(Debug, Clone, Copy)]
pub struct StartDraft(RwSignal<Option<(String, String)>>);

impl StartDraft {
    /// Creates it and provides it as context.
    pub fn provide() {
        provide_context(Self(RwSignal::new(None)));
    }

    /// The one provided, if any.
    pub fn get() -> Option<Self> {
        use_context::<Self>()
    }

    /// Hands `text` (maybe empty: only the focus) to the chat `chat_id`
    /// when it opens; the chat puts the keyboard in its composer.
    pub fn offer(self, chat_id: &str, text: &str) {
        self.0.set(Some((chat_id.to_owned(), text.to_owned())));
    }

    /// The draft for `chat_id`, once; `None` for any other chat.
    pub fn take(self, chat_id: &str) -> Option<String> {
        let mine = self
            .0
            .with_untracked(|d| d.as_ref().is_some_and(|(id, _)| id == chat_id));
        if !mine {
            return None;
        }
        self.0
            .try_update(Option::take)
            .flatten()
            .map(|(_, text)| text)
    }
}

/// Remembers `model` in this browser for the next new chat.
pub fn remember_model(model: &str) {
    if let Some(storage) = local_storage() {
        // Storage can be full or refused (private mode): then new chats
        // simply start with the default.
        let _ = storage.set_item(MODEL_KEY, model);
    }
}

fn remembered_model() -> Option<String> {
    local_storage()?
        .get_item(MODEL_KEY)
        .ok()
        .flatten()
        .filter(|model| !model.trim().is_empty())
}

fn local_storage() -> Option<web_sys::Storage> {
    window().local_storage().ok().flatten()
}
