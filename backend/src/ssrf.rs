//! The SSRF guard for connector URLs (DESIGN §8): users type a URL, the
//! server connects to it, so the URL must not be a way into the server's own
//! network (loopback services, the cloud metadata endpoint, the database, the
//! office LAN).
//!
//! What it owns:
//!
//! - [`parse_target`]: the syntax rules. `https` only (plain `http` only for
//!   allow-listed destinations), no `user:pass@`, no port on the Fetch
//!   standard's "bad port" list, and IPv4 hosts only in canonical dotted-quad
//!   form: `2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`, `127。0。0。1` are
//!   refused, never interpreted.
//! - [`classify`]: which IP addresses are public. Everything else is refused
//!   with its class named (loopback, private, link-local, CGNAT, metadata,
//!   documentation, IPv4-embedding IPv6 forms, …).
//! - [`AllowList`]: `COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS`, the only thing
//!   that relaxes the rules, and only two of them: an allow-listed
//!   destination may be non-public and may use plain `http`.
//! - [`check`]: the pre-flight for the add-connector form, and the only
//!   constructor of [`GuardedTarget`].
//! - [`guarded_client`]: the only way to build the `reqwest::Client` that
//!   talks to connectors. Its resolver ([`GuardedResolver`]) classifies every
//!   address it hands to reqwest, so reqwest connects exactly to addresses
//!   that were checked for that very connection (DNS rebinding between
//!   [`check`] and connect is caught there), redirects are never followed,
//!   and no proxy from the environment is used (a proxy would resolve the
//!   name itself, out of the guard's sight).
//!
//! What it deliberately does not do: decide what a 3xx means (the MCP client
//! turns it into an error), time out whole requests (MCP streams are long;
//! per-request timeouts belong to the MCP client), or know about HTTP status
//! codes.
//!
//! # Architecture invariant
//!
//! **Every connection to a connector goes through [`check`] and a client from
//! [`guarded_client`].** Callers hold a [`GuardedTarget`] (only [`check`]
//! makes one) and send requests to [`GuardedTarget::url`] with the guarded
//! client. That includes every URL a server hands back (an SSE `endpoint`
//! event, OAuth metadata): each is checked before it is used.
//!
//! Why both: reqwest does not call the resolver for IP-literal hosts, so the
//! resolver alone cannot see `https://127.0.0.1/`; and [`check`] alone cannot
//! see what DNS answers at connect time. As a second line, the client also
//! carries a connector layer that re-applies the scheme, port and literal-IP
//! rules to every connection it opens, and tells the resolver the port and
//! scheme of the connection it is resolving for (allow-list entries can be
//! port-specific).
//!
//! The builder handed to [`guarded_client`] must not carry `resolve` /
//! `resolve_to_addrs` overrides: reqwest applies those on top of any
//! resolver, out of the guard's sight.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4};
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use sqlx::types::ipnet::{IpNet, Ipv4Net, Ipv6Net};

/// The environment variable that lists allowed non-public destinations.
pub const ALLOW_ENV: &str = "COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS";

/// How long [`guarded_client`] waits for a TCP + TLS connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What an administrator can do about a refusal; ends every refusal message.
const ALLOW_HINT: &str = "Countersign does not connect to private networks. \
     An administrator can allow it with COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS.";

