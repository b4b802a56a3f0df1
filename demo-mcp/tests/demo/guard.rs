//! `Host` and `Origin` checks on every route, and loopback-only listening.

use std::io;

use countersign_demo_mcp::DemoServer;
use serde_json::json;

use crate::helpers::{TestServer, spawn_server};

/// The three kinds of route the guard covers: MCP, an admin read, an admin write.
async fn statuses_with(server: &TestServer, header: &str, value: &str) -> [u16; 3] {
    let mcp = server
        .request_2026("tools/list", json!({}))
        .header(header, value)
        .send()
        .await
        .expect("reaches the server");
    let calls = server
        .http
        .get(server.url("/admin/calls"))
        .header(header, value)
        .send()
        .await
        .expect("reaches the server");
    let add_tool = server
        .http
        .post(server.url("/admin/add-tool"))
        .header(header, value)
        .send()
        .await
        .expect("reaches the server");
    [mcp, calls, add_tool].map(|response| response.status().as_u16())
}

#[tokio::test]
async fn a_foreign_host_header_is_refused_with_403_on_every_route_and_changes_nothing() {
    let server = spawn_server().await;
    let port = server.port();
    let other_port = port.wrapping_add(1);
    let hosts = [
        ("evil.example".to_owned(), "a rebinding name"),
        (
            format!("evil.example:{port}"),
            "a rebinding name with our port",
        ),
        (format!("127.0.0.1:{other_port}"), "another port"),
        ("127.0.0.1".to_owned(), "no port"),
        ("localhost".to_owned(), "localhost without a port"),
        (format!("0.0.0.0:{port}"), "the unspecified address"),
        (format!("[::1]:{port}"), "an address we do not listen on"),
    ];

    for (host, why) in &hosts {
        assert_eq!(
            statuses_with(&server, "Host", host).await,
            [403; 3],
            "Host {host}: {why}"
        );
    }

    let tools = server.tools_2026().await;
    assert!(
        !tools.iter().any(|tool| tool["name"] == "late_arrival"),
        "refused add-tool did nothing"
    );
}

#[tokio::test]
async fn a_foreign_origin_is_refused_with_403_on_every_route_and_runs_nothing() {
    let server = spawn_server().await;
    let port = server.port();
    let origins = [
        ("http://evil.example".to_owned(), "another site"),
        (
            format!("http://evil.example:{port}"),
            "another site on our port",
        ),
        (
            format!("http://127.0.0.1:{}", port.wrapping_add(1)),
            "another port",
        ),
        (format!("https://127.0.0.1:{port}"), "another scheme"),
        ("http://localhost".to_owned(), "no port"),
        ("null".to_owned(), "an opaque origin"),
    ];

    for (origin, why) in &origins {
        assert_eq!(
            statuses_with(&server, "Origin", origin).await,
            [403; 3],
            "Origin {origin}: {why}"
        );
        let call = server
            .request_2026(
                "tools/call",
                json!({"name": "search_notes", "arguments": {"query": "lease"}}),
            )
            .header("Origin", origin)
            .send()
            .await
            .expect("reaches the server");
        assert_eq!(call.status(), 403, "tools/call from {origin}");
    }

    assert_eq!(server.calls().await["total"], 0, "no refused call executed");
    let tools = server.tools_2026().await;
    assert!(
        !tools.iter().any(|tool| tool["name"] == "late_arrival"),
        "refused add-tool did nothing"
    );
}

#[tokio::test]
async fn loopback_hosts_with_our_port_and_same_origin_requests_are_served() {
    let server = spawn_server().await;
    let port = server.port();

    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        assert_eq!(
            statuses_with(&server, "Host", &host).await,
            [200; 3],
            "Host {host}"
        );
    }
    for origin in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
    ] {
        assert_eq!(
            statuses_with(&server, "Origin", &origin).await,
            [200; 3],
            "Origin {origin}"
        );
    }
}

#[tokio::test]
async fn the_server_refuses_to_start_on_a_non_loopback_address() {
    for addr in ["0.0.0.0:0", "[::]:0"] {
        let error = DemoServer::start(addr.parse().expect("a socket address"))
            .await
            .expect_err("non-loopback addresses are refused");

        assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{addr}: {error}");
    }
}
