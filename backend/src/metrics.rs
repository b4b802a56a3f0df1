//! What `GET /metrics` reports (DESIGN §8): this instance's counters and
//! gauges on the official Prometheus client (`prometheus-client`), in the
//! Prometheus text format (0.0.4). `docs/operations.md` ("Metrics to
//! scrape") names each metric for operators.
//!
//! What it owns: the registry (one per [`crate::AppState`], so two
//! servers in one process — the tests — never share a count), the small
//! functions domain modules call when something happens
//! ([`Metrics::decided`], [`Metrics::tool_call`], …), the guards that hold
//! a gauge up while a stream or a turn lives ([`Open`]), and [`render`],
//! which adds the values a scrape read ([`Now`]).
//!
//! What it deliberately does not do: know HTTP (`http::metrics` serves it
//! and decides who may read it), or touch the database on a hot path.
//! Every call here is an atomic add on memory this instance owns; the
//! only database read is the scrape's (`http::metrics`), once per scrape.
//! Nor does it import the modules that bump it (`xtask cycles`).
//!
//! Architecture invariant: every label value is one of a fixed set of
//! words (the recording functions take enums, never strings), so no user
//! id, email, tool argument or URL can become a series. Each family's
//! words are created at zero at start-up, so `rate()` works from the first
//! scrape and a missing series means a missing instance.

use crate::{auth::AuthError, mcp::McpError};
use countersign_api::{CallOrigin, ToolCallStatus};
use prometheus_client::{
    encoding::{EncodeLabelSet, prometheus_text},
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::{Registry, Unit},
};
use std::time::Duration;

/// Every metric's name starts with this (and `_`).
const PREFIX: &str = "countersign";

/// Upper bounds of the decision → execution histogram (seconds): a
/// `NOTIFY` wakes the waiting turn within milliseconds; the poll fallback
/// (`COUNTERSIGN_APPROVAL_POLL_MS`, 1.5 s by default) shows up at 2.5 s.
const LATENCY_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// How a pending call's wait for a person ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {
    /// The user approved its card.
    Approved,
    /// The user declined it.
    Denied,
    /// Nobody decided in time (the wait's expiry, or start-up recovery of
    /// a call whose turn died).
    Expired,
    /// The turn was stopped while the card waited.
    Cancelled,
}

impl Decided {
    const ALL: [Self; 4] = [Self::Approved, Self::Denied, Self::Expired, Self::Cancelled];

    fn as_str(self) -> &'static str {
        match self {
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
        }
    }
}

/// `outcome`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

/// `outcome` and `origin` of a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ToolCallLabels {
    outcome: &'static str,
    origin: &'static str,
}

/// `kind` of an MCP error.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

/// `reason` of a refused sign-in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

/// The `origin` word of a call nothing let run (refused before the gate,
/// e.g. arguments JCS cannot carry exactly).
const NO_ORIGIN: &str = "none";

/// The origins a reported call can have.
const ORIGINS: [Option<CallOrigin>; 5] = [
    Some(CallOrigin::Approved),
    Some(CallOrigin::TurnGrant),
    Some(CallOrigin::AlwaysGrant),
    Some(CallOrigin::TrustedAnnotations),
    None,
];

fn origin_word(origin: Option<CallOrigin>) -> &'static str {
    origin.map_or(NO_ORIGIN, CallOrigin::as_str)
}

/// Sign-in refusals that count as failures.
const SIGN_IN_REASONS: [&str; 3] = ["wrong_credentials", "wrong_code", "disabled"];

