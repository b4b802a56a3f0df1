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
use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "countersign_session";

/// Resolves the session cookie, if any, to a live session, and names its
/// user in the request's log span (`user_id`, see `http::router`). Both
/// the extractor and the CSRF middleware resolve sessions here, so every
/// signed-in request's log lines carry the user. Always a lookup in
/// Postgres; what it finds is kept in [`Known`] for the one request that
/// may do without ([`known_or_looked_up`]).
pub async fn session_from_headers(
    headers: &HeaderMap,
    state: &AppState,
) -> Result<Option<SessionUser>, ApiError> {
    let Some(token) = cookie(headers, SESSION_COOKIE) else {
        return Ok(None);
    };
    looked_up(state, &token).await
}

async fn looked_up(state: &AppState, token: &str) -> Result<Option<SessionUser>, ApiError> {
    let hash = session::token_hash(token);
    let user = session::lookup(&state.db, token, state.config.session_idle()).await?;
    match &user {
        Some(user) => {
            state.known_sessions.keep(&hash, user);
            record_user(user);
        }
        None => state.known_sessions.forget(&hash),
    }
    Ok(user)
}

fn record_user(user: &SessionUser) {
    tracing::Span::current().record("user_id", tracing::field::display(user.user_id));
}

/// The session behind the cookie as this instance last looked it up, if
/// that was less than [`KNOWN_FOR`] ago, and `true`; or else looked up now
/// ([`session_from_headers`]), and `false`. What it returns with `true` is
/// only as good as its [stamp](session::Stamp): it is for a request whose
/// every write checks the stamp in its own transaction (sending a message:
/// `http::extract::StampedUser`), never for any other.
pub async fn known_or_looked_up(
    headers: &HeaderMap,
    state: &AppState,
) -> Result<Option<(SessionUser, bool)>, ApiError> {
    let Some(token) = cookie(headers, SESSION_COOKIE) else {
        return Ok(None);
    };
    if let Some(user) = state.known_sessions.get(&session::token_hash(&token)) {
        record_user(&user);
        return Ok(Some((user, true)));
    }
    Ok(looked_up(state, &token).await?.map(|user| (user, false)))
}

/// How long a looked-up session is [known](Known). Its stamp decides
/// whether it still stands; this only bounds how long a session used
/// only to send messages goes without a lookup (which refreshes its
/// `last_seen_at`, at most once a minute).
pub const KNOWN_FOR: Duration = Duration::from_secs(30);
/// Sessions known at most.
pub const KNOWN_AT_MOST: usize = 10_000;

/// The sessions this instance looked up in the last [`KNOWN_FOR`], by
/// their token's hash (never the token), so that sending a message need
/// not wait for a lookup in front of its turn: the turn's statement
/// checks the session's stamp instead (`turns::start`), in its own
/// transaction, by the database's clock. A sign-out, a revocation or any
/// change to the user, here or on another instance, changes the user's
/// epoch, so a stamp known here from before it fails that check, and the
/// session is looked up again.
#[derive(Debug, Default)]
pub struct Known {
    sessions: Mutex<HashMap<Vec<u8>, (SessionUser, Instant)>>,
}

impl Known {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, (SessionUser, Instant)>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The session whose token hashes to `hash`, if looked up less than
    /// [`KNOWN_FOR`] ago.
    pub fn get(&self, hash: &[u8]) -> Option<SessionUser> {
        let sessions = self.lock();
        let (user, at) = sessions.get(hash)?;
        (at.elapsed() < KNOWN_FOR).then(|| user.clone())
    }

    /// Keeps what a lookup found; past [`KNOWN_AT_MOST`] sessions, the
    /// expired ones go first, and if none has, nothing is kept.
    pub fn keep(&self, hash: &[u8], user: &SessionUser) {
        let mut sessions = self.lock();
        if sessions.len() >= KNOWN_AT_MOST && !sessions.contains_key(hash) {
            sessions.retain(|_, (_, at)| at.elapsed() < KNOWN_FOR);
            if sessions.len() >= KNOWN_AT_MOST {
                return;
            }
        }
        sessions.insert(hash.to_vec(), (user.clone(), Instant::now()));
    }

    /// Forgets the session whose token hashes to `hash`.
    pub fn forget(&self, hash: &[u8]) {
        self.lock().remove(hash);
    }
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
