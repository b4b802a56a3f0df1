//! The client: [`guarded_client`], the only `reqwest::Client` that talks to
//! connectors.
//!
//! What it owns: [`GuardedResolver`] (hands reqwest only addresses it
//! checked for that very connection, so DNS rebinding after [`super::check`]
//! is caught), the connector layer that re-applies the scheme, port and
//! literal-IP rules (reqwest never resolves IP literals) and tells the
//! resolver which port and scheme it resolves for, no redirects, no proxy,
//! and the connect timeout.
//!
//! What it deliberately does not do: time out whole requests (MCP streams
//! are long; per-request timeouts belong to the MCP client) or decide what a
//! 3xx means.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::net::SocketAddr;

use super::allow_list::{AllowList, name_key};
use super::resolve::{HostResolver, resolve_name, vet};
use super::syntax::{Host, Scheme, check_port};
use super::{CONNECT_TIMEOUT, SsrfError};

/// The connection being opened, as the connector layer saw it; read by
/// [`GuardedResolver`] so port-specific allow-list entries and the `http`
/// rule can be applied at resolution time.
#[derive(Debug, Clone)]
struct Destination {
    scheme: Scheme,
    host: Host,
    port: u16,
}

tokio::task_local! {
    static DESTINATION: Destination;
}

/// reqwest's resolver for the guarded client: resolves through `inner`,
/// refuses the lookup if any address is refused, and hands reqwest exactly
/// the addresses it checked (reqwest dials what the resolver returns and
/// resolves nothing else), so rebinding between lookups cannot slip through.
///
/// Inside a [`guarded_client`] it knows the connection's port and scheme.
/// Used anywhere else it does not, and then port-specific allow-list entries
/// do not apply and the `http` rule is left to [`check`](super::check).
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    inner: Arc<dyn HostResolver>,
    allow: AllowList,
}

impl GuardedResolver {
    /// Guards `inner` with `allow`.
    pub fn new(inner: Arc<dyn HostResolver>, allow: AllowList) -> Self {
        Self { inner, allow }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let inner = Arc::clone(&self.inner);
        let allow = self.allow.clone();
        let name = name.as_str().to_owned();
        let destination = DESTINATION.try_with(Destination::clone).ok();
        Box::pin(async move {
            let (port, scheme) = match destination {
                Some(d) if matches!(&d.host, Host::Domain(h) if name_key(h) == name_key(&name)) => {
                    (Some(d.port), d.scheme)
                }
                _ => (None, Scheme::Https),
            };
            let ips = match Host::from_normalized(&name)? {
                // Not reached through reqwest (it dials literals itself),
                // but a literal is vetted like any other address.
                host @ Host::Ip(ip) => {
                    vet(&host, port, scheme, &[ip], &allow)?;
                    vec![ip]
                }
                Host::Domain(name) => resolve_name(&*inner, &name, port, scheme, &allow).await?,
            };
            // Port 0 tells reqwest to use the URL's port.
            let port = port.unwrap_or(0);
            let addrs: Addrs = Box::new(ips.into_iter().map(move |ip| SocketAddr::new(ip, port)));
            Ok(addrs)
        })
    }
}

/// Builds the client for connectors from `builder` (user agent, TLS and the
/// like): the guarded resolver, a connector layer that re-applies the scheme,
/// port and literal-IP rules to every connection, no redirects (a 3xx comes
/// back as the response; the MCP client treats it as an error), no proxy
/// (a proxy resolves names itself, out of the guard's sight), and
/// [`CONNECT_TIMEOUT`].
///
/// reqwest's `https_only` cannot be per destination, so the https rule lives
/// in [`check`](super::check) and in the connector layer.
pub fn guarded_client(
    builder: reqwest::ClientBuilder,
    resolver: Arc<dyn HostResolver>,
    allow: AllowList,
) -> reqwest::Result<reqwest::Client> {
    builder
        .dns_resolver(GuardedResolver::new(resolver, allow.clone()))
        .connector_layer(GuardLayer { allow })
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The connector layer of [`guarded_client`].
#[derive(Debug, Clone)]
struct GuardLayer {
    allow: AllowList,
}

impl<S> tower::Layer<S> for GuardLayer {
    type Service = GuardService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        GuardService {
            inner,
            allow: self.allow.clone(),
        }
    }
}

