//! Hostile connector URLs, one row each with the reason it must be refused.
//! Every row is refused by `check`, and — for whatever reqwest will even
//! try — by the guarded client on its own, without `check`.

use crate::helpers::{Recorder, StubResolver};
use countersign::ssrf::{AddressClass, AllowList, SsrfError, check, classify, guarded_client};
use std::sync::Arc;

/// What a refusal must be.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// An address refusal of this class.
    Class(AddressClass),
    /// Not `https`/`http`.
    Scheme,
    /// Plain `http` without an allow-list entry.
    Http,
    /// `user:pass@`.
    Userinfo,
    /// IPv4 in a non-canonical spelling.
    Numeric,
    /// `%`-encoded host.
    Percent,
    /// Port 0 or a Fetch "bad port".
    Port,
    /// `localhost` and friends, by name.
    LocalName,
    /// Not a usable URL.
    Invalid,
    /// The name does not resolve.
    Unresolvable,
    /// The name resolves to nothing.
    NoAddresses,
}

use AddressClass::*;
use Expect::*;

/// (URL, expected refusal, why it is hostile).
#[rustfmt::skip]
const CASES: &[(&str, Expect, &str)] = &[
    // IPv4 literals, one or more per class.
    ("https://127.0.0.1/", Class(Loopback), "loopback"),
    ("https://127.255.255.254/", Class(Loopback), "all of 127/8 is loopback"),
    ("https://0.0.0.0/", Class(Unspecified), "0.0.0.0 reaches local services on Linux"),
    ("https://0.1.2.3/", Class(Reserved), "0/8 is 'this network'"),
    ("https://10.0.0.1/", Class(Private), "RFC 1918 10/8"),
    ("https://10.255.255.255/", Class(Private), "top of 10/8"),
    ("https://172.16.0.1/", Class(Private), "RFC 1918 172.16/12"),
    ("https://172.31.255.254/", Class(Private), "top of 172.16/12"),
    ("https://192.168.1.1/", Class(Private), "RFC 1918 192.168/16"),
    ("https://100.64.0.1/", Class(SharedCgnat), "CGNAT shared space"),
    ("https://100.127.255.254/", Class(SharedCgnat), "top of 100.64/10"),
    ("https://169.254.0.1/", Class(LinkLocal), "IPv4 link-local"),
    ("https://169.254.169.254/", Class(CloudMetadata), "AWS/GCP/Azure/OCI metadata"),
    ("https://169.254.170.2/", Class(CloudMetadata), "ECS task metadata"),
    ("https://100.100.100.200/", Class(CloudMetadata), "Alibaba metadata"),
    ("https://168.63.129.16/", Class(CloudMetadata), "Azure WireServer"),
    ("https://224.0.0.1/", Class(Multicast), "all-hosts multicast"),
    ("https://239.255.255.250/", Class(Multicast), "SSDP multicast"),
    ("https://255.255.255.255/", Class(Broadcast), "limited broadcast"),
    ("https://240.0.0.1/", Class(Reserved), "class E"),
    ("https://192.0.2.1/", Class(Documentation), "TEST-NET-1"),
    ("https://198.51.100.7/", Class(Documentation), "TEST-NET-2"),
    ("https://203.0.113.9/", Class(Documentation), "TEST-NET-3"),
    ("https://198.18.0.1/", Class(Benchmarking), "benchmarking 198.18/15"),
    ("https://198.19.255.254/", Class(Benchmarking), "top of 198.18/15"),
    ("https://192.0.0.1/", Class(IetfProtocolAssignment), "IETF protocol assignments"),
    ("https://192.0.0.193/", Class(IetfProtocolAssignment), "192.0.0.192/29 (PCP)"),
    ("https://192.0.0.170/", Class(IetfProtocolAssignment), "NAT64 discovery"),
    ("https://192.88.99.1/", Class(SixToFourRelayAnycast), "6to4 relay anycast"),
    ("https://[::ffff:10.0.0.1]:8443/", Class(Ipv4Mapped), "mapped, with a port"),
    // IPv6 literals.
    ("https://[::1]/", Class(Loopback), "IPv6 loopback"),
    ("https://[0:0:0:0:0:0:0:1]/", Class(Loopback), "IPv6 loopback, long form"),
    ("https://[::]/", Class(Unspecified), "IPv6 unspecified"),
    ("https://[fe80::1]/", Class(LinkLocal), "IPv6 link-local"),
    ("https://[febf::1]/", Class(LinkLocal), "top of fe80::/10"),
    ("https://[fec0::1]/", Class(SiteLocal), "deprecated site-local"),
    ("https://[fc00::1]/", Class(UniqueLocal), "ULA fc00::/7"),
    ("https://[fd12:3456::1]/", Class(UniqueLocal), "ULA fd00::/8"),
    ("https://[fd00:ec2::254]/", Class(CloudMetadata), "AWS IPv6 metadata"),
    ("https://[FD00:EC2::254]/", Class(CloudMetadata), "AWS IPv6 metadata, uppercase"),
    ("https://[ff02::1]/", Class(Multicast), "link-scope multicast"),
    ("https://[ff0e::1]/", Class(Multicast), "global-scope multicast"),
    ("https://[2001:db8::1]/", Class(Documentation), "IPv6 documentation"),
    ("https://[3fff::1]/", Class(Documentation), "IPv6 documentation 3fff::/20"),
    ("https://[100::1]/", Class(DiscardOnly), "discard-only 100::/64"),
    ("https://[2001:10::1]/", Class(Orchid), "ORCHID"),
    ("https://[2001:20::1]/", Class(Orchid), "ORCHIDv2"),
    ("https://[2001:2::1]/", Class(Benchmarking), "IPv6 benchmarking"),
    ("https://[2001:1::1]/", Class(IetfProtocolAssignment), "PCP anycast in 2001::/23"),
    ("https://[5f00::1]/", Class(Reserved), "SRv6 SIDs"),
    ("https://[4000::1]/", Class(Reserved), "outside global unicast 2000::/3"),
    // IPv6 forms that carry an IPv4 address.
    ("https://[::ffff:127.0.0.1]/", Class(Ipv4Mapped), "mapped loopback, dotted"),
    ("https://[::ffff:7f00:1]/", Class(Ipv4Mapped), "mapped loopback, hex"),
    ("https://[::ffff:169.254.169.254]/", Class(Ipv4Mapped), "mapped metadata"),
    ("https://[::ffff:a9fe:a9fe]/", Class(Ipv4Mapped), "mapped metadata, hex"),
    ("https://[::ffff:93.184.216.34]/", Class(Ipv4Mapped), "mapped public: refused anyway"),
    ("https://[::127.0.0.1]/", Class(Ipv4Compatible), "compatible loopback"),
    ("https://[::a00:1]/", Class(Ipv4Compatible), "compatible 10.0.0.1"),
    ("https://[::ffff:0:7f00:1]/", Class(Ipv4Translated), "translated loopback"),
    ("https://[64:ff9b::a9fe:a9fe]/", Class(Nat64), "NAT64 of metadata"),
    ("https://[64:ff9b::127.0.0.1]/", Class(Nat64), "NAT64 of loopback"),
    ("https://[64:ff9b::5db8:d822]/", Class(Nat64), "NAT64 of a public address: refused"),
    ("https://[64:ff9b:1::a00:1]/", Class(Nat64), "local-use NAT64"),
    ("https://[2002:a9fe:a9fe::]/", Class(SixToFour), "6to4 of metadata"),
    ("https://[2002:7f00:1::1]/", Class(SixToFour), "6to4 of loopback"),
    ("https://[2002:5db8:d822::1]/", Class(SixToFour), "6to4 of a public address"),
    ("https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", Class(Teredo), "Teredo whose client is 127.0.0.1"),
    ("https://[2001::1]/", Class(Teredo), "Teredo"),
    // IPv4 in spellings the URL parser would quietly reinterpret.
    ("https://2130706433/", Numeric, "127.0.0.1 as one decimal number"),
    ("https://0177.0.0.1/", Numeric, "octal first octet"),
    ("https://0x7f.1/", Numeric, "hex, two parts"),
    ("https://127.1/", Numeric, "two-part short form"),
    ("https://127.0.1/", Numeric, "three-part short form"),
    ("https://0x7f000001/", Numeric, "127.0.0.1 as one hex number"),
    ("https://0X7F000001/", Numeric, "uppercase hex"),
    ("https://017700000001/", Numeric, "127.0.0.1 as one octal number"),
    ("https://0x7f.0x0.0x0.0x1/", Numeric, "hex per octet"),
    ("https://0251.0376.0251.0376/", Numeric, "metadata in octal"),
    ("https://2852039166/", Numeric, "metadata as one decimal number"),
    ("https://0xa9fea9fe/", Numeric, "metadata as one hex number"),
    ("https://127.000.000.001/", Numeric, "zero-padded octets"),
    ("https://08.8.8.8/", Numeric, "invalid octal"),
    ("https://1.2.3.4.5/", Numeric, "five parts"),
    ("https://0/", Numeric, "0 is 0.0.0.0"),
    ("https://4294967295/", Numeric, "broadcast as one number"),
    ("https://127.0.0.1./", Numeric, "trailing dot on an address"),
    ("https://127。0。0。1/", Numeric, "ideographic full stops"),
    ("https://127．0．0．1/", Numeric, "fullwidth full stops"),
    ("https://①②⑦.0.0.1/", Numeric, "circled digits"),
    ("https://１２７.0.0.1/", Numeric, "fullwidth digits"),
    ("https://%31%32%37.0.0.1/", Percent, "percent-encoded address"),
    ("https://%6c%6f%63%61%6c%68%6f%73%74/", Percent, "percent-encoded localhost"),
    ("https://[fe80::1%25eth0]/", Percent, "zone id"),
    // Schemes.
    ("http://public.example/", Http, "plain http to a public host"),
    ("http://93.184.216.34/", Http, "plain http to a public address"),
    ("HTTP://public.example/", Http, "uppercase scheme is still http"),
    ("file:///etc/passwd", Scheme, "local files"),
    ("gopher://127.0.0.1:6379/_INFO", Scheme, "gopher smuggling into Redis"),
    ("ftp://public.example/", Scheme, "ftp"),
    ("ws://public.example/", Scheme, "websocket"),
    ("wss://public.example/", Scheme, "secure websocket"),
    ("dict://127.0.0.1:11211/stats", Scheme, "dict smuggling into memcached"),
    ("javascript:alert(1)", Scheme, "javascript"),
    ("data:text/plain,hi", Scheme, "data"),
    ("ldap://public.example/", Scheme, "ldap"),
    // Userinfo.
    ("https://user:pw@public.example/", Userinfo, "credentials in the URL"),
    ("https://user@public.example/", Userinfo, "user name in the URL"),
    ("https://:pw@public.example/", Userinfo, "password only"),
    ("https://@public.example/", Userinfo, "empty userinfo"),
    ("https://public.example@169.254.169.254/", Userinfo, "the classic host confusion"),
    // Where a parser might disagree about the host.
    ("https://169.254.169.254\\@public.example/", Class(CloudMetadata), "backslash ends the host"),
    ("https:\\\\127.0.0.1\\", Class(Loopback), "backslashes for slashes"),
    ("https:127.0.0.1", Class(Loopback), "no slashes"),
    ("https:/127.0.0.1/", Class(Loopback), "one slash"),
    ("  https://127.0.0.1/  ", Class(Loopback), "surrounding spaces"),
    // Names that resolve (through the stub) to what they must not.
    ("https://private.example/", Class(Private), "a name for 10.0.0.5"),
    ("https://loopback.example/", Class(Loopback), "a name for 127.0.0.1"),
    ("https://metadata.example/", Class(CloudMetadata), "a name for 169.254.169.254"),
    ("https://mixed.example/", Class(Private), "one public and one private address"),
    ("https://mixed6.example/", Class(UniqueLocal), "one public and one ULA address"),
    ("https://mapped.example/", Class(Ipv4Mapped), "a name for a mapped address"),
    ("https://cgnat.example/", Class(SharedCgnat), "a name for CGNAT space"),
    ("https://linklocal6.example/", Class(LinkLocal), "a name for fe80::1"),
    ("https://nat64.example/", Class(Nat64), "a name for NAT64 of metadata"),
    ("https://any.example/", Class(Unspecified), "a name for 0.0.0.0"),
    ("https://PRIVATE.EXAMPLE/", Class(Private), "uppercase name"),
    ("https://private.example./", Class(Private), "trailing-dot name"),
    ("https://bücher.example/", Class(Private), "IDN resolving to a private address"),
    ("https://ＰＲＩＶＡＴＥ.example/", Class(Private), "fullwidth letters map to the name"),
    ("https://private。example/", Class(Private), "ideographic dot in a name"),
    ("https://nowhere.example/", Unresolvable, "a name that does not resolve"),
    ("https://empty.example/", NoAddresses, "a name with no addresses"),
    // Local names.
    ("https://localhost/", LocalName, "localhost"),
    ("https://localhost./", LocalName, "localhost with a trailing dot"),
    ("https://LOCALHOST/", LocalName, "uppercase localhost"),
    ("https://LocalHost:8443/", LocalName, "mixed case with a port"),
    ("https://api.localhost/", LocalName, "*.localhost is loopback (RFC 6761)"),
    ("https://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/", LocalName, "circled letters map to localhost"),
    ("https://metadata.google.internal/", LocalName, "GCP metadata name"),
    // Ports and structure.
    ("https://public.example:0/", Port, "port 0"),
    ("https://public.example:25/", Port, "SMTP"),
    ("https://public.example:22/", Port, "SSH"),
    ("https://public.example:6667/", Port, "IRC"),
    ("https://public.example:65536/", Invalid, "port out of range"),
    ("https://public.example:-1/", Invalid, "negative port"),
    ("https://public.example:0x1bb/", Invalid, "hex port"),
    ("https://", Invalid, "no host"),
    ("https://:443/", Invalid, "empty host with a port"),
    ("https://[::1/", Invalid, "unclosed bracket"),
    ("https://public.example /", Invalid, "a space in the host"),
    ("https://public.exa\tmple/", Invalid, "a tab the parser would drop"),
    ("https://public.example\u{0}/", Invalid, "a NUL"),
    ("//public.example/", Invalid, "no scheme"),
    ("public.example", Invalid, "no scheme or slashes"),
];

