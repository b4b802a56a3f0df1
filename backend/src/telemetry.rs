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
//! headers, bodies and tool arguments — whatever `RUST_LOG` asks for:
//! the libraries that print what passes through them at their verbose
//! levels (rmcp the JSON-RPC messages, an elicitation's answers and an
//! OAuth code among them; sqlx the statements; hyper, h2 and reqwest the
//! connections) are capped ([`CAPS`]) below those levels.

use crate::config::LogFormat;
use tracing::{Level, Metadata};
use tracing_subscriber::{
    EnvFilter, Layer as _, filter::filter_fn, fmt, layer::SubscriberExt as _,
    util::SubscriberInitExt as _,
};

/// The most a library may log, whatever `RUST_LOG` says: the most
/// specific entry whose target is the event's (or a parent module of it)
/// applies. Each level named here is the last one that prints no payload.
pub const CAPS: [(&str, Level); 9] = [
    // `received notification` at info carries the server's message; debug
    // and trace carry every request and response, an elicitation's
    // answers and the OAuth exchange.
    ("rmcp", Level::WARN),
    ("sqlx", Level::WARN),
    // Slow statements are logged at warn with the statement's text.
    ("sqlx::query", Level::ERROR),
    ("hyper", Level::INFO),
    ("hyper_util", Level::INFO),
    ("h2", Level::INFO),
    ("reqwest", Level::INFO),
    ("rustls", Level::INFO),
    ("tungstenite", Level::INFO),
];

/// Whether an event or span at `metadata` is within its target's cap.
pub fn within_cap(metadata: &Metadata<'_>) -> bool {
    let target = metadata.target();
    CAPS.iter()
        .filter(|(name, _)| {
            target == *name
                || target
                    .strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with("::"))
        })
        .max_by_key(|(name, _)| name.len())
        .is_none_or(|(_, cap)| metadata.level() <= cap)
}

/// `RUST_LOG`, or `default`.
fn env_filter(default: &str) -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default))
}

/// Installs the global subscriber. Safe to call more than once (tests do):
/// later calls are no-ops.
pub fn init(format: LogFormat) {
    let env = env_filter("warn,countersign=info,tower_http=info");
    let caps = filter_fn(within_cap);
    let text = fmt::layer().with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => tracing_subscriber::registry()
            .with(env)
            .with(text.with_filter(caps))
            .try_init(),
        // `flatten_event`: the message and the event's own fields at the top
        // level; `spans` (root first) carries the request span's fields
        // even when the event happened in a nested span.
        LogFormat::Json => tracing_subscriber::registry()
            .with(env)
            .with(
                text.json()
                    .flatten_event(true)
                    .with_current_span(false)
                    .with_span_list(true)
                    .with_filter(caps),
            )
            .try_init(),
    };
}

/// For tests: the same filters, written through the test harness's capture
/// so passing tests stay quiet.
pub fn init_for_tests() {
    let _ = tracing_subscriber::registry()
        .with(env_filter("warn,countersign=info"))
        .with(
            fmt::layer()
                .with_test_writer()
                .with_filter(filter_fn(within_cap)),
        )
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_apply_to_a_target_and_its_modules_and_the_most_specific_wins() {
        use tracing::callsite::Identifier;
        use tracing::metadata::Kind;
        struct Site;
        impl tracing::Callsite for Site {
            fn set_interest(&self, _: tracing::subscriber::Interest) {}
            fn metadata(&self) -> &Metadata<'_> {
                unreachable!("not registered")
            }
        }
        static SITE: Site = Site;
        let at = |target: &'static str, level: Level| {
            Metadata::new(
                "event",
                target,
                level,
                None,
                None,
                None,
                tracing::field::FieldSet::new(&[], Identifier(&SITE)),
                Kind::EVENT,
            )
        };
        for (target, level, kept) in [
            ("rmcp", Level::DEBUG, false),
            ("rmcp::service", Level::INFO, false),
            ("rmcp::transport::auth", Level::TRACE, false),
            ("rmcp::service", Level::WARN, true),
            ("rmcpx", Level::TRACE, true),
            ("sqlx::query", Level::WARN, false),
            ("sqlx::query", Level::ERROR, true),
            ("sqlx::postgres::notice", Level::WARN, true),
            ("hyper::proto::h1", Level::DEBUG, false),
            ("h2::codec", Level::TRACE, false),
            ("countersign::turns", Level::TRACE, true),
            ("tower_http::trace", Level::DEBUG, true),
        ] {
            assert_eq!(within_cap(&at(target, level)), kept, "{target} at {level}");
        }
    }
}
