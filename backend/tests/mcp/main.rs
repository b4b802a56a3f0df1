//! The MCP client (`countersign::mcp`) against real servers on loopback:
//! the workspace's demo server, in-test rmcp servers, a hand-written
//! 2025-11-25 server, a server that asks for input mid-call (`input`), and
//! things that are not MCP servers at all.

mod calls;
mod failures;
mod input;
mod negotiation;
mod servers;
mod tools;

use countersign_demo_mcp::DemoServer;

/// The demo server on 127.0.0.1, port 0.
async fn demo() -> DemoServer {
    DemoServer::start("127.0.0.1:0".parse().expect("a socket address parses"))
        .await
        .expect("the demo server starts")
}

fn demo_url(server: &DemoServer) -> reqwest::Url {
    server.mcp_url().parse().expect("the demo URL parses")
}
