//! The allow-list: `COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS`, the only thing
//! that relaxes the guard's rules.
//!
//! What it owns: parsing and printing the setting ([`AllowList`], readable
//! as a `clap` value), matching a destination (name, address, port) against
//! its entries, and how host names compare (lowercase, no trailing dot).
//!
//! What it deliberately does not do: decide anything on its own. It answers
//! "is this destination listed?"; [`super::resolve`] applies the answer, and
//! only to two rules (non-public addresses, plain `http`). The syntax rules
//! in [`super::syntax`] apply to allow-listed destinations too.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, SocketAddrV4};
use std::str::FromStr;
use std::sync::Arc;

use sqlx::types::ipnet::IpNet;

use super::SsrfError;
use super::syntax::{Host, ends_in_number};

/// `COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS`: destinations that may be
/// non-public and may use plain `http`. Nothing else relaxes the rules: the
/// syntax rules (userinfo, bad ports, numeric spellings) still apply.
///
/// Comma-separated entries, each one of:
///
/// - a host name (`localhost`, `mcp-server`): that name, any port, whatever
///   it resolves to;
/// - a host name and port (`mcp-server:3100`);
/// - an address and port (`127.0.0.1:3100`, `[::1]:8080`): connections to
///   that address on that port, whatever name led there;
/// - an address or CIDR range (`127.0.0.1`, `127.0.0.0/8`, `::1/128`): any
///   port.
///
/// Empty (or `off`) allows nothing. Names match exactly (no wildcards,
/// trailing dot ignored); write internationalized names as `xn--…`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    entries: Arc<[AllowEntry]>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum AllowEntry {
    Name { name: String, port: Option<u16> },
    Net { net: IpNet, port: Option<u16> },
}

impl AllowList {
    /// Parses the setting's value; an error names the bad entry and why.
    pub fn parse(value: &str) -> Result<Self, SsrfError> {
        if value.trim().eq_ignore_ascii_case("off") {
            return Ok(Self::default());
        }
        let entries = value
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(AllowEntry::parse)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            entries: entries.into(),
        })
    }

    /// True when nothing is allowed (the default).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Does an entry name this host (and port)? `port: None` means the port
    /// is unknown, and then only entries without a port match.
    pub(super) fn permits_name(&self, host: &str, port: Option<u16>) -> bool {
        let key = name_key(host);
        self.entries.iter().any(|entry| match entry {
            AllowEntry::Name { name, port: p } => *name == key && port_matches(*p, port),
            AllowEntry::Net { .. } => false,
        })
    }

    /// May this destination (reached through `host`) be non-public / plain
    /// `http`?
    pub(super) fn permits(&self, host: &Host, addr: IpAddr, port: Option<u16>) -> bool {
        self.entries.iter().any(|entry| match entry {
            AllowEntry::Name { name, port: p } => {
                matches!(host, Host::Domain(d) if name_key(d) == *name) && port_matches(*p, port)
            }
            AllowEntry::Net { net, port: p } => net.contains(&addr) && port_matches(*p, port),
        })
    }
}

impl FromStr for AllowList {
    type Err = SsrfError;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        Self::parse(value)
    }
}

impl fmt::Display for AllowList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, entry) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match entry {
                AllowEntry::Name { name, port: None } => write!(f, "{name}")?,
                AllowEntry::Name {
                    name,
                    port: Some(p),
                } => write!(f, "{name}:{p}")?,
                AllowEntry::Net { net, port: Some(p) } => {
                    write!(f, "{}", SocketAddr::new(net.addr(), *p))?;
                }
                AllowEntry::Net { net, port: None } if net.prefix_len() == net.max_prefix_len() => {
                    write!(f, "{}", net.addr())?;
                }
                AllowEntry::Net { net, port: None } => write!(f, "{net}")?,
            }
        }
        Ok(())
    }
}

fn port_matches(entry: Option<u16>, actual: Option<u16>) -> bool {
    entry.is_none() || entry == actual
}

impl AllowEntry {
    fn parse(entry: &str) -> Result<Self, SsrfError> {
        let bad = |reason| SsrfError::InvalidAllowEntry {
            entry: entry.to_owned(),
            reason,
        };
        if entry.contains('*') {
            return Err(bad(
                "wildcards are not supported; list host names, host:port pairs or CIDR ranges",
            ));
        }
        if entry.contains("://") {
            return Err(bad("write a host, host:port or CIDR range, not a URL"));
        }
        if entry.contains('/') {
            let net = IpNet::from_str(entry)
                .map_err(|_| bad("not a CIDR range like 10.0.0.0/8 or fd00::/8"))?;
            return Ok(Self::Net {
                net: net.trunc(),
                port: None,
            });
        }
        if let Some(rest) = entry.strip_prefix('[') {
            let (ip, after) = rest
                .split_once(']')
                .ok_or_else(|| bad("an IPv6 address in brackets needs its closing ]"))?;
            let ip = Ipv6Addr::from_str(ip).map_err(|_| bad("not an IPv6 address"))?;
            let port = match after {
                "" => None,
                _ => {
                    let port = after
                        .strip_prefix(':')
                        .ok_or_else(|| bad("write [IPv6]:port, with a colon"))?;
                    Some(parse_port(port).map_err(bad)?)
                }
            };
            return Ok(Self::Net {
                net: IpNet::from(IpAddr::V6(ip)),
                port,
            });
        }
        if let Ok(ip) = IpAddr::from_str(entry) {
            return Ok(Self::Net {
                net: IpNet::from(ip),
                port: None,
            });
        }
        if let Ok(addr) = SocketAddrV4::from_str(entry) {
            if addr.port() == 0 {
                return Err(bad("port 0 is not a port"));
            }
            return Ok(Self::Net {
                net: IpNet::from(IpAddr::V4(*addr.ip())),
                port: Some(addr.port()),
            });
        }
        let (name, port) = match entry.rsplit_once(':') {
            Some((name, port)) => (name, Some(parse_port(port).map_err(bad)?)),
            None => (entry, None),
        };
        let name = name_key(name);
        if !name.is_ascii() {
            return Err(bad(
                "write internationalized names in their xn-- (punycode) form",
            ));
        }
        if ends_in_number(&name) {
            return Err(bad(
                "this looks like a numeric address; write IPv4 addresses as four decimal numbers",
            ));
        }
        let label_ok = |label: &str| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        if name.len() > 253 || !name.split('.').all(label_ok) {
            return Err(bad(
                "not a host name, host:port, IP address, [IPv6]:port or CIDR range",
            ));
        }
        Ok(Self::Name { name, port })
    }
}

