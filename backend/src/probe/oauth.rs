//! `countersign connector probe --oauth`: the probe signs in to the
//! connector's authorization server as the MCP authorization spec says,
//! the way the server's connectors do (`connectors::oauth::discover` and
//! `begin`), but as a native client of one person at a shell: the
//! redirect URI is a one-shot loopback listener (`callback`), the client,
//! tokens and requests in flight live in memory only (rmcp's stores), and
//! nothing is stored.
//!
//! What it owns:
//!
//! - [`Authorizer`]: one run's sign-ins. The first on the server's 401
//!   (discovery from its challenge); a step-up on a 403
//!   `insufficient_scope` (the union of what was asked and granted and the
//!   challenge's scopes, `connectors::oauth::scopes`, at most
//!   [`scopes::MAX_STEP_UPS`] times); one more on a 401 after signing in
//!   (the server may have moved to another authorization server: discovery
//!   runs afresh, and a client registered with another issuer is never
//!   presented, SEP-2352). The client comes in DESIGN's order:
//!   `--client-id` (and `--client-secret`), the one this run registered
//!   with the same issuer, `--client-metadata-url` where the authorization
//!   server supports CIMD, dynamic registration as a `native` client.
//! - [`follow`] (`--oauth-follow`): the probe plays the browser — GETs
//!   the authorization URL through the guard and follows its redirects
//!   (each hop checked, at most [`MAX_HOPS`]) until one comes back to the
//!   listener, which it delivers; a page that wants a person (HTTP 200)
//!   or a redirect elsewhere stops it with the reason.
//! - [`describe`]: without `--oauth`, what a 401's metadata says
//!   (authorization server, scopes, registration), so an operator knows
//!   what to set up.
//!
//! Architecture invariant: every OAuth request — discovery, registration,
//! authorization, token — goes through `GuardedOAuthHttp` with the probe's
//! `--allow-private` list; the only request that does not is the delivery
//! of the callback to the probe's own listener, whose address [`follow`]
//! checks first.

pub mod callback;

use super::{Probe, ProbeError};
use crate::{
    config::Secret,
    connectors::oauth::{
        self, Clients, SignIn,
        http::GuardedOAuthHttp,
        scopes::{self, Challenge},
        store::ClientRecord,
    },
    mcp::McpError,
    ssrf,
};
use std::{sync::Arc, time::Duration};

/// The name the probe registers under.
pub const CLIENT_NAME: &str = "Countersign probe";
/// How long a person has to sign in in a browser.
pub const BROWSER_WAIT: Duration = Duration::from_secs(300);
/// How long the callback may take with `--oauth-follow`.
pub const FOLLOW_WAIT: Duration = Duration::from_secs(30);
/// Redirects `--oauth-follow` follows inside the authorization server
/// before one comes back to the listener.
pub const MAX_HOPS: usize = 5;
/// Sign-ins after a 401 that followed a sign-in.
pub const MAX_REAUTHORIZATIONS: u32 = 1;

/// How the probe signs in (`--oauth` and the flags that go with it).
#[derive(Debug, Clone, Default)]
pub struct OAuthOptions {
    /// `--oauth-follow`: follow the authorization URL's redirects instead
    /// of waiting for a browser.
    pub follow: bool,
    /// `--client-id`: a client registered out of band.
    pub client_id: Option<String>,
    /// `--client-secret`, for a confidential client.
    pub client_secret: Option<Secret>,
    /// `--client-metadata-url`: our Client ID Metadata Document (https).
    pub client_metadata_url: Option<String>,
}

/// The probe's OAuth traffic: the guard, with the probe's allow list.
pub(crate) fn guarded_http(probe: &Probe) -> Result<GuardedOAuthHttp, ProbeError> {
    let resolver: Arc<dyn ssrf::HostResolver> = Arc::new(ssrf::SystemResolver);
    let client = ssrf::guarded_client(
        reqwest::Client::builder(),
        resolver.clone(),
        probe.allow.clone(),
    )
    .map_err(|e| ProbeError::Invalid(format!("cannot build the HTTP client: {e}")))?;
    Ok(GuardedOAuthHttp::new(client, resolver, probe.allow.clone()))
}

fn failed(err: impl std::fmt::Display) -> ProbeError {
    ProbeError::OAuth(err.to_string())
}

/// One probe run's sign-ins.
pub(crate) struct Authorizer {
    options: OAuthOptions,
    http: GuardedOAuthHttp,
    url: String,
    /// The client this run registered (or was given), and its issuer.
    registered: Option<(Option<String>, ClientRecord)>,
    /// What the last sign-in asked for and was granted.
    asked: Vec<String>,
    signed_in: bool,
    step_ups: u32,
    reauthorizations: u32,
    /// The listener port of the last sign-in (its redirect URI is the one
    /// the client was registered with).
    port: Option<u16>,
}

