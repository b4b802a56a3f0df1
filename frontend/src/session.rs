//! Who is signed in, as the app currently believes: one signal shared through
//! context, filled from `GET /api/auth/me` at start-up and updated by sign-in,
//! sign-up and sign-out.
//!
//! It also keeps the session's CSRF token, which [`crate::api`] needs for
//! every non-GET request. It does not decide anything the server decides: a
//! 401 from the server is what makes the app signed out.

use countersign_api::{SessionResponse, User};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api;

/// The app's knowledge of the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Session {
    /// `GET /api/auth/me` has not answered yet.
    Checking,
    /// The server could not be asked (network down, 5xx); the message says why.
    Unreachable(String),
    /// The server said 401: nobody is signed in in this browser.
    SignedOut,
    /// Signed in, with the user and the CSRF token the server issued.
    SignedIn(SessionResponse),
}

/// Handle to the shared [`Session`] signal; cheap to copy into closures.
#[derive(Debug, Clone, Copy)]
pub struct SessionState(RwSignal<Session>);

impl SessionState {
    /// Creates the state, provides it as context and starts asking the server.
    pub fn provide() -> Self {
        let state = Self(RwSignal::new(Session::Checking));
        provide_context(state);
        state.check();
        state
    }

    /// The state provided by [`SessionState::provide`].
    pub fn expect() -> Self {
        expect_context::<Self>()
    }

    /// Asks the server who is signed in (again).
    pub fn check(self) {
        self.0.set(Session::Checking);
        spawn_local(async move {
            let next = match api::me().await {
                Ok(session) => Session::SignedIn(session),
                Err(error) if error.is_unauthorized() => Session::SignedOut,
                Err(error) => Session::Unreachable(error.detail),
            };
            self.0.set(next);
        });
    }

    /// Records a session the server just opened (sign-in or sign-up).
    pub fn signed_in(self, session: SessionResponse) {
        self.0.set(Session::SignedIn(session));
    }

    /// Records that the server no longer knows this browser's session.
    pub fn signed_out(self) {
        self.0.set(Session::SignedOut);
    }

    /// `Some(true)` when signed in, `Some(false)` when signed out, `None`
    /// while unknown (checking, or the server is unreachable).
    pub fn is_signed_in(self) -> Option<bool> {
        self.0.with(|session| match session {
            Session::SignedIn(_) => Some(true),
            Session::SignedOut => Some(false),
            Session::Checking | Session::Unreachable(_) => None,
        })
    }

    /// The signed-in user, if any.
    pub fn user(self) -> Option<User> {
        self.0.with(|session| match session {
            Session::SignedIn(session) => Some(session.user.clone()),
            _ => None,
        })
    }

    /// Whether two-factor sign-in is on for the signed-in account.
    pub fn mfa_enabled(self) -> bool {
        self.0.with(|session| match session {
            Session::SignedIn(session) => session.mfa_enabled,
            _ => false,
        })
    }

    /// Records that two-factor sign-in was turned on or off.
    pub fn set_mfa_enabled(self, enabled: bool) {
        self.0.update(|session| {
            if let Session::SignedIn(session) = session {
                session.mfa_enabled = enabled;
            }
        });
    }

    /// The CSRF token of the current session, if any (read without tracking:
    /// it is used when sending, not for rendering).
    pub fn csrf_token(self) -> Option<String> {
        self.0.with_untracked(|session| match session {
            Session::SignedIn(session) => Some(session.csrf_token.clone()),
            _ => None,
        })
    }

    /// Why the server could not be reached, while that is the case.
    pub fn unreachable(self) -> Option<String> {
        self.0.with(|session| match session {
            Session::Unreachable(message) => Some(message.clone()),
            _ => None,
        })
    }
}