fn parse_port(port: &str) -> Result<u16, &'static str> {
    let digits = !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit());
    match port.parse::<u16>() {
        Ok(0) => Err("port 0 is not a port"),
        Ok(port) if digits => Ok(port),
        _ => Err("the port must be a number from 1 to 65535"),
    }
}

/// A host name as compared: lowercase, without the trailing dot.
pub(super) fn name_key(host: &str) -> String {
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssrf::Host;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("a test address")
    }

    #[test]
    fn allow_list_entries_parse_and_print_back() {
        let allow = AllowList::parse(
            " localhost, mcp-server:3100,127.0.0.1:3100, [::1]:8080,10.1.2.3/8, ::1/128, 192.168.1.9 ,",
        )
        .expect("valid entries");
        assert_eq!(
            allow.to_string(),
            "localhost,mcp-server:3100,127.0.0.1:3100,[::1]:8080,10.0.0.0/8,::1,192.168.1.9"
        );
        assert!(AllowList::parse("").expect("empty").is_empty());
        assert!(AllowList::parse("off").expect("off").is_empty());
        assert!(AllowList::parse(" , ").expect("only commas").is_empty());
    }

    #[test]
    fn bad_allow_list_entries_are_refused_with_a_reason() {
        let cases: &[(&str, &str)] = &[
            ("*", "wildcards are not supported"),
            ("*.corp", "wildcards are not supported"),
            ("http://localhost:3000", "not a URL"),
            ("10.0.0.0/33", "not a CIDR range"),
            ("10.0.0/8", "not a CIDR range"),
            ("[::1", "closing ]"),
            ("[::1]:0", "port 0"),
            ("[::1]8080", "with a colon"),
            ("127.0.0.1:0", "port 0"),
            ("localhost:99999", "the port must be a number"),
            ("localhost:", "the port must be a number"),
            ("localhost:+80", "the port must be a number"),
            ("127.1", "numeric address"),
            ("0x7f000001", "numeric address"),
            ("0177.0.0.1", "numeric address"),
            ("bücher.example", "xn--"),
            ("under_score.example", "not a host name"),
            ("a..b", "not a host name"),
        ];
        for &(entry, reason) in cases {
            let err = AllowList::parse(entry).expect_err(entry);
            assert!(
                err.to_string().contains(reason),
                "{entry:?}: {err} should mention {reason:?}"
            );
        }
    }

    #[test]
    fn allow_list_entries_match_by_name_address_and_port() {
        let allow =
            AllowList::parse("mcp-server:3100,127.0.0.1:3100,10.0.0.0/8,localhost").expect("valid");
        let name = |n: &str| Host::Domain(n.to_owned());
        let lit = |a: &str| Host::Ip(ip(a));
        assert!(allow.permits(&name("mcp-server"), ip("172.18.0.2"), Some(3100)));
        assert!(allow.permits(&name("MCP-Server."), ip("172.18.0.2"), Some(3100)));
        assert!(!allow.permits(&name("mcp-server"), ip("172.18.0.2"), Some(3101)));
        assert!(!allow.permits(&name("mcp-server"), ip("172.18.0.2"), None));
        assert!(allow.permits(&lit("127.0.0.1"), ip("127.0.0.1"), Some(3100)));
        assert!(allow.permits(&name("other"), ip("127.0.0.1"), Some(3100)));
        assert!(!allow.permits(&lit("127.0.0.1"), ip("127.0.0.1"), Some(3101)));
        assert!(!allow.permits(&lit("127.0.0.2"), ip("127.0.0.2"), Some(3100)));
        assert!(allow.permits(&lit("10.9.9.9"), ip("10.9.9.9"), None));
        assert!(allow.permits(&name("localhost"), ip("::1"), Some(9)));
        assert!(!allow.permits(&name("localhost.example"), ip("::1"), Some(9)));
        assert!(!allow.permits(&lit("::ffff:127.0.0.1"), ip("::ffff:127.0.0.1"), Some(3100)));
    }

    #[test]
    fn the_allow_list_reads_as_a_clap_setting() {
        #[derive(Debug, clap::Parser)]
        struct Settings {
            #[arg(long, default_value = "")]
            allow_private_connectors: AllowList,
        }
        use clap::Parser as _;

        let default = Settings::try_parse_from(["countersign"]).expect("the default");
        let set = Settings::try_parse_from([
            "countersign",
            "--allow-private-connectors",
            "127.0.0.1:3100,localhost",
        ])
        .expect("a valid value");
        let bad = Settings::try_parse_from(["countersign", "--allow-private-connectors", "*"]);

        assert!(default.allow_private_connectors.is_empty());
        assert_eq!(
            set.allow_private_connectors.to_string(),
            "127.0.0.1:3100,localhost"
        );
        assert!(bad.is_err());
    }
}
