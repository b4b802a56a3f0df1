//! The rig of the SSRF corpus: counting listeners on loopback addresses, a
//! stub resolver that answers the corpus's names (and scripts rebinding), a
//! tripwire inside the connector client that writes down every connection
//! the guard let through and dials only local addresses, an allow-listed
//! "hostile server" that hands the corpus out as OAuth metadata, challenges
//! and redirects, and the app wired to all of it.
//!
//! Nothing here sends a packet off the machine: names resolve through the
//! stub; the tripwire dials a destination only when every address it would
//! reach is local (127/8, `::1`, the unspecified addresses, IPv4-mapped
//! loopback), so a guard bypass towards a loopback address is a real
//! connection that a listener counts, and one towards anything else is a
//! recorded dial that never leaves.

use crate::helpers::{TestApp, spawn_app_custom};
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use countersign::config::Secret;
use countersign::ssrf::{AllowList, GuardedResolver, HostResolver, Lookup, guarded_client};
use reqwest::dns::{Name, Resolve as _};
use serde_json::json;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::error::Error as StdError;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::str::FromStr as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

type BoxError = Box<dyn StdError + Send + Sync>;

/// The deployment key the corpus app seals OAuth state with.
const KEY_HEX: &str = "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

/// The public address the stub gives public names (never dialled).
pub const PUBLIC_V4: &str = "93.184.216.34";
/// A public IPv6 address (never dialled).
pub const PUBLIC_V6: &str = "2606:2800:220:1::";

/// The loopback addresses the corpus aims at, each with a counting
/// listener: a URL at one of them that got past the guard would connect.
pub const LISTEN_ON: &[&str] = &["127.0.0.1", "127.0.0.2", "127.255.255.254", "::1"];

/// TCP listeners that count the connections they accept (and drop them).
#[derive(Debug)]
pub struct Listeners {
    ports: HashMap<IpAddr, u16>,
    accepted: Arc<Mutex<BTreeMap<SocketAddr, usize>>>,
}

impl Listeners {
    /// One listener on a free port of each of [`LISTEN_ON`].
    pub async fn start() -> Self {
        let accepted: Arc<Mutex<BTreeMap<SocketAddr, usize>>> = Arc::default();
        let mut ports = HashMap::new();
        for addr in LISTEN_ON {
            let listener = tokio::net::TcpListener::bind((ip(addr), 0))
                .await
                .unwrap_or_else(|e| panic!("cannot listen on {addr}: {e}"));
            let local = listener.local_addr().expect("a bound address");
            ports.insert(local.ip(), local.port());
            accepted.lock().expect("lock").insert(local, 0);
            let counts = Arc::clone(&accepted);
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    *counts.lock().expect("lock").entry(local).or_default() += 1;
                    drop(stream);
                }
            });
        }
        Self { ports, accepted }
    }

    /// The port a connection to `addr` would land on, if `addr` reaches
    /// one of the listeners (the unspecified addresses and IPv4-mapped
    /// loopback reach this host's loopback listeners).
    pub fn port_for(&self, addr: IpAddr) -> Option<u16> {
        let local = match addr {
            IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 => v4,
        };
        self.ports.get(&local).copied()
    }

    /// Connections accepted so far, all listeners together.
    pub fn total(&self) -> usize {
        self.accepted.lock().expect("lock").values().sum()
    }

    /// Where the listeners are, for a row.
    pub fn describe(&self) -> String {
        let mut addrs: Vec<String> = self
            .accepted
            .lock()
            .expect("lock")
            .keys()
            .map(ToString::to_string)
            .collect();
        addrs.sort();
        addrs.join(", ")
    }
}

/// Parses a fixture address.
pub fn ip(addr: &str) -> IpAddr {
    addr.parse().expect("a fixture address")
}

/// A resolver answering from a table, never the network. Names compare as
/// DNS does (case-insensitive, trailing dot ignored). A name may have a
/// script of answers (rebinding): each lookup takes the next, the last
/// repeats.
#[derive(Debug, Default)]
pub struct Stub {
    answers: Mutex<HashMap<String, VecDeque<Vec<IpAddr>>>>,
    asked: Mutex<HashMap<String, usize>>,
}

