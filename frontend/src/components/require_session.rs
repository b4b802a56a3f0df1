//! Route guard: shows its children only to signed-in (or only to signed-out)
//! visitors, and sends everyone else elsewhere.
//!
//! `leptos_router`'s `ProtectedRoute` would do, except that its redirect
//! *pushes* a history entry, so "Back" lands on the guarded page and bounces
//! forward again. This one *replaces* the entry.

use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::hooks::use_navigate;

use crate::components::SessionPending;
use crate::session::SessionState;

/// Renders `children` when the session's state is `signed_in`; otherwise
/// replaces the location with `redirect`. While the state is unknown it shows
/// [`SessionPending`].
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
    // Memoised so the children are rebuilt only when access changes, not
    // whenever the session value is replaced.
    let allowed = Memo::new(move |_| session.is_signed_in().map(|is| is == signed_in));

    Effect::new(move |_| {
        if allowed.get() == Some(false) {
            navigate(
                redirect,
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
