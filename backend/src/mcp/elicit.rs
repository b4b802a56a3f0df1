//! Answering a server's request for user input (elicitation, DESIGN §6a).
//!
//! What it owns: [`Elicitation`], how a session answers — a person,
//! through [`AskUser`] (the chat's input card, `crate::inputs`), or a
//! fixed [`HeadlessAnswer`] (the probe's `--elicit
//! accept-defaults|decline|cancel`); [`defaults`], the content "accept with
//! the defaults" sends for a form: each property's `default` from the
//! requested schema (SEP-1034), when it fits the property's type; and
//! [`Pause`], the time a call spends waiting for a person, which its
//! timeout does not count.
//!
//! What it deliberately does not do: open a URL. A URL-mode request
//! accepted headlessly is only acknowledged (and logged), never visited.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio::time::Instant;

/// A person who answers a server's requests for input while a call runs.
pub trait AskUser: Send + Sync {
    /// The answer to `request`. `request_state` is the 2026-07-28 round's
    /// opaque `requestState` (`None` for a legacy `elicitation/create`),
    /// for the record only: the session echoes its own copy.
    fn ask<'a>(
        &'a self,
        request: &'a ElicitRequestParams,
        request_state: Option<&'a str>,
    ) -> BoxFuture<'a, ElicitResult>;
}

/// How a session answers a server's requests for input. A session with
/// one declares `elicitation: {form: {}, url: {}}`.
#[derive(Clone)]
pub enum Elicitation {
    /// The same answer every time, without a person.
    Headless(HeadlessAnswer),
    /// Ask a person.
    Ask(Arc<dyn AskUser>),
}

impl std::fmt::Debug for Elicitation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Headless(how) => f.debug_tuple("Headless").field(how).finish(),
            Self::Ask(_) => f.write_str("Ask(..)"),
        }
    }
}

impl PartialEq for Elicitation {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Headless(a), Self::Headless(b)) => a == b,
            (Self::Ask(a), Self::Ask(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Elicitation {}

impl Elicitation {
    /// The answer to `request`.
    pub(crate) async fn answer(
        &self,
        request: &ElicitRequestParams,
        request_state: Option<&str>,
    ) -> ElicitResult {
        match self {
            Self::Headless(how) => answer(*how, request),
            Self::Ask(person) => person.ask(request, request_state).await,
        }
    }
}

/// How long a session has waited for a person so far, shared by the
/// session's handler (which holds it while a legacy `elicitation/create`
/// is answered) and its calls (whose timeout stops while it is held).
#[derive(Debug)]
pub(crate) struct Pause(watch::Sender<Paused>);

/// A [`Pause`]'s state.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Paused {
    /// Requests being answered now.
    pub(crate) holds: usize,
    /// Since when, while `holds > 0`.
    pub(crate) since: Option<Instant>,
    /// Time spent waiting in finished holds.
    pub(crate) total: Duration,
}

impl Pause {
    pub(crate) fn new() -> Self {
        Self(watch::Sender::new(Paused::default()))
    }

    /// Holds the pause until the guard drops.
    pub(crate) fn hold(&self) -> PauseGuard<'_> {
        self.0.send_modify(|p| {
            if p.holds == 0 {
                p.since = Some(Instant::now());
            }
            p.holds += 1;
        });
        PauseGuard(self)
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<Paused> {
        self.0.subscribe()
    }
}

/// Releases a [`Pause::hold`].
pub(crate) struct PauseGuard<'a>(&'a Pause);

impl Drop for PauseGuard<'_> {
    fn drop(&mut self) {
        self.0.0.send_modify(|p| {
            p.holds = p.holds.saturating_sub(1);
            if p.holds == 0
                && let Some(since) = p.since.take()
            {
                p.total += since.elapsed();
            }
        });
    }
}

/// The answer a session gives every elicitation it receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadlessAnswer {
    /// Form mode: accept, with the requested schema's defaults (or decline
    /// when a required field has none — an accept must satisfy the
    /// schema). URL mode: accept, opening nothing.
    AcceptDefaults,
    /// Decline every request.
    Decline,
    /// Cancel every request.
    Cancel,
}

impl FromStr for HeadlessAnswer {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "accept-defaults" => Ok(Self::AcceptDefaults),
            "decline" => Ok(Self::Decline),
            "cancel" => Ok(Self::Cancel),
            other => Err(format!(
                "{other:?} is not one of accept-defaults, decline, cancel"
            )),
        }
    }
}

