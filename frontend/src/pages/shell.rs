//! The signed-in frame: a sidebar (`<nav>`), the page in `<main>`, and the
//! two-factor step-up dialog every page can call on. On a narrow screen the
//! sidebar is a drawer behind a "Menu" button in a top bar, so the page gets
//! the whole screen.

use leptos::ev::KeyboardEvent;
use leptos::html::{Button, Nav};
use leptos::prelude::*;
use leptos_router::components::{A, Outlet};
use leptos_router::hooks::use_location;

use crate::api;
use crate::chats::{ChatList, StartDraft};
use crate::components::{ChatNav, StepUp};
use crate::lazy::LazyStepUpDialog;
use crate::session::SessionState;

/// Sidebar with the app name, "New chat" and the chats, settings, the user
/// and "Sign out"; the matched child route renders in the main area. It
/// provides the [`ChatList`] the pages below update, and the [`StepUp`]
/// their trust-changing actions go through.
#[component]
pub fn Shell() -> impl IntoView {
    let session = SessionState::expect();
    ChatList::provide();
    crate::waiting::WaitingList::provide();
    StartDraft::provide();
    let step_up = StepUp::provide();

    let sign_out = Action::new_local(move |_: &()| {
        async move {
            let token = session.csrf_token().unwrap_or_default();
            match api::logout(&token).await {
                // A 401 means the session was already gone: signed out either way.
                Ok(()) => {}
                Err(error) if error.is_unauthorized() => {}
                Err(error) => return Err(error.detail),
            }
            // The route guard takes the user to `/signin` from here.
            session.signed_out();
            Ok(())
        }
    });
    let signing_out = sign_out.pending();
    let sign_out_error = move || sign_out.value().get().and_then(Result::err);

    let display_name = move || session.user().map(|user| user.display_name);
    let email = move || session.user().map(|user| user.email);

    // ---- The drawer (narrow screens; on wide ones the sidebar is always
    // there and the Menu button hidden, so `drawer_open` changes nothing).
    let drawer_open = RwSignal::new(false);
    let menu_button = NodeRef::<Button>::new();
    let drawer = NodeRef::<Nav>::new();
    // Going anywhere closes it.
    let location = use_location();
    Effect::new(move |_| {
        // Read, not only `track()`ed: a memo nobody reads is never
        // recomputed, so it would never notify.
        location.pathname.with(|_| ());
        drawer_open.set(false);
    });
    // Focus goes into the drawer when it opens and back to Menu when it
    // closes (only when it was open: not on the first render).
    Effect::new(move |was_open: Option<bool>| {
        let open = drawer_open.get();
        if was_open.is_some_and(|was| was != open) {
            request_animation_frame(move || {
                if open {
                    if let Some(nav) = drawer.try_get_untracked().flatten() {
                        let _ = nav.focus();
                    }
                } else if let Some(button) = menu_button.try_get_untracked().flatten() {
                    let _ = button.focus();
                }
            });
        }
        open
    });
    let on_keydown = move |event: KeyboardEvent| {
        if event.key() == "Escape" && drawer_open.get_untracked() {
            event.prevent_default();
            drawer_open.set(false);
        }
    };

    view! {
        <div
            class="shell"
            class:drawer-open=move || drawer_open.get()
            data-testid="shell"
            on:keydown=on_keydown
        >
            // First in the tab order: past the sidebar, to the message box
            // in a chat, else to the page.
            <a
                class="skip-link"
                href="#main"
                data-testid="skip-link"
                on:click=move |event| {
                    event.prevent_default();
                    if !crate::components::focus_by_id("composer-input") {
                        crate::components::focus_by_id("main");
                    }
                }
            >
                {move || if location.pathname.with(|p| p.starts_with("/chats/")) {
                    "Skip to the message box"
                } else {
                    "Skip to the page"
                }}
            </a>
            <header class="topbar">
                <button
                    type="button"
                    class="menu-button"
                    data-testid="menu-button"
                    aria-controls="sidebar"
                    aria-expanded=move || if drawer_open.get() { "true" } else { "false" }
                    node_ref=menu_button
                    on:click=move |_| drawer_open.update(|open| *open = !*open)
                >
                    <span class="menu-icon" aria-hidden="true"></span>
                    "Menu"
                </button>
                <A href="/" exact=true attr:class="brand">
                    "Countersign"
                </A>
            </header>
            <button
                type="button"
                class="drawer-backdrop"
                tabindex="-1"
                aria-label="Close the menu"
                data-testid="drawer-backdrop"
                on:click=move |_| drawer_open.set(false)
            ></button>
            <nav
                class="sidebar"
                id="sidebar"
                aria-label="Main"
                tabindex="-1"
                node_ref=drawer
                data-testid="sidebar"
            >
                <A href="/" exact=true attr:class="brand">
                    "Countersign"
                </A>
                <ChatNav />
                <ul class="sidebar-links">
                    <li>
                        <A href="/activity" attr:class="sidebar-link" {..} data-testid="nav-activity">
                            "Activity"
                        </A>
                    </li>
                    <li>
                        <A href="/settings" attr:class="sidebar-link" {..} data-testid="nav-settings">
                            "Settings"
                        </A>
                    </li>
                </ul>
                <div class="sidebar-user">
                    <p class="user-name">{display_name}</p>
                    <p class="user-email" data-testid="user-email" title=email>
                        {email}
                    </p>
                    <button
                        type="button"
                        class="button secondary"
                        data-testid="signout"
                        disabled=move || signing_out.get()
                        on:click=move |_| {
                            sign_out.dispatch_local(());
                        }
                    >
                        {move || if signing_out.get() { "Signing out…" } else { "Sign out" }}
                    </button>
                    {move || {
                        sign_out_error()
                            .map(|message| {
                                view! {
                                    <p class="form-error" role="alert">
                                        {message}
                                    </p>
                                }
                            })
                    }}
                </div>
            </nav>
            <main class="main" id="main" tabindex="-1">
                <Outlet />
            </main>
            <Show when=move || step_up.opened()>
                <LazyStepUpDialog />
            </Show>
        </div>
    }
}
