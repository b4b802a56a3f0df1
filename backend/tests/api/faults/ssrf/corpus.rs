//! The generated corpus of hostile connector URLs (issue 15 item 6).
//!
//! Not a hand list: each group is a set of non-public addresses crossed
//! with the ways of writing them. Every URL carries the refusal the guard
//! must give it ([`Expect`]), and, where its address reaches one of the
//! counting listeners, that listener's port, so a URL that got past the
//! guard would really connect and be counted. The stub resolver's table
//! (names for non-public addresses, one public and one private address,
//! rebinding scripts) comes from here too.

use super::fixtures::{Listeners, PUBLIC_V4, PUBLIC_V6, Stub, ip};
use AddressClass::*;
use countersign::ssrf::{AddressClass, SsrfError};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

/// A group of the corpus: one row per group and surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    /// IPv4 addresses spelt as the URL standard's legacy parser reads
    /// them: one number, octal, hex, two or three parts, mixed, padded,
    /// trailing dot, fullwidth digits, ideographic dots.
    NumericSpellings,
    /// Non-public IPv4 in plain dotted-quad form, over https and http.
    DottedQuads,
    /// IPv6 literals, and IPv6 forms that carry an IPv4 address.
    Ipv6,
    /// `user@host`, backslash, `#`/`?`, encoded `@` tricks.
    Userinfo,
    /// `localhost`, `*.localhost`, metadata names, trailing dots, case.
    LocalNames,
    /// Names the stub resolves to non-public addresses, including one
    /// public and one private address.
    DnsNames,
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NumericSpellings => {
                "numeric IPv4 spellings (decimal, octal, hex, partial, mixed)"
            }
            Self::DottedQuads => "dotted-quad loopback/private/link-local/metadata/CGNAT",
            Self::Ipv6 => "IPv6 literals and IPv4 embeddings",
            Self::Userinfo => "userinfo and host-confusion tricks",
            Self::LocalNames => "local and metadata host names",
            Self::DnsNames => "DNS names resolving to non-public addresses",
        })
    }
}

/// The refusal a URL must get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// An address refusal of this class.
    Class(AddressClass),
    /// IPv4 in a non-canonical spelling.
    Numeric,
    /// A user name or password in the URL.
    Userinfo,
    /// A %-encoded host.
    Percent,
    /// `localhost` and friends, by name.
    LocalName,
    /// Not a usable URL.
    Invalid,
}

impl Expect {
    /// Does the guard's own error say this?
    pub fn is(self, err: &SsrfError) -> bool {
        match self {
            Self::Class(class) => err.refusal().is_some_and(|r| r.class == class),
            Self::Numeric => matches!(err, SsrfError::NonCanonicalIpv4 { .. }),
            Self::Userinfo => matches!(err, SsrfError::Userinfo),
            Self::Percent => matches!(err, SsrfError::PercentEncodedHost),
            Self::LocalName => matches!(err, SsrfError::LocalName { .. }),
            Self::Invalid => matches!(err, SsrfError::InvalidUrl { .. }),
        }
    }

    /// Does an API error's `detail` say this? The connector form refuses
    /// the URL's shape first (`connectors::parse_url`: unparseable,
    /// credentials), then the guard's refusal is the detail word for word.
    pub fn said_by(self, detail: &str) -> bool {
        match self {
            // "… is {class}:" or "… resolves to …, {class}:", possibly
            // with what an IPv6 form embeds.
            Self::Class(class) => {
                detail.contains(&format!("{class}:"))
                    || detail.contains(&format!("{class} (it embeds"))
            }
            Self::Numeric => detail.contains("looks like an IP address written in a non-standard"),
            Self::Userinfo => {
                detail.contains("must not contain a user name or password")
                    || detail.contains("Put credentials in the authentication settings")
            }
            Self::Percent => detail.contains("without %-encoding"),
            Self::LocalName => detail.contains("is a local or cloud-metadata host name"),
            Self::Invalid => {
                detail.contains("not a valid connector URL")
                    || detail.contains("Enter the server's full URL")
            }
        }
    }

    /// What the connector form answers for `url`, whose guard refusal is
    /// `self`: the form's own shape rules come first.
    pub fn at_the_form(self, url: &str) -> Self {
        match reqwest::Url::parse(url.trim()) {
            Err(_) => Self::Invalid,
            Ok(u) if !u.username().is_empty() || u.password().is_some() => Self::Userinfo,
            Ok(_) => self,
        }
    }
}

/// One hostile URL.
#[derive(Debug, Clone)]
pub struct Hostile {
    /// Its group.
    pub group: Group,
    /// The URL as a user (or a malicious server) writes it.
    pub url: String,
    /// The guard's refusal.
    pub expect: Expect,
}