fn dns_key(name: &str) -> String {
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

impl Stub {
    /// `name` answers each of `answers` in turn, then keeps the last.
    pub fn script(&self, name: &str, answers: Vec<Vec<IpAddr>>) {
        self.answers
            .lock()
            .expect("stub lock")
            .insert(dns_key(name), answers.into());
    }

    /// How often `name` was looked up.
    pub fn asked(&self, name: &str) -> usize {
        let asked = self.asked.lock().expect("stub lock");
        asked.get(&dns_key(name)).copied().unwrap_or_default()
    }
}

impl HostResolver for Stub {
    fn lookup<'a>(&'a self, host: &'a str) -> Lookup<'a> {
        *self
            .asked
            .lock()
            .expect("stub lock")
            .entry(dns_key(host))
            .or_default() += 1;
        let mut answers = self.answers.lock().expect("stub lock");
        let answer = match answers.get_mut(&dns_key(host)) {
            Some(queue) if queue.len() > 1 => queue.pop_front(),
            Some(queue) => queue.front().cloned(),
            None => None,
        };
        Box::pin(std::future::ready(answer.ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, "no such name")
        })))
    }
}

/// A connection the guard let through to the socket layer.
#[derive(Debug, Clone)]
pub struct Dial {
    /// The destination reqwest asked for (`scheme://host:port/`).
    pub uri: String,
    /// The addresses it would reach.
    pub addrs: Vec<SocketAddr>,
}

/// The connector layer under the guard's own: every connection that
/// reaches it passed the guard's connector layer; it resolves names with a
/// [`GuardedResolver`] over the same stub and allow-list (what the real
/// client's resolver does for that very connection), writes the
/// destination down, and then dials (through the real connector) only when
/// every address is local. Refused resolutions are not dials.
#[derive(Debug, Clone)]
pub struct Tripwire {
    resolver: GuardedResolver,
    dials: Arc<Mutex<Vec<Dial>>>,
}

impl Tripwire {
    fn new(resolver: Arc<dyn HostResolver>, allow: AllowList) -> Self {
        Self {
            resolver: GuardedResolver::new(resolver, allow),
            dials: Arc::default(),
        }
    }

    /// Every connection let through so far.
    pub fn dials(&self) -> Vec<Dial> {
        self.dials.lock().expect("tripwire lock").clone()
    }
}

/// Addresses that stay on this machine when dialled.
fn is_local(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_unspecified(),
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

impl<S> tower::Layer<S> for Tripwire {
    type Service = TripwireService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        TripwireService {
            inner,
            tripwire: self.clone(),
        }
    }
}

/// The service of [`Tripwire`].
#[derive(Debug, Clone)]
pub struct TripwireService<S> {
    inner: S,
    tripwire: Tripwire,
}

impl<S, R> tower::Service<R> for TripwireService<S>
where
    R: std::fmt::Debug + Send + 'static,
    S: tower::Service<R, Error = BoxError> + Clone + Send + 'static,
    S::Response: Send + 'static,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        // reqwest's connector request prints as `Unnameable(uri)`.
        let debug = format!("{request:?}");
        let uri = debug
            .strip_prefix("Unnameable(")
            .and_then(|rest| rest.strip_suffix(')'))
            .unwrap_or(&debug)
            .to_owned();
        let tripwire = self.tripwire.clone();
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let url = reqwest::Url::parse(&uri)?;
            let port = url.port_or_known_default().ok_or("no port")?;
            let host = url.host_str().ok_or("no host")?;
            let addrs = match host.trim_matches(['[', ']']).parse::<IpAddr>() {
                Ok(addr) => vec![SocketAddr::new(addr, port)],
                // A refusal here is the guard's, at connect time: no dial.
                Err(_) => tripwire
                    .resolver
                    .resolve(Name::from_str(host)?)
                    .await?
                    .map(|addr| SocketAddr::new(addr.ip(), port))
                    .collect(),
            };
            tripwire.dials.lock().expect("tripwire lock").push(Dial {
                uri: uri.clone(),
                addrs: addrs.clone(),
            });
            if addrs.iter().all(|a| is_local(a.ip())) {
                inner.call(request).await
            } else {
                Err(format!("the tripwire does not dial {addrs:?}").into())
            }
        })
    }
}

