//! The optional browser notification (DESIGN §9 "A waiting card is never
//! lost"): a card that starts waiting while its tab is hidden says so in a
//! system notification, if the user allowed them.
//!
//! Permission is asked only when the user presses "Notify me" on a waiting
//! card ([`NotifyOffer`]), never at load; once the browser has an answer
//! (allowed or blocked) or the user said "Not now", the offer is gone for
//! good. It lives in the card's chunk: a chat with no card never loads it.
//! What it does not do: notify of calls in chats that are not open (the
//! waiting badge and the tab title say those), or on a browser without
//! the `Notification` API (an iPhone's Safari outside a home-screen app).

use leptos::prelude::*;
use wasm_bindgen::{JsCast as _, JsValue, closure::Closure};
use web_sys::{Notification, NotificationOptions, NotificationPermission};

/// Where "Not now" is remembered (this browser, every tab).
const DISMISSED: &str = "countersign.notify-offer";

/// The notification's title.
pub const TITLE: &str = "A call waits for your decision";

/// The browser's answer so far; `None` when it has no notifications.
fn permission() -> Option<NotificationPermission> {
    let has_api = js_sys::Reflect::has(&window(), &JsValue::from_str("Notification"));
    has_api.unwrap_or(false).then(Notification::permission)
}

/// Whether to offer notifications: the browser has them, has not been
/// asked, and the user did not say "Not now".
fn worth_offering() -> bool {
    let dismissed = window()
        .local_storage()
        .ok()
        .flatten()
        .and_then(|s| s.get_item(DISMISSED).ok().flatten())
        .is_some();
    !dismissed && permission() == Some(NotificationPermission::Default)
}

/// Notifies that the call `what` waits, when notifications are allowed
/// and this tab is not the one in view; clicking it brings the tab
/// forward. One per card (`tag`): a reload does not stack them.
pub fn announce(approval_id: &str, what: &str) {
    if permission() != Some(NotificationPermission::Granted) || !document().hidden() {
        return;
    }
    let options = NotificationOptions::new();
    options.set_body(what);
    options.set_tag(approval_id);
    match Notification::new_with_options(TITLE, &options) {
        Ok(notification) => {
            let focus = Closure::once_into_js(move || {
                let _ = window().focus();
            });
            notification.set_onclick(Some(focus.unchecked_ref()));
        }
        Err(error) => leptos::logging::warn!("notification: {error:?}"),
    }
}

/// "Notify me when a call waits": asks the browser's permission when
/// pressed; gone once the browser has an answer or after "Not now".
#[component]
pub fn NotifyOffer() -> impl IntoView {
    let offered = RwSignal::new(worth_offering());
    let ask = move |_| {
        offered.set(false);
        // The answer is the browser's to keep; `announce` reads it.
        if let Err(error) = Notification::request_permission() {
            leptos::logging::warn!("notification permission: {error:?}");
        }
    };
    let not_now = move |_| {
        offered.set(false);
        if let Some(storage) = window().local_storage().ok().flatten() {
            let _ = storage.set_item(DISMISSED, "1");
        }
    };
    view! {
        <Show when=move || offered.get()>
            <p class="approval-notify" data-testid="approval-notify-offer">
                <span>"Get a browser notification when a call waits and this tab is in the background?"</span>
                " "
                <button type="button" class="approval-why" data-testid="approval-notify-ask" on:click=ask>
                    "Notify me"
                </button>
                " · "
                <button type="button" class="approval-why" data-testid="approval-notify-dismiss" on:click=not_now>
                    "Not now"
                </button>
            </p>
        </Show>
    }
}
