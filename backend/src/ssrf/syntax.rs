//! Parsing a connector URL: the syntax rules, before any name is resolved.
//!
//! What it owns: [`parse_target`] (`https`, or `http` left for the
//! allow-list to decide; no userinfo; no percent-encoded host; IPv4 only as
//! four decimal numbers; no "bad port"), judged on the URL as typed as well
//! as on what the URL parser made of it, and the parsed pieces ([`Target`],
//! [`Scheme`], [`Host`]).
//!
//! What it deliberately does not do: resolve names or classify addresses
//! ([`super::resolve`], [`super::classify()`]). A [`Target`] is not yet safe to
//! connect to; only a [`super::GuardedTarget`] is.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use reqwest::Url;

use super::SsrfError;

/// `https`, or `http` for allow-listed destinations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `https`.
    Https,
    /// Plain `http`: only for allow-listed destinations.
    Http,
}

impl Scheme {
    pub(super) fn parse(scheme: &str) -> Result<Self, SsrfError> {
        match scheme.to_ascii_lowercase().as_str() {
            "https" => Ok(Self::Https),
            "http" => Ok(Self::Http),
            other => Err(SsrfError::SchemeNotAllowed {
                scheme: other.to_owned(),
            }),
        }
    }
}

/// A URL's host, as the URL parser normalized it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// A name: lowercase ASCII (IDNA-mapped), as it will be resolved.
    Domain(String),
    /// An IP literal.
    Ip(IpAddr),
}

impl Host {
    /// Reads a host as `Url::host_str` (or reqwest's resolver) writes it.
    pub(super) fn from_normalized(host: &str) -> Result<Self, SsrfError> {
        if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            return Ipv6Addr::from_str(inner)
                .map(|ip| Self::Ip(IpAddr::V6(ip)))
                .map_err(|_| SsrfError::InvalidUrl {
                    reason: "invalid IPv6 address".to_owned(),
                });
        }
        if let Ok(ip) = IpAddr::from_str(host) {
            return Ok(Self::Ip(ip));
        }
        if host.is_empty() {
            return Err(SsrfError::InvalidUrl {
                reason: "empty host".to_owned(),
            });
        }
        if ends_in_number(host) {
            return Err(SsrfError::NonCanonicalIpv4 {
                host: host.to_owned(),
            });
        }
        Ok(Self::Domain(host.to_ascii_lowercase()))
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Domain(name) => f.write_str(name),
            Self::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// A connector URL that passed the syntax rules, not yet resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The URL as reqwest will use it (fragment removed).
    pub url: Url,
    /// `https` or `http`; `http` is refused later unless allow-listed.
    pub scheme: Scheme,
    /// The host.
    pub host: Host,
    /// The port, explicit or the scheme's default.
    pub port: u16,
}

/// Applies the syntax rules to a connector URL: scheme `https` (or `http`,
/// decided after resolution by the allow-list), no userinfo, a host, a
/// usable port, IPv4 only as canonical dotted quads, no percent-encoded host.
/// A fragment is allowed and dropped.
pub fn parse_target(input: &str) -> Result<Target, SsrfError> {
    let input = input.trim();
    if input.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(SsrfError::InvalidUrl {
            reason: "it contains spaces or control characters".to_owned(),
        });
    }
    let raw = RawUrl::split(input)?;
    let scheme = Scheme::parse(raw.scheme)?;
    if raw.authority.contains('@') {
        return Err(SsrfError::Userinfo);
    }
    if raw.host.contains('%') {
        return Err(SsrfError::PercentEncodedHost);
    }
    // Numeric-looking hosts are judged on what was typed: the URL parser
    // would quietly turn `0x7f.1` into 127.0.0.1, or fail with a vague error.
    if ends_in_number(raw.host) && Ipv4Addr::from_str(raw.host).is_err() {
        return Err(SsrfError::NonCanonicalIpv4 {
            host: raw.host.to_owned(),
        });
    }
    let mut url = Url::parse(input).map_err(|e| SsrfError::InvalidUrl {
        reason: e.to_string(),
    })?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(SsrfError::Userinfo);
    }
    let host_str = url.host_str().ok_or(SsrfError::InvalidUrl {
        reason: "empty host".to_owned(),
    })?;
    let host = Host::from_normalized(host_str)?;
    // The parser also maps `127。0。0。1`, `①②⑦.0.0.1` and friends to an IPv4
    // address; only the canonical spelling is accepted.
    if matches!(host, Host::Ip(IpAddr::V4(_))) && raw.host != host_str {
        return Err(SsrfError::NonCanonicalIpv4 {
            host: raw.host.to_owned(),
        });
    }
    let port = url.port_or_known_default().ok_or(SsrfError::InvalidUrl {
        reason: "no port".to_owned(),
    })?;
    check_port(port)?;
    url.set_fragment(None);
    Ok(Target {
        url,
        scheme,
        host,
        port,
    })
}

/// The pieces of a URL as typed, before the URL parser normalizes them.
/// Only used to judge what was typed; the parsed URL is what gets used.
struct RawUrl<'a> {
    scheme: &'a str,
    authority: &'a str,
    host: &'a str,
}

impl<'a> RawUrl<'a> {
    fn split(input: &'a str) -> Result<Self, SsrfError> {
        let no_scheme = || SsrfError::InvalidUrl {
            reason: "it does not start with https://".to_owned(),
        };
        let (scheme, rest) = input.split_once(':').ok_or_else(no_scheme)?;
        let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if !scheme_ok {
            return Err(no_scheme());
        }
        // As the WHATWG parser does for http(s): any run of slashes or
        // backslashes, then the authority up to the next delimiter.
        let rest = rest.trim_start_matches(['/', '\\']);
        let authority = rest.split(['/', '\\', '?', '#']).next().unwrap_or_default();
        let host_port = authority.rsplit('@').next().unwrap_or_default();
        let host = if host_port.starts_with('[') {
            host_port
                .find(']')
                .map_or(host_port, |end| &host_port[..=end])
        } else {
            host_port.split(':').next().unwrap_or_default()
        };
        Ok(Self {
            scheme,
            authority,
            host,
        })
    }
}

/// The WHATWG URL standard's "ends in a number": such hosts are parsed as
/// IPv4 (in any of its legacy spellings) rather than as names.
pub(super) fn ends_in_number(host: &str) -> bool {
    let mut labels: Vec<&str> = host.split('.').collect();
    if labels.len() > 1 && labels.last() == Some(&"") {
        labels.pop();
    }
    let last = labels.last().copied().unwrap_or_default();
    if !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    last.strip_prefix("0x")
        .or_else(|| last.strip_prefix("0X"))
        .is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Ports the Fetch standard refuses ("bad port"), and port 0.
const BAD_PORTS: &[u16] = &[
    0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101,
    102, 103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427,
    465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990,
    993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667,
    6668, 6669, 6679, 6697, 10080,
];

pub(super) fn check_port(port: u16) -> Result<(), SsrfError> {
    if BAD_PORTS.contains(&port) {
        return Err(SsrfError::PortNotAllowed { port });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_in_number_follows_the_url_standard() {
        for host in [
            "0",
            "127.1",
            "1.2.3.4.",
            "0x7f",
            "0X7F.1",
            "example.0x",
            "a.b.123",
        ] {
            assert!(ends_in_number(host), "{host} ends in a number");
        }
        for host in ["example.com", "cafe", "0x7g", "1.2.3.com", "localhost.", ""] {
            assert!(!ends_in_number(host), "{host} does not end in a number");
        }
    }
}