/// Why a connector URL or destination was refused. The messages are meant
/// for the user who typed the URL: they say why, and name at most the host
/// and the address.
#[derive(Debug, thiserror::Error)]
pub enum SsrfError {
    /// Not a URL at all, or one the URL parser rejects.
    #[error(
        "this is not a valid connector URL ({reason}); write it like https://mcp.example.com/mcp"
    )]
    InvalidUrl {
        /// What is wrong, in the URL parser's words.
        reason: String,
    },
    /// A scheme other than `https` and `http`.
    #[error("connector URLs must use https (not {scheme}:)")]
    SchemeNotAllowed {
        /// The scheme as written, lowercased.
        scheme: String,
    },
    /// Plain `http` to a destination that is not allow-listed.
    #[error(
        "connector URLs must use https; plain http is only for destinations an administrator \
         allows with COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS"
    )]
    HttpNotAllowed,
    /// `user:pass@` in the URL.
    #[error(
        "connector URLs must not contain a user name or password; \
         use the connector's authentication settings instead"
    )]
    Userinfo,
    /// A percent-encoded host name.
    #[error("connector host names must be written plainly, without %-encoding")]
    PercentEncodedHost,
    /// An IPv4 address in a spelling other than four decimal numbers.
    #[error(
        "{host} looks like an IP address written in a non-standard form; \
         write IPv4 addresses as four decimal numbers (like 203.0.113.7)"
    )]
    NonCanonicalIpv4 {
        /// The host as written.
        host: String,
    },
    /// Port 0, or a port that browsers refuse too (the Fetch standard's "bad
    /// ports": SMTP, SSH, IRC, …), so a connector cannot be aimed at a mail
    /// server.
    #[error("port {port} is not allowed for connectors")]
    PortNotAllowed {
        /// The refused port.
        port: u16,
    },
    /// A name that is local by definition (`localhost`, `*.localhost`) or a
    /// cloud metadata name.
    #[error("{host} is a local or cloud-metadata host name: {ALLOW_HINT}")]
    LocalName {
        /// The host as parsed.
        host: String,
    },
    /// An IP-literal host that is not public.
    #[error("{addr} is {refusal}: {ALLOW_HINT}")]
    RefusedAddress {
        /// The address.
        addr: IpAddr,
        /// Why it is not public.
        refusal: Refusal,
    },
    /// A name that resolves to a non-public address (one is enough).
    #[error("{host} resolves to {addr}, {refusal}: {ALLOW_HINT}")]
    RefusedName {
        /// The host as parsed.
        host: String,
        /// The first refused address it resolved to.
        addr: IpAddr,
        /// Why that address is not public.
        refusal: Refusal,
    },
    /// The name did not resolve. The resolver's own error is kept as the
    /// source for logs and left out of the message.
    #[error("could not resolve {host}")]
    Unresolvable {
        /// The host as parsed.
        host: String,
        /// What the resolver said.
        #[source]
        source: io::Error,
    },
    /// The name resolved to nothing.
    #[error("{host} does not resolve to any address")]
    NoAddresses {
        /// The host as parsed.
        host: String,
    },
    /// A connection whose destination the guard could not read. Only the
    /// connector layer of [`guarded_client`] returns it; it fails closed.
    #[error("refused a connection whose destination could not be determined")]
    UnknownDestination,
    /// A bad `COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS` entry.
    #[error("COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS: {entry:?} is not allowed: {reason}")]
    InvalidAllowEntry {
        /// The entry as written.
        entry: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl SsrfError {
    /// The address refusal inside, if this is one.
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            Self::RefusedAddress { refusal, .. } | Self::RefusedName { refusal, .. } => {
                Some(*refusal)
            }
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------
// Address classes

/// A kind of non-public address. Each is refused unless allow-listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddressClass {
    /// `0.0.0.0`, `::`.
    Unspecified,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// RFC 1918: `10/8`, `172.16/12`, `192.168/16`.
    Private,
    /// `169.254/16`, `fe80::/10`.
    LinkLocal,
    /// Carrier-grade NAT shared space, `100.64/10`.
    SharedCgnat,
    /// `224/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// `0/8`, `240/4`, and IPv6 outside the global-unicast `2000::/3`
    /// (including SRv6 SIDs, `5f00::/16`).
    Reserved,
    /// `192.0.2/24`, `198.51.100/24`, `203.0.113/24`, `2001:db8::/32`,
    /// `3fff::/20`.
    Documentation,
    /// `198.18/15`, `2001:2::/48`.
    Benchmarking,
    /// `192.0.0/24` and `2001::/23` (protocol assignments: PCP/TURN anycast,
    /// NAT64 discovery, AMT, …).
    IetfProtocolAssignment,
    /// `192.88.99/24` (deprecated 6to4 relays).
    SixToFourRelayAnycast,
    /// Instance metadata services: `169.254.169.254`, `169.254.170.2` (ECS),
    /// `fd00:ec2::254` (AWS), `100.100.100.200` (Alibaba), `168.63.129.16`
    /// (Azure WireServer, a public address that only answers inside Azure).
    CloudMetadata,
    /// `fc00::/7`.
    UniqueLocal,
    /// `fec0::/10` (deprecated).
    SiteLocal,
    /// `::ffff:0:0/96`.
    Ipv4Mapped,
    /// `::/96` (deprecated).
    Ipv4Compatible,
    /// `::ffff:0:0:0/96` (SIIT).
    Ipv4Translated,
    /// `64:ff9b::/96` and the local-use `64:ff9b:1::/48`.
    Nat64,
    /// `2002::/16`.
    SixToFour,
    /// `2001::/32`.
    Teredo,
    /// `2001:10::/28`, `2001:20::/28`.
    Orchid,
    /// `100::/64`.
    DiscardOnly,
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Unspecified => "the unspecified address",
            Self::Loopback => "a loopback address",
            Self::Private => "a private address",
            Self::LinkLocal => "a link-local address",
            Self::SharedCgnat => "a carrier-grade NAT (shared) address",
            Self::Multicast => "a multicast address",
            Self::Broadcast => "the broadcast address",
            Self::Reserved => "a reserved address",
            Self::Documentation => "a documentation address",
            Self::Benchmarking => "a benchmarking address",
            Self::IetfProtocolAssignment => "an IETF protocol-assignment address",
            Self::SixToFourRelayAnycast => "a 6to4 relay anycast address",
            Self::CloudMetadata => "a cloud metadata address",
            Self::UniqueLocal => "a unique-local (private IPv6) address",
            Self::SiteLocal => "a site-local address",
            Self::Ipv4Mapped => "an IPv4-mapped IPv6 address",
            Self::Ipv4Compatible => "an IPv4-compatible IPv6 address",
            Self::Ipv4Translated => "an IPv4-translated IPv6 address",
            Self::Nat64 => "a NAT64 address",
            Self::SixToFour => "a 6to4 address",
            Self::Teredo => "a Teredo address",
            Self::Orchid => "an ORCHID address",
            Self::DiscardOnly => "a discard-only address",
        })
    }
}