/// What `how` answers to `request`.
pub(crate) fn answer(how: HeadlessAnswer, request: &ElicitRequestParams) -> ElicitResult {
    let result = match (how, request) {
        (HeadlessAnswer::Decline, _) => ElicitResult::new(ElicitationAction::Decline),
        (HeadlessAnswer::Cancel, _) => ElicitResult::new(ElicitationAction::Cancel),
        (
            HeadlessAnswer::AcceptDefaults,
            ElicitRequestParams::FormElicitationParams {
                requested_schema, ..
            },
        ) => {
            let schema = serde_json::to_value(requested_schema).unwrap_or(Value::Null);
            match defaults(&schema) {
                Ok(content) => ElicitResult::new(ElicitationAction::Accept)
                    .with_content(Value::Object(content)),
                Err(field) => {
                    tracing::info!(
                        elicitation.field = %field,
                        "mcp: a required field has no default; declining"
                    );
                    ElicitResult::new(ElicitationAction::Decline)
                }
            }
        }
        (HeadlessAnswer::AcceptDefaults, ElicitRequestParams::UrlElicitationParams { url, .. }) => {
            tracing::info!(elicitation.url = %url, "mcp: accepting a URL request without opening it");
            ElicitResult::new(ElicitationAction::Accept)
        }
        // `ElicitRequestParams` is non-exhaustive: a mode we do not know.
        (HeadlessAnswer::AcceptDefaults, _) => ElicitResult::new(ElicitationAction::Decline),
    };
    let message = match request {
        ElicitRequestParams::FormElicitationParams { message, .. }
        | ElicitRequestParams::UrlElicitationParams { message, .. } => message.as_str(),
        _ => "",
    };
    tracing::info!(
        elicitation.message = %message,
        elicitation.action = ?result.action,
        "mcp: the server asked for input; answered headlessly"
    );
    result
}

/// The content of "accept with the defaults" for a requested schema: every
/// property whose `default` fits its declared type (a string for
/// `string`, one of the `enum` or `oneOf` `const` values when it lists
/// them, a number for `number`, an integer for `integer`, a boolean for
/// `boolean`, an array of allowed strings for `array`). A default that
/// does not fit is left out, as if absent.
///
/// Fails with the name of a `required` property that ends up without a
/// value: defaults alone cannot answer that form.
pub(crate) fn defaults(schema: &Value) -> Result<Map<String, Value>, String> {
    let mut content = Map::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            if let Some(value) = property.get("default").filter(|v| fits(property, v)) {
                content.insert(name.clone(), value.clone());
            }
        }
    }
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    for name in required {
        if !content.contains_key(name) {
            return Err(name.to_owned());
        }
    }
    Ok(content)
}

