//! The session cookie: its name, reading it from a request and resolving it
//! to a live session, and the `Set-Cookie` values that start and end one.
//! The extractors (`extract`) and the Origin + CSRF middleware (`security`)
//! both resolve sessions through here, so neither imports the other.
//!
//! What it deliberately does not do: decide whether a session is live
//! (`auth::session` does, in Postgres) or check CSRF tokens (`security`).

use super::error::ApiError;
use crate::{
    AppState,
    auth::{SessionUser, session},
};
use axum::http::{HeaderMap, HeaderValue, header};

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "countersign_session";

/// Resolves the session cookie, if any, to a live session, and names its
/// user in the request's log span (`user_id`, see `http::router`). Both
/// the extractor and the CSRF middleware resolve sessions here, so every
/// signed-in request's log lines carry the user.
pub async fn session_from_headers(
    headers: &HeaderMap,
    state: &AppState,
) -> Result<Option<SessionUser>, ApiError> {
    let Some(token) = cookie(headers, SESSION_COOKIE) else {
        return Ok(None);
    };
    let user = session::lookup(&state.db, &token, state.config.session_idle()).await?;
    if let Some(user) = &user {
        tracing::Span::current().record("user_id", tracing::field::display(user.user_id));
    }
    Ok(user)
}

/// The value of cookie `name`, if sent.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// `Set-Cookie` for a new session: `HttpOnly; SameSite=Lax; Path=/`, plus
/// `Secure` behind HTTPS. `Max-Age` is the session's absolute lifetime.
pub fn session_cookie(token: &str, max_age_secs: u64, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    let cookie = format!(
        "{SESSION_COOKIE}={token}; HttpOnly; SameSite=Lax; Path=/; Max-Age={max_age_secs}{secure}"
    );
    #[expect(clippy::expect_used, reason = "the token is base64url, the rest ASCII")]
    HeaderValue::from_str(&cookie).expect("cookie is a valid header value")
}

/// `Set-Cookie` that removes the session cookie.
pub fn clear_session_cookie(secure: bool) -> HeaderValue {
    session_cookie("", 0, secure)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_cookie_has_the_required_attributes() {
        let plain = session_cookie("tok", 60, false);
        assert_eq!(
            plain.to_str().expect("ascii"),
            "countersign_session=tok; HttpOnly; SameSite=Lax; Path=/; Max-Age=60"
        );
        let secure = session_cookie("tok", 60, true);
        assert!(secure.to_str().expect("ascii").ends_with("; Secure"));
    }
}
