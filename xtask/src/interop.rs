//! The MCP servers that others wrote, for `backend/tests/interop` and
//! `backend/tests/api/py_oauth.rs`: the reference `server-everything` (npm)
//! and the official Python SDK (PyPI; its dependencies — starlette,
//! uvicorn, httpx2 — are all the test's authorization server in
//! `py_oauth_server.py` needs), and PyPI `prometheus_client`, whose text
//! parser reads `/metrics` in `backend/tests/api/metrics.rs`, and
//! `openapi-spec-validator`, which checks `/api/openapi.json`, and
//! `aiosmtpd`, the SMTP sink that catches mail to approvers; installed
//! once, at pinned versions, under `target/interop/`; and, for `cargo xtask
//! faults` only, `schemathesis` ([`prepare_schemathesis`]). It does not
//! start them: the tests do, on loopback,
//! and stop them by PID.

use crate::proc::{cmd, run};
use anyhow::Context as _;
use std::path::{Path, PathBuf};

/// `@modelcontextprotocol/server-everything` (speaks 2025-11-25 only).
const EVERYTHING_VERSION: &str = "2026.8.31";
/// PyPI `mcp`, the official Python SDK (speaks both protocol eras).
const PYTHON_MCP_VERSION: &str = "2.3.0";
/// PyPI `prometheus_client`, the official Python client: its parser of
/// the Prometheus text format checks our `/metrics`.
const PROMETHEUS_CLIENT_VERSION: &str = "0.26.0";
/// PyPI `openapi-spec-validator`: checks that `/api/openapi.json` is valid
/// OpenAPI 3.1 (`backend/tests/api/health.rs`). Its own folder: its
/// `jsonschema` must not move the one the Python SDK runs on.
const OPENAPI_VALIDATOR_VERSION: &str = "0.9.0";
/// PyPI `aiosmtpd`: the local SMTP sink (`backend/tests/interop/smtp_sink.py`)
/// that catches the e-mails to approvers in
/// `backend/tests/api/second_approval.rs` and the browser tests. Its own
/// folder, like the validator's.
const AIOSMTPD_VERSION: &str = "1.4.6";
/// PyPI `schemathesis`: fuzzes the API from its own document
/// (`backend/tests/api/faults/fuzz.rs`, `cargo xtask faults` only). Its own
/// folder: it pins its own `jsonschema`, `hypothesis` and `requests`.
const SCHEMATHESIS_VERSION: &str = "4.32.5";

/// Installs schemathesis into `target/interop/py-fuzz` unless it is there.
/// Returns that folder, for `COUNTERSIGN_FAULTS_SCHEMATHESIS` (a
/// `PYTHONPATH`: the test runs `python3 -m schemathesis.cli`).
pub fn prepare_schemathesis() -> anyhow::Result<PathBuf> {
    let dir = crate::root().join("target/interop/py-fuzz");
    if !dir
        .join(format!("schemathesis-{SCHEMATHESIS_VERSION}.dist-info"))
        .exists()
    {
        run(cmd("python3")
            .args(["-m", "pip", "install", "--quiet", "--upgrade", "--target"])
            .arg(&dir)
            .arg(format!("schemathesis=={SCHEMATHESIS_VERSION}")))?;
    }
    Ok(dir)
}

/// Installs aiosmtpd into `target/interop/py-smtp` unless it is there;
/// returns that folder (a `PYTHONPATH` for `smtp_sink.py`).
pub fn prepare_smtp() -> anyhow::Result<PathBuf> {
    let smtp = crate::root().join("target/interop/py-smtp");
    if !smtp
        .join(format!("aiosmtpd-{AIOSMTPD_VERSION}.dist-info"))
        .exists()
    {
        run(cmd("python3")
            .args(["-m", "pip", "install", "--quiet", "--upgrade", "--target"])
            .arg(&smtp)
            .arg(format!("aiosmtpd=={AIOSMTPD_VERSION}")))?;
    }
    Ok(smtp)
}

/// Installs what is missing into `target/interop/` and writes the loopback
/// preload there. Returns that folder, for `COUNTERSIGN_INTEROP_DIR`.
pub fn prepare() -> anyhow::Result<PathBuf> {
    let root = crate::root();
    let dir = root.join("target/interop");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;

    let npm = dir.join("npm");
    if installed_npm_version(&npm, "@modelcontextprotocol/server-everything").as_deref()
        != Some(EVERYTHING_VERSION)
    {
        run(cmd("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&npm)
            .arg(format!(
                "@modelcontextprotocol/server-everything@{EVERYTHING_VERSION}"
            )))?;
    }

    let py = dir.join("py");
    if !py
        .join(format!("mcp-{PYTHON_MCP_VERSION}.dist-info"))
        .exists()
    {
        run(cmd("python3")
            .args(["-m", "pip", "install", "--quiet", "--upgrade", "--target"])
            .arg(&py)
            .arg(format!("mcp=={PYTHON_MCP_VERSION}")))?;
    }
    if !py
        .join(format!(
            "prometheus_client-{PROMETHEUS_CLIENT_VERSION}.dist-info"
        ))
        .exists()
    {
        run(cmd("python3")
            .args(["-m", "pip", "install", "--quiet", "--upgrade", "--target"])
            .arg(&py)
            .arg(format!("prometheus_client=={PROMETHEUS_CLIENT_VERSION}")))?;
    }

    let validator = dir.join("py-openapi");
    if !validator
        .join(format!(
            "openapi_spec_validator-{OPENAPI_VALIDATOR_VERSION}.dist-info"
        ))
        .exists()
    {
        run(cmd("python3")
            .args(["-m", "pip", "install", "--quiet", "--upgrade", "--target"])
            .arg(&validator)
            .arg(format!(
                "openapi-spec-validator=={OPENAPI_VALIDATOR_VERSION}"
            )))?;
    }

    prepare_smtp()?;

    // The preload that keeps server-everything (no host option) on
    // 127.0.0.1; committed beside the tests that use it.
    let preload = root.join("backend/tests/interop/loopback.mjs");
    std::fs::copy(&preload, dir.join("loopback.mjs"))
        .with_context(|| format!("cannot copy {}", preload.display()))?;
    Ok(dir)
}

/// The `version` in the installed `package.json` of npm package `name`
/// under the `npm --prefix` folder `npm`, if any.
pub fn installed_npm_version(npm: &Path, name: &str) -> Option<String> {
    let manifest = npm.join("node_modules").join(name).join("package.json");
    let text = std::fs::read_to_string(manifest).ok()?;
    let manifest: serde_json::Value = serde_json::from_str(&text).ok()?;
    Some(manifest.get("version")?.as_str()?.to_owned())
}
