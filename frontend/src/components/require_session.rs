//! Route guard: shows its children only to signed-in (or only to signed-out)
//! visitors, and sends everyone else elsewhere.
//!
//! `leptos_router`'s `ProtectedRoute` would do, except that its redirect
//! *pushes* a history entry, so "Back" lands on the guarded page and bounces
//! forward again. This one *replaces* the entry.

use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::hooks::{use_location, use_navigate, use_query_map};

use crate::components::SessionPending;
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

    move || match allowed.get() {
        Some(true) => children().into_any(),
        Some(false) | None => view! { <SessionPending /> }.into_any(),
    }
}
