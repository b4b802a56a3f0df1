//! `COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS` against real servers on
//! 127.0.0.1. Stubs here only ever answer 127.0.0.1 or ::1, so even a
//! broken guard could not reach past loopback.

use crate::helpers::{AllowListed, Loopback, StubResolver, ssrf_error};
use countersign::ssrf::{AddressClass, AllowList, HostResolver, SsrfError, check, guarded_client};
use std::sync::Arc;

fn allow(value: &str) -> AllowList {
    AllowList::parse(value).expect("a valid allow-list")
}

fn client(resolver: Arc<dyn HostResolver>, allow: AllowList) -> reqwest::Client {
    guarded_client(reqwest::Client::builder(), resolver, allow).expect("a client")
}

fn no_names() -> Arc<dyn HostResolver> {
    StubResolver::new().shared()
}

#[tokio::test]
async fn an_allow_listed_loopback_address_and_port_is_reachable_over_plain_http() {
    let allowed = AllowListed::start("/").await;

    let response = allowed.get().await;

    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.expect("a body"), "ok");
    assert_eq!(allowed.server.hits(), 1);
    assert_eq!(allowed.recorder.dialled_addrs(), allowed.target.addrs());
    assert_eq!(allowed.target.addrs(), [allowed.server.addr]);
}

