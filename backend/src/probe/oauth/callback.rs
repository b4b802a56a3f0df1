//! The loopback listener a probe's sign-in comes back to (RFC 8252 §7.3:
//! a native client's redirect URI on the loopback interface, any port).
//!
//! What it owns: a one-shot HTTP listener on `127.0.0.1` that answers
//! `GET /callback` ([`Listener::redirect_uri`]), on the port of the run's
//! previous sign-in when it can have it (a client registered with one
//! redirect URI is presented again, and not every authorization server
//! lets a loopback port vary as RFC 8252 §7.3 asks), else on any port. It hands over exactly one
//! callback — the first whose `state` is the one the probe is waiting for
//! ([`Listener::expect`]) — and refuses every other request without
//! ending the wait: another `state` (a forged or stale callback), a
//! second callback for the same `state`, a `Host` other than its own
//! address (a page reaching the port through DNS rebinding). It answers the
//! browser with a short page, never echoing what it received.
//!
//! What it deliberately does not do: check `iss` or exchange the code
//! (rmcp does, in `probe::oauth`), or listen anywhere but loopback.

use axum::{
    Router,
    extract::{Query, State},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use std::{
    net::Ipv4Addr,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};
use subtle::ConstantTimeEq as _;
use tokio::sync::oneshot;

/// The path of the redirect URI.
pub const CALLBACK_PATH: &str = "/callback";
/// How long [`Listener::wait`] gives the listener to stop.
pub const STOP_WAIT: Duration = Duration::from_secs(2);

/// What the authorization server sent back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callback {
    /// The authorization code.
    pub code: String,
    /// RFC 9207 `iss`, when present.
    pub iss: Option<String>,
}

/// Why no usable callback came.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackError {
    /// The authorization server came back with `error` (RFC 6749 §4.1.2.1).
    #[error("the authorization server did not grant the sign-in: {error}{}",
        description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        /// `error`, e.g. `access_denied`.
        error: String,
        /// `error_description`, when sent.
        description: Option<String>,
    },
    /// It came back with neither `code` nor `error`.
    #[error("the authorization server came back without a code")]
    NoCode,
    /// Nothing came back in time.
    #[error("no sign-in came back within {} s", .0.as_secs())]
    TimedOut(Duration),
    /// The listener stopped before anything came back.
    #[error("the callback listener stopped")]
    Closed,
}

type Outcome = Result<Callback, CallbackError>;

/// What the handler shares with [`Listener`].
struct Shared {
    /// `127.0.0.1:PORT`, the only `Host` answered.
    host: String,
    /// The `state` of the sign-in being waited for.
    expected: Mutex<Option<String>>,
    /// Taken by the one callback that is handed over.
    deliver: Mutex<Option<oneshot::Sender<Outcome>>>,
}

/// A one-shot callback listener on loopback.
pub struct Listener {
    redirect_uri: String,
    port: u16,
    shared: Arc<Shared>,
    received: oneshot::Receiver<Outcome>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

impl Listener {
    /// Listens on `127.0.0.1` at a port the system picks.
    pub async fn bind() -> std::io::Result<Self> {
        Self::bind_on(None).await
    }

