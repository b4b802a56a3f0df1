//! [`McpError`]: what went wrong talking to a connector, in words a user can
//! act on, and the mapping from rmcp's errors to it.
//!
//! Messages never carry the connector's secrets: nothing here prints a
//! reqwest error (its text includes the URL, whose query may hold a key), and
//! any text that came from the server passes through a [`Redactor`] that
//! knows the connector's bearer token, header values and URL secrets.

use std::error::Error as StdError;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

use super::McpTarget;
use crate::ssrf::SsrfError;

/// Server-supplied text is cut to this many characters in error messages.
const MAX_DETAIL_CHARS: usize = 300;

/// Why a connector could not be used. Every message is fit to show the
/// user; none contains a credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// No HTTP answer at all: connection refused, DNS, TLS, a destination
    /// the SSRF guard refused.
    #[error("could not reach the MCP server: {reason}")]
    Unreachable {
        /// What failed, e.g. "connection refused".
        reason: String,
    },
    /// HTTP 401 or 403.
    #[error("the server refused the credentials (HTTP {status})")]
    Unauthorized {
        /// 401 or 403.
        status: u16,
        /// Its `WWW-Authenticate` challenge, when it sent one (what an
        /// OAuth client discovers from, and a 403's `insufficient_scope`
        /// with the scopes it wants). Never shown: the server wrote it.
        challenge: Option<String>,
    },
    /// The request went out, and the connection ended before the answer
    /// was complete (the server died or dropped it, its event stream
    /// stopped mid-way): the server may have acted on it. Never "could
    /// not reach", which would tell the user a call did not run.
    #[error(
        "the connection to the MCP server broke off before it answered, so the server may \
         have acted on the request"
    )]
    Interrupted,
    /// HTTP 5xx or 429: the server answered, with its own failure.
    #[error("{}", server_error_message(*.status))]
    ServerError {
        /// The status, e.g. 500.
        status: u16,
    },
    /// No answer in time.
    #[error("{}", timeout_message(*.after))]
    Timeout {
        /// The limit that ran out, when known.
        after: Option<Duration>,
    },
    /// The URL answered HTTP, but not MCP: a web page, a 404, a redirect.
    #[error("the URL answered, but not as an MCP server ({detail})")]
    NotMcp {
        /// What it answered instead.
        detail: String,
    },
    /// The server speaks MCP but broke the protocol or answered with an
    /// error where a result was due.
    #[error("the MCP server did not follow the protocol: {0}")]
    Protocol(String),
    /// `tools/call` was answered with a JSON-RPC error (unknown tool,
    /// invalid arguments, a server crash) or with something Countersign
    /// cannot finish (an input request, a background task). A tool that ran
    /// and reported failure is not this: that is `ToolResult::is_error`.
    #[error("the tool call failed: {0}")]
    ToolFailed(String),
    /// The connector's settings cannot make a valid request (a header name
    /// that is not one, a header Countersign sets itself).
    #[error("the connector's settings are invalid: {0}")]
    InvalidTarget(String),
    /// `tools/list` named more tools than one connector may have (DESIGN
    /// §2). Nothing of the listing is kept.
    #[error(
        "The server listed {listed}{} tools; Countersign accepts at most {max}.",
        if *more { " or more" } else { "" }
    )]
    TooManyTools {
        /// How many tools it listed (on the pages read so far).
        listed: usize,
        /// More pages were left unread.
        more: bool,
        /// The bound.
        max: usize,
    },
    /// One tool's descriptor (its canonical JSON) is larger than the bound
    /// (DESIGN §2). Nothing of the listing is kept.
    #[error(
        "The server's description of the tool \"{tool}\" is {} KiB; Countersign accepts at most \
         {} KiB per tool.",
        bytes.div_ceil(1024),
        max / 1024
    )]
    DescriptorTooLarge {
        /// The tool's name (redacted, cut).
        tool: String,
        /// The size of its canonical JSON.
        bytes: usize,
        /// The bound.
        max: usize,
    },
    /// A response body was larger than the bound (DESIGN §2); it was not
    /// read to its end.
    #[error(
        "The server sent a response larger than {} MiB; Countersign accepts at most {} MiB per \
         response.",
        max / (1024 * 1024),
        max / (1024 * 1024)
    )]
    ResponseTooLarge {
        /// The bound, in bytes.
        max: usize,
    },
}

