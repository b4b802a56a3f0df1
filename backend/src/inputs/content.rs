//! Whether what the user typed fits the form the server asked for
//! (MCP's restricted elicitation schema: an object of flat primitive
//! properties). Checked before an `accept` is stored, so a server only
//! ever receives content its own schema allows, and the user is told
//! which field to fix.
//!
//! What it checks: only the schema's properties, each required one
//! present; strings (`minLength`, `maxLength`, `format` email / uri /
//! date / date-time, `enum` or `oneOf` of `const`s), numbers and integers
//! (`minimum`, `maximum`), booleans, arrays of allowed strings
//! (`items.enum` / `items.anyOf`, `minItems`, `maxItems`); at most
//! [`MAX_CONTENT_BYTES`] in all. A property of any other shape cannot be
//! answered, so a form that has one takes no content at all.

use serde_json::{Map, Value};

/// The largest content an answer may carry, in bytes of JSON.
pub const MAX_CONTENT_BYTES: usize = 64 * 1024;

/// `Ok` when `content` answers `schema`; otherwise why, naming the field.
pub fn check(schema: Option<&Value>, content: &Map<String, Value>) -> Result<(), String> {
    if Value::Object(content.clone()).to_string().len() > MAX_CONTENT_BYTES {
        return Err(format!(
            "The answer is larger than {MAX_CONTENT_BYTES} bytes."
        ));
    }
    let empty = Map::new();
    let properties = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for name in content.keys() {
        if !properties.contains_key(name) {
            return Err(format!("\"{name}\" is not a field of this form."));
        }
    }
    let required = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    for name in required {
        if !content.contains_key(name) {
            return Err(format!("\"{}\" is required.", label(properties, name)));
        }
    }
    for (name, value) in content {
        let property = &properties[name];
        field(property, value).map_err(|why| format!("\"{}\" {why}", label(properties, name)))?;
    }
    Ok(())
}

/// A field's title, else its name.
fn label<'a>(properties: &'a Map<String, Value>, name: &'a str) -> &'a str {
    properties
        .get(name)
        .and_then(|p| p.get("title"))
        .and_then(Value::as_str)
        .unwrap_or(name)
}

/// Whether `value` answers one primitive `property`; why not, as the end
/// of a sentence starting with the field's name.
fn field(property: &Value, value: &Value) -> Result<(), String> {
    let number = |key: &str| property.get(key).and_then(Value::as_f64);
    let count = |key: &str| property.get(key).and_then(Value::as_u64);
    match property.get("type").and_then(Value::as_str) {
        Some("string") => {
            let text = value.as_str().ok_or("must be text.")?;
            let chars = text.chars().count() as u64;
            if let Some(min) = count("minLength").filter(|min| chars < *min) {
                return Err(format!("must be at least {min} characters long."));
            }
            if let Some(max) = count("maxLength").filter(|max| chars > *max) {
                return Err(format!("must be at most {max} characters long."));
            }
            if let Some(allowed) = choices(property)
                && !allowed.contains(&text)
            {
                return Err("must be one of the choices offered.".to_owned());
            }
            format(property.get("format").and_then(Value::as_str), text)
        }
        Some(kind @ ("number" | "integer")) => {
            let n = value.as_f64().ok_or("must be a number.")?;
            if kind == "integer" && !(value.is_i64() || value.is_u64()) {
                return Err("must be a whole number.".to_owned());
            }
            if let Some(min) = number("minimum").filter(|min| n < *min) {
                return Err(format!("must be at least {min}."));
            }
            if let Some(max) = number("maximum").filter(|max| n > *max) {
                return Err(format!("must be at most {max}."));
            }
            Ok(())
        }
        Some("boolean") => value
            .is_boolean()
            .then_some(())
            .ok_or_else(|| "must be yes or no.".to_owned()),
        Some("array") => {
            let items = value.as_array().ok_or("must be a list of choices.")?;
            let allowed = property.get("items").and_then(choices).unwrap_or_default();
            if items
                .iter()
                .any(|item| item.as_str().is_none_or(|item| !allowed.contains(&item)))
            {
                return Err("must list only the choices offered.".to_owned());
            }
            let n = items.len() as u64;
            if let Some(min) = count("minItems").filter(|min| n < *min) {
                return Err(format!("needs at least {min} choices."));
            }
            if let Some(max) = count("maxItems").filter(|max| n > *max) {
                return Err(format!("takes at most {max} choices."));
            }
            Ok(())
        }
        _ => Err("cannot be answered: Countersign cannot show this kind of field.".to_owned()),
    }
}

