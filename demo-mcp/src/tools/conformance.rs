//! The tools the official MCP conformance suite's server scenarios look
//! for, listed only when the server starts with `--conformance-fixtures`
//! (`cargo xtask conformance` does; `cargo xtask run` and the tests do
//! not, so the demo's own list — a contract — is unchanged).
//!
//! Each fixture does exactly what its scenario's "Server Implementation
//! Requirements" say, and nothing a gate test needs:
//!
//! - content: `test_simple_text`, `test_image_content` (a 1×1 PNG),
//!   `test_audio_content` (a tiny WAV), `test_embedded_resource`,
//!   `test_multiple_content_types`, `test_error_handling` (`isError`);
//! - `test_tool_with_progress`: progress 0, 50, 100 of 100, 50 ms apart,
//!   when the request carries a progress token; `test_reconnection`: an
//!   answer after 100 ms (SEP-1699 stream resumption);
//! - SEP-2575's diagnostics: `test_missing_capability` (refuses with
//!   `-32021` unless the request declares sampling), `test_logging_tool`
//!   (logs nothing without a log level), `test_streaming_elicitation`
//!   (asks through the result, never with a request on the stream),
//!   `test_trigger_tool_change` (lists or unlists `late_arrival`, so
//!   listeners hear `notifications/tools/list_changed`);
//! - `json_schema_2020_12_tool`: a JSON Schema 2020-12 input schema
//!   (`$schema`, `$defs` with `$anchor`, `allOf`/`anyOf`, `if`/`then`/`else`,
//!   `additionalProperties`), listed as written;
//! - `test_custom_header`: a string parameter mirrored into the
//!   `Mcp-Param-Region` header (`x-mcp-header`, SEP-2243);
//! - 2025-11-25 sessions, server-to-client requests on the call's stream:
//!   `test_elicitation`, `test_elicitation_sep1034_defaults`,
//!   `test_elicitation_sep1330_enums`, `test_sampling`;
//! - 2026-07-28, multi-round-trip (SEP-2322): the
//!   `test_input_required_result_*` tools answer an `InputRequiredResult`
//!   until the retry carries the responses they asked for (a missing or
//!   malformed answer is asked for again); their `requestState` is sealed
//!   with rmcp's `RequestStateCodec` (HMAC, a key made at start-up), so a
//!   tampered state is refused with `-32602`.
//!
//! - `test_tool_with_logging` (`tools-call-with-logging`): three `info`
//!   log messages 50 ms apart, once the session's `logging/setLevel` or the
//!   request's own `_meta` log level lets `info` through
//!   (`crate::conformance::LogLevel`), none otherwise;
//!
//! Deliberately not here: the suite's prompts, resources, resource
//! template, completion and `logging/setLevel`, which are not tools
//! (`crate::conformance`), and the `stringly_annotated` tool, which [`crate::DemoState::tools`] leaves out
//! in this mode: its string-typed hints are schema-invalid on purpose, and
//! every scenario's wire-schema check would fail on them.

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientResult, ElicitRequest,
    ErrorCode, InputRequests, InputRequiredResult, ProgressNotificationParam, ResultType,
    ServerRequest, Tool,
};
#[expect(deprecated, reason = "logging is deprecated by SEP-2577")]
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};

use super::object;
use crate::state::{DemoState, Sealer};

/// A 1×1 red PNG (also the prompt image and binary resource of
/// `crate::conformance`).
pub(crate) const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
/// Eight samples of 8 kHz, 8-bit mono silence.
const WAV: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

