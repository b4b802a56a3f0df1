//! Address classes: which IP addresses are public.
//!
//! What it owns: [`classify`], the IANA special-purpose tables it reads
//! (most specific first, so the first match names the class), the IPv6 forms
//! that carry an IPv4 address, and the words a refusal uses
//! ([`AddressClass`], [`Refusal`]).
//!
//! What it deliberately does not do: consult the allow-list (an allow-listed
//! address is still classified as what it is; [`super::resolve`] decides
//! whether that matters), resolve names, or parse URLs.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use sqlx::types::ipnet::{Ipv4Net, Ipv6Net};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssrf::SsrfError;

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
             connect to private networks. If this server should be reachable, ask your \
             administrator to allow it."
        );
    }
}