fn stub() -> Arc<StubResolver> {
    StubResolver::new()
        .with("public.example", &["93.184.216.34"])
        .with("private.example", &["10.0.0.5"])
        .with("loopback.example", &["127.0.0.1"])
        .with("metadata.example", &["169.254.169.254"])
        .with("mixed.example", &["93.184.216.34", "10.0.0.5"])
        .with("mixed6.example", &["2606:2800:220:1::", "fd00::1"])
        .with("mapped.example", &["::ffff:169.254.169.254"])
        .with("cgnat.example", &["100.64.0.1"])
        .with("linklocal6.example", &["fe80::1"])
        .with("nat64.example", &["64:ff9b::a9fe:a9fe"])
        .with("any.example", &["0.0.0.0"])
        .with("xn--bcher-kva.example", &["10.1.1.1"])
        .with("empty.example", &[])
        // If the guard let these through, a stub answer would be the only
        // way to reach them: give them loopback so nothing could leave.
        .with("localhost", &["127.0.0.1"])
        .with("api.localhost", &["127.0.0.1"])
        .with("metadata.google.internal", &["169.254.169.254"])
        .shared()
}

fn is(err: &SsrfError, expect: Expect) -> bool {
    match expect {
        Class(class) => err.refusal().is_some_and(|r| r.class == class),
        Scheme => matches!(err, SsrfError::SchemeNotAllowed { .. }),
        Http => matches!(err, SsrfError::HttpNotAllowed),
        Userinfo => matches!(err, SsrfError::Userinfo),
        Numeric => matches!(err, SsrfError::NonCanonicalIpv4 { .. }),
        Percent => matches!(err, SsrfError::PercentEncodedHost),
        Port => matches!(err, SsrfError::PortNotAllowed { .. }),
        LocalName => matches!(err, SsrfError::LocalName { .. }),
        Invalid => matches!(err, SsrfError::InvalidUrl { .. }),
        Unresolvable => matches!(err, SsrfError::Unresolvable { .. }),
        NoAddresses => matches!(err, SsrfError::NoAddresses { .. }),
    }
}

