//! What the input card (DESIGN §6a) draws when a server asks the user for
//! input during a tool call, as plain Rust unit-tested on the host: a
//! requested schema read into form fields ([`Form::parse`]), the answers
//! checked and turned into the `content` object with the right JSON types
//! ([`Form::content`]), a URL laid out with its host apart and its
//! warnings ([`UrlPlan::parse`]), and the card's status line
//! ([`card_status`]).
//!
//! What it owns: which schemas the card can show. MCP limits a requested
//! schema to a flat object of primitives (strings with an optional
//! `format`, numbers, booleans, single- and multi-choice enums); anything
//! else — nested objects, arrays of objects, unknown types — is
//! [`Unsupported`], and the card then offers only Decline and Cancel rather
//! than a form that would send something the server did not ask for.
//!
//! What it deliberately does not do: decide whether an answer fits. The
//! server checks the content against the schema (a 422 names the field);
//! the checks here only save a round trip and say what is wrong beside the
//! field. Nor does it open anything: [`UrlPlan::openable`] only says whether
//! the card offers "Open".
//!
//! Two rules of its own, because a server writes every word of the request:
//! a field is never a password field (a form that asks for a secret —
//! which the server judges, `secret_fields` — is shown as text, with a
//! warning naming the fields, see [`Form::secret_labels`]), and a URL
//! whose host the card cannot be sure of is not offered for opening.

use serde_json::{Map, Number, Value};
use time::format_description::well_known::Rfc3339;
use time::{Date, Month, PrimitiveDateTime, Time, UtcOffset};

use crate::model::transcript::InputState;
use crate::model::when::{local_at, parse_rfc3339_ms};

/// A requested schema the card can draw: its fields, required ones first.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// The fields, in the order the card shows them.
    pub fields: Vec<Field>,
}

/// One field of a [`Form`]: a property of the requested schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The property's name: the key of the content.
    pub name: String,
    /// What the label says: the `title`, else the name.
    pub label: String,
    /// The `description`, shown under the label.
    pub help: Option<String>,
    /// Listed in the schema's `required`.
    pub required: bool,
    /// What kind of input it is.
    pub kind: FieldKind,
    /// The schema's `default`, as sent.
    default: Option<Value>,
}

/// The kinds of field MCP's requested schemas allow.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// A string.
    Text {
        /// Its `format`, which picks the input type.
        format: TextFormat,
        /// `minLength`, in characters.
        min_length: Option<u64>,
        /// `maxLength`, in characters.
        max_length: Option<u64>,
        /// `pattern` (an ECMA-262 regular expression, unanchored).
        pattern: Option<String>,
    },
    /// A number; `integer` for `type: integer`.
    Number {
        /// Whole numbers only.
        integer: bool,
        /// `minimum`.
        minimum: Option<f64>,
        /// `maximum`.
        maximum: Option<f64>,
    },
    /// A boolean: a checkbox.
    Boolean,
    /// One of a list (`enum`, `enum` + `enumNames`, or `oneOf` of
    /// `{const, title}`).
    Choice {
        /// The options, in the schema's order.
        options: Vec<Choice>,
    },
    /// Any of a list (`type: array` whose `items` are an `enum` or an
    /// `anyOf` of `{const, title}`).
    Choices {
        /// The options, in the schema's order.
        options: Vec<Choice>,
        /// `minItems`.
        min_items: Option<u64>,
        /// `maxItems`.
        max_items: Option<u64>,
    },
}

/// One option of a choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// What is sent.
    pub value: String,
    /// What is shown: its title, else the value.
    pub label: String,
}

/// A string's `format`: the input type that fits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    /// No format (or one the card does not know, or `password`: see
    /// [`Field::looks_secret`]).
    Plain,
    /// `email`.
    Email,
    /// `uri`.
    Uri,
    /// `date`: `YYYY-MM-DD`.
    Date,
    /// `date-time`: RFC 3339, entered as the browser's local time.
    DateTime,
}

impl TextFormat {
    /// The `type` of the `<input>`. Never `password`.
    pub fn input_type(self) -> &'static str {
        match self {
            Self::Plain => "text",
            Self::Email => "email",
            Self::Uri => "url",
            Self::Date => "date",
            Self::DateTime => "datetime-local",
        }
    }
}

/// What the user has entered in one field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A text, number, date or single-choice field (the option's value;
    /// empty for none).
    Text(String),
    /// A checkbox.
    Flag(bool),
    /// The options picked, by value.
    Picked(Vec<String>),
}

/// Why the card cannot draw a requested schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    /// In words, for the card: what the server asked for.
    pub why: String,
}

/// What is wrong with one field's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    /// The field's place in [`Form::fields`].
    pub index: usize,
    /// In words, naming the field by its label.
    pub message: String,
}

/// How a browser checks a pattern: `Some(matches)`, or `None` when it could
/// not (an invalid pattern, or one not worth the risk; the server checks).
pub type PatternCheck<'a> = &'a dyn Fn(&str, &str) -> Option<bool>;

/// How many options a single choice may have to be drawn as radio buttons
/// (all visible at once); more become a list box.
pub const MAX_RADIOS: usize = 5;

impl Form {
    /// Reads a requested schema. Fields come required first, then in the
    /// order the object arrived in (JSON objects have none the wire keeps
    /// for certain, and a form reads best with what must be answered on
    /// top).
    pub fn parse(schema: &Value) -> Result<Self, Unsupported> {
        let unsupported = |why: &str| Unsupported {
            why: why.to_owned(),
        };
        let schema = schema
            .as_object()
            .ok_or_else(|| unsupported("The request is not a form."))?;
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(unsupported("The request is not a form of named fields."));
        }
        let empty = Map::new();
        let properties = match schema.get("properties") {
            None => &empty,
            Some(Value::Object(properties)) => properties,
            Some(_) => return Err(unsupported("The request's fields cannot be read.")),
        };
        let required: Vec<&str> = match schema.get("required") {
            None => Vec::new(),
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            Some(_) => return Err(unsupported("The request's required fields cannot be read.")),
        };
        if let Some(missing) = required
            .iter()
            .find(|name| !properties.contains_key(**name))
        {
            return Err(Unsupported {
                why: format!("It requires a field \u{201c}{missing}\u{201d} it does not describe."),
            });
        }
        let mut fields = Vec::with_capacity(properties.len());
        for (name, property) in properties {
            fields.push(Field::parse(
                name,
                property,
                required.contains(&name.as_str()),
            )?);
        }
        // Stable: within each group the arrival order stays.
        fields.sort_by_key(|field| !field.required);
        Ok(Self { fields })
    }

    /// The labels of the fields the server judged to ask for a secret
    /// (`secret_fields` of the event), in the form's order: the card warns
    /// and names them, and still shows plain text fields.
    pub fn secret_labels(&self, secret_fields: &[String]) -> Vec<String> {
        self.fields
            .iter()
            .filter(|field| secret_fields.contains(&field.name))
            .map(|field| field.label.clone())
            .collect()
    }

    /// An answered form's lines (DESIGN §9: the answered card keeps its
    /// story): each field the server recorded an answer for, by its label,
    /// in the form's order, its value in words (secrets arrive masked).
    pub fn answered_lines(&self, answers: &Value) -> Vec<(String, String)> {
        let Some(answers) = answers.as_object() else {
            return Vec::new();
        };
        let words = |value: &Value| match value {
            Value::String(text) => text.clone(),
            Value::Bool(true) => "Yes".to_owned(),
            Value::Bool(false) => "No".to_owned(),
            Value::Array(items) => items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map_or_else(|| item.to_string(), str::to_owned)
                })
                .collect::<Vec<_>>()
                .join(", "),
            other => other.to_string(),
        };
        self.fields
            .iter()
            .filter_map(|field| {
                answers
                    .get(&field.name)
                    .map(|value| (field.label.clone(), words(value)))
            })
            .collect()
    }

    /// What each field holds before the user types: its default, or empty.
    /// `minutes_east_at` gives the browser's zone (a `date-time` default
    /// is shown in local time).
    pub fn initial_answers(&self, minutes_east_at: &dyn Fn(f64) -> i64) -> Vec<Answer> {
        self.fields
            .iter()
            .map(|field| field.initial(minutes_east_at))
            .collect()
    }

    /// The answers that stand for `values` (a call's arguments, for "Edit
    /// before allowing"), when the form says exactly them: every argument
    /// is a field, and the content the answers make is `values` again
    /// (no value changed, dropped or retyped on the way). `None`: the
    /// form cannot show them as they are, and the card offers the JSON.
    pub fn answers_for(
        &self,
        values: &Value,
        minutes_east_at: &dyn Fn(f64) -> i64,
    ) -> Option<Vec<Answer>> {
        let given = values.as_object()?;
        if given
            .keys()
            .any(|name| !self.fields.iter().any(|field| &field.name == name))
        {
            return None;
        }
        let answers: Vec<Answer> = self
            .fields
            .iter()
            .map(|field| field.answer_for(given.get(&field.name), minutes_east_at))
            .collect();
        let content = self.content(&answers, &|_, _| None, minutes_east_at).ok()?;
        (&content == given).then_some(answers)
    }

    /// The `content` of an "accept": each answer checked and given its JSON
    /// type (numbers as numbers, booleans, arrays of strings), empty
    /// optional fields left out. On problems, every field's, in order.
    pub fn content(
        &self,
        answers: &[Answer],
        pattern_matches: PatternCheck<'_>,
        minutes_east_at: &dyn Fn(f64) -> i64,
    ) -> Result<Map<String, Value>, Vec<FieldProblem>> {
        let mut content = Map::new();
        let mut problems = Vec::new();
        for (index, field) in self.fields.iter().enumerate() {
            let answer = answers.get(index).cloned().unwrap_or_else(|| field.empty());
            match field.value(&answer, pattern_matches, minutes_east_at) {
                Ok(Some(value)) => {
                    content.insert(field.name.clone(), value);
                }
                Ok(None) => {}
                Err(message) => problems.push(FieldProblem { index, message }),
            }
        }
        if problems.is_empty() {
            Ok(content)
        } else {
            Err(problems)
        }
    }
}

