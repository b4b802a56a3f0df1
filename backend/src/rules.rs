//! Rules with conditions (DESIGN §5 "Rules"): allow, ask or deny calls of
//! a connector host's tools, optionally only when their argument values
//! meet conditions. A user's rules cover their own calls; an
//! administrator's cover everyone's.
//!
//! **Which rule decides** ([`deciding`]): of the rules that apply to a
//! call, an administrator's before a user's, and within each, deny before
//! ask before allow (the oldest first among equals). The gate
//! (`crate::gate`) takes the winner as one more stored fact: deny refuses
//! the call without asking anyone, ask asks whatever grant exists, allow
//! lets it run unseen — never a flagged call, nor one of a tool changed
//! since review. A user's allow rule is suspended while the admin policy
//! forbids "Always allow": it is a standing permission like one.
//!
//! **Conditions lean the safe way.** Every condition must hold. For an
//! *allow* rule a condition holds only when **every** value it tests
//! passes (each item of an array, which must not be empty; every
//! destination of the call, which must have one); for *ask* and *deny*,
//! when **any** does. A missing argument passes no test. So a second
//! recipient added to `to` cannot ride on an allow rule written for the
//! first, and cannot slip past a deny rule either. `ends_with` and `glob`
//! in an allow rule never pass text with spaces, list punctuation
//! (`,` `;` `<` `>` quotes) or control, invisible or bidi characters:
//! `x@evil.example, y@firm.example` ends with `@firm.example` but names
//! two addresses. Numbers compare as JSON numbers or as strings that are
//! plain decimal numbers (the server reads `"5000"` as 5000 too). A host
//! of a deny or ask rule also matches the addresses the connector's name
//! resolved to (as `always_ask_tools` does); an allow rule matches the
//! name only: another name for the same machine earned no trust.

use crate::{
    audit, db,
    ids::UserId,
    policy::{destination_in, fold_tool, normal_host, parse_destination},
};
use countersign_api::{
    ConditionOp, Destination, RuleCondition, RuleEffect, RuleRef, RuleRequest, RuleScope,
    characters::{is_bidi_control, is_invisible},
};
use glob::{MatchOptions, Pattern};
use serde_json::Value;
use uuid::Uuid;

/// At most this many conditions in one rule.
pub const MAX_CONDITIONS: usize = 20;
/// At most this many entries in a list (`one_of`, `destination_in`).
pub const MAX_LIST: usize = 200;
/// At most this many characters in a host, pattern, argument or text.
pub const MAX_CHARS: usize = 300;
/// At most this many rules per user, and as many admin rules.
pub const MAX_RULES: i64 = 500;

/// A rule, as the gate reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub id: Uuid,
    pub scope: RuleScope,
    /// `*`, `*.domain`, or a normalised host.
    pub connector_host: String,
    /// A glob over the tool's name (folded when compared).
    pub tool: String,
    pub conditions: Vec<RuleCondition>,
    pub effect: RuleEffect,
}

/// One call, as rules see it.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The connector's host, normalised (`policy::host_of`).
    pub host: Option<&'a str>,
    /// The addresses its name resolved to, as normalised hosts
    /// (`policy::address_text`); may be empty.
    pub addresses: &'a [String],
    /// The tool's name.
    pub tool: &'a str,
    /// The call's arguments.
    pub arguments: &'a Value,
    /// Where it sends data, as the card lists them.
    pub destinations: &'a [Destination],
}

/// Why a rule was refused, in words for the person writing it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

const MATCH: MatchOptions = MatchOptions {
    case_sensitive: false,
    require_literal_separator: false,
    require_literal_leading_dot: false,
};

/// `request` as stored: host normalised, pattern and conditions checked.
pub fn parse(request: &RuleRequest) -> Result<(String, String, Vec<RuleCondition>), Invalid> {
    let host = parse_host(&request.connector_host)?;
    let tool = request.tool.trim();
    if tool.is_empty() || tool.chars().count() > MAX_CHARS {
        return Err(Invalid(format!(
            "The tool must be a name or a pattern of 1 to {MAX_CHARS} characters."
        )));
    }
    if tool
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || is_invisible(c))
    {
        return Err(Invalid(
            "The tool pattern has spaces, control or invisible characters, which no listed tool \
             name has."
                .into(),
        ));
    }
    if Pattern::new(&fold_tool(tool)).is_err() {
        return Err(Invalid(format!("\"{tool}\" is not a valid pattern.")));
    }
    if request.effect == RuleEffect::Unknown {
        return Err(Invalid("The effect must be allow, ask or deny.".into()));
    }
    if request.conditions.len() > MAX_CONDITIONS {
        return Err(Invalid(format!(
            "A rule has at most {MAX_CONDITIONS} conditions."
        )));
    }
    let conditions = request
        .conditions
        .iter()
        .map(parse_condition)
        .collect::<Result<Vec<_>, _>>()?;
    Ok((host, tool.to_owned(), conditions))
}

