//! Everything but tools that the official MCP conformance suite's server
//! scenarios look for: prompts, resources, a resource template, completion
//! and logging. Served only under `--conformance-fixtures`
//! ([`crate::DemoState::with_conformance_fixtures`]); in the normal mode the
//! demo server declares tools only, and these methods stay
//! method-not-found (its capabilities are a contract other tests pin). The
//! tool fixtures live in `crate::tools::conformance`.
//!
//! Each fixture is what its scenario's "Server Implementation
//! Requirements" ask for, written as the JSON the suite expects:
//!
//! - prompts (`prompts-list`, `prompts-get-*`): `test_simple_prompt`,
//!   `test_prompt_with_arguments` (`arg1`, `arg2`, both substituted),
//!   `test_prompt_with_embedded_resource` (its `resourceUri` embedded as a
//!   text resource), `test_prompt_with_image` (a 1×1 PNG), and
//!   `test_input_required_result_prompt`
//!   (`input-required-result-non-tool-request`, 2026-07-28): an
//!   `InputRequiredResult` asking for `user_context` until the retry carries
//!   a usable answer, then the prompt. On a 2025-11-25 session rmcp refuses
//!   that result (`-32600`): there the prompt is listed but cannot be got;
//! - resources (`resources-list`, `resources-read-*`, `caching`):
//!   `test://static-text`, `test://static-binary` (the PNG) and
//!   `test://watched-resource`, the one `resources-subscribe` /
//!   `resources-unsubscribe` subscribe to (2025-11-25 only: rmcp answers
//!   both with `-32601` on 2026-07-28). No resource ever changes, so a
//!   subscriber is never sent `notifications/resources/updated`;
//!   [`Subscriptions`] only remembers what a session asked for. A URI that names nothing is `-32002` with the
//!   `uri` in `data`, which rmcp turns into `-32602` on 2026-07-28
//!   (`sep-2164-resource-not-found`);
//! - the template `test://template/{id}/data` (`resources-templates-read`):
//!   JSON that names the `id`;
//! - completion (`completion-complete`): the values of a small fixed list
//!   that start with what was typed, for the prompts' arguments and the
//!   template's `id`;
//! - logging (`logging-set-level`, `tools-call-with-logging`): a 2025-11-25
//!   session's `logging/setLevel` is remembered per session ([`LogLevel`]);
//!   on 2026-07-28 the method is gone (`-32601`, SEP-2575) and a request
//!   asks for logs with its own `_meta` log level instead. What is logged is
//!   `test_tool_with_logging`'s business (`crate::tools::conformance`).
//!
//! Deliberately not here: list-changed notifications for prompts or
//! resources (the lists never change, so neither `listChanged` is
//! declared), and anything a gate test needs.

#![expect(
    deprecated,
    reason = "LoggingLevel and the logging capability are deprecated by SEP-2577; the \
              suite's 2025-11-25 logging scenarios still test them"
)]

use std::collections::BTreeSet;
use std::sync::Mutex;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, InputRequests, InputRequiredResult, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, LoggingLevel, Prompt,
    PromptsCapability, ReadResourceResult, Reference, Resource, ResourceTemplate,
    ResourcesCapability, ResultType, ServerCapabilities,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};

use crate::tools::conformance::{PNG, answers};

const SIMPLE_PROMPT: &str = "test_simple_prompt";
const ARGUMENTS_PROMPT: &str = "test_prompt_with_arguments";
const EMBEDDED_PROMPT: &str = "test_prompt_with_embedded_resource";
const IMAGE_PROMPT: &str = "test_prompt_with_image";
const INPUT_PROMPT: &str = "test_input_required_result_prompt";

const STATIC_TEXT: &str = "test://static-text";
const STATIC_BINARY: &str = "test://static-binary";
const WATCHED: &str = "test://watched-resource";
/// The one template, and the two halves of the URIs it matches.
const TEMPLATE: &str = "test://template/{id}/data";
const TEMPLATE_PREFIX: &str = "test://template/";
const TEMPLATE_SUFFIX: &str = "/data";

/// What completion offers for the prompts' free-text arguments (the
/// suite's example answer to "par" is the middle three).
const WORDS: &[&str] = &["hello", "paris", "park", "party", "test", "world"];
/// What completion offers for the template's `id`.
const IDS: &[&str] = &["123", "456", "789"];

/// The capabilities the fixtures add to the demo's `tools`: prompts,
/// resources (subscribable on 2025-11-25; see [`for_discover`]), completion
/// and logging. No `listChanged`: these lists never change.
pub(crate) fn capabilities(mut capabilities: ServerCapabilities) -> ServerCapabilities {
    capabilities.prompts = Some(PromptsCapability::default());
    let mut resources = ResourcesCapability::default();
    resources.subscribe = Some(true);
    capabilities.resources = Some(resources);
    capabilities.completions = Some(JsonObject::new());
    capabilities.logging = Some(JsonObject::new());
    capabilities
}

