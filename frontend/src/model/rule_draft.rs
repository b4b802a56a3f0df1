//! A rule drafted from an approval card (DESIGN §5 "Rules"): the
//! conditions the call's own arguments suggest ("`to` ends with
//! @firm.example"), and the [`RuleRequest`] the user's choices make. The
//! server checks the rule and writes its description; nothing here
//! decides a call.

use countersign_api::vocab::{ConditionOp, DestinationKind};
use countersign_api::{Destination, RuleCondition, RuleEffect, RuleRequest};
use serde_json::Value;

/// Argument values longer than this (a message's body) offer no
/// condition: a rule on a body's exact text decides nothing useful.
const OFFER_AT_MOST_CHARS: usize = 200;

/// What kind of value an argument holds, which decides the tests offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string.
    Text,
    /// A number.
    Number,
    /// `true` or `false`.
    Flag,
}

impl Kind {
    /// The tests a condition on such a value may use, the suggested first.
    pub fn ops(self) -> &'static [ConditionOp] {
        match self {
            Self::Text => &[
                ConditionOp::EndsWith,
                ConditionOp::Equals,
                ConditionOp::Glob,
            ],
            Self::Number => &[
                ConditionOp::AtMost,
                ConditionOp::AtLeast,
                ConditionOp::Equals,
            ],
            Self::Flag => &[ConditionOp::Equals],
        }
    }
}

/// A condition the card offers on one argument, as first suggested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// The argument's name.
    pub argument: String,
    /// Its value's kind.
    pub kind: Kind,
    /// The suggested test.
    pub op: ConditionOp,
    /// The suggested value, as the user edits it.
    pub value: String,
}

/// The test in words, as the form's choices read.
pub fn op_words(op: ConditionOp) -> &'static str {
    match op {
        ConditionOp::EndsWith => "ends with",
        ConditionOp::Glob => "matches the pattern",
        ConditionOp::AtMost => "is at most",
        ConditionOp::AtLeast => "is at least",
        ConditionOp::OneOf => "is one of",
        ConditionOp::DestinationIn => "every destination is in",
        _ => "is",
    }
}

/// One offer per top-level argument holding a string (of at most
/// [`OFFER_AT_MOST_CHARS`]), a number or a boolean, in the arguments'
/// order. An e-mail address suggests "ends with @its-domain"; a number
/// "is at most" itself; anything else "is" itself.
pub fn offers(arguments: &Value) -> Vec<Offer> {
    let Some(fields) = arguments.as_object() else {
        return Vec::new();
    };
    fields
        .iter()
        .filter_map(|(argument, value)| {
            let (kind, op, value) = match value {
                Value::String(text) if text.chars().count() <= OFFER_AT_MOST_CHARS => {
                    match email_domain(text) {
                        Some(domain) => (Kind::Text, ConditionOp::EndsWith, format!("@{domain}")),
                        None => (Kind::Text, ConditionOp::Equals, text.clone()),
                    }
                }
                Value::Number(n) => (Kind::Number, ConditionOp::AtMost, n.to_string()),
                Value::Bool(b) => (Kind::Flag, ConditionOp::Equals, b.to_string()),
                _ => return None,
            };
            Some(Offer {
                argument: argument.clone(),
                kind,
                op,
                value,
            })
        })
        .collect()
}

/// The domain of a plain e-mail address (`someone@firm.example`).
fn email_domain(text: &str) -> Option<&str> {
    let (local, domain) = text.trim().rsplit_once('@')?;
    (!local.is_empty() && domain.contains('.') && !domain.contains(char::is_whitespace))
        .then_some(domain)
}

/// The domains and hosts a "destination in" condition would list for the
/// card's destinations (an address's domain, a URL's host), each once;
/// empty when the call names a destination of neither kind.
pub fn destination_domains(destinations: &[Destination]) -> Vec<String> {
    let mut domains: Vec<String> = Vec::new();
    for destination in destinations {
        let domain = match destination.kind {
            DestinationKind::Email => email_domain(&destination.ascii).map(str::to_owned),
            DestinationKind::Host => Some(destination.ascii.clone()),
            _ => None,
        };
        match domain {
            Some(domain) if !domains.contains(&domain) => domains.push(domain),
            Some(_) => {}
            None => return Vec::new(),
        }
    }
    domains
}

/// The connector's host, from the card's destination (`host:port`,
/// `[::1]:port`): a rule names a host without its port.
pub fn connector_host(destination: &str) -> String {
    if let Some(rest) = destination.strip_prefix('[') {
        return rest
            .split_once(']')
            .map_or_else(|| destination.to_owned(), |(ip, _)| format!("[{ip}]"));
    }
    destination
        .split_once(':')
        .map_or(destination, |(host, _)| host)
        .to_owned()
}