/// Why an address is not public.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The address's class.
    pub class: AddressClass,
    /// For IPv6 forms that carry an IPv4 address: that address and its own
    /// class (`None` when the embedded address is public; the form is
    /// refused anyway).
    pub embedded: Option<(Ipv4Addr, Option<AddressClass>)>,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.class)?;
        match self.embedded {
            Some((v4, Some(class))) => write!(f, " (it embeds {v4}, {class})"),
            Some((v4, None)) => write!(f, " (it embeds {v4})"),
            None => Ok(()),
        }
    }
}

impl From<AddressClass> for Refusal {
    fn from(class: AddressClass) -> Self {
        Self {
            class,
            embedded: None,
        }
    }
}

const fn v4(a: u8, b: u8, c: u8, d: u8, prefix: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), prefix)
}

#[expect(
    clippy::too_many_arguments,
    reason = "mirrors Ipv6Addr::new: eight segments, then the prefix"
)]
const fn v6(a: u16, b: u16, c: u16, d: u16, e: u16, f: u16, g: u16, h: u16, p: u8) -> Ipv6Net {
    Ipv6Net::new_assert(Ipv6Addr::new(a, b, c, d, e, f, g, h), p)
}

/// Non-public IPv4 ranges, most specific first (the first match names the
/// class). IANA's special-purpose registry, plus metadata services.
const V4_RANGES: &[(Ipv4Net, AddressClass)] = {
    use AddressClass::*;
    &[
        (v4(255, 255, 255, 255, 32), Broadcast),
        (v4(169, 254, 169, 254, 32), CloudMetadata),
        (v4(169, 254, 170, 2, 32), CloudMetadata),
        (v4(100, 100, 100, 200, 32), CloudMetadata),
        (v4(168, 63, 129, 16, 32), CloudMetadata),
        (v4(0, 0, 0, 0, 32), Unspecified),
        (v4(0, 0, 0, 0, 8), Reserved),
        (v4(10, 0, 0, 0, 8), Private),
        (v4(100, 64, 0, 0, 10), SharedCgnat),
        (v4(127, 0, 0, 0, 8), Loopback),
        (v4(169, 254, 0, 0, 16), LinkLocal),
        (v4(172, 16, 0, 0, 12), Private),
        (v4(192, 0, 0, 0, 24), IetfProtocolAssignment),
        (v4(192, 0, 2, 0, 24), Documentation),
        (v4(192, 88, 99, 0, 24), SixToFourRelayAnycast),
        (v4(192, 168, 0, 0, 16), Private),
        (v4(198, 18, 0, 0, 15), Benchmarking),
        (v4(198, 51, 100, 0, 24), Documentation),
        (v4(203, 0, 113, 0, 24), Documentation),
        (v4(224, 0, 0, 0, 4), Multicast),
        (v4(240, 0, 0, 0, 4), Reserved),
    ]
};

