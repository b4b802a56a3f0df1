//! Extractors: who is calling, and from where.

use super::{error::ApiError, session::session_from_headers};
use crate::{
    AppState,
    auth::{SessionUser, session},
    config::TrustedProxies,
};
use axum::{
    extract::{ConnectInfo, FromRequest, FromRequestParts, Request},
    http::{Extensions, HeaderMap, header, request::Parts},
};
use std::net::{IpAddr, SocketAddr};

/// The signed-in user. Rejects with 401 when the session cookie is missing,
/// unknown, revoked or expired. On non-GET requests the Origin/CSRF
/// middleware has already resolved the session and checked the CSRF token;
/// this reuses its answer.
#[derive(Debug, Clone)]
pub struct CurrentUser(pub SessionUser);

impl FromRequestParts<AppState> for CurrentUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let user = match parts.extensions.get::<SessionUser>() {
            Some(user) => user.clone(),
            None => {
                let user = session_from_headers(&parts.headers, state)
                    .await?
                    .ok_or_else(ApiError::sign_in_required)?;
                parts.extensions.insert(user.clone());
                user
            }
        };
        refuse_before_new_password(&user, parts.uri.path())?;
        Ok(Self(user))
    }
}

/// A session the Origin/CSRF middleware took as this instance
/// [knew](super::session::Known) it, without looking it up: only
/// [`StampedUser`] takes it. [`CurrentUser`] ignores it and looks the
/// session up.
#[derive(Debug, Clone)]
pub struct KnownSession(pub SessionUser);

/// The signed-in user for a handler whose every write checks the
/// session's [stamp](crate::auth::session::Stamp) in its own transaction
/// (sending a message: `turns::start`): the session as this instance knew
/// it when it was looked up for an earlier request (`known` is then
/// `true`), or as looked up now. Refused as [`CurrentUser`] refuses.
#[derive(Debug, Clone)]
pub struct StampedUser {
    /// The session, and its stamp.
    pub user: SessionUser,
    /// Not looked up for this request: a stamp that no longer holds
    /// means looking it up again.
    pub known: bool,
}

impl FromRequestParts<AppState> for StampedUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let (user, known) = match parts.extensions.get::<KnownSession>() {
            Some(KnownSession(user)) => (user.clone(), true),
            None => (
                CurrentUser::from_request_parts(parts, state).await?.0,
                false,
            ),
        };
        refuse_before_new_password(&user, parts.uri.path())?;
        Ok(Self { user, known })
    }
}

/// After an administrator's reset, the one-time password opens only the
/// door to choosing a new one.
pub fn refuse_before_new_password(user: &SessionUser, path: &str) -> Result<(), ApiError> {
    if user.must_change_password && !ALLOWED_BEFORE_NEW_PASSWORD.contains(&path) {
        return Err(ApiError::Forbidden(PASSWORD_CHANGE_REQUIRED.into()));
    }
    Ok(())
}

/// The `detail` of a request refused until the user replaces a password an
/// administrator reset.
pub const PASSWORD_CHANGE_REQUIRED: &str = "password_change_required";

/// What a user whose password was reset may still do (paths inside
/// `/api`, as the nested router sees them).
const ALLOWED_BEFORE_NEW_PASSWORD: &[&str] = &["/auth/me", "/auth/password", "/auth/logout"];

/// The client's address and user agent, for sessions, throttling and logs.
/// The address is the TCP peer's, unless that peer is a trusted proxy
/// (`COUNTERSIGN_TRUSTED_PROXIES`): see [`client_ip`].
#[derive(Debug, Clone)]
pub struct Client(pub session::ClientInfo);

impl FromRequestParts<AppState> for Client {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let ip = client_ip(
            peer_ip(&parts.extensions),
            &parts.headers,
            &state.config.trusted_proxies,
        );
        let user_agent = parts
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        Ok(Self(session::ClientInfo { ip, user_agent }))
    }
}

/// The TCP peer's address, if the server was started with connect info.
pub fn peer_ip(extensions: &Extensions) -> Option<IpAddr> {
    extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip().to_canonical())
}

