//! Issue 15 item 6, the SSRF corpus: several hundred generated hostile URLs
//! ([`corpus`]) driven through the real server — connector add
//! (`POST /api/connectors`), URL change (`PATCH /api/connectors/{id}`),
//! redirects from an allow-listed server, every URL an OAuth sign-in
//! fetches (the challenge's `resource_metadata`, `authorization_servers`,
//! `registration_endpoint`, `token_endpoint`, and redirects during
//! discovery and registration), and names that rebind between check and
//! connect (at Test after an add or a URL change, and in OAuth discovery)
//! — against counting listeners on loopback ([`fixtures`]). The invariant:
//! every URL refused (with its reason, where the user is told one), 0
//! connections accepted by a listener, 0 connections let through to a
//! non-allowed address.
//!
//! The layer driven is the HTTP API of an in-process server
//! (`spawn_app_custom`, a real Postgres), whose `AppState` gets the stub
//! resolver as `resolver` and, as `connector_http`, the guard's own
//! `ssrf::guarded_client` over that stub with the [`fixtures::Tripwire`]
//! under the guard's connector layer: every check and connection runs the
//! product's code, only DNS is stubbed and the socket layer watched.
//!
//! Here rather than in the `ssrf` test crate because every surface is an
//! API request and needs the API crate's server, database and signed-in
//! client; the guard-level verdicts are checked here too, directly with
//! `ssrf::check`, on the same corpus.

mod corpus;
mod fixtures;

use crate::faults_report::check as row;
use crate::helpers::TestApp;
use corpus::{Corpus, Expect, Group, Hostile};
use countersign::ssrf::{self, AllowList};
use fixtures::{HostileServer, Listeners, Role, Stub, Tripwire};
use futures_util::StreamExt as _;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;

/// Requests in flight at once.
const CONCURRENCY: usize = 8;

/// One app with the corpus, the listeners, the stub and the tripwire, and
/// a hostile server per role (all allow-listed, so every other loopback
/// destination is not).
struct Rig {
    listeners: Listeners,
    stub: Arc<Stub>,
    corpus: Corpus,
    servers: Vec<HostileServer>,
    app: TestApp,
    tripwire: Tripwire,
}

impl Rig {
    async fn start(roles: &[Role]) -> Self {
        let listeners = Listeners::start().await;
        let stub = Arc::new(Stub::default());
        let corpus = Corpus::generate(&listeners, &stub);
        let urls = Arc::new(corpus.strings());
        let mut servers = Vec::new();
        for &role in roles {
            servers.push(HostileServer::start(role, Arc::clone(&urls)).await);
        }
        let (app, tripwire) = fixtures::app(stub.clone(), &allow_list(&servers)).await;
        Self {
            listeners,
            stub,
            corpus,
            servers,
            app,
            tripwire,
        }
    }

    /// Connections let through to anything but the hostile servers.
    fn stray_dials(&self) -> Vec<String> {
        let allowed: Vec<SocketAddr> = self.servers.iter().map(|s| s.addr).collect();
        self.tripwire
            .dials()
            .into_iter()
            .filter(|d| d.addrs.iter().any(|a| !allowed.contains(a)))
            .map(|d| format!("{} → {:?}", d.uri, d.addrs))
            .collect()
    }

    /// "N connections, M dials" as a row's figures.
    fn traffic(&self) -> (usize, usize, String) {
        let connections = self.listeners.total();
        let stray = self.stray_dials();
        let figures = format!(
            "{connections} connections, {} dials to non-allowed addresses{}",
            stray.len(),
            stray
                .first()
                .map_or_else(String::new, |d| format!(" (first: {d})"))
        );
        (connections, stray.len(), figures)
    }
}

/// `COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS` for the hostile servers only.
fn allow_list(servers: &[HostileServer]) -> String {
    let entries: Vec<String> = servers.iter().map(|s| s.addr.to_string()).collect();
    // Never empty: a listed entry is what real deployments with loopback
    // servers have, and it must not open anything else.
    if entries.is_empty() {
        return "127.0.0.1:9999".to_owned();
    }
    entries.join(",")
}

