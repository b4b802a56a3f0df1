//! Black-box tests of the demo MCP server: a real server on 127.0.0.1 port
//! 0, raw JSON-RPC over HTTP, so each test shows what goes over the wire.

mod admin;
mod fixtures;
mod guard;
mod helpers;
mod notifications;
mod tool_calls;
mod tools_list;
