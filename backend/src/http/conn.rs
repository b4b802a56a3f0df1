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

use axum::{Router, extract::ConnectInfo};
use hyper_util::{rt::TokioIo, server::graceful::GracefulShutdown, service::TowerToHyperService};
use std::{future::Future, time::Duration};
use tower::ServiceExt as _;

/// Serves `app` on `listener` until `shutdown` resolves, then waits for the
/// open connections to finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
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
        let service = app
            .clone()
            .map_request(move |mut request: axum::extract::Request<_>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                request
            });
        let connection = hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(tcp), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!(error = %err, "connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
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
    use std::net::SocketAddr;

    #[tokio::test]
    async fn serves_http1_with_the_peer_address_and_stops_on_shutdown() {
        let app = Router::new().route(
            "/peer",
            axum::routing::get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move {
                peer.ip().to_string()
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, app, async {
            let _ = stopped.await;
        }));
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
}
