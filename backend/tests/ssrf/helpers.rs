//! The pieces that keep these tests off the network: a stub resolver, a
//! connector layer that records where reqwest would dial and dials only
//! loopback literals, a loopback HTTP server, and `AllowListed`, the three
//! put together behind an allow-list.

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use countersign::ssrf::{
    AllowList, GuardedResolver, GuardedTarget, HostResolver, Lookup, SsrfError, check,
    guarded_client,
};
use reqwest::Url;
use reqwest::dns::{Name, Resolve as _};
use std::collections::{HashMap, VecDeque};
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

/// Parses a test address.
pub fn ip(addr: &str) -> IpAddr {
    addr.parse().expect("a test address")
}

/// `addr:port` for a test address.
pub fn sock(addr: &str, port: u16) -> SocketAddr {
    SocketAddr::new(ip(addr), port)
}

/// A resolver that answers from a table and never touches the network.
/// Names are compared as DNS does: case-insensitive, trailing dot ignored.
#[derive(Debug, Default)]
pub struct StubResolver {
    /// Successive answers per name; the last one repeats.
    answers: Mutex<HashMap<String, VecDeque<Vec<IpAddr>>>>,
    /// Every name asked for, in order.
    lookups: Mutex<Vec<String>>,
}

fn dns_key(name: &str) -> String {
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

impl StubResolver {
    /// An empty table: every name fails to resolve.
    pub fn new() -> Self {
        Self::default()
    }

    /// `name` always resolves to `addrs`.
    pub fn with(self, name: &str, addrs: &[&str]) -> Self {
        self.scripted(name, &[addrs])
    }

    /// `name` resolves to each answer in turn, then keeps giving the last.
    pub fn scripted(self, name: &str, answers: &[&[&str]]) -> Self {
        let answers = answers
            .iter()
            .map(|answer| answer.iter().map(|a| ip(a)).collect())
            .collect();
        self.answers
            .lock()
            .expect("stub lock")
            .insert(dns_key(name), answers);
        self
    }

    /// Every name looked up so far.
    pub fn lookups(&self) -> Vec<String> {
        self.lookups.lock().expect("stub lock").clone()
    }

    /// Shares it as the guard's resolver type.
    pub fn shared(self) -> Arc<Self> {
        Arc::new(self)
    }
}

impl HostResolver for StubResolver {
    fn lookup<'a>(&'a self, host: &'a str) -> Lookup<'a> {
        self.lookups
            .lock()
            .expect("stub lock")
            .push(host.to_owned());
        let mut answers = self.answers.lock().expect("stub lock");
        let answer = match answers.get_mut(&dns_key(host)) {
            Some(queue) if queue.len() > 1 => queue.pop_front(),
            Some(queue) => queue.front().cloned(),
            None => None,
        };
        Box::pin(std::future::ready(answer.ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, "no such name in the stub")
        })))
    }
}

/// One connection reqwest asked the connector to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dial {
    /// The destination URI reqwest handed the connector
    /// (`scheme://host:port/`).
    pub uri: String,
    /// Where the connection would go: the literal address, or what the
    /// guarded resolver handed out (port applied as reqwest does); or the
    /// resolver's refusal.
    pub outcome: Result<Vec<SocketAddr>, String>,
}

/// A reqwest connector layer that records each connection's destination
/// instead of dialling it. It sits inside the guard's own layer, sees what
/// the guard let through, resolves names with a [`GuardedResolver`] built
/// like the client's, and then:
///
/// - for `127.0.0.1` / `::1` literals, dials (the only packets these tests
///   send);
/// - for anything else, fails the connection without DNS or TCP.
///
/// So whatever the guard does, nothing leaves loopback.
#[derive(Debug, Clone)]
pub struct Recorder {
    resolver: GuardedResolver,
    dials: Arc<Mutex<Vec<Dial>>>,
}

impl Recorder {
    /// A recorder resolving like a guarded client over `resolver` + `allow`.
    pub fn new(resolver: Arc<dyn HostResolver>, allow: AllowList) -> Self {
        Self {
            resolver: GuardedResolver::new(resolver, allow),
            dials: Arc::default(),
        }
    }

    /// The connections asked for so far.
    pub fn dials(&self) -> Vec<Dial> {
        self.dials.lock().expect("recorder lock").clone()
    }

    /// Every address a connection would have gone to.
    pub fn dialled_addrs(&self) -> Vec<SocketAddr> {
        self.dials()
            .into_iter()
            .filter_map(|dial| dial.outcome.ok())
            .flatten()
            .collect()
    }
}

impl<S> tower::Layer<S> for Recorder {
    type Service = RecordingService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RecordingService {
            inner,
            recorder: self.clone(),
        }
    }
}

/// The service of [`Recorder`].
#[derive(Debug, Clone)]
pub struct RecordingService<S> {
    inner: S,
    recorder: Recorder,
}

fn is_loopback_we_may_dial(addr: IpAddr) -> bool {
    addr == IpAddr::V4(Ipv4Addr::LOCALHOST) || addr == IpAddr::V6(Ipv6Addr::LOCALHOST)
}