    /// Listens on `127.0.0.1`, at `port` when it is free, else at a port
    /// the system picks.
    pub async fn bind_on(port: Option<u16>) -> std::io::Result<Self> {
        let wanted = match port {
            Some(port) => tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port))
                .await
                .ok(),
            None => None,
        };
        let tcp = match wanted {
            Some(tcp) => tcp,
            None => tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?,
        };
        let addr = tcp.local_addr()?;
        let host = addr.to_string();
        let (deliver, received) = oneshot::channel();
        let shared = Arc::new(Shared {
            host: host.clone(),
            expected: Mutex::new(None),
            deliver: Mutex::new(Some(deliver)),
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let app = Router::new()
            .route(CALLBACK_PATH, get(callback))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let served = axum::serve(tcp, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
            if let Err(error) = served {
                tracing::debug!(%error, "probe: the callback listener failed");
            }
        });
        Ok(Self {
            redirect_uri: format!("http://{host}{CALLBACK_PATH}"),
            port: addr.port(),
            shared,
            received,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT/callback`.
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// From now on, a callback carrying `state` is the one handed over.
    pub fn expect(&self, state: &str) {
        *self
            .shared
            .expected
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(state.to_owned());
    }

    /// Waits at most `within` for the expected callback, then stops
    /// listening: requests already answered are finished first, and the
    /// port is free again when it returns (within [`STOP_WAIT`]).
    pub async fn wait(mut self, within: Duration) -> Outcome {
        let outcome = tokio::time::timeout(within, &mut self.received).await;
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(STOP_WAIT, task).await;
        }
        match outcome {
            Err(_) => Err(CallbackError::TimedOut(within)),
            Ok(Err(_)) => Err(CallbackError::Closed),
            Ok(Ok(outcome)) => outcome,
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A short page for the browser; nothing of the request is echoed.
fn page(status: StatusCode, text: &'static str) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        text,
    )
        .into_response()
}

async fn callback(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    // A page that reached this port under another name (DNS rebinding)
    // sends its own name as Host.
    if headers.get(header::HOST).and_then(|h| h.to_str().ok()) != Some(shared.host.as_str()) {
        return page(StatusCode::BAD_REQUEST, "This address answers only itself.");
    }
    let param = |name: &str| {
        query
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    let expected = shared
        .expected
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let matches = match (expected, param("state")) {
        (Some(expected), Some(state)) => bool::from(expected.as_bytes().ct_eq(state.as_bytes())),
        _ => false,
    };
    if !matches {
        return page(
            StatusCode::BAD_REQUEST,
            "This is not the sign-in the Countersign probe is waiting for.",
        );
    }
    let Some(deliver) = shared
        .deliver
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
    else {
        return page(
            StatusCode::CONFLICT,
            "This sign-in has already come back to the Countersign probe.",
        );
    };
    let outcome = match (param("error"), param("code")) {
        (Some(error), _) => Err(CallbackError::Denied {
            error: error.to_owned(),
            description: param("error_description").map(str::to_owned),
        }),
        (None, Some(code)) => Ok(Callback {
            code: code.to_owned(),
            iss: param("iss").map(str::to_owned),
        }),
        (None, None) => Err(CallbackError::NoCode),
    };
    let text = if outcome.is_ok() {
        "Signed in. You can close this tab and go back to the terminal."
    } else {
        "The sign-in did not complete. The terminal says why."
    };
    let _ = deliver.send(outcome);
    page(StatusCode::OK, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client that talks to the listener only (loopback, no proxy).
    fn http() -> reqwest::Client {
        reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("a client builds")
    }

    async fn get(url: &str) -> u16 {
        http()
            .get(url)
            .send()
            .await
            .expect("the listener answers")
            .status()
            .as_u16()
    }

    const WAIT: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn the_callback_with_the_expected_state_is_handed_over_with_its_code_and_iss() {
        let listener = Listener::bind().await.expect("binds");
        assert!(
            listener.redirect_uri().starts_with("http://127.0.0.1:"),
            "a loopback IP literal, RFC 8252 §7.3: {}",
            listener.redirect_uri()
        );
        listener.expect("s-123");
        let url = format!(
            "{}?code=c-1&state=s-123&iss=https%3A%2F%2Fas.example",
            listener.redirect_uri()
        );

        assert_eq!(get(&url).await, 200);
        assert_eq!(
            listener.wait(WAIT).await,
            Ok(Callback {
                code: "c-1".into(),
                iss: Some("https://as.example".into())
            })
        );
    }

    #[tokio::test]
    async fn another_state_is_refused_and_does_not_end_the_wait() {
        let listener = Listener::bind().await.expect("binds");
        listener.expect("the-real-state");
        let base = listener.redirect_uri().to_owned();

        assert_eq!(
            get(&format!("{base}?code=forged&state=guess")).await,
            400,
            "a forged state"
        );
        assert_eq!(get(&format!("{base}?code=forged")).await, 400, "no state");
        assert_eq!(
            get(&format!("{base}?code=real&state=the-real-state")).await,
            200
        );
        assert_eq!(
            listener.wait(WAIT).await.map(|c| c.code),
            Ok("real".to_owned()),
            "the forged callbacks were not handed over"
        );
    }

    #[tokio::test]
    async fn the_listener_is_one_shot() {
        let listener = Listener::bind().await.expect("binds");
        listener.expect("s");
        let url = format!("{}?code=first&state=s", listener.redirect_uri());

        assert_eq!(get(&url).await, 200);
        assert_eq!(get(&url).await, 409, "a replayed callback");
        assert_eq!(
            listener.wait(WAIT).await.map(|c| c.code),
            Ok("first".into())
        );
    }

    #[tokio::test]
    async fn a_callback_under_another_host_name_is_refused() {
        let listener = Listener::bind().await.expect("binds");
        listener.expect("s");
        let url = format!("{}?code=c&state=s", listener.redirect_uri());

        let status = http()
            .get(&url)
            .header(header::HOST, "attacker.example")
            .send()
            .await
            .expect("answers")
            .status();

        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            listener.wait(Duration::from_millis(200)).await,
            Err(CallbackError::TimedOut(Duration::from_millis(200))),
            "nothing was handed over"
        );
    }

    #[tokio::test]
    async fn a_refusal_from_the_authorization_server_is_handed_over_as_such() {
        let listener = Listener::bind().await.expect("binds");
        listener.expect("s");
        let url = format!(
            "{}?error=access_denied&error_description=no&state=s",
            listener.redirect_uri()
        );

        assert_eq!(get(&url).await, 200);
        assert_eq!(
            listener.wait(WAIT).await,
            Err(CallbackError::Denied {
                error: "access_denied".into(),
                description: Some("no".into())
            })
        );
    }

    #[tokio::test]
    async fn a_new_listener_takes_the_port_of_the_last_one_when_it_is_free() {
        let first = Listener::bind().await.expect("binds");
        let port = first.port();
        first.expect("s");
        assert_eq!(
            get(&format!("{}?code=c&state=s", first.redirect_uri())).await,
            200
        );
        assert!(first.wait(WAIT).await.is_ok());

        let second = Listener::bind_on(Some(port)).await.expect("binds");
        assert_eq!(second.port(), port, "the same redirect URI");
        let third = Listener::bind_on(Some(port)).await.expect("binds");
        assert_ne!(third.port(), port, "taken: any other port");
    }

    #[tokio::test]
    async fn other_paths_are_not_found_and_a_callback_before_the_sign_in_is_refused() {
        let listener = Listener::bind().await.expect("binds");
        let base = listener.redirect_uri().trim_end_matches(CALLBACK_PATH);
        assert_eq!(get(&format!("{base}/favicon.ico")).await, 404);
        assert_eq!(
            get(&format!("{}?code=c&state=s", listener.redirect_uri())).await,
            400,
            "no sign-in is being waited for yet"
        );
    }
}
