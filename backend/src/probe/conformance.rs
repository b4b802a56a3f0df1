//! The probe as the client under test of the official MCP conformance suite
//! (`countersign connector probe --conformance URL`, run by `cargo xtask
//! conformance`).
//!
//! The suite starts a mock server for one scenario and runs the client
//! with the mock's URL, naming the scenario in `MCP_CONFORMANCE_SCENARIO`
//! and, for some, what to call in `MCP_CONFORMANCE_CONTEXT` (JSON, e.g.
//! `{"toolCalls": [{"name", "arguments"}]}`). What it owns: turning that into
//! the probe's ordinary steps — connect (the product's own negotiation:
//! 2026-07-28 first, 2025-11-25 as the fallback; the suite's
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` is not obeyed, because the point is to
//! test what Countersign really does), list, then the calls of [`plan`] —
//! and answering every elicitation with `accept-defaults` unless
//! `--elicit` says otherwise. It prints the `--json` report (the suite
//! keeps it as `stdout.txt`) and exits 1 when connecting, listing or any
//! call failed.
//!
//! The `auth/*` scenarios need a sign-in, so the probe runs here as with
//! `--oauth --oauth-follow` ([`oauth_options`]): the suite's mock
//! authorization servers redirect back at once; a pre-registered client
//! comes from the context's `client_id` / `client_secret`, and the Client
//! ID Metadata Document URL is the one the suite expects
//! ([`SUITE_CLIENT_METADATA_URL`]: it cannot fetch it, and does not need
//! to).
//!
//! What it deliberately does not do: know what a scenario checks. Tools the
//! listing dropped (an invalid `x-mcp-header`) are never called, even when
//! the context names them: the product would never offer them.

use super::{Probe, ProbeError, finish, json_report, list_and_call, oauth::OAuthOptions};
use crate::{
    config::Secret,
    mcp::{HeadlessAnswer, ToolListing},
};
use serde_json::{Map, Value};

/// The environment variable naming the scenario.
pub const SCENARIO_VAR: &str = "MCP_CONFORMANCE_SCENARIO";
/// The environment variable carrying the scenario's context (JSON).
pub const CONTEXT_VAR: &str = "MCP_CONFORMANCE_CONTEXT";

/// The Client ID Metadata Document URL the suite's CIMD scenarios expect
/// a client to present (`auth/basic-cimd` checks that it is this one).
pub const SUITE_CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The scenario whose client must send one tool's input schema back
/// through another (SEP-1613 / SEP-2106 keyword preservation).
const SCHEMA_ECHO_SCENARIO: &str = "json-schema-2020-12-preservation";
/// Its focal tool, whose schema is echoed, and the echo tool.
const SCHEMA_TOOL: &str = "json_schema_2020_12_tool";
const ECHO_TOOL: &str = "json_schema_echo";
/// Scenarios about the listing alone, whose mock answers no `tools/call`
/// (SEP-2106: a network `$ref` in a listed schema must not be fetched).
const LIST_ONLY: &[&str] = &["json-schema-ref-no-deref"];

/// Runs the scenario named in the environment against `probe.url`.
pub async fn run_from_env(probe: &Probe) -> Result<String, ProbeError> {
    let scenario = std::env::var(SCENARIO_VAR).unwrap_or_default();
    let context = match std::env::var(CONTEXT_VAR) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| ProbeError::Invalid(format!("{CONTEXT_VAR} is not JSON: {e}")))?,
        Err(_) => Value::Null,
    };
    run(probe, &scenario, &context).await
}

/// Runs `scenario` with its `context` against `probe.url`.
pub async fn run(probe: &Probe, scenario: &str, context: &Value) -> Result<String, ProbeError> {
    let probe = Probe {
        elicit: probe.elicit.or(Some(HeadlessAnswer::AcceptDefaults)),
        json: true,
        oauth: Some(oauth_options(probe.oauth.as_ref(), context)),
        ..probe.clone()
    };
    let (protocol, listing, calls) =
        list_and_call(&probe, |listing| plan(scenario, context, listing)).await?;
    finish(json_report(&protocol, &listing, &calls), &calls)
}

/// How the probe signs in under the suite: as `--oauth --oauth-follow`,
/// presenting the client the flags name, else the context's `client_id` /
/// `client_secret` (a pre-registered client), else the suite's CIMD URL
/// where the authorization server supports CIMD, else dynamic
/// registration.
pub fn oauth_options(flags: Option<&OAuthOptions>, context: &Value) -> OAuthOptions {
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    let flags = flags.cloned().unwrap_or_default();
    let (client_id, client_secret) = match flags.client_id {
        Some(id) => (Some(id), flags.client_secret),
        None => (text("client_id"), text("client_secret").map(Secret::new)),
    };
    OAuthOptions {
        follow: true,
        client_id,
        client_secret,
        client_metadata_url: flags
            .client_metadata_url
            .or_else(|| Some(SUITE_CLIENT_METADATA_URL.to_owned())),
    }
}

/// The calls a scenario asks for, in order, among the tools offered:
///
/// - none for the scenarios in [`LIST_ONLY`];
/// - the context's `toolCalls`, when it has any (the headers scenarios
///   name the tool and the exact arguments whose headers they check);
/// - for the schema-preservation scenario, its echo tool with
///   `{"schema": <the focal tool's inputSchema as received>}`;
/// - otherwise every offered tool once, in the server's order, with
///   [`minimal_arguments`].
pub fn plan(
    scenario: &str,
    context: &Value,
    listing: &ToolListing,
) -> Vec<(String, Map<String, Value>)> {
    if LIST_ONLY.contains(&scenario) {
        return Vec::new();
    }
    let offered = |name: &str| listing.tools.iter().find(|tool| tool.name == name);
    let from_context: Vec<(String, Map<String, Value>)> = context
        .get("toolCalls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|call| {
            let name = call.get("name")?.as_str()?;
            let arguments = call
                .get("arguments")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            Some((name.to_owned(), arguments))
        })
        .collect();
    if !from_context.is_empty() {
        return from_context
            .into_iter()
            .filter(|(name, _)| offered(name).is_some())
            .collect();
    }
    if scenario == SCHEMA_ECHO_SCENARIO
        && let (Some(focal), Some(_)) = (offered(SCHEMA_TOOL), offered(ECHO_TOOL))
    {
        let mut arguments = Map::new();
        arguments.insert("schema".to_owned(), focal.input_schema.clone());
        return vec![(ECHO_TOOL.to_owned(), arguments)];
    }
    listing
        .tools
        .iter()
        .map(|tool| (tool.name.clone(), minimal_arguments(&tool.input_schema)))
        .collect()
}

/// Arguments that satisfy a schema's `required` list and nothing more:
/// each required property's `default`, else its first `enum` value, else
/// the plainest value of its type (`"test"`, `1`, `true`, `[]`, `{}`,
/// `null`).
pub fn minimal_arguments(schema: &Value) -> Map<String, Value> {
    let properties = schema.get("properties").and_then(Value::as_object);
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|name| {
            let property = properties.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
            let first_enum = property
                .get("enum")
                .and_then(Value::as_array)
                .and_then(|values| values.first());
            let value = match (property.get("default"), first_enum) {
                (Some(default), _) => default.clone(),
                (None, Some(first)) => first.clone(),
                (None, None) => match property.get("type").and_then(Value::as_str) {
                    Some("string") => Value::from("test"),
                    Some("integer" | "number") => Value::from(1),
                    Some("boolean") => Value::Bool(true),
                    Some("array") => Value::Array(Vec::new()),
                    Some("object") => Value::Object(Map::new()),
                    _ => Value::Null,
                },
            };
            (name.to_owned(), value)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::ToolDescriptor;
    use serde_json::json;

    fn listing(tools: &[(&str, Value)]) -> ToolListing {
        let tools: Vec<ToolDescriptor> = tools
            .iter()
            .map(|(name, schema)| ToolDescriptor {
                name: (*name).to_owned(),
                title: None,
                description: None,
                input_schema: schema.clone(),
                output_schema: None,
                annotations: None,
            })
            .collect();
        let sent = tools
            .iter()
            .map(|t| json!({"name": t.name, "inputSchema": t.input_schema}))
            .collect();
        ToolListing {
            tools,
            sent,
            dropped: Vec::new(),
        }
    }

    fn names(plan: &[(String, Map<String, Value>)]) -> Vec<&str> {
        plan.iter().map(|(name, _)| name.as_str()).collect()
    }

    #[test]
    fn context_tool_calls_are_made_as_given_but_only_to_offered_tools() {
        let tools = listing(&[("valid_tool", json!({})), ("other", json!({}))]);
        let context = json!({"toolCalls": [
            {"name": "valid_tool", "arguments": {"region": "us-west1", "n": null}},
            {"name": "dropped_tool", "arguments": {}}
        ]});

        let plan = plan("http-custom-headers", &context, &tools);

        assert_eq!(names(&plan), ["valid_tool"]);
        assert_eq!(
            Value::Object(plan[0].1.clone()),
            json!({"region": "us-west1", "n": null}),
            "arguments exactly as given, nulls included"
        );
    }

    #[test]
    fn the_schema_scenario_echoes_the_focal_schema_as_received() {
        let focal = json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
                           "type": "object", "$defs": {"a": {"$anchor": "x"}},
                           "additionalProperties": false});
        let tools = listing(&[
            (SCHEMA_TOOL, focal.clone()),
            (ECHO_TOOL, json!({"type": "object", "required": ["schema"]})),
        ]);

        let plan = plan(SCHEMA_ECHO_SCENARIO, &Value::Null, &tools);

        assert_eq!(names(&plan), [ECHO_TOOL]);
        assert_eq!(plan[0].1.get("schema"), Some(&focal));
    }

    #[test]
    fn otherwise_every_offered_tool_is_called_once_in_order() {
        let tools = listing(&[
            ("b", json!({"type": "object"})),
            (
                "a",
                json!({"type": "object", "properties": {"x": {"type": "number"}},
                         "required": ["x"]}),
            ),
        ]);
        let plan_of = |scenario| plan(scenario, &json!({"toolCalls": []}), &tools);
        let every = plan_of("tools_call");
        assert_eq!(names(&every), ["b", "a"]);
        assert_eq!(Value::Object(every[1].1.clone()), json!({"x": 1}));
        assert!(
            plan_of("json-schema-ref-no-deref").is_empty(),
            "a listing-only scenario"
        );
    }

    #[test]
    fn the_suite_signs_in_headlessly_with_the_contexts_client_unless_flags_name_one() {
        let context = json!({"client_id": "pre-registered-client",
                             "client_secret": "pre-registered-secret"});
        let from_context = oauth_options(None, &context);
        assert!(from_context.follow);
        assert_eq!(
            from_context.client_id.as_deref(),
            Some("pre-registered-client")
        );
        assert_eq!(
            from_context.client_secret.as_ref().map(Secret::expose),
            Some("pre-registered-secret")
        );
        assert_eq!(
            from_context.client_metadata_url.as_deref(),
            Some(SUITE_CLIENT_METADATA_URL)
        );

        let flags = OAuthOptions {
            client_id: Some("mine".into()),
            ..OAuthOptions::default()
        };
        let chosen = oauth_options(Some(&flags), &context);
        assert_eq!(chosen.client_id.as_deref(), Some("mine"));
        assert!(chosen.client_secret.is_none(), "not the context's secret");
        assert!(oauth_options(None, &Value::Null).client_id.is_none());
    }

    #[test]
    fn minimal_arguments_fill_only_what_is_required() {
        let schema = json!({
            "type": "object",
            "properties": {
                "s": {"type": "string"},
                "d": {"type": "integer", "default": 7},
                "e": {"type": "string", "enum": ["low", "high"]},
                "b": {"type": "boolean"},
                "l": {"type": "array"},
                "o": {"type": "object"},
                "skip": {"type": "string"}
            },
            "required": ["s", "d", "e", "b", "l", "o", "untyped"]
        });
        assert_eq!(
            Value::Object(minimal_arguments(&schema)),
            json!({"s": "test", "d": 7, "e": "low", "b": true, "l": [], "o": {},
                   "untyped": null})
        );
        assert_eq!(minimal_arguments(&json!({"type": "object"})), Map::new());
    }
}