#[tokio::test]
async fn the_same_loopback_url_without_the_allow_list_is_refused_and_never_reached() {
    let server = Loopback::start().await;
    let stub = no_names();

    let err = check(&server.url("/"), &*stub, &AllowList::default())
        .await
        .expect_err("loopback is refused");
    let sent = client(stub, AllowList::default())
        .get(server.url("/"))
        .send()
        .await
        .expect_err("the client refuses on its own");

    assert_eq!(err.refusal().map(|r| r.class), Some(AddressClass::Loopback));
    assert_eq!(
        err.to_string(),
        "127.0.0.1 is a loopback address: Countersign does not connect to private networks. \
         If this server should be reachable, ask your administrator to allow it."
    );
    assert!(
        matches!(ssrf_error(&sent), Some(SsrfError::RefusedAddress { .. })),
        "{sent:?}"
    );
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn an_allow_listed_cidr_lets_every_port_in_the_range_through() {
    let (a, b) = (Loopback::start().await, Loopback::start().await);
    let allow = allow("127.0.0.0/8");
    let stub = no_names();
    let client = client(stub.clone(), allow.clone());

    for server in [&a, &b] {
        let target = check(&server.url("/"), &*stub, &allow)
            .await
            .expect("in range");
        let response = client
            .get(target.url().clone())
            .send()
            .await
            .expect("answers");
        assert_eq!(response.status(), 200);
    }

    assert_eq!((a.hits(), b.hits()), (1, 1));
}

#[tokio::test]
async fn an_allow_list_entry_for_one_port_does_not_allow_another() {
    let (allowed, other) = (Loopback::start().await, Loopback::start().await);
    let allow = allow(&format!("127.0.0.1:{}", allowed.port()));
    let stub = no_names();

    let err = check(&other.url("/"), &*stub, &allow)
        .await
        .expect_err("another port is not allowed");
    let sent = client(stub, allow)
        .get(other.url("/"))
        .send()
        .await
        .expect_err("nor through the client");

    assert_eq!(err.refusal().map(|r| r.class), Some(AddressClass::Loopback));
    assert!(ssrf_error(&sent).is_some(), "{sent:?}");
    assert_eq!(other.hits(), 0);
}

#[tokio::test]
async fn an_allow_listed_name_is_reached_through_the_guarded_resolver() {
    let server = Loopback::start().await;
    let stub = StubResolver::new()
        .with("mcp.test", &["127.0.0.1"])
        .shared();
    let allow = allow("mcp.test");
    let url = format!("http://mcp.test:{}/", server.port());

    let target = check(&url, &*stub, &allow)
        .await
        .expect("allow-listed name");
    let response = client(stub.clone(), allow)
        .get(target.url().clone())
        .send()
        .await
        .expect("answers");

    assert_eq!(response.status(), 200);
    assert_eq!(server.hits(), 1);
    // Once for `check`, once by reqwest: it resolved through the guard, not
    // through the system resolver.
    assert_eq!(stub.lookups(), ["mcp.test", "mcp.test"]);
}

#[tokio::test]
async fn an_address_and_port_entry_applies_to_names_that_resolve_to_it_on_that_port_only() {
    let (allowed, other) = (Loopback::start().await, Loopback::start().await);
    let stub = StubResolver::new()
        .with("mcp.test", &["127.0.0.1"])
        .shared();
    let allow = allow(&format!("127.0.0.1:{}", allowed.port()));
    let client = client(stub.clone(), allow.clone());
    let good = format!("http://mcp.test:{}/", allowed.port());
    let bad = format!("http://mcp.test:{}/", other.port());

    let target = check(&good, &*stub, &allow).await.expect("right port");
    let response = client
        .get(target.url().clone())
        .send()
        .await
        .expect("answers");
    let refused = check(&bad, &*stub, &allow).await.expect_err("wrong port");
    // Without `check`: the resolver knows the connection's port too.
    let sent = client.get(&bad).send().await.expect_err("wrong port");

    assert_eq!(response.status(), 200);
    assert!(
        matches!(refused, SsrfError::RefusedName { .. }),
        "{refused:?}"
    );
    assert!(
        matches!(ssrf_error(&sent), Some(SsrfError::RefusedName { .. })),
        "{sent:?}"
    );
    assert_eq!((allowed.hits(), other.hits()), (1, 0));
}

#[tokio::test]
async fn localhost_is_refused_by_name_unless_the_name_is_allow_listed() {
    let server = Loopback::start().await;
    let stub = StubResolver::new()
        .with("localhost", &["127.0.0.1"])
        .shared();
    let url = format!("http://localhost:{}/", server.port());

    let refused = check(&url, &*stub, &allow("127.0.0.0/8"))
        .await
        .expect_err("an address entry does not cover the name");
    let target = check(&url, &*stub, &allow("localhost"))
        .await
        .expect("allowed by name");
    let response = client(stub, allow("localhost"))
        .get(target.url().clone())
        .send()
        .await
        .expect("answers");

    assert!(
        matches!(refused, SsrfError::LocalName { .. }),
        "{refused:?}"
    );
    assert_eq!(response.status(), 200);
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn allow_listing_relaxes_nothing_but_address_class_and_scheme() {
    let server = Loopback::start().await;
    let port = server.port();
    let allow = allow("127.0.0.0/8");
    let stub = StubResolver::new()
        .with("public.example", &["93.184.216.34"])
        .shared();
    let cases: &[(String, &str)] = &[
        (format!("http://u:p@127.0.0.1:{port}/"), "userinfo"),
        (format!("http://2130706433:{port}/"), "decimal address"),
        (format!("http://127.1:{port}/"), "short address"),
        ("http://127.0.0.1:25/".to_owned(), "bad port"),
        (format!("gopher://127.0.0.1:{port}/"), "scheme"),
        (
            "http://public.example/".to_owned(),
            "http to a host not listed",
        ),
    ];

    for (url, why) in cases {
        let err = check(url, &*stub, &allow).await.expect_err(why);
        assert!(
            err.refusal().is_none(),
            "{why}: refused for syntax, got {err:?}"
        );
    }
    assert_eq!(server.hits(), 0);
}

#[test]
fn a_bad_allow_list_value_names_the_setting_and_the_entry() {
    let err = AllowList::parse("localhost, 127.0.0.1:http").expect_err("not a port");

    assert_eq!(
        err.to_string(),
        "COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS: \"127.0.0.1:http\" is not allowed: \
         the port must be a number from 1 to 65535"
    );
}
