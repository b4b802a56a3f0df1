//! Countersign's browser app (Leptos, client-side rendered).
//!
//! Layout: [`App`] below lists every route; [`api`] is the only module that
//! talks HTTP (and builds every `/api` URL), [`sse`] opens a chat's event
//! stream; [`session`] holds who is signed in and `chats` the chat list;
//! [`clock`] asks the browser for its time zone. [`model`] is the plain-Rust
//! half, unit-tested on the host with `cargo test -p countersign-web --lib`:
//! the transcript a chat page shows, safe Markdown, the words of approval
//! cards, tool reviews, the activity page and Settings → Security, times,
//! and the two-factor step-up's retry rule. `pages/` has one module per
//! screen and `components/` the pieces they share. The app holds no
//! business rules: it shows what the server decided
//! (`../shared/DESIGN.md` §9).
//!
//! The server's Content-Security-Policy forbids inline scripts and styles, so
//! nothing here sets a `style` attribute: looks come from `dist/app.css`.

pub mod api;
mod chats;
pub mod clock;
mod components;
pub mod model;
mod pages;
pub mod session;
pub mod sse;

use leptos::prelude::*;
use leptos_router::components::{ParentRoute, Route, Router, Routes};
use leptos_router::path;

use crate::components::RequireSession;
use crate::pages::{
    ActivityPage, ChatPage, HomePage, NotFoundPage, SettingsPage, SettingsSection, Shell,
    SignInPage, SignUpPage,
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
                    <Route path=path!("settings") view=|| view! { <SettingsPage section=SettingsSection::Connectors /> } />
                    <Route path=path!("settings/models") view=|| view! { <SettingsPage section=SettingsSection::Models /> } />
                    <Route path=path!("settings/security") view=|| view! { <SettingsPage section=SettingsSection::Security /> } />
                    <Route path=path!("settings/rules") view=|| view! { <SettingsPage section=SettingsSection::Rules /> } />
                    <Route path=path!("settings/admin") view=|| view! { <SettingsPage section=SettingsSection::Admin /> } />
                    <Route path=path!("activity") view=ActivityPage />
                </ParentRoute>
            </Routes>
        </Router>
    }
}