fn parse_host(raw: &str) -> Result<String, Invalid> {
    let raw = raw.trim();
    if raw == "*" {
        return Ok(raw.to_owned());
    }
    let invalid = || {
        Invalid(format!(
            "\"{raw}\" is not a connector host (write mcp.example.com, *.example.com or *, \
             without https:// or a port)."
        ))
    };
    let (wild, host) = match raw.strip_prefix("*.") {
        Some(domain) => (true, domain),
        None => (false, raw),
    };
    if host.contains(['*', '/', '?']) {
        return Err(invalid());
    }
    let host = normal_host(host).ok_or_else(invalid)?;
    Ok(if wild { format!("*.{host}") } else { host })
}

fn parse_condition(c: &RuleCondition) -> Result<RuleCondition, Invalid> {
    let argument = match (&c.argument, c.op) {
        (_, ConditionOp::DestinationIn) => None,
        (None, _) => {
            return Err(Invalid(
                "Each condition names the argument it tests.".into(),
            ));
        }
        (Some(a), _) => {
            let a = a.trim();
            if a.is_empty() || a.chars().count() > MAX_CHARS || a.chars().any(char::is_control) {
                return Err(Invalid(format!(
                    "An argument name has 1 to {MAX_CHARS} characters."
                )));
            }
            Some(a.to_owned())
        }
    };
    let text = |what: &str| -> Result<String, Invalid> {
        match &c.value {
            Value::String(s)
                if !s.is_empty()
                    && s.chars().count() <= MAX_CHARS
                    && !s.chars().any(char::is_control) =>
            {
                Ok(s.clone())
            }
            _ => Err(Invalid(format!(
                "\"{what}\" needs a text of 1 to {MAX_CHARS} characters."
            ))),
        }
    };
    let list = |what: &str| -> Result<&Vec<Value>, Invalid> {
        match &c.value {
            Value::Array(items) if !items.is_empty() && items.len() <= MAX_LIST => Ok(items),
            _ => Err(Invalid(format!(
                "\"{what}\" needs a list of 1 to {MAX_LIST} values."
            ))),
        }
    };
    let value = match c.op {
        ConditionOp::Equals => {
            bounded_value(&c.value)?;
            c.value.clone()
        }
        ConditionOp::OneOf => {
            let items = list("one of")?;
            items.iter().try_for_each(bounded_value)?;
            c.value.clone()
        }
        ConditionOp::Glob => {
            let pattern = text("matches")?;
            Pattern::new(&pattern)
                .map_err(|_| Invalid(format!("\"{pattern}\" is not a valid pattern.")))?;
            Value::String(pattern)
        }
        ConditionOp::EndsWith => Value::String(text("ends with")?),
        ConditionOp::AtMost | ConditionOp::AtLeast => {
            if number(&c.value).is_none() {
                return Err(Invalid(
                    "\"at most\" and \"at least\" need a number.".into(),
                ));
            }
            c.value.clone()
        }
        ConditionOp::DestinationIn => {
            let items = list("destination in")?;
            let mut out: Vec<Value> = Vec::new();
            for item in items {
                let entry = item.as_str().and_then(parse_destination).ok_or_else(|| {
                    Invalid(format!(
                        "{item} is not a domain, host or e-mail address (write firm.example, \
                             10.0.0.7 or partner@firm.example)."
                    ))
                })?;
                if !out.iter().any(|e| e.as_str() == Some(entry.as_str())) {
                    out.push(Value::String(entry));
                }
            }
            Value::Array(out)
        }
        ConditionOp::Unknown => {
            return Err(Invalid(
                "A condition's op must be equals, one_of, glob, ends_with, at_most, at_least or \
                 destination_in."
                    .into(),
            ));
        }
    };
    Ok(RuleCondition {
        argument,
        op: c.op,
        value,
    })
}

fn bounded_value(value: &Value) -> Result<(), Invalid> {
    let size = serde_json::to_vec(value).map_or(usize::MAX, |v| v.len());
    if size > 4 * MAX_CHARS {
        return Err(Invalid(format!(
            "A value to compare with is at most {} bytes of JSON.",
            4 * MAX_CHARS
        )));
    }
    Ok(())
}

/// How a condition's values combine: every one must pass (allow rules)
/// or any one (ask and deny rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Every,
    Any,
}

/// A number, or a string that is a plain decimal number.
fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => {
            let s = s.trim();
            let plain = !s.is_empty()
                && s.chars()
                    .enumerate()
                    .all(|(i, c)| c.is_ascii_digit() || c == '.' || (i == 0 && c == '-'))
                && s.chars().filter(|c| *c == '.').count() <= 1
                && s.chars().any(|c| c.is_ascii_digit());
            plain.then(|| s.parse::<f64>().ok()).flatten()
        }
        _ => None,
    }
    .filter(|n| n.is_finite())
}