impl<S, R> tower::Service<R> for RecordingService<S>
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
        let debug = format!("{request:?}");
        let uri = debug
            .strip_prefix("Unnameable(")
            .and_then(|rest| rest.strip_suffix(')'))
            .expect("reqwest's connector request reads Unnameable(uri)")
            .to_owned();
        let url = Url::parse(&uri).expect("the connector URI parses");
        let port = url.port_or_known_default().expect("http(s) has a port");
        let host = url.host_str().expect("the URI has a host").to_owned();
        let literal = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .ok();
        let recorder = self.recorder.clone();
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let resolved = match literal {
                Some(addr) => Ok(vec![SocketAddr::new(addr, port)]),
                None => {
                    let name = Name::from_str(&host).expect("a DNS name");
                    match recorder.resolver.resolve(name).await {
                        Ok(addrs) => Ok(addrs
                            .map(|mut addr| {
                                addr.set_port(port);
                                addr
                            })
                            .collect()),
                        Err(refused) => Err(refused),
                    }
                }
            };
            recorder.dials.lock().expect("recorder lock").push(Dial {
                uri,
                outcome: resolved
                    .as_ref()
                    .map(Clone::clone)
                    .map_err(ToString::to_string),
            });
            let addrs = resolved?;
            if literal.is_some_and(is_loopback_we_may_dial) {
                inner.call(request).await
            } else {
                Err(format!("the test recorder does not dial {addrs:?}").into())
            }
        })
    }
}

/// The [`SsrfError`] somewhere in a reqwest error's source chain.
pub fn ssrf_error(err: &reqwest::Error) -> Option<&SsrfError> {
    let mut source: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(found) = e.downcast_ref::<SsrfError>() {
            return Some(found);
        }
        source = e.source();
    }
    None
}

/// An HTTP server on `127.0.0.1:0` that counts the requests it gets.
///
/// - `/` answers `200 ok`;
/// - `/to-metadata` answers `302` to `http://169.254.169.254/latest/meta-data/`;
/// - `/to-self` answers `302` to `/`;
/// - `/loop` answers `302` to itself;
/// - `/to-port/N` answers `302` to `http://127.0.0.1:N/`;
/// - `/big` answers 2 MiB.
#[derive(Debug)]
pub struct Loopback {
    /// Where it listens.
    pub addr: SocketAddr,
    hits: Arc<AtomicUsize>,
}

impl Loopback {
    /// Starts one.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free loopback port");
        let addr = listener.local_addr().expect("a bound address");
        let hits = Arc::new(AtomicUsize::new(0));
        let app = Router::new().fallback(answer).with_state(Arc::clone(&hits));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { addr, hits }
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Requests received so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// A [`Loopback`] server allow-listed by its port, with `path` on it
/// passed by `check` and a guarded client whose dials `recorder` writes
/// down: the set-up of the tests that reach a real server through the
/// allow-list and watch where the client dials.
#[derive(Debug)]
pub struct AllowListed {
    /// The server.
    pub server: Loopback,
    /// What `check` made of `path` on it.
    pub target: GuardedTarget,
    /// Where `client` dialled.
    pub recorder: Recorder,
    /// The guarded client, allow-listing the server's port only.
    client: reqwest::Client,
}

impl AllowListed {
    /// Starts the server, allow-lists `127.0.0.1:PORT`, checks `path`.
    /// No name resolves.
    pub async fn start(path: &str) -> Self {
        let server = Loopback::start().await;
        let allow =
            AllowList::parse(&format!("127.0.0.1:{}", server.port())).expect("a valid allow-list");
        let stub = StubResolver::new().shared();
        let target = check(&server.url(path), &*stub, &allow)
            .await
            .expect("allow-listed");
        let recorder = Recorder::new(stub.clone(), allow.clone());
        let client = guarded_client(
            reqwest::Client::builder().connector_layer(recorder.clone()),
            stub,
            allow,
        )
        .expect("a client");
        Self {
            server,
            target,
            recorder,
            client,
        }
    }

    /// GETs the checked URL through the guarded client (which does not
    /// follow redirects).
    pub async fn get(&self) -> reqwest::Response {
        self.client
            .get(self.target.url().clone())
            .send()
            .await
            .expect("the loopback server answers")
    }
}

async fn answer(State(hits): State<Arc<AtomicUsize>>, uri: Uri) -> Response {
    hits.fetch_add(1, Ordering::SeqCst);
    match uri.path() {
        "/to-metadata" => (
            StatusCode::FOUND,
            [(header::LOCATION, "http://169.254.169.254/latest/meta-data/")],
        )
            .into_response(),
        "/to-self" => (StatusCode::FOUND, [(header::LOCATION, "/")]).into_response(),
        "/loop" => (StatusCode::FOUND, [(header::LOCATION, "/loop")]).into_response(),
        "/big" => vec![b'x'; 2 * 1024 * 1024].into_response(),
        path => match path.strip_prefix("/to-port/") {
            Some(port) => (
                StatusCode::FOUND,
                [(header::LOCATION, format!("http://127.0.0.1:{port}/"))],
            )
                .into_response(),
            None => "ok".into_response(),
        },
    }
}