impl Field {
    fn parse(name: &str, schema: &Value, required: bool) -> Result<Self, Unsupported> {
        let title = schema.get("title").and_then(Value::as_str).map(str::trim);
        let label = title
            .filter(|title| !title.is_empty())
            .unwrap_or(name)
            .to_owned();
        let cannot = |what: &str| Unsupported {
            why: format!("\u{201c}{label}\u{201d} is {what}."),
        };
        let schema = schema
            .as_object()
            .ok_or_else(|| cannot("a field without a description"))?;
        let format = schema.get("format").and_then(Value::as_str);
        let kind = match single_type(schema.get("type")) {
            Some("object") => return Err(cannot("a group of nested fields")),
            Some("array") => {
                let items = schema.get("items").and_then(Value::as_object);
                let options = items
                    .and_then(|items| choices(items, "anyOf"))
                    .ok_or_else(|| cannot("a list other than a list of choices"))?;
                FieldKind::Choices {
                    options,
                    min_items: schema.get("minItems").and_then(Value::as_u64),
                    max_items: schema.get("maxItems").and_then(Value::as_u64),
                }
            }
            Some("boolean") => FieldKind::Boolean,
            kind @ Some("number" | "integer") => {
                if schema.contains_key("enum") || schema.contains_key("oneOf") {
                    return Err(cannot("a choice of numbers"));
                }
                FieldKind::Number {
                    integer: kind == Some("integer"),
                    minimum: schema.get("minimum").and_then(Value::as_f64),
                    maximum: schema.get("maximum").and_then(Value::as_f64),
                }
            }
            Some("string") | None => match choices(schema, "oneOf") {
                Some(options) => FieldKind::Choice { options },
                None if schema.contains_key("enum") || schema.contains_key("oneOf") => {
                    return Err(cannot("a choice Countersign cannot read"));
                }
                None if single_type(schema.get("type")).is_none() => {
                    return Err(cannot("a field of no known kind"));
                }
                None => FieldKind::Text {
                    format: match format {
                        Some("email") => TextFormat::Email,
                        Some("uri") => TextFormat::Uri,
                        Some("date") => TextFormat::Date,
                        Some("date-time") => TextFormat::DateTime,
                        _ => TextFormat::Plain,
                    },
                    min_length: schema.get("minLength").and_then(Value::as_u64),
                    max_length: schema.get("maxLength").and_then(Value::as_u64),
                    pattern: schema
                        .get("pattern")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                },
            },
            Some(_) => return Err(cannot("a field of a kind Countersign does not know")),
        };
        Ok(Self {
            name: name.to_owned(),
            help: schema
                .get("description")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|help| !help.is_empty())
                .map(str::to_owned),
            label,
            required,
            kind,
            default: schema.get("default").cloned(),
        })
    }

    /// The lines shown under the field that say what fits: lengths,
    /// pattern, range, how many to pick.
    pub fn hints(&self) -> Vec<String> {
        let mut hints = Vec::new();
        match &self.kind {
            FieldKind::Text {
                format,
                min_length,
                max_length,
                pattern,
            } => {
                match format {
                    TextFormat::Email => hints.push("An email address.".to_owned()),
                    TextFormat::Uri => {
                        hints.push("A full address, such as https://example.com/page.".to_owned());
                    }
                    TextFormat::Plain | TextFormat::Date | TextFormat::DateTime => {}
                }
                // "At least 1 character" says no more than "required".
                let min = min_length.filter(|min| *min > 1);
                match (min, max_length) {
                    (Some(min), Some(max)) if min == *max => {
                        hints.push(format!("Exactly {min} characters."));
                    }
                    (Some(min), Some(max)) => hints.push(format!("{min} to {max} characters.")),
                    (Some(min), None) => hints.push(format!("At least {min} characters.")),
                    (None, Some(max)) => {
                        hints.push(format!("At most {max} {}.", plural(*max, "character")))
                    }
                    (None, None) => {}
                }
                if let Some(pattern) = pattern {
                    hints.push(format!("Must match the pattern {pattern}"));
                }
            }
            FieldKind::Number {
                integer,
                minimum,
                maximum,
            } => {
                let what = if *integer {
                    "A whole number"
                } else {
                    "A number"
                };
                hints.push(match (minimum, maximum) {
                    (Some(min), Some(max)) => {
                        format!(
                            "{what} from {} to {}.",
                            number_text(*min),
                            number_text(*max)
                        )
                    }
                    (Some(min), None) => format!("{what}, at least {}.", number_text(*min)),
                    (None, Some(max)) => format!("{what}, at most {}.", number_text(*max)),
                    (None, None) => format!("{what}."),
                });
            }
            FieldKind::Choices {
                min_items,
                max_items,
                ..
            } => match (min_items.filter(|min| *min > 0), max_items) {
                (Some(min), Some(max)) if min == *max => hints.push(format!("Pick {min}.")),
                (Some(min), Some(max)) => hints.push(format!("Pick {min} to {max}.")),
                (Some(min), None) => hints.push(format!("Pick at least {min}.")),
                (None, Some(max)) => hints.push(format!("Pick at most {max}.")),
                (None, None) => {}
            },
            FieldKind::Boolean | FieldKind::Choice { .. } => {}
        }
        hints
    }

    /// Whether a single choice is drawn as radio buttons (few options)
    /// rather than a list box.
    pub fn as_radios(&self) -> bool {
        matches!(&self.kind, FieldKind::Choice { options } if options.len() <= MAX_RADIOS)
    }

    fn empty(&self) -> Answer {
        match self.kind {
            FieldKind::Boolean => Answer::Flag(false),
            FieldKind::Choices { .. } => Answer::Picked(Vec::new()),
            _ => Answer::Text(String::new()),
        }
    }

    fn initial(&self, minutes_east_at: &dyn Fn(f64) -> i64) -> Answer {
        self.answer_for(self.default.as_ref(), minutes_east_at)
    }

    /// The answer that stands for `value` (a default, or a call's
    /// argument); empty when there is none or it does not fit the field.
    fn answer_for(&self, value: Option<&Value>, minutes_east_at: &dyn Fn(f64) -> i64) -> Answer {
        let Some(default) = value else {
            return self.empty();
        };
        match (&self.kind, default) {
            (FieldKind::Boolean, Value::Bool(flag)) => Answer::Flag(*flag),
            (
                FieldKind::Text {
                    format: TextFormat::DateTime,
                    ..
                },
                Value::String(at),
            ) => Answer::Text(local_input_text(at, minutes_east_at).unwrap_or_default()),
            (FieldKind::Text { .. }, Value::String(text)) => Answer::Text(text.clone()),
            (FieldKind::Number { .. }, Value::Number(number)) => Answer::Text(number.to_string()),
            (FieldKind::Choice { options }, Value::String(value))
                if options.iter().any(|option| &option.value == value) =>
            {
                Answer::Text(value.clone())
            }
            (FieldKind::Choices { options, .. }, Value::Array(values)) => Answer::Picked(
                values
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|value| options.iter().any(|option| option.value == *value))
                    .map(str::to_owned)
                    .collect(),
            ),
            // A default that does not fit the field is not offered.
            _ => self.empty(),
        }
    }

    /// The answer as the content's value: `None` to leave it out.
    fn value(
        &self,
        answer: &Answer,
        pattern_matches: PatternCheck<'_>,
        minutes_east_at: &dyn Fn(f64) -> i64,
    ) -> Result<Option<Value>, String> {
        let label = &self.label;
        let required = || {
            if self.required {
                Err(format!("{label} is required."))
            } else {
                Ok(None)
            }
        };
        match (&self.kind, answer) {
            (FieldKind::Boolean, Answer::Flag(flag)) => Ok(Some(Value::Bool(*flag))),
            (FieldKind::Choice { options }, Answer::Text(value)) => {
                if value.is_empty() {
                    return required();
                }
                if !options.iter().any(|option| &option.value == value) {
                    return Err(format!("Pick one of the options for {label}."));
                }
                Ok(Some(Value::String(value.clone())))
            }
            (
                FieldKind::Choices {
                    options,
                    min_items,
                    max_items,
                },
                Answer::Picked(picked),
            ) => {
                // In the schema's order, each once.
                let picked: Vec<Value> = options
                    .iter()
                    .filter(|option| picked.contains(&option.value))
                    .map(|option| Value::String(option.value.clone()))
                    .collect();
                let count = picked.len() as u64;
                if count == 0 && min_items.is_none_or(|min| min == 0) {
                    return required();
                }
                if let Some(min) = min_items.filter(|min| count < *min) {
                    return Err(format!("Pick at least {min} for {label}."));
                }
                if let Some(max) = max_items.filter(|max| count > *max) {
                    return Err(format!("Pick at most {max} for {label}."));
                }
                Ok(Some(Value::Array(picked)))
            }
            (
                FieldKind::Number {
                    integer,
                    minimum,
                    maximum,
                },
                Answer::Text(text),
            ) => {
                let text = text.trim();
                if text.is_empty() {
                    return required();
                }
                let number = text.parse::<f64>().ok().filter(|n| n.is_finite());
                let Some(number) = number else {
                    return Err(format!("{label} must be a number."));
                };
                if let Some(min) = minimum.filter(|min| number < *min) {
                    return Err(format!("{label} must be at least {}.", number_text(min)));
                }
                if let Some(max) = maximum.filter(|max| number > *max) {
                    return Err(format!("{label} must be at most {}.", number_text(max)));
                }
                if *integer {
                    return whole_number(number)
                        .map(|n| Some(Value::from(n)))
                        .ok_or_else(|| format!("{label} must be a whole number."));
                }
                Ok(Number::from_f64(number).map(Value::Number))
            }
            (
                FieldKind::Text {
                    format,
                    min_length,
                    max_length,
                    pattern,
                },
                Answer::Text(text),
            ) => {
                if text.trim().is_empty() {
                    return required();
                }
                let text = match format {
                    TextFormat::Plain => text.clone(),
                    TextFormat::Email => {
                        let text = text.trim();
                        if !is_email(text) {
                            return Err(format!("{label} must be an email address."));
                        }
                        text.to_owned()
                    }
                    TextFormat::Uri => {
                        let text = text.trim();
                        if !is_uri(text) {
                            return Err(format!(
                                "{label} must be a full address, such as https://example.com/page."
                            ));
                        }
                        text.to_owned()
                    }
                    TextFormat::Date => {
                        let text = text.trim();
                        if parse_date(text).is_none() {
                            return Err(format!("{label} must be a date."));
                        }
                        text.to_owned()
                    }
                    TextFormat::DateTime => rfc3339_from_local(text.trim(), minutes_east_at)
                        .ok_or_else(|| format!("{label} must be a date and time."))?,
                };
                let chars = text.chars().count() as u64;
                if let Some(min) = min_length.filter(|min| chars < *min) {
                    return Err(format!(
                        "{label} needs at least {min} {}.",
                        plural(min, "character")
                    ));
                }
                if let Some(max) = max_length.filter(|max| chars > *max) {
                    return Err(format!(
                        "{label} takes at most {max} {}.",
                        plural(max, "character")
                    ));
                }
                if let Some(pattern) = pattern
                    && pattern_matches(pattern, &text) == Some(false)
                {
                    return Err(format!("{label} does not match the pattern {pattern}"));
                }
                Ok(Some(Value::String(text)))
            }
            // An answer of another shape than its field (never drawn so).
            _ => required(),
        }
    }
}

