//! Where a proposed call's arguments came from (issue 16): the
//! `provenance` of `mcp_confirmation_required` and of a pending call.
//!
//! The server matches every string in the arguments against what the user
//! typed in the chat and against the tool results the chat has seen
//! (long shared spans of normalised text, also inside base64, hex and
//! percent-encoded text). A value's spans say which part came from where;
//! a flow says that text from one tool's result would leave for another
//! tool (a different connector, or one not declared closed-world). A call
//! with a flow always asks, and so does a call that could change or send
//! anything after a result of the same turn that gives the assistant
//! instructions. Nothing here carries the matched text itself:
//! only where it lies in the argument, and its digest.

use crate::vocab::{SpanEncoding, ValueOrigin};
use serde::{Deserialize, Serialize};

/// What the server found about a proposed call's arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Provenance {
    /// One entry per string in the arguments: string values, object keys
    /// and numbers (as their JSON text).
    #[serde(default)]
    pub values: Vec<ArgumentValue>,
    /// Text from tool results that this call would send elsewhere: each
    /// makes the call ask, whatever grant or trust exists.
    #[serde(default)]
    pub flows: Vec<Flow>,
    /// Earlier results of this turn that contain text aimed at the
    /// assistant (instructions); Countersign treated them as data, and a
    /// later call of the turn that could change or send anything asks.
    #[serde(default)]
    pub instructions_in: Vec<Source>,
}

impl Provenance {
    /// Whether the card must warn: a flow, or instructions read earlier in
    /// this turn (the call may be following them).
    pub fn flagged(&self) -> bool {
        self.carries_results() || self.follows_instructions()
    }

    /// Text from a tool result would leave for another tool: the call
    /// asks whatever grant, rule or trust exists.
    pub fn carries_results(&self) -> bool {
        !self.flows.is_empty()
    }

    /// This turn read a result that gives the assistant instructions: a
    /// later call that could change or send anything asks, whatever its
    /// arguments.
    pub fn follows_instructions(&self) -> bool {
        !self.instructions_in.is_empty()
    }
}

/// One string of the arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ArgumentValue {
    /// Where it is in the arguments: an RFC 6901 JSON Pointer (`/body`,
    /// `/to/0`).
    pub path: String,
    /// The string is the object key at `path`, not its value.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub key: bool,
    /// `tool_result` if any span came from a tool result, else `typed`
    /// if any was typed by the user, else `model`.
    pub origin: ValueOrigin,
    /// The matched parts, in order, not overlapping.
    #[serde(default)]
    pub spans: Vec<Span>,
}

/// A part of a string value seen before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Span {
    /// Start, in Unicode scalar values (chars) of the value, inclusive.
    pub start: u32,
    /// End, in chars, exclusive.
    pub end: u32,
    /// `typed` or `tool_result`.
    pub origin: ValueOrigin,
    /// For `tool_result`: which result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// How the part is written in the value (`plain`, or the encoding the
    /// match was found under).
    pub encoding: SpanEncoding,
    /// SHA-256 (hex) of the matched text as normalised: the proof of the
    /// match without a second copy of the data.
    pub digest: String,
}

/// An earlier tool result of the chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Source {
    /// The `mcp_tool_call` id of the call that returned it.
    pub call: String,
    /// Its connector's name.
    pub connector_name: String,
    /// The tool.
    pub tool_name: String,
    /// When it returned (RFC 3339).
    pub at: String,
}

/// Text from a tool result that this call would send elsewhere.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Flow {
    /// Where the text came from.
    pub from: Source,
    /// The connector the call goes to.
    pub to_connector_name: String,
    /// The tool it calls.
    pub to_tool_name: String,
    /// The tool is not declared closed-world (its reviewed annotations
    /// lack `openWorldHint: false`): it may reach outside.
    pub reaches_outside: bool,
    /// The call goes to another connector than the text came from.
    pub other_connector: bool,
    /// The card's words: "This sends text from Matter notes: read_matter
    /// to Mail: send (reaches outside), to partner@firm.example".
    pub text: String,
    /// Where the call sends it, as the card's "Sends to" lists them (in
    /// ASCII); empty when the arguments name none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destinations: Vec<String>,
}
