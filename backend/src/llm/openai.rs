//! OpenAI-compatible Chat Completions, streamed
//! (<https://platform.openai.com/docs/api-reference/chat-streaming>).
//!
//! One adapter for every server that speaks the format: OpenAI, Ollama,
//! vLLM, llama.cpp, LM Studio, OpenRouter. Owns the request body (`tools`,
//! `tool_calls`, `role: tool` messages), the reassembly of tool calls that
//! arrive in fragments, and the model list (`GET /models`). The HTTP and SSE
//! plumbing is [`super::sse`]'s.
//!
//! Servers differ in small ways; each tolerance below says which quirk it
//! is for. Only the first choice is read: we never ask for `n > 1`.

use super::http;
use super::sse::{self, SseEvent};
use super::{
    ChatRequest, HttpSettings, LlmError, LlmEvent, LlmStream, Message, Schema, StopReason, ToolCall,
};
use crate::config::Secret;
use reqwest::header::{ACCEPT, AUTHORIZATION};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;

/// The name users see in errors.
const PROVIDER: &str = "OpenAI";

/// How long listing models may take, all in.
const LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// Starts a streaming Chat Completions request at
/// `{base_url}/chat/completions`; the key, when given, is sent as a bearer
/// token (local servers often need none).
///
/// Returns an error for connection failures and non-2xx statuses; after
/// that, events (or one error) arrive on the returned channel.
pub async fn stream(
    http: &reqwest::Client,
    settings: &HttpSettings,
    base_url: &str,
    api_key: Option<&Secret>,
    request: ChatRequest<'_>,
) -> Result<LlmStream, LlmError> {
    let url = http::endpoint(PROVIDER, base_url, "chat/completions")?;
    let mut builder = http
        .post(url)
        .header(ACCEPT, "text/event-stream")
        .json(&request_body(&request));
    if let Some(key) = api_key {
        builder = builder.header(AUTHORIZATION, bearer(key)?);
    }
    let response = http::send(PROVIDER, settings, builder).await?;
    let reader = sse::EventReader::new(PROVIDER, response, settings.idle_timeout);
    Ok(sse::spawn(reader, Decoder::default()))
}

/// The model ids the server lists at `{base_url}/models`, sorted.
pub async fn list_models(
    http: &reqwest::Client,
    base_url: &str,
    api_key: Option<&Secret>,
) -> Result<Vec<String>, LlmError> {
    let url = http::endpoint(PROVIDER, base_url, "models")?;
    let mut builder = http.get(url).timeout(LIST_TIMEOUT);
    if let Some(key) = api_key {
        builder = builder.header(AUTHORIZATION, bearer(key)?);
    }
    let mut response = http::execute(PROVIDER, LIST_TIMEOUT, LIST_TIMEOUT, builder).await?;
    let body = http::read_json(PROVIDER, &mut response, LIST_TIMEOUT).await?;
    let unexpected = || http::malformed(PROVIDER, "a model list of an unexpected shape");
    let mut ids = body
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(unexpected)?
        .iter()
        .map(|model| {
            model
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(unexpected)
        })
        .collect::<Result<Vec<_>, _>>()?;
    ids.sort();
    ids.dedup();
    Ok(ids)
}

fn bearer(key: &Secret) -> Result<reqwest::header::HeaderValue, LlmError> {
    http::secret_header(PROVIDER, &format!("Bearer {}", key.expose()))
}

/// The JSON body of a streaming Chat Completions request, written from
/// the request as it is: borrowed, with no `serde_json::Value` tree built
/// and dropped on the way (each step of each turn sends the chat's whole
/// history; as a tree each message was a map and copies of its strings,
/// and each tool's schema, kept as text, was parsed back into one).
fn request_body<'a>(request: &'a ChatRequest<'_>) -> Body<'a> {
    let system = (!request.system.is_empty()).then_some(Msg::System {
        content: &request.system,
    });
    Body {
        model: &request.model,
        messages: system
            .into_iter()
            .chain(request.messages.iter().filter_map(message))
            .collect(),
        stream: true,
        max_tokens: request.max_tokens,
        tools: request
            .tools
            .iter()
            .map(|tool| Tool {
                r#type: "function",
                function: Function {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: &tool.input_schema,
                },
            })
            .collect(),
    }
}

/// A Chat Completions request, as [`request_body`] writes it.
#[derive(Debug, Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<Msg<'a>>,
    stream: bool,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
}

/// One message, by its `role`.
#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum Msg<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        /// `null` when the message is only tool calls.
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<Call<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

