//! Countersign's browser app (Leptos, client-side rendered).
//!
//! Layout: [`App`] below lists every route; [`api`] is the only module that
//! talks HTTP (and builds every `/api` URL), [`sse`] opens a chat's event
//! stream; [`session`] holds who is signed in and `chats` the chat list;
//! [`transcript`] turns a chat's messages and events into what the chat page
//! shows, and [`markdown`] renders answers safely (both plain Rust, unit-tested
//! on the host with `cargo test -p countersign-web --lib`), as is
//! [`tool_review`], the words Settings → Connectors puts on tools and their
//! "always allow" rules, and [`approval`], the words and countdown of an
//! approval card and the chip saying what let a call run, [`activity`] the
//! activity page's rows, [`security`] and [`when`] the words of Settings →
//! Security, and [`step_up`] the two-factor step-up's retry rule; `pages/` has one
//! module per screen and `components/` the pieces they share. The app holds
//! no business rules: it shows what the server decided
//! (`../shared/DESIGN.md` §9).
//!
//! The server's Content-Security-Policy forbids inline scripts and styles, so
//! nothing here sets a `style` attribute: looks come from `dist/app.css`.

pub mod activity;
pub mod api;
pub mod approval;
mod chats;
mod components;
pub mod markdown;
mod pages;
pub mod security;
pub mod session;
pub mod sse;
pub mod step_up;
pub mod tool_review;
pub mod transcript;
pub mod when;

use leptos::prelude::*;
use leptos_router::components::{ParentRoute, Route, Router, Routes};
use leptos_router::path;

use crate::components::RequireSession;
use crate::pages::{
    ActivityPage, ChatPage, HomePage, NotFoundPage, SettingsPage, Shell, SignInPage, SignUpPage,
};
use crate::session::SessionState;

/// The whole app: session state, router and routes. Sign-in and sign-up are
/// for signed-out visitors only; everything else needs a session. The guards
/// also do the navigation after signing in or out: pages only update the
/// session.
#[component]
pub fn App() -> impl IntoView {
    SessionState::provide();

    view! {
        <Router>
            <Routes fallback=NotFoundPage>
                <Route
                    path=path!("/signin")
                    view=|| view! { <RequireSession signed_in=false redirect="/"><SignInPage /></RequireSession> }
                />
                <Route
                    path=path!("/signup")
                    view=|| view! { <RequireSession signed_in=false redirect="/"><SignUpPage /></RequireSession> }
                />
                <ParentRoute
                    path=path!("")
                    view=|| view! { <RequireSession signed_in=true redirect="/signin"><Shell /></RequireSession> }
                >
                    <Route path=path!("") view=HomePage />
                    <Route path=path!("chats/:id") view=ChatPage />
                    <Route path=path!("settings") view=SettingsPage />
                    <Route path=path!("activity") view=ActivityPage />
                </ParentRoute>
            </Routes>
        </Router>
    }
}