/// A name that answers public at check time and `target` afterwards.
#[derive(Debug, Clone)]
pub struct Rebinding {
    /// The name.
    pub name: String,
    /// The URL (its port: the listener `target` reaches, if any).
    pub url: String,
    /// The class of the address it rebinds to.
    pub class: AddressClass,
}

/// The whole corpus.
#[derive(Debug)]
pub struct Corpus {
    /// The URLs, each tagged with its [`Group`].
    pub urls: Vec<Hostile>,
}

/// Non-public IPv4 addresses the corpus spells: loopback (three of them
/// with listeners), the unspecified address (it reaches loopback), RFC
/// 1918, link-local, the metadata services, CGNAT.
const V4_TARGETS: &[(&str, AddressClass)] = &[
    ("127.0.0.1", Loopback),
    ("127.0.0.2", Loopback),
    ("127.255.255.254", Loopback),
    ("0.0.0.0", Unspecified),
    ("10.0.0.1", Private),
    ("10.255.255.254", Private),
    ("172.16.0.1", Private),
    ("172.31.255.254", Private),
    ("192.168.0.1", Private),
    ("192.168.255.254", Private),
    ("169.254.169.254", CloudMetadata),
    ("169.254.170.2", CloudMetadata),
    ("169.254.0.1", LinkLocal),
    ("100.64.0.1", SharedCgnat),
    ("100.127.255.254", SharedCgnat),
    ("100.100.100.200", CloudMetadata),
];

/// Addresses the stub resolves corpus names to.
const NAME_TARGETS: &[(&str, AddressClass)] = &[
    ("127.0.0.1", Loopback),
    ("127.0.0.2", Loopback),
    ("127.255.255.254", Loopback),
    ("::1", Loopback),
    ("::ffff:127.0.0.1", Ipv4Mapped),
    ("0.0.0.0", Unspecified),
    ("::", Unspecified),
    ("10.0.0.1", Private),
    ("172.16.0.1", Private),
    ("192.168.0.1", Private),
    ("169.254.169.254", CloudMetadata),
    ("169.254.170.2", CloudMetadata),
    ("100.64.0.1", SharedCgnat),
    ("100.100.100.200", CloudMetadata),
    ("fd00:ec2::254", CloudMetadata),
    ("fc00::1", UniqueLocal),
    ("fe80::1", LinkLocal),
    ("64:ff9b::7f00:1", Nat64),
    ("2002:7f00:1::1", SixToFour),
    ("::127.0.0.1", Ipv4Compatible),
];

/// Addresses the rebinding names flip to after a public answer.
const REBIND_TARGETS: &[(&str, AddressClass)] = &[
    ("127.0.0.1", Loopback),
    ("127.0.0.2", Loopback),
    ("::1", Loopback),
    ("::ffff:127.0.0.1", Ipv4Mapped),
    ("0.0.0.0", Unspecified),
    ("169.254.169.254", CloudMetadata),
    ("10.0.0.1", Private),
    ("fd00:ec2::254", CloudMetadata),
];

/// `:port` for a URL at `addr` when it reaches a listener, else nothing
/// (the default port).
fn port_suffix(listeners: &Listeners, addr: IpAddr) -> String {
    listeners
        .port_for(addr)
        .map_or_else(String::new, |p| format!(":{p}"))
}

/// The legacy spellings of an IPv4 address the URL parser accepts (and
/// the guard must refuse, never interpret).
fn spellings(v4: Ipv4Addr) -> Vec<String> {
    let n = u32::from(v4);
    let [a, b, c, d] = v4.octets();
    let low24 = n & 0x00ff_ffff;
    let low16 = n & 0xffff;
    let fullwidth = |s: &str| -> String {
        s.chars()
            .map(|ch| match ch.to_digit(10) {
                Some(digit) => char::from_u32(0xff10 + digit).expect("a fullwidth digit"),
                None => ch,
            })
            .collect()
    };
    let dotted = format!("{a}.{b}.{c}.{d}");
    vec![
        format!("{n}"),
        format!("0x{n:x}"),
        format!("0X{n:08X}"),
        format!("0{n:o}"),
        format!("0x{n:016x}"),
        format!("0{a:o}.0{b:o}.0{c:o}.0{d:o}"),
        format!("0x{a:x}.0x{b:x}.0x{c:x}.0x{d:x}"),
        format!("{a}.{b}.{low16}"),
        format!("{a}.{low24}"),
        format!("0x{a:x}.{b}.0{c:o}.{d}"),
        format!("00{a:o}.00{b:o}.00{c:o}.00{d:o}"),
        format!("{dotted}."),
        format!("0x{a:x}.0x{low24:x}"),
        format!("0{a:o}.0x{b:x}.{low16}"),
        fullwidth(&dotted),
        dotted.replace('.', "\u{3002}"),
    ]
}

