//! Accepting connections: one task per connection, each served by hyper's
//! HTTP/1.1 connection (`hyper::server::conn::http1`) with the peer's
//! address as `ConnectInfo`, until the shutdown signal; then no new
//! connection, and each open one finishes its request in flight and closes
//! (an event stream ends when the hub closes).
//!
//! Not `axum::serve`: it serves through hyper-util's auto-detecting builder
//! (HTTP/1 or HTTP/2 by the connection's first bytes), whose replayed
//! prefix makes hyper's read buffer grow to 16 KiB on every connection —
//! ~8 KiB more RSS per open stream (11.0 against 18.7 KiB for a bare SSE
//! endpoint with 10,000 open; `docs/operations.md`, "Where the memory
//! goes"). This server speaks HTTP/1.1 only (axum's `http2` feature is
//! off), so it loses nothing by saying so to hyper directly.
//!
//! **Detached responses.** hyper keeps two 8 KiB buffers for as long as a
//! connection lives (its read buffer and its header buffer; 8 KiB is the
//! smallest it allows), so an event stream that idles for hours would hold
//! ~11 KiB of them resident, more than all of its own state. A response
//! marked [`Detach`] (the event stream) is therefore not handed back to
//! hyper: once hyper has written everything it had buffered, the
//! connection leaves hyper (`into_parts`), its buffers are freed, and
//! [`write_detached`] writes the response on the bare socket — the same
//! status and headers the middleware made, `Transfer-Encoding: chunked` as
//! hyper would frame it, and `Connection: close`, since the socket is not
//! handed back for another request. Only a `GET` over HTTP/1.1 is detached
//! (a `HEAD` has no body to stream, HTTP/1.0 has no chunked framing); any
//! other request is served by hyper as before, and so is everything on the
//! connection before the stream's request, keep-alive included.

use axum::{
    Router,
    body::Body,
    extract::ConnectInfo,
    http::{Method, Request, Response, Version},
};
use futures_util::StreamExt as _;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::{
    convert::Infallible,
    future::Future,
    io::Write as _,
    net::SocketAddr,
    pin::Pin,
    sync::{
        Arc, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};
use tokio::{
    io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, ReadBuf},
    net::TcpStream,
    sync::watch,
};
use tower::ServiceExt as _;

/// A response extension: write this response on the bare socket, outside
/// hyper (module note). Set by a handler whose response may stay open
/// for long (the event stream).
#[derive(Debug, Clone, Copy)]
pub struct Detach;

/// Serves `app` on `listener` until `shutdown` resolves, then waits for the
/// open connections (detached ones included) to finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    // Each connection's task holds a receiver: `send(true)` asks them to
    // finish, and `closed()` is when the last of them has.
    let (stopping, watch) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    accept_failed(&err).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Stream events are small writes: without TCP_NODELAY, Nagle's
        // algorithm and delayed ACKs hold each one back ~40 ms.
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::warn!(error = %err, "cannot set TCP_NODELAY");
        }
        tokio::spawn(connection(tcp, peer, app.clone(), watch.clone()));
    }
    drop(listener);
    drop(watch);
    let _ = stopping.send(true);
    stopping.closed().await;
    Ok(())
}

/// What the connection's hyper side and its driver share.
#[derive(Default)]
struct Shared {
    /// A response marked [`Detach`], waiting to be written on the socket.
    detached: Mutex<Option<Response<Body>>>,
    /// The socket's last write would have blocked: hyper still holds bytes
    /// it has not written (module note: the detached response waits).
    write_blocked: AtomicBool,
}

