//! Route guard: shows its children only to signed-in (or only to signed-out)
//! visitors, and sends everyone else elsewhere.
//!
//! `leptos_router`'s `ProtectedRoute` would do, except that its redirect
//! *pushes* a history entry, so "Back" lands on the guarded page and bounces
//! forward again. This one *replaces* the entry.

use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::hooks::{use_location, use_navigate, use_query_map};

use crate::components::{ChangePassword, SessionPending, set_page_title};
use crate::model::return_to::{encode, return_to};
use crate::session::SessionState;

/// Renders `children` when the session's state is `signed_in`; otherwise
/// replaces the location with `redirect`. While the state is unknown it shows
/// [`SessionPending`].
///
/// A visitor of a guarded page who is not signed in (never was, or the
/// session expired or was revoked; not one who just signed out) goes to
/// `redirect?next=<page>`,
/// and the sign-in pages (guarded the other way) send a visitor who is now
/// signed in to that `next` — when it is one of this app's paths
/// ([`return_to`]) — instead of to `redirect`.
#[component]
pub fn RequireSession(
    /// `true`: only for signed-in users; `false`: only for signed-out ones.
    signed_in: bool,
    /// Where everyone else goes.
    redirect: &'static str,
    /// The guarded view.
    children: ChildrenFn,
) -> impl IntoView {
    let session = SessionState::expect();
    let navigate = use_navigate();
    let location = use_location();
    let query = use_query_map();
    // Memoised so the children are rebuilt only when access changes, not
    // whenever the session value is replaced.
    let allowed = Memo::new(move |_| session.is_signed_in().map(|is| is == signed_in));

    Effect::new(move |_| {
        if allowed.get() == Some(false) {
            let to = if signed_in {
                // Remember where the visitor was going.
                let search = location.search.get_untracked();
                let here = if search.is_empty() {
                    location.pathname.get_untracked()
                } else {
                    format!("{}?{search}", location.pathname.get_untracked())
                };
                if here == "/" || session.signed_out_on_purpose() {
                    redirect.to_owned()
                } else {
                    format!("{redirect}?next={}", encode(&here))
                }
            } else {
                let next = query.with_untracked(|q| q.get("next"));
                match return_to(next.as_deref()) {
                    "/" => redirect.to_owned(),
                    path => path.to_owned(),
                }
            };
            navigate(
                &to,
                NavigateOptions {
                    replace: true,
                    ..Default::default()
                },
            );
        }
    });

    // After an administrator's reset, nothing but choosing a new password
    // (the server refuses the rest with `password_change_required`).
    let must_change = Memo::new(move |_| {
        signed_in && session.user().is_some_and(|user| user.must_change_password)
    });
    move || match (allowed.get(), must_change.get()) {
        (Some(true), true) => view! { <NewPasswordRequired /> }.into_any(),
        (Some(true), false) => children().into_any(),
        (Some(false) | None, _) => view! { <SessionPending /> }.into_any(),
    }
}

/// What a user whose password an administrator reset sees instead of any
/// signed-in page: why, and the form to choose their own.
#[component]
fn NewPasswordRequired() -> impl IntoView {
    set_page_title("Choose a new password");
    view! {
        <main class="auth-page" data-testid="new-password-required">
            <div class="card">
                <p class="brand-mark">"Countersign"</p>
                <h1>"Choose a new password"</h1>
                <p>
                    "Your administrator reset your password. Enter the one-time password you were given as the current one, then choose your own."
                </p>
                <ChangePassword />
            </div>
        </main>
    }
}