impl Authorizer {
    /// Sign-ins for `probe.url`.
    pub(crate) fn new(probe: &Probe, options: OAuthOptions) -> Result<Self, ProbeError> {
        Ok(Self {
            options,
            http: guarded_http(probe)?,
            url: probe.url.clone(),
            registered: None,
            asked: Vec::new(),
            signed_in: false,
            step_ups: 0,
            reauthorizations: 0,
            port: None,
        })
    }

    /// A token that may satisfy the server that refused with `refusal`
    /// (its 401 or 403), or why there is none.
    pub(crate) async fn token_after(&mut self, refusal: &McpError) -> Result<Secret, ProbeError> {
        let McpError::Unauthorized { status, challenge } = refusal else {
            return Err(refusal.clone().into());
        };
        match (*status, challenge.as_deref()) {
            (403, Some(header)) => {
                let base = reqwest::Url::parse(&self.url).map_err(failed)?;
                let challenge = Challenge::parse(header, &base);
                let union = scopes::step_up(&self.asked, &challenge, self.step_ups)
                    .map_err(|why| failed(format!("no step-up: {why}")))?;
                self.step_ups += 1;
                self.sign_in(Some(header), union).await
            }
            (403, None) => Err(refusal.clone().into()),
            _ if !self.signed_in => self.sign_in(challenge.as_deref(), Vec::new()).await,
            _ if self.reauthorizations < MAX_REAUTHORIZATIONS => {
                self.reauthorizations += 1;
                self.sign_in(challenge.as_deref(), Vec::new()).await
            }
            _ => Err(failed(
                "the server refused the token of a new sign-in too (HTTP 401)",
            )),
        }
    }

    /// Discovery, the client, the authorization URL, the callback, the
    /// code exchanged: the access token.
    async fn sign_in(
        &mut self,
        challenge: Option<&str>,
        scopes: Vec<String>,
    ) -> Result<Secret, ProbeError> {
        let discovered = oauth::discover(&self.http, &self.url, challenge)
            .await
            .map_err(failed)?;
        let issuer = discovered.metadata.issuer.clone();
        let registered = self
            .registered
            .as_ref()
            .filter(|(registered_with, _)| *registered_with == issuer)
            .map(|(_, client)| client.clone());
        let listener = callback::Listener::bind_on(self.port)
            .await
            .map_err(failed)?;
        self.port = Some(listener.port());
        let clients = Clients {
            entered: self.options.client_id.clone().map(|id| {
                let secret = self.options.client_secret.as_ref();
                (id, secret.map(|s| s.expose().to_owned()))
            }),
            registered,
            metadata_document: self.options.client_metadata_url.clone(),
        };
        let begun = oauth::begin(
            discovered,
            &self.url,
            SignIn {
                redirect_uri: listener.redirect_uri(),
                application_type: "native",
                client_name: CLIENT_NAME,
                scopes,
                clients,
                step_ups: self.step_ups,
                own_redirect_uri: None,
            },
        )
        .await
        .map_err(failed)?;
        self.registered = Some((issuer, begun.in_flight.client.clone()));
        listener.expect(&begun.csrf);
        eprintln!(
            "countersign connector probe: authorization URL: {}",
            begun.authorization_url
        );
        let wait = if self.options.follow {
            follow(
                &self.http,
                &begun.authorization_url,
                listener.redirect_uri(),
            )
            .await?;
            FOLLOW_WAIT
        } else {
            eprintln!(
                "countersign connector probe: open it in a browser; waiting up to {} s for the \
                 sign-in to come back to {}",
                BROWSER_WAIT.as_secs(),
                listener.redirect_uri()
            );
            BROWSER_WAIT
        };
        let came_back = listener.wait(wait).await.map_err(failed)?;
        let session = &begun.session;
        session
            .handle_callback_with_issuer(&came_back.code, &begun.csrf, came_back.iss.as_deref())
            .await
            .map_err(|e| failed(format!("the sign-in was not accepted: {e}")))?;
        let token = session
            .auth_manager
            .get_access_token()
            .await
            .map_err(failed)?;
        let granted = session.auth_manager.get_current_scopes().await;
        self.asked = scopes::union(&begun.in_flight.client.scopes, &granted);
        self.signed_in = true;
        Ok(Secret::new(token))
    }
}

