//! Talking to models: one request/stream shape for every provider
//! (DESIGN §2).
//!
//! A provider turns a [`ChatRequest`] into a channel of [`LlmEvent`]s: text
//! deltas, complete tool calls (arguments assembled and parsed), and one
//! final [`LlmEvent::Finished`]. Failures arrive as an [`LlmError`] whose
//! `Display` is safe to show a user: it never carries an API key or a raw
//! upstream body. Dropping the receiver cancels the request.
//!
//! Providers: [`anthropic`] (Messages API), [`openai`] (Chat Completions,
//! any compatible base URL), [`offline`] (the scripted `offline/demo`).
//! The two network ones share `http` (requests, statuses, error
//! objects) and [`sse`] (reading an event stream, on `sse-stream`).
//!
//! This module does not store anything and knows no HTTP status of ours.

pub mod anthropic;
pub(crate) mod http;
pub mod offline;
pub mod openai;
pub mod sse;

use serde_json::Value;
use std::{borrow::Cow, time::Duration};
use tokio::sync::mpsc;

/// A conversation to continue.
#[derive(Debug, Clone)]
pub struct ChatRequest<'a> {
    /// The model name without its provider prefix (`claude-…`, `gpt-…`).
    pub model: String,
    /// System prompt.
    pub system: String,
    /// The conversation so far, oldest first. Never contains an empty
    /// assistant message.
    ///
    /// Borrowed from the turn's history where it can be: each step of a
    /// turn sends the whole history, which may hold pasted documents, and
    /// a copy per step cost its size in time and memory for nothing.
    pub messages: Cow<'a, [Message]>,
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// Upper bound on generated tokens.
    pub max_tokens: u32,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// What the user wrote.
    User { text: String },
    /// What the model answered: text, tool calls, or both.
    Assistant {
        /// Text (may be empty when there are tool calls).
        text: String,
        /// Tool calls it made, in order.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, answering an earlier assistant message.
    ToolResult {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        name: String,
        /// Result text, already delimited as untrusted data.
        content: String,
        /// Whether the call failed.
        is_error: bool,
    },
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Name, in the providers' character set (`^[a-zA-Z0-9_-]{1,64}$`).
    pub name: String,
    /// What it does (shown to the model).
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: Schema,
    /// What people call it (`<connector>: <tool>`, as the card does); never
    /// sent to a provider. The offline demo says it instead of `name`.
    pub label: String,
}

/// A JSON Schema kept as its JSON text. Every turn holds its user's tool
/// specs for as long as it lives (a waiting turn up to
/// `COUNTERSIGN_APPROVAL_WAIT_SECS`); as a [`Value`] tree each schema's
/// little maps cost ~10× their text (a B-tree node per object), so a
/// schema is parsed once, kept as text, and serialized into a request as
/// it is.
#[derive(Debug, Clone)]
pub struct Schema(Box<serde_json::value::RawValue>);

impl Schema {
    /// The schema's JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }
}

impl From<&Value> for Schema {
    fn from(value: &Value) -> Self {
        Self(
            serde_json::value::to_raw_value(value)
                .expect("a `Value` always serializes: its keys are strings"),
        )
    }
}