/// This instance's metrics. Cheap to bump from any task: each is an atomic.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    decisions: Family<OutcomeLabel, Counter>,
    decision_to_execution: Histogram,
    tool_calls: Family<ToolCallLabels, Counter>,
    mcp_errors: Family<KindLabel, Counter>,
    sse_streams: Gauge,
    turns: Gauge,
    sign_in_failures: Family<ReasonLabel, Counter>,
    sign_in_throttled: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every family registered, every label word at zero.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix(PREFIX);
        let decisions = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "approval_decisions",
            "Pending tool calls whose wait for a person ended, by outcome (approved, denied, \
             expired, cancelled)",
            decisions.clone(),
        );
        let decision_to_execution = Histogram::new(LATENCY_BUCKETS);
        registry.register_with_unit(
            "approval_decision_to_execution",
            "From an approval (decided_at) to the claim that starts its execution (claimed_at), \
             both on the database's clock",
            Unit::Seconds,
            decision_to_execution.clone(),
        );
        let tool_calls = Family::<ToolCallLabels, Counter>::default();
        registry.register(
            "tool_calls",
            "Tool calls reported to the chat, by outcome (ok, error) and by what let them run \
             (origin: approved, turn_grant, always_grant, trusted_annotations; none when refused \
             before the gate)",
            tool_calls.clone(),
        );
        let mcp_errors = Family::<KindLabel, Counter>::default();
        registry.register(
            "mcp_errors",
            "Failures talking to connectors (connect, list, call), by kind",
            mcp_errors.clone(),
        );
        let sse_streams = Gauge::default();
        registry.register(
            "sse_streams_open",
            "Chat event streams (SSE) this instance holds open",
            sse_streams.clone(),
        );
        let turns = Gauge::default();
        registry.register(
            "turns_running",
            "Turns this instance runs (including those waiting for an approval)",
            turns.clone(),
        );
        let sign_in_failures = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "sign_in_failures",
            "Refused sign-ins, by reason (wrong_credentials, wrong_code, disabled)",
            sign_in_failures.clone(),
        );
        let sign_in_throttled = Counter::default();
        registry.register(
            "sign_in_throttled",
            "Sign-ins refused with 429 because of too many recent failures",
            sign_in_throttled.clone(),
        );

        for outcome in Decided::ALL {
            let _ = decisions.get_or_create(&OutcomeLabel {
                outcome: outcome.as_str(),
            });
        }
        for outcome in [ToolCallStatus::Ok, ToolCallStatus::Error] {
            for origin in ORIGINS {
                let _ = tool_calls.get_or_create(&ToolCallLabels {
                    outcome: outcome.as_str(),
                    origin: origin_word(origin),
                });
            }
        }
        for kind in McpError::KINDS {
            let _ = mcp_errors.get_or_create(&KindLabel { kind });
        }
        for reason in SIGN_IN_REASONS {
            let _ = sign_in_failures.get_or_create(&ReasonLabel { reason });
        }

        Self {
            registry,
            decisions,
            decision_to_execution,
            tool_calls,
            mcp_errors,
            sse_streams,
            turns,
            sign_in_failures,
            sign_in_throttled,
        }
    }

    /// A pending call's wait ended this way.
    pub fn decided(&self, outcome: Decided) {
        self.decisions
            .get_or_create(&OutcomeLabel {
                outcome: outcome.as_str(),
            })
            .inc();
    }

    /// An approved call was claimed `latency` after its approval.
    pub fn decision_to_execution(&self, latency: Duration) {
        self.decision_to_execution.observe(latency.as_secs_f64());
    }

    /// A tool call was reported to the chat with this status and origin.
    pub fn tool_call(&self, status: ToolCallStatus, origin: Option<CallOrigin>) {
        // `Unknown` is never sent by this server; counted as an error.
        let outcome = match status {
            ToolCallStatus::Ok => ToolCallStatus::Ok,
            _ => ToolCallStatus::Error,
        };
        self.tool_calls
            .get_or_create(&ToolCallLabels {
                outcome: outcome.as_str(),
                origin: origin_word(origin),
            })
            .inc();
    }

    /// Talking to a connector failed this way.
    pub fn mcp_error(&self, err: &McpError) {
        self.mcp_errors
            .get_or_create(&KindLabel { kind: err.kind() })
            .inc();
    }

    /// A sign-in was refused with `err`: a failure (wrong password or
    /// code, a disabled account) or a throttle. Other refusals (a second
    /// factor still to give, a database error) are not counted.
    pub fn sign_in_refused(&self, err: &AuthError) {
        let reason = match err {
            AuthError::WrongCredentials => "wrong_credentials",
            AuthError::WrongCode => "wrong_code",
            AuthError::Disabled => "disabled",
            AuthError::Throttled { .. } => {
                self.sign_in_throttled.inc();
                return;
            }
            _ => return,
        };
        self.sign_in_failures
            .get_or_create(&ReasonLabel { reason })
            .inc();
    }

    /// Counts an open event stream until the guard is dropped.
    pub fn sse_stream_open(&self) -> Open {
        Open::new(&self.sse_streams)
    }

    /// Counts a running turn until the guard is dropped.
    pub fn turn_running(&self) -> Open {
        Open::new(&self.turns)
    }
}

/// Holds a gauge one higher while it lives (dropped with the stream or
/// turn it belongs to, also when that task panics or is cancelled).
#[derive(Debug)]
pub struct Open(Gauge);

