//! Public destinations pass `check`, and the guarded client would connect
//! to exactly the address that was checked — shown by the recording
//! connector, which dials nothing.

use crate::helpers::{Recorder, StubResolver, sock};
use countersign::ssrf::{AllowList, Host, HostResolver, Scheme, check, guarded_client};
use std::sync::Arc;

fn stub() -> Arc<StubResolver> {
    StubResolver::new()
        .with("public.example", &["93.184.216.34"])
        .with("public6.example", &["2606:2800:220:1::"])
        .with(
            "dual.example",
            &["93.184.216.34", "2606:2800:220:1::", "93.184.216.34"],
        )
        .shared()
}

/// Sends one GET to `target` through a guarded client whose connector only
/// records, and returns what it recorded.
async fn dial_through_guarded_client(
    stub: Arc<StubResolver>,
    url: &reqwest::Url,
) -> Vec<crate::helpers::Dial> {
    let allow = AllowList::default();
    let recorder = Recorder::new(stub.clone(), allow.clone());
    let client = guarded_client(
        reqwest::Client::builder().connector_layer(recorder.clone()),
        stub as Arc<dyn HostResolver>,
        allow,
    )
    .expect("a client");
    let sent = client.get(url.clone()).send().await;
    assert!(sent.is_err(), "the recorder never connects");
    recorder.dials()
}

#[tokio::test]
async fn a_name_resolving_to_a_public_address_passes_and_is_dialled_at_that_address() {
    let stub = stub();
    let target = check("https://public.example/mcp", &*stub, &AllowList::default())
        .await
        .expect("a public name passes");
    assert_eq!(target.addrs(), [sock("93.184.216.34", 443)]);
    assert_eq!(target.scheme(), Scheme::Https);
    assert_eq!(target.host(), &Host::Domain("public.example".into()));

    let dials = dial_through_guarded_client(stub.clone(), target.url()).await;

    assert_eq!(dials.len(), 1, "one connection: {dials:?}");
    assert_eq!(dials[0].uri, "https://public.example/");
    assert_eq!(dials[0].outcome.as_deref(), Ok(target.addrs()));
    assert_eq!(stub.lookups(), ["public.example", "public.example"]);
}

#[tokio::test]
async fn an_ipv6_name_passes_and_is_dialled_at_its_address_and_port() {
    let stub = stub();
    let target = check(
        "https://public6.example:8443/",
        &*stub,
        &AllowList::default(),
    )
    .await
    .expect("a public IPv6 name passes");
    assert_eq!(target.addrs(), [sock("2606:2800:220:1::", 8443)]);

    let dials = dial_through_guarded_client(stub, target.url()).await;

    assert_eq!(dials.len(), 1);
    assert_eq!(dials[0].outcome.as_deref(), Ok(target.addrs()));
}

#[tokio::test]
async fn a_dual_stack_name_keeps_every_checked_address_once_in_order() {
    let stub = stub();
    let target = check("https://dual.example/", &*stub, &AllowList::default())
        .await
        .expect("all public");
    assert_eq!(
        target.addrs(),
        [sock("93.184.216.34", 443), sock("2606:2800:220:1::", 443)]
    );

    let dials = dial_through_guarded_client(stub, target.url()).await;

    assert_eq!(dials[0].outcome.as_deref(), Ok(target.addrs()));
}

#[tokio::test]
async fn a_public_ip_literal_passes_without_any_lookup_and_is_dialled_as_written() {
    let stub = stub();
    let target = check(
        "https://93.184.216.34:8443/mcp",
        &*stub,
        &AllowList::default(),
    )
    .await
    .expect("a public literal passes");
    assert_eq!(target.addrs(), [sock("93.184.216.34", 8443)]);

    let dials = dial_through_guarded_client(stub.clone(), target.url()).await;

    assert_eq!(dials[0].uri, "https://93.184.216.34:8443/");
    assert_eq!(dials[0].outcome.as_deref(), Ok(target.addrs()));
    assert!(stub.lookups().is_empty(), "literals are never resolved");
}

#[tokio::test]
async fn case_trailing_dots_fragments_and_idn_are_normalized_not_refused() {
    let stub = StubResolver::new()
        .with("public.example", &["93.184.216.34"])
        .with("xn--bcher-kva.example", &["93.184.216.35"])
        .shared();
    let cases: &[(&str, &str, &str)] = &[
        (
            "https://PUBLIC.Example/mcp",
            "https://public.example/mcp",
            "uppercase",
        ),
        (
            "https://public.example./mcp",
            "https://public.example./mcp",
            "trailing dot",
        ),
        (
            "https://public.example/mcp#top",
            "https://public.example/mcp",
            "fragment dropped",
        ),
        (
            "https://public.example:443/",
            "https://public.example/",
            "explicit default port",
        ),
        (
            "https://bücher.example/",
            "https://xn--bcher-kva.example/",
            "IDN to punycode",
        ),
        (
            "https://public.example/a?b=c",
            "https://public.example/a?b=c",
            "query kept",
        ),
    ];
    for &(input, normalized, why) in cases {
        let target = check(input, &*stub, &AllowList::default())
            .await
            .unwrap_or_else(|e| panic!("{input} ({why}): {e}"));
        assert_eq!(target.url().as_str(), normalized, "{why}");
    }
}