const SIMPLE_TEXT: &str = "test_simple_text";
const IMAGE: &str = "test_image_content";
const AUDIO: &str = "test_audio_content";
const EMBEDDED: &str = "test_embedded_resource";
const MIXED: &str = "test_multiple_content_types";
const ERROR: &str = "test_error_handling";
const PROGRESS: &str = "test_tool_with_progress";
const SCHEMA_2020_12: &str = "json_schema_2020_12_tool";
const CUSTOM_HEADER: &str = "test_custom_header";
const ELICITATION: &str = "test_elicitation";
const SEP1034: &str = "test_elicitation_sep1034_defaults";
const SEP1330: &str = "test_elicitation_sep1330_enums";
const SAMPLING: &str = "test_sampling";
const IRR_ELICITATION: &str = "test_input_required_result_elicitation";
const IRR_SAMPLING: &str = "test_input_required_result_sampling";
const IRR_ROOTS: &str = "test_input_required_result_list_roots";
const IRR_STATE: &str = "test_input_required_result_request_state";
const IRR_MULTIPLE: &str = "test_input_required_result_multiple_inputs";
const IRR_MULTI_ROUND: &str = "test_input_required_result_multi_round";
const IRR_TAMPERED: &str = "test_input_required_result_tampered_state";
const IRR_CAPABILITIES: &str = "test_input_required_result_capabilities";
const MISSING_CAPABILITY: &str = "test_missing_capability";
const STREAMING_ELICITATION: &str = "test_streaming_elicitation";
const LOGGING: &str = "test_logging_tool";
const WITH_LOGGING: &str = "test_tool_with_logging";
const TRIGGER_TOOL_CHANGE: &str = "test_trigger_tool_change";
const RECONNECTION: &str = "test_reconnection";

/// SEP-2575's MissingRequiredClientCapabilityError.
const MISSING_CAPABILITY_CODE: i32 = -32021;

/// The fixtures' descriptors.
pub(crate) fn descriptors() -> Vec<Tool> {
    let none = || json!({"type": "object", "properties": {}});
    let plain = [
        (SIMPLE_TEXT, "Returns one text block."),
        (IMAGE, "Returns a 1×1 PNG image block."),
        (AUDIO, "Returns a tiny WAV audio block."),
        (EMBEDDED, "Returns an embedded text resource."),
        (MIXED, "Returns a text, an image and a resource block."),
        (ERROR, "Always returns a tool error (isError: true)."),
        (
            PROGRESS,
            "Reports progress 0, 50 and 100 of 100, then returns.",
        ),
        (
            SEP1034,
            "Asks the client for a form whose every field has a default (SEP-1034).",
        ),
        (
            SEP1330,
            "Asks the client for a form with every enum variant (SEP-1330).",
        ),
        (
            IRR_ELICITATION,
            "Asks for a name through an InputRequiredResult.",
        ),
        (
            IRR_SAMPLING,
            "Asks for a sampled answer through an InputRequiredResult.",
        ),
        (
            IRR_ROOTS,
            "Asks for the client's roots through an InputRequiredResult.",
        ),
        (
            IRR_STATE,
            "Asks for a confirmation, with a sealed requestState.",
        ),
        (
            IRR_MULTIPLE,
            "Asks for three inputs at once, with a sealed requestState.",
        ),
        (
            IRR_MULTI_ROUND,
            "Asks twice, over two rounds, with an evolving requestState.",
        ),
        (
            IRR_TAMPERED,
            "Refuses a requestState that fails its integrity check.",
        ),
        (
            IRR_CAPABILITIES,
            "Asks only for what the client declared it can answer.",
        ),
        (
            MISSING_CAPABILITY,
            "Needs the client's sampling capability; refuses without it.",
        ),
        (
            STREAMING_ELICITATION,
            "Asks for input through an InputRequiredResult, never a request.",
        ),
        (
            LOGGING,
            "Logs only when the request sets a log level; this one sets none.",
        ),
        (
            WITH_LOGGING,
            "Logs three info messages 50 ms apart while it runs, if a log level lets them through.",
        ),
        (
            TRIGGER_TOOL_CHANGE,
            "Changes the tool list (late_arrival comes or goes).",
        ),
        (
            RECONNECTION,
            "Answers after 100 ms, on a stream a client may resume (SEP-1699).",
        ),
    ];
    let mut tools: Vec<Tool> = plain
        .into_iter()
        .map(|(name, description)| Tool::new(name, description, object(none())))
        .collect();
    let string_arg = |arg: &str, what: &str| {
        json!({"type": "object", "properties": {arg: {"type": "string", "description": what}},
               "required": [arg]})
    };
    tools.push(Tool::new(
        ELICITATION,
        "Asks the client for a username and an email (elicitation/create).",
        object(string_arg("message", "The message to show the user")),
    ));
    tools.push(Tool::new(
        SAMPLING,
        "Asks the client's model to answer a prompt (sampling/createMessage).",
        object(string_arg("prompt", "The prompt to send to the model")),
    ));
    tools.push(Tool::new(
        CUSTOM_HEADER,
        "Echoes a region that the client also sends as the Mcp-Param-Region header.",
        object(json!({
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["region"]
        })),
    ));
    tools.push(Tool::new(
        SCHEMA_2020_12,
        "Tool with JSON Schema 2020-12 features",
        object(schema_2020_12()),
    ));
    tools
}