#[derive(Debug, Clone)]
struct GuardService<S> {
    inner: S,
    allow: AllowList,
}

impl<S, R> tower::Service<R> for GuardService<S>
where
    R: fmt::Debug,
    S: tower::Service<R, Error = BoxError> + Clone + Send + 'static,
    S::Response: Send + 'static,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        // reqwest's connector request type is unnameable; its Debug output
        // is the only view of the destination URI. Anything unreadable is
        // refused.
        let destination = match connection_destination(&format!("{request:?}"))
            .and_then(|d| vet_destination(&d, &self.allow).map(|()| d))
        {
            Ok(d) => d,
            Err(e) => return Box::pin(std::future::ready(Err(e.into()))),
        };
        // The standard tower dance: use the service that was polled ready.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let future = DESTINATION.sync_scope(destination.clone(), || inner.call(request));
        Box::pin(DESTINATION.scope(destination, future))
    }
}

/// Reads the destination from the Debug form of reqwest's connector request:
/// `Unnameable(https://host:port/)`.
fn connection_destination(debug: &str) -> Result<Destination, SsrfError> {
    let uri = debug
        .strip_prefix("Unnameable(")
        .and_then(|rest| rest.strip_suffix(')'))
        .ok_or(SsrfError::UnknownDestination)?;
    let url = Url::parse(uri).map_err(|_| SsrfError::UnknownDestination)?;
    let scheme = Scheme::parse(url.scheme())?;
    let host = Host::from_normalized(url.host_str().ok_or(SsrfError::UnknownDestination)?)?;
    let port = url
        .port_or_known_default()
        .ok_or(SsrfError::UnknownDestination)?;
    Ok(Destination { scheme, host, port })
}

/// What the connector layer can decide before resolution: the port, IP
/// literals (which reqwest never resolves), and `http` with nothing
/// allow-listed.
fn vet_destination(d: &Destination, allow: &AllowList) -> Result<(), SsrfError> {
    check_port(d.port)?;
    match d.host {
        Host::Ip(ip) => vet(&d.host, Some(d.port), d.scheme, &[ip], allow),
        Host::Domain(_) if d.scheme == Scheme::Http && allow.is_empty() => {
            Err(SsrfError::HttpNotAllowed)
        }
        Host::Domain(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    use crate::ssrf::{Host, Scheme};

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("a test address")
    }

    #[test]
    fn the_connector_request_debug_form_yields_the_destination() {
        let d = connection_destination("Unnameable(https://example.com/)").expect("https");
        assert_eq!(
            (d.scheme, d.host, d.port),
            (Scheme::Https, Host::Domain("example.com".into()), 443)
        );
        let d = connection_destination("Unnameable(http://[::1]:8080/)").expect("v6");
        assert_eq!(
            (d.scheme, d.host, d.port),
            (Scheme::Http, Host::Ip(ip("::1")), 8080)
        );
        for garbled in [
            "Unnameable { uri: https://example.com/ }",
            "https://example.com/",
            "Unnameable(not a uri)",
            "Unnameable(file:///etc/passwd)",
        ] {
            assert!(connection_destination(garbled).is_err(), "{garbled}");
        }
    }

    #[test]
    fn the_connector_layer_refuses_literals_ports_and_plain_http_on_its_own() {
        let none = AllowList::default();
        let dest = |s: &str| connection_destination(s).expect("readable");
        let refused = [
            "Unnameable(https://127.0.0.1/)",
            "Unnameable(https://[::ffff:a9fe:a9fe]/)",
            "Unnameable(https://93.184.216.34:25/)",
            "Unnameable(http://93.184.216.34/)",
            "Unnameable(http://example.com/)",
        ];
        for uri in refused {
            assert!(vet_destination(&dest(uri), &none).is_err(), "{uri}");
        }
        for uri in [
            "Unnameable(https://93.184.216.34/)",
            "Unnameable(https://example.com:8443/)",
        ] {
            assert!(vet_destination(&dest(uri), &none).is_ok(), "{uri}");
        }
    }
}
