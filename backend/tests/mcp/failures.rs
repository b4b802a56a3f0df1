//! Credentials, and the ways a URL can fail to be an MCP server.

use axum::Router;
use axum::response::Html;
use axum::routing::any;
use countersign::config::Secret;
use countersign::mcp::{McpError, connect};
use serde_json::Map;

use crate::servers::{Eras, Fixture, Gate, closed_port, http, serve_router, settings, target};

#[tokio::test]
async fn custom_headers_and_the_bearer_token_reach_the_server_on_every_request() {
    for eras in [Eras::Both, Eras::LegacyOnly] {
        let fixture = Fixture::start(eras, Gate::Bearer("s3cret-token".into())).await;
        let mut target = target(fixture.url());
        target.bearer = Some(Secret::new("s3cret-token"));
        target
            .headers
            .push(("X-Tenant".into(), Secret::new("acme-legal")));

        let session = connect(http(), &target, &settings())
            .await
            .expect("connects with the right token");
        session.list_tools().await.expect("lists tools");
        session
            .call_tool("paged_first", Map::new())
            .await
            .expect("calls a tool");
        session.close().await;

        let seen = fixture.seen();
        let methods: Vec<&str> = seen.iter().map(|s| s.method.as_str()).collect();
        assert!(
            methods.contains(&"tools/list") && methods.contains(&"tools/call"),
            "{eras:?}: {methods:?}"
        );
        for request in &seen {
            assert_eq!(
                request
                    .headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok()),
                Some("Bearer s3cret-token"),
                "{eras:?}: {}",
                request.method
            );
            assert_eq!(
                request
                    .headers
                    .get("x-tenant")
                    .and_then(|v| v.to_str().ok()),
                Some("acme-legal"),
                "{eras:?}: {}",
                request.method
            );
        }
    }
}

#[tokio::test]
async fn refused_credentials_are_unauthorized_and_the_error_does_not_show_them() {
    let cases = [
        (
            Gate::Bearer("right-token".into()),
            401,
            "401 with a challenge",
        ),
        (Gate::Forbidden, 403, "403 without a challenge"),
    ];
    for (gate, status, why) in cases {
        let fixture = Fixture::start(Eras::Both, gate).await;
        let mut target = target(fixture.url());
        target.bearer = Some(Secret::new("wrong-token-value"));

        let error = connect(http(), &target, &settings())
            .await
            .expect_err("the server refuses the token");

        assert!(
            matches!(error, McpError::Unauthorized { status: s, .. } if s == status),
            "{why}: {error:?}"
        );
        assert!(
            error.to_string().contains("refused the credentials"),
            "{why}"
        );
        assert!(
            !format!("{error} {error:?}").contains("wrong-token-value"),
            "{why}"
        );
    }
}

#[tokio::test]
async fn a_plain_404_is_not_an_mcp_server() {
    let server = serve_router(Router::new()).await;

    let error = connect(http(), &target(server.url("/mcp")), &settings())
        .await
        .expect_err("a 404 is no MCP server");

    assert!(
        matches!(&error, McpError::NotMcp { detail } if detail.contains("404")),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("the URL answered, but not as an MCP server")
    );
}

#[tokio::test]
async fn a_web_page_is_not_an_mcp_server() {
    let page = Router::new().route(
        "/mcp",
        any(|| async { Html("<!doctype html><title>Welcome</title><p>Hello</p>") }),
    );
    let server = serve_router(page).await;

    let error = connect(http(), &target(server.url("/mcp")), &settings())
        .await
        .expect_err("a web page is no MCP server");

    assert!(
        matches!(&error, McpError::NotMcp { detail } if detail.contains("text/html")),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_closed_port_is_unreachable() {
    let addr = closed_port().await;
    let url = format!("http://{addr}/mcp").parse().expect("URL parses");

    let error = connect(http(), &target(url), &settings())
        .await
        .expect_err("nothing listens there");

    assert_eq!(
        error,
        McpError::Unreachable {
            reason: "connection refused".into()
        }
    );
}
