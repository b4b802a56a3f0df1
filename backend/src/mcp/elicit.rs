//! Answering a server's request for user input (elicitation) without a
//! person: the probe's `--elicit accept-defaults|decline|cancel`.
//!
//! What it owns: [`HeadlessAnswer`], the fixed answer a session gives
//! every elicitation, and [`defaults`], the content "accept with the
//! defaults" sends for a form: each property's `default` from the
//! requested schema (SEP-1034), when it fits the property's type.
//!
//! What it deliberately does not do: ask anyone. The chat's input card
//! (DESIGN §6a) is a later item; a server session without a headless
//! answer declares no elicitation capability and declines, as before.
//! Nor does it open a URL: a URL-mode request accepted headlessly is
//! only acknowledged (and logged), never visited.

use std::str::FromStr;

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value};

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
