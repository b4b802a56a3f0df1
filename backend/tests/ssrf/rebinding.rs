//! DNS rebinding: a name that answers a public address first and a private
//! one later. The guarded resolver checks what it hands out on every
//! lookup, so each connection goes to an address checked for it.

use crate::helpers::{Loopback, Recorder, StubResolver, sock, ssrf_error};
use countersign::ssrf::{AddressClass, AllowList, SsrfError, check, guarded_client};

#[tokio::test]
async fn a_name_that_rebinds_to_a_private_address_after_check_is_refused_at_connect() {
    let stub = StubResolver::new()
        .scripted("rebind.example", &[&["93.184.216.34"], &["10.0.0.5"]])
        .shared();
    let allow = AllowList::default();
    let recorder = Recorder::new(stub.clone(), allow.clone());
    let client = guarded_client(
        reqwest::Client::builder().connector_layer(recorder.clone()),
        stub.clone(),
        allow.clone(),
    )
    .expect("a client");

    let target = check("https://rebind.example/", &*stub, &allow)
        .await
        .expect("public at check time");
    let sent = client
        .get(target.url().clone())
        .send()
        .await
        .expect_err("private at connect time");

    assert_eq!(target.addrs(), [sock("93.184.216.34", 443)]);
    match ssrf_error(&sent) {
        Some(SsrfError::RefusedName { addr, refusal, .. }) => {
            assert_eq!(*addr, sock("10.0.0.5", 0).ip());
            assert_eq!(refusal.class, AddressClass::Private);
        }
        other => panic!("expected a refusal, got {other:?} from {sent:?}"),
    }
    assert!(recorder.dialled_addrs().is_empty(), "nothing to dial");
}

#[tokio::test]
async fn each_connection_goes_to_the_addresses_checked_for_it() {
    let stub = StubResolver::new()
        .scripted(
            "rebind.example",
            &[&["93.184.216.34"], &["169.254.169.254"]],
        )
        .shared();
    let allow = AllowList::default();
    let recorder = Recorder::new(stub.clone(), allow.clone());
    let client = guarded_client(
        reqwest::Client::builder().connector_layer(recorder.clone()),
        stub.clone(),
        allow,
    )
    .expect("a client");

    let first = client.get("https://rebind.example/").send().await;
    let second = client.get("https://rebind.example/").send().await;

    let dials = recorder.dials();
    assert!(
        first.is_err() && second.is_err(),
        "the recorder never connects"
    );
    assert_eq!(dials.len(), 2, "{dials:?}");
    assert_eq!(dials[0].outcome, Ok(vec![sock("93.184.216.34", 443)]));
    let refusal = dials[1].outcome.as_ref().expect_err("refused");
    assert!(
        refusal.contains("169.254.169.254, a cloud metadata address"),
        "{refusal}"
    );
    assert_eq!(stub.lookups().len(), 2, "one lookup per connection");
}

#[tokio::test]
async fn a_rebinding_name_reaches_loopback_once_and_is_refused_on_the_next_connection() {
    // Real connections, loopback only: the name flips from the allow-listed
    // 127.0.0.1 to ::1, which is not allow-listed.
    let server = Loopback::start().await;
    let allow = AllowList::parse(&format!("127.0.0.1:{}", server.port())).expect("valid");
    let stub = StubResolver::new()
        .scripted("flip.test", &[&["127.0.0.1"], &["::1"]])
        .shared();
    let client = guarded_client(
        reqwest::Client::builder().pool_max_idle_per_host(0),
        stub.clone(),
        allow,
    )
    .expect("a client");
    let url = format!("http://flip.test:{}/", server.port());

    let first = client.get(&url).send().await.expect("127.0.0.1 is allowed");
    let second = client.get(&url).send().await.expect_err("::1 is not");

    assert_eq!(first.status(), 200);
    assert_eq!(
        ssrf_error(&second)
            .and_then(SsrfError::refusal)
            .map(|r| r.class),
        Some(AddressClass::Loopback),
        "{second:?}"
    );
    assert_eq!(server.hits(), 1);
}
