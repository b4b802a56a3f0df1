//! Countersign's browser app (Leptos, client-side rendered).
//!
//! Layout: [`App`] below lists every route; [`api`] is the only module that
//! talks HTTP (and builds every `/api` URL), [`sse`] opens a chat's event
//! stream; [`session`] holds who is signed in, `chats` the chat list and
//! `waiting` what waits for the user's decision across chats;
//! [`clock`] asks the browser for its time zone. [`model`] is the plain-Rust
//! half, unit-tested on the host with `cargo test -p countersign-web --lib`:
//! the transcript a chat page shows, safe Markdown (our own parser), the words of approval
//! cards, tool reviews, the activity page and Settings → Security, times,
//! and the two-factor step-up's retry rule. `pages/` has one module per
//! screen and `components/` the pieces they share; [`lazy`] lists the
//! split points, the screens (and the chat's approval and input cards)
//! that come in wasm chunks, fetched when first shown. The app holds no
//! business rules: it shows what the server decided
//! (`../shared/DESIGN.md` §9).
//!
//! The server's Content-Security-Policy forbids inline scripts and styles, so
//! nothing here sets a `style` attribute: looks come from `dist/app.css`.

pub mod api;
mod chats;
pub mod clock;
mod components;
mod lazy;
pub mod model;
mod pages;
pub mod session;
pub mod sse;
mod waiting;

use leptos::prelude::*;
use leptos_router::components::{ParentRoute, Route, Router, Routes};
use leptos_router::{Lazy, path};

use crate::components::RequireSession;
use crate::lazy::{
    ActivityRoute, HomeRoute, SettingsAdminRoute, SettingsConnectorsRoute, SettingsModelsRoute,
    SettingsRulesRoute, SettingsSecurityRoute, SignInRoute, SignUpRoute,
};
use crate::pages::{ChatPage, NotFoundPage, Shell};
use crate::session::SessionState;

/// The whole app: session state, router and routes (the chat page and the
/// shell in the main module, every other screen in a lazy chunk). Sign-in and sign-up are
/// for signed-out visitors only; everything else needs a session. The guards
/// also do the navigation after signing in or out: pages only update the
/// session.
#[component]
pub fn App() -> impl IntoView {
    SessionState::provide();

    view! {
        <Router>
            <Routes fallback=NotFoundPage>
                <Route path=path!("/signin") view={Lazy::<SignInRoute>::new()} />
                <Route path=path!("/signup") view={Lazy::<SignUpRoute>::new()} />
                <ParentRoute
                    path=path!("")
                    view=|| view! { <RequireSession signed_in=true redirect="/signin"><Shell /></RequireSession> }
                >
                    <Route path=path!("") view={Lazy::<HomeRoute>::new()} />
                    <Route path=path!("chats/:id") view=ChatPage />
                    <Route path=path!("settings") view={Lazy::<SettingsConnectorsRoute>::new()} />
                    <Route path=path!("settings/models") view={Lazy::<SettingsModelsRoute>::new()} />
                    <Route path=path!("settings/security") view={Lazy::<SettingsSecurityRoute>::new()} />
                    <Route path=path!("settings/rules") view={Lazy::<SettingsRulesRoute>::new()} />
                    <Route path=path!("settings/admin") view={Lazy::<SettingsAdminRoute>::new()} />
                    <Route path=path!("activity") view={Lazy::<ActivityRoute>::new()} />
                    <Route path=path!("approvals") view={Lazy::<HomeRoute>::new()} />
                </ParentRoute>
            </Routes>
        </Router>
    }
}
