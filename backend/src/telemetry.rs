//! Logging set-up: `tracing` to stderr, filtered by `RUST_LOG`
//! (default `info` for Countersign, `warn` for dependencies), as text or as
//! one JSON object per line (`COUNTERSIGN_LOG_FORMAT`, [`LogFormat`]).
//!
//! What a request logs: `http::router`'s `request` span (method, path
//! without the query, client address, `request_id`, and `user_id` once the
//! session is known) and one `finished processing request` event with the
//! status and latency. In JSON every event carries its spans' fields under
//! `spans`, so each line of a request names its request and its user.
//!
//! What it deliberately does not log: secrets (`config::Secret` prints
//! `[redacted]`), query strings (the OAuth callback's `code` and `state`),
//! headers, bodies and tool arguments.

use crate::config::LogFormat;
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. Safe to call more than once (tests do):
/// later calls are no-ops.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("warn,countersign=info,tower_http=info"));
    let text = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => text.try_init(),
        // `flatten_event`: the message and the event's own fields at the top
        // level; `spans` (root first) carries the request span's fields
        // even when the event happened in a nested span.
        LogFormat::Json => text
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(true)
            .try_init(),
    };
}

/// For tests: the same filter, written through the test harness's capture
/// so passing tests stay quiet.
pub fn init_for_tests() {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("warn,countersign=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .try_init();
}