/// The IPv6 spellings that carry `v4`, with the class of each: mapped
/// (dotted and hex), translated, compatible (`::0.0.0.0` is `::` itself),
/// NAT64 (dotted and hex), 6to4.
fn embeddings(v4: Ipv4Addr) -> Vec<(String, AddressClass)> {
    let [a, b, c, d] = v4.octets();
    let hi = u16::from_be_bytes([a, b]);
    let lo = u16::from_be_bytes([c, d]);
    let compatible = if v4.is_unspecified() {
        Unspecified
    } else {
        Ipv4Compatible
    };
    vec![
        (format!("::ffff:{v4}"), Ipv4Mapped),
        (format!("::ffff:{hi:x}:{lo:x}"), Ipv4Mapped),
        (format!("::ffff:0:{v4}"), Ipv4Translated),
        (format!("::{v4}"), compatible),
        (format!("64:ff9b::{v4}"), Nat64),
        (format!("64:ff9b::{hi:x}:{lo:x}"), Nat64),
        (format!("2002:{hi:x}:{lo:x}::1"), SixToFour),
    ]
}

/// IPv6 literals that are non-public on their own.
const V6_LITERALS: &[(&str, AddressClass)] = &[
    ("::1", Loopback),
    ("0:0:0:0:0:0:0:1", Loopback),
    ("0000:0000:0000:0000:0000:0000:0000:0001", Loopback),
    ("::", Unspecified),
    ("fe80::1", LinkLocal),
    ("febf:ffff::1", LinkLocal),
    ("fc00::1", UniqueLocal),
    ("fd00::1", UniqueLocal),
    ("fdff:ffff:ffff::1", UniqueLocal),
    ("fd00:ec2::254", CloudMetadata),
    ("FD00:EC2:0:0:0:0:0:254", CloudMetadata),
    ("fec0::1", SiteLocal),
    ("ff02::1", Multicast),
    ("64:ff9b:1::a00:1", Nat64),
    ("100::1", DiscardOnly),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", Teredo),
];

