//! HTTP plumbing for the two network providers ([`super::anthropic`],
//! [`super::openai`]).
//!
//! What it owns: building a provider URL and a secret header; sending a
//! request and turning a failed connection or a non-2xx status into an
//! [`LlmError`] that carries no body, no key and no URL; reading a bounded
//! JSON body (model lists); reading a provider's error object into a short,
//! clean detail; and the two error constructors every provider module uses.
//!
//! What it deliberately does not do: read event streams ([`super::sse`]) or
//! know either provider's JSON beyond its error object.

use super::{HttpSettings, LlmError};
use reqwest::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use reqwest::{RequestBuilder, Response, StatusCode, Url};
use serde_json::Value;
use std::time::Duration;

/// Largest non-streamed body we read (model lists).
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// `{base_url}/{path}`, with a trailing slash of `base_url` ignored.
pub(crate) fn endpoint(provider: &str, base_url: &str, path: &str) -> Result<Url, LlmError> {
    Url::parse(&format!("{}/{path}", base_url.trim_end_matches('/')))
        .map_err(|_| network(provider, "the configured base URL is not a valid URL"))
}

/// A header value holding a secret, marked sensitive so that it is never
/// printed by `Debug`.
pub(crate) fn secret_header(provider: &str, value: &str) -> Result<HeaderValue, LlmError> {
    let mut header = HeaderValue::from_str(value).map_err(|_| {
        network(
            provider,
            "the API key contains characters that cannot be sent in a header",
        )
    })?;
    header.set_sensitive(true);
    Ok(header)
}

/// Sends a streaming request and checks its status and content type.
///
/// Waits at most `connect_timeout + idle_timeout` for the response head (the
/// client's own connect timeout, if any, still applies).
pub(crate) async fn send(
    provider: &'static str,
    settings: &HttpSettings,
    request: RequestBuilder,
) -> Result<Response, LlmError> {
    let wait = settings.connect_timeout + settings.idle_timeout;
    let response = execute(provider, wait, settings.idle_timeout, request).await?;
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("application/json"));
    if is_json {
        // A proxy's error page or a server that ignored `stream: true`.
        return Err(malformed(
            provider,
            "a JSON document instead of an event stream",
        ));
    }
    Ok(response)
}

/// Sends a request, waiting at most `wait` for the response head, and checks
/// its status (see [`check_status`]).
pub(crate) async fn execute(
    provider: &'static str,
    wait: Duration,
    read_timeout: Duration,
    request: RequestBuilder,
) -> Result<Response, LlmError> {
    let response = match tokio::time::timeout(wait, request.send()).await {
        Err(_elapsed) => {
            return Err(network(
                provider,
                format!("no response for {}", seconds(wait)),
            ));
        }
        Ok(result) => result.map_err(|error| request_error(provider, error))?,
    };
    check_status(provider, response, read_timeout).await
}

/// Turns a non-2xx response into an [`LlmError`]; passes a 2xx one through.
///
/// The body is never put in the error: it may echo the key or the request.
/// For statuses other than 401/403, the provider's error *message* is
/// logged, because "model not found" is what an operator needs to see.
pub(crate) async fn check_status(
    provider: &'static str,
    mut response: Response,
    read_timeout: Duration,
) -> Result<Response, LlmError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let provider_name = provider.to_owned();
    match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err(LlmError::Unauthorized {
            provider: provider_name,
            status: status.as_u16(),
        }),
        StatusCode::TOO_MANY_REQUESTS => {
            let retry_after = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.trim().parse::<u64>().ok());
            Err(LlmError::RateLimited {
                provider: provider_name,
                retry_after,
            })
        }
        _ => {
            // Only for the log line: never wait long for it.
            let wait = read_timeout.min(Duration::from_secs(5));
            let body = tokio::time::timeout(wait, read_capped(&mut response, 64 * 1024))
                .await
                .ok()
                .and_then(Result::ok);
            let reported = body
                .and_then(|body| serde_json::from_slice::<Value>(&body).ok())
                .and_then(|body| error_detail(&body));
            tracing::warn!(
                provider,
                http.status = status.as_u16(),
                error.message = reported.as_deref().unwrap_or("(none)"),
                "model provider answered with an error status"
            );
            Err(LlmError::Upstream {
                provider: provider_name,
                status: status.as_u16(),
            })
        }
    }
}

/// Reads a whole (non-streamed) body, refusing more than `cap` bytes.
pub(crate) async fn read_capped(
    response: &mut Response,
    cap: usize,
) -> Result<Vec<u8>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        body.extend_from_slice(&chunk);
        if body.len() > cap {
            body.truncate(cap);
            break;
        }
    }
    Ok(body)
}