/// Whether a pattern is safe enough to run in the page: short, and free of
/// a quantified group (`(a+)+`), the shape that makes a backtracking
/// engine take exponential time. A server writes the pattern; the page
/// must not freeze on it. Patterns that fail this are left to the server.
pub fn pattern_is_checkable(pattern: &str) -> bool {
    pattern.len() <= 512
        && !pattern.contains(")+")
        && !pattern.contains(")*")
        && !pattern.contains(")?")
        && !pattern.contains("){")
}

/// The one type a schema's `type` names (`["string", "null"]` names
/// `string`).
fn single_type(kind: Option<&Value>) -> Option<&str> {
    match kind? {
        Value::String(kind) => Some(kind),
        Value::Array(kinds) => {
            let mut named = kinds
                .iter()
                .filter_map(Value::as_str)
                .filter(|kind| *kind != "null");
            let first = named.next()?;
            named.next().is_none().then_some(first)
        }
        _ => None,
    }
}

/// The options of a choice: `enum` (titled by `enumNames` when given), or
/// `titled` (`oneOf` / `anyOf`) of `{const, title}`. `None` when there are
/// none, or any is not a string.
fn choices(schema: &Map<String, Value>, titled: &str) -> Option<Vec<Choice>> {
    let options: Vec<Choice> = if let Some(Value::Array(values)) = schema.get("enum") {
        let names = schema.get("enumNames").and_then(Value::as_array);
        values
            .iter()
            .enumerate()
            .map(|(index, value)| {
                let value = value.as_str()?.to_owned();
                let label = names
                    .and_then(|names| names.get(index))
                    .and_then(Value::as_str)
                    .filter(|name| !name.trim().is_empty())
                    .map_or_else(|| value.clone(), str::to_owned);
                Some(Choice { value, label })
            })
            .collect::<Option<_>>()?
    } else if let Some(Value::Array(options)) = schema.get(titled) {
        options
            .iter()
            .map(|option| {
                let value = option.get("const")?.as_str()?.to_owned();
                let label = option
                    .get("title")
                    .and_then(Value::as_str)
                    .filter(|title| !title.trim().is_empty())
                    .map_or_else(|| value.clone(), str::to_owned);
                Some(Choice { value, label })
            })
            .collect::<Option<_>>()?
    } else {
        return None;
    };
    (!options.is_empty()).then_some(options)
}

