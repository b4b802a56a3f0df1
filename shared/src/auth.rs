//! Accounts and sessions (DESIGN §4).

use serde::{Deserialize, Serialize};

/// `POST /api/auth/signup`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LoginRequest {
    /// Email address; compared case-insensitively.
    pub email: String,
    /// Plain password.
    pub password: String,
    /// The two-factor code (or a recovery code), when the account has MFA:
    /// without it such an account answers 401 `{"detail":"mfa_required"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// A two-factor code (`/api/auth/mfa/confirm`, `/disable`, `/step-up`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MfaCodeRequest {
    /// Six digits from the authenticator app, or a recovery code.
    pub code: String,
}

/// `POST /api/auth/mfa/enroll`: enrolling asks for the current password.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MfaEnrolRequest {
    /// The account's current password; without it the server answers 400.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
}

/// `POST /api/auth/password`: change the password. Every other session of
/// the account is signed out; answers 204.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChangePasswordRequest {
    /// The password in use now (401 `Wrong password.` otherwise).
    pub current_password: String,
    /// The new one, under the sign-up policy (422 with the reason).
    pub new_password: String,
}

/// `POST /api/auth/mfa/enroll` answer: what the authenticator app needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MfaEnrolment {
    /// The secret, base32.
    pub secret: String,
    /// `otpauth://totp/…`.
    pub otpauth_uri: String,
    /// The URI as a QR code, an SVG document.
    pub qr_svg: String,
}

/// `POST /api/auth/mfa/confirm`: the recovery codes, shown once.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MfaConfirmed {
    /// Single-use codes for when the authenticator is lost.
    pub recovery_codes: Vec<String>,
}

/// The signed-in person, as the browser sees them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct User {
    /// Stable user id (UUID).
    pub id: String,
    /// Email address, lower-cased.
    pub email: String,
    /// Name shown in the app.
    pub display_name: String,
    /// The first user of a deployment is its admin.
    pub is_admin: bool,
    /// An administrator reset the password: until the user chooses a new
    /// one (`POST /api/auth/password`), every other request is refused
    /// with 403 `password_change_required`.
    #[serde(default)]
    pub must_change_password: bool,
}

/// Answer of sign-up (201) and sign-in (200): the user and the session's
/// CSRF token. The session token itself travels only in an `HttpOnly` cookie.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionResponse {
    /// The signed-in user.
    pub user: User,
    /// Send as `X-CSRF-Token` on every non-GET `/api` request.
    pub csrf_token: String,
    /// Two-factor sign-in is on for this account.
    #[serde(default)]
    pub mfa_enabled: bool,
}

/// One of the caller's sessions (`GET /api/auth/sessions`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionInfo {
    /// Session id.
    pub id: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339: last request seen (to the minute).
    pub last_seen_at: String,
    /// The browser that opened it, as it said.
    pub user_agent: Option<String>,
    /// The address it signed in from.
    pub ip: Option<String>,
    /// This is the session making the request.
    pub current: bool,
}

/// `GET /api/auth/me`: same shape as [`SessionResponse`].
pub type MeResponse = SessionResponse;

/// `POST /api/auth/sessions/revoke-others`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RevokedSessions {
    /// How many other sessions were signed out.
    pub revoked: u64,
}

/// `GET /api/auth/options`: what the sign-in page offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuthOptions {
    /// Whether e-mail and password sign in (`COUNTERSIGN_PASSWORD_SIGNIN`).
    pub password_signin: bool,
    /// The single sign-on button's words; absent when no identity provider
    /// is set up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sso_label: Option<String>,
}

/// `POST /api/auth/oidc/link`: the password (and two-factor code, when
/// the account has one) of the account the provider's e-mail names.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SsoLinkRequest {
    /// The account's password.
    pub password: String,
    /// A TOTP or recovery code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

impl std::fmt::Debug for SsoLinkRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SsoLinkRequest").finish_non_exhaustive()
    }
}