/// The conformance suite's JSON Schema 2020-12 fixture, as it writes it.
fn schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

/// Runs fixture `request.name`, or `None` when it is not one. `logs_info`:
/// whether the request or its session asked for log messages at `info`
/// (`crate::conformance::LogLevel`).
pub(crate) async fn call(
    state: &DemoState,
    sealer: &Sealer,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    logs_info: bool,
) -> Option<Result<CallToolResponse, ErrorData>> {
    let name = request.name.as_ref();
    let done = |value: Value| Some(complete(value).map(CallToolResponse::from));
    match name {
        SIMPLE_TEXT => done(json!({"content": [
            {"type": "text", "text": "This is a simple text response for testing."}
        ]})),
        IMAGE => {
            done(json!({"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]}))
        }
        AUDIO => {
            done(json!({"content": [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]}))
        }
        EMBEDDED => done(json!({"content": [{"type": "resource", "resource": {
            "uri": "test://embedded-resource", "mimeType": "text/plain",
            "text": "This is an embedded resource content."
        }}]})),
        MIXED => done(json!({"content": [
            {"type": "text", "text": "Multiple content types test:"},
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {"type": "resource", "resource": {
                "uri": "test://mixed-content-resource", "mimeType": "application/json",
                "text": "{\"test\":\"data\",\"value\":123}"
            }}
        ]})),
        ERROR => done(json!({"isError": true, "content": [
            {"type": "text", "text": "This tool intentionally returns an error for testing"}
        ]})),
        SCHEMA_2020_12 => done(json!({"content": [{"type": "text", "text": "ok"}]})),
        CUSTOM_HEADER => {
            let region = argument(request, "region").unwrap_or_default();
            done(json!({"content": [{"type": "text", "text": format!("Region: {region}")}]}))
        }
        PROGRESS => Some(progress(context).await.map(CallToolResponse::from)),
        ELICITATION => {
            let message = argument(request, "message").unwrap_or("Please provide your details");
            let schema = json!({"type": "object", "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"}
            }, "required": ["username", "email"]});
            Some(elicit(context, message, schema, "User response").await)
        }
        SEP1034 => {
            let schema = json!({"type": "object", "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"],
                           "default": "active"},
                "verified": {"type": "boolean", "default": true}
            }});
            Some(
                elicit(
                    context,
                    "Please review your details",
                    schema,
                    "Elicitation completed",
                )
                .await,
            )
        }
        SEP1330 => {
            let schema = json!({"type": "object", "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}
                ]},
                "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                               "enumNames": ["Option One", "Option Two", "Option Three"]},
                "untitledMulti": {"type": "array", "items": {
                    "type": "string", "enum": ["option1", "option2", "option3"]
                }},
                "titledMulti": {"type": "array", "items": {"anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"}
                ]}}
            }});
            Some(
                elicit(
                    context,
                    "Pick your options",
                    schema,
                    "Elicitation completed",
                )
                .await,
            )
        }
        SAMPLING => Some(sample(context, argument(request, "prompt").unwrap_or_default()).await),
        IRR_ELICITATION | IRR_SAMPLING | IRR_ROOTS | IRR_STATE | IRR_MULTIPLE | IRR_MULTI_ROUND
        | IRR_TAMPERED | IRR_CAPABILITIES => Some(multi_round(sealer, name, request, context)),
        // 2026-07-28 asks through the result, so this is the basic
        // elicitation round under another name.
        STREAMING_ELICITATION => Some(multi_round(sealer, IRR_ELICITATION, request, context)),
        MISSING_CAPABILITY => {
            let declared = context.meta.client_capabilities().unwrap_or_default();
            Some(if declared.sampling.is_some() {
                text("The client declared sampling.".to_owned())
            } else {
                Err(ErrorData::new(
                    ErrorCode(MISSING_CAPABILITY_CODE),
                    "this tool needs the client's sampling capability",
                    Some(json!({"requiredCapabilities": {"sampling": {}}})),
                ))
            })
        }
        LOGGING => Some(text(
            "Done; nothing was logged (no log level was set).".to_owned(),
        )),
        WITH_LOGGING => Some(log_while_running(context, logs_info).await),
        RECONNECTION => {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Some(text("Reconnection test completed".to_owned()))
        }
        TRIGGER_TOOL_CHANGE => {
            state.toggle_late_arrival();
            Some(text("The tool list changed.".to_owned()))
        }
        _ => None,
    }
}