fn server_error_message(status: u16) -> String {
    match status {
        429 => {
            "the MCP server refused the request for now: too many requests (HTTP 429)".to_owned()
        }
        status => format!("the MCP server failed with HTTP {status} (an error on its side)"),
    }
}

fn timeout_message(after: Option<Duration>) -> String {
    match after {
        Some(after) => format!(
            "the MCP server did not answer within {} s",
            after.as_secs_f64()
        ),
        None => "the MCP server did not answer in time".to_owned(),
    }
}

impl McpError {
    /// Every [`McpError::kind`] word, for the metrics that count them.
    pub const KINDS: [&'static str; 12] = [
        "unreachable",
        "unauthorized",
        "interrupted",
        "server_error",
        "timeout",
        "not_mcp",
        "protocol",
        "tool_failed",
        "invalid_target",
        "too_many_tools",
        "descriptor_too_large",
        "response_too_large",
    ];

    /// A fixed word for the variant (a metric's label): never the
    /// message, which carries the server's own words.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Unreachable { .. } => "unreachable",
            Self::Unauthorized { .. } => "unauthorized",
            Self::Interrupted => "interrupted",
            Self::ServerError { .. } => "server_error",
            Self::Timeout { .. } => "timeout",
            Self::NotMcp { .. } => "not_mcp",
            Self::Protocol(_) => "protocol",
            Self::ToolFailed(_) => "tool_failed",
            Self::InvalidTarget(_) => "invalid_target",
            Self::TooManyTools { .. } => "too_many_tools",
            Self::DescriptorTooLarge { .. } => "descriptor_too_large",
            Self::ResponseTooLarge { .. } => "response_too_large",
        }
    }

    /// The `WWW-Authenticate` challenge of a 401 or 403, if the server
    /// sent one.
    pub fn auth_challenge(&self) -> Option<&str> {
        match self {
            Self::Unauthorized {
                challenge: Some(challenge),
                ..
            } => Some(challenge),
            _ => None,
        }
    }

    /// Whether the legacy handshake could fare better after the modern one
    /// failed this way: not when the server is unreachable, refuses the
    /// credentials or is out of time. (An older server may fail or hang up
    /// on a `server/discover` it does not know.)
    pub(super) fn may_be_legacy(&self) -> bool {
        matches!(
            self,
            Self::NotMcp { .. } | Self::Protocol(_) | Self::ServerError { .. } | Self::Interrupted
        )
    }
}

/// What a request was for, which decides how a JSON-RPC error reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    ListTools,
    CallTool,
}

/// Replaces the connector's secrets in server-supplied text.
#[derive(Clone, Default)]
pub(super) struct Redactor {
    secrets: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} secrets)", self.secrets.len())
    }
}

impl Redactor {
    /// Values shorter than this are not worth hiding (and would mangle
    /// every message they occur in).
    const MIN_SECRET_LEN: usize = 4;

    pub(super) fn for_target(target: &McpTarget) -> Self {
        let mut secrets: Vec<String> = Vec::new();
        if let Some(bearer) = &target.bearer {
            secrets.push(bearer.expose().to_owned());
        }
        secrets.extend(target.headers.iter().map(|(_, v)| v.expose().to_owned()));
        if let Some(password) = target.url.password() {
            secrets.push(password.to_owned());
        }
        secrets.extend(target.url.query_pairs().map(|(_, v)| v.into_owned()));
        secrets.retain(|s| s.len() >= Self::MIN_SECRET_LEN);
        // Longest first, so a secret containing another is hidden whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self { secrets }
    }

    /// `text` without secrets, cut to a readable length.
    pub(super) fn scrub(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in &self.secrets {
            text = text.replace(secret.as_str(), "[redacted]");
        }
        if text.chars().count() > MAX_DETAIL_CHARS {
            text = text.chars().take(MAX_DETAIL_CHARS).collect::<String>() + "…";
        }
        text
    }
}