/// An address of the shape `local@domain`, with no spaces (the server
/// checks the rest).
fn is_email(text: &str) -> bool {
    let Some((local, domain)) = text.rsplit_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.is_empty()
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !text.chars().any(char::is_whitespace)
}

/// A URI with a scheme (`https:…`, `mailto:…`) and no spaces.
fn is_uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !text.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// `number` as a whole number JSON carries exactly (within ±2^53).
fn whole_number(number: f64) -> Option<i64> {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    #[expect(
        clippy::cast_possible_truncation,
        reason = "checked: a whole number within ±2^53"
    )]
    (number.fract() == 0.0 && number.abs() <= EXACT).then_some(number as i64)
}

/// A number as people read it: `3`, `2.5`.
fn number_text(number: f64) -> String {
    match whole_number(number) {
        Some(whole) => whole.to_string(),
        None => number.to_string(),
    }
}

fn plural(count: u64, word: &str) -> String {
    if count == 1 {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}

/// A `datetime-local` input's value (`2026-05-01T14:30`, seconds optional)
/// as RFC 3339 in the browser's zone (`2026-05-01T14:30:00+02:00`).
fn rfc3339_from_local(text: &str, minutes_east_at: &dyn Fn(f64) -> i64) -> Option<String> {
    let (date, clock) = text.split_once('T')?;
    let mut parts = clock.split(':');
    let hour = two_digits(parts.next()?)?;
    let minute = two_digits(parts.next()?)?;
    // Seconds, when the input shows them (a fraction is dropped).
    let second = match parts.next() {
        Some(second) => two_digits(second.split('.').next()?)?,
        None => 0,
    };
    if parts.next().is_some() {
        return None;
    }
    let local = PrimitiveDateTime::new(
        parse_date(date)?,
        Time::from_hms(hour, minute, second).ok()?,
    );
    // The zone's offset at (about) that moment: read as UTC first, which is
    // off by the offset itself, and only matters within hours of a change.
    #[expect(clippy::cast_precision_loss, reason = "seconds since 1970 fit in f64")]
    let as_utc_ms = local.assume_utc().unix_timestamp() as f64 * 1000.0;
    let seconds_east = i32::try_from(minutes_east_at(as_utc_ms).checked_mul(60)?).ok()?;
    let offset = UtcOffset::from_whole_seconds(seconds_east).ok()?;
    local.assume_offset(offset).format(&Rfc3339).ok()
}

/// `YYYY-MM-DD`, a real day of the calendar.
fn parse_date(text: &str) -> Option<Date> {
    let mut parts = text.split('-');
    let year = parts.next().filter(|year| year.len() == 4)?;
    let year: i32 = year
        .chars()
        .all(|c| c.is_ascii_digit())
        .then(|| year.parse().ok())??;
    let month = Month::try_from(two_digits(parts.next()?)?).ok()?;
    let day = two_digits(parts.next()?)?;
    if parts.next().is_some() {
        return None;
    }
    Date::from_calendar_date(year, month, day).ok()
}

/// Exactly two ASCII digits.
fn two_digits(text: &str) -> Option<u8> {
    (text.len() == 2 && text.chars().all(|c| c.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// An RFC 3339 time as a `datetime-local` input shows it, in the browser's
/// zone (`2026-05-01T14:30`).
fn local_input_text(at: &str, minutes_east_at: &dyn Fn(f64) -> i64) -> Option<String> {
    let ms = parse_rfc3339_ms(at)?;
    let local = local_at(ms, minutes_east_at(ms))?;
    Some(format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}",
        local.year(),
        u8::from(local.month()),
        local.day(),
        local.hour(),
        local.minute()
    ))
}

/// A URL a server asks the user to open, laid out for the card: the host
/// apart (to be shown in bold), what is wrong with it, and whether the card
/// offers to open it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlPlan {
    /// Everything before the host (`https://`, a user name if any).
    pub before_host: String,
    /// The host (and port) as written in the URL.
    pub host: String,
    /// Everything after it: path, query, fragment.
    pub after_host: String,
    /// The host the "Open" button names: the server's `url_host`, which
    /// this parse agrees with.
    pub button_host: String,
    /// What the user should know before opening it.
    pub warnings: Vec<UrlWarning>,
    /// Whether the card offers "Open": an http(s) URL whose host this
    /// parse and the server's agree on.
    pub openable: bool,
}

/// Something about a URL the card says before the user opens it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlWarning {
    /// A host label starts with `xn--` (an internationalised name, which
    /// can look like another site's).
    Punycode,
    /// The host is written with characters beyond ASCII.
    NonAsciiHost,
    /// Plain `http:` (anything else is [`UrlWarning::NotWeb`]).
    NotHttps,
    /// A user name before the host (`https://bank.example@evil.example/`),
    /// a classic way to make a URL seem to go elsewhere.
    UserInfo,
    /// The server's `url_host` and the URL's own disagree.
    HostMismatch {
        /// What the server said.
        server: String,
        /// What the URL says.
        url: String,
    },
    /// Not a web address (`javascript:`, `data:`, …), or one written in a
    /// way browsers read differently from how it looks.
    NotWeb,
}

impl UrlWarning {
    /// The warning in words.
    pub fn text(&self) -> String {
        match self {
            Self::Punycode => {
                "This address uses punycode (xn--…); it may imitate another site's name.".into()
            }
            Self::NonAsciiHost => {
                "This address's name uses characters beyond plain letters and digits; it may imitate another site's name.".into()
            }
            Self::NotHttps => {
                "This address is not https: what you send there can be read or changed on the way.".into()
            }
            Self::UserInfo => {
                "This address has a user name before its host; the page it opens is the host in bold, not the name before it.".into()
            }
            Self::HostMismatch { server, url } => format!(
                "The server says this address goes to {server}, but it goes to {url}."
            ),
            Self::NotWeb => {
                "This is not a web address Countersign can open safely.".into()
            }
        }
    }

    /// A stable name for tests and styles.
    pub fn key(&self) -> &'static str {
        match self {
            Self::Punycode => "punycode",
            Self::NonAsciiHost => "non-ascii",
            Self::NotHttps => "not-https",
            Self::UserInfo => "userinfo",
            Self::HostMismatch { .. } => "host-mismatch",
            Self::NotWeb => "not-web",
        }
    }
}

impl UrlPlan {
    /// Lays out `url` (exactly as the server sent it), checking it against
    /// the server's `url_host` (as a browser shows a host: lower case, no
    /// default port, punycode as punycode).
    pub fn parse(url: &str, url_host: Option<&str>) -> Self {
        let not_web = || Self {
            before_host: String::new(),
            host: String::new(),
            after_host: url.to_owned(),
            button_host: String::new(),
            warnings: vec![UrlWarning::NotWeb],
            openable: false,
        };
        // Browsers drop tabs and newlines anywhere and read `\` as `/` in
        // web URLs: what such a URL shows is not where it goes.
        if url
            .chars()
            .any(|c| c.is_control() || c.is_whitespace() || c == '\\')
        {
            return not_web();
        }
        let Some((scheme, rest)) = url.split_once("://") else {
            return not_web();
        };
        let scheme_lower = scheme.to_ascii_lowercase();
        if !matches!(scheme_lower.as_str(), "http" | "https") {
            return not_web();
        }
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, after_host) = rest.split_at(authority_end);
        let (userinfo, host_port) = match authority.rfind('@') {
            Some(at) => (Some(&authority[..=at]), &authority[at + 1..]),
            None => (None, authority),
        };
        let (hostname, port) = split_port(host_port);
        if hostname.is_empty()
            || hostname == "[]"
            || port.is_some_and(|port| port.parse::<u16>().is_err())
        {
            return not_web();
        }