/// JSON equality, numbers by value (`100` is `100.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// One token of text: what `ends_with` and `glob` pass in an allow rule.
fn one_token(text: &str) -> bool {
    !text.chars().any(|c| {
        c.is_whitespace()
            || c.is_control()
            || is_invisible(c)
            || is_bidi_control(c)
            || matches!(c, ',' | ';' | '<' | '>' | '"' | '\'' | '`')
    })
}

/// Whether `value` passes `op` against `expected` (one item, not a list).
fn passes(op: ConditionOp, expected: &Value, value: &Value, mode: Mode) -> bool {
    let text = |v: &Value| {
        v.as_str()
            .filter(|t| mode == Mode::Any || one_token(t))
            .map(str::to_lowercase)
    };
    match op {
        ConditionOp::Equals => same(value, expected),
        ConditionOp::OneOf => expected
            .as_array()
            .is_some_and(|items| items.iter().any(|e| same(value, e))),
        ConditionOp::Glob => match (text(value), expected.as_str()) {
            (Some(t), Some(p)) => Pattern::new(p).is_ok_and(|p| p.matches_with(&t, MATCH)),
            _ => false,
        },
        ConditionOp::EndsWith => match (text(value), expected.as_str()) {
            (Some(t), Some(end)) => t.ends_with(&end.to_lowercase()),
            _ => false,
        },
        ConditionOp::AtMost => {
            matches!((number(value), number(expected)), (Some(v), Some(e)) if v <= e)
        }
        ConditionOp::AtLeast => {
            matches!((number(value), number(expected)), (Some(v), Some(e)) if v >= e)
        }
        ConditionOp::DestinationIn | ConditionOp::Unknown => false,
    }
}

/// Whether condition `c` holds for `call` in `mode`.
fn holds(c: &RuleCondition, call: &Call<'_>, mode: Mode) -> bool {
    if c.op == ConditionOp::DestinationIn {
        let entries: Vec<String> = c
            .value
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|e| e.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let inside = |d: &Destination| destination_in(d, &entries);
        return match mode {
            Mode::Every => !call.destinations.is_empty() && call.destinations.iter().all(inside),
            Mode::Any => call.destinations.iter().any(inside),
        };
    }
    let Some(argument) = c.argument.as_deref() else {
        return false;
    };
    let found = if argument.starts_with('/') {
        call.arguments.pointer(argument)
    } else {
        call.arguments.get(argument)
    };
    let Some(found) = found else {
        return false;
    };
    // The whole value first (`equals` a list), then item by item.
    if matches!(c.op, ConditionOp::Equals | ConditionOp::OneOf)
        && passes(c.op, &c.value, found, mode)
    {
        return true;
    }
    let items: Vec<&Value> = match found {
        Value::Array(items) => items.iter().collect(),
        one => vec![one],
    };
    match mode {
        Mode::Every => !items.is_empty() && items.iter().all(|v| passes(c.op, &c.value, v, mode)),
        Mode::Any => items.iter().any(|v| passes(c.op, &c.value, v, mode)),
    }
}

/// Whether `pattern` (`*`, `*.domain`, a host) names a connector at
/// `host` or, for rules that narrow, one of its `addresses`.
fn host_matches(pattern: &str, call: &Call<'_>, with_addresses: bool) -> bool {
    if pattern == "*" {
        return true;
    }
    let names = call.host.into_iter().chain(
        call.addresses
            .iter()
            .map(String::as_str)
            .filter(|_| with_addresses),
    );
    for name in names {
        let hit = match pattern.strip_prefix("*.") {
            Some(domain) => name
                .strip_suffix(domain)
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
            None => name == pattern,
        };
        if hit {
            return true;
        }
    }
    false
}

/// Whether any of `rules` could match a connector by the addresses its
/// name resolves to (a narrowing rule naming a host), so that they are
/// worth resolving for a call.
pub fn match_addresses(rules: &[Rule]) -> bool {
    rules
        .iter()
        .any(|r| r.effect != RuleEffect::Allow && r.connector_host != "*")
}

/// Whether `rule` applies to `call`.
pub fn applies(rule: &Rule, call: &Call<'_>) -> bool {
    let mode = if rule.effect == RuleEffect::Allow {
        Mode::Every
    } else {
        Mode::Any
    };
    let tool = Pattern::new(&fold_tool(&rule.tool));
    // A pattern that no longer parses: an allow never applies, a narrowing
    // rule always does (closed, never open).
    let tool_matches = match tool {
        Ok(p) => p.matches_with(&fold_tool(call.tool), MATCH),
        Err(_) => mode == Mode::Any,
    };
    host_matches(&rule.connector_host, call, mode == Mode::Any)
        && tool_matches
        && rule.conditions.iter().all(|c| holds(c, call, mode))
}