fn argument<'a>(request: &'a CallToolRequestParams, key: &str) -> Option<&'a str> {
    request.arguments.as_ref()?.get(key)?.as_str()
}

/// A complete result from its JSON, marked `resultType: "complete"` as
/// rmcp's own constructors do (2026-07-28 requires it).
fn complete(value: Value) -> Result<CallToolResult, ErrorData> {
    let mut result: CallToolResult = serde_json::from_value(value)
        .map_err(|e| ErrorData::internal_error(format!("fixture result: {e}"), None))?;
    result.result_type = Some(ResultType::COMPLETE);
    Ok(result)
}

fn text(text: String) -> Result<CallToolResponse, ErrorData> {
    complete(json!({"content": [{"type": "text", "text": text}]})).map(CallToolResponse::from)
}

async fn progress(context: &RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
    let token = context.meta.get_progress_token();
    for (step, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if step > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if let Some(token) = &token {
            let note = ProgressNotificationParam::new(token.clone(), progress).with_total(100.0);
            let _ = context.peer.notify_progress(note).await;
        }
    }
    complete(
        json!({"content": [{"type": "text", "text": "Progress reported: 0, 50, 100 of 100."}]}),
    )
}

/// `test_tool_with_logging`: "Tool execution started", "Tool processing
/// data", "Tool execution completed" at `info`, 50 ms apart, sent only when
/// `logs_info` (SEP-2575: no log message the request did not ask for). On
/// a 2025-11-25 session rmcp sends them on the standalone stream
/// (`GET /mcp`), on 2026-07-28 on the call's.
#[expect(
    deprecated,
    reason = "the suite's tools-call-with-logging scenario tests logging, deprecated by SEP-2577"
)]
async fn log_while_running(
    context: &RequestContext<RoleServer>,
    logs_info: bool,
) -> Result<CallToolResponse, ErrorData> {
    let messages = [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ];
    for (step, message) in messages.into_iter().enumerate() {
        if step > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if logs_info {
            let note = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(message))
                .with_logger(WITH_LOGGING);
            let _ = context.peer.notify_logging_message(note).await;
        }
    }
    text(if logs_info {
        "Logged three info messages.".to_owned()
    } else {
        "Done; nothing was logged (no log level lets info through).".to_owned()
    })
}