/// A response's status and `detail`.
async fn answer(res: reqwest::Response) -> (StatusCode, Value) {
    let status = res.status();
    let body = res.json::<Value>().await.unwrap_or(Value::Null);
    (status, body)
}

fn detail(body: &Value) -> &str {
    body["detail"].as_str().unwrap_or_default()
}

/// Runs `each` over `items`, [`CONCURRENCY`] at a time, in order.
async fn each<T, F, Fut, O>(items: Vec<T>, f: F) -> Vec<O>
where
    F: FnMut(T) -> Fut,
    Fut: std::future::Future<Output = O>,
{
    futures_util::stream::iter(items.into_iter().map(f))
        .buffered(CONCURRENCY)
        .collect()
        .await
}

/// The corpus's URLs in `group`.
fn in_group(corpus: &Corpus, group: Group) -> Vec<Hostile> {
    corpus
        .urls
        .iter()
        .filter(|h| h.group == group)
        .cloned()
        .collect()
}

/// Their URLs.
fn urls(hostile: &[Hostile]) -> Vec<String> {
    hostile.iter().map(|h| h.url.clone()).collect()
}

/// A refusal with the wrong words, for a row.
fn first_wrong(wrong: &[String]) -> String {
    wrong
        .first()
        .map_or_else(String::new, |w| format!("; first wrong: {w}"))
}

#[tokio::test]
async fn corpus_is_generated_and_the_guard_names_each_refusal() {
    let listeners = Listeners::start().await;
    let stub = Stub::default();
    let corpus = Corpus::generate(&listeners, &stub);
    let groups = corpus.groups();
    let size = corpus.urls.len();
    let breakdown: Vec<String> = groups.iter().map(|(g, n)| format!("{n} {g}")).collect();
    row(
        "SSRF corpus: size",
        "at least 300 generated hostile URLs",
        &format!("{size} URLs: {}", breakdown.join("; ")),
        size >= 300 && groups.len() == 6,
    );

    let allow = AllowList::parse("127.0.0.1:9999").expect("valid");
    let mut wrong = Vec::new();
    for hostile in &corpus.urls {
        match ssrf::check(&hostile.url, &stub, &allow).await {
            Ok(target) => wrong.push(format!("{} passed as {:?}", hostile.url, target.addrs())),
            Err(err) if !hostile.expect.is(&err) => wrong.push(format!(
                "{}: expected {:?}, got {err:?}",
                hostile.url, hostile.expect
            )),
            Err(_) => {}
        }
    }
    row(
        "SSRF corpus: ssrf::check on every URL",
        "each refused with its expected SsrfError (class, spelling, userinfo, %, local name)",
        &format!(
            "{} of {size} refused as expected, {} not{}",
            size - wrong.len(),
            wrong.len(),
            first_wrong(&wrong)
        ),
        wrong.is_empty(),
    );
}

#[tokio::test]
async fn connector_add_refuses_the_corpus() {
    let rig = Rig::start(&[]).await;
    let app = &rig.app;
    let mut refused_total = 0;
    for (group, _) in rig.corpus.groups() {
        let hostile = in_group(&rig.corpus, group);
        let answers = each(urls(&hostile), |url| async move {
            answer(
                app.post("/api/connectors", &json!({"name": "hostile", "url": url}))
                    .await,
            )
            .await
        })
        .await;
        let wrong: Vec<String> = hostile
            .iter()
            .zip(&answers)
            .filter(|(h, (status, body))| {
                *status != StatusCode::UNPROCESSABLE_ENTITY
                    || !h.expect.at_the_form(&h.url).said_by(detail(body))
            })
            .map(|(h, (status, body))| format!("{} → {status} {}", h.url, detail(body)))
            .collect();
        let refused = hostile.len() - wrong.len();
        refused_total += refused;
        let (connections, stray, traffic) = rig.traffic();
        row(
            &format!("SSRF connector add: {} {group}", hostile.len()),
            "all refused (422, the reason named), 0 connections, 0 dials",
            &format!("{refused} refused, {traffic}{}", first_wrong(&wrong)),
            wrong.is_empty() && connections == 0 && stray == 0,
        );
    }
    let listed = app.get_array("/api/connectors").await;
    let (connections, stray, traffic) = rig.traffic();
    let size = rig.corpus.urls.len();
    row(
        "SSRF connector add: total",
        "every corpus URL refused, no connector stored, 0 connections to the listeners",
        &format!(
            "{refused_total}/{size} refused, {} connectors stored, {traffic} (listeners on {})",
            listed.len(),
            rig.listeners.describe()
        ),
        refused_total == size && listed.is_empty() && connections == 0 && stray == 0,
    );
}