/// The strings a property allows, when it lists them (`enum`, or `oneOf`
/// / `anyOf` of `{const}`).
fn choices(property: &Value) -> Option<Vec<&str>> {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        return Some(values.iter().filter_map(Value::as_str).collect());
    }
    let options = property
        .get("oneOf")
        .or_else(|| property.get("anyOf"))
        .and_then(Value::as_array)?;
    Some(
        options
            .iter()
            .filter_map(|o| o.get("const").and_then(Value::as_str))
            .collect(),
    )
}

/// The string formats MCP's elicitation schema names.
fn format(format: Option<&str>, text: &str) -> Result<(), String> {
    let ok = match format {
        Some("email") => {
            let mut parts = text.split('@');
            matches!(
                (parts.next(), parts.next(), parts.next()),
                (Some(local), Some(domain), None)
                    if !local.is_empty() && domain.contains('.') && !text.contains(char::is_whitespace)
            )
        }
        Some("uri") => reqwest::Url::parse(text).is_ok(),
        Some("date") => {
            text.len() == 10
                && time::Date::parse(text, &time::format_description::well_known::Iso8601::DATE)
                    .is_ok()
        }
        Some("date-time") => {
            time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
                .is_ok()
        }
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "must be a valid {}.",
            match format {
                Some("email") => "email address",
                Some("uri") => "web address",
                Some("date") => "date (YYYY-MM-DD)",
                _ => "date and time",
            }
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> Value {
        json!({"type": "object", "properties": {
            "matter": {"type": "string", "title": "Matter number", "minLength": 1, "maxLength": 9},
            "level": {"type": "string", "oneOf": [{"const": "public"}, {"const": "privileged"}]},
            "notify": {"type": "boolean"},
            "copies": {"type": "integer", "minimum": 1, "maximum": 3},
            "email": {"type": "string", "format": "email"},
            "due": {"type": "string", "format": "date"},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 1}
        }, "required": ["matter"]})
    }

    fn content(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("an object")
    }

    #[test]
    fn content_that_fits_passes() {
        let ok = content(
            json!({"matter": "2024-0117", "level": "privileged", "notify": true,
            "copies": 2, "email": "a@firm.example", "due": "2026-12-01", "tags": ["b"]}),
        );
        assert_eq!(check(Some(&form()), &ok), Ok(()));
        assert_eq!(
            check(Some(&form()), &content(json!({"matter": "x"}))),
            Ok(())
        );
    }

    #[test]
    fn each_misfit_names_its_field() {
        let cases = [
            (json!({}), "\"Matter number\" is required."),
            (
                json!({"matter": ""}),
                "\"Matter number\" must be at least 1 characters long.",
            ),
            (
                json!({"matter": "0123456789"}),
                "\"Matter number\" must be at most 9",
            ),
            (json!({"matter": 7}), "\"Matter number\" must be text."),
            (
                json!({"matter": "x", "level": "secret"}),
                "\"level\" must be one of",
            ),
            (
                json!({"matter": "x", "notify": "yes"}),
                "\"notify\" must be yes or no.",
            ),
            (
                json!({"matter": "x", "copies": 1.5}),
                "\"copies\" must be a whole number.",
            ),
            (
                json!({"matter": "x", "copies": 9}),
                "\"copies\" must be at most 3.",
            ),
            (
                json!({"matter": "x", "email": "not an email"}),
                "\"email\" must be a valid email",
            ),
            (
                json!({"matter": "x", "due": "1 Dec"}),
                "\"due\" must be a valid date",
            ),
            (
                json!({"matter": "x", "tags": ["c"]}),
                "\"tags\" must list only",
            ),
            (
                json!({"matter": "x", "tags": ["a", "b"]}),
                "\"tags\" takes at most 1",
            ),
            (
                json!({"matter": "x", "extra": 1}),
                "\"extra\" is not a field of this form.",
            ),
        ];
        for (given, expected) in cases {
            let error = check(Some(&form()), &content(given.clone())).expect_err("refused");
            assert!(error.starts_with(expected), "{given} → {error}");
        }
    }

    #[test]
    fn a_field_of_another_shape_takes_no_answer() {
        let nested = json!({"type": "object", "properties": {"address": {"type": "object"}}});
        assert!(check(Some(&nested), &content(json!({"address": {}}))).is_err());
        // No schema at all: nothing may be sent.
        assert!(check(None, &content(json!({"x": 1}))).is_err());
        assert_eq!(check(None, &Map::new()), Ok(()));
    }

    #[test]
    fn content_is_bounded() {
        let schema = json!({"type": "object", "properties": {"t": {"type": "string"}}});
        let big = content(json!({"t": "x".repeat(MAX_CONTENT_BYTES)}));
        assert!(
            check(Some(&schema), &big)
                .expect_err("too big")
                .contains("larger")
        );
    }
}