impl Corpus {
    /// Generates the corpus aimed at `listeners`, and teaches `stub` its
    /// names.
    pub fn generate(listeners: &Listeners, stub: &Stub) -> Self {
        let mut urls = Vec::new();
        let mut push = |group, url: String, expect| urls.push(Hostile { group, url, expect });

        for &(target, class) in V4_TARGETS {
            let addr = ip(target);
            let IpAddr::V4(v4) = addr else { unreachable!() };
            let port = port_suffix(listeners, addr);
            for spelt in spellings(v4) {
                push(
                    Group::NumericSpellings,
                    format!("https://{spelt}{port}/mcp"),
                    Expect::Numeric,
                );
            }
            for scheme in ["https", "http"] {
                push(
                    Group::DottedQuads,
                    format!("{scheme}://{target}{port}/mcp"),
                    Expect::Class(class),
                );
            }
            for (form, class) in embeddings(v4) {
                let port = port_suffix(listeners, ip(&form));
                push(
                    Group::Ipv6,
                    format!("https://[{form}]{port}/mcp"),
                    Expect::Class(class),
                );
            }
        }
        for &(literal, class) in V6_LITERALS {
            let port = port_suffix(listeners, ip(literal));
            push(
                Group::Ipv6,
                format!("https://[{literal}]{port}/mcp"),
                Expect::Class(class),
            );
        }
        // A zone id is %-encoded in a URL, and not a host at all unencoded.
        push(
            Group::Ipv6,
            "https://[fe80::1%25lo]/mcp".to_owned(),
            Expect::Percent,
        );
        push(
            Group::Ipv6,
            "https://[fe80::1%lo]/mcp".to_owned(),
            Expect::Percent,
        );

        stub.script("public.example", vec![vec![ip(PUBLIC_V4)]]);
        stub.script("loop.corpus.test", vec![vec![ip("127.0.0.1")]]);
        let p4 = port_suffix(listeners, ip("127.0.0.1"));
        let p6 = port_suffix(listeners, ip("::1"));
        let loopback = Expect::Class(Loopback);
        let targets: Vec<(String, Expect)> = vec![
            (format!("127.0.0.1{p4}"), loopback),
            (format!("[::1]{p6}"), loopback),
            (format!("0.0.0.0{p4}"), Expect::Class(Unspecified)),
            ("169.254.169.254".into(), Expect::Class(CloudMetadata)),
            ("10.0.0.1".into(), Expect::Class(Private)),
            ("192.168.0.1".into(), Expect::Class(Private)),
            (format!("localhost{p4}"), Expect::LocalName),
            (format!("loop.corpus.test{p4}"), loopback),
        ];
        for (target, itself) in &targets {
            for (form, expect) in [
                (
                    format!("https://public.example@{target}/mcp"),
                    Expect::Userinfo,
                ),
                (
                    format!("https://public.example:443@{target}/mcp"),
                    Expect::Userinfo,
                ),
                (format!("https://user:pass@{target}/mcp"), Expect::Userinfo),
                (format!("https://@{target}/mcp"), Expect::Userinfo),
                (
                    format!("https://{target}%2f@public.example/mcp"),
                    Expect::Userinfo,
                ),
                (format!("https://{target}\\@public.example/mcp"), *itself),
                (format!("https://{target}#@public.example/mcp"), *itself),
                (format!("https://{target}?@public.example/mcp"), *itself),
                (
                    format!("https://public.example%40{target}/mcp"),
                    Expect::Percent,
                ),
            ] {
                push(Group::Userinfo, form, expect);
            }
        }

        for name in [
            "localhost",
            "LOCALHOST",
            "localhost.",
            "LocalHost.",
            "api.localhost",
            "API.LOCALHOST.",
            "a.b.c.localhost",
            "\u{24db}\u{24de}\u{24d2}\u{24d0}\u{24db}\u{24d7}\u{24de}\u{24e2}\u{24e3}",
            "\u{ff4c}\u{ff4f}\u{ff43}\u{ff41}\u{ff4c}\u{ff48}\u{ff4f}\u{ff53}\u{ff54}",
            "metadata.google.internal",
            "metadata.google.internal.",
            "METADATA.GOOG",
            "metadata.goog.",
        ] {
            // If the name rule failed, the address rule is next: the stub
            // gives every local name the loopback listener.
            stub.script(name, vec![vec![ip("127.0.0.1")]]);
            for scheme in ["https", "http"] {
                push(
                    Group::LocalNames,
                    format!("{scheme}://{name}{p4}/mcp"),
                    Expect::LocalName,
                );
            }
        }

        for (i, &(target, class)) in NAME_TARGETS.iter().enumerate() {
            let addr = ip(target);
            let port = port_suffix(listeners, addr);
            let expect = Expect::Class(class);
            stub.script(&format!("t{i}.corpus.test"), vec![vec![addr]]);
            stub.script(
                &format!("m{i}.corpus.test"),
                vec![vec![ip(PUBLIC_V4), addr]],
            );
            stub.script(
                &format!("n{i}.corpus.test"),
                vec![vec![addr, ip(PUBLIC_V4)]],
            );
            stub.script(
                &format!("w{i}.corpus.test"),
                vec![vec![ip(PUBLIC_V6), addr]],
            );
            for host in [
                format!("t{i}.corpus.test"),
                format!("T{i}.CORPUS.TEST"),
                format!("t{i}.corpus.test."),
                format!("m{i}.corpus.test"),
                format!("n{i}.corpus.test"),
                format!("w{i}.corpus.test"),
            ] {
                push(Group::DnsNames, format!("https://{host}{port}/mcp"), expect);
            }
        }
        Self { urls }
    }

    /// The URLs, as strings.
    pub fn strings(&self) -> Vec<String> {
        self.urls.iter().map(|h| h.url.clone()).collect()
    }

    /// The groups, in order, with how many URLs each has.
    pub fn groups(&self) -> Vec<(Group, usize)> {
        let mut groups = std::collections::BTreeMap::new();
        for hostile in &self.urls {
            *groups.entry(hostile.group).or_insert(0) += 1;
        }
        groups.into_iter().collect()
    }

    /// Indices of the URLs that differ once parsed. Whatever an OAuth
    /// client fetches (a metadata URL, an endpoint, a `Location`) it has
    /// parsed first, so spellings that parse alike are one request to the
    /// guard; a URL that does not parse is kept as written.
    pub fn distinct_after_parsing(&self) -> Vec<usize> {
        let mut seen = std::collections::HashSet::new();
        (0..self.urls.len())
            .filter(|&i| {
                let url = &self.urls[i].url;
                seen.insert(reqwest::Url::parse(url).map_or_else(|_| url.clone(), String::from))
            })
            .collect()
    }
}

/// Rebinding names for `scenario` (a tag in the name): each answers
/// public for `public_lookups` lookups, then one of [`REBIND_TARGETS`].
pub fn rebinding(
    listeners: &Listeners,
    stub: &Stub,
    scenario: &str,
    public_lookups: usize,
) -> Vec<Rebinding> {
    REBIND_TARGETS
        .iter()
        .enumerate()
        .map(|(i, &(target, class))| {
            let target = ip(target);
            let name = format!("rebind-{scenario}-{i}.corpus.test");
            let mut script = vec![vec![ip(PUBLIC_V4)]; public_lookups];
            script.push(vec![target]);
            stub.script(&name, script);
            Rebinding {
                url: format!("https://{name}{}/mcp", port_suffix(listeners, target)),
                name,
                class,
            }
        })
        .collect()
}
