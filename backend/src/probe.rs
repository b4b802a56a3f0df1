//! `countersign connector probe`: what a connector URL serves, as the
//! server sends it, from the command line. It runs the same SSRF guard and
//! MCP client as Test/Refresh, prints the negotiated protocol and each
//! tool (annotations raw, descriptor digest) and, when asked, calls one
//! tool. It stores nothing and needs no database.

use crate::{
    config::Secret,
    mcp::{self, McpSettings, McpTarget},
    ssrf,
};
use serde_json::{Map, Value};
use std::{fmt::Write as _, sync::Arc};

/// What to probe.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The connector's URL.
    pub url: String,
    /// Extra request headers, as `Name:value`.
    pub headers: Vec<String>,
    /// A bearer token for `Authorization`.
    pub bearer: Option<Secret>,
    /// Private destinations the guard lets through.
    pub allow: ssrf::AllowList,
    /// A tool to call after listing, with its JSON arguments (an object).
    pub call: Option<(String, String)>,
}

/// Why a probe stopped.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// A flag did not parse.
    #[error("{0}")]
    Invalid(String),
    /// The SSRF guard refused the URL.
    #[error("refused: {0}")]
    Refused(ssrf::SsrfError),
    /// Connecting, listing or calling failed.
    #[error(transparent)]
    Mcp(#[from] mcp::McpError),
}

/// Runs the probe; returns the report, one line per fact.
pub async fn probe(probe: &Probe) -> Result<String, ProbeError> {
    let arguments = match &probe.call {
        Some((name, args)) => Some((name.clone(), parse_args(args)?)),
        None => None,
    };
    let mut target = McpTarget::new(
        ssrf::check(&probe.url, &ssrf::SystemResolver, &probe.allow)
            .await
            .map_err(ProbeError::Refused)?
            .url()
            .clone(),
    );
    target.headers = probe
        .headers
        .iter()
        .map(|h| parse_header(h))
        .collect::<Result<_, _>>()?;
    target.bearer = probe.bearer.clone();
    let http = ssrf::guarded_client(
        reqwest::Client::builder(),
        Arc::new(ssrf::SystemResolver),
        probe.allow.clone(),
    )
    .map_err(|e| ProbeError::Invalid(format!("cannot build the HTTP client: {e}")))?;

    let session = mcp::connect(http, &target, &McpSettings::default()).await?;
    let result = report(&session, arguments).await;
    session.close().await;
    result
}

async fn report(
    session: &mcp::McpSession,
    call: Option<(String, Map<String, Value>)>,
) -> Result<String, ProbeError> {
    let mut out = String::new();
    let listing = session.list().await?;
    let tools = listing.tools;
    // Writing to a String cannot fail.
    let _ = writeln!(out, "protocol: {}", session.protocol_version());
    let _ = writeln!(out, "tools: {}", tools.len());
    for dropped in &listing.dropped {
        let _ = writeln!(out, "not offered: {} — {}", dropped.name, dropped.reason);
    }
    for tool in &tools {
        let _ = writeln!(out, "- {}", tool.name);
        let _ = writeln!(out, "  title: {}", tool.title.as_deref().unwrap_or("-"));
        let first_line = tool
            .description
            .as_deref()
            .and_then(|d| d.lines().next())
            .unwrap_or("-");
        let _ = writeln!(out, "  description: {first_line}");
        let annotations = tool
            .annotations
            .as_ref()
            .map_or_else(|| "-".to_owned(), Value::to_string);
        let _ = writeln!(out, "  annotations: {annotations}");
        let _ = writeln!(out, "  digest: {}", mcp::descriptor_digest(tool));
    }
    if let Some((name, arguments)) = call {
        let result = session.call_tool(&name, arguments).await?;
        let _ = writeln!(out, "call {name}: is_error={}", result.is_error);
        let _ = writeln!(out, "{}", result.text);
    }
    Ok(out)
}

fn parse_header(raw: &str) -> Result<(String, Secret), ProbeError> {
    let (name, value) = raw
        .split_once(':')
        .filter(|(name, _)| !name.trim().is_empty())
        .ok_or_else(|| ProbeError::Invalid(format!("--header wants NAME:VALUE, not \"{raw}\"")))?;
    Ok((name.trim().to_owned(), Secret::new(value.trim())))
}

fn parse_args(raw: &str) -> Result<Map<String, Value>, ProbeError> {
    match serde_json::from_str(raw) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ProbeError::Invalid(
            "--args must be a JSON object".to_owned(),
        )),
        Err(e) => Err(ProbeError::Invalid(format!("--args is not JSON: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_split_at_the_first_colon_and_need_a_name() {
        let (name, value) = parse_header("X-Key: a:b").expect("parses");
        assert_eq!((name.as_str(), value.expose()), ("X-Key", "a:b"));
        assert!(parse_header(":v").is_err(), "no name");
        assert!(parse_header("novalue").is_err(), "no colon");
    }

    #[test]
    fn call_arguments_must_be_a_json_object() {
        assert!(parse_args(r#"{"text":"hi"}"#).is_ok());
        assert!(parse_args("[1]").is_err(), "an array");
        assert!(parse_args("{").is_err(), "not JSON");
    }
}
