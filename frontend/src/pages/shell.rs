//! The signed-in frame: a sidebar (`<nav>`), the page in `<main>`, and the
//! two-factor step-up dialog every page can call on.

use leptos::prelude::*;
use leptos_router::components::{A, Outlet};

use crate::api;
use crate::chats::ChatList;
use crate::components::{ChatNav, StepUp, StepUpDialog};
use crate::session::SessionState;

/// Sidebar with the app name, "New chat" and the chats, settings, the user
/// and "Sign out"; the matched child route renders in the main area. It
/// provides the [`ChatList`] the pages below update, and the [`StepUp`]
/// their trust-changing actions go through.
#[component]
pub fn Shell() -> impl IntoView {
    let session = SessionState::expect();
    ChatList::provide();
    StepUp::provide();

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

    view! {
        <div class="shell" data-testid="shell">
            <nav class="sidebar" aria-label="Main">
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
            <main class="main">
                <Outlet />
            </main>
            <StepUpDialog />
        </div>
    }
}