/// A legacy `elicitation/create` to the client, on the call's stream.
async fn elicit(
    context: &RequestContext<RoleServer>,
    message: &str,
    schema: Value,
    label: &str,
) -> Result<CallToolResponse, ErrorData> {
    let request: ElicitRequest = serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema}
    }))
    .map_err(|e| ErrorData::internal_error(format!("fixture elicitation: {e}"), None))?;
    match context
        .peer
        .send_request(ServerRequest::ElicitRequest(request))
        .await
    {
        Ok(ClientResult::ElicitResult(result)) => {
            let action = serde_json::to_value(&result.action).unwrap_or(Value::Null);
            let action = action.as_str().unwrap_or("unknown");
            let content = result.content.unwrap_or(Value::Null);
            text(format!("{label}: action={action}, content={content}"))
        }
        Ok(_) => Err(ErrorData::internal_error(
            "the client answered something else",
            None,
        )),
        Err(error) => Err(ErrorData::internal_error(
            format!("elicitation failed: {error}"),
            None,
        )),
    }
}

/// A legacy `sampling/createMessage` to the client.
#[expect(
    deprecated,
    reason = "the suite's tools-call-sampling scenario tests sampling, deprecated by SEP-2577"
)]
async fn sample(
    context: &RequestContext<RoleServer>,
    prompt: &str,
) -> Result<CallToolResponse, ErrorData> {
    let params = serde_json::from_value(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 100
    }))
    .map_err(|e| ErrorData::internal_error(format!("fixture sampling: {e}"), None))?;
    match context.peer.create_message(params).await {
        Ok(result) => {
            let answer = serde_json::to_value(&result.message.content).unwrap_or(Value::Null);
            let answer = first_text(&answer).unwrap_or_default();
            text(format!("LLM response: {answer}"))
        }
        Err(error) => Err(ErrorData::internal_error(
            format!("sampling failed: {error}"),
            None,
        )),
    }
}

/// The text of a content block, or of the first text block of a list.
fn first_text(content: &Value) -> Option<String> {
    match content {
        Value::Array(blocks) => blocks.iter().find_map(first_text),
        block => block.get("text")?.as_str().map(str::to_owned),
    }
}

/// What one multi-round fixture asks for, by input key.
fn asks(name: &str, round: u64, context: &RequestContext<RoleServer>) -> Value {
    let elicit = |message: &str, field: &str, kind: &str| {
        json!({"method": "elicitation/create", "params": {
            "message": message,
            "requestedSchema": {"type": "object", "properties": {field: {"type": kind}},
                                "required": [field]}
        }})
    };
    let sample = |prompt: &str, max: u32| {
        json!({"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
            "maxTokens": max
        }})
    };
    let roots = json!({"method": "roots/list", "params": {}});
    match (name, round) {
        (IRR_ELICITATION, _) => {
            json!({"user_name": elicit("What is your name?", "name", "string")})
        }
        (IRR_SAMPLING, _) => {
            json!({"capital_question": sample("What is the capital of France?", 100)})
        }
        (IRR_ROOTS, _) => json!({"client_roots": roots}),
        (IRR_STATE | IRR_TAMPERED, _) => {
            json!({"confirm": elicit("Please confirm", "ok", "boolean")})
        }
        (IRR_MULTIPLE, _) => json!({
            "user_name": elicit("What is your name?", "name", "string"),
            "greeting": sample("Generate a greeting", 50),
            "client_roots": roots
        }),
        (IRR_MULTI_ROUND, 1) => {
            json!({"step1": elicit("Step 1: What is your name?", "name", "string")})
        }
        (IRR_MULTI_ROUND, _) => {
            json!({"step2": elicit("Step 2: What is your favorite color?", "color", "string")})
        }
        _ => {
            // IRR_CAPABILITIES: only what the client declared.
            let declared = context.meta.client_capabilities().unwrap_or_default();
            let mut asks = serde_json::Map::new();
            if declared.sampling.is_some() {
                asks.insert("summary".into(), sample("Summarise the demo notebook", 50));
            }
            if declared.elicitation.is_some() {
                asks.insert(
                    "user_name".into(),
                    elicit("What is your name?", "name", "string"),
                );
            }
            Value::Object(asks)
        }
    }
}