/// Maps a failed handshake.
pub(super) fn from_initialize(error: &ClientInitializeError, redactor: &Redactor) -> McpError {
    match error {
        ClientInitializeError::TransportError { error, .. } => from_transport(error, redactor),
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            from_initialize(fallback, redactor)
        }
        ClientInitializeError::ExpectedInitResponse(_)
        | ClientInitializeError::ExpectedInitResult(_) => McpError::NotMcp {
            detail: "it answered the MCP handshake with something else".to_owned(),
        },
        ClientInitializeError::JsonRpcError(data) => McpError::Protocol(format!(
            "it refused the handshake: {}",
            server_error(data, redactor)
        )),
        ClientInitializeError::NoCompatibleProtocolVersion {
            server_supported, ..
        } => McpError::Protocol(format!(
            "no protocol version in common (the server supports {})",
            redactor.scrub(
                &server_supported
                    .iter()
                    .map(|version| version.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        )),
        ClientInitializeError::ConnectionClosed(_) => {
            McpError::Protocol("the server closed the connection during the handshake".to_owned())
        }
        ClientInitializeError::ConflictInitResponseId(..)
        | ClientInitializeError::UncorrelatedErrorResponse { .. } => {
            McpError::Protocol("its handshake answer carried the wrong request id".to_owned())
        }
        ClientInitializeError::Cancelled => {
            McpError::Protocol("the handshake was cancelled".to_owned())
        }
        other => McpError::Protocol(redactor.scrub(&other.to_string())),
    }
}

/// Maps a failed request on an established session.
pub(super) fn from_service(error: &ServiceError, phase: Phase, redactor: &Redactor) -> McpError {
    match error {
        ServiceError::McpError(data) => match phase {
            Phase::CallTool => McpError::ToolFailed(server_error(data, redactor)),
            Phase::ListTools => McpError::Protocol(format!(
                "it answered tools/list with an error: {}",
                server_error(data, redactor)
            )),
        },
        ServiceError::TransportSend(error) => from_transport(error, redactor),
        ServiceError::Timeout { timeout } => McpError::Timeout {
            after: Some(*timeout),
        },
        // rmcp's transport ended with the request unanswered (an event
        // stream that stopped short of the answer, for one).
        ServiceError::TransportClosed => McpError::Interrupted,
        ServiceError::UnexpectedResponse => {
            McpError::Protocol("it sent an answer of the wrong kind".to_owned())
        }
        ServiceError::Cancelled { .. } => {
            McpError::Protocol("the request was cancelled".to_owned())
        }
        other => McpError::Protocol(redactor.scrub(&other.to_string())),
    }
}

/// `message (JSON-RPC error CODE)`, scrubbed.
fn server_error(data: &ErrorData, redactor: &Redactor) -> String {
    format!(
        "{} (JSON-RPC error {})",
        redactor.scrub(&data.message),
        data.code.0
    )
}

/// Maps what the HTTP layer under rmcp reported. The error is a chain of
/// boxed errors; the first link that says something specific decides.
fn from_transport(error: &DynamicTransportError, redactor: &Redactor) -> McpError {
    let mut link: Option<&(dyn StdError + 'static)> = Some(error.error.as_ref());
    while let Some(current) = link {
        if let Some(http) = current.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            return from_http(http, redactor);
        }
        if let Some(mapped) = from_link(current) {
            return mapped;
        }
        link = current.source();
    }
    McpError::Protocol("the HTTP exchange failed".to_owned())
}

fn from_http(error: &StreamableHttpError<reqwest::Error>, redactor: &Redactor) -> McpError {
    match error {
        StreamableHttpError::Client(error) => from_reqwest(error),
        StreamableHttpError::AuthRequired(e) => McpError::Unauthorized {
            status: 401,
            challenge: non_empty(&e.www_authenticate_header),
        },
        StreamableHttpError::InsufficientScope(e) => McpError::Unauthorized {
            status: 403,
            challenge: non_empty(&e.www_authenticate_header),
        },
        StreamableHttpError::HttpStatus(status) => McpError::ServerError {
            status: status.status,
        },
        StreamableHttpError::UnexpectedServerResponse(text) => from_unexpected(text, redactor),
        StreamableHttpError::UnexpectedContentType(content_type) => McpError::NotMcp {
            detail: match content_type {
                Some(content_type) => format!(
                    "it answered with {}",
                    redactor.scrub(content_type.split(';').next().unwrap_or_default().trim())
                ),
                None => "it answered without a content type".to_owned(),
            },
        },
        StreamableHttpError::Deserialize(_) => McpError::NotMcp {
            detail: "its answer is not JSON-RPC".to_owned(),
        },
        StreamableHttpError::ResponseBodyTooLarge { max_size } => {
            McpError::Protocol(format!("its answer is larger than {max_size} bytes"))
        }
        StreamableHttpError::SessionExpired => {
            McpError::Protocol("the server ended the session (HTTP 404)".to_owned())
        }
        StreamableHttpError::Io(error) => from_io(error)
            .unwrap_or_else(|| McpError::Protocol("the connection broke off".to_owned())),
        StreamableHttpError::Sse(_) | StreamableHttpError::UnexpectedEndOfStream => {
            McpError::Interrupted
        }
        StreamableHttpError::ReservedHeaderConflict(name) => McpError::InvalidTarget(format!(
            "the header {} is set by Countersign itself",
            redactor.scrub(name)
        )),
        other => McpError::Protocol(redactor.scrub(&other.to_string())),
    }
}

fn non_empty(header: &str) -> Option<String> {
    (!header.trim().is_empty()).then(|| header.to_owned())
}

/// rmcp reports most unexpected HTTP statuses as `"HTTP 404 Not Found: body"`.
/// The body is never shown (a server may echo request headers into it).
fn from_unexpected(text: &str, redactor: &Redactor) -> McpError {
    let status = text
        .strip_prefix("HTTP ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse::<u16>().ok());
    match status {
        Some(status @ (401 | 403)) => McpError::Unauthorized {
            status,
            challenge: None,
        },
        Some(status @ 300..=399) => McpError::NotMcp {
            detail: format!(
                "it redirects elsewhere (HTTP {status}); Countersign does not follow redirects, \
                 so enter the final URL"
            ),
        },
        Some(status) => McpError::NotMcp {
            detail: format!("HTTP {status}"),
        },
        None if text.contains("could not parse JSON") => McpError::NotMcp {
            detail: "its answer is not JSON-RPC".to_owned(),
        },
        None => McpError::Protocol(redactor.scrub(text)),
    }
}

fn from_reqwest(error: &reqwest::Error) -> McpError {
    if error.is_timeout() {
        return McpError::Timeout { after: None };
    }
    // The SSRF guard's refusal and the OS's refusal are the most specific
    // things in the chain; look for them first.
    let mut link: Option<&(dyn StdError + 'static)> = error.source();
    while let Some(current) = link {
        if let Some(mapped) = from_link(current) {
            return mapped;
        }
        link = current.source();
    }
    if error.is_connect() {
        return McpError::Unreachable {
            reason: connect_reason(error),
        };
    }
    if error.is_redirect() {
        return McpError::NotMcp {
            detail: "it redirects elsewhere; Countersign does not follow redirects, so enter \
                     the final URL"
                .to_owned(),
        };
    }
    if let Some(status) = error.status() {
        return McpError::NotMcp {
            detail: format!("HTTP {}", status.as_u16()),
        };
    }
    if error.is_body() {
        return McpError::Interrupted;
    }
    if error.is_decode() {
        return McpError::Protocol("its answer could not be read".to_owned());
    }
    McpError::Unreachable {
        reason: "the request could not be sent".to_owned(),
    }
}

/// A link of an error chain that decides the mapping on its own.
fn from_link(link: &(dyn StdError + 'static)) -> Option<McpError> {
    // The connection closed before the whole answer came (hyper's
    // `IncompleteMessage`): the request itself went out.
    if link
        .downcast_ref::<hyper::Error>()
        .is_some_and(hyper::Error::is_incomplete_message)
    {
        return Some(McpError::Interrupted);
    }
    if let Some(refused) = link.downcast_ref::<SsrfError>() {
        // The guard's messages name the user's own host and the rule; they
        // carry no secret.
        return Some(McpError::Unreachable {
            reason: refused.to_string(),
        });
    }
    if let Some(error) = link.downcast_ref::<std::io::Error>() {
        return from_io(error);
    }
    None
}

fn from_io(error: &std::io::Error) -> Option<McpError> {
    use std::io::ErrorKind;
    let reason = match error.kind() {
        ErrorKind::ConnectionRefused => "connection refused",
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted => "the connection was reset",
        ErrorKind::TimedOut => return Some(McpError::Timeout { after: None }),
        ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable => "the host is unreachable",
        _ => {
            // An I/O error may wrap the SSRF guard's refusal (resolvers
            // report through `io::Error`).
            return error
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<SsrfError>())
                .map(|refused| McpError::Unreachable {
                    reason: refused.to_string(),
                });
        }
    };
    Some(McpError::Unreachable {
        reason: reason.to_owned(),
    })
}

/// Names DNS and TLS failures, which reqwest reports only as text.
fn connect_reason(error: &reqwest::Error) -> String {
    let mut chain = Vec::new();
    let mut link: Option<&(dyn StdError + 'static)> = error.source();
    while let Some(current) = link {
        chain.push(current.to_string().to_ascii_lowercase());
        link = current.source();
    }
    let mentions = |words: &[&str]| {
        chain
            .iter()
            .any(|text| words.iter().any(|w| text.contains(w)))
    };
    if mentions(&["dns", "resolve", "lookup", "name or service"]) {
        "the host name could not be resolved".to_owned()
    } else if mentions(&[
        "certificate",
        "tls",
        "handshake",
        "rustls",
        "ssl",
        "corrupt message",
        "invalidcontenttype",
        "alert",
    ]) {
        "the TLS handshake failed (is the certificate valid for this host?)".to_owned()
    } else {
        tracing::debug!(error.chain = ?chain, "connection failed");
        "could not connect".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Secret;

    #[test]
    fn every_error_has_a_kind_word_of_the_fixed_list_and_no_two_share_one() {
        let errors = [
            McpError::Unreachable { reason: "r".into() },
            McpError::Unauthorized {
                status: 401,
                challenge: None,
            },
            McpError::Interrupted,
            McpError::ServerError { status: 500 },
            McpError::Timeout { after: None },
            McpError::NotMcp { detail: "d".into() },
            McpError::Protocol("p".into()),
            McpError::ToolFailed("t".into()),
            McpError::InvalidTarget("i".into()),
            McpError::TooManyTools {
                listed: 501,
                more: false,
                max: 500,
            },
            McpError::DescriptorTooLarge {
                tool: "x".into(),
                bytes: 1,
                max: 0,
            },
            McpError::ResponseTooLarge { max: 1 },
        ];
        let kinds: Vec<&str> = errors.iter().map(McpError::kind).collect();
        assert_eq!(
            kinds,
            McpError::KINDS,
            "kind() and KINDS list the variants in one order"
        );
    }

    #[test]
    fn the_redactor_hides_every_secret_of_the_target() {
        let mut target = McpTarget::new(
            "https://mcp.example.com/mcp?api_key=query-secret&x=1"
                .parse()
                .expect("test URL parses"),
        );
        target.bearer = Some(Secret::new("bearer-secret"));
        target
            .headers
            .push(("X-Api-Key".into(), Secret::new("header-secret")));
        let redactor = Redactor::for_target(&target);

        let scrubbed = redactor.scrub("bearer-secret header-secret query-secret x=1");

        assert_eq!(scrubbed, "[redacted] [redacted] [redacted] x=1");
    }

    #[test]
    fn unexpected_statuses_map_to_what_they_mean() {
        let redactor = Redactor::default();
        let cases = [
            (
                "HTTP 401 Unauthorized: nope",
                McpError::Unauthorized {
                    status: 401,
                    challenge: None,
                },
            ),
            (
                "HTTP 403 Forbidden: ",
                McpError::Unauthorized {
                    status: 403,
                    challenge: None,
                },
            ),
            (
                "HTTP 404 Not Found: <html>",
                McpError::NotMcp {
                    detail: "HTTP 404".into(),
                },
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(from_unexpected(text, &redactor), expected, "{text}");
        }
        assert!(
            matches!(
                from_unexpected("HTTP 301 Moved Permanently: ", &redactor),
                McpError::NotMcp { detail } if detail.contains("redirect")
            ),
            "a redirect is named as one"
        );
    }
}