/// Reads a whole JSON body of at most [`MAX_BODY_BYTES`].
pub(crate) async fn read_json(
    provider: &str,
    response: &mut Response,
    read_timeout: Duration,
) -> Result<Value, LlmError> {
    let body =
        match tokio::time::timeout(read_timeout, read_capped(response, MAX_BODY_BYTES + 1)).await {
            Err(_elapsed) => {
                return Err(network(
                    provider,
                    format!("no data for {}", seconds(read_timeout)),
                ));
            }
            Ok(Err(error)) => return Err(request_error(provider, error)),
            Ok(Ok(body)) => body,
        };
    if body.len() > MAX_BODY_BYTES {
        return Err(malformed(provider, "a response larger than 4 MiB"));
    }
    serde_json::from_slice(&body).map_err(|_| malformed(provider, "a response that is not JSON"))
}

/// The `message (type)` of a provider error object, for
/// [`LlmError::Reported`] and logs.
///
/// Accepts `{"error": {"type", "message"}}` (both providers' shape) and a
/// bare `{"type", "message"}`; some OpenAI-compatible servers put a string in
/// `error`. The text is bounded and stripped of control characters: it comes
/// from the network and ends up in front of a user.
pub(crate) fn error_detail(body: &Value) -> Option<String> {
    let error = body.get("error").unwrap_or(body);
    let (kind, message) = match error {
        Value::String(message) => (None, Some(message.as_str())),
        Value::Object(fields) => (
            fields
                .get("type")
                .and_then(Value::as_str)
                .or_else(|| fields.get("code").and_then(Value::as_str)),
            fields.get("message").and_then(Value::as_str),
        ),
        _ => (None, None),
    };
    let detail = match (message.map(str::trim), kind.map(str::trim)) {
        (Some(message), Some(kind)) if !message.is_empty() && !kind.is_empty() => {
            format!("{message} ({kind})")
        }
        (Some(message), _) if !message.is_empty() => message.to_owned(),
        (_, Some(kind)) if !kind.is_empty() => kind.to_owned(),
        _ => return None,
    };
    const MAX_CHARS: usize = 300;
    let mut clean: String = detail
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_CHARS)
        .collect();
    if detail.chars().count() > MAX_CHARS {
        clean.push('…');
    }
    Some(clean)
}

/// An [`LlmError::Network`].
pub(crate) fn network(provider: &str, detail: impl Into<String>) -> LlmError {
    LlmError::Network {
        provider: provider.to_owned(),
        detail: detail.into(),
    }
}

/// An [`LlmError::Malformed`].
pub(crate) fn malformed(provider: &str, detail: impl Into<String>) -> LlmError {
    LlmError::Malformed {
        provider: provider.to_owned(),
        detail: detail.into(),
    }
}

/// A reqwest failure in words, without the URL reqwest would print.
fn request_error(provider: &str, error: reqwest::Error) -> LlmError {
    let detail = if error.is_connect() {
        "could not connect"
    } else if error.is_timeout() {
        "the request timed out"
    } else if error.is_builder() {
        "the request could not be built"
    } else if error.is_redirect() {
        "too many redirects"
    } else {
        "the request failed"
    };
    tracing::debug!(provider, error = %error.without_url(), "model request failed");
    network(provider, detail)
}

/// `12 s`, or `0.2 s` for durations that are not whole seconds.
pub(super) fn seconds(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_details_keep_the_message_and_type_and_nothing_else() {
        let cases = [
            (
                "Anthropic's in-stream error",
                serde_json::json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
                Some("Overloaded (overloaded_error)"),
            ),
            (
                "OpenAI's error object",
                serde_json::json!({"error": {"message": "The server had an error", "type": "server_error", "param": null, "code": null}}),
                Some("The server had an error (server_error)"),
            ),
            (
                "a null type falls back to the code",
                serde_json::json!({"error": {"message": "Bad key", "type": null, "code": "invalid_api_key"}}),
                Some("Bad key (invalid_api_key)"),
            ),
            (
                "vLLM's top-level error object",
                serde_json::json!({"object": "error", "message": "context too long", "type": "BadRequestError", "code": 400}),
                Some("context too long (BadRequestError)"),
            ),
            (
                "a bare string error",
                serde_json::json!({"error": "model not loaded"}),
                Some("model not loaded"),
            ),
            (
                "control characters are blanked",
                serde_json::json!({"error": {"message": "a\nb\u{1b}[31m"}}),
                Some("a b [31m"),
            ),
            ("no message at all", serde_json::json!({"error": {}}), None),
        ];
        for (message, body, expected) in cases {
            assert_eq!(error_detail(&body).as_deref(), expected, "{message}");
        }
        let long = serde_json::json!({"error": {"message": "x".repeat(1000)}});
        let detail = error_detail(&long).expect("a long message still gives a detail");
        assert_eq!(
            detail.chars().count(),
            301,
            "capped at 300 characters and an ellipsis"
        );
    }

    #[test]
    fn durations_print_as_seconds() {
        assert_eq!(seconds(Duration::from_secs(120)), "120 s");
        assert_eq!(seconds(Duration::from_millis(200)), "0.2 s");
    }
}