        let mut warnings = Vec::new();
        let ascii = hostname.is_ascii();
        if !ascii {
            warnings.push(UrlWarning::NonAsciiHost);
        }
        let hostname_lower = hostname.to_ascii_lowercase();
        if hostname_lower
            .trim_end_matches('.')
            .split('.')
            .any(|label| label.starts_with("xn--"))
            || url_host.is_some_and(|host| host.to_ascii_lowercase().contains("xn--"))
        {
            warnings.push(UrlWarning::Punycode);
        }
        if scheme_lower == "http" {
            warnings.push(UrlWarning::NotHttps);
        }
        if userinfo.is_some() {
            warnings.push(UrlWarning::UserInfo);
        }
        // The host as a browser shows it: the default port left out.
        let default_port = if scheme_lower == "https" { "443" } else { "80" };
        let shown = match port {
            Some(port) if !port.is_empty() && port.trim_start_matches('0') != default_port => {
                format!("{hostname_lower}:{}", port.trim_start_matches('0'))
            }
            _ => hostname_lower.clone(),
        };
        let agrees = match url_host {
            None => true,
            Some(server) => {
                let server = server.trim().to_ascii_lowercase();
                server == shown || server == hostname_lower
            }
        };
        if ascii
            && !agrees
            && let Some(server) = url_host
        {
            warnings.push(UrlWarning::HostMismatch {
                server: server.to_owned(),
                url: shown.clone(),
            });
        }
        Self {
            before_host: format!("{scheme}://{}", userinfo.unwrap_or_default()),
            host: host_port.to_owned(),
            after_host: after_host.to_owned(),
            button_host: url_host.map_or(shown, str::to_owned),
            openable: ascii && agrees,
            warnings,
        }
    }
}

/// `host:port` → (`host`, `Some("port")`); IPv6 in brackets keeps them.
fn split_port(host_port: &str) -> (&str, Option<&str>) {
    if host_port.starts_with('[') {
        return match host_port.find(']') {
            Some(end) => {
                let (host, rest) = host_port.split_at(end + 1);
                (host, rest.strip_prefix(':'))
            }
            None => (host_port, None),
        };
    }
    match host_port.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (host_port, None),
    }
}

/// How an input card stands: its status line, its `data-state`, and what it
/// offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputStatus {
    /// A stable name for tests and styles (`data-state`).
    pub key: &'static str,
    /// The words shown.
    pub text: &'static str,
    /// Whether the buttons can be pressed.
    pub buttons_enabled: bool,
    /// Whether the card is folded to one line (nothing more to answer).
    pub folded: bool,
    /// Whether the countdown is shown.
    pub counting_down: bool,
}

/// The card's status from the request's state and the seconds
/// left before `decide_by` (`None` when unknown). When the local countdown
/// reaches zero the card stops offering answers (the server would answer
/// 410); the server's `mcp_input_resolved` then says the same.
pub fn card_status(state: &InputState, remaining_secs: Option<i64>) -> InputStatus {
    let open = |key, text, buttons_enabled, counting_down| InputStatus {
        key,
        text,
        buttons_enabled,
        folded: false,
        counting_down,
    };
    let folded = |key, text| InputStatus {
        key,
        text,
        buttons_enabled: false,
        folded: true,
        counting_down: false,
    };
    let out_of_time = remaining_secs.is_some_and(|secs| secs <= 0);
    match state {
        InputState::Pending if out_of_time => folded("expired", "No answer in time"),
        InputState::Pending => open("pending", "Waiting for your answer", true, true),
        InputState::Sending(action) => open(
            "sending",
            match action {
                countersign_api::InputAction::Decline => "Declining…",
                countersign_api::InputAction::Cancel => "Cancelling…",
                _ => "Sending your answer…",
            },
            false,
            true,
        ),
        InputState::AnsweredElsewhere => open(
            "answered-elsewhere",
            "Already answered elsewhere — updating…",
            false,
            false,
        ),
        InputState::Accepted => folded("accepted", "You answered"),
        InputState::Declined => folded("declined", "You declined"),
        InputState::Cancelled => folded("cancelled", "Cancelled"),
        InputState::Expired => folded("expired", "No answer in time"),
        InputState::Ended => folded("ended", "The turn ended before an answer"),
    }
}

