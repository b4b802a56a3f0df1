//! `cargo xtask bench`: the server's figures (time to first token it adds,
//! memory per idle stream; approval decision → execution with NOTIFY and
//! poll-only, database load and memory with 1,000 waiting approvals),
//! printed, never asserted. See `backend/benches/turns.rs` and
//! `backend/benches/approvals.rs` for what is measured and how.

use crate::{
    pg::StopOnDrop,
    pg::throwaway_cluster,
    proc::{cmd, run},
};

/// Builds the release server, starts a scratch Postgres and runs the bench.
pub fn bench() -> anyhow::Result<()> {
    run(cmd("cargo").args(["build", "--release", "-p", "countersign"]))?;
    let server = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| crate::root().join("target"))
        .join("release/countersign");
    let cluster = throwaway_cluster("pg-bench")?;
    let _stop = StopOnDrop(&cluster);
    // 1,000 streams need more than the default 1,024 file descriptors.
    run(cmd("sh")
        .args([
            "-c",
            "ulimit -n 65536 2>/dev/null || ulimit -n 8192; \
             cargo bench -q -p countersign --bench turns && \
             exec cargo bench -q -p countersign --bench approvals",
        ])
        .env("COUNTERSIGN_TEST_SUPERUSER_URL", cluster.superuser_url())
        .env("COUNTERSIGN_BENCH_SERVER", server))?;
    println!(
        "\n(figures from `cargo xtask bench` on this machine; shared and noisy, take them as sizes)"
    );
    Ok(())
}
