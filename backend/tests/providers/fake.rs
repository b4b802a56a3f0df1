//! A scripted stand-in for a model provider's HTTP API.
//!
//! It answers each request with the next scripted [`Reply`], whatever the
//! path, and records what it received so tests can assert on headers and
//! bodies. Streams are dribbled in small chunks so that event, line and
//! UTF-8 boundaries fall mid-chunk, as they do on a real network.
//!
//! Also what the two adapters' tests share around it: the client and
//! settings, reading a stream, the error-status cases both providers answer
//! alike (`assert_status_errors`) and the cut connection (`cut_mid_stream`).

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use countersign::llm::{ChatRequest, HttpSettings, LlmError, LlmEvent, LlmStream, Message};
use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use serde_json::Value;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// Bytes per chunk when dribbling a body (small and odd, so boundaries land
/// everywhere).
const DRIBBLE: usize = 7;

/// How one request is answered.
pub enum Reply {
    /// `200 text/event-stream` with this body, dribbled.
    Sse(String),
    /// An error status with headers and a body.
    Status {
        status: u16,
        headers: Vec<(&'static str, &'static str)>,
        body: String,
    },
    /// `200 application/json`.
    Json(Value),
    /// `200 text/event-stream`: these bytes, then the connection is cut (no
    /// terminating chunk) once `cut` fires. Cutting right away could lose
    /// bytes still in the server's write buffer; the test fires `cut` once it
    /// has received them.
    BreakOff {
        prefix: String,
        cut: oneshot::Receiver<()>,
    },
    /// `200 text/event-stream`: these bytes, then silence until the client
    /// goes away; `closed` fires when the server drops the body.
    Stall {
        prefix: String,
        closed: oneshot::Sender<()>,
    },
}

/// A request as the fake received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    /// The JSON body (`Null` when empty).
    pub body: Value,
}

impl Recorded {
    /// A header's value, as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
}

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
}

/// A running fake provider.
pub struct FakeProvider {
    addr: SocketAddr,
    script: Arc<Script>,
}

impl FakeProvider {
    /// Starts a server on 127.0.0.1 that answers with `replies`, in order.
    pub async fn start(replies: Vec<Reply>) -> Self {
        let script = Arc::new(Script {
            replies: Mutex::new(replies.into()),
            requests: Mutex::default(),
        });
        let app = Router::new().fallback(answer).with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free port on 127.0.0.1");
        let addr = listener
            .local_addr()
            .expect("a bound listener has an address");
        tokio::spawn(async move {
            axum::serve(listener, app)
                .await
                .expect("the fake provider serves");
        });
        Self { addr, script }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.script
            .requests
            .lock()
            .expect("no test panicked holding the lock")
            .clone()
    }

    /// The only request received.
    pub fn only_request(&self) -> Recorded {
        let requests = self.requests();
        assert_eq!(requests.len(), 1, "exactly one request was made");
        requests.into_iter().next().expect("checked above")
    }
}

async fn answer(
    State(script): State<Arc<Script>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).expect("the client sent JSON")
    };
    script.requests.lock().expect("lock").push(Recorded {
        method,
        path: uri.path().to_owned(),
        headers,
        body,
    });
    let reply = script.replies.lock().expect("lock").pop_front();
    match reply {
        None => (StatusCode::IM_A_TEAPOT, "no reply scripted").into_response(),
        Some(Reply::Sse(body)) => event_stream(dribble(body).boxed()),
        Some(Reply::Status {
            status,
            headers,
            body,
        }) => {
            let mut response = (
                StatusCode::from_u16(status).expect("a valid status"),
                [(header::CONTENT_TYPE, "application/json")],
                body,
            )
                .into_response();
            for (name, value) in headers {
                response
                    .headers_mut()
                    .insert(name, value.parse().expect("a valid header value"));
            }
            response
        }
        Some(Reply::Json(value)) => axum::Json(value).into_response(),
        Some(Reply::BreakOff { prefix, cut }) => {
            let cut = stream::once(async {
                let _ = cut.await;
                Err(std::io::Error::other("connection cut by the fake provider"))
            });
            event_stream(dribble(prefix).chain(cut).boxed())
        }
        Some(Reply::Stall { prefix, closed }) => {
            let guard = SignalOnDrop(Some(closed));
            let silence = stream::once(async move {
                let _guard = guard;
                std::future::pending::<Result<Bytes, std::io::Error>>().await
            });
            event_stream(dribble(prefix).chain(silence).boxed())
        }
    }
}