#[test]
fn the_table_holds_at_least_a_hundred_hostile_urls() {
    assert!(CASES.len() >= 100, "only {} hostile cases", CASES.len());
}

#[tokio::test]
async fn every_hostile_url_is_refused_by_check_for_its_reason() {
    let stub = stub();
    let mut wrong = Vec::new();
    for &(url, expect, why) in CASES {
        match check(url, &*stub, &AllowList::default()).await {
            Ok(target) => wrong.push(format!("{url:?} ({why}) passed as {target:?}")),
            Err(err) if !is(&err, expect) => {
                wrong.push(format!("{url:?} ({why}): expected {expect:?}, got {err:?}"));
            }
            Err(_) => {}
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[tokio::test]
async fn refusal_messages_name_the_class_and_the_way_out_and_nothing_more() {
    let stub = stub();
    for &(url, expect, why) in CASES {
        let err = check(url, &*stub, &AllowList::default())
            .await
            .expect_err(why);
        let message = err.to_string();
        assert!(!message.contains("os error"), "{url:?}: {message}");
        assert!(
            !message.contains("stub"),
            "{url:?} leaks resolver detail: {message}"
        );
        if let Class(_) = expect {
            let refusal = err.refusal().expect("an address refusal");
            assert!(message.contains(&refusal.to_string()), "{url:?}: {message}");
            assert!(
                message.ends_with(
                    "Countersign does not connect to private networks. If this server \
                     should be reachable, ask your administrator to allow it."
                ),
                "{url:?}: {message}"
            );
        }
    }
}

#[tokio::test]
async fn the_guarded_client_alone_never_hands_a_non_public_address_to_a_socket() {
    // No `check` here: this is the client's own line of defence. Rows that
    // are only refused by `check` (userinfo to a public host) reach the
    // recorder with a public address, which it does not dial either.
    let stub = stub();
    let allow = AllowList::default();
    let recorder = Recorder::new(stub.clone(), allow.clone());
    let client = guarded_client(
        reqwest::Client::builder().connector_layer(recorder.clone()),
        stub.clone(),
        allow,
    )
    .expect("a client");
    for &(url, _, why) in CASES {
        let sent = client.get(url.trim()).send().await;
        assert!(sent.is_err(), "{url:?} ({why}) got a response");
    }
    let non_public: Vec<_> = recorder
        .dialled_addrs()
        .into_iter()
        .filter(|addr| classify(addr.ip()).is_err())
        .collect();
    assert!(
        non_public.is_empty(),
        "reached the socket layer: {non_public:?}"
    );
    assert!(
        recorder
            .dials()
            .iter()
            .all(|dial| !dial.uri.contains("127.0.0.1")),
        "loopback literals are refused before the recorder: {:?}",
        recorder.dials()
    );
}
