//! `GET /metrics` (DESIGN §8): the Prometheus text of [`crate::metrics`],
//! in one of two places:
//!
//! - with `COUNTERSIGN_METRICS_BIND`, on a listener of its own ([`serve`])
//!   that answers `/metrics` and nothing else, to whoever reaches it (bind
//!   it where only the scraper can); the main address then answers 404;
//! - without it, on the main address for a loopback peer only, and not
//!   for one `COUNTERSIGN_TRUSTED_PROXIES` names ([`main_address_serves`]):
//!   a Prometheus on the same host, not a proxy there.
//!
//! Either way it is outside `/api`: no session cookie, no Origin/CSRF
//! check (it is a GET that changes nothing), and not compressed (the
//! compression layer wraps `/api` only; a scrape is a few kilobytes). On
//! the main address the `Host` check still applies (`security::host_check`:
//! a page re-bound by DNS runs on its victim's loopback too), so with
//! `COUNTERSIGN_PUBLIC_URL` set a local scraper must send that host — or
//! use `COUNTERSIGN_METRICS_BIND`. The answer holds counts only: no user,
//! tool, argument or URL.

use crate::AppState;
use axum::{
    Router,
    extract::State,
    http::{Extensions, HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use std::{future::Future, net::IpAddr, time::Duration};

/// Headers a proxy adds when it forwards a request. Any of them on the
/// main address means the request came through a proxy, from somewhere
/// that is not this host as far as we know.
const FORWARDING_HEADERS: [&str; 3] = ["forwarded", "x-forwarded-for", "x-real-ip"];

/// Whether the main address answers `/metrics`: only when there is no
/// metrics listener of its own, the TCP peer is a loopback address that
/// `COUNTERSIGN_TRUSTED_PROXIES` does not name, and the request was not
/// forwarded by a proxy. The peer is the real socket's
/// (`extract::peer_ip`), never `X-Forwarded-For`: a header can only take
/// the right away (a proxy on this host forwarding a stranger), never
/// grant it (a stranger writing `X-Forwarded-For: 127.0.0.1`, or a trusted
/// proxy elsewhere passing it on). A proxy on this host that adds no
/// forwarding header looks like a local scraper; naming it a trusted proxy
/// is what tells them apart (docs/operations.md, "Metrics behind a
/// proxy").
pub fn main_address_serves(
    own_listener: bool,
    peer: Option<IpAddr>,
    forwarded: bool,
    proxies: &crate::config::TrustedProxies,
) -> bool {
    !own_listener
        && !forwarded
        && peer.is_some_and(|ip| ip.to_canonical().is_loopback() && !proxies.contains(ip))
}

fn is_forwarded(headers: &HeaderMap) -> bool {
    FORWARDING_HEADERS
        .iter()
        .any(|name| headers.contains_key(*name))
}

/// `GET /metrics` on the main address: the scrape for a loopback peer,
/// 404 for anyone else (as if there were no such path).
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "health",
    responses(
        (status = 200, description = "This instance's metrics in the Prometheus text format (0.0.4), `text/plain; version=0.0.4`; each is named in docs/operations.md (\"Metrics to scrape\"). On the main address only for an unforwarded loopback peer, and not at all with `COUNTERSIGN_METRICS_BIND`, whose own listener serves it instead", content_type = "text/plain"),
        (status = 404, description = "Not for this peer: not loopback, forwarded by a proxy, or `COUNTERSIGN_METRICS_BIND` is set"),
    ),
)]
pub async fn get_metrics(
    State(state): State<AppState>,
    extensions: Extensions,
    headers: HeaderMap,
) -> Response {
    let peer = super::extract::peer_ip(&extensions);
    if !main_address_serves(
        state.config.metrics_bind.is_some(),
        peer,
        is_forwarded(&headers),
        &state.config.trusted_proxies,
    ) {
        return StatusCode::NOT_FOUND.into_response();
    }
    scrape(&state).await
}

/// `GET /metrics` on the metrics listener.
async fn get_metrics_own_listener(State(state): State<AppState>) -> Response {
    scrape(&state).await
}

/// How long a scrape waits for the pending-approvals count before it
/// answers without it (a scrape must not hang on a busy pool).
const PENDING_COUNT_TIMEOUT: Duration = Duration::from_secs(2);

