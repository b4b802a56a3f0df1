//! `backend/.sqlx/`: the offline data of the server's compile-checked
//! queries (`sqlx::query!` and friends), committed so that the server
//! builds with no database (`.cargo/config.toml` sets `SQLX_OFFLINE`).
//!
//! `cargo xtask sqlx` rewrites it from a freshly migrated database with
//! sqlx-cli's `cargo sqlx prepare`; `cargo xtask test` runs the same with
//! `--check`, which fails when a query, a migration or the data changed
//! without the others. The database is migrated by sqlx-cli as the
//! superuser (the migrations create the roles they need), not by the
//! server: the server's own build is what a stale cache breaks.

use crate::{
    pg::{Cluster, StopOnDrop, throwaway_cluster},
    proc::{cmd, run},
    tools,
};

/// Prepares (or, with `check`, only compares) `backend/.sqlx/` against a
/// new database on `cluster`, dropped afterwards.
pub fn prepare(cluster: &Cluster, check: bool) -> anyhow::Result<()> {
    tools::ensure_sqlx_cli()?;
    let db = format!("sqlx_{}", std::process::id());
    let psql = |sql: String| {
        run(cluster
            .psql()
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", &sql, "--dbname"])
            .arg(cluster.superuser_url()))
    };
    psql(format!("create database {db}"))?;
    let url = cluster.url("postgres", None, &db);
    let result = run(cmd("cargo")
        .args(["sqlx", "migrate", "run", "--source"])
        .arg(crate::root().join("migrations"))
        .args(["--database-url", &url]))
    .and_then(|()| {
        let mut prepare = cmd("cargo");
        prepare.args(["sqlx", "prepare", "--database-url", &url]);
        if check {
            prepare.arg("--check");
        }
        run(prepare
            .current_dir(crate::root().join("backend"))
            .env("CARGO_INCREMENTAL", "0"))
    });
    psql(format!("drop database {db}"))?;
    if result.is_err() && check {
        eprintln!(
            "backend/.sqlx/ is out of date with the queries or migrations/: \
             run `cargo xtask sqlx` and commit it"
        );
    }
    result
}

/// `cargo xtask sqlx`: rewrites `backend/.sqlx/`.
pub fn write() -> anyhow::Result<()> {
    let cluster = throwaway_cluster("pg-sqlx")?;
    let _stop = StopOnDrop(&cluster);
    prepare(&cluster, false)?;
    println!("wrote backend/.sqlx/");
    Ok(())
}