/// `--oauth-follow`: plays the browser. GETs `authorization_url` through
/// the guard and follows redirects (each hop through the guard, at most
/// [`MAX_HOPS`]) until one points at `redirect_uri`, which it then
/// requests from the probe's own listener (loopback, no proxy).
pub(crate) async fn follow(
    http: &GuardedOAuthHttp,
    authorization_url: &str,
    redirect_uri: &str,
) -> Result<(), ProbeError> {
    let back = reqwest::Url::parse(redirect_uri).map_err(failed)?;
    let mut at = reqwest::Url::parse(authorization_url).map_err(failed)?;
    for _ in 0..=MAX_HOPS {
        let response = http
            .fetch(
                reqwest::Request::new(reqwest::Method::GET, at.clone()),
                false,
            )
            .await
            .map_err(|e| failed(format!("cannot open the authorization URL: {e}")))?;
        let status = response.status();
        if !status.is_redirection() {
            return Err(failed(format!(
                "the authorization server answered HTTP {} instead of sending the browser back: \
                 it wants a person to sign in; run without --oauth-follow and open the URL",
                status.as_u16()
            )));
        }
        let next = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .and_then(|l| at.join(l).ok())
            .ok_or_else(|| failed("the authorization server redirected without a Location"))?;
        if is_redirect_uri(&next, &back) {
            return deliver(next).await;
        }
        at = next;
    }
    Err(failed(format!(
        "the authorization server redirected more than {MAX_HOPS} times without coming back"
    )))
}

/// Whether `url` is the redirect URI (same scheme, host, port and path; the
/// query is the callback's).
fn is_redirect_uri(url: &reqwest::Url, redirect_uri: &reqwest::Url) -> bool {
    url.scheme() == redirect_uri.scheme()
        && url.host_str() == redirect_uri.host_str()
        && url.port_or_known_default() == redirect_uri.port_or_known_default()
        && url.path() == redirect_uri.path()
        && url.fragment().is_none()
}

/// Hands the callback to the probe's own loopback listener.
async fn deliver(callback: reqwest::Url) -> Result<(), ProbeError> {
    let loopback = callback
        .host_str()
        .and_then(|h| h.parse::<std::net::Ipv4Addr>().ok())
        .is_some_and(|ip| ip.is_loopback());
    if !loopback {
        return Err(failed(
            "the redirect URI is not the probe's loopback listener",
        ));
    }
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .timeout(FOLLOW_WAIT)
        .build()
        .map_err(failed)?;
    let response = client.get(callback).send().await.map_err(failed)?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(failed(format!(
            "the probe's callback listener refused the redirect (HTTP {})",
            response.status().as_u16()
        )))
    }
}

