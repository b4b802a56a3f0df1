//! Logging set-up: `tracing` to stderr, filtered by `RUST_LOG`
//! (default `info` for Countersign, `warn` for dependencies).

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. Safe to call more than once (tests do):
/// later calls are no-ops.
pub fn init() {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("warn,countersign=info,tower_http=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
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
