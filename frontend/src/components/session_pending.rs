//! What a page shows while the app does not yet know who is signed in.

use leptos::prelude::*;

use crate::session::SessionState;

/// "Loading…" while `GET /api/auth/me` is in flight; the reason and a retry
/// button when the server could not be reached.
#[component]
pub fn SessionPending() -> impl IntoView {
    let session = SessionState::expect();
    move || match session.unreachable() {
        None => view! {
            <p class="loading" role="status">
                "Loading…"
            </p>
        }
        .into_any(),
        Some(message) => view! {
            <main class="auth-page">
                <div class="card" role="alert">
                    <h1>"Countersign is unavailable"</h1>
                    <p>{message}</p>
                    <button type="button" class="button primary" on:click=move |_| session.check()>
                        "Try again"
                    </button>
                </div>
            </main>
        }
        .into_any(),
    }
}
