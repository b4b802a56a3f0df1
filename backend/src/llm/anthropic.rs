//! Anthropic's Messages API, streamed
//! (<https://docs.anthropic.com/en/api/messages-streaming>).
//!
//! Owns the request body (our history mapped to `tool_use` / `tool_result`
//! blocks) and the decoding of Anthropic's named events into [`LlmEvent`]s.
//! The HTTP and SSE plumbing is [`super::sse`]'s; thinking, citations and
//! server-side tool blocks are skipped, not surfaced.

use super::http;
use super::sse::{self, SseEvent};
use super::{
    ChatRequest, HttpSettings, LlmError, LlmEvent, LlmStream, Message, Schema, StopReason, ToolCall,
};
use crate::config::Secret;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;

/// The name users see in errors.
const PROVIDER: &str = "Anthropic";

/// The API version this module speaks.
const API_VERSION: &str = "2023-06-01";

/// Starts a streaming Messages request at `{base_url}/v1/messages`.
///
/// Returns an error for connection failures and non-2xx statuses; after
/// that, events (or one error) arrive on the returned channel.
pub async fn stream(
    http: &reqwest::Client,
    settings: &HttpSettings,
    base_url: &str,
    api_key: &Secret,
    request: ChatRequest<'_>,
) -> Result<LlmStream, LlmError> {
    let url = http::endpoint(PROVIDER, base_url, "v1/messages")?;
    let key = http::secret_header(PROVIDER, api_key.expose())?;
    let builder = http
        .post(url)
        .header("x-api-key", key)
        .header("anthropic-version", API_VERSION)
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .json(&request_body(&request));
    let response = http::send(PROVIDER, settings, builder).await?;
    let reader = sse::EventReader::new(PROVIDER, response, settings.idle_timeout);
    Ok(sse::spawn(reader, Decoder::default()))
}

/// The JSON body of a streaming Messages request, written from the request
/// as it is: borrowed, with no `serde_json::Value` tree built and dropped
/// on the way (as `openai::request_body`).
fn request_body<'a>(request: &'a ChatRequest<'_>) -> Body<'a> {
    Body {
        model: &request.model,
        max_tokens: request.max_tokens,
        messages: messages(&request.messages),
        stream: true,
        system: (!request.system.is_empty()).then_some(request.system.as_str()),
        tools: request
            .tools
            .iter()
            .map(|tool| Tool {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.input_schema,
            })
            .collect(),
    }
}

/// A Messages request, as [`request_body`] writes it.
#[derive(Debug, Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    messages: Vec<Msg<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
}

/// One message: a user's text, or blocks.
#[derive(Debug, Serialize)]
struct Msg<'a> {
    role: &'static str,
    content: SentContent<'a>,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum SentContent<'a> {
    Text(&'a str),
    Blocks(Vec<SentBlock<'a>>),
}

/// One content block, by its `type`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum SentBlock<'a> {
    Text {
        text: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        is_error: bool,
    },
}

/// A tool the model may call.
#[derive(Debug, Serialize)]
struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    /// Written as the text it is kept as.
    input_schema: &'a Schema,
}

/// Our history in Anthropic's shape: consecutive tool results become one
/// user message, as the API requires results to follow their `tool_use`
/// turn together.
fn messages(history: &[Message]) -> Vec<Msg<'_>> {
    fn flush<'a>(out: &mut Vec<Msg<'a>>, results: &mut Vec<SentBlock<'a>>) {
        if !results.is_empty() {
            out.push(Msg {
                role: "user",
                content: SentContent::Blocks(std::mem::take(results)),
            });
        }
    }
    let mut out = Vec::with_capacity(history.len());
    let mut results = Vec::new();
    for message in history {
        match message {
            Message::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => results.push(SentBlock::ToolResult {
                tool_use_id: call_id,
                content,
                is_error: *is_error,
            }),
            Message::User { text } => {
                flush(&mut out, &mut results);
                out.push(Msg {
                    role: "user",
                    content: SentContent::Text(text),
                });
            }
            Message::Assistant { text, tool_calls } => {
                flush(&mut out, &mut results);
                let mut content = Vec::with_capacity(tool_calls.len() + 1);
                if !text.is_empty() {
                    content.push(SentBlock::Text { text });
                }
                content.extend(tool_calls.iter().map(|call| SentBlock::ToolUse {
                    id: &call.id,
                    name: &call.name,
                    input: &call.arguments,
                }));
                // The API rejects an empty assistant turn; the history should
                // never hold one, but dropping it beats a 400.
                if !content.is_empty() {
                    out.push(Msg {
                        role: "assistant",
                        content: SentContent::Blocks(content),
                    });
                }
            }
        }
    }
    flush(&mut out, &mut results);
    out
}

/// One event of the stream, by its `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {},
    ContentBlockStart {
        index: u64,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: u64,
        delta: BlockDelta,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        delta: MessageDelta,
    },
    MessageStop {},
    Ping {},
    Error {
        #[serde(default)]
        error: Value,
    },
    /// Event types added after this was written: ignored, as the API's
    /// versioning policy asks.
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    /// Thinking, server tool use, and whatever comes next.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    /// Thinking, signature and citation deltas.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