/// Whether `answer` is a usable response to the request `asked` (also
/// `test_input_required_result_prompt`'s check, in `crate::conformance`).
pub(crate) fn answers(asked: &Value, answer: &Value) -> bool {
    match asked.get("method").and_then(Value::as_str) {
        Some("elicitation/create") => {
            answer
                .get("action")
                .and_then(Value::as_str)
                .is_some_and(|a| {
                    matches!(a, "accept" | "decline" | "cancel")
                        && (a != "accept" || answer.get("content").is_some_and(Value::is_object))
                })
        }
        Some("sampling/createMessage") => {
            answer.get("content").is_some() && answer.get("role").is_some()
        }
        Some("roots/list") => answer.get("roots").is_some_and(Value::is_array),
        _ => false,
    }
}

/// The SEP-2322 fixtures: ask (again) until every request of this round is
/// answered, then finish (or, for the multi-round tool, ask the next thing).
fn multi_round(
    sealer: &Sealer,
    name: &str,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let stateful = matches!(
        name,
        IRR_STATE | IRR_MULTIPLE | IRR_MULTI_ROUND | IRR_TAMPERED
    );
    let round = match (&request.request_state, stateful) {
        (Some(state), true) => sealer.open(name, state).ok_or_else(|| {
            ErrorData::invalid_params("requestState failed its integrity check", None)
        })?,
        _ => 1,
    };
    let asked = asks(name, round, context);
    let asked_map = asked.as_object().cloned().unwrap_or_default();
    let responses = request.input_responses.clone().unwrap_or_default();
    let all_answered = !asked_map.is_empty()
        && asked_map.iter().all(|(key, ask)| {
            responses
                .get(key)
                .is_some_and(|answer| answers(ask, answer))
        });
    if asked_map.is_empty() {
        return text("Nothing to ask: the client declared no way to answer.".to_owned());
    }
    if !all_answered {
        return input_required(sealer, name, round, asked, stateful);
    }
    if name == IRR_MULTI_ROUND && round == 1 {
        return input_required(sealer, name, 2, asks(name, 2, context), true);
    }
    let summary = |key: &str| responses.get(key).cloned().unwrap_or(Value::Null);
    match name {
        IRR_ELICITATION => {
            let who = summary("user_name")["content"]["name"]
                .as_str()
                .unwrap_or("stranger")
                .to_owned();
            text(format!("Hello, {who}!"))
        }
        IRR_SAMPLING => {
            let answer = first_text(&summary("capital_question")["content"]).unwrap_or_default();
            text(format!("The model said: {answer}"))
        }
        IRR_ROOTS => {
            let roots = summary("client_roots");
            let uris: Vec<&str> = roots["roots"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|root| root.get("uri").and_then(Value::as_str))
                .collect();
            text(format!("Roots: {}", uris.join(", ")))
        }
        IRR_STATE | IRR_TAMPERED => text("Confirmed: state-ok".to_owned()),
        _ => text(format!(
            "All inputs received: {}",
            serde_json::to_value(&responses).unwrap_or(Value::Null)
        )),
    }
}

fn input_required(
    sealer: &Sealer,
    name: &str,
    round: u64,
    asked: Value,
    stateful: bool,
) -> Result<CallToolResponse, ErrorData> {
    let requests: InputRequests = serde_json::from_value(asked)
        .map_err(|e| ErrorData::internal_error(format!("fixture input requests: {e}"), None))?;
    let state = if stateful {
        sealer.seal(name, round)
    } else {
        None
    };
    Ok(CallToolResponse::from(InputRequiredResult::new(
        Some(requests),
        state,
    )))
}