/// Whether `value` is a valid answer for the primitive `property`.
fn fits(property: &Value, value: &Value) -> bool {
    match property.get("type").and_then(Value::as_str) {
        Some("string") => value.is_string() && allowed(property, value),
        Some("number") => value.is_number(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("boolean") => value.is_boolean(),
        Some("array") => value.as_array().is_some_and(|items| {
            let item_schema = property.get("items").unwrap_or(&Value::Null);
            items
                .iter()
                .all(|item| item.is_string() && allowed(item_schema, item))
        }),
        // Elicitation schemas are flat primitives; anything else has no
        // default we could vouch for.
        _ => false,
    }
}

/// Whether a string `value` is among the values `schema` enumerates
/// (`enum`, or the `const`s of `oneOf` / `anyOf`), or `schema` enumerates
/// none.
fn allowed(schema: &Value, value: &Value) -> bool {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values.contains(value);
    }
    let consts: Vec<&Value> = ["oneOf", "anyOf"]
        .iter()
        .filter_map(|key| schema.get(*key).and_then(Value::as_array))
        .flatten()
        .filter_map(|option| option.get("const"))
        .collect();
    consts.is_empty() || consts.contains(&value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_primitive_default_is_filled_in() {
        // The schema of the conformance suite's SEP-1034 scenario.
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
                "verified": {"type": "boolean", "default": true},
                "tags": {"type": "array", "items": {"anyOf": [{"const": "a"}, {"const": "b"}]},
                         "default": ["b"]},
                "level": {"type": "string", "oneOf": [{"const": "low", "title": "Low"}],
                          "default": "low"},
                "nickname": {"type": "string"}
            },
            "required": []
        });

        let content = defaults(&schema).expect("nothing required is missing");

        assert_eq!(
            Value::Object(content),
            json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active",
                   "verified": true, "tags": ["b"], "level": "low"}),
            "a property without a default is left out"
        );
    }

    #[test]
    fn a_default_that_does_not_fit_its_type_is_left_out() {
        let cases = [
            (
                json!({"type": "integer", "default": 2.5}),
                "a fraction for an integer",
            ),
            (
                json!({"type": "number", "default": "3"}),
                "a string for a number",
            ),
            (
                json!({"type": "boolean", "default": "true"}),
                "a string for a boolean",
            ),
            (
                json!({"type": "string", "default": 7}),
                "a number for a string",
            ),
            (
                json!({"type": "string", "enum": ["a"], "default": "b"}),
                "a value outside the enum",
            ),
            (
                json!({"type": "string", "oneOf": [{"const": "a"}], "default": "b"}),
                "a value outside the titled enum",
            ),
            (
                json!({"type": "array", "items": {"enum": ["a"]}, "default": ["a", "z"]}),
                "an item outside the multi-select",
            ),
            (json!({"type": "object", "default": {}}), "not a primitive"),
            (json!({"default": "x"}), "no type at all"),
        ];
        for (property, why) in cases {
            let schema = json!({"type": "object", "properties": {"p": property}});
            assert_eq!(defaults(&schema), Ok(Map::new()), "{why}");
        }
    }

    #[test]
    fn a_required_field_without_a_default_cannot_be_answered() {
        let schema = json!({
            "type": "object",
            "properties": {
                "confirmed": {"type": "boolean"},
                "name": {"type": "string", "default": "x"}
            },
            "required": ["name", "confirmed"]
        });
        assert_eq!(defaults(&schema), Err("confirmed".to_owned()));
        let unfit = json!({
            "type": "object",
            "properties": {"n": {"type": "integer", "default": "1"}},
            "required": ["n"]
        });
        assert_eq!(
            defaults(&unfit),
            Err("n".to_owned()),
            "an unfit default is no default"
        );
    }

    #[test]
    fn headless_answers_follow_the_flag() {
        let form: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form",
            "message": "Confirm?",
            "requestedSchema": {"type": "object", "properties": {
                "ok": {"type": "boolean", "default": true},
                "why": {"type": "string"}
            }, "required": ["ok"]}
        }))
        .expect("a form request");
        let needs_why: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form",
            "message": "Why?",
            "requestedSchema": {"type": "object", "properties": {"why": {"type": "string"}},
                                "required": ["why"]}
        }))
        .expect("a form request");
        let url: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "url", "message": "Sign in", "url": "https://example.com/x",
            "elicitationId": "e1"
        }))
        .expect("a URL request");

        let accepted = answer(HeadlessAnswer::AcceptDefaults, &form);
        assert_eq!(accepted.action, ElicitationAction::Accept);
        assert_eq!(accepted.content, Some(json!({"ok": true})));
        assert_eq!(
            answer(HeadlessAnswer::AcceptDefaults, &needs_why).action,
            ElicitationAction::Decline,
            "no default for a required field"
        );
        let url_answer = answer(HeadlessAnswer::AcceptDefaults, &url);
        assert_eq!(
            (url_answer.action, url_answer.content),
            (ElicitationAction::Accept, None)
        );
        for (how, action) in [
            (HeadlessAnswer::Decline, ElicitationAction::Decline),
            (HeadlessAnswer::Cancel, ElicitationAction::Cancel),
        ] {
            for request in [&form, &url] {
                let result = answer(how, request);
                assert_eq!((result.action, result.content), (action.clone(), None));
            }
        }
    }

    #[test]
    fn the_flag_words_parse() {
        assert_eq!(
            "accept-defaults".parse(),
            Ok(HeadlessAnswer::AcceptDefaults)
        );
        assert_eq!("decline".parse(), Ok(HeadlessAnswer::Decline));
        assert_eq!("cancel".parse(), Ok(HeadlessAnswer::Cancel));
        assert!("accept".parse::<HeadlessAnswer>().is_err());
    }
}