/// The capabilities as `server/discover` (2026-07-28) states them:
/// `resources/subscribe` does not exist in that era, and the demo's listen
/// streams carry tool-list changes only, so `subscribe` is left out.
pub(crate) fn for_discover(mut capabilities: ServerCapabilities) -> ServerCapabilities {
    if let Some(resources) = capabilities.resources.as_mut() {
        resources.subscribe = None;
    }
    capabilities
}

/// Whether the request belongs to a 2025-11-25 session (the era with
/// `initialize`) rather than to the 2026-07-28 era.
pub(crate) fn is_legacy(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_none_or(|version| version.has_initialize())
}

/// `prompts/list`.
pub(crate) fn prompts() -> Result<ListPromptsResult, ErrorData> {
    let argument = |name: &str, description: &str| json!({"name": name, "description": description, "required": true});
    let prompts: Vec<Prompt> = parse(json!([
        {"name": SIMPLE_PROMPT, "description": "A prompt without arguments: one user message."},
        {"name": ARGUMENTS_PROMPT,
         "description": "A prompt that quotes its two arguments back.",
         "arguments": [argument("arg1", "First test argument"),
                       argument("arg2", "Second test argument")]},
        {"name": EMBEDDED_PROMPT,
         "description": "A prompt that embeds the resource it is given.",
         "arguments": [argument("resourceUri", "URI of the resource to embed")]},
        {"name": IMAGE_PROMPT, "description": "A prompt with an image (a 1×1 PNG) to analyse."},
        {"name": INPUT_PROMPT,
         "description": "Asks for context through an InputRequiredResult (2026-07-28), \
                         then returns a prompt that uses it."}
    ]))?;
    Ok(ListPromptsResult::with_all_items(prompts))
}

/// `prompts/get`.
pub(crate) fn get_prompt(request: &GetPromptRequestParams) -> Result<GetPromptResponse, ErrorData> {
    let user = |content: Value| json!({"role": "user", "content": content});
    let text = |text: String| user(json!({"type": "text", "text": text}));
    let messages = match request.name.as_str() {
        SIMPLE_PROMPT => vec![text("This is a simple prompt for testing.".to_owned())],
        ARGUMENTS_PROMPT => {
            let arg1 = required_argument(request, "arg1")?;
            let arg2 = required_argument(request, "arg2")?;
            vec![text(format!(
                "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
            ))]
        }
        EMBEDDED_PROMPT => {
            let uri = required_argument(request, "resourceUri")?;
            vec![
                user(json!({"type": "resource", "resource": {
                    "uri": uri, "mimeType": "text/plain",
                    "text": "Embedded resource content for testing."
                }})),
                text("Please process the embedded resource above.".to_owned()),
            ]
        }
        IMAGE_PROMPT => vec![
            user(json!({"type": "image", "data": PNG, "mimeType": "image/png"})),
            text("Please analyze the image above.".to_owned()),
        ],
        INPUT_PROMPT => {
            let asked = json!({"user_context": {"method": "elicitation/create", "params": {
                "message": "What context should the prompt use?",
                "requestedSchema": {"type": "object",
                                    "properties": {"context": {"type": "string"}},
                                    "required": ["context"]}
            }}});
            let answer = request
                .input_responses
                .as_ref()
                .and_then(|responses| responses.get("user_context"))
                .filter(|answer| answers(&asked["user_context"], answer));
            let Some(answer) = answer else {
                let requests: InputRequests = parse(asked)?;
                return Ok(InputRequiredResult::new(Some(requests), None).into());
            };
            let context = answer["content"]["context"]
                .as_str()
                .unwrap_or("(none given)");
            vec![text(format!(
                "Write a prompt that uses this context: {context}"
            ))]
        }
        other => {
            return Err(ErrorData::invalid_params(
                format!("unknown prompt: {other}"),
                Some(json!({"name": other})),
            ));
        }
    };
    let mut result: GetPromptResult = parse(json!({"messages": messages}))?;
    result.result_type = Some(ResultType::COMPLETE);
    Ok(result.into())
}

fn required_argument<'a>(
    request: &'a GetPromptRequestParams,
    name: &str,
) -> Result<&'a str, ErrorData> {
    request
        .arguments
        .as_ref()
        .and_then(|arguments| arguments.get(name))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ErrorData::invalid_params(
                format!("prompt {} needs the argument {name}", request.name),
                None,
            )
        })
}

/// `resources/list`: the direct resources (the template is listed apart).
pub(crate) fn resources() -> Result<ListResourcesResult, ErrorData> {
    let resources: Vec<Resource> = parse(json!([
        {"uri": STATIC_TEXT, "name": "static-text", "mimeType": "text/plain",
         "description": "A text resource that never changes."},
        {"uri": STATIC_BINARY, "name": "static-binary", "mimeType": "image/png",
         "description": "A binary resource (a 1×1 PNG) that never changes."},
        {"uri": WATCHED, "name": "watched-resource", "mimeType": "text/plain",
         "description": "A resource clients may subscribe to (2025-11-25); it never changes."}
    ]))?;
    Ok(ListResourcesResult::with_all_items(resources))
}

