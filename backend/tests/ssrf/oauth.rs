//! `connectors::oauth::http::GuardedOAuthHttp`: every OAuth request
//! (discovery, registration, token) passes the guard, and a redirect is
//! followed only when rmcp asks for it, only for a GET, and only to a
//! destination the guard would let a connector reach.

use crate::helpers::{Loopback, Recorder, StubResolver};
use countersign::connectors::oauth::http::{GuardedOAuthHttp, OAuthHttpError};
use countersign::ssrf::{AllowList, guarded_client};

/// The client under test, allowing `allow`, with a recorder of dials.
fn client(allow: &str) -> (GuardedOAuthHttp, Recorder) {
    let allow = AllowList::parse(allow).expect("valid");
    let stub = StubResolver::new()
        .with("rebound.example", &["10.0.0.7"])
        .shared();
    let recorder = Recorder::new(stub.clone(), allow.clone());
    let http = guarded_client(
        reqwest::Client::builder().connector_layer(recorder.clone()),
        stub.clone(),
        allow.clone(),
    )
    .expect("a client");
    (GuardedOAuthHttp::new(http, stub, allow), recorder)
}

fn get(url: &str) -> reqwest::Request {
    reqwest::Request::new(reqwest::Method::GET, url.parse().expect("a URL"))
}

fn refused(err: &(dyn std::error::Error + Send + Sync + 'static)) -> bool {
    matches!(
        err.downcast_ref::<OAuthHttpError>(),
        Some(OAuthHttpError::Refused { .. })
    )
}

#[tokio::test]
async fn an_allowed_server_answers_and_a_loopback_one_off_the_list_is_never_dialled() {
    let allowed = Loopback::start().await;
    let other = Loopback::start().await;
    let (oauth, recorder) = client(&format!("127.0.0.1:{}", allowed.port()));

    let ok = oauth
        .fetch(get(&allowed.url("/")), false)
        .await
        .expect("allowed");
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.body(), b"ok");

    let err = oauth
        .fetch(get(&other.url("/")), true)
        .await
        .expect_err("not on the allow-list");
    assert!(refused(err.as_ref()), "{err}");
    assert_eq!(other.hits(), 0);
    assert_eq!(recorder.dialled_addrs(), [allowed.addr]);
}

#[tokio::test]
async fn a_discovery_redirect_is_followed_only_through_the_guard() {
    let first = Loopback::start().await;
    let second = Loopback::start().await;
    let outside = Loopback::start().await;
    let (oauth, recorder) = client(&format!(
        "127.0.0.1:{},127.0.0.1:{}",
        first.port(),
        second.port()
    ));

    // To an allowed destination: followed.
    let followed = oauth
        .fetch(
            get(&first.url(&format!("/to-port/{}", second.port()))),
            true,
        )
        .await
        .expect("followed");
    assert_eq!(followed.status(), 200);
    assert_eq!(second.hits(), 1);

    // To the metadata address, or a loopback port off the list: refused
    // before any connection.
    for path in [
        "/to-metadata".to_owned(),
        format!("/to-port/{}", outside.port()),
    ] {
        let err = oauth
            .fetch(get(&first.url(&path)), true)
            .await
            .expect_err("refused");
        assert!(refused(err.as_ref()), "{path}: {err}");
    }
    assert_eq!(outside.hits(), 0);
    assert!(
        recorder
            .dialled_addrs()
            .iter()
            .all(|a| a.ip().is_loopback() && a.port() != outside.port()),
        "{:?}",
        recorder.dialled_addrs()
    );
}

#[tokio::test]
async fn without_follow_a_redirect_is_the_answer_and_a_post_is_never_redirected() {
    let first = Loopback::start().await;
    let second = Loopback::start().await;
    let (oauth, _) = client(&format!(
        "127.0.0.1:{},127.0.0.1:{}",
        first.port(),
        second.port()
    ));
    let to_second = first.url(&format!("/to-port/{}", second.port()));

    let stopped = oauth.fetch(get(&to_second), false).await.expect("the 302");
    assert_eq!(stopped.status(), 302);

    let post = reqwest::Request::new(reqwest::Method::POST, to_second.parse().expect("a URL"));
    let err = oauth
        .fetch(post, true)
        .await
        .expect_err("a token POST is not re-sent");
    assert!(
        matches!(
            err.downcast_ref::<OAuthHttpError>(),
            Some(OAuthHttpError::BadRedirect)
        ),
        "{err}"
    );
    assert_eq!(second.hits(), 0);
}

#[tokio::test]
async fn redirect_loops_and_oversized_bodies_end_with_an_error() {
    let server = Loopback::start().await;
    let (oauth, _) = client(&format!("127.0.0.1:{}", server.port()));

    let err = oauth
        .fetch(get(&server.url("/loop")), true)
        .await
        .expect_err("a loop");
    assert!(matches!(
        err.downcast_ref::<OAuthHttpError>(),
        Some(OAuthHttpError::TooManyRedirects)
    ));
    assert_eq!(server.hits(), 6, "the first request and five redirects");

    let err = oauth
        .fetch(get(&server.url("/big")), false)
        .await
        .expect_err("2 MiB");
    assert!(matches!(
        err.downcast_ref::<OAuthHttpError>(),
        Some(OAuthHttpError::TooLarge)
    ));
}

#[tokio::test]
async fn a_name_that_resolves_to_a_private_address_is_refused() {
    let (oauth, recorder) = client("");
    let err = oauth
        .fetch(
            get("https://rebound.example/.well-known/oauth-authorization-server"),
            true,
        )
        .await
        .expect_err("10.0.0.7 is private");
    assert!(refused(err.as_ref()), "{err}");
    assert!(recorder.dials().is_empty());
}