/// The rule that decides `call`, if any applies: admin rules before user
/// rules, deny before ask before allow, the earliest in `rules` among
/// equals. With `suspend_user_allow` (the policy forbids "Always allow")
/// a user's allow rule does not count.
pub fn deciding<'a>(
    rules: &'a [Rule],
    call: &Call<'_>,
    suspend_user_allow: bool,
) -> Option<&'a Rule> {
    let rank = |r: &Rule| {
        let scope = u8::from(r.scope != RuleScope::Admin);
        let effect = match r.effect {
            RuleEffect::Deny => 0,
            RuleEffect::Ask => 1,
            _ => 2,
        };
        (scope, effect)
    };
    rules
        .iter()
        .filter(|r| {
            !(suspend_user_allow && r.scope == RuleScope::User && r.effect == RuleEffect::Allow)
        })
        .filter(|r| applies(r, call))
        .min_by_key(|r| rank(r))
}

/// The rule in words, as the card and Activity name it.
pub fn describe(rule: &Rule) -> String {
    let effect = match rule.effect {
        RuleEffect::Allow => "Allow",
        RuleEffect::Ask => "Always ask for",
        _ => "Deny",
    };
    let host = match rule.connector_host.as_str() {
        "*" => "any connector".to_owned(),
        h => h.strip_prefix("*.").map_or_else(
            || h.to_owned(),
            |domain| format!("any connector under {domain}"),
        ),
    };
    let tool = if rule.tool == "*" {
        "every tool".to_owned()
    } else {
        rule.tool.clone()
    };
    let every = rule.effect == RuleEffect::Allow;
    let mut out = format!("{effect} {host}: {tool}");
    for (i, c) in rule.conditions.iter().enumerate() {
        out.push_str(if i == 0 { " when " } else { " and " });
        out.push_str(&condition_words(c, every));
    }
    out
}

fn condition_words(c: &RuleCondition, every: bool) -> String {
    let shown = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let list = |v: &Value| {
        v.as_array()
            .map(|items| items.iter().map(shown).collect::<Vec<_>>().join(", "))
            .unwrap_or_default()
    };
    let argument = c.argument.clone().unwrap_or_default();
    match c.op {
        ConditionOp::DestinationIn if every => {
            format!("every destination is in {}", list(&c.value))
        }
        ConditionOp::DestinationIn => format!("a destination is in {}", list(&c.value)),
        op => {
            let test = match op {
                ConditionOp::Equals => format!("is {}", shown(&c.value)),
                ConditionOp::OneOf => format!("is one of {}", list(&c.value)),
                ConditionOp::Glob => format!("matches {}", shown(&c.value)),
                ConditionOp::EndsWith => format!("ends with {}", shown(&c.value)),
                ConditionOp::AtMost => format!("is at most {}", shown(&c.value)),
                ConditionOp::AtLeast => format!("is at least {}", shown(&c.value)),
                _ => "is unknown".to_owned(),
            };
            format!("{argument} {test}")
        }
    }
}

/// The rule, as a card, a call's event and Activity name it.
pub fn reference(rule: &Rule) -> RuleRef {
    RuleRef {
        id: rule.id.to_string(),
        scope: rule.scope,
        effect: rule.effect,
        description: describe(rule),
    }
}

/// Why a rule could not be made or removed.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    /// The rule as written is refused; the message says why.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// Too many rules already.
    #[error("There are {MAX_RULES} rules already; remove one first.")]
    TooMany,
    /// No such rule (of the caller, or of the administrators).
    #[error("No such rule.")]
    NotFound,
    /// Database failure.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// A stored row.
#[derive(Debug, sqlx::FromRow)]
struct Row {
    id: Uuid,
    user_id: Option<Uuid>,
    connector_host: String,
    tool_pattern: String,
    conditions: Value,
    effect: String,
    created_at: time::OffsetDateTime,
    created_by_email: Option<String>,
}

impl Row {
    /// The rule as the gate reads it. Conditions were checked on the way
    /// in; should a row's no longer read, an allow is left out (it must
    /// not widen) and a narrowing rule applies to every call of its tool.
    fn rule(&self) -> Option<Rule> {
        let effect = self.effect.parse().unwrap_or(RuleEffect::Deny);
        let conditions = match serde_json::from_value(self.conditions.clone()) {
            Ok(conditions) => conditions,
            Err(_) if effect == RuleEffect::Allow => return None,
            Err(_) => Vec::new(),
        };
        Some(Rule {
            id: self.id,
            scope: if self.user_id.is_some() {
                RuleScope::User
            } else {
                RuleScope::Admin
            },
            connector_host: self.connector_host.clone(),
            tool: self.tool_pattern.clone(),
            conditions,
            effect,
        })
    }

