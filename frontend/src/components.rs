//! Small pieces shared by several pages.

mod form_error;
mod require_session;
mod session_pending;

pub use form_error::FormError;
pub use require_session::RequireSession;
pub use session_pending::SessionPending;

/// Sets the browser tab's title to "`page` · Countersign".
pub fn set_page_title(page: &str) {
    leptos::prelude::document().set_title(&format!("{page} · Countersign"));
}
