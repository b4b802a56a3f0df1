//! The HTTP client of the app: the only module that builds `/api` URLs or
//! calls `fetch`.
//!
//! It owns two conventions of the server (`../shared/DESIGN.md` §4, §8):
//! every non-GET request of a signed-in session carries `X-CSRF-Token`, and
//! every error answer is `{"detail": "…"}`, which becomes [`ApiError::detail`]
//! verbatim so the pages can show what the server decided. It deliberately
//! holds no state: the CSRF token lives in [`crate::session`], and callers
//! pass it in.

use std::fmt;

use countersign_api::{
    CSRF_HEADER, ErrorBody, LoginRequest, MeResponse, SessionResponse, SignupRequest,
};
use gloo_net::http::{Request, RequestBuilder, Response};
use serde::de::DeserializeOwned;

/// A request that did not succeed, in words a person can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status, or `None` when no answer arrived (offline, server down).
    pub status: Option<u16>,
    /// The server's `detail`, or a generic sentence when it sent none.
    pub detail: String,
}

impl ApiError {
    /// The session is missing or expired (HTTP 401).
    pub fn is_unauthorized(&self) -> bool {
        self.status == Some(401)
    }

    fn network() -> Self {
        Self {
            status: None,
            detail: "Could not reach the server. Check your connection and try again.".into(),
        }
    }

    fn unreadable(status: u16) -> Self {
        Self {
            status: Some(status),
            detail: "The server sent an answer this page could not read. Try reloading.".into(),
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

/// `GET /api/auth/me`: the signed-in user and the session's CSRF token.
/// Fails with a 401 [`ApiError`] when nobody is signed in.
pub async fn me() -> Result<MeResponse, ApiError> {
    let response = send(Request::get("/api/auth/me").build()).await?;
    read_json(response).await
}

/// `POST /api/auth/signup`: creates the account and signs it in.
pub async fn signup(body: &SignupRequest) -> Result<SessionResponse, ApiError> {
    // No session yet, so no CSRF token: the server relies on the Origin check.
    let response = send(Request::post("/api/auth/signup").json(body)).await?;
    read_json(response).await
}

/// `POST /api/auth/login`.
pub async fn login(body: &LoginRequest) -> Result<SessionResponse, ApiError> {
    let response = send(Request::post("/api/auth/login").json(body)).await?;
    read_json(response).await
}

/// `POST /api/auth/logout`: revokes the current session (204).
pub async fn logout(csrf_token: &str) -> Result<(), ApiError> {
    let response = send(with_csrf(Request::post("/api/auth/logout"), csrf_token).build()).await?;
    expect_success(response).await
}

/// Adds the session's CSRF token; every non-GET request of a signed-in
/// session goes through here.
fn with_csrf(request: RequestBuilder, csrf_token: &str) -> RequestBuilder {
    request.header(CSRF_HEADER, csrf_token)
}

/// Sends a request built by one of the functions above. Building only fails
/// when a body cannot be serialized, which for our wire types means a bug; it
/// is reported like a network failure rather than a panic.
async fn send(request: Result<Request, gloo_net::Error>) -> Result<Response, ApiError> {
    let request = request.map_err(|_| ApiError::network())?;
    request.send().await.map_err(|_| ApiError::network())
}

async fn read_json<T: DeserializeOwned>(response: Response) -> Result<T, ApiError> {
    if !response.ok() {
        return Err(error_from(response).await);
    }
    let status = response.status();
    response
        .json::<T>()
        .await
        .map_err(|_| ApiError::unreadable(status))
}

async fn expect_success(response: Response) -> Result<(), ApiError> {
    if response.ok() {
        Ok(())
    } else {
        Err(error_from(response).await)
    }
}

/// Turns an error answer into an [`ApiError`], preferring the server's own
/// `{"detail": "…"}`; a proxy's HTML error page gets a generic sentence.
async fn error_from(response: Response) -> ApiError {
    let status = response.status();
    let detail = match response.json::<ErrorBody>().await {
        Ok(body) if !body.detail.trim().is_empty() => body.detail,
        _ => fallback_detail(status),
    };
    ApiError {
        status: Some(status),
        detail,
    }
}

fn fallback_detail(status: u16) -> String {
    match status {
        401 => "Please sign in again.".into(),
        403 => "You are not allowed to do that.".into(),
        429 => "Too many attempts. Wait a moment and try again.".into(),
        500.. => format!("The server had a problem (HTTP {status}). Try again in a moment."),
        _ => format!("The request failed (HTTP {status})."),
    }
}
