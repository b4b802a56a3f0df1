//! What waits for the signed-in user across chats, shared through context
//! (DESIGN §9: a waiting card is never lost): the live approvals, input
//! requests and result reviews of `GET /api/waiting`. The chat list
//! badges each chat from it, the tab title counts it and Home lists it.
//!
//! Kept fresh by asking again every [`REFRESH`], and whenever the open
//! chat's stream says a card started or stopped waiting. It holds no rules: only what the server said last.

use std::time::Duration;

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api;
use crate::model::waiting::{Waiting, waiting_in, waiting_list};

/// How often the list is asked for again while the app is open.
const REFRESH: Duration = Duration::from_secs(10);

/// Handle to the shared list; cheap to copy into closures.
#[derive(Debug, Clone, Copy)]
pub struct WaitingList {
    items: RwSignal<Vec<Waiting>>,
    /// Bumped by every refresh, so a slow answer cannot overwrite a newer one.
    generation: StoredValue<u64>,
}

impl WaitingList {
    /// Creates the list, provides it as context, loads it, keeps it fresh
    /// and writes its count into the tab title.
    pub fn provide() -> Self {
        let list = Self {
            items: RwSignal::new(Vec::new()),
            generation: StoredValue::new(0),
        };
        provide_context(list);
        list.refresh();
        if let Ok(timer) = set_interval_with_handle(move || list.refresh(), REFRESH) {
            on_cleanup(move || timer.clear());
        }
        Effect::new(move |_| {
            crate::components::set_waiting_count(list.items.with(Vec::len));
        });
        on_cleanup(|| crate::components::set_waiting_count(0));
        list
    }

    /// The list provided by [`WaitingList::provide`].
    pub fn expect() -> Self {
        expect_context::<Self>()
    }

    /// Everything waiting, soonest first (tracked).
    pub fn all(self) -> Vec<Waiting> {
        self.items.get()
    }

    /// How many wait in chat `chat_id` (tracked).
    pub fn in_chat(self, chat_id: &str) -> usize {
        self.items.with(|items| waiting_in(items, chat_id))
    }

    /// Asks the server again.
    pub fn refresh(self) {
        let Some(generation) = self.generation.try_update_value(|g| {
            *g += 1;
            *g
        }) else {
            return;
        };
        spawn_local(async move {
            // A failure keeps what is shown: a badge that lags is
            // better than one that blinks out.
            let Ok(items) = api::waiting().await else {
                return;
            };
            if self.generation.try_get_value() != Some(generation) {
                return;
            }
            let fresh = waiting_list(&items);
            self.items.try_update(|items| {
                if *items != fresh {
                    *items = fresh;
                }
            });
        });
    }
}