impl Open {
    fn new(gauge: &Gauge) -> Self {
        gauge.inc();
        Self(gauge.clone())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The `Content-Type` of [`render`]'s text.
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// What a scrape reads at that moment (`http::metrics` reads it): the
/// instance's pool, and the pending approvals — one `count(*)` over the
/// ledger (`approvals::pending_count`), the same on every instance, since
/// any instance may decide any call.
#[derive(Debug, Clone, Copy)]
pub struct Now {
    /// Connections the pool holds open (`PgPool::size`).
    pub pool_open: u32,
    /// Of those, idle ones (`PgPool::num_idle`).
    pub pool_idle: usize,
    /// `None` when the read failed or was slow: the gauge is then left out
    /// of this scrape rather than made up.
    pub pending_approvals: Option<i64>,
}

/// The scrape's text: the instance's registry, then what was read `now`.
pub fn render(metrics: &Metrics, now: Now) -> String {
    let mut read = Registry::with_prefix(PREFIX);
    let open = i64::from(now.pool_open);
    let idle = i64::try_from(now.pool_idle).unwrap_or(i64::MAX);
    let gauge = |value: i64| {
        let gauge = Gauge::<i64>::default();
        gauge.set(value);
        gauge
    };
    read.register(
        "db_pool_connections_in_use",
        "Connections of this instance's database pool lent out at scrape time",
        gauge(open - idle),
    );
    read.register(
        "db_pool_connections_open",
        "Connections this instance's database pool holds open (in use or idle)",
        gauge(open),
    );
    if let Some(count) = now.pending_approvals {
        read.register(
            "pending_approvals",
            "Tool calls waiting for a person's decision, on every instance (read from the \
             database at scrape time)",
            gauge(count),
        );
    }
    let mut text = String::new();
    for registry in [&metrics.registry, &read] {
        prometheus_text::encode(&mut text, registry).expect("writing to a String cannot fail");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(metrics: &Metrics) -> String {
        let mut text = String::new();
        prometheus_text::encode(&mut text, &metrics.registry).expect("encode");
        text
    }

    #[test]
    fn every_label_word_is_there_at_zero_before_anything_happens() {
        let text = text(&Metrics::new());
        for line in [
            r#"countersign_approval_decisions_total{outcome="expired"} 0"#,
            r#"countersign_tool_calls_total{outcome="ok",origin="trusted_annotations"} 0"#,
            r#"countersign_tool_calls_total{outcome="error",origin="none"} 0"#,
            r#"countersign_mcp_errors_total{kind="response_too_large"} 0"#,
            r#"countersign_sign_in_failures_total{reason="wrong_code"} 0"#,
            "countersign_sign_in_throttled_total 0",
            "countersign_approval_decision_to_execution_seconds_count 0",
            "countersign_sse_streams_open 0",
            "countersign_turns_running 0",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "no line {line:?} in\n{text}"
            );
        }
    }

    #[test]
    fn a_scrape_without_the_pending_count_leaves_that_gauge_out_rather_than_guess() {
        let now = Now {
            pool_open: 3,
            pool_idle: 1,
            pending_approvals: None,
        };
        let text = render(&Metrics::new(), now);
        assert!(
            text.lines()
                .any(|l| l == "countersign_db_pool_connections_in_use 2")
        );
        assert!(
            text.lines()
                .any(|l| l == "countersign_db_pool_connections_open 3")
        );
        assert!(!text.contains("countersign_pending_approvals"), "{text}");
        let now = Now {
            pending_approvals: Some(4),
            ..now
        };
        let text = render(&Metrics::new(), now);
        assert!(text.lines().any(|l| l == "countersign_pending_approvals 4"));
    }

    #[test]
    fn guards_hold_their_gauge_up_while_they_live() {
        let metrics = Metrics::new();
        let a = metrics.sse_stream_open();
        let b = metrics.sse_stream_open();
        let turn = metrics.turn_running();
        assert_eq!(metrics.sse_streams.get(), 2, "two streams open");
        assert_eq!(metrics.turns.get(), 1, "one turn running");
        drop((a, turn));
        assert_eq!(metrics.sse_streams.get(), 1, "one stream closed");
        assert_eq!(metrics.turns.get(), 0, "the turn ended");
        drop(b);
        assert_eq!(metrics.sse_streams.get(), 0);
    }

    #[test]
    fn only_failures_and_throttles_of_sign_in_are_counted() {
        let metrics = Metrics::new();
        metrics.sign_in_refused(&AuthError::WrongCredentials);
        metrics.sign_in_refused(&AuthError::MfaRequired);
        metrics.sign_in_refused(&AuthError::Throttled {
            retry_after_secs: 9,
        });
        let text = text(&metrics);
        assert!(
            text.contains("countersign_sign_in_failures_total{reason=\"wrong_credentials\"} 1")
        );
        assert!(text.contains("countersign_sign_in_throttled_total 1"));
        let failures: u64 = SIGN_IN_REASONS
            .iter()
            .map(|reason| {
                metrics
                    .sign_in_failures
                    .get_or_create(&ReasonLabel { reason })
                    .get()
            })
            .sum();
        assert_eq!(failures, 1, "a second factor still to give is no failure");
    }
}
