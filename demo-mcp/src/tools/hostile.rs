//! Hostile listings and results, switched on one at a time with `POST
//! /admin/hostile {"mode": …}` (and off with `POST /admin/reset`), so the
//! client's bounds on what a server sends (DESIGN §2) can be tested
//! against a real server:
//!
//! | mode              | what the server then does                                    |
//! |-------------------|--------------------------------------------------------------|
//! | `many_tools`      | lists 600 more tools (`bulk_tool_000` …), 609 in all          |
//! | `huge_descriptor` | lists `huge_descriptor`, whose description is 70 KiB          |
//! | `huge_listing`    | lists 300 more tools of 60 KiB each: an ~18 MiB `tools/list`  |
//! | `huge_result`     | lists `huge_result`, whose call returns 17 MiB of text        |
//! | `bad_header`      | lists `bad_header_tool`, whose `x-mcp-header` is not a token  |
//! | `search_as_tool_error` | `search_notes` answers its notes as `isError: true`      |
//! | `search_as_rpc_error`  | `search_notes` answers its notes in a JSON-RPC error     |
//!
//! Each bound is overstepped by exactly one thing, so a test knows which
//! guard answered. `bad_header_tool` and `huge_result` are read-only and
//! closed-world, and their calls are counted like every other tool's.

use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde_json::{Value, json};

pub use crate::state::HostileMode;
use crate::state::ToolSetShape;

/// Listed in `huge_descriptor` mode: a 70 KiB description.
pub const HUGE_DESCRIPTOR: &str = "huge_descriptor";
/// Listed in `huge_result` mode: returns 17 MiB of text.
pub const HUGE_RESULT: &str = "huge_result";
/// Listed in `bad_header` mode: `x-mcp-header: "Bad Header"` on a property.
pub const BAD_HEADER_TOOL: &str = "bad_header_tool";
/// How many extra tools `many_tools` lists.
pub const MANY_TOOLS: usize = 600;
/// How many 60 KiB tools `huge_listing` lists.
pub const HUGE_LISTING_TOOLS: usize = 300;
/// The size of `huge_result`'s text, in bytes.
pub const HUGE_RESULT_BYTES: usize = 17 * 1024 * 1024;

/// The extra tools `shape`'s hostile modes list.
pub(crate) fn descriptors(shape: ToolSetShape) -> Vec<Tool> {
    let mut tools = Vec::new();
    if shape.many_tools {
        tools.extend((0..MANY_TOOLS).map(|n| {
            read_only(
                format!("bulk_tool_{n:03}"),
                "One of many.".to_owned(),
                json!({ "type": "object", "properties": {} }),
            )
        }));
    }
    if shape.huge_descriptor {
        tools.push(read_only(
            HUGE_DESCRIPTOR.to_owned(),
            padding(70 * 1024),
            json!({ "type": "object", "properties": {} }),
        ));
    }
    if shape.huge_listing {
        tools.extend((0..HUGE_LISTING_TOOLS).map(|n| {
            read_only(
                format!("padded_tool_{n:03}"),
                padding(60 * 1024),
                json!({ "type": "object", "properties": {} }),
            )
        }));
    }
    if shape.huge_result {
        tools.push(read_only(
            HUGE_RESULT.to_owned(),
            "Returns 17 MiB of text (demo: more than a client should accept).".to_owned(),
            json!({ "type": "object", "properties": {} }),
        ));
    }
    if shape.bad_header {
        tools.push(read_only(
            BAD_HEADER_TOOL.to_owned(),
            "Looks up a region. (Demo: its x-mcp-header is \"Bad Header\", which is not an \
             HTTP token, so clients must not offer it.)"
                .to_owned(),
            json!({
                "type": "object",
                "properties": {
                    "region": { "type": "string", "x-mcp-header": "Bad Header" }
                }
            }),
        ));
    }
    tools
}

/// What a hostile tool's call returns, if `name` is one that can run.
pub(crate) fn call(name: &str) -> Option<CallToolResult> {
    match name {
        HUGE_RESULT => Some(CallToolResult::success(vec![ContentBlock::text(
            "x".repeat(HUGE_RESULT_BYTES),
        )])),
        BAD_HEADER_TOOL => Some(CallToolResult::success(vec![ContentBlock::text(
            "Region: demo (bad_header_tool ran).".to_owned(),
        )])),
        _ => None,
    }
}

/// `bytes` of readable filler.
fn padding(bytes: usize) -> String {
    let sentence = "This description is padded to test a client's bounds. ";
    sentence.repeat(bytes / sentence.len() + 1)[..bytes].to_owned()
}

fn read_only(name: String, description: String, schema: Value) -> Tool {
    Tool::new(name, description, super::object(schema)).with_annotations(
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .open_world(false),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_lists_exactly_its_own_tools() {
        let only = |change: fn(&mut ToolSetShape)| {
            let mut shape = ToolSetShape::default();
            change(&mut shape);
            descriptors(shape)
        };
        assert_eq!(only(|s| s.many_tools = true).len(), MANY_TOOLS);
        let huge = only(|s| s.huge_descriptor = true);
        assert_eq!(
            huge[0].description.as_deref().map(str::len),
            Some(70 * 1024)
        );
        assert_eq!(only(|s| s.huge_listing = true).len(), HUGE_LISTING_TOOLS);
        assert_eq!(only(|s| s.huge_result = true)[0].name, HUGE_RESULT);
        assert_eq!(only(|s| s.bad_header = true)[0].name, BAD_HEADER_TOOL);
        assert!(descriptors(ToolSetShape::default()).is_empty());
    }
}