/// Without `--oauth`, a 401: what the server's metadata says, so an
/// operator knows what to set up (or `refusal` itself when the metadata
/// cannot be read).
pub(crate) async fn describe(probe: &Probe, refusal: McpError) -> ProbeError {
    let Ok(http) = guarded_http(probe) else {
        return refusal.into();
    };
    let discovered = match oauth::discover(&http, &probe.url, refusal.auth_challenge()).await {
        Ok(discovered) => discovered,
        Err(err) => {
            tracing::debug!(error = %err, "probe: no OAuth metadata");
            return refusal.into();
        }
    };
    let metadata = &discovered.metadata;
    let words = |scopes: &[String]| match scopes {
        [] => "none named".to_owned(),
        scopes => scopes.join(" "),
    };
    let flag = |key: &str| {
        metadata
            .additional_fields
            .get(key)
            .and_then(serde_json::Value::as_bool)
            == Some(true)
    };
    ProbeError::NeedsSignIn {
        issuer: metadata
            .issuer
            .clone()
            .unwrap_or_else(|| "(no issuer named)".to_owned()),
        scopes: words(&discovered.manager.select_initial_scopes(&[]).await),
        offered: words(metadata.scopes_supported.as_deref().unwrap_or_default()),
        registration: match (
            metadata.registration_endpoint.is_some(),
            flag("client_id_metadata_document_supported"),
        ) {
            (true, true) => "dynamic registration and client metadata documents",
            (true, false) => "dynamic registration",
            (false, true) => "client metadata documents (--client-metadata-url)",
            (false, false) => "neither: register a client there and pass --client-id",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::{
        Router,
        extract::{Query, State},
        http::{StatusCode, header},
        response::{IntoResponse, Response},
        routing::get,
    };
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Serves `router` on 127.0.0.1; its address.
    async fn serve(router: Router) -> std::net::SocketAddr {
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binds");
        let addr = tcp.local_addr().expect("an address");
        tokio::spawn(async move { axum::serve(tcp, router).await });
        addr
    }

    /// The guarded OAuth client, letting only `addr` through.
    fn guarded_to(addr: std::net::SocketAddr) -> GuardedOAuthHttp {
        let probe = Probe {
            url: format!("http://{addr}/mcp"),
            headers: Vec::new(),
            bearer: None,
            allow: addr.to_string().parse().expect("an allow list"),
            call: None,
            elicit: None,
            json: false,
            oauth: None,
        };
        guarded_http(&probe).expect("a client")
    }

    fn redirect(to: String) -> Response {
        (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
    }

    /// An authorization server whose `/authorize` goes through `/consent`
    /// and back to the `redirect_uri` with a code and the `state`.
    fn headless_authorization_server() -> Router {
        Router::new()
            .route(
                "/authorize",
                get(|Query(q): Query<HashMap<String, String>>| async move {
                    redirect(format!(
                        "/consent?back={}&state={}",
                        urlencode(&q["redirect_uri"]),
                        q["state"]
                    ))
                }),
            )
            .route(
                "/consent",
                get(|Query(q): Query<HashMap<String, String>>| async move {
                    redirect(format!("{}?code=the-code&state={}", q["back"], q["state"]))
                }),
            )
    }

    fn urlencode(text: &str) -> String {
        let mut url = reqwest::Url::parse("http://x/").expect("URL");
        url.query_pairs_mut().append_pair("v", text);
        url.query().unwrap_or_default()[2..].to_owned()
    }

    #[tokio::test]
    async fn follow_plays_the_browser_through_the_authorization_server_back_to_the_listener() {
        let addr = serve(headless_authorization_server()).await;
        let listener = callback::Listener::bind().await.expect("binds");
        listener.expect("st");
        let authorization_url = format!(
            "http://{addr}/authorize?state=st&redirect_uri={}",
            urlencode(listener.redirect_uri())
        );

        follow(
            &guarded_to(addr),
            &authorization_url,
            listener.redirect_uri(),
        )
        .await
        .expect("followed");

        let came_back = listener.wait(Duration::from_secs(5)).await;
        assert_eq!(came_back.map(|c| c.code), Ok("the-code".to_owned()));
    }

    /// What `follow` says when the authorization server at `addr`
    /// does not come back.
    async fn follow_fails(addr: std::net::SocketAddr) -> String {
        let listener = callback::Listener::bind().await.expect("binds");
        follow(
            &guarded_to(addr),
            &format!("http://{addr}/authorize"),
            listener.redirect_uri(),
        )
        .await
        .expect_err("follow stops")
        .to_string()
    }

    #[tokio::test]
    async fn a_sign_in_page_stops_follow_with_the_reason() {
        let addr =
            serve(Router::new().route("/authorize", get(|| async { "<form>Sign in</form>" })))
                .await;

        let err = follow_fails(addr).await;

        assert!(err.contains("wants a person"), "{err}");
    }

    #[tokio::test]
    async fn a_redirect_anywhere_but_the_listener_goes_through_the_guard() {
        // A loopback "callback" the allow list does not name: the guard
        // refuses it, so it is never requested.
        let hits = Arc::new(AtomicUsize::new(0));
        let elsewhere = serve(
            Router::new()
                .route(
                    "/callback",
                    get(|State(hits): State<Arc<AtomicUsize>>| async move {
                        hits.fetch_add(1, Ordering::SeqCst);
                        "caught"
                    }),
                )
                .with_state(hits.clone()),
        )
        .await;
        let addr =
            serve(Router::new().route(
                "/authorize",
                get(move || async move {
                    redirect(format!("http://{elsewhere}/callback?code=c&state=s"))
                }),
            ))
            .await;

        let err = follow_fails(addr).await;

        assert!(err.contains("refused"), "{err}");
        assert_eq!(hits.load(Ordering::SeqCst), 0, "nothing reached it");
    }

    #[tokio::test]
    async fn follow_gives_up_on_an_authorization_server_that_redirects_in_circles() {
        let addr = serve(Router::new().route(
            "/authorize",
            get(|| async { redirect("/authorize".to_owned()) }),
        ))
        .await;

        let err = follow_fails(addr).await;

        assert!(err.contains("more than 5 times"), "{err}");
    }

    #[test]
    fn only_the_redirect_uri_itself_counts_as_coming_back() {
        let back: reqwest::Url = "http://127.0.0.1:4000/callback".parse().expect("URL");
        let cases = [
            (
                "http://127.0.0.1:4000/callback?code=c&state=s",
                true,
                "the callback",
            ),
            (
                "http://127.0.0.1:4001/callback?code=c",
                false,
                "another port",
            ),
            (
                "http://localhost:4000/callback?code=c",
                false,
                "another host name",
            ),
            (
                "http://127.0.0.1:4000/callback/x?code=c",
                false,
                "another path",
            ),
            (
                "https://127.0.0.1:4000/callback?code=c",
                false,
                "another scheme",
            ),
            (
                "http://127.0.0.1:4000/callback?code=c#x",
                false,
                "a fragment",
            ),
        ];
        for (url, expected, why) in cases {
            let url: reqwest::Url = url.parse().expect("URL");
            assert_eq!(is_redirect_uri(&url, &back), expected, "{why}");
        }
    }
}