/// A content block being received.
#[derive(Debug)]
enum Block {
    Text,
    ToolUse {
        id: String,
        name: String,
        /// `input` from `content_block_start` (normally `{}`).
        initial_input: Value,
        /// The concatenated `partial_json` deltas.
        json: String,
    },
    Other,
}

/// Turns Anthropic's events into ours.
#[derive(Debug, Default)]
struct Decoder {
    /// Open content blocks by index.
    blocks: HashMap<u64, Block>,
    /// From `message_delta`.
    stop_reason: Option<String>,
    /// Whether a tool call was emitted (decides a missing stop reason).
    emitted_tool_call: bool,
}

impl sse::Decoder for Decoder {
    fn on_event(&mut self, event: SseEvent) -> Result<Vec<LlmEvent>, LlmError> {
        let data: Value = serde_json::from_str(&event.data)
            .map_err(|_| http::malformed(PROVIDER, "an event that is not valid JSON"))?;
        let event: StreamEvent = serde_json::from_value(data)
            .map_err(|_| http::malformed(PROVIDER, "an event of an unexpected shape"))?;
        let mut out = Vec::new();
        match event {
            StreamEvent::MessageStart {} | StreamEvent::Ping {} | StreamEvent::Unknown => {}
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = match content_block {
                    ContentBlock::Text { text } => {
                        if !text.is_empty() {
                            out.push(LlmEvent::TextDelta(text));
                        }
                        Block::Text
                    }
                    ContentBlock::ToolUse { id, name, input } => Block::ToolUse {
                        id,
                        name,
                        initial_input: input,
                        json: String::new(),
                    },
                    ContentBlock::Other => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            StreamEvent::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } => match self.blocks.get(&index) {
                    Some(Block::ToolUse { .. }) => {
                        return Err(http::malformed(PROVIDER, "text inside a tool call"));
                    }
                    Some(Block::Other) => {}
                    Some(Block::Text) | None if text.is_empty() => {}
                    Some(Block::Text) | None => out.push(LlmEvent::TextDelta(text)),
                },
                BlockDelta::InputJsonDelta { partial_json } => match self.blocks.get_mut(&index) {
                    Some(Block::ToolUse { json, .. }) => json.push_str(&partial_json),
                    // Server-side tools (web search …) stream their input too.
                    Some(Block::Other) => {}
                    Some(Block::Text) | None => {
                        return Err(http::malformed(
                            PROVIDER,
                            "tool input for a block that is not a tool call",
                        ));
                    }
                },
                BlockDelta::Other => {}
            },
            StreamEvent::ContentBlockStop { index } => {
                if let Some(Block::ToolUse {
                    id,
                    name,
                    initial_input,
                    json,
                }) = self.blocks.remove(&index)
                {
                    let arguments = if json.trim().is_empty() && initial_input.is_object() {
                        initial_input
                    } else {
                        super::parse_arguments(PROVIDER, &json)?
                    };
                    self.emitted_tool_call = true;
                    out.push(LlmEvent::ToolCall(ToolCall {
                        id,
                        name,
                        arguments,
                    }));
                }
            }
            StreamEvent::MessageDelta { delta } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(reason);
                }
            }
            StreamEvent::MessageStop {} => {
                out.push(LlmEvent::Finished(self.stop_reason()));
            }
            StreamEvent::Error { error } => {
                let detail = http::error_detail(&json!({ "error": error }))
                    .unwrap_or_else(|| "an unspecified error".to_owned());
                return Err(LlmError::Reported {
                    provider: PROVIDER.to_owned(),
                    detail,
                });
            }
        }
        Ok(out)
    }

    fn on_eof(&mut self) -> Result<Vec<LlmEvent>, LlmError> {
        Err(http::network(
            PROVIDER,
            "the stream ended before the answer was complete",
        ))
    }
}