/// Who the client is. The TCP peer, unless the peer is a trusted proxy:
/// then `X-Forwarded-For` is read from the right (each proxy appends the
/// address it was reached from), skipping trusted proxies, and the first
/// address that is not one is the client. Everything left of it was
/// written by the client itself and could say anything. A malformed entry
/// ends the walk at the last trusted hop; when every entry is a trusted
/// proxy, the left-most is the best we know.
pub fn client_ip(
    peer: Option<IpAddr>,
    headers: &HeaderMap,
    trusted: &TrustedProxies,
) -> Option<IpAddr> {
    let peer = peer?;
    if !trusted.contains(peer) {
        return Some(peer);
    }
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|hop| !hop.is_empty())
        .collect();
    let mut client = peer;
    for hop in hops.iter().rev() {
        let Some(ip) = parse_hop(hop) else {
            break;
        };
        client = ip;
        if !trusted.contains(ip) {
            break;
        }
    }
    Some(client)
}

/// One `X-Forwarded-For` entry: an address, `[v6]`, or either with a port.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    hop.parse::<SocketAddr>()
        .ok()
        .map(|addr| addr.ip().to_canonical())
}

/// `axum::Json`, but a malformed body answers `{"detail": …}` like every
/// other error (400 for unreadable JSON, 422 for the wrong shape, 415 for a
/// missing content type), and the body must be a JSON object, as every
/// request body in the document is: serde would otherwise read a struct
/// from an array of its fields in order (`[null, null]` was a valid
/// `PATCH /api/chats/{id}`, found by the fuzz test). Text holding `\0` is
/// a 422 too: the database cannot store it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<T, S> FromRequest<S> for Json<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let axum::Json(body) =
            axum::Json::<serde_json::Value>::from_request(request, state).await?;
        if !body.is_object() {
            return Err(ApiError::Unprocessable(
                "The request body has the wrong shape: expected a JSON object.".to_owned(),
            ));
        }
        if has_nul(&body) {
            return Err(ApiError::Unprocessable(
                "The request body has the wrong shape: text cannot contain the NUL character (\\u0000).".to_owned(),
            ));
        }
        T::deserialize(body).map(Self).map_err(|err| {
            ApiError::Unprocessable(format!("The request body has the wrong shape: {err}"))
        })
    }
}

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

/// Whether a string (or a key) anywhere in `value` holds `\0`, which no
/// Postgres `text` or `jsonb` value can (a message with one was a 500,
/// found by the fuzz test).
fn has_nul(value: &serde_json::Value) -> bool {
    use serde_json::Value as V;
    match value {
        V::String(s) => s.contains('\0'),
        V::Array(items) => items.iter().any(has_nul),
        V::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        V::Null | V::Bool(_) | V::Number(_) => false,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_is_the_right_most_address_that_is_not_a_trusted_proxy() {
        let trusted: TrustedProxies = "10.0.0.0/8, 192.0.2.1".parse().expect("CIDRs");
        let ip = |s: &str| s.parse::<IpAddr>().expect("IP");
        let cases: &[(&str, Option<&str>, &str, &str)] = &[
            (
                "203.0.113.9",
                Some("198.51.100.1"),
                "203.0.113.9",
                "an untrusted peer is the client",
            ),
            ("10.0.0.5", None, "10.0.0.5", "a proxy without the header"),
            (
                "10.0.0.5",
                Some("198.51.100.1"),
                "198.51.100.1",
                "one proxy",
            ),
            (
                "10.0.0.5",
                Some("6.6.6.6, 198.51.100.1"),
                "198.51.100.1",
                "what the client prepended is ignored",
            ),
            (
                "10.0.0.5",
                Some("198.51.100.1, 192.0.2.1"),
                "198.51.100.1",
                "two proxies",
            ),
            (
                "10.0.0.5",
                Some("10.1.1.1, 192.0.2.1"),
                "10.1.1.1",
                "only proxies: the left-most",
            ),
            (
                "10.0.0.5",
                Some("garbage, 198.51.100.1"),
                "198.51.100.1",
                "garbage left of the client",
            ),
            (
                "10.0.0.5",
                Some("198.51.100.1, garbage"),
                "10.0.0.5",
                "garbage from a proxy: stop at the peer",
            ),
            (
                "10.0.0.5",
                Some("[2001:db8::1]:4711"),
                "2001:db8::1",
                "IPv6 with a port",
            ),
            (
                "::ffff:10.0.0.5",
                Some("198.51.100.1"),
                "198.51.100.1",
                "an IPv4-mapped peer",
            ),
        ];
        for (peer, xff, expected, why) in cases {
            let mut headers = HeaderMap::new();
            if let Some(xff) = xff {
                headers.insert("x-forwarded-for", xff.parse().expect("header"));
            }
            assert_eq!(
                client_ip(Some(ip(peer).to_canonical()), &headers, &trusted),
                Some(ip(expected)),
                "{why}"
            );
        }
    }
}