/// A tool call in an assistant message.
#[derive(Debug, Serialize)]
struct Call<'a> {
    id: &'a str,
    r#type: &'static str,
    function: CallFunction<'a>,
}

#[derive(Debug, Serialize)]
struct CallFunction<'a> {
    name: &'a str,
    /// The API wants the arguments as a JSON string.
    arguments: String,
}

/// A tool the model may call.
#[derive(Debug, Serialize)]
struct Tool<'a> {
    r#type: &'static str,
    function: Function<'a>,
}

#[derive(Debug, Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    /// Written as the text it is kept as.
    parameters: &'a Schema,
}

/// One history message in OpenAI's shape; `None` for an empty assistant
/// message (the history should hold none, and servers reject them).
fn message(message: &Message) -> Option<Msg<'_>> {
    Some(match message {
        Message::User { text } => Msg::User { content: text },
        Message::Assistant { text, tool_calls } => {
            if text.is_empty() && tool_calls.is_empty() {
                return None;
            }
            Msg::Assistant {
                content: (!text.is_empty()).then_some(text.as_str()),
                tool_calls: tool_calls
                    .iter()
                    .map(|call| Call {
                        id: &call.id,
                        r#type: "function",
                        function: CallFunction {
                            name: &call.name,
                            arguments: call.arguments.to_string(),
                        },
                    })
                    .collect(),
            }
        }
        Message::ToolResult {
            call_id, content, ..
        } => Msg::Tool {
            tool_call_id: call_id,
            content,
        },
    })
}