/// What the hostile server hands out where, for one corpus URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The MCP URL's 401 names it as `resource_metadata`.
    ChallengePointer,
    /// The protected-resource metadata lists it in `authorization_servers`.
    AuthorizationServer,
    /// The authorization-server metadata names it `registration_endpoint`.
    RegistrationEndpoint,
    /// The authorization-server metadata names it `token_endpoint`.
    TokenEndpoint,
    /// The protected-resource metadata URL answers a redirect to it.
    MetadataRedirect,
    /// The authorization-server metadata URL answers a redirect to it.
    ServerMetadataRedirect,
    /// The registration endpoint (on the server) answers a redirect to it.
    RegistrationRedirect,
    /// The MCP URL answers every request with a redirect to it.
    McpRedirect,
}

/// An allow-listed HTTP server that plays a malicious connector (MCP
/// resource and authorization server) for one [`Role`]: every request
/// names its corpus URL by index, `/{i}/mcp` and the well-known and OAuth
/// paths derived from it, and the corpus URL goes where the role says.
#[derive(Debug)]
pub struct HostileServer {
    /// Where it listens (allow-listed).
    pub addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

#[derive(Debug)]
struct Served {
    role: Role,
    base: String,
    urls: Arc<Vec<String>>,
    hits: Arc<AtomicUsize>,
}

impl HostileServer {
    /// Starts one for `role` over `urls`.
    pub async fn start(role: Role, urls: Arc<Vec<String>>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free port");
        let addr = listener.local_addr().expect("bound");
        let hits = Arc::new(AtomicUsize::new(0));
        let served = Arc::new(Served {
            role,
            base: format!("http://{addr}"),
            urls,
            hits: Arc::clone(&hits),
        });
        let app = Router::new().fallback(serve).with_state(served);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { addr, hits }
    }

    /// The issuer it names for corpus URL `i`.
    pub fn issuer(&self, i: usize) -> String {
        format!("http://{}/as/{i}", self.addr)
    }

    /// The MCP URL of corpus URL `i`.
    pub fn mcp_url(&self, i: usize) -> String {
        format!("http://{}/{i}/mcp", self.addr)
    }

