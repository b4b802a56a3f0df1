//! Accounts and sessions (DESIGN §4).

use serde::{Deserialize, Serialize};

/// `POST /api/auth/signup`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SignupRequest {
    /// Email address; compared case-insensitively.
    pub email: String,
    /// Plain password, 12 to 1024 characters, not easy to guess.
    pub password: String,
    /// Name shown in the app; defaults to the part of the email before `@`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

/// `POST /api/auth/login`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoginRequest {
    /// Email address; compared case-insensitively.
    pub email: String,
    /// Plain password.
    pub password: String,
}

/// The signed-in person, as the browser sees them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// Stable user id (UUID).
    pub id: String,
    /// Email address, lower-cased.
    pub email: String,
    /// Name shown in the app.
    pub display_name: String,
    /// The first user of a deployment is its admin.
    pub is_admin: bool,
}

/// Answer of sign-up (201) and sign-in (200): the user and the session's
/// CSRF token. The session token itself travels only in an `HttpOnly` cookie.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionResponse {
    /// The signed-in user.
    pub user: User,
    /// Send as `X-CSRF-Token` on every non-GET `/api` request.
    pub csrf_token: String,
}

/// `GET /api/auth/me`: same shape as [`SessionResponse`].
pub type MeResponse = SessionResponse;