/// Adds a connector at `url` (which must pass), with `auth`.
async fn add(app: &TestApp, name: &str, url: &str, auth: Value) -> String {
    let (status, body) = answer(
        app.post(
            "/api/connectors",
            &json!({"name": name, "url": url, "auth": auth}),
        )
        .await,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "add {url}: {body}");
    body["id"].as_str().expect("an id").to_owned()
}

#[tokio::test]
async fn connector_url_change_refuses_the_corpus() {
    let rig = Rig::start(&[Role::McpRedirect]).await;
    let app = &rig.app;
    let home = rig.servers[0].mcp_url(0);
    let id = add(app, "Home", &home, json!({"type": "none"})).await;
    let path = format!("/api/connectors/{id}");
    let mut refused_total = 0;
    for (group, _) in rig.corpus.groups() {
        let hostile = in_group(&rig.corpus, group);
        let path = &path;
        let answers = each(urls(&hostile), |url| async move {
            answer(
                app.request(reqwest::Method::PATCH, path, Some(json!({"url": url})))
                    .await,
            )
            .await
        })
        .await;
        let wrong: Vec<String> = hostile
            .iter()
            .zip(&answers)
            .filter(|(h, (status, body))| {
                *status != StatusCode::UNPROCESSABLE_ENTITY
                    || !h.expect.at_the_form(&h.url).said_by(detail(body))
            })
            .map(|(h, (status, body))| format!("{} → {status} {}", h.url, detail(body)))
            .collect();
        let refused = hostile.len() - wrong.len();
        refused_total += refused;
        let (connections, stray, traffic) = rig.traffic();
        row(
            &format!("SSRF connector URL change: {} {group}", hostile.len()),
            "all refused (422, the same reason as on add), 0 connections, 0 dials",
            &format!("{refused} refused, {traffic}{}", first_wrong(&wrong)),
            wrong.is_empty() && connections == 0 && stray == 0,
        );
    }
    let url = app.get_json(&path).await["url"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let (connections, stray, traffic) = rig.traffic();
    let size = rig.corpus.urls.len();
    row(
        "SSRF connector URL change: total",
        "every corpus URL refused, the connector still points where it did, 0 connections",
        &format!(
            "{refused_total}/{size} refused, URL {}, {traffic}",
            if url == home { "unchanged" } else { "CHANGED" }
        ),
        refused_total == size && url == home && connections == 0 && stray == 0,
    );
}

#[tokio::test]
async fn the_rig_counts_a_connection_the_guard_lets_through() {
    // The control: the same rig, with the listeners themselves
    // allow-listed, sees the connections a bypass would make.
    let listeners = Listeners::start().await;
    let stub = Arc::new(Stub::default());
    let _corpus = Corpus::generate(&listeners, &stub);
    let v4 = listeners
        .port_for(fixtures::ip("127.0.0.1"))
        .expect("a port");
    let v6 = listeners.port_for(fixtures::ip("::1")).expect("a port");
    let (app, tripwire) = fixtures::app(stub.clone(), &format!("127.0.0.1:{v4},[::1]:{v6}")).await;
    let urls = [
        format!("http://127.0.0.1:{v4}/mcp"),
        format!("http://[::1]:{v6}/mcp"),
        format!("http://loop.corpus.test:{v4}/mcp"),
    ];
    let mut statuses = Vec::new();
    for (i, url) in urls.iter().enumerate() {
        let id = add(&app, &format!("control {i}"), url, json!({"type": "none"})).await;
        let (status, _) = answer(
            app.post(&format!("/api/connectors/{id}/test"), &json!({}))
                .await,
        )
        .await;
        statuses.push(status.as_u16());
    }
    let connections = listeners.total();
    let dials = tripwire.dials().len();
    row(
        "SSRF control: allow-listed listeners, same rig",
        "each allowed URL is really connected to and counted (so a bypass would show)",
        &format!(
            "{} URLs, {connections} connections counted, {dials} dials recorded, test answered {statuses:?}",
            urls.len()
        ),
        connections >= urls.len() && dials >= urls.len(),
    );
}

#[tokio::test]
async fn rebinding_between_check_and_connect_is_refused_at_connect() {
    let rig = Rig::start(&[Role::McpRedirect]).await;
    let app = &rig.app;
    // Public for the add's check and the Test's own check, then the
    // target: the answer the connection itself gets.
    let rebound = corpus::rebinding(&rig.listeners, &rig.stub, "add", 2);
    let mut wrong = Vec::new();
    for (i, r) in rebound.iter().enumerate() {
        let id = add(app, &format!("rebind {i}"), &r.url, json!({"type": "none"})).await;
        let (status, body) = answer(
            app.post(&format!("/api/connectors/{id}/test"), &json!({}))
                .await,
        )
        .await;
        if status != StatusCode::BAD_GATEWAY || !Expect::Class(r.class).said_by(detail(&body)) {
            wrong.push(format!("{} → {status} {}", r.url, detail(&body)));
        }
    }
    let (connections, stray, traffic) = rig.traffic();
    row(
        &format!(
            "SSRF rebinding after connector add: {} names (public at check, loopback/private at connect)",
            rebound.len()
        ),
        "added (public then), Test refused at connect with the address named, 0 connections",
        &format!(
            "{} refused at connect, {traffic}{}",
            rebound.len() - wrong.len(),
            first_wrong(&wrong)
        ),
        wrong.is_empty() && connections == 0 && stray == 0,
    );

    let rebound = corpus::rebinding(&rig.listeners, &rig.stub, "patch", 2);
    let home = rig.servers[0].mcp_url(0);
    let mut wrong = Vec::new();
    for (i, r) in rebound.iter().enumerate() {
        let id = add(
            app,
            &format!("repointed {i}"),
            &home,
            json!({"type": "none"}),
        )
        .await;
        let path = format!("/api/connectors/{id}");
        let (patched, _) = answer(
            app.request(reqwest::Method::PATCH, &path, Some(json!({"url": r.url})))
                .await,
        )
        .await;
        let (status, body) = answer(app.post(&format!("{path}/test"), &json!({})).await).await;
        if patched != StatusCode::OK
            || status != StatusCode::BAD_GATEWAY
            || !Expect::Class(r.class).said_by(detail(&body))
        {
            wrong.push(format!(
                "{} → PATCH {patched}, test {status} {}",
                r.url,
                detail(&body)
            ));
        }
    }
    let (connections, stray, traffic) = rig.traffic();
    row(
        &format!(
            "SSRF rebinding after URL change: {} names (public at check, loopback/private at connect)",
            rebound.len()
        ),
        "re-pointed (public then), Test refused at connect with the address named, 0 connections",
        &format!(
            "{} refused at connect, {traffic}{}",
            rebound.len() - wrong.len(),
            first_wrong(&wrong)
        ),
        wrong.is_empty() && connections == 0 && stray == 0,
    );
}

#[tokio::test]
async fn oauth_discovery_rebinding_between_check_and_connect_is_refused() {
    // The protected-resource metadata names an authorization server whose
    // name answers public to the OAuth client's check and loopback or
    // private to the connection right after.
    let listeners = Listeners::start().await;
    let stub = Arc::new(Stub::default());
    let _corpus = Corpus::generate(&listeners, &stub);
    let rebound = corpus::rebinding(&listeners, &stub, "oauth", 1);
    let urls = Arc::new(rebound.iter().map(|r| r.url.clone()).collect::<Vec<_>>());
    let server = HostileServer::start(Role::AuthorizationServer, urls).await;
    let (app, tripwire) = fixtures::app(stub.clone(), &server.addr.to_string()).await;
    let mut started = Vec::new();
    for (i, r) in rebound.iter().enumerate() {
        let id = add(
            &app,
            &format!("oauth rebind {i}"),
            &server.mcp_url(i),
            json!({"type": "oauth"}),
        )
        .await;
        let (status, _) = answer(
            app.post(&format!("/api/connectors/{id}/oauth/start"), &json!({}))
                .await,
        )
        .await;
        if status == StatusCode::OK {
            started.push(r.url.clone());
        }
    }
    let connections = listeners.total();
    let stray: Vec<_> = tripwire
        .dials()
        .into_iter()
        .filter(|d| d.addrs.iter().any(|a| *a != server.addr))
        .collect();
    // Each name asked twice: the check (public) and the connection (the
    // target), so the refusal was the connection's.
    let lookups: Vec<usize> = rebound.iter().map(|r| stub.asked(&r.name)).collect();
    row(
        &format!(
            "SSRF rebinding in OAuth discovery: {} authorization servers (public at check, loopback/private at connect)",
            rebound.len()
        ),
        "the sign-in fails at the connection, 0 connections, 0 dials beyond the allowed server",
        &format!(
            "{} refused, lookups per name {lookups:?}, {connections} connections, {} dials to non-allowed addresses",
            rebound.len() - started.len(),
            stray.len()
        ),
        started.is_empty()
            && lookups.iter().all(|&n| n >= 2)
            && connections == 0
            && stray.is_empty(),
    );
}

#[tokio::test]
async fn redirects_from_an_allowed_server_are_never_followed() {
    let rig = Rig::start(&[Role::McpRedirect]).await;
    let app = &rig.app;
    let server = &rig.servers[0];
    let carried: Vec<usize> = rig
        .corpus
        .distinct_after_parsing()
        .into_iter()
        .filter(|&i| fixtures::fits_a_header(&rig.corpus.urls[i].url))
        .collect();
    let outcomes = each(carried.clone(), |i| async move {
        let id = add(
            app,
            &format!("redirect {i}"),
            &server.mcp_url(i),
            json!({"type": "none"}),
        )
        .await;
        answer(
            app.post(&format!("/api/connectors/{id}/test"), &json!({}))
                .await,
        )
        .await
        .0
    })
    .await;
    let refused = outcomes
        .iter()
        .filter(|s| **s == StatusCode::BAD_GATEWAY)
        .count();
    let (connections, stray, traffic) = rig.traffic();
    row(
        &format!(
            "SSRF MCP redirects: {} corpus URLs (distinct once parsed) as Location (301/302/303/307/308) from an allowed server",
            carried.len()
        ),
        "Test fails (502), the redirect never followed: 0 connections, 0 dials beyond the allowed server",
        &format!(
            "{refused} failed with 502, {} requests served by the allowed server, {traffic}",
            server.hits()
        ),
        refused == carried.len() && connections == 0 && stray == 0,
    );
}

/// One OAuth role over the corpus: an OAuth connector per URL at the
/// hostile server, whose sign-in (`…/oauth/start`, and for the token
/// endpoint the callback) meets the URL where `role` puts it.
async fn oauth_role(role: Role, what: &str) {
    let rig = Rig::start(&[role]).await;
    let app = &rig.app;
    let server = &rig.servers[0];
    let in_header = matches!(
        role,
        Role::ChallengePointer
            | Role::MetadataRedirect
            | Role::ServerMetadataRedirect
            | Role::RegistrationRedirect
    );
    let used: Vec<usize> = rig
        .corpus
        .distinct_after_parsing()
        .into_iter()
        .filter(|&i| !in_header || fixtures::fits_a_header(&rig.corpus.urls[i].url))
        .collect();
    let outcomes = each(used.clone(), |i| async move {
        let id = add(
            app,
            &format!("oauth {i}"),
            &server.mcp_url(i),
            json!({"type": "oauth"}),
        )
        .await;
        let (status, body) = answer(
            app.post(&format!("/api/connectors/{id}/oauth/start"), &json!({}))
                .await,
        )
        .await;
        if status != StatusCode::OK {
            return (i, Outcome::RefusedAtStart(status, detail(&body).to_owned()));
        }
        if role != Role::TokenEndpoint {
            return (i, Outcome::Started);
        }
        let authorization =
            reqwest::Url::parse(body["authorization_url"].as_str().unwrap_or_default())
                .expect("an authorization URL");
        let state = authorization
            .query_pairs()
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        let mut callback = reqwest::Url::parse(&app.url("/oauth/callback")).expect("a URL");
        callback
            .query_pairs_mut()
            .append_pair("code", "corpus-code")
            .append_pair("state", &state)
            .append_pair("iss", &server.issuer(i));
        let res = app.client.get(callback).send().await.expect("the callback");
        let back = res
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let connected =
            app.get_json(&format!("/api/connectors/{id}")).await["oauth_status"] == "connected";
        if res.status() == StatusCode::SEE_OTHER && back.contains("oauth_error") && !connected {
            (i, Outcome::RefusedAtToken)
        } else {
            (i, Outcome::Started)
        }
    })
    .await;
    let at_start = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::RefusedAtStart(..)))
        .count();
    let at_token = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::RefusedAtToken))
        .count();
    let through: Vec<String> = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Started))
        .map(|(i, _)| rig.corpus.urls[*i].url.clone())
        .collect();
    let sample = outcomes.iter().find_map(|(_, o)| match o {
        Outcome::RefusedAtStart(status, detail) => Some(format!("{status} {detail}")),
        _ => None,
    });
    let (connections, stray, traffic) = rig.traffic();
    row(
        &format!(
            "SSRF OAuth {what}: {} corpus URLs (distinct once parsed{})",
            used.len(),
            if in_header { ", fit for a header" } else { "" }
        ),
        "the sign-in fails, 0 connections to the URL, 0 dials beyond the allowed server",
        &format!(
            "{at_start} refused at start, {at_token} at the token request, {} went through, {} requests served by the allowed server, {traffic}{}{}",
            through.len(),
            server.hits(),
            through
                .first()
                .map_or_else(String::new, |u| format!("; first through: {u}")),
            sample.map_or_else(String::new, |s| format!("; e.g. {s}"))
        ),
        through.is_empty() && connections == 0 && stray == 0,
    );
}