fn event_stream(body: BoxStream<'static, Result<Bytes, std::io::Error>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(body),
    )
        .into_response()
}

/// `body` in [`DRIBBLE`]-byte chunks, yielding to the runtime between them
/// so that they tend to leave as separate writes.
fn dribble(body: String) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
    let chunks: Vec<Bytes> = body
        .as_bytes()
        .chunks(DRIBBLE)
        .map(Bytes::copy_from_slice)
        .collect();
    stream::unfold(chunks.into_iter(), |mut chunks| async move {
        let chunk = chunks.next()?;
        tokio::task::yield_now().await;
        Some((Ok(chunk), chunks))
    })
}

struct SignalOnDrop(Option<oneshot::Sender<()>>);

impl Drop for SignalOnDrop {
    fn drop(&mut self) {
        if let Some(closed) = self.0.take() {
            let _ = closed.send(());
        }
    }
}

/// A fixture body from `fixtures/`.
pub fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/providers/fixtures")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()))
}

/// The first `n` events of an `\n`-separated fixture body.
pub fn first_events(body: &str, n: usize) -> String {
    let events: Vec<&str> = body.split_inclusive("\n\n").collect();
    assert!(events.len() > n, "the fixture has more than {n} events");
    events[..n].concat()
}

/// A request of one user message, `text`, to `model`: a terse system
/// prompt, no tools, at most 256 tokens.
pub fn one_message(model: &str, text: &str) -> ChatRequest<'static> {
    ChatRequest {
        model: model.into(),
        system: "You are terse.".into(),
        messages: vec![Message::User { text: text.into() }].into(),
        tools: vec![],
        max_tokens: 256,
    }
}

/// A client that never goes through a proxy (tests talk to 127.0.0.1 only).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a plain HTTP client builds")
}

/// Settings with a generous idle timeout: tests do not wait on it.
pub fn settings() -> HttpSettings {
    HttpSettings {
        connect_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(10),
    }
}

/// Everything the stream sends, until it closes.
pub async fn collect(mut stream: LlmStream) -> Vec<Result<LlmEvent, LlmError>> {
    let all = async {
        let mut items = Vec::new();
        while let Some(item) = stream.recv().await {
            items.push(item);
        }
        items
    };
    // A guard against a hung stream, not a wait: streams end in milliseconds.
    tokio::time::timeout(Duration::from_secs(20), all)
        .await
        .expect("the stream ends")
}

/// Items from `stream` until their text is `text` (or a panic if the stream
/// ends or errs first).
pub async fn recv_until_text(
    stream: &mut LlmStream,
    text: &str,
) -> Vec<Result<LlmEvent, LlmError>> {
    let until = async {
        let mut items = Vec::new();
        while text_of(&items) != text {
            let item = stream.recv().await.expect("the stream goes on");
            assert!(item.is_ok(), "{item:?} after {items:?}");
            items.push(item);
        }
        items
    };
    tokio::time::timeout(Duration::from_secs(20), until)
        .await
        .expect("the text arrives")
}

