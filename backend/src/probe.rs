//! `countersign connector probe`: what a connector URL serves, as the
//! server sends it, from the command line. It runs the same SSRF guard and
//! MCP client as Test/Refresh, prints the negotiated protocol and each
//! tool (annotations raw, descriptor digest) and, when asked, calls one
//! tool. It stores nothing and needs no database.
//!
//! Two things only the probe does, because a person at a shell (or a test
//! suite) is there to see the answer: `--elicit` answers a server's
//! requests for input with a fixed answer (see `mcp::HeadlessAnswer`; the
//! server's own connector sessions answer none yet), and `--json` prints
//! the report as one JSON document with each tool exactly as the server
//! sent it. `conformance` is the probe as the MCP conformance suite's
//! client under test (`--conformance`). `oauth` signs in (`--oauth`):
//! [`Connection`] hands every 401 and 403 to it, connects again with the
//! new token and repeats the request the server refused (it did not run).
//! Without `--oauth`, a 401 says what the server's OAuth metadata names.

pub mod conformance;
pub mod oauth;

use crate::{
    config::Secret,
    mcp::{self, HeadlessAnswer, McpSession, McpSettings, McpTarget, ToolListing, ToolResult},
    ssrf,
};
use serde_json::{Map, Value, json};
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
    /// How to answer the server's requests for input; `None` declares no
    /// elicitation capability (as the server's connector sessions do).
    pub elicit: Option<HeadlessAnswer>,
    /// Print one JSON document instead of lines of text.
    pub json: bool,
    /// Sign in with OAuth when the server asks (`--oauth`).
    pub oauth: Option<oauth::OAuthOptions>,
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
    /// Signing in failed.
    #[error("OAuth sign-in failed: {0}")]
    OAuth(String),
    /// A 401 without `--oauth`: what the server's metadata says.
    #[error(
        "the server wants an OAuth sign-in (HTTP 401). Its authorization server is {issuer}; \
         the scopes it asks for: {scopes}; the authorization server offers: {offered}; client \
         registration: {registration}. Run again with --oauth (add --oauth-follow for an \
         authorization server that needs no person), or pass --bearer TOKEN."
    )]
    NeedsSignIn {
        /// The authorization server's issuer.
        issuer: String,
        /// The scopes a sign-in would ask for (challenge, else resource
        /// metadata).
        scopes: String,
        /// The authorization server's `scopes_supported`.
        offered: String,
        /// How a client can register there.
        registration: &'static str,
    },
    /// Listing worked but a call failed; the report says which and why.
    #[error("{failed} tool call(s) failed (see the report)")]
    CallsFailed {
        /// The report, as far as it went.
        report: String,
        /// How many calls failed.
        failed: usize,
    },
}

/// One call the probe made, and what came of it.
#[derive(Debug)]
pub(crate) struct Call {
    tool: String,
    arguments: Map<String, Value>,
    outcome: Result<ToolResult, ProbeError>,
}

/// Connects, lists, makes the calls `plan` picks from the listing (each
/// outcome kept, a failure included), and closes: `(protocol, listing,
/// calls)`.
pub(crate) async fn list_and_call(
    probe: &Probe,
    plan: impl FnOnce(&mcp::ToolListing) -> Vec<(String, Map<String, Value>)>,
) -> Result<(String, mcp::ToolListing, Vec<Call>), ProbeError> {
    let mut connection = Connection::open(probe).await?;
    let result = async {
        let listing = connection.list().await?;
        let mut calls = Vec::new();
        for (tool, arguments) in plan(&listing) {
            let outcome = connection.call_tool(&tool, arguments.clone()).await;
            calls.push(Call {
                tool,
                arguments,
                outcome,
            });
        }
        Ok::<_, ProbeError>((listing, calls))
    }
    .await;
    let protocol = connection.protocol_version();
    connection.close().await;
    let (listing, calls) = result?;
    Ok((protocol, listing, calls))
}

/// Runs the probe; returns the report (lines of text, or one JSON
/// document with `--json`).
pub async fn probe(probe: &Probe) -> Result<String, ProbeError> {
    let call = match &probe.call {
        Some((name, args)) => Some((name.clone(), parse_args(args)?)),
        None => None,
    };
    let (protocol, listing, calls) = list_and_call(probe, |_| call.into_iter().collect()).await?;
    let report = if probe.json {
        json_report(&protocol, &listing, &calls)
    } else {
        text_report(&protocol, &listing, &calls)
    };
    finish(report, &calls)
}

/// The report, or [`ProbeError::CallsFailed`] carrying it when a call
/// failed (the CLI prints it and exits 1).
fn finish(report: String, calls: &[Call]) -> Result<String, ProbeError> {
    match calls.iter().filter(|call| call.outcome.is_err()).count() {
        0 => Ok(report),
        failed => Err(ProbeError::CallsFailed { report, failed }),
    }
}

/// A probe's session to the connector; with `--oauth`, signed in (again)
/// whenever the server refuses the token.
pub(crate) struct Connection<'a> {
    probe: &'a Probe,
    session: McpSession,
    oauth: Option<oauth::Authorizer>,
}

impl<'a> Connection<'a> {
    /// Connects (signing in first when the server asks and `--oauth`
    /// allows).
    pub(crate) async fn open(probe: &'a Probe) -> Result<Self, ProbeError> {
        let mut oauth = probe
            .oauth
            .clone()
            .map(|options| oauth::Authorizer::new(probe, options))
            .transpose()?;
        let session = connect_signed_in(probe, &mut oauth, probe.bearer.clone()).await?;
        Ok(Self {
            probe,
            session,
            oauth,
        })
    }