impl Shared {
    fn detached(&self) -> MutexGuard<'_, Option<Response<Body>>> {
        self.detached.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One connection: hyper serves it until it closes, or until a response is
/// detached; then that response is written here, without hyper.
async fn connection(
    tcp: TcpStream,
    peer: SocketAddr,
    app: Router,
    mut stop: watch::Receiver<bool>,
) {
    let shared = Arc::new(Shared::default());
    let io = TokioIo::new(Socket {
        tcp,
        shared: Arc::clone(&shared),
    });
    let service = Serve {
        app,
        peer,
        shared: Arc::clone(&shared),
    };
    let mut conn = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
    let mut stopping = *stop.borrow();
    if stopping {
        Pin::new(&mut conn).graceful_shutdown();
    }
    let ended = loop {
        tokio::select! {
            ended = std::future::poll_fn(|cx| drive(&mut conn, &shared, cx)) => break ended,
            // The sender gone is shutdown too.
            _ = stop.changed(), if !stopping => {
                stopping = true;
                Pin::new(&mut conn).graceful_shutdown();
            }
        }
    };
    match ended {
        Ended::Closed(Ok(())) => {
            let mut tcp = conn.into_parts().io.into_inner().tcp;
            let _ = tcp.shutdown().await;
        }
        Ended::Closed(Err(err)) => {
            tracing::debug!(error = %err, "connection ended with an error");
        }
        Ended::Detached(response) => {
            // hyper, its buffers and the router's clone go here.
            let tcp = conn.into_parts().io.into_inner().tcp;
            write_detached(tcp, response).await;
        }
    }
}

/// How hyper's part of a connection ended.
enum Ended {
    /// The connection is done (the client closed it, or keep-alive ended).
    Closed(hyper::Result<()>),
    /// This response is detached and everything before it is written.
    Detached(Response<Body>),
}

type Http1 = hyper::server::conn::http1::Connection<TokioIo<Socket>, Serve>;

/// Polls hyper; after each poll, a detached response is ready to go once
/// the socket has taken every byte hyper had (hyper flushes after each
/// step and stops only when its buffer is empty or the socket would block,
/// and a blocked write wakes this task again when the socket drains).
fn drive(conn: &mut Http1, shared: &Shared, cx: &mut Context<'_>) -> Poll<Ended> {
    if let Poll::Ready(done) = conn.poll_without_shutdown(cx) {
        return Poll::Ready(Ended::Closed(done));
    }
    if shared.write_blocked.load(Ordering::Relaxed) {
        return Poll::Pending;
    }
    match shared.detached().take() {
        Some(response) => Poll::Ready(Ended::Detached(response)),
        None => Poll::Pending,
    }
}

/// The service hyper calls: the router, with the peer as `ConnectInfo`; a
/// response marked [`Detach`] is kept for the driver, and hyper's call
/// never finishes (the driver takes the connection away).
#[derive(Clone)]
struct Serve {
    app: Router,
    peer: SocketAddr,
    shared: Arc<Shared>,
}

impl hyper::service::Service<Request<Incoming>> for Serve {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let mut request = request.map(Body::new);
        request.extensions_mut().insert(ConnectInfo(self.peer));
        let may_detach = request.method() == Method::GET && request.version() == Version::HTTP_11;
        let app = self.app.clone();
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let response = app.oneshot(request).await?;
            if !(may_detach && response.extensions().get::<Detach>().is_some()) {
                return Ok(response);
            }
            *shared.detached() = Some(response);
            std::future::pending().await
        })
    }
}

/// The connection's socket as hyper sees it, noting whether its last write
/// would have blocked ([`Shared::write_blocked`]).
struct Socket {
    tcp: TcpStream,
    shared: Arc<Shared>,
}