/// Exact IPv6 addresses, checked first (`::` and `::1` sit inside the
/// IPv4-compatible `::/96`, and the AWS metadata address inside `fc00::/7`).
const V6_EXACT: &[(Ipv6Addr, AddressClass)] = &[
    (Ipv6Addr::UNSPECIFIED, AddressClass::Unspecified),
    (Ipv6Addr::LOCALHOST, AddressClass::Loopback),
    (
        Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254),
        AddressClass::CloudMetadata,
    ),
];

/// Where an IPv6 form carries its IPv4 address.
#[derive(Debug, Clone, Copy)]
enum Carries {
    /// The low 32 bits.
    Low32,
    /// Bits 16..48 (`2002:AABB:CCDD::` carries AA.BB.CC.DD).
    SixToFour,
    /// The low 32 bits inverted (the Teredo client).
    TeredoClient,
}

/// IPv6 forms that carry an IPv4 address: always refused (see [`classify`]).
const V6_EMBEDDING: &[(Ipv6Net, AddressClass, Carries)] = {
    use AddressClass::*;
    &[
        (
            v6(0, 0, 0, 0, 0, 0xffff, 0, 0, 96),
            Ipv4Mapped,
            Carries::Low32,
        ),
        (
            v6(0, 0, 0, 0, 0xffff, 0, 0, 0, 96),
            Ipv4Translated,
            Carries::Low32,
        ),
        (
            v6(0, 0, 0, 0, 0, 0, 0, 0, 96),
            Ipv4Compatible,
            Carries::Low32,
        ),
        (
            v6(0x64, 0xff9b, 0, 0, 0, 0, 0, 0, 96),
            Nat64,
            Carries::Low32,
        ),
        (
            v6(0x2002, 0, 0, 0, 0, 0, 0, 0, 16),
            SixToFour,
            Carries::SixToFour,
        ),
        (
            v6(0x2001, 0, 0, 0, 0, 0, 0, 0, 32),
            Teredo,
            Carries::TeredoClient,
        ),
    ]
};

/// Other non-public IPv6 ranges, most specific first. Anything outside the
/// global-unicast `2000::/3` that is not listed is [`AddressClass::Reserved`].
const V6_RANGES: &[(Ipv6Net, AddressClass)] = {
    use AddressClass::*;
    &[
        (v6(0x64, 0xff9b, 1, 0, 0, 0, 0, 0, 48), Nat64),
        (v6(0x100, 0, 0, 0, 0, 0, 0, 0, 64), DiscardOnly),
        (v6(0x2001, 0x2, 0, 0, 0, 0, 0, 0, 48), Benchmarking),
        (v6(0x2001, 0x10, 0, 0, 0, 0, 0, 0, 28), Orchid),
        (v6(0x2001, 0x20, 0, 0, 0, 0, 0, 0, 28), Orchid),
        (v6(0x2001, 0, 0, 0, 0, 0, 0, 0, 23), IetfProtocolAssignment),
        (v6(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0, 32), Documentation),
        (v6(0x3fff, 0, 0, 0, 0, 0, 0, 0, 20), Documentation),
        (v6(0xfc00, 0, 0, 0, 0, 0, 0, 0, 7), UniqueLocal),
        (v6(0xfe80, 0, 0, 0, 0, 0, 0, 0, 10), LinkLocal),
        (v6(0xfec0, 0, 0, 0, 0, 0, 0, 0, 10), SiteLocal),
        (v6(0xff00, 0, 0, 0, 0, 0, 0, 0, 8), Multicast),
    ]
};

/// IPv6 global unicast; everything outside is reserved or listed above.
const V6_GLOBAL_UNICAST: Ipv6Net = v6(0x2000, 0, 0, 0, 0, 0, 0, 0, 3);