    /// The protocol version the server agreed to.
    pub(crate) fn protocol_version(&self) -> String {
        self.session.protocol_version()
    }

    /// Every tool the server lists.
    pub(crate) async fn list(&mut self) -> Result<mcp::ToolListing, ProbeError> {
        loop {
            match self.session.list().await {
                Ok(listing) => return Ok(listing),
                Err(refusal) => self.sign_in_again(refusal).await?,
            }
        }
    }

    /// Calls `tool` once; a call the server refused for its token (it did
    /// not run) is made again after a new sign-in.
    pub(crate) async fn call_tool(
        &mut self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<ToolResult, ProbeError> {
        loop {
            match self.session.call_tool(tool, arguments.clone()).await {
                Ok(result) => return Ok(result),
                Err(refusal) => self.sign_in_again(refusal).await?,
            }
        }
    }

    /// Signs in again after `refusal` (a 401 or 403) and reconnects, or
    /// returns why not (any other error is returned as it is).
    async fn sign_in_again(&mut self, refusal: mcp::McpError) -> Result<(), ProbeError> {
        let Some(oauth) = self.oauth.as_mut() else {
            return Err(refused(self.probe, refusal).await);
        };
        if !matches!(refusal, mcp::McpError::Unauthorized { .. }) {
            return Err(refusal.into());
        }
        let token = oauth.token_after(&refusal).await?;
        let session = connect_signed_in(self.probe, &mut self.oauth, Some(token)).await?;
        std::mem::replace(&mut self.session, session).close().await;
        Ok(())
    }

    /// Ends the session.
    pub(crate) async fn close(self) {
        self.session.close().await;
    }
}

/// Connects with `bearer`; on a 401 or 403 with `oauth`, signs in and
/// tries again (the [`oauth::Authorizer`] bounds how often).
async fn connect_signed_in(
    probe: &Probe,
    oauth: &mut Option<oauth::Authorizer>,
    mut bearer: Option<Secret>,
) -> Result<McpSession, ProbeError> {
    loop {
        match open(probe, bearer.clone()).await {
            Err(ProbeError::Mcp(refusal @ mcp::McpError::Unauthorized { .. })) => match oauth {
                Some(oauth) => bearer = Some(oauth.token_after(&refusal).await?),
                None => return Err(refused(probe, refusal).await),
            },
            other => return other,
        }
    }
}

/// A refusal without `--oauth`: a 401 says what the metadata names.
async fn refused(probe: &Probe, refusal: mcp::McpError) -> ProbeError {
    match refusal {
        mcp::McpError::Unauthorized { status: 401, .. } if probe.bearer.is_none() => {
            oauth::describe(probe, refusal).await
        }
        other => other.into(),
    }
}

/// Checks the URL, builds the guarded client, connects with `bearer`.
async fn open(probe: &Probe, bearer: Option<Secret>) -> Result<McpSession, ProbeError> {
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
    target.bearer = bearer;
    let http = ssrf::guarded_client(
        reqwest::Client::builder(),
        Arc::new(ssrf::SystemResolver),
        probe.allow.clone(),
    )
    .map_err(|e| ProbeError::Invalid(format!("cannot build the HTTP client: {e}")))?;
    let settings = McpSettings {
        elicitation: probe.elicit.map(mcp::Elicitation::Headless),
        ..McpSettings::default()
    };
    Ok(mcp::connect(http, &target, &settings).await?)
}

/// One line per fact.
fn text_report(protocol: &str, listing: &ToolListing, calls: &[Call]) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(out, "protocol: {protocol}");
    let _ = writeln!(out, "tools: {}", listing.tools.len());
    for dropped in &listing.dropped {
        let _ = writeln!(out, "not offered: {} — {}", dropped.name, dropped.reason);
    }
    for tool in &listing.tools {
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
    for call in calls {
        match &call.outcome {
            Ok(result) => {
                let _ = writeln!(out, "call {}: is_error={}", call.tool, result.is_error);
                let _ = writeln!(out, "{}", result.text);
            }
            Err(err) => {
                let _ = writeln!(out, "call {}: failed: {err}", call.tool);
            }
        }
    }
    out
}

/// `{"protocol", "tools": [{"digest", "descriptor"}], "dropped", "calls"}`,
/// each descriptor the tool's JSON as the server sent it, beside the
/// digest Countersign computes over it.
fn json_report(protocol: &str, listing: &ToolListing, calls: &[Call]) -> String {
    let tools: Vec<Value> = listing
        .tools
        .iter()
        .zip(&listing.sent)
        .map(|(tool, sent)| json!({"digest": mcp::descriptor_digest(tool), "descriptor": sent}))
        .collect();
    let dropped: Vec<Value> = listing
        .dropped
        .iter()
        .map(|d| json!({"name": d.name, "reason": d.reason}))
        .collect();
    let calls: Vec<Value> = calls
        .iter()
        .map(|call| match &call.outcome {
            Ok(result) => json!({
                "tool": call.tool,
                "arguments": call.arguments,
                "isError": result.is_error,
                "text": result.text,
                "structuredContent": result.structured,
                "truncated": result.truncated,
            }),
            Err(err) => json!({
                "tool": call.tool,
                "arguments": call.arguments,
                "error": err.to_string(),
            }),
        })
        .collect();
    let report = json!({
        "protocol": protocol,
        "tools": tools,
        "dropped": dropped,
        "calls": calls,
    });
    let mut text = serde_json::to_string_pretty(&report).unwrap_or_default();
    text.push('\n');
    text
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
