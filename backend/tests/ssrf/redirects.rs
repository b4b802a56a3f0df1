//! The guarded client returns a 3xx instead of following it: the Location
//! could point anywhere, including past the guard's allow-list.

use crate::helpers::{AllowListed, Loopback, StubResolver};
use countersign::ssrf::{AllowList, check, guarded_client};

#[tokio::test]
async fn a_redirect_to_the_metadata_address_is_returned_and_never_dialled() {
    let allowed = AllowListed::start("/to-metadata").await;

    let response = allowed.get().await;

    assert_eq!(response.status(), 302);
    assert_eq!(
        response.headers()["location"],
        "http://169.254.169.254/latest/meta-data/"
    );
    assert_eq!(
        allowed.recorder.dialled_addrs(),
        [allowed.server.addr],
        "only loopback"
    );
    assert_eq!(allowed.server.hits(), 1);
}

#[tokio::test]
async fn a_redirect_to_an_allowed_address_is_not_followed_either() {
    let server = Loopback::start().await;
    let allow = AllowList::parse(&format!("127.0.0.1:{}", server.port())).expect("valid");
    let stub = StubResolver::new().shared();
    let client =
        guarded_client(reqwest::Client::builder(), stub.clone(), allow.clone()).expect("a client");
    let target = check(&server.url("/to-self"), &*stub, &allow)
        .await
        .expect("allow-listed");

    let response = client
        .get(target.url().clone())
        .send()
        .await
        .expect("the 302");

    assert_eq!(response.status(), 302);
    assert_eq!(server.hits(), 1, "the Location was not requested");
}