/// Is `ip` a public address Countersign may connect to? If not, the
/// [`Refusal`] names its class.
///
/// IPv6 forms that carry an IPv4 address (IPv4-mapped, -compatible,
/// -translated, NAT64, 6to4, Teredo) are refused whatever they embed: the
/// embedded address is reported, but a public one does not make the form
/// acceptable. Mapped/compatible/translated forms reach the IPv4 address
/// through the host's own stack, and the tunnelling forms through a gateway
/// the guard knows nothing about; a real connector has a native address. An
/// IPv6-only deployment behind DNS64 can allow-list `64:ff9b::/96`.
pub fn classify(ip: IpAddr) -> Result<(), Refusal> {
    match ip {
        IpAddr::V4(ip) => match classify_v4(ip) {
            Some(class) => Err(class.into()),
            None => Ok(()),
        },
        IpAddr::V6(ip) => classify_v6(ip).map_or(Ok(()), Err),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<AddressClass> {
    V4_RANGES
        .iter()
        .find(|(net, _)| net.contains(&ip))
        .map(|&(_, class)| class)
}

fn classify_v6(ip: Ipv6Addr) -> Option<Refusal> {
    if let Some(&(_, class)) = V6_EXACT.iter().find(|(exact, _)| *exact == ip) {
        return Some(class.into());
    }
    if let Some(&(_, class, carries)) = V6_EMBEDDING.iter().find(|(net, ..)| net.contains(&ip)) {
        let bits = u128::from(ip);
        let v4 = Ipv4Addr::from(match carries {
            Carries::Low32 => bits as u32,
            Carries::SixToFour => (bits >> 80) as u32,
            Carries::TeredoClient => !(bits as u32),
        });
        return Some(Refusal {
            class,
            embedded: Some((v4, classify_v4(v4))),
        });
    }
    if let Some(&(_, class)) = V6_RANGES.iter().find(|(net, _)| net.contains(&ip)) {
        return Some(class.into());
    }
    if !V6_GLOBAL_UNICAST.contains(&ip) {
        return Some(AddressClass::Reserved.into());
    }
    None
}

// ---------------------------------------------------------------------------
// The allow-list

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
    fn permits_name(&self, host: &str, port: Option<u16>) -> bool {
        let key = name_key(host);
        self.entries.iter().any(|entry| match entry {
            AllowEntry::Name { name, port: p } => *name == key && port_matches(*p, port),
            AllowEntry::Net { .. } => false,
        })
    }

    /// May this destination (reached through `host`) be non-public / plain
    /// `http`?
    fn permits(&self, host: &Host, addr: IpAddr, port: Option<u16>) -> bool {
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
fn name_key(host: &str) -> String {
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

// ---------------------------------------------------------------------------
// Parsing a URL

/// `https`, or `http` for allow-listed destinations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `https`.
    Https,
    /// Plain `http`: only for allow-listed destinations.
    Http,
}

impl Scheme {
    fn parse(scheme: &str) -> Result<Self, SsrfError> {
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
    fn from_normalized(host: &str) -> Result<Self, SsrfError> {
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
fn ends_in_number(host: &str) -> bool {
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

fn check_port(port: u16) -> Result<(), SsrfError> {
    if BAD_PORTS.contains(&port) {
        return Err(SsrfError::PortNotAllowed { port });
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Resolving and vetting

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
async fn resolve_name(
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
fn vet(
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

// ---------------------------------------------------------------------------
// The client

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
/// do not apply and the `http` rule is left to [`check`].
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
/// in [`check`] and in the connector layer.
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

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("a test address")
    }

    #[test]
    fn every_non_public_class_is_named() {
        use AddressClass::*;
        let cases: &[(&str, AddressClass)] = &[
            ("0.0.0.0", Unspecified),
            ("0.255.0.1", Reserved),
            ("10.1.2.3", Private),
            ("100.64.0.0", SharedCgnat),
            ("100.127.255.255", SharedCgnat),
            ("100.100.100.200", CloudMetadata),
            ("127.0.0.1", Loopback),
            ("127.255.255.255", Loopback),
            ("169.254.1.1", LinkLocal),
            ("169.254.169.254", CloudMetadata),
            ("169.254.170.2", CloudMetadata),
            ("168.63.129.16", CloudMetadata),
            ("172.16.0.0", Private),
            ("172.31.255.255", Private),
            ("192.0.0.8", IetfProtocolAssignment),
            ("192.0.0.193", IetfProtocolAssignment),
            ("192.0.2.200", Documentation),
            ("192.88.99.1", SixToFourRelayAnycast),
            ("192.168.0.1", Private),
            ("198.18.0.0", Benchmarking),
            ("198.19.255.255", Benchmarking),
            ("198.51.100.1", Documentation),
            ("203.0.113.1", Documentation),
            ("224.0.0.251", Multicast),
            ("239.255.255.255", Multicast),
            ("240.0.0.1", Reserved),
            ("255.255.255.254", Reserved),
            ("255.255.255.255", Broadcast),
            ("::", Unspecified),
            ("::1", Loopback),
            ("::ffff:1.2.3.4", Ipv4Mapped),
            ("::ffff:0:1.2.3.4", Ipv4Translated),
            ("::1.2.3.4", Ipv4Compatible),
            ("64:ff9b::1.2.3.4", Nat64),
            ("64:ff9b:1::1", Nat64),
            ("100::1", DiscardOnly),
            ("2001::1", Teredo),
            ("2001:1::1", IetfProtocolAssignment),
            ("2001:2::1", Benchmarking),
            ("2001:3::1", IetfProtocolAssignment),
            ("2001:10::1", Orchid),
            ("2001:20::1", Orchid),
            ("2001:db8::1", Documentation),
            ("2002:0102:0304::1", SixToFour),
            ("3fff::1", Documentation),
            ("3fff:0fff::1", Documentation),
            ("5f00::1", Reserved),
            ("4000::1", Reserved),
            ("1::1", Reserved),
            ("fc00::1", UniqueLocal),
            ("fd00:ec2::254", CloudMetadata),
            ("fdff::1", UniqueLocal),
            ("fe80::1", LinkLocal),
            ("febf::1", LinkLocal),
            ("fec0::1", SiteLocal),
            ("ff02::1", Multicast),
        ];
        for &(addr, class) in cases {
            let refusal = classify(ip(addr)).expect_err(addr);
            assert_eq!(refusal.class, class, "{addr} should be {class}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for addr in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.0.1.255",
            "192.0.3.0",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "2606:2800:220:1::",
            "2001:4860:4860::8888",
            "2001:200::1",
            "3ffe::1",
            "3fff:1000::1",
        ] {
            assert_eq!(classify(ip(addr)), Ok(()), "{addr} is public");
        }
    }

    #[test]
    fn embedding_forms_report_the_embedded_address_and_its_class() {
        let cases: &[(&str, AddressClass, &str, Option<AddressClass>)] = &[
            (
                "::ffff:7f00:1",
                AddressClass::Ipv4Mapped,
                "127.0.0.1",
                Some(AddressClass::Loopback),
            ),
            (
                "64:ff9b::a9fe:a9fe",
                AddressClass::Nat64,
                "169.254.169.254",
                Some(AddressClass::CloudMetadata),
            ),
            (
                "2002:a9fe:a9fe::",
                AddressClass::SixToFour,
                "169.254.169.254",
                Some(AddressClass::CloudMetadata),
            ),
            (
                "2001:0:4136:e378:8000:63bf:80ff:fffe",
                AddressClass::Teredo,
                "127.0.0.1",
                Some(AddressClass::Loopback),
            ),
            (
                "::ffff:0:a00:1",
                AddressClass::Ipv4Translated,
                "10.0.0.1",
                Some(AddressClass::Private),
            ),
            (
                "::5db8:d822",
                AddressClass::Ipv4Compatible,
                "93.184.216.34",
                None,
            ),
        ];
        for &(addr, class, v4, inner) in cases {
            let refusal = classify(ip(addr)).expect_err(addr);
            assert_eq!(refusal.class, class, "{addr}");
            assert_eq!(
                refusal.embedded,
                Some((v4.parse().expect("v4"), inner)),
                "{addr}"
            );
        }
    }

    #[test]
    fn a_refusal_reads_as_a_sentence() {
        let refusal = classify(ip("::ffff:127.0.0.1")).expect_err("mapped");
        assert_eq!(
            refusal.to_string(),
            "an IPv4-mapped IPv6 address (it embeds 127.0.0.1, a loopback address)"
        );
        let err = SsrfError::RefusedName {
            host: "example.internal".into(),
            addr: ip("10.0.0.5"),
            refusal: classify(ip("10.0.0.5")).expect_err("private"),
        };
        assert_eq!(
            err.to_string(),
            "example.internal resolves to 10.0.0.5, a private address: Countersign does not \
             connect to private networks. An administrator can allow it with \
             COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS."
        );
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
