//! Who is signed in, as the app currently believes: one resource shared
//! through context, `GET /api/auth/me` read at start-up (and on "Try
//! again"), written over by sign-in, sign-up and sign-out.
//!
//! It also keeps the session's CSRF token, which [`crate::api`] needs for
//! every non-GET request. It does not decide anything the server decides: a
//! 401 from the server is what makes the app signed out.

use std::fmt;

use countersign_api::{SessionResponse, User};
use leptos::prelude::*;

use crate::api;

/// What the server said about this browser's session. While
/// `GET /api/auth/me` has not answered (at start-up, or after "Try again"),
/// there is none yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Session {
    /// The server could not be asked (network down, 5xx); the message says why.
    Unreachable(String),
    /// The server said 401: nobody is signed in in this browser.
    SignedOut,
    /// Signed in, with the user and the CSRF token the server issued.
    SignedIn(SessionResponse),
}

/// Handle to the shared [`Session`]: `GET /api/auth/me` as a resource,
/// written over by sign-in, sign-up and sign-out; cheap to copy into
/// closures.
#[derive(Clone, Copy)]
pub struct SessionState(LocalResource<Session>, RwSignal<bool>);

impl fmt::Debug for SessionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let session = self.0.try_with_untracked(Clone::clone).flatten();
        f.debug_tuple("SessionState").field(&session).finish()
    }
}

impl SessionState {
    /// Creates the state, provides it as context and starts asking the server.
    pub fn provide() -> Self {
        let state = Self(
            LocalResource::new(|| async {
                match api::me().await {
                    Ok(session) => Session::SignedIn(session),
                    Err(error) if error.is_unauthorized() => Session::SignedOut,
                    Err(error) => Session::Unreachable(error.detail),
                }
            }),
            RwSignal::new(false),
        );
        provide_context(state);
        state
    }

    /// The state provided by [`SessionState::provide`].
    pub fn expect() -> Self {
        expect_context::<Self>()
    }

    /// Asks the server who is signed in again, unknown until it answers.
    pub fn check(self) {
        self.0.set(None);
        self.0.refetch();
    }

    /// Records a session the server just opened (sign-in or sign-up).
    pub fn signed_in(self, session: SessionResponse) {
        self.1.set(false);
        self.0.set(Some(Session::SignedIn(session)));
    }

    /// Records that the user signed out (so sign-in will not return to the
    /// page they left: [`SessionState::signed_out_on_purpose`]).
    pub fn signed_out(self) {
        self.1.set(true);
        self.0.set(Some(Session::SignedOut));
    }

    /// Whether this browser is signed out because the user signed out here
    /// (rather than an expired, revoked or absent session).
    pub fn signed_out_on_purpose(self) -> bool {
        self.1.get_untracked()
    }

    /// `Some(true)` when signed in, `Some(false)` when signed out, `None`
    /// while unknown (checking, or the server is unreachable).
    pub fn is_signed_in(self) -> Option<bool> {
        self.0.with(|session| match session {
            Some(Session::SignedIn(_)) => Some(true),
            Some(Session::SignedOut) => Some(false),
            Some(Session::Unreachable(_)) | None => None,
        })
    }

    /// The signed-in user, if any.
    pub fn user(self) -> Option<User> {
        self.0.with(|session| match session {
            Some(Session::SignedIn(session)) => Some(session.user.clone()),
            _ => None,
        })
    }

    /// Whether two-factor sign-in is on for the signed-in account.
    pub fn mfa_enabled(self) -> bool {
        self.0.with(|session| match session {
            Some(Session::SignedIn(session)) => session.mfa_enabled,
            _ => false,
        })
    }

    /// Records that two-factor sign-in was turned on or off.
    pub fn set_mfa_enabled(self, enabled: bool) {
        self.0.update(|session| {
            if let Some(Session::SignedIn(session)) = session {
                session.mfa_enabled = enabled;
            }
        });
    }

    /// The CSRF token of the current session, if any (read without tracking:
    /// it is used when sending, not for rendering).
    pub fn csrf_token(self) -> Option<String> {
        self.0.with_untracked(|session| match session {
            Some(Session::SignedIn(session)) => Some(session.csrf_token.clone()),
            _ => None,
        })
    }

    /// Why the server could not be reached, while that is the case.
    pub fn unreachable(self) -> Option<String> {
        self.0.with(|session| match session {
            Some(Session::Unreachable(message)) => Some(message.clone()),
            _ => None,
        })
    }
}