/// `resources/templates/list`.
pub(crate) fn resource_templates() -> Result<ListResourceTemplatesResult, ErrorData> {
    let templates: Vec<ResourceTemplate> = parse(json!([
        {"uriTemplate": TEMPLATE, "name": "template-data", "mimeType": "application/json",
         "description": "JSON data for the given id."}
    ]))?;
    Ok(ListResourceTemplatesResult::with_all_items(templates))
}

/// `resources/read`: a listed resource, or a URI the template matches.
pub(crate) fn read_resource(uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let contents = match uri {
        STATIC_TEXT => json!({"uri": uri, "mimeType": "text/plain",
                              "text": "This is the content of the static text resource."}),
        STATIC_BINARY => json!({"uri": uri, "mimeType": "image/png", "blob": PNG}),
        WATCHED => json!({"uri": uri, "mimeType": "text/plain",
                          "text": "This resource never changes."}),
        _ => match template_id(uri) {
            Some(id) => {
                let data =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                json!({"uri": uri, "mimeType": "application/json", "text": data.to_string()})
            }
            None => return Err(not_found(uri)),
        },
    };
    let mut result: ReadResourceResult = parse(json!({"contents": [contents]}))?;
    result.result_type = Some(ResultType::COMPLETE);
    Ok(result)
}

/// The `{id}` of a URI of `test://template/{id}/data`: one non-empty path
/// segment.
fn template_id(uri: &str) -> Option<&str> {
    let id = uri
        .strip_prefix(TEMPLATE_PREFIX)?
        .strip_suffix(TEMPLATE_SUFFIX)?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// SEP-2164: a URI that names no resource is an error naming the URI,
/// never an empty `contents`.
fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(format!("no resource at {uri}"), Some(json!({"uri": uri})))
}

/// `completion/complete`.
pub(crate) fn complete(request: &CompleteRequestParams) -> Result<CompleteResult, ErrorData> {
    let argument = request.argument.name.as_str();
    let choices = match &request.r#ref {
        Reference::Prompt(prompt) => match (prompt.name.as_str(), argument) {
            (ARGUMENTS_PROMPT, "arg1" | "arg2") => WORDS.to_vec(),
            (EMBEDDED_PROMPT, "resourceUri") => vec![STATIC_TEXT, STATIC_BINARY, WATCHED],
            _ => return Err(nothing_to_complete(&request.r#ref, argument)),
        },
        Reference::Resource(template) if template.uri == TEMPLATE && argument == "id" => {
            IDS.to_vec()
        }
        reference => return Err(nothing_to_complete(reference, argument)),
    };
    let typed = request.argument.value.as_str();
    let values = choices
        .into_iter()
        .filter(|choice| choice.starts_with(typed))
        .map(str::to_owned)
        .collect();
    let completion = CompletionInfo::with_all_values(values)
        .map_err(|e| ErrorData::internal_error(format!("fixture completion: {e}"), None))?;
    Ok(CompleteResult::new(completion))
}

fn nothing_to_complete(reference: &Reference, argument: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("nothing to complete for argument {argument}"),
        serde_json::to_value(reference)
            .ok()
            .map(|r| json!({"ref": r})),
    )
}

/// A session's log level, set by `logging/setLevel` (2025-11-25).
#[derive(Debug, Default)]
pub(crate) struct LogLevel(Mutex<Option<LoggingLevel>>);

impl LogLevel {
    pub(crate) fn set(&self, level: LoggingLevel) {
        *self.0.lock().expect("log level lock poisoned") = Some(level);
    }

    /// Whether a message at `info` may be sent for this request: the
    /// request's own `_meta` log level (2026-07-28), else its session's,
    /// is `info` or lower. No level at all means no log messages.
    pub(crate) fn lets_info_through(&self, context: &RequestContext<RoleServer>) -> bool {
        let session = *self.0.lock().expect("log level lock poisoned");
        context
            .meta
            .log_level()
            .or(session)
            .is_some_and(|level| severity(level) <= severity(LoggingLevel::Info))
    }
}

fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// The resources a 2025-11-25 session subscribed to. None of them ever
/// changes, so nothing is ever sent to a subscriber.
#[derive(Debug, Default)]
pub(crate) struct Subscriptions(Mutex<BTreeSet<String>>);

impl Subscriptions {
    /// `resources/subscribe`: only to a resource the server serves
    /// (`-32002` otherwise).
    pub(crate) fn subscribe(&self, uri: &str) -> Result<(), ErrorData> {
        read_resource(uri)?;
        self.lock().insert(uri.to_owned());
        Ok(())
    }

    /// `resources/unsubscribe`: forgetting what was never subscribed is fine.
    pub(crate) fn unsubscribe(&self, uri: &str) {
        self.lock().remove(uri);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.0.lock().expect("subscriptions lock poisoned")
    }
}

fn parse<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value)
        .map_err(|e| ErrorData::internal_error(format!("fixture: {e}"), None))
}