/// One `chat.completion.chunk`, as far as we read it.
#[derive(Debug, Deserialize)]
struct Chunk {
    /// Empty or missing in usage-only chunks (`stream_options.include_usage`).
    #[serde(default)]
    choices: Option<Vec<Choice>>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

/// A fragment of a tool call: `id` and `function.name` come first, then
/// `function.arguments` in pieces (OpenAI sends explicit nulls in none of
/// these, but some compatible servers do).
#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// A tool call being assembled.
#[derive(Debug)]
struct PendingCall {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

/// Turns Chat Completions chunks into our events.
#[derive(Debug, Default)]
struct Decoder {
    /// Tool calls in order of first appearance.
    calls: Vec<PendingCall>,
    /// The slot in `calls` that fragments with a given `index` go to.
    slot_by_index: HashMap<u64, usize>,
}

impl sse::Decoder for Decoder {
    fn on_event(&mut self, event: SseEvent) -> Result<Vec<LlmEvent>, LlmError> {
        if event.data.trim() == "[DONE]" {
            // No finish_reason seen (some servers skip it): finish anyway.
            return self.finish(None);
        }
        let data: Value = serde_json::from_str(&event.data)
            .map_err(|_| http::malformed(PROVIDER, "a chunk that is not valid JSON"))?;
        // OpenAI sends `{"error": {…}}`; vLLM has sent a top-level
        // `{"object": "error", "message", "type", "code"}`.
        let is_error = data.get("error").is_some_and(|error| !error.is_null())
            || data.get("object").and_then(Value::as_str) == Some("error");
        if is_error {
            let detail =
                http::error_detail(&data).unwrap_or_else(|| "an unspecified error".to_owned());
            return Err(LlmError::Reported {
                provider: PROVIDER.to_owned(),
                detail,
            });
        }
        if !data.is_object() {
            return Err(http::malformed(
                PROVIDER,
                "a chunk that is not a JSON object",
            ));
        }
        let chunk: Chunk = serde_json::from_value(data)
            .map_err(|_| http::malformed(PROVIDER, "a chunk of an unexpected shape"))?;
        let Some(choice) = chunk.choices.and_then(|choices| choices.into_iter().next()) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        if let Some(delta) = choice.delta {
            if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
                out.push(LlmEvent::TextDelta(text));
            }
            for (position, fragment) in delta.tool_calls.into_iter().flatten().enumerate() {
                self.add_fragment(position, fragment);
            }
        }
        if let Some(reason) = choice.finish_reason {
            out.extend(self.finish(Some(&reason))?);
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
    fn add_fragment(&mut self, position: usize, fragment: ToolCallDelta) {
        // Gemini's compatibility layer has omitted `index`; the position in
        // the array is the best guess then.
        let index = fragment.index.unwrap_or(position as u64);
        let id = fragment.id.filter(|id| !id.is_empty());
        let existing = self.slot_by_index.get(&index).copied().filter(|&slot| {
            // Ollama reuses index 0 for every call of a parallel batch, told
            // apart only by a new id.
            let known = &self.calls[slot].id;
            id.as_ref().is_none_or(|id| known.is_empty() || known == id)
        });
        let slot = match existing {
            Some(slot) => slot,
            None => {
                self.calls.push(PendingCall {
                    index,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                let slot = self.calls.len() - 1;
                self.slot_by_index.insert(index, slot);
                slot
            }
        };
        let call = &mut self.calls[slot];
        if let Some(id) = id {
            call.id = id;
        }
        if let Some(function) = fragment.function {
            // Set, not appended: some servers repeat the full name.
            if let Some(name) = function.name.filter(|name| !name.is_empty()) {
                call.name = name;
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
    }

    /// The assembled tool calls in index order, then `Finished`.
    fn finish(&mut self, reason: Option<&str>) -> Result<Vec<LlmEvent>, LlmError> {
        let mut calls = std::mem::take(&mut self.calls);
        self.slot_by_index.clear();
        calls.sort_by_key(|call| call.index);
        let mut out = Vec::with_capacity(calls.len() + 1);
        let had_calls = !calls.is_empty();
        for call in calls {
            if call.name.is_empty() {
                return Err(http::malformed(PROVIDER, "a tool call without a name"));
            }
            let arguments = super::parse_arguments(PROVIDER, &call.arguments)?;
            let id = if call.id.is_empty() {
                // Some local servers send no id; the result must still be
                // matched to its call.
                format!("call_{}", uuid::Uuid::new_v4().simple())
            } else {
                call.id
            };
            out.push(LlmEvent::ToolCall(ToolCall {
                id,
                name: call.name,
                arguments,
            }));
        }
        let reason = match reason {
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            Some("length") => StopReason::MaxTokens,
            // Ollama has answered tool calls with `stop`.
            Some("stop") | None if had_calls => StopReason::ToolUse,
            Some("stop") | None => StopReason::EndTurn,
            Some(other) => StopReason::Other(other.to_owned()),
        };
        out.push(LlmEvent::Finished(reason));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;
    use crate::llm::sse::Decoder as _;
    use serde_json::json;

    fn decode(body: &str) -> Vec<Result<LlmEvent, LlmError>> {
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        for event in sse::events_of(body.as_bytes()) {
            match decoder.on_event(event) {
                Ok(events) => {
                    let finished = events.iter().any(|e| matches!(e, LlmEvent::Finished(_)));
                    out.extend(events.into_iter().map(Ok));
                    if finished {
                        return out;
                    }
                }
                Err(error) => {
                    out.push(Err(error));
                    return out;
                }
            }
        }
        out
    }

    fn chunk(delta: Value, finish_reason: Value) -> String {
        let data = json!({
            "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        });
        format!("data: {data}\n\n")
    }

    #[test]
    fn history_maps_to_system_assistant_tool_calls_and_tool_messages() {
        let request = ChatRequest {
            model: "gpt-x".into(),
            system: "Be brief.".into(),
            messages: vec![
                Message::User {
                    text: "Weather?".into(),
                },
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall::new(
                        "call_1",
                        "get_weather",
                        json!({"city": "Paris"}),
                    )],
                },
                Message::ToolResult {
                    call_id: "call_1".into(),
                    name: "get_weather".into(),
                    content: "sunny".into(),
                    is_error: false,
                },
                Message::Assistant {
                    text: "Sunny.".into(),
                    tool_calls: vec![],
                },
            ]
            .into(),
            tools: vec![ToolSpec {
                name: "get_weather".into(),
                description: "Weather by city".into(),
                input_schema: json!({"type": "object"}).into(),
                label: "Weather: get_weather".into(),
            }],
            max_tokens: 256,
        };
        assert_eq!(
            serde_json::to_value(request_body(&request)).expect("body"),
            json!({
                "model": "gpt-x",
                "stream": true,
                "max_tokens": 256,
                "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather by city", "parameters": {"type": "object"}}}],
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Weather?"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
                    {"role": "assistant", "content": "Sunny."},
                ],
            })
        );
    }

    #[test]
    fn no_tools_and_no_system_prompt_leave_them_out() {
        let request = ChatRequest {
            model: "m".into(),
            system: String::new(),
            messages: vec![Message::User { text: "hi".into() }].into(),
            tools: vec![],
            max_tokens: 1,
        };
        let body = serde_json::to_value(request_body(&request)).expect("body");
        assert!(body.get("tools").is_none(), "no tools field");
        assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
    }

    #[test]
    fn parallel_tool_calls_come_out_in_index_order_with_parsed_arguments() {
        let body = [
            chunk(json!({"role": "assistant", "content": null, "tool_calls": [
                {"index": 1, "id": "call_b", "type": "function", "function": {"name": "second", "arguments": ""}},
            ]}), Value::Null),
            chunk(json!({"tool_calls": [
                {"index": 0, "id": "call_a", "type": "function", "function": {"name": "first", "arguments": "{\"x\""}},
            ]}), Value::Null),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}), Value::Null),
            chunk(json!({}), json!("tool_calls")),
        ]
        .concat();
        assert_eq!(
            decode(&body),
            vec![
                Ok(LlmEvent::ToolCall(ToolCall::new(
                    "call_a",
                    "first",
                    json!({"x": 1})
                ))),
                Ok(LlmEvent::ToolCall(ToolCall::new(
                    "call_b",
                    "second",
                    json!({})
                ))),
                Ok(LlmEvent::Finished(StopReason::ToolUse)),
            ]
        );
    }

