//! Browser-facing defences: the `Host` check (DNS rebinding), security
//! headers on every response (HSTS behind an https public URL), and the
//! Origin + CSRF checks on every state-changing `/api` request.

use super::{
    error::ApiError,
    extract::KnownSession,
    session::{known_or_looked_up, session_from_headers},
};
use crate::{AppState, config::split_authority};
use axum::{
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, Method, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use countersign_api::CSRF_HEADER;
use subtle::ConstantTimeEq as _;

/// The web app is one wasm module loaded by `/app.js`: nothing inline, no
/// eval beyond compiling wasm, no framing, no plugins, talk only to itself.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
     style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; \
     object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// `Strict-Transport-Security` when the public URL is https: a year, and
/// the subdomains too (a plain-http sibling could set cookies for us).
pub const HSTS: &str = "max-age=31536000; includeSubDomains";

/// With `COUNTERSIGN_PUBLIC_URL` set, refuses (403) a request whose `Host`
/// (or HTTP/2 `:authority`) is not that URL's host and port. A page on
/// `evil.example` whose name is re-pointed at this server (DNS rebinding)
/// sends `Host: evil.example`, and its requests are same-origin to the
/// browser, so neither the Origin check nor SameSite would stop them.
///
/// `/healthz` and `/readyz` are exempt: load balancers and orchestrators
/// probe by address, and they reveal nothing. `/metrics` and everything
/// else are checked (a rebound page runs on the victim's own loopback).
/// A proxy in front must pass the original `Host` through.
pub async fn host_check(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some((host, port)) = state.config.public_authority() else {
        return next.run(request).await;
    };
    if matches!(request.uri().path(), "/healthz" | "/readyz") {
        return next.run(request).await;
    }
    let expected = Some((host, port));
    let header_host = request
        .headers()
        .get(header::HOST)
        .map(|h| h.to_str().ok().and_then(|h| split_authority(h, port)));
    let uri_host = request
        .uri()
        .authority()
        .map(|a| split_authority(a.as_str(), port));
    let matches = match (header_host, uri_host) {
        (None, None) => false,
        (h, u) => h.is_none_or(|h| h == expected) && u.is_none_or(|u| u == expected),
    };
    if matches {
        next.run(request).await
    } else {
        ApiError::Forbidden(
            "This server answers only to the host name it was set up with. Ask your administrator for the right address."
                .to_owned(),
        )
        .into_response()
    }
}

/// Adds the security headers to every response (HSTS when the public URL
/// is https), and `Cache-Control: no-store` to API answers (they carry
/// personal data and CSRF tokens).
pub async fn security_headers(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let is_api = request.uri().path().starts_with("/api/");
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        ("content-security-policy", CONTENT_SECURITY_POLICY),
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        ("cross-origin-opener-policy", "same-origin"),
        ("cross-origin-resource-policy", "same-origin"),
        (
            "permissions-policy",
            "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
        ),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    if is_api {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if state.config.public_url_is_https() {
        headers.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static(HSTS),
        );
    }
    response
}

/// Paths (inside `/api`) that create a session and so cannot have a CSRF
/// token yet: they rely on the Origin / Sec-Fetch-Site check alone.
fn is_session_creating(path: &str) -> bool {
    let path = path.strip_prefix("/api").unwrap_or(path);
    matches!(path, "/auth/signup" | "/auth/login" | "/auth/oidc/link")
}

/// Whether `path` (inside `/api`) sends a message: the one request whose
/// handler takes a session this instance [knows](super::session::Known)
/// without looking it up, because its turn's writes check the session's
/// stamp (`turns::start`).
fn sends_a_message(method: &Method, path: &str) -> bool {
    let path = path.strip_prefix("/api").unwrap_or(path);
    *method == Method::POST
        && path
            .strip_prefix("/chats/")
            .and_then(|rest| rest.strip_suffix("/messages"))
            .is_some_and(|id| uuid::Uuid::parse_str(id).is_ok())
}

/// For every non-GET `/api` request: refuse a cross-origin `Origin` or
/// `Sec-Fetch-Site` (403); then, except on sign-up and sign-in, require
/// `X-CSRF-Token` (403 when missing), a live session (401), and that the
/// token equals the session's (403). The resolved session is handed to the
/// handler through the request's extensions: a [`crate::auth::SessionUser`]
/// when looked up now; when sending a message, the session as this
/// instance knew it, as a [`KnownSession`], which only the handler that
/// sends messages takes (`extract::StampedUser`).
pub async fn origin_and_csrf(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    if matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) {
        return next.run(request).await;
    }
    if let Err(err) = check_origin(request.headers(), state.config.public_origin().as_deref()) {
        return err.into_response();
    }
    if is_session_creating(request.uri().path()) {
        return next.run(request).await;
    }
    let Some(sent) = request
        .headers()
        .get(CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
    else {
        return csrf_refused().into_response();
    };
    let found = if sends_a_message(request.method(), request.uri().path()) {
        known_or_looked_up(request.headers(), &state).await
    } else {
        session_from_headers(request.headers(), &state)
            .await
            .map(|session| session.map(|session| (session, false)))
    };
    let (session, known) = match found {
        Ok(Some(found)) => found,
        Ok(None) => return ApiError::sign_in_required().into_response(),
        Err(err) => return err.into_response(),
    };
    if !bool::from(sent.as_bytes().ct_eq(session.csrf_token.as_bytes())) {
        return csrf_refused().into_response();
    }
    if known {
        request.extensions_mut().insert(KnownSession(session));
    } else {
        request.extensions_mut().insert(session);
    }
    next.run(request).await
}

fn csrf_refused() -> ApiError {
    ApiError::Forbidden("Missing or wrong CSRF token. Reload the page and try again.".to_owned())
}

/// Same-origin means: `Origin` equals the configured public origin, or its
/// host and port equal the request's `Host`. A request without `Origin`
/// (curl, old browsers) passes unless `Sec-Fetch-Site` says it is cross-site.
pub fn check_origin(headers: &HeaderMap, public_origin: Option<&str>) -> Result<(), ApiError> {
    let refused = || ApiError::Forbidden("Cross-origin requests are not allowed.".to_owned());
    if let Some(site) = headers.get("sec-fetch-site") {
        let site = site.to_str().map_err(|_| refused())?;
        if !matches!(site, "same-origin" | "none") {
            return Err(refused());
        }
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().map_err(|_| refused())?.to_ascii_lowercase();
    if public_origin.is_some_and(|p| p.eq_ignore_ascii_case(&origin)) {
        return Ok(());
    }
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .ok_or_else(refused)?;
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_ascii_lowercase)
        .ok_or_else(refused)?;
    if authority == host {
        Ok(())
    } else {
        Err(refused())
    }
}

/// Whether the browser reached us over HTTPS (directly configured, or as
/// reported by a TLS-terminating proxy). Only ever makes cookies stricter.
pub fn is_https(headers: &HeaderMap, state: &AppState) -> bool {
    state.config.public_url_is_https()
        || headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_check_accepts_same_origin_and_refuses_others() {
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, bool, &'a str);
        let cases: &[Case<'_>] = &[
            (
                &[("host", "127.0.0.1:3000")],
                None,
                true,
                "no Origin (curl)",
            ),
            (
                &[
                    ("host", "127.0.0.1:3000"),
                    ("origin", "http://127.0.0.1:3000"),
                ],
                None,
                true,
                "same origin",
            ),
            (
                &[
                    ("host", "127.0.0.1:3000"),
                    ("origin", "http://evil.example"),
                ],
                None,
                false,
                "foreign origin",
            ),
            (
                &[
                    ("host", "127.0.0.1:3000"),
                    ("origin", "http://127.0.0.1:3001"),
                ],
                None,
                false,
                "other port",
            ),
            (
                &[("host", "127.0.0.1:3000"), ("origin", "null")],
                None,
                false,
                "opaque origin",
            ),
            (
                &[("host", "127.0.0.1:3000"), ("sec-fetch-site", "cross-site")],
                None,
                false,
                "cross-site fetch",
            ),
            (
                &[("host", "127.0.0.1:3000"), ("sec-fetch-site", "same-site")],
                None,
                false,
                "same-site is not same-origin",
            ),
            (
                &[
                    ("host", "127.0.0.1:3000"),
                    ("sec-fetch-site", "same-origin"),
                ],
                None,
                true,
                "same-origin fetch",
            ),
            (
                &[
                    ("host", "internal:3000"),
                    ("origin", "https://cs.example.org"),
                ],
                Some("https://cs.example.org"),
                true,
                "configured public origin behind a proxy",
            ),
            (
                &[
                    ("host", "internal:3000"),
                    ("origin", "https://cs.example.org.evil.example"),
                ],
                Some("https://cs.example.org"),
                false,
                "suffix trick",
            ),
        ];
        for (pairs, public, ok, why) in cases {
            let mut map = HeaderMap::new();
            for (k, v) in *pairs {
                map.insert(
                    axum::http::HeaderName::from_static(k),
                    HeaderValue::from_str(v).expect("ascii"),
                );
            }
            assert_eq!(check_origin(&map, *public).is_ok(), *ok, "{why}");
        }
    }
}

/// Marks an answer that carries a secret of the session (the CSRF token):
/// it is never compressed. A compressed secret beside text an attacker can
/// get into the same answer leaks through the answer's length (BREACH);
/// the session cookie's `SameSite=Lax` already keeps cross-site requests
/// out, this keeps the secret out of reach even so.
#[derive(Debug, Clone, Copy)]
pub struct CarriesSecret;

/// Whether `/api`'s compression may compress an answer: JSON above 256
/// bytes (DESIGN §9a), never an event stream (each event must reach the
/// browser as it happens) and never one marked [`CarriesSecret`].
pub fn compressible() -> impl tower_http::compression::Predicate {
    use tower_http::compression::predicate::{NotForContentType, Predicate as _, SizeAbove};
    SizeAbove::new(256).and(NotForContentType::SSE).and(
        |_: axum::http::StatusCode,
         _: axum::http::Version,
         _: &axum::http::HeaderMap,
         extensions: &axum::http::Extensions| {
            extensions.get::<CarriesSecret>().is_none()
        },
    )
}