/// "Answer within 1:42".
pub fn countdown_text(remaining_secs: i64) -> String {
    let secs = remaining_secs.max(0);
    format!("Answer within {}:{:02}", secs / 60, secs % 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use countersign_api::InputAction;
    use serde_json::json;

    const UTC: &dyn Fn(f64) -> i64 = &|_| 0;
    const ANY_PATTERN: PatternCheck<'static> = &|_, _| Some(true);

    /// The demo server's `file_note` question.
    fn file_note() -> Value {
        json!({
            "type": "object",
            "properties": {
                "matter": {"type": "string", "title": "Matter number",
                    "description": "As on the file, e.g. 2024-0117", "minLength": 1},
                "confidentiality": {"type": "string", "title": "Confidentiality",
                    "oneOf": [
                        {"const": "public", "title": "Public"},
                        {"const": "internal", "title": "Internal"},
                        {"const": "privileged", "title": "Privileged"}
                    ],
                    "default": "privileged"},
                "notify_team": {"type": "boolean", "title": "Tell the matter team", "default": false}
            },
            "required": ["matter"]
        })
    }

    fn parse(schema: Value) -> Form {
        Form::parse(&schema).expect("a form the card can draw")
    }

    fn one_field(property: Value) -> Field {
        let mut form = parse(json!({"type": "object", "properties": {"f": property}}));
        form.fields.remove(0)
    }

    #[test]
    fn a_calls_arguments_fill_the_form_only_when_it_says_them_exactly() {
        let form = parse(json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "minLength": 1},
                "body": {"type": "string"},
                "copies": {"type": "integer"},
                "urgent": {"type": "boolean"},
                "tags": {"type": "array", "items": {"enum": ["lease", "nda"]}}
            },
            "required": ["title"]
        }));
        let arguments = json!({"title": "Lease", "copies": 2, "urgent": true, "tags": ["nda"]});
        let answers = form
            .answers_for(&arguments, UTC)
            .expect("the form says them");
        let content = form.content(&answers, ANY_PATTERN, UTC).expect("valid");
        assert_eq!(
            Value::Object(content),
            arguments,
            "unchanged, they come back the same"
        );
        // Edited in the form, the content is the edited arguments.
        let mut edited = answers.clone();
        let title = form
            .fields
            .iter()
            .position(|f| f.name == "title")
            .expect("a field");
        edited[title] = Answer::Text("Lease (signed)".into());
        assert_eq!(
            form.content(&edited, ANY_PATTERN, UTC).expect("valid")["title"],
            json!("Lease (signed)")
        );
        for (why, arguments) in [
            (
                "an argument the schema does not name",
                json!({"title": "x", "extra": 1}),
            ),
            (
                "an empty optional text, which the form would drop",
                json!({"title": "x", "body": ""}),
            ),
            ("a number where a text goes", json!({"title": 5})),
            (
                "a value outside the choices",
                json!({"title": "x", "tags": ["other"]}),
            ),
            ("not an object", json!(["x"])),
        ] {
            assert_eq!(form.answers_for(&arguments, UTC), None, "{why}");
        }
    }

    #[test]
    fn the_demo_question_becomes_a_required_text_a_preselected_choice_and_a_checkbox() {
        let form = parse(file_note());
        let names: Vec<&str> = form.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names[0], "matter", "the required field comes first");
        let matter = &form.fields[0];
        assert_eq!(matter.label, "Matter number");
        assert_eq!(
            matter.help.as_deref(),
            Some("As on the file, e.g. 2024-0117")
        );
        assert!(matter.required);
        assert!(matches!(
            matter.kind,
            FieldKind::Text {
                format: TextFormat::Plain,
                ..
            }
        ));
        assert!(
            matter.hints().is_empty(),
            "minLength 1 says no more than required"
        );

        let confidentiality = form
            .fields
            .iter()
            .find(|f| f.name == "confidentiality")
            .expect("field");
        assert!(!confidentiality.required);
        assert!(confidentiality.as_radios());
        let FieldKind::Choice { options } = &confidentiality.kind else {
            panic!("a choice: {confidentiality:?}");
        };
        let labels: Vec<&str> = options.iter().map(|o| o.label.as_str()).collect();
        assert_eq!(labels, ["Public", "Internal", "Privileged"]);

        let notify = form
            .fields
            .iter()
            .find(|f| f.name == "notify_team")
            .expect("field");
        assert_eq!(notify.kind, FieldKind::Boolean);
        assert_eq!(notify.label, "Tell the matter team");

        let initial = form.initial_answers(UTC);
        let by_name = |name: &str| {
            let index = form
                .fields
                .iter()
                .position(|f| f.name == name)
                .expect("field");
            initial[index].clone()
        };
        assert_eq!(by_name("matter"), Answer::Text(String::new()));
        assert_eq!(
            by_name("confidentiality"),
            Answer::Text("privileged".into())
        );
        assert_eq!(by_name("notify_team"), Answer::Flag(false));
    }

    #[test]
    fn the_demo_form_sends_typed_content_and_refuses_an_empty_matter() {
        let form = parse(file_note());
        let mut answers = form.initial_answers(UTC);
        let problems = form
            .content(&answers, ANY_PATTERN, UTC)
            .expect_err("matter is required");
        assert_eq!(
            problems,
            vec![FieldProblem {
                index: 0,
                message: "Matter number is required.".into()
            }]
        );
        answers[0] = Answer::Text("2024-0117".into());
        let notify = form
            .fields
            .iter()
            .position(|f| f.name == "notify_team")
            .expect("field");
        answers[notify] = Answer::Flag(true);
        let content = form.content(&answers, ANY_PATTERN, UTC).expect("fits");
        assert_eq!(
            Value::Object(content),
            json!({"matter": "2024-0117", "confidentiality": "privileged", "notify_team": true})
        );
    }

    #[test]
    fn string_formats_pick_the_input_type_and_never_a_password_field() {
        let cases = [
            (None, "text"),
            (Some("email"), "email"),
            (Some("uri"), "url"),
            (Some("date"), "date"),
            (Some("date-time"), "datetime-local"),
            (Some("password"), "text"),
            (Some("hostname"), "text"),
        ];
        for (format, input_type) in cases {
            let mut property = json!({"type": "string"});
            if let Some(format) = format {
                property["format"] = json!(format);
            }
            let field = one_field(property);
            let FieldKind::Text { format: parsed, .. } = field.kind else {
                panic!("text: {field:?}");
            };
            assert_eq!(parsed.input_type(), input_type, "{format:?}");
        }
    }

    #[test]
    fn the_fields_the_server_judged_secret_are_named_by_their_labels_in_order() {
        let form = parse(json!({"type": "object", "properties": {
            "matter": {"type": "string", "title": "Matter number"},
            "apiKey": {"type": "string", "title": "API key"},
            "pin": {"type": "string"}
        }, "required": ["pin"]}));
        let secret = ["apiKey".to_owned(), "pin".to_owned(), "gone".to_owned()];
        assert_eq!(form.secret_labels(&secret), ["pin", "API key"]);
        assert!(form.secret_labels(&[]).is_empty());
    }

    #[test]
    fn every_kind_of_choice_reads_its_options_in_order() {
        let plain = one_field(json!({"type": "string", "enum": ["a", "b"]}));
        let named = one_field(
            json!({"type": "string", "enum": ["a", "b"], "enumNames": ["Alpha", "Beta"]}),
        );
        let titled = one_field(json!({"type": "string", "oneOf": [
            {"const": "a", "title": "Alpha"}, {"const": "b", "title": "Beta"}
        ]}));
        let untyped = one_field(json!({"enum": ["a", "b"]}));
        let options = |field: &Field| match &field.kind {
            FieldKind::Choice { options } | FieldKind::Choices { options, .. } => options
                .iter()
                .map(|o| format!("{}={}", o.value, o.label))
                .collect::<Vec<_>>(),
            other => panic!("a choice: {other:?}"),
        };
        assert_eq!(options(&plain), ["a=a", "b=b"]);
        assert_eq!(options(&named), ["a=Alpha", "b=Beta"]);
        assert_eq!(options(&titled), ["a=Alpha", "b=Beta"]);
        assert_eq!(options(&untyped), ["a=a", "b=b"]);

        let many = one_field(json!({"type": "array", "minItems": 1, "maxItems": 2,
            "items": {"anyOf": [{"const": "x", "title": "Ex"}, {"const": "y", "title": "Why"}, {"const": "z"}]},
            "default": ["y", "nope"]}));
        assert_eq!(options(&many), ["x=Ex", "y=Why", "z=z"]);
        assert_eq!(many.hints(), ["Pick 1 to 2."]);
        assert_eq!(
            many.initial(UTC),
            Answer::Picked(vec!["y".into()]),
            "unknown defaults dropped"
        );
        let many_enum =
            one_field(json!({"type": "array", "items": {"type": "string", "enum": ["x", "y"]}}));
        assert_eq!(options(&many_enum), ["x=x", "y=y"]);

        let long = one_field(json!({"enum": ["1", "2", "3", "4", "5", "6"]}));
        assert!(
            !long.as_radios(),
            "more than {MAX_RADIOS} options become a list box"
        );
    }

    #[test]
    fn multi_choice_answers_are_arrays_in_the_schemas_order_within_their_bounds() {
        let form = parse(json!({"type": "object", "properties": {
            "tags": {"type": "array", "title": "Tags", "minItems": 1, "maxItems": 2,
                "items": {"enum": ["x", "y", "z"]}}
        }}));
        let check = |picked: &[&str]| {
            let answers = [Answer::Picked(
                picked.iter().map(|s| (*s).to_owned()).collect(),
            )];
            form.content(&answers, ANY_PATTERN, UTC)
                .map(Value::Object)
                .map_err(|problems| problems[0].message.clone())
        };
        assert_eq!(check(&["z", "x"]), Ok(json!({"tags": ["x", "z"]})));
        assert_eq!(check(&[]), Err("Pick at least 1 for Tags.".into()));
        assert_eq!(
            check(&["x", "y", "z"]),
            Err("Pick at most 2 for Tags.".into())
        );

        let optional = parse(json!({"type": "object", "properties": {
            "tags": {"type": "array", "items": {"enum": ["x"]}}
        }}));
        let content = optional
            .content(&[Answer::Picked(Vec::new())], ANY_PATTERN, UTC)
            .expect("fits");
        assert!(content.is_empty(), "an empty optional list is left out");
    }

    #[test]
    fn numbers_are_sent_as_numbers_and_checked_against_their_range() {
        let form = parse(json!({"type": "object", "properties": {
            "count": {"type": "integer", "title": "Count", "minimum": 1, "maximum": 10},
            "ratio": {"type": "number", "title": "Ratio"}
        }, "required": ["count"]}));
        assert_eq!(form.fields[0].hints(), ["A whole number from 1 to 10."]);
        assert_eq!(form.fields[1].hints(), ["A number."]);
        let check = |count: &str, ratio: &str| {
            let answers = [Answer::Text(count.into()), Answer::Text(ratio.into())];
            form.content(&answers, ANY_PATTERN, UTC)
                .map(Value::Object)
                .map_err(|problems| problems.into_iter().map(|p| p.message).collect::<Vec<_>>())
        };
        assert_eq!(check("3", "0.5"), Ok(json!({"count": 3, "ratio": 0.5})));
        assert_eq!(
            check(" 7 ", ""),
            Ok(json!({"count": 7})),
            "an empty optional number is left out"
        );
        assert_eq!(check("", ""), Err(vec!["Count is required.".to_owned()]));
        assert_eq!(
            check("0", ""),
            Err(vec!["Count must be at least 1.".to_owned()])
        );
        assert_eq!(
            check("11", ""),
            Err(vec!["Count must be at most 10.".to_owned()])
        );
        assert_eq!(
            check("2.5", ""),
            Err(vec!["Count must be a whole number.".to_owned()])
        );
        assert_eq!(
            check("two", "lots"),
            Err(vec![
                "Count must be a number.".to_owned(),
                "Ratio must be a number.".to_owned()
            ]),
            "every field's problem at once"
        );
        assert_eq!(
            check("1e400", ""),
            Err(vec!["Count must be a number.".to_owned()])
        );
    }

    #[test]
    fn text_lengths_and_patterns_are_hints_and_checks() {
        let exact = one_field(json!({"type": "string", "minLength": 8, "maxLength": 8}));
        assert_eq!(exact.hints(), ["Exactly 8 characters."]);
        let form = parse(json!({"type": "object", "properties": {
            "code": {"type": "string", "title": "Code", "minLength": 2, "maxLength": 4, "pattern": "^[A-Z]+$"}
        }}));
        assert_eq!(
            form.fields[0].hints(),
            ["2 to 4 characters.", "Must match the pattern ^[A-Z]+$"]
        );
        let upper_only: PatternCheck<'_> = &|pattern, value| {
            assert_eq!(pattern, "^[A-Z]+$");
            Some(value.chars().all(|c| c.is_ascii_uppercase()))
        };
        let check = |text: &str, matcher: PatternCheck<'_>| {
            form.content(&[Answer::Text(text.into())], matcher, UTC)
                .map(Value::Object)
                .map_err(|problems| problems[0].message.clone())
        };
        assert_eq!(check("ABC", upper_only), Ok(json!({"code": "ABC"})));
        assert_eq!(
            check("A", upper_only),
            Err("Code needs at least 2 characters.".into())
        );
        assert_eq!(
            check("ABCDE", upper_only),
            Err("Code takes at most 4 characters.".into())
        );
        assert_eq!(
            check("ÉÉ", ANY_PATTERN),
            Ok(json!({"code": "ÉÉ"})),
            "lengths count characters"
        );
        assert_eq!(
            check("abc", upper_only),
            Err("Code does not match the pattern ^[A-Z]+$".into())
        );
        let cannot_tell: PatternCheck<'_> = &|_, _| None;
        assert_eq!(
            check("abc", cannot_tell),
            Ok(json!({"code": "abc"})),
            "the server checks then"
        );
        assert_eq!(
            check("   ", upper_only),
            Ok(json!({})),
            "blank optional text is left out"
        );

        assert!(pattern_is_checkable("^[0-9]{4}-[0-9]{4}$"));
        assert!(
            !pattern_is_checkable("^(a+)+$"),
            "nested quantifiers are left to the server"
        );
        assert!(!pattern_is_checkable("(x|y)*z"));
    }

    #[test]
    fn emails_addresses_and_dates_are_checked_by_shape() {
        let form = parse(json!({"type": "object", "properties": {
            "a_email": {"type": "string", "title": "Email", "format": "email"},
            "b_site": {"type": "string", "title": "Site", "format": "uri"},
            "c_day": {"type": "string", "title": "Day", "format": "date"},
            "d_at": {"type": "string", "title": "When", "format": "date-time"}
        }}));
        let check = |index: usize, text: &str| {
            let mut answers = vec![Answer::Text(String::new()); 4];
            answers[index] = Answer::Text(text.into());
            form.content(&answers, ANY_PATTERN, &|_| 120)
                .map(|content| content.values().next().cloned())
                .map_err(|problems| problems[0].message.clone())
        };
        assert_eq!(
            check(0, " ada@example.com "),
            Ok(Some(json!("ada@example.com")))
        );
        assert_eq!(
            check(0, "ada"),
            Err("Email must be an email address.".into())
        );
        assert_eq!(
            check(0, "a b@example.com"),
            Err("Email must be an email address.".into())
        );
        assert_eq!(
            check(1, "https://example.com/x"),
            Ok(Some(json!("https://example.com/x")))
        );
        assert!(check(1, "example.com").is_err());
        assert_eq!(check(2, "2026-05-01"), Ok(Some(json!("2026-05-01"))));
        assert_eq!(check(2, "2026-02-30"), Err("Day must be a date.".into()));
        assert_eq!(
            check(3, "2026-05-01T14:30"),
            Ok(Some(json!("2026-05-01T14:30:00+02:00")))
        );
        assert_eq!(
            check(3, "tomorrow"),
            Err("When must be a date and time.".into())
        );
        assert_eq!(
            form.fields[1].hints(),
            ["A full address, such as https://example.com/page."]
        );

        let when = one_field(
            json!({"type": "string", "format": "date-time", "default": "2026-05-01T12:30:00Z"}),
        );
        assert_eq!(
            when.initial(&|_| 120),
            Answer::Text("2026-05-01T14:30".into()),
            "shown in local time"
        );
    }

    #[test]
    fn defaults_that_do_not_fit_are_not_offered() {
        assert_eq!(
            one_field(json!({"type": "string", "default": "x"})).initial(UTC),
            Answer::Text("x".into())
        );
        assert_eq!(
            one_field(json!({"type": "number", "default": 2.5})).initial(UTC),
            Answer::Text("2.5".into())
        );
        assert_eq!(
            one_field(json!({"type": "boolean", "default": true})).initial(UTC),
            Answer::Flag(true)
        );
        assert_eq!(
            one_field(json!({"type": "boolean", "default": "yes"})).initial(UTC),
            Answer::Flag(false)
        );
        assert_eq!(
            one_field(json!({"enum": ["a"], "default": "b"})).initial(UTC),
            Answer::Text(String::new())
        );
    }

    #[test]
    fn what_the_card_cannot_draw_is_unsupported_with_a_reason() {
        let cases = [
            (json!("a string"), "not a form"),
            (json!({"type": "array"}), "not a form"),
            (
                json!({"type": "object", "properties": {"address": {"type": "object", "title": "Address"}}}),
                "\u{201c}Address\u{201d} is a group of nested fields",
            ),
            (
                json!({"type": "object", "properties": {"rows": {"type": "array", "items": {"type": "object"}}}}),
                "\u{201c}rows\u{201d} is a list",
            ),
            (
                json!({"type": "object", "properties": {"x": {"type": "tensor"}}}),
                "does not know",
            ),
            (
                json!({"type": "object", "properties": {"x": {}}}),
                "no known kind",
            ),
            (
                json!({"type": "object", "properties": {"x": {"enum": [1, 2]}}}),
                "cannot read",
            ),
            (
                json!({"type": "object", "properties": {"x": {"type": "integer", "enum": [1, 2]}}}),
                "a choice of numbers",
            ),
            (
                json!({"type": "object", "properties": {}, "required": ["ghost"]}),
                "\u{201c}ghost\u{201d} it does not describe",
            ),
        ];
        for (schema, why) in cases {
            let error = Form::parse(&schema).expect_err("unsupported");
            assert!(error.why.contains(why), "{schema}: {}", error.why);
        }
        let empty = parse(json!({"type": "object"}));
        assert!(
            empty.fields.is_empty(),
            "a form with no fields is still a form (accept or not)"
        );
        let nullable = one_field(json!({"type": ["string", "null"]}));
        assert!(matches!(nullable.kind, FieldKind::Text { .. }));
    }

    #[test]
    fn a_url_shows_its_host_apart_and_agrees_with_the_servers() {
        let plan = UrlPlan::parse(
            "http://127.0.0.1:57123/confirm-identity?request=ab12",
            Some("127.0.0.1:57123"),
        );
        assert_eq!(plan.before_host, "http://");
        assert_eq!(plan.host, "127.0.0.1:57123");
        assert_eq!(plan.after_host, "/confirm-identity?request=ab12");
        assert_eq!(plan.button_host, "127.0.0.1:57123");
        assert_eq!(plan.warnings, [UrlWarning::NotHttps]);
        assert!(plan.openable);

        let https = UrlPlan::parse(
            "https://Login.Example.com:443/a#b",
            Some("login.example.com"),
        );
        assert_eq!(https.host, "Login.Example.com:443", "shown as written");
        assert!(https.warnings.is_empty(), "{:?}", https.warnings);
        assert!(https.openable);
        assert_eq!(
            format!("{}{}{}", https.before_host, https.host, https.after_host),
            "https://Login.Example.com:443/a#b"
        );

        let bare = UrlPlan::parse("https://example.com", Some("example.com"));
        assert_eq!(
            (bare.host.as_str(), bare.after_host.as_str()),
            ("example.com", "")
        );
        let v6 = UrlPlan::parse("https://[::1]:8443/x", Some("[::1]:8443"));
        assert!(v6.openable && v6.host == "[::1]:8443");
    }

    #[test]
    fn punycode_userinfo_and_a_disagreeing_host_are_flagged() {
        let puny = UrlPlan::parse("https://xn--pypal-4ve.com/login", Some("xn--pypal-4ve.com"));
        assert_eq!(puny.warnings, [UrlWarning::Punycode]);
        assert!(puny.openable, "flagged, still the user's to open");
        assert!(UrlWarning::Punycode.text().contains("punycode (xn--…)"));
        let deep = UrlPlan::parse(
            "https://login.XN--80ak6aa92e.com/",
            Some("login.xn--80ak6aa92e.com"),
        );
        assert!(
            deep.warnings.contains(&UrlWarning::Punycode),
            "any label, any case"
        );

        let user = UrlPlan::parse("https://bank.example@evil.example/x", Some("evil.example"));
        assert_eq!(user.before_host, "https://bank.example@");
        assert_eq!(user.host, "evil.example");
        assert_eq!(user.warnings, [UrlWarning::UserInfo]);

        let lying = UrlPlan::parse("https://evil.example/", Some("bank.example"));
        assert!(!lying.openable);
        assert_eq!(
            lying.warnings,
            [UrlWarning::HostMismatch {
                server: "bank.example".into(),
                url: "evil.example".into()
            }]
        );

        let unicode = UrlPlan::parse("https://pаypal.com/", Some("xn--pypal-4ve.com"));
        assert!(!unicode.openable);
        assert!(unicode.warnings.contains(&UrlWarning::NonAsciiHost));
    }

    #[test]
    fn only_plain_web_addresses_can_be_opened() {
        for url in [
            "javascript:alert(1)",
            "data:text/html,hi",
            "file:///etc/passwd",
            "https:/\\evil.example/",
            "https://evil.example\\@good.example/",
            "https://good.example/\tx",
            "https:///path",
            "https://host:99999/",
            "no scheme at all",
        ] {
            let plan = UrlPlan::parse(url, None);
            assert!(!plan.openable, "{url}");
            assert_eq!(plan.warnings, [UrlWarning::NotWeb], "{url}");
        }
    }

    #[test]
    fn the_card_folds_to_one_line_once_answered() {
        use InputState as S;
        let cases = [
            (
                S::Pending,
                Some(30),
                "pending",
                "Waiting for your answer",
                true,
                false,
            ),
            (
                S::Pending,
                None,
                "pending",
                "Waiting for your answer",
                true,
                false,
            ),
            (
                S::Pending,
                Some(0),
                "expired",
                "No answer in time",
                false,
                true,
            ),
            (
                S::Sending(InputAction::Accept),
                Some(30),
                "sending",
                "Sending your answer…",
                false,
                false,
            ),
            (
                S::Sending(InputAction::Decline),
                Some(30),
                "sending",
                "Declining…",
                false,
                false,
            ),
            (
                S::Sending(InputAction::Cancel),
                Some(30),
                "sending",
                "Cancelling…",
                false,
                false,
            ),
            (
                S::AnsweredElsewhere,
                Some(30),
                "answered-elsewhere",
                "Already answered elsewhere — updating…",
                false,
                false,
            ),
            (S::Accepted, None, "accepted", "You answered", false, true),
            (
                S::Declined,
                Some(30),
                "declined",
                "You declined",
                false,
                true,
            ),
            (S::Cancelled, None, "cancelled", "Cancelled", false, true),
            (
                S::Expired,
                Some(30),
                "expired",
                "No answer in time",
                false,
                true,
            ),
            (
                S::Ended,
                None,
                "ended",
                "The turn ended before an answer",
                false,
                true,
            ),
        ];
        for (state, remaining, key, text, enabled, folded) in cases {
            let status = card_status(&state, remaining);
            let why = format!("{state:?} / {remaining:?}");
            assert_eq!(status.key, key, "{why}");
            assert_eq!(status.text, text, "{why}");
            assert_eq!(status.buttons_enabled, enabled, "{why}");
            assert_eq!(status.folded, folded, "{why}");
        }
        assert_eq!(countdown_text(102), "Answer within 1:42");
        assert_eq!(countdown_text(-3), "Answer within 0:00");
    }
}