    fn to_api(&self, suspended_by_policy: bool) -> Option<countersign_api::Rule> {
        let rule = self.rule()?;
        Some(countersign_api::Rule {
            id: self.id.to_string(),
            scope: rule.scope,
            connector_host: rule.connector_host.clone(),
            tool: rule.tool.clone(),
            description: describe(&rule),
            suspended_by_policy: suspended_by_policy
                && rule.scope == RuleScope::User
                && rule.effect == RuleEffect::Allow,
            conditions: rule.conditions,
            effect: rule.effect,
            created_at: self
                .created_at
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            created_by: self.created_by_email.clone(),
        })
    }
}

/// The rules that bear on `user_id`'s calls, read now: the
/// administrators' and their own (as them), at once.
pub async fn for_user(pool: &sqlx::PgPool, user_id: UserId) -> Result<Vec<Rule>, sqlx::Error> {
    let (admin, own) = tokio::try_join!(admin_rows(pool), user_rows(pool, user_id))?;
    Ok(admin.iter().chain(&own).filter_map(Row::rule).collect())
}

async fn user_rows(pool: &sqlx::PgPool, user_id: UserId) -> Result<Vec<Row>, sqlx::Error> {
    let mut tx = db::user_tx(pool, user_id).await?;
    let rows = sqlx::query_as!(
        Row,
        r#"select id, user_id, connector_host, tool_pattern, conditions, effect, created_at,
                  null::text as created_by_email
             from tool_rules where user_id = $1 order by created_at, id"#,
        user_id as UserId,
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rows)
}

async fn admin_rows(pool: &sqlx::PgPool) -> Result<Vec<Row>, sqlx::Error> {
    let mut tx = db::service_tx(pool).await?;
    let rows = sqlx::query_as!(
        Row,
        r#"select r.id, r.user_id, r.connector_host, r.tool_pattern, r.conditions, r.effect,
                  r.created_at, u.email as "created_by_email?"
             from tool_rules r left join users u on u.id = r.created_by
            where r.user_id is null order by r.created_at, r.id"#,
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rows)
}

/// `GET /api/rules`: the caller's own rules, each marked suspended when
/// the policy forbids "Always allow" and it allows.
pub async fn list_own(
    pool: &sqlx::PgPool,
    user_id: UserId,
    forbid_always_allow: bool,
) -> Result<Vec<countersign_api::Rule>, sqlx::Error> {
    Ok(user_rows(pool, user_id)
        .await?
        .iter()
        .filter_map(|r| r.to_api(forbid_always_allow))
        .collect())
}

/// `GET /api/admin/rules`: the administrators' rules.
pub async fn list_admin(pool: &sqlx::PgPool) -> Result<Vec<countersign_api::Rule>, sqlx::Error> {
    Ok(admin_rows(pool)
        .await?
        .iter()
        .filter_map(|r| r.to_api(false))
        .collect())
}