/// A condition as the user set it: `op` on `argument`, with the value as
/// typed. A number must read as one; a flag is `true` or `false`.
pub fn condition(
    argument: &str,
    kind: Kind,
    op: ConditionOp,
    typed: &str,
) -> Result<RuleCondition, String> {
    let typed = typed.trim();
    let value = match kind {
        Kind::Text if typed.is_empty() => {
            return Err(format!("Write the text `{argument}` is tested against."));
        }
        Kind::Text => Value::String(typed.to_owned()),
        Kind::Number => typed
            .parse::<serde_json::Number>()
            .map(Value::Number)
            .map_err(|_| format!("`{argument}` is tested against a number: write one (5000)."))?,
        Kind::Flag => match typed {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => return Err(format!("`{argument}` is true or false.")),
        },
    };
    Ok(RuleCondition {
        argument: Some(argument.to_owned()),
        op,
        value,
    })
}

/// "Every destination is in" these domains and hosts.
pub fn destinations_condition(domains: &[String]) -> RuleCondition {
    RuleCondition {
        argument: None,
        op: ConditionOp::DestinationIn,
        value: Value::Array(domains.iter().cloned().map(Value::String).collect()),
    }
}

/// The request for a rule on `tool` of the connector at `destination`.
pub fn request(
    destination: &str,
    tool: &str,
    effect: RuleEffect,
    conditions: Vec<RuleCondition>,
) -> RuleRequest {
    RuleRequest {
        connector_host: connector_host(destination),
        tool: tool.to_owned(),
        conditions,
        effect,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_address_suggests_its_domain_a_number_at_most_itself_and_a_body_nothing() {
        let arguments = json!({
            "amount": 120,
            "body": "x".repeat(201),
            "cc": ["a@firm.example"],
            "subject": "Lease",
            "to": "counsel@firm.example",
            "urgent": false,
        });
        let got: Vec<_> = offers(&arguments)
            .into_iter()
            .map(|o| (o.argument, o.kind, o.op, o.value))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "amount".into(),
                    Kind::Number,
                    ConditionOp::AtMost,
                    "120".into()
                ),
                (
                    "subject".into(),
                    Kind::Text,
                    ConditionOp::Equals,
                    "Lease".into()
                ),
                (
                    "to".into(),
                    Kind::Text,
                    ConditionOp::EndsWith,
                    "@firm.example".into()
                ),
                (
                    "urgent".into(),
                    Kind::Flag,
                    ConditionOp::Equals,
                    "false".into()
                ),
            ]
        );
        assert!(offers(&json!([1, 2])).is_empty());
        for op in [Kind::Text, Kind::Number, Kind::Flag].map(|k| k.ops()[0]) {
            assert!(!op_words(op).is_empty());
        }
    }

    #[test]
    fn typed_values_become_json_of_their_kind_or_a_sentence_saying_what_is_wrong() {
        let c = condition("amount", Kind::Number, ConditionOp::AtMost, " 5000 ").expect("a number");
        assert_eq!(c.value, json!(5000));
        assert_eq!(c.argument.as_deref(), Some("amount"));
        assert!(
            condition("amount", Kind::Number, ConditionOp::AtMost, "lots")
                .is_err_and(|e| e.contains("a number"))
        );
        assert_eq!(
            condition("urgent", Kind::Flag, ConditionOp::Equals, "true").map(|c| c.value),
            Ok(json!(true))
        );
        assert!(condition("urgent", Kind::Flag, ConditionOp::Equals, "yes").is_err());
        assert!(condition("to", Kind::Text, ConditionOp::EndsWith, "  ").is_err());
        assert_eq!(
            condition("to", Kind::Text, ConditionOp::EndsWith, "@firm.example").map(|c| c.value),
            Ok(json!("@firm.example"))
        );
    }

    #[test]
    fn the_host_loses_its_port_and_destinations_become_their_domains() {
        assert_eq!(connector_host("127.0.0.1:4600"), "127.0.0.1");
        assert_eq!(connector_host("[::1]:4600"), "[::1]");
        assert_eq!(connector_host("mail.example.com"), "mail.example.com");
        let destination = |kind, ascii: &str| Destination {
            kind,
            ascii: ascii.into(),
            unicode: None,
            path: "/to".into(),
        };
        assert_eq!(
            destination_domains(&[
                destination(DestinationKind::Email, "a@firm.example"),
                destination(DestinationKind::Email, "b@firm.example"),
                destination(DestinationKind::Host, "docs.firm.example"),
            ]),
            vec!["firm.example".to_owned(), "docs.firm.example".to_owned()]
        );
        assert!(
            destination_domains(&[destination(DestinationKind::Named, "#general")]).is_empty(),
            "a destination of no domain makes no list"
        );
        let rule = request(
            "127.0.0.1:4600",
            "send_email",
            RuleEffect::Allow,
            vec![destinations_condition(&["firm.example".into()])],
        );
        assert_eq!(rule.connector_host, "127.0.0.1");
        assert_eq!(rule.conditions[0].value, json!(["firm.example"]));
    }
}
