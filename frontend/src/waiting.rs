//! What waits for the signed-in user across chats, shared through context
//! (DESIGN §9: a waiting card is never lost): the live approvals and input
//! requests from `GET /api/mcp-pending-calls` and
//! `GET /api/mcp-input-requests`. The chat list badges each chat from it,
//! the tab title counts it and Home lists it.
//!
//! Kept fresh by asking again every [`REFRESH`], when the tab comes back
//! into view, and whenever the open chat's stream says a card started or
//! stopped waiting. It holds no rules: only what the server said last.
//!
//! With the user's permission (asked from a waiting card, never at load),
//! a decision that starts waiting while the tab is hidden is also a
//! browser notification.

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
    /// The ids seen so far (`None` before the first answer: what waits at
    /// load is never announced).
    seen: StoredValue<Option<std::collections::BTreeSet<String>>>,
    /// Bumped by every refresh, so a slow answer cannot overwrite a newer one.
    generation: StoredValue<u64>,
}

impl WaitingList {
    /// Creates the list, provides it as context, loads it, keeps it fresh
    /// and writes its count into the tab title.
    pub fn provide() -> Self {
        let list = Self {
            items: RwSignal::new(Vec::new()),
            seen: StoredValue::new(None),
            generation: StoredValue::new(0),
        };
        provide_context(list);
        list.refresh();
        if let Ok(timer) = set_interval_with_handle(move || list.refresh(), REFRESH) {
            on_cleanup(move || timer.clear());
        }
        let visible = window_event_listener(leptos::ev::focus, move |_| list.refresh());
        on_cleanup(move || visible.remove());
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
            // Either failing keeps what is shown: a badge that lags is
            // better than one that blinks out.
            let (Ok(calls), Ok(inputs)) = (api::pending_calls().await, api::input_requests().await)
            else {
                return;
            };
            if self.generation.try_get_value() != Some(generation) {
                return;
            }
            let fresh = waiting_list(&calls, &inputs);
            let new: Vec<&Waiting> = self
                .seen
                .try_update_value(|seen| {
                    let ids = fresh.iter().map(|w| w.id.clone()).collect();
                    let before = seen.replace(ids);
                    before.map(|before| {
                        fresh
                            .iter()
                            .filter(|w| !before.contains(&w.id))
                            .collect::<Vec<_>>()
                    })
                })
                .flatten()
                .unwrap_or_default();
            if let Some(first) = new.first() {
                notify(first);
            }
            self.items.try_update(|items| {
                if *items != fresh {
                    *items = fresh;
                }
            });
        });
    }
}

/// Whether this browser has notifications at all (some do not: asking
/// for `Notification.permission` there would throw).
fn notifications() -> bool {
    leptos::web_sys::js_sys::Reflect::has(&window(), &"Notification".into()).unwrap_or(false)
}

/// Whether to offer "Notify me": the browser can, and the user was never
/// asked.
pub fn may_ask_to_notify() -> bool {
    notifications()
        && leptos::web_sys::Notification::permission()
            == leptos::web_sys::NotificationPermission::Default
}

/// Asks the user (from a button they pressed) whether decisions may
/// notify them; the browser remembers the answer.
pub fn ask_to_notify() {
    if notifications() {
        let _ = leptos::web_sys::Notification::request_permission();
    }
}

/// Tells the user, when the tab is out of sight and they allowed it, that
/// `item` waits for them.
fn notify(item: &Waiting) {
    if !notifications()
        || !document().hidden()
        || leptos::web_sys::Notification::permission()
            != leptos::web_sys::NotificationPermission::Granted
    {
        return;
    }
    let options = leptos::web_sys::NotificationOptions::new();
    options.set_body(&format!("{} {}", item.what, item.kind.words()));
    options.set_tag("countersign-waiting");
    let _ = leptos::web_sys::Notification::new_with_options(
        "A decision waits for you \u{b7} Countersign",
        &options,
    );
}