/// Makes one of the user's own rules (as them).
pub async fn create_own(
    pool: &sqlx::PgPool,
    user_id: UserId,
    request: &RuleRequest,
) -> Result<countersign_api::Rule, RuleError> {
    let (host, tool, conditions) = parse(request)?;
    let conditions = serde_json::to_value(&conditions).unwrap_or_else(|_| Value::Array(Vec::new()));
    let mut tx = db::user_tx(pool, user_id).await?;
    let count = sqlx::query_scalar!(
        r#"select count(*) as "n!" from tool_rules where user_id = $1"#,
        user_id as UserId,
    )
    .fetch_one(&mut *tx)
    .await?;
    if count >= MAX_RULES {
        return Err(RuleError::TooMany);
    }
    let row = sqlx::query_as!(
        Row,
        r#"insert into tool_rules
               (id, user_id, created_by, connector_host, tool_pattern, conditions, effect)
           values ($1, $2, $2, $3, $4, $5, $6)
           returning id, user_id, connector_host, tool_pattern, conditions, effect, created_at,
                     null::text as created_by_email"#,
        Uuid::new_v4(),
        user_id as UserId,
        host,
        tool,
        conditions,
        request.effect.as_str(),
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(row
        .to_api(false)
        .expect("conditions `parse` just wrote read back"))
}

/// Removes one of the user's own rules (as them).
pub async fn delete_own(pool: &sqlx::PgPool, user_id: UserId, id: Uuid) -> Result<(), RuleError> {
    let mut tx = db::user_tx(pool, user_id).await?;
    let deleted = sqlx::query!(
        "delete from tool_rules where id = $1 and user_id = $2",
        id,
        user_id as UserId
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    if deleted.rows_affected() == 0 {
        return Err(RuleError::NotFound);
    }
    Ok(())
}

/// Makes an administrator's rule for everyone, with its activity-chain
/// entry in the same transaction.
pub async fn create_admin(
    pool: &sqlx::PgPool,
    admin: UserId,
    request: &RuleRequest,
) -> Result<countersign_api::Rule, RuleError> {
    let (host, tool, conditions) = parse(request)?;
    let conditions = serde_json::to_value(&conditions).unwrap_or_else(|_| Value::Array(Vec::new()));
    let mut tx = db::service_tx(pool).await?;
    let count =
        sqlx::query_scalar!(r#"select count(*) as "n!" from tool_rules where user_id is null"#,)
            .fetch_one(&mut *tx)
            .await?;
    if count >= MAX_RULES {
        return Err(RuleError::TooMany);
    }
    let row = sqlx::query_as!(
        Row,
        r#"insert into tool_rules
               (id, user_id, created_by, connector_host, tool_pattern, conditions, effect)
           values ($1, null, $2, $3, $4, $5, $6)
           returning id, user_id, connector_host, tool_pattern, conditions, effect, created_at,
                     (select email from users where id = $2) as "created_by_email?""#,
        Uuid::new_v4(),
        admin as UserId,
        host,
        tool,
        conditions,
        request.effect.as_str(),
    )
    .fetch_one(&mut *tx)
    .await?;
    let rule = row
        .to_api(false)
        .expect("conditions `parse` just wrote read back");
    record(&mut tx, admin, "", &rule.description).await?;
    tx.commit().await?;
    Ok(rule)
}

/// Removes an administrator's rule, with its activity-chain entry.
pub async fn delete_admin(pool: &sqlx::PgPool, admin: UserId, id: Uuid) -> Result<(), RuleError> {
    let mut tx = db::service_tx(pool).await?;
    let row = sqlx::query_as!(
        Row,
        r#"delete from tool_rules where id = $1 and user_id is null
           returning id, user_id, connector_host, tool_pattern, conditions, effect, created_at,
                     null::text as created_by_email"#,
        id,
    )
    .fetch_optional(&mut *tx)
    .await?
    .ok_or(RuleError::NotFound)?;
    let words = row.rule().map_or_else(
        || format!("{}: {}", row.connector_host, row.tool_pattern),
        |rule| describe(&rule),
    );
    record(&mut tx, admin, &words, "").await?;
    tx.commit().await?;
    Ok(())
}

/// An administrator's rule made or removed, as a `policy_changed` entry of
/// their activity chain (`rules`: the rule's words before and after).
async fn record(
    tx: &mut db::Tx,
    admin: UserId,
    before: &str,
    after: &str,
) -> Result<(), sqlx::Error> {
    audit::append_admin(
        tx,
        &audit::AdminEntry {
            admin,
            kind: countersign_api::ActivityKind::PolicyChanged,
            subject: None,
            connector: None,
            changes: vec![countersign_api::SettingChange {
                setting: "rules".to_owned(),
                before: before.to_owned(),
                after: after.to_owned(),
            }],
        },
    )
    .await
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(effect: RuleEffect, host: &str, tool: &str, conditions: Value) -> Rule {
        let request = RuleRequest {
            connector_host: host.to_owned(),
            tool: tool.to_owned(),
            conditions: serde_json::from_value(conditions).expect("conditions"),
            effect,
        };
        let (connector_host, tool, conditions) = parse(&request).expect("a valid rule");
        Rule {
            id: Uuid::new_v4(),
            scope: RuleScope::User,
            connector_host,
            tool,
            conditions,
            effect,
        }
    }

    fn call<'a>(arguments: &'a Value, destinations: &'a [Destination]) -> Call<'a> {
        Call {
            host: Some("mail.example.com"),
            addresses: &[],
            tool: "send_email",
            arguments,
            destinations,
        }
    }

    fn applies_to(rule: &Rule, arguments: Value) -> bool {
        let destinations = crate::destinations::destinations(&arguments);
        applies(rule, &call(&arguments, &destinations))
    }

    #[test]
    fn an_allow_rule_needs_every_value_to_pass_and_a_narrowing_one_any() {
        let conditions = json!([{"argument": "to", "op": "ends_with", "value": "@firm.example"}]);
        let allow = rule(
            RuleEffect::Allow,
            "mail.example.com",
            "send_*",
            conditions.clone(),
        );
        let deny = rule(RuleEffect::Deny, "mail.example.com", "send_*", conditions);
        let cases = [
            (json!({"to": "ann@firm.example"}), true, true),
            (json!({"to": "Ann@FIRM.example"}), true, true),
            (
                json!({"to": ["ann@firm.example", "bo@firm.example"]}),
                true,
                true,
            ),
            (
                json!({"to": ["ann@firm.example", "x@evil.example"]}),
                false,
                true,
            ),
            (json!({"to": []}), false, false),
            (json!({"to": "x@evil.example"}), false, false),
            (json!({"cc": "ann@firm.example"}), false, false),
            // Two addresses in one text: not one token.
            (
                json!({"to": "x@evil.example, ann@firm.example"}),
                false,
                true,
            ),
            (
                json!({"to": "x@evil.example ann@firm.example"}),
                false,
                true,
            ),
            (json!({"to": "ann@firm.example\u{200b}"}), false, false),
            (
                json!({"to": "x@evil.example;ann@firm.example"}),
                false,
                true,
            ),
            (json!({"to": 7}), false, false),
            (json!({"to": {"address": "ann@firm.example"}}), false, false),
        ];
        for (arguments, allowed, denied) in cases {
            assert_eq!(
                applies_to(&allow, arguments.clone()),
                allowed,
                "allow {arguments}"
            );
            assert_eq!(
                applies_to(&deny, arguments.clone()),
                denied,
                "deny {arguments}"
            );
        }
    }

    #[test]
    fn numbers_compare_by_value_and_plain_decimal_strings_count() {
        let allow = rule(
            RuleEffect::Allow,
            "*",
            "*",
            json!([{"argument": "amount", "op": "at_most", "value": 100}]),
        );
        let deny = rule(
            RuleEffect::Deny,
            "*",
            "*",
            json!([{"argument": "amount", "op": "at_least", "value": 1000}]),
        );
        for (amount, allowed, denied) in [
            (json!(100), true, false),
            (json!(100.0), true, false),
            (json!(100.5), false, false),
            (json!("99.99"), true, false),
            (json!("5000"), false, true),
            (json!(" 5000 "), false, true),
            (json!("5e3"), false, false),
            (json!("1,000"), false, false),
            (json!(-3), true, false),
            (json!(true), false, false),
            (json!([50, 2000]), false, true),
        ] {
            let args = json!({"amount": amount});
            assert_eq!(applies_to(&allow, args.clone()), allowed, "allow {args}");
            assert_eq!(applies_to(&deny, args.clone()), denied, "deny {args}");
        }
    }

    #[test]
    fn equals_one_of_and_glob_test_as_written() {
        let equals = rule(
            RuleEffect::Allow,
            "*",
            "*",
            json!([{"argument": "/matter/id", "op": "equals", "value": "M-1"}]),
        );
        assert!(applies_to(&equals, json!({"matter": {"id": "M-1"}})));
        assert!(!applies_to(&equals, json!({"matter": {"id": "m-1"}})));
        assert!(!applies_to(&equals, json!({"matter": {}})));
        let one_of = rule(
            RuleEffect::Allow,
            "*",
            "*",
            json!([{"argument": "channel", "op": "one_of", "value": ["#general", "#legal"]}]),
        );
        assert!(applies_to(&one_of, json!({"channel": "#legal"})));
        assert!(applies_to(
            &one_of,
            json!({"channel": ["#legal", "#general"]})
        ));
        assert!(!applies_to(
            &one_of,
            json!({"channel": ["#legal", "#random"]})
        ));
        let glob = rule(
            RuleEffect::Allow,
            "*",
            "*",
            json!([{"argument": "path", "op": "glob", "value": "/matters/*"}]),
        );
        assert!(applies_to(
            &glob,
            json!({"path": "/Matters/2026/brief.docx"})
        ));
        assert!(!applies_to(&glob, json!({"path": "/private/x"})));
    }

    #[test]
    fn destinations_must_all_be_inside_for_allow_and_any_for_deny() {
        let conditions =
            json!([{"op": "destination_in", "value": ["firm.example", "partner@other.example"]}]);
        let allow = rule(RuleEffect::Allow, "*", "*", conditions.clone());
        let ask = rule(RuleEffect::Ask, "*", "*", conditions);
        for (arguments, allowed, asked) in [
            (json!({"to": "ann@firm.example"}), true, true),
            (json!({"to": "ann@mail.firm.example"}), true, true),
            (json!({"to": "ann@notfirm.example"}), false, false),
            (json!({"to": "partner@other.example"}), true, true),
            (json!({"to": "someone@other.example"}), false, false),
            (json!({"url": "https://docs.firm.example/x"}), true, true),
            (
                json!({"url": "https://firm.example.evil.example/x"}),
                false,
                false,
            ),
            (
                json!({"to": "ann@firm.example", "cc": "x@evil.example"}),
                false,
                true,
            ),
            (json!({"text": "no destination at all"}), false, false),
            (json!({"to": "ann@xn--frm-4la.example"}), false, false),
        ] {
            assert_eq!(
                applies_to(&allow, arguments.clone()),
                allowed,
                "allow {arguments}"
            );
            assert_eq!(
                applies_to(&ask, arguments.clone()),
                asked,
                "ask {arguments}"
            );
        }
    }

    #[test]
    fn hosts_and_tools_match_as_the_policy_matches_them() {
        let args = json!({});
        let by_address = ["10.0.0.7".to_owned()];
        let on = |rule: &Rule, host: Option<&str>, tool: &str| {
            applies(
                rule,
                &Call {
                    host,
                    addresses: &by_address,
                    tool,
                    arguments: &args,
                    destinations: &[],
                },
            )
        };
        let allow = rule(RuleEffect::Allow, "MAIL.Example.com.", "Send_*", json!([]));
        assert_eq!(allow.connector_host, "mail.example.com");
        assert!(on(&allow, Some("mail.example.com"), "send_email"));
        assert!(on(&allow, Some("mail.example.com"), "SEND_EMAIL"));
        assert!(!on(&allow, Some("other.example.com"), "send_email"));
        // A Cyrillic "ѕ" folds to "s", as the policy folds it.
        assert!(on(&allow, Some("mail.example.com"), "\u{0455}end_email"));
        let wild = rule(RuleEffect::Deny, "*.example.com", "*", json!([]));
        assert!(on(&wild, Some("mail.example.com"), "x"));
        assert!(!on(&wild, Some("example.com"), "x"));
        // A narrowing rule also matches the addresses; an allow does not.
        let deny_ip = rule(RuleEffect::Deny, "10.0.0.7", "*", json!([]));
        let allow_ip = rule(RuleEffect::Allow, "10.0.0.7", "*", json!([]));
        assert!(on(&deny_ip, Some("files.internal"), "x"));
        assert!(!on(&allow_ip, Some("files.internal"), "x"));
    }

    #[test]
    fn admin_rules_decide_first_then_deny_ask_allow() {
        let args = json!({});
        let c = call(&args, &[]);
        let mk = |scope, effect| Rule {
            scope,
            ..rule(effect, "*", "*", json!([]))
        };
        let user_allow = mk(RuleScope::User, RuleEffect::Allow);
        let user_deny = mk(RuleScope::User, RuleEffect::Deny);
        let user_ask = mk(RuleScope::User, RuleEffect::Ask);
        let admin_allow = mk(RuleScope::Admin, RuleEffect::Allow);
        let admin_ask = mk(RuleScope::Admin, RuleEffect::Ask);
        let rules = vec![user_allow.clone(), user_ask.clone(), user_deny.clone()];
        assert_eq!(deciding(&rules, &c, false), Some(&user_deny));
        let rules = vec![user_allow.clone(), user_ask.clone()];
        assert_eq!(deciding(&rules, &c, false), Some(&user_ask));
        let rules = vec![user_deny.clone(), admin_allow.clone()];
        assert_eq!(deciding(&rules, &c, false), Some(&admin_allow));
        let rules = vec![admin_allow.clone(), admin_ask.clone(), user_deny.clone()];
        assert_eq!(deciding(&rules, &c, false), Some(&admin_ask));
        // Under "no Always allow", a user's allow rule does not count; an
        // administrator's does.
        assert_eq!(deciding(std::slice::from_ref(&user_allow), &c, true), None);
        assert_eq!(
            deciding(std::slice::from_ref(&admin_allow), &c, true),
            Some(&admin_allow)
        );
    }

    #[test]
    fn bad_rules_are_refused_with_words() {
        let bad = |host: &str, tool: &str, conditions: Value| {
            parse(&RuleRequest {
                connector_host: host.to_owned(),
                tool: tool.to_owned(),
                conditions: serde_json::from_value(conditions).expect("conditions"),
                effect: RuleEffect::Allow,
            })
            .expect_err("refused")
            .0
        };
        assert!(bad("https://x.example", "*", json!([])).contains("not a connector host"));
        assert!(bad("x.example:443", "*", json!([])).contains("not a connector host"));
        assert!(bad("x.example", "send email", json!([])).contains("spaces"));
        assert!(bad("x.example", "[", json!([])).contains("not a valid pattern"));
        assert!(
            bad("x.example", "*", json!([{"op": "equals", "value": 1}]))
                .contains("names the argument")
        );
        assert!(
            bad(
                "x.example",
                "*",
                json!([{"argument": "a", "op": "at_most", "value": "x"}])
            )
            .contains("need a number")
        );
        assert!(
            bad(
                "x.example",
                "*",
                json!([{"argument": "a", "op": "one_of", "value": []}])
            )
            .contains("list of 1 to")
        );
        assert!(
            bad(
                "x.example",
                "*",
                json!([{"op": "destination_in", "value": ["https://x/"]}])
            )
            .contains("not a domain")
        );
        assert!(
            bad(
                "x.example",
                "*",
                json!([{"argument": "a", "op": "frobs", "value": 1}])
            )
            .contains("op must be")
        );
    }

    #[test]
    fn a_rule_reads_as_words() {
        let r = rule(
            RuleEffect::Allow,
            "mail.example.com",
            "send_email",
            json!([
                {"argument": "to", "op": "ends_with", "value": "@firm.example"},
                {"op": "destination_in", "value": ["Firm.Example"]}
            ]),
        );
        assert_eq!(
            describe(&r),
            "Allow mail.example.com: send_email when to ends with @firm.example and every \
             destination is in firm.example"
        );
        let r = rule(RuleEffect::Deny, "*", "*", json!([]));
        assert_eq!(describe(&r), "Deny any connector: every tool");
    }
}
