//! Extractors: who is calling, and from where.

use super::{error::ApiError, security::SESSION_COOKIE};
use crate::{
    AppState,
    auth::{SessionUser, session},
};
use axum::{
    extract::{ConnectInfo, FromRequestParts},
    http::{HeaderMap, header, request::Parts},
};
use std::net::SocketAddr;

/// The signed-in user. Rejects with 401 when the session cookie is missing,
/// unknown, revoked or expired. On non-GET requests the Origin/CSRF
/// middleware has already resolved the session and checked the CSRF token;
/// this reuses its answer.
#[derive(Debug, Clone)]
pub struct CurrentUser(pub SessionUser);

impl FromRequestParts<AppState> for CurrentUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if let Some(user) = parts.extensions.get::<SessionUser>() {
            return Ok(Self(user.clone()));
        }
        let user = session_from_headers(&parts.headers, state)
            .await?
            .ok_or_else(ApiError::sign_in_required)?;
        parts.extensions.insert(user.clone());
        Ok(Self(user))
    }
}

/// Resolves the session cookie, if any, to a live session.
pub async fn session_from_headers(
    headers: &HeaderMap,
    state: &AppState,
) -> Result<Option<SessionUser>, ApiError> {
    let Some(token) = cookie(headers, SESSION_COOKIE) else {
        return Ok(None);
    };
    Ok(session::lookup(&state.db, &token, state.config.session_idle()).await?)
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

/// The peer address and user agent, for sessions and throttling.
#[derive(Debug, Clone)]
pub struct Client(pub session::ClientInfo);

impl<S: Send + Sync> FromRequestParts<S> for Client {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let ip = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip().to_canonical());
        let user_agent = parts
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        Ok(Self(session::ClientInfo { ip, user_agent }))
    }
}

/// `axum::Json`, but a malformed body answers `{"detail": …}` like every
/// other error (400 for unreadable JSON, 422 for the wrong shape, 415 for a
/// missing content type).
#[derive(Debug, Clone, Copy, Default, axum::extract::FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct Json<T>(pub T);

impl From<axum::extract::rejection::JsonRejection> for ApiError {
    fn from(rejection: axum::extract::rejection::JsonRejection) -> Self {
        use axum::extract::rejection::JsonRejection as R;
        match rejection {
            R::JsonDataError(e) => Self::Unprocessable(format!(
                "The request body has the wrong shape: {}",
                e.body_text()
            )),
            R::MissingJsonContentType(_) => {
                Self::UnsupportedMediaType("Send the request body as application/json.".to_owned())
            }
            other => Self::BadRequest(format!(
                "The request body is not valid JSON: {}",
                other.body_text()
            )),
        }
    }
}

/// `axum::extract::Path`, but a malformed id answers a JSON 404: an id that
/// cannot exist names nothing.
#[derive(Debug, Clone, Copy, axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct Path<T>(pub T);

impl From<axum::extract::rejection::PathRejection> for ApiError {
    fn from(_: axum::extract::rejection::PathRejection) -> Self {
        Self::NotFound("Not found.".to_owned())
    }
}

/// `axum::extract::Query` with JSON errors.
#[derive(Debug, Clone, Copy, Default, axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct Query<T>(pub T);

impl From<axum::extract::rejection::QueryRejection> for ApiError {
    fn from(rejection: axum::extract::rejection::QueryRejection) -> Self {
        Self::BadRequest(format!("Bad query string: {}", rejection.body_text()))
    }
}