    /// Requests served so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// A header carrying `url`, when it can be one (the corpus has URLs with
/// characters no header may carry).
fn header_value(url: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(url).ok()
}

/// Can a server put `url` in a header (`Location`, `WWW-Authenticate`)?
pub fn fits_a_header(url: &str) -> bool {
    header_value(url).is_some()
}

fn redirect(status: StatusCode, url: &str) -> Response {
    match header_value(url) {
        Some(location) => (status, [(header::LOCATION, location)]).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The corpus index and what is asked of it: `/{i}/mcp`,
/// `/.well-known/oauth-protected-resource/{i}/mcp`,
/// `/.well-known/oauth-authorization-server/as/{i}`, `/register/{i}`.
fn parse_path(path: &str) -> Option<(&'static str, usize)> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let index = |s: &str| s.parse::<usize>().ok();
    match segments.as_slice() {
        [i, "mcp"] => Some(("mcp", index(i)?)),
        [".well-known", "oauth-protected-resource", i, "mcp"] => Some(("prm", index(i)?)),
        [".well-known", "oauth-authorization-server", "as", i] => Some(("asm", index(i)?)),
        ["register", i] => Some(("register", index(i)?)),
        _ => None,
    }
}

async fn serve(State(s): State<Arc<Served>>, method: Method, uri: Uri) -> Response {
    s.hits.fetch_add(1, Ordering::SeqCst);
    let Some((what, i)) = parse_path(uri.path()) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let Some(hostile) = s.urls.get(i) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let base = &s.base;
    let prm = format!("{base}/.well-known/oauth-protected-resource/{i}/mcp");
    let issuer = format!("{base}/as/{i}");
    match (s.role, what) {
        (Role::McpRedirect, "mcp") => {
            let statuses = [
                StatusCode::MOVED_PERMANENTLY,
                StatusCode::FOUND,
                StatusCode::SEE_OTHER,
                StatusCode::TEMPORARY_REDIRECT,
                StatusCode::PERMANENT_REDIRECT,
            ];
            redirect(statuses[i % statuses.len()], hostile)
        }
        (Role::ChallengePointer, "mcp") => {
            match header_value(&format!("Bearer resource_metadata=\"{hostile}\"")) {
                Some(challenge) => (
                    StatusCode::UNAUTHORIZED,
                    [(header::WWW_AUTHENTICATE, challenge)],
                )
                    .into_response(),
                None => StatusCode::UNAUTHORIZED.into_response(),
            }
        }
        // Only the pointer: every other path of this role is a 404, so a
        // sign-in that ignored the pointer has nowhere else to go.
        (Role::ChallengePointer, _) => StatusCode::NOT_FOUND.into_response(),
        (_, "mcp") => (
            StatusCode::UNAUTHORIZED,
            [(
                header::WWW_AUTHENTICATE,
                format!("Bearer resource_metadata=\"{prm}\""),
            )],
        )
            .into_response(),
        (Role::MetadataRedirect, "prm") => redirect(StatusCode::FOUND, hostile),
        (role, "prm") if method == Method::GET => {
            let server = if role == Role::AuthorizationServer {
                hostile.clone()
            } else {
                issuer
            };
            axum::Json(json!({
                "resource": format!("{base}/{i}/mcp"),
                "authorization_servers": [server],
            }))
            .into_response()
        }
        (Role::ServerMetadataRedirect, "asm") => redirect(StatusCode::FOUND, hostile),
        (role, "asm") if method == Method::GET => {
            let pick = |mine: Role, own: String| {
                if role == mine { hostile.clone() } else { own }
            };
            axum::Json(json!({
                "issuer": issuer,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": pick(Role::TokenEndpoint, format!("{base}/token")),
                "registration_endpoint": pick(Role::RegistrationEndpoint, format!("{base}/register/{i}")),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "authorization_response_iss_parameter_supported": true,
            }))
            .into_response()
        }
        (Role::RegistrationRedirect, "register") => {
            redirect(StatusCode::TEMPORARY_REDIRECT, hostile)
        }
        (_, "register") if method == Method::POST => (
            StatusCode::CREATED,
            axum::Json(json!({
                "client_id": format!("corpus-client-{i}"),
                "redirect_uris": [],
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code"],
                "response_types": ["code"],
            })),
        )
            .into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The app under the corpus: the real server and database, connector
/// hosts resolved by `stub`, the connector client the guard's own
/// ([`guarded_client`]) with the [`Tripwire`] under it, `allow` as
/// `COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS`, a secret key (for OAuth), and a
/// signed-in user.
pub async fn app(stub: Arc<Stub>, allow: &str) -> (TestApp, Tripwire) {
    let allow = AllowList::parse(allow).expect("a valid allow-list");
    let tripwire = Tripwire::new(stub.clone(), allow.clone());
    let layer = tripwire.clone();
    let allow_for_config = allow.clone();
    let app = spawn_app_custom(
        move |c| {
            c.secret_key = Some(Secret::new(KEY_HEX));
            c.allow_private_connectors = allow_for_config;
        },
        move |state| {
            state.connector_http = guarded_client(
                reqwest::Client::builder().connector_layer(layer),
                stub.clone(),
                allow,
            )
            .expect("the guarded client");
            state.resolver = stub as Arc<dyn HostResolver>;
        },
    )
    .await;
    app.signed_up_user().await;
    (app, tripwire)
}