impl From<Value> for Schema {
    fn from(value: Value) -> Self {
        Self::from(&value)
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl serde::Serialize for Schema {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// A complete tool call from the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Provider-assigned id, echoed in the result.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments; always a JSON object (an unparsable one is reported as
    /// [`LlmError::Malformed`]).
    pub arguments: Value,
}

impl ToolCall {
    /// A call with these parts.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// It hit `max_tokens`.
    MaxTokens,
    /// Anything else the provider said.
    Other(String),
}

/// One item of a model's stream.
#[derive(Debug, Clone, PartialEq)]
pub enum LlmEvent {
    /// More text.
    TextDelta(String),
    /// A tool call, complete.
    ToolCall(ToolCall),
    /// The end of this response.
    Finished(StopReason),
}

/// A provider failure, in words a user can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// No key configured for the provider.
    #[error(
        "No API key is set for {provider}. Add one in Settings → Models, or ask your administrator."
    )]
    NotConfigured {
        /// `anthropic` or `openai`.
        provider: String,
    },
    /// The model string names no known provider.
    #[error("Unknown model \"{0}\". Pick a model from the list.")]
    UnknownModel(String),
    /// 401 / 403 from the provider.
    #[error("{provider} refused the API key (HTTP {status}). Check the key in Settings → Models.")]
    Unauthorized {
        /// Provider name.
        provider: String,
        /// HTTP status.
        status: u16,
    },
    /// 429 from the provider.
    #[error("{provider} is rate-limiting requests{}. Wait a moment and try again.", retry_after.map(|s| format!(" (retry in {s} s)")).unwrap_or_default())]
    RateLimited {
        /// Provider name.
        provider: String,
        /// Seconds, when the provider said.
        retry_after: Option<u64>,
    },
    /// Another HTTP error status (5xx, 400, 404 …).
    #[error(
        "{provider} answered with an error (HTTP {status}). Try again later; if it persists, check the model name."
    )]
    Upstream {
        /// Provider name.
        provider: String,
        /// HTTP status.
        status: u16,
    },
    /// The connection failed or the stream broke off mid-way.
    #[error("The connection to {provider} broke off: {detail}. Try again.")]
    Network {
        /// Provider name.
        provider: String,
        /// What happened, without URLs or keys.
        detail: String,
    },
    /// The provider sent something that is not its documented format.
    #[error("{provider} sent a response Countersign could not read ({detail}). Try again.")]
    Malformed {
        /// Provider name.
        provider: String,
        /// What was wrong.
        detail: String,
    },
    /// The provider reported an error inside the stream.
    #[error("{provider} reported an error: {detail}")]
    Reported {
        /// Provider name.
        provider: String,
        /// The error type/message from the provider's error object
        /// (never a raw body).
        detail: String,
    },
}

/// The receiving end of a model's stream.
pub type LlmStream = mpsc::Receiver<Result<LlmEvent, LlmError>>;

/// Where and how to reach one provider.
#[derive(Debug, Clone)]
pub enum Provider {
    /// Anthropic Messages API.
    Anthropic {
        /// e.g. `https://api.anthropic.com`.
        base_url: String,
        /// `x-api-key`.
        api_key: crate::config::Secret,
    },
    /// OpenAI-compatible Chat Completions.
    OpenAi {
        /// e.g. `https://api.openai.com/v1` (ends before `/chat/completions`).
        base_url: String,
        /// Bearer token; `None` for local servers that need none.
        api_key: Option<crate::config::Secret>,
    },
    /// The scripted offline demo.
    Offline {
        /// Pause between words, so streaming is visible.
        word_delay: Duration,
    },
}

/// Shared HTTP client settings for providers.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Longest silence allowed between two chunks of a stream.
    pub idle_timeout: Duration,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

/// Starts a streaming request; events arrive on the returned channel.
pub async fn stream(
    http: &reqwest::Client,
    settings: &HttpSettings,
    provider: &Provider,
    request: ChatRequest<'_>,
) -> Result<LlmStream, LlmError> {
    match provider {
        Provider::Anthropic { base_url, api_key } => {
            anthropic::stream(http, settings, base_url, api_key, request).await
        }
        Provider::OpenAi { base_url, api_key } => {
            openai::stream(http, settings, base_url, api_key.as_ref(), request).await
        }
        Provider::Offline { word_delay } => Ok(offline::stream(*word_delay, request)),
    }
}

/// Parses a tool call's accumulated arguments: empty means `{}`, anything
/// else must be a JSON object.
pub(crate) fn parse_arguments(provider: &str, json: &str) -> Result<Value, LlmError> {
    if json.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    match serde_json::from_str::<Value>(json) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(http::malformed(
            provider,
            "tool call arguments that are not a JSON object",
        )),
        Err(_) => Err(http::malformed(
            provider,
            "tool call arguments that are not valid JSON",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_arguments_must_be_an_object_and_empty_means_no_arguments() {
        let cases = [
            ("empty string", "", Ok(serde_json::json!({}))),
            ("whitespace", "  ", Ok(serde_json::json!({}))),
            ("an object", r#"{"a": 1}"#, Ok(serde_json::json!({"a": 1}))),
            (
                "an array",
                "[1]",
                Err("tool call arguments that are not a JSON object"),
            ),
            (
                "truncated JSON",
                r#"{"a": "#,
                Err("tool call arguments that are not valid JSON"),
            ),
        ];
        for (message, input, expected) in cases {
            let got = parse_arguments("P", input).map_err(|error| match error {
                LlmError::Malformed { detail, .. } => detail,
                other => other.to_string(),
            });
            assert_eq!(got, expected.map_err(str::to_owned), "{message}");
        }
    }
}