async fn scrape(state: &AppState) -> Response {
    // The pool is read before the count borrows a connection of its own.
    let (pool_open, pool_idle) = (state.db.size(), state.db.num_idle());
    let counted = tokio::time::timeout(
        PENDING_COUNT_TIMEOUT,
        crate::approvals::pending_count(&state.db),
    )
    .await;
    let pending_approvals = match counted {
        Ok(Ok(count)) => Some(count),
        Ok(Err(err)) => {
            tracing::warn!(error = %err, "metrics: cannot count pending approvals");
            None
        }
        Err(_) => {
            tracing::warn!("metrics: counting pending approvals timed out");
            None
        }
    };
    let now = crate::metrics::Now {
        pool_open,
        pool_idle,
        pending_approvals,
    };
    let text = crate::metrics::render(&state.metrics, now);
    (
        [
            (header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE),
            (header::CACHE_CONTROL, "no-store"),
        ],
        text,
    )
        .into_response()
}

/// Serves `/metrics` alone on `listener` (`COUNTERSIGN_METRICS_BIND`) until
/// `shutdown` resolves. Every other path is 404.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(get_metrics_own_listener))
        .with_state(state);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn only_an_unforwarded_loopback_peer_reads_metrics_on_the_main_address() {
        let v4_loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let v6_loopback = IpAddr::V6(Ipv6Addr::LOCALHOST);
        let mapped_loopback = IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped());
        let private = "10.0.0.7".parse().expect("address");
        let public = "203.0.113.9".parse().expect("address");
        let mapped_public = IpAddr::V6(Ipv4Addr::new(203, 0, 113, 9).to_ipv6_mapped());
        // (own listener, peer, forwarded, served, why)
        let cases = [
            (false, Some(v4_loopback), false, true, "127.0.0.1"),
            (
                false,
                Some(IpAddr::V4(Ipv4Addr::new(127, 8, 0, 1))),
                false,
                true,
                "all of 127/8",
            ),
            (false, Some(v6_loopback), false, true, "::1"),
            (
                false,
                Some(mapped_loopback),
                false,
                true,
                "::ffff:127.0.0.1 is loopback",
            ),
            (
                false,
                Some(private),
                false,
                false,
                "a private peer is not this host",
            ),
            (false, Some(public), false, false, "a public peer"),
            (
                false,
                Some(mapped_public),
                false,
                false,
                "a mapped public peer",
            ),
            (false, None, false, false, "no connect info: nobody known"),
            (
                false,
                Some(private),
                true,
                false,
                "a trusted proxy elsewhere, whatever X-Forwarded-For says",
            ),
            (
                false,
                Some(v4_loopback),
                true,
                false,
                "a proxy on this host forwarding someone",
            ),
            (
                true,
                Some(v4_loopback),
                false,
                false,
                "the metrics listener serves it instead",
            ),
        ];
        let none = crate::config::TrustedProxies::default();
        for (own, peer, forwarded, served, why) in cases {
            assert_eq!(
                main_address_serves(own, peer, forwarded, &none),
                served,
                "{why}"
            );
        }
    }

    /// A proxy on this host that adds no forwarding header (issue 44,
    /// item 9): named a trusted proxy, its loopback address is no local
    /// scraper. Seen to fail before the proxies were consulted.
    #[test]
    fn a_loopback_peer_named_a_trusted_proxy_is_not_served() {
        let proxies: crate::config::TrustedProxies = "127.0.0.1,::1".parse().expect("proxies");
        for peer in [
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
            "::ffff:127.0.0.1".parse().expect("mapped"),
        ] {
            assert!(
                !main_address_serves(false, Some(peer), false, &proxies),
                "{peer}"
            );
        }
        // Another loopback address, not named, is still a local scraper.
        let other = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
        assert!(main_address_serves(false, Some(other), false, &proxies));
    }

    #[test]
    fn any_proxy_header_marks_a_request_forwarded() {
        for name in FORWARDING_HEADERS {
            let mut headers = HeaderMap::new();
            headers.insert(name, "127.0.0.1".parse().expect("value"));
            assert!(is_forwarded(&headers), "{name}");
        }
        assert!(!is_forwarded(&HeaderMap::new()), "a direct request");
    }
}