impl Socket {
    fn noted<T>(&self, poll: Poll<T>) -> Poll<T> {
        self.shared
            .write_blocked
            .store(poll.is_pending(), Ordering::Relaxed);
        poll
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.tcp).poll_write(cx, buf);
        self.noted(poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs);
        self.noted(poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

/// Writes a detached response on the bare socket: its head, then each of
/// its body's frames as a chunk, then the last chunk and a close. Ends
/// early, dropping the body (so the stream's state), when the client goes
/// away — seen by a read of end-of-file while the body is idle, or by a
/// failed write.
async fn write_detached(mut tcp: TcpStream, response: Response<Body>) {
    let (parts, body) = response.into_parts();
    // The head's bytes, then the parts are dropped: the header map and the
    // extensions are not kept for the stream's life.
    let head = head(&parts);
    drop(parts);
    if tcp.write_all(&head).await.is_err() {
        return;
    }
    drop(head);
    let mut body = body.into_data_stream();
    loop {
        tokio::select! {
            frame = body.next() => match frame {
                Some(Ok(data)) if data.is_empty() => {}
                Some(Ok(data)) => {
                    if tcp.write_all(&chunk(&data)).await.is_err() {
                        return;
                    }
                }
                Some(Err(err)) => {
                    // Cut without the last chunk: the client sees the
                    // stream broken, as hyper would show it.
                    tracing::debug!(error = %err, "detached response body failed");
                    return;
                }
                None => {
                    let _ = tcp.write_all(b"0\r\n\r\n").await;
                    break;
                }
            },
            gone = client_gone(&tcp) => if gone {
                return;
            },
        }
    }
    let _ = tcp.shutdown().await;
}

/// Waits until the socket is readable: `true` when the client has closed
/// it (or it failed). Anything the client sends after its request is
/// ignored: this connection takes no further request.
async fn client_gone(tcp: &TcpStream) -> bool {
    loop {
        if tcp.readable().await.is_err() {
            return true;
        }
        let mut scratch = [0u8; 64];
        match tcp.try_read(&mut scratch) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return true,
        }
    }
}

/// A detached response's head, as hyper writes one: the status line, the
/// headers the middleware made (names lower-case; a `HeaderValue` holds
/// no CR or LF), `date`, chunked framing and `connection: close`.
fn head(parts: &axum::http::response::Parts) -> Vec<u8> {
    let mut head = Vec::with_capacity(512);
    let status = parts.status;
    let _ = write!(
        head,
        "HTTP/1.1 {} {}\r\n",
        status.as_str(),
        status.canonical_reason().unwrap_or("")
    );
    for (name, value) in &parts.headers {
        // The framing is this writer's to say.
        if matches!(
            name.as_str(),
            "connection" | "content-length" | "transfer-encoding" | "date"
        ) {
            continue;
        }
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    let _ = write!(
        head,
        "date: {}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
        httpdate::fmt_http_date(std::time::SystemTime::now())
    );
    head
}

/// One chunk of chunked framing: the size in hex, the data, CRLF.
fn chunk(data: &[u8]) -> Vec<u8> {
    let mut chunk = Vec::with_capacity(data.len() + 12);
    let _ = write!(chunk, "{:x}\r\n", data.len());
    chunk.extend_from_slice(data);
    chunk.extend_from_slice(b"\r\n");
    chunk
}

/// After a failed `accept`: a connection that went away before it was
/// accepted is nothing; anything else (out of file descriptors) is logged
/// and the loop pauses a second, as `axum::serve` does, rather than spin.
async fn accept_failed(err: &std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        err.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %err, "cannot accept a connection");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::{response::IntoResponse, routing::get};
    use tokio::io::AsyncReadExt as _;

    /// A server on a loopback port until the returned sender is used.
    async fn start(
        app: Router,
    ) -> (
        SocketAddr,
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<std::io::Result<()>>,
    ) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, app, async {
            let _ = stopped.await;
        }));
        (addr, stop, server)
    }

    #[tokio::test]
    async fn serves_http1_with_the_peer_address_and_stops_on_shutdown() {
        let app = Router::new().route(
            "/peer",
            get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move { peer.ip().to_string() }),
        );
        let (addr, stop, server) = start(app).await;
        let body = reqwest::get(format!("http://{addr}/peer"))
            .await
            .expect("request")
            .text()
            .await
            .expect("body");
        assert_eq!(body, "127.0.0.1");
        stop.send(()).expect("server running");
        server.await.expect("task").expect("serve");
        assert!(
            reqwest::get(format!("http://{addr}/peer")).await.is_err(),
            "nothing listens after shutdown"
        );
    }

    /// A detached stream whose chunks the test sends, and which tells the
    /// test when it is dropped.
    struct Fed {
        chunks: tokio::sync::mpsc::UnboundedSender<&'static str>,
        dropped: tokio::sync::oneshot::Receiver<()>,
    }

    fn detached_app(detach: bool) -> (Router, Arc<Mutex<Option<Fed>>>) {
        let fed = Arc::new(Mutex::new(None));
        let slot = Arc::clone(&fed);
        let app = Router::new()
            .route("/plain", get(|| async { "plain" }))
            .route(
                "/stream",
                get(move || {
                    let slot = Arc::clone(&slot);
                    async move {
                        let (chunks, rx) = tokio::sync::mpsc::unbounded_channel();
                        let (on_drop, dropped) = tokio::sync::oneshot::channel::<()>();
                        *slot.lock().expect("slot") = Some(Fed { chunks, dropped });
                        let stream = futures_util::stream::unfold(
                            (rx, on_drop),
                            |(mut rx, on_drop)| async move {
                                let text: &'static str = rx.recv().await?;
                                Some((Ok::<_, Infallible>(text), (rx, on_drop)))
                            },
                        );
                        let mut response = (
                            [
                                ("content-type", "text/event-stream"),
                                ("x-made-by", "handler"),
                            ],
                            Body::from_stream(stream),
                        )
                            .into_response();
                        if detach {
                            response.extensions_mut().insert(Detach);
                        }
                        response
                    }
                }),
            )
            // Middleware headers reach the detached head too.
            .layer(axum::middleware::map_response(
                |mut response: Response<Body>| async move {
                    response
                        .headers_mut()
                        .insert("x-layer", axum::http::HeaderValue::from_static("outer"));
                    response
                },
            ));
        (app, fed)
    }

    /// Reads from `tcp` until `needle` has arrived; everything read so far.
    async fn read_until(tcp: &mut TcpStream, seen: &mut Vec<u8>, needle: &str) {
        let mut buf = [0u8; 1024];
        while !String::from_utf8_lossy(seen).contains(needle) {
            let n = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut buf))
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "{needle:?} never came; got {:?}",
                        String::from_utf8_lossy(seen)
                    )
                })
                .expect("read");
            assert!(
                n > 0,
                "closed before {needle:?}; got {:?}",
                String::from_utf8_lossy(seen)
            );
            seen.extend_from_slice(&buf[..n]);
        }
    }

    /// A new connection to `addr` that sent `request` and has read the
    /// answer's head; the connection and what it read so far.
    async fn asked(addr: SocketAddr, request: &str) -> (TcpStream, Vec<u8>) {
        let mut tcp = TcpStream::connect(addr).await.expect("connect");
        tcp.write_all(request.as_bytes()).await.expect("write");
        let mut seen = Vec::new();
        read_until(&mut tcp, &mut seen, "\r\n\r\n").await;
        (tcp, seen)
    }

    fn taken(fed: &Mutex<Option<Fed>>) -> Fed {
        fed.lock()
            .expect("slot")
            .take()
            .expect("the stream was opened")
    }

    /// After a keep-alive request served by hyper, the stream's request on
    /// the same connection is written without hyper: the middleware's
    /// headers, chunked framing, `connection: close`, each chunk as it
    /// comes, the last chunk, then the close.
    #[tokio::test]
    async fn a_detached_stream_is_framed_as_hyper_would_after_keep_alive_requests() {
        let (app, fed) = detached_app(true);
        let (addr, _stop, _server) = start(app).await;
        let mut tcp = TcpStream::connect(addr).await.expect("connect");
        tcp.write_all(b"GET /plain HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .expect("write");
        let mut seen = Vec::new();
        read_until(&mut tcp, &mut seen, "plain").await;
        let first = String::from_utf8_lossy(&seen).to_string();
        assert!(first.starts_with("HTTP/1.1 200 OK\r\n"), "{first}");
        assert!(!first.contains("connection: close"), "keep-alive: {first}");

        seen.clear();
        tcp.write_all(b"GET /stream HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .expect("write");
        read_until(&mut tcp, &mut seen, "\r\n\r\n").await;
        let head = String::from_utf8_lossy(&seen).to_string();
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        for line in [
            "content-type: text/event-stream\r\n",
            "x-made-by: handler\r\n",
            "x-layer: outer\r\n",
            "transfer-encoding: chunked\r\n",
            "connection: close\r\n",
            "date: ",
        ] {
            assert!(head.contains(line), "{line:?} missing from {head}");
        }
        assert_eq!(head.matches("transfer-encoding").count(), 1, "{head}");

        let Fed { chunks, dropped } = taken(&fed);
        chunks.send("data: one\n\n").expect("stream open");
        read_until(&mut tcp, &mut seen, "b\r\ndata: one\n\n\r\n").await;
        chunks.send("data: two\n\n").expect("stream open");
        read_until(&mut tcp, &mut seen, "b\r\ndata: two\n\n\r\n").await;
        drop(chunks);
        read_until(&mut tcp, &mut seen, "\r\n0\r\n\r\n").await;
        let mut rest = Vec::new();
        tcp.read_to_end(&mut rest).await.expect("read to the close");
        assert!(rest.is_empty(), "nothing after the last chunk: {rest:?}");
        dropped.await.expect_err("the body is gone once written");
    }

    /// A real HTTP client reads a detached stream as it reads hyper's.
    #[tokio::test]
    async fn an_http_client_reads_a_detached_stream() {
        let (app, fed) = detached_app(true);
        let (addr, _stop, _server) = start(app).await;
        let mut response = reqwest::get(format!("http://{addr}/stream"))
            .await
            .expect("request");
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["x-layer"], "outer");
        let Fed { chunks, .. } = taken(&fed);
        chunks.send("data: one\n\n").expect("stream open");
        let first = response.chunk().await.expect("chunk").expect("a chunk");
        assert_eq!(&first[..], b"data: one\n\n");
        drop(chunks);
        assert!(response.chunk().await.expect("the end").is_none());
    }

    /// A client that goes away while the stream idles: the stream's state
    /// is dropped at once, not at its next write.
    #[tokio::test]
    async fn a_client_that_leaves_an_idle_detached_stream_ends_it() {
        let (app, fed) = detached_app(true);
        let (addr, _stop, _server) = start(app).await;
        let (tcp, _) = asked(addr, "GET /stream HTTP/1.1\r\nhost: x\r\n\r\n").await;
        let Fed { chunks, dropped } = taken(&fed);
        drop(tcp);
        tokio::time::timeout(Duration::from_secs(10), dropped)
            .await
            .expect("the stream ended when its client left")
            .expect_err("dropped, not sent");
        assert!(chunks.is_closed());
    }

    /// `HEAD` and HTTP/1.0 are served by hyper as before: a `HEAD` gets no
    /// body, HTTP/1.0 no chunked framing.
    #[tokio::test]
    async fn head_and_http_1_0_requests_are_not_detached() {
        let (app, fed) = detached_app(true);
        let (addr, _stop, _server) = start(app).await;
        let (mut tcp, mut seen) = asked(addr, "GET /stream HTTP/1.0\r\nhost: x\r\n\r\n").await;
        let head = String::from_utf8_lossy(&seen).to_string();
        assert!(head.starts_with("HTTP/1.0 200 OK\r\n"), "{head}");
        assert!(!head.contains("chunked"), "{head}");
        let Fed { chunks, .. } = taken(&fed);
        chunks.send("data: one\n\n").expect("stream open");
        read_until(&mut tcp, &mut seen, "\r\n\r\ndata: one\n\n").await;

        let (_tcp, seen) = asked(addr, "HEAD /stream HTTP/1.1\r\nhost: x\r\n\r\n").await;
        let head = String::from_utf8_lossy(&seen).to_string();
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert!(
            !head.contains("transfer-encoding: chunked\r\nconnection: close\r\n"),
            "hyper's own head, not the detached writer's: {head}"
        );
    }

    /// Shutdown waits for a detached stream as it waits for hyper's: the
    /// server returns once the stream has ended.
    #[tokio::test]
    async fn shutdown_waits_for_detached_streams() {
        let (app, fed) = detached_app(true);
        let (addr, stop, mut server) = start(app).await;
        let (mut tcp, mut seen) = asked(addr, "GET /stream HTTP/1.1\r\nhost: x\r\n\r\n").await;
        let Fed { chunks, .. } = taken(&fed);
        stop.send(()).expect("server running");
        // Still streaming after the signal.
        chunks.send("data: late\n\n").expect("stream open");
        read_until(&mut tcp, &mut seen, "data: late\n\n").await;
        assert!(
            tokio::time::timeout(Duration::from_millis(200), &mut server)
                .await
                .is_err(),
            "serve returned while a stream was open"
        );
        drop(chunks);
        server.await.expect("task").expect("serve");
        read_until(&mut tcp, &mut seen, "\r\n0\r\n\r\n").await;
    }
}