impl Decoder {
    fn stop_reason(&self) -> StopReason {
        match self.stop_reason.as_deref() {
            Some("end_turn") => StopReason::EndTurn,
            Some("tool_use") => StopReason::ToolUse,
            Some("max_tokens") => StopReason::MaxTokens,
            Some(other) => StopReason::Other(other.to_owned()),
            None if self.emitted_tool_call => StopReason::ToolUse,
            None => StopReason::EndTurn,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;
    use crate::llm::sse::Decoder as _;

    fn decode(body: &str) -> Vec<Result<LlmEvent, LlmError>> {
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        for event in sse::events_of(body.as_bytes()) {
            match decoder.on_event(event) {
                Ok(events) => out.extend(events.into_iter().map(Ok)),
                Err(error) => {
                    out.push(Err(error));
                    return out;
                }
            }
        }
        out
    }

    fn event(data: Value) -> String {
        format!(
            "event: {}\ndata: {data}\n\n",
            data["type"].as_str().unwrap_or("x")
        )
    }

    #[test]
    fn history_maps_to_text_tool_use_and_merged_tool_result_blocks() {
        let request = ChatRequest {
            model: "claude-x".into(),
            system: "Be brief.".into(),
            messages: vec![
                Message::User {
                    text: "Weather in Paris and Rome?".into(),
                },
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![
                        ToolCall::new("toolu_1", "get_weather", json!({"city": "Paris"})),
                        ToolCall::new("toolu_2", "get_weather", json!({"city": "Rome"})),
                    ],
                },
                Message::ToolResult {
                    call_id: "toolu_1".into(),
                    name: "get_weather".into(),
                    content: "sunny".into(),
                    is_error: false,
                },
                Message::ToolResult {
                    call_id: "toolu_2".into(),
                    name: "get_weather".into(),
                    content: "timeout".into(),
                    is_error: true,
                },
                Message::Assistant {
                    text: "Paris is sunny.".into(),
                    tool_calls: vec![],
                },
                Message::User {
                    text: "Thanks".into(),
                },
            ]
            .into(),
            tools: vec![ToolSpec {
                name: "get_weather".into(),
                description: "Weather by city".into(),
                input_schema: json!({"type": "object"}).into(),
                label: "Weather: get_weather".into(),
            }],
            max_tokens: 512,
        };
        assert_eq!(
            serde_json::to_value(request_body(&request)).expect("body"),
            json!({
                "model": "claude-x",
                "max_tokens": 512,
                "system": "Be brief.",
                "stream": true,
                "tools": [{"name": "get_weather", "description": "Weather by city", "input_schema": {"type": "object"}}],
                "messages": [
                    {"role": "user", "content": "Weather in Paris and Rome?"},
                    {"role": "assistant", "content": [
                        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                        {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny", "is_error": false},
                        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "timeout", "is_error": true},
                    ]},
                    {"role": "assistant", "content": [{"type": "text", "text": "Paris is sunny."}]},
                    {"role": "user", "content": "Thanks"},
                ],
            })
        );
    }

    #[test]
    fn no_tools_and_no_system_prompt_leave_those_fields_out() {
        let request = ChatRequest {
            model: "m".into(),
            system: String::new(),
            messages: vec![Message::User { text: "hi".into() }].into(),
            tools: vec![],
            max_tokens: 1,
        };
        let body = serde_json::to_value(request_body(&request)).expect("body");
        assert!(body.get("tools").is_none(), "no tools field");
        assert!(body.get("system").is_none(), "no system field");
    }

    #[test]
    fn a_tool_call_with_no_input_deltas_has_empty_arguments() {
        let body = [
            event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "now", "input": {}}})),
            event(json!({"type": "content_block_stop", "index": 0})),
            event(json!({"type": "message_stop"})),
        ]
        .concat();
        assert_eq!(
            decode(&body),
            vec![
                Ok(LlmEvent::ToolCall(ToolCall::new("t", "now", json!({})))),
                Ok(LlmEvent::Finished(StopReason::ToolUse)),
            ]
        );
    }

    #[test]
    fn stop_reasons_map_to_ours() {
        let cases = [
            ("end_turn", StopReason::EndTurn),
            ("tool_use", StopReason::ToolUse),
            ("max_tokens", StopReason::MaxTokens),
            ("stop_sequence", StopReason::Other("stop_sequence".into())),
        ];
        for (reason, expected) in cases {
            let body = [
                event(json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 1}})),
                event(json!({"type": "message_stop"})),
            ]
            .concat();
            assert_eq!(
                decode(&body),
                vec![Ok(LlmEvent::Finished(expected))],
                "{reason}"
            );
        }
    }

    #[test]
    fn unknown_events_blocks_and_deltas_are_skipped() {
        let body = [
            event(json!({"type": "brand_new_event", "foo": 1})),
            event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}})),
            event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}})),
            event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}})),
            event(json!({"type": "content_block_stop", "index": 0})),
            event(json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})),
            event(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}})),
            event(json!({"type": "content_block_stop", "index": 1})),
            event(json!({"type": "message_stop"})),
        ]
        .concat();
        assert_eq!(
            decode(&body),
            vec![
                Ok(LlmEvent::TextDelta("Hi".into())),
                Ok(LlmEvent::Finished(StopReason::EndTurn)),
            ]
        );
    }

    #[test]
    fn broken_tool_input_is_reported_as_malformed() {
        let cases = [
            ("truncated JSON", r#"{"location": "Par"#),
            ("not an object", r#"["Paris"]"#),
        ];
        for (message, partial_json) in cases {
            let body = [
                event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "w", "input": {}}})),
                event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": partial_json}})),
                event(json!({"type": "content_block_stop", "index": 0})),
            ]
            .concat();
            let out = decode(&body);
            assert!(
                matches!(out.last(), Some(Err(LlmError::Malformed { .. }))),
                "{message}: {out:?}"
            );
        }
    }

    #[test]
    fn a_known_event_of_the_wrong_shape_is_malformed() {
        let body = event(
            json!({"type": "content_block_delta", "delta": {"type": "text_delta", "text": "no index"}}),
        );
        assert!(matches!(
            decode(&body).last(),
            Some(Err(LlmError::Malformed { .. }))
        ));
    }
}