/// The text deltas of `items`, concatenated.
pub fn text_of(items: &[Result<LlmEvent, LlmError>]) -> String {
    items
        .iter()
        .filter_map(|item| match item {
            Ok(LlmEvent::TextDelta(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// Asserts that nothing secret made it into an error a user will see.
pub fn assert_reveals_none_of(error: &LlmError, secrets: &[&str]) {
    let shown = error.to_string();
    let debugged = format!("{error:?}");
    for secret in secrets {
        assert!(!shown.contains(secret), "{shown:?} reveals {secret:?}");
        assert!(
            !debugged.contains(secret),
            "{debugged:?} reveals {secret:?}"
        );
    }
}

/// An error status to answer with: what it means (the assertion message),
/// the status, its `retry-after` header if any, and the error the adapter
/// must make of it.
pub type StatusCase = (&'static str, u16, Option<&'static str>, LlmError);

/// The statuses both providers' adapters read alike: 401 and 403 are a
/// refused key, a 429 carries its `retry-after` (`retry_after`, which is
/// `seconds`), 500 is an upstream error.
pub fn status_cases_of_every_provider(
    provider: &str,
    retry_after: &'static str,
    seconds: u64,
) -> Vec<StatusCase> {
    vec![
        (
            "401 is a refused key",
            401,
            None,
            LlmError::Unauthorized {
                provider: provider.into(),
                status: 401,
            },
        ),
        (
            "403 is a refused key too",
            403,
            None,
            LlmError::Unauthorized {
                provider: provider.into(),
                status: 403,
            },
        ),
        (
            "429 carries retry-after in seconds",
            429,
            Some(retry_after),
            LlmError::RateLimited {
                provider: provider.into(),
                retry_after: Some(seconds),
            },
        ),
        (
            "500 is an upstream error",
            500,
            None,
            LlmError::Upstream {
                provider: provider.into(),
                status: 500,
            },
        ),
    ]
}

/// For each case: a fake that answers with its status, its `retry-after`
/// and `body`; `stream` (the adapter asking that fake) must fail with the
/// case's error, and the error must reveal none of `secrets`.
pub async fn assert_status_errors(
    cases: Vec<StatusCase>,
    body: &str,
    secrets: &[&str],
    stream: impl AsyncFn(&FakeProvider) -> Result<LlmStream, LlmError>,
) {
    for (message, status, retry_after, expected) in cases {
        let fake = FakeProvider::start(vec![Reply::Status {
            status,
            headers: retry_after
                .map(|value| ("retry-after", value))
                .into_iter()
                .collect(),
            body: body.to_owned(),
        }])
        .await;

        let error = stream(&fake).await.expect_err(message);

        assert_eq!(error, expected, "{message}");
        assert_reveals_none_of(&error, secrets);
    }
}

/// Cuts the connection after the first `events` events of the fixture
/// `name`, once their text, `text`, has arrived through `stream` (the
/// adapter asking the fake). The stream must then end in exactly one error,
/// a network error revealing none of `secrets`. Returns all it sent.
pub async fn cut_mid_stream(
    name: &str,
    events: usize,
    text: &str,
    secrets: &[&str],
    stream: impl AsyncFn(&FakeProvider) -> Result<LlmStream, LlmError>,
) -> Vec<Result<LlmEvent, LlmError>> {
    let (cut, cut_rx) = oneshot::channel();
    let fake = FakeProvider::start(vec![Reply::BreakOff {
        prefix: first_events(&fixture(name), events),
        cut: cut_rx,
    }])
    .await;
    let mut stream = stream(&fake).await.expect("the request is accepted");
    let mut items = recv_until_text(&mut stream, text).await;

    cut.send(()).expect("the server waits for the cut");
    items.extend(collect(stream).await);

    let Some(Err(error)) = items.last() else {
        panic!("the stream ends in an error: {items:?}");
    };
    assert!(matches!(error, LlmError::Network { .. }), "{error:?}");
    assert_eq!(
        items.iter().filter(|item| item.is_err()).count(),
        1,
        "exactly one error"
    );
    assert_reveals_none_of(error, secrets);
    items
}
