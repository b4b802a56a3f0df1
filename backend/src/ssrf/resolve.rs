//! Resolving and vetting: the address rules applied to what a name
//! resolves to, and [`check`], the pre-flight that makes a
//! [`GuardedTarget`].
//!
//! What it owns: the resolver seam ([`HostResolver`], [`SystemResolver`];
//! tests pass a stub so no test asks real DNS), names that are local by
//! definition, and `vet`: every address public or allow-listed, plain `http`
//! only when every address is allow-listed.
//!
//! What it deliberately does not do: build the HTTP client or see the
//! connection reqwest opens ([`super::client`] re-runs these rules at
//! connect time, through the same functions).

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;

use reqwest::Url;

use super::SsrfError;
use super::address_class::classify;
use super::allow_list::{AllowList, name_key};
use super::syntax::{Host, Scheme, Target, parse_target};

/// Resolves host names. Production uses [`SystemResolver`]; tests use a
/// stub, so no test ever asks real DNS.
pub trait HostResolver: Send + Sync + fmt::Debug {
    /// All addresses for `host` (a name, never an IP literal).
    fn lookup<'a>(&'a self, host: &'a str) -> Lookup<'a>;
}

/// The future a [`HostResolver`] returns.
pub type Lookup<'a> = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'a>>;

/// The operating system's resolver (`getaddrinfo`, through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl HostResolver for SystemResolver {
    fn lookup<'a>(&'a self, host: &'a str) -> Lookup<'a> {
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host, 0)).await?;
            Ok(addrs.map(|addr| addr.ip()).collect())
        })
    }
}

/// Names that are local by definition (RFC 6761) or that only ever mean a
/// cloud metadata service; refused before any lookup.
fn is_local_name(host: &str) -> bool {
    let key = name_key(host);
    key == "localhost"
        || key.ends_with(".localhost")
        || key == "metadata.google.internal"
        || key == "metadata.goog"
}

/// Resolves a name and vets every address. `port` is `None` when the
/// resolver does not know which connection it resolves for.
pub(super) async fn resolve_name(
    resolver: &dyn HostResolver,
    name: &str,
    port: Option<u16>,
    scheme: Scheme,
    allow: &AllowList,
) -> Result<Vec<IpAddr>, SsrfError> {
    if is_local_name(name) && !allow.permits_name(name, port) {
        return Err(SsrfError::LocalName {
            host: name.to_owned(),
        });
    }
    if scheme == Scheme::Http && allow.is_empty() {
        return Err(SsrfError::HttpNotAllowed);
    }
    let mut addrs = resolver
        .lookup(name)
        .await
        .map_err(|source| SsrfError::Unresolvable {
            host: name.to_owned(),
            source,
        })?;
    let mut seen = HashSet::new();
    addrs.retain(|ip| seen.insert(*ip));
    vet(&Host::Domain(name.to_owned()), port, scheme, &addrs, allow)?;
    Ok(addrs)
}

/// The address rules: every address must be public or allow-listed, and
/// plain `http` needs every address allow-listed.
pub(super) fn vet(
    host: &Host,
    port: Option<u16>,
    scheme: Scheme,
    addrs: &[IpAddr],
    allow: &AllowList,
) -> Result<(), SsrfError> {
    if addrs.is_empty() {
        return Err(SsrfError::NoAddresses {
            host: host.to_string(),
        });
    }
    for &addr in addrs {
        if allow.permits(host, addr, port) {
            continue;
        }
        if let Err(refusal) = classify(addr) {
            return Err(match host {
                Host::Ip(_) => SsrfError::RefusedAddress { addr, refusal },
                Host::Domain(name) => SsrfError::RefusedName {
                    host: name.clone(),
                    addr,
                    refusal,
                },
            });
        }
    }
    if scheme == Scheme::Http && !addrs.iter().all(|&a| allow.permits(host, a, port)) {
        return Err(SsrfError::HttpNotAllowed);
    }
    Ok(())
}

/// A connector URL that passed every rule, with the addresses it resolved
/// to at check time. Only [`check`] makes one; the MCP client takes one for
/// every URL it requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardedTarget {
    url: Url,
    scheme: Scheme,
    host: Host,
    port: u16,
    addrs: Vec<SocketAddr>,
}

impl GuardedTarget {
    /// The URL to request (fragment removed).
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// `https`, or `http` for an allow-listed destination.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The host.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The port, explicit or default.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The addresses checked (deduplicated, in resolver order). The client
    /// resolves again at connect time and checks those too, so a connection
    /// may go to another address of the same name, never an unchecked one.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }
}

/// The pre-flight: parses `url`, resolves its host through `resolver` (IP
/// literals are not resolved, only classified), and vets every address
/// against `allow`. Run it when a connector is added (so the user sees the
/// refusal then) and before every connection.
pub async fn check(
    url: &str,
    resolver: &dyn HostResolver,
    allow: &AllowList,
) -> Result<GuardedTarget, SsrfError> {
    let Target {
        url,
        scheme,
        host,
        port,
    } = parse_target(url)?;
    let ips = match &host {
        Host::Ip(ip) => {
            vet(&host, Some(port), scheme, &[*ip], allow)?;
            vec![*ip]
        }
        Host::Domain(name) => resolve_name(resolver, name, Some(port), scheme, allow).await?,
    };
    Ok(GuardedTarget {
        addrs: ips
            .into_iter()
            .map(|ip| SocketAddr::new(ip, port))
            .collect(),
        url,
        scheme,
        host,
        port,
    })
}