    #[test]
    fn ollama_style_calls_reusing_index_zero_stay_separate() {
        let body = [
            chunk(json!({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "a", "arguments": "{}"}}]}), Value::Null),
            chunk(json!({"tool_calls": [{"index": 0, "id": "call_2", "function": {"name": "b", "arguments": "{\"k\":2}"}}]}), Value::Null),
            chunk(json!({}), json!("stop")),
        ]
        .concat();
        assert_eq!(
            decode(&body),
            vec![
                Ok(LlmEvent::ToolCall(ToolCall::new("call_1", "a", json!({})))),
                Ok(LlmEvent::ToolCall(ToolCall::new(
                    "call_2",
                    "b",
                    json!({"k": 2})
                ))),
                Ok(LlmEvent::Finished(StopReason::ToolUse)),
            ]
        );
    }

    #[test]
    fn finish_reasons_map_to_ours() {
        let cases = [
            ("stop", StopReason::EndTurn),
            ("length", StopReason::MaxTokens),
            ("tool_calls", StopReason::ToolUse),
            ("content_filter", StopReason::Other("content_filter".into())),
        ];
        for (reason, expected) in cases {
            let body = chunk(json!({"content": "x"}), json!(reason));
            assert_eq!(
                decode(&body),
                vec![
                    Ok(LlmEvent::TextDelta("x".into())),
                    Ok(LlmEvent::Finished(expected))
                ],
                "{reason}"
            );
        }
    }

    #[test]
    fn usage_only_chunks_and_done_without_finish_reason_are_tolerated() {
        let body = [
            chunk(json!({"content": "Hi"}), Value::Null),
            "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}\n\n".to_owned(),
            "data: [DONE]\n\n".to_owned(),
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
    fn a_tool_call_without_an_id_gets_one_and_without_a_name_is_malformed() {
        let body = [
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"name": "a", "arguments": "{}"}}]}),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
        ]
        .concat();
        match decode(&body).first() {
            Some(Ok(LlmEvent::ToolCall(call))) => assert!(call.id.starts_with("call_"), "{call:?}"),
            other => panic!("expected a tool call, got {other:?}"),
        }
        let body = [
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "c", "function": {"arguments": "{}"}}]}),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
        ]
        .concat();
        assert!(matches!(
            decode(&body).last(),
            Some(Err(LlmError::Malformed { .. }))
        ));
    }

    #[test]
    fn error_objects_in_either_shape_are_reported() {
        let cases = [
            (
                "OpenAI's",
                r#"data: {"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}"#,
                "The server had an error (server_error)",
            ),
            (
                "vLLM's",
                r#"data: {"object":"error","message":"context too long","type":"BadRequestError","param":null,"code":400}"#,
                "context too long (BadRequestError)",
            ),
        ];
        for (message, line, detail) in cases {
            assert_eq!(
                decode(&format!("{line}\n\n")),
                vec![Err(LlmError::Reported {
                    provider: PROVIDER.into(),
                    detail: detail.into()
                })],
                "{message}"
            );
        }
    }

    #[test]
    fn chunks_of_the_wrong_shape_are_malformed() {
        let cases = [
            ("a JSON string", "data: \"hello\"\n\n"),
            ("choices is not a list", "data: {\"choices\": 3}\n\n"),
            ("content is not a string", "data: {\"choices\": [{\"delta\": {\"content\": [1]}}]}\n\n"),
            ("arguments that are not an object", &*[
                chunk(json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "a", "arguments": "[1]"}}]}), Value::Null),
                chunk(json!({}), json!("tool_calls")),
            ].concat()),
        ];
        for (message, body) in cases {
            let out = decode(body);
            assert!(
                matches!(out.last(), Some(Err(LlmError::Malformed { .. }))),
                "{message}: {out:?}"
            );
        }
    }
}
