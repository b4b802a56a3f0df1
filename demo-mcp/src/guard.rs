//! Loopback-only guards: refuse to listen anywhere but loopback, and refuse
//! requests whose `Host` or `Origin` is not this server on loopback.
//!
//! The `Host` check defeats DNS rebinding (a page on `evil.example` that
//! resolves to 127.0.0.1 still sends `Host: evil.example`); the `Origin`
//! check stops a page in the user's browser from driving the MCP endpoint or
//! the admin endpoints. Both apply to every route, `/mcp` and `/admin/*`
//! alike. rmcp's own checks are configured with the same lists as a second
//! line (see [`crate::router`]).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The `Host` and `Origin` values this server accepts.
#[derive(Debug, Clone)]
pub(crate) struct Allowed {
    hosts: Arc<[String]>,
    origins: Arc<[String]>,
}

impl Allowed {
    /// For a server listening on `addr`: `Host` must be `localhost:PORT` or
    /// the listening address itself (`127.0.0.1:PORT` by default); `Origin`,
    /// when present, must be `http://` followed by one of those.
    pub(crate) fn for_addr(addr: SocketAddr) -> Self {
        let hosts: Vec<String> = vec![format!("localhost:{}", addr.port()), addr.to_string()];
        let origins = hosts.iter().map(|host| format!("http://{host}")).collect();
        Self {
            hosts: hosts.into(),
            origins,
        }
    }

    pub(crate) fn hosts(&self) -> &[String] {
        &self.hosts
    }

    pub(crate) fn origins(&self) -> &[String] {
        &self.origins
    }

    fn check(&self, headers: &HeaderMap) -> Result<(), &'static str> {
        let host = headers
            .get(header::HOST)
            .and_then(|value| value.to_str().ok())
            .ok_or("a Host header is required")?;
        if !self
            .hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(host))
        {
            return Err("this Host is not allowed");
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().map_err(|_| "this Origin is not allowed")?;
            if !self
                .origins
                .iter()
                .any(|allowed| allowed.eq_ignore_ascii_case(origin))
            {
                return Err("this Origin is not allowed");
            }
        }
        Ok(())
    }
}

/// Middleware: 403 `{"detail": …}` unless `Host` and `Origin` pass.
pub(crate) async fn loopback_only(
    State(allowed): State<Allowed>,
    request: Request,
    next: Next,
) -> Response {
    match allowed.check(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(detail) => {
            tracing::warn!(
                http.host = ?request.headers().get(header::HOST),
                http.origin = ?request.headers().get(header::ORIGIN),
                "refused a request: {detail}"
            );
            (
                StatusCode::FORBIDDEN,
                axum::Json(json!({ "detail": detail })),
            )
                .into_response()
        }
    }
}

/// Errors unless `addr` is a loopback address.
pub(crate) fn ensure_loopback(addr: SocketAddr) -> io::Result<()> {
    if addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the demo MCP server only listens on loopback, not on {addr}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(host: Option<&'static str>, origin: Option<&'static str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(host) = host {
            headers.insert(header::HOST, HeaderValue::from_static(host));
        }
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, HeaderValue::from_static(origin));
        }
        headers
    }

    #[test]
    fn only_this_servers_loopback_authorities_pass() {
        let allowed = Allowed::for_addr("127.0.0.1:3100".parse().expect("an address"));
        let cases = [
            (Some("127.0.0.1:3100"), None, true, "the listening address"),
            (
                Some("localhost:3100"),
                None,
                true,
                "localhost with our port",
            ),
            (Some("LOCALHOST:3100"), None, true, "host names ignore case"),
            (
                Some("127.0.0.1:3100"),
                Some("http://127.0.0.1:3100"),
                true,
                "same-origin",
            ),
            (
                Some("127.0.0.1:3100"),
                Some("http://localhost:3100"),
                true,
                "localhost origin",
            ),
            (None, None, false, "no Host"),
            (Some("127.0.0.1"), None, false, "no port"),
            (Some("127.0.0.1:3101"), None, false, "another port"),
            (Some("evil.example:3100"), None, false, "DNS rebinding"),
            (Some("0.0.0.0:3100"), None, false, "unspecified address"),
            (
                Some("127.0.0.1:3100"),
                Some("http://evil.example"),
                false,
                "foreign origin",
            ),
            (
                Some("127.0.0.1:3100"),
                Some("https://127.0.0.1:3100"),
                false,
                "other scheme",
            ),
            (
                Some("127.0.0.1:3100"),
                Some("http://127.0.0.1:3101"),
                false,
                "other port",
            ),
            (Some("127.0.0.1:3100"), Some("null"), false, "opaque origin"),
        ];
        for (host, origin, expected, why) in cases {
            assert_eq!(
                allowed.check(&headers(host, origin)).is_ok(),
                expected,
                "{why}"
            );
        }
    }

    #[test]
    fn only_loopback_addresses_may_be_bound() {
        for (addr, expected) in [
            ("127.0.0.1:0", true),
            ("[::1]:0", true),
            ("0.0.0.0:0", false),
            ("[::]:0", false),
            ("192.168.1.10:3100", false),
        ] {
            let addr: SocketAddr = addr.parse().expect("an address");
            assert_eq!(ensure_loopback(addr).is_ok(), expected, "{addr}");
        }
    }
}