#[cfg(test)]
mod answered_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answered_form_lists_each_answer_by_its_label_secrets_as_masked() {
        let form = Form::parse(&json!({"type": "object", "properties": {
            "matter": {"type": "string", "title": "Matter number"},
            "urgent": {"type": "boolean", "title": "Urgent"},
            "key": {"type": "string", "title": "Docketing portal API key"},
            "unused": {"type": "string"}
        }, "required": ["matter"]}))
        .expect("a form");
        let lines = form.answered_lines(&json!({
            "matter": "2026-114", "urgent": false, "key": "\u{2022}\u{2022}\u{2022}\u{2022}\u{2022}\u{2022}"
        }));
        // The form's order: required first, then as the object came.
        let order: Vec<&str> = form.fields.iter().map(|f| f.label.as_str()).collect();
        let expected: Vec<(String, String)> = order
            .iter()
            .filter_map(|label| match *label {
                "Matter number" => Some(("Matter number", "2026-114")),
                "Urgent" => Some(("Urgent", "No")),
                "Docketing portal API key" => Some((
                    "Docketing portal API key",
                    "\u{2022}\u{2022}\u{2022}\u{2022}\u{2022}\u{2022}",
                )),
                _ => None,
            })
            .map(|(l, v)| (l.to_owned(), v.to_owned()))
            .collect();
        assert_eq!(order[0], "Matter number");
        assert_eq!(lines, expected, "unanswered fields are left out");
        assert_eq!(lines.len(), 3);
        assert!(form.answered_lines(&json!("not an object")).is_empty());
    }
}