/// How one OAuth sign-in over a hostile URL ended.
#[derive(Debug)]
enum Outcome {
    /// `…/oauth/start` refused, with this status and detail.
    RefusedAtStart(StatusCode, String),
    /// The callback's token request refused (the user lands on Settings
    /// with `oauth_error`, not connected).
    RefusedAtToken,
    /// Nothing refused it.
    Started,
}

#[tokio::test]
async fn oauth_challenge_resource_metadata_pointers_are_refused() {
    oauth_role(
        Role::ChallengePointer,
        "challenge resource_metadata pointer",
    )
    .await;
}

#[tokio::test]
async fn oauth_authorization_servers_are_refused() {
    oauth_role(
        Role::AuthorizationServer,
        "protected-resource authorization_servers",
    )
    .await;
}

#[tokio::test]
async fn oauth_registration_endpoints_are_refused() {
    oauth_role(Role::RegistrationEndpoint, "metadata registration_endpoint").await;
}

#[tokio::test]
async fn oauth_token_endpoints_are_refused() {
    oauth_role(Role::TokenEndpoint, "metadata token_endpoint").await;
}

#[tokio::test]
async fn oauth_redirects_during_resource_metadata_discovery_are_refused() {
    oauth_role(
        Role::MetadataRedirect,
        "redirect from the resource metadata URL",
    )
    .await;
}

#[tokio::test]
async fn oauth_redirects_during_server_metadata_discovery_are_refused() {
    oauth_role(
        Role::ServerMetadataRedirect,
        "redirect from the server metadata URL",
    )
    .await;
}

#[tokio::test]
async fn oauth_redirects_from_the_registration_endpoint_are_refused() {
    oauth_role(
        Role::RegistrationRedirect,
        "redirect from the registration endpoint",
    )
    .await;
}
