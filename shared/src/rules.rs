//! Rules with conditions (DESIGN §5 "Rules"): `/api/rules` (the user's
//! own) and `/api/admin/rules` (an administrator's, for everyone). A rule
//! names a connector host, a tool pattern, optional conditions on the
//! call's argument values, and one effect: allow, ask or deny.

use crate::vocab::{ConditionOp, RuleEffect, RuleScope};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST /api/rules` and `POST /api/admin/rules`: a rule as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RuleRequest {
    /// The connector's host (`mail.example.com`), `*.domain` for its
    /// subdomains, or `*` for every connector.
    pub connector_host: String,
    /// The tool's name, or a glob over it (`send_*`, `*`); compared as
    /// the admin policy compares tool names (case and look-alikes folded).
    pub tool: String,
    /// Every condition must hold for the rule to apply; none: every call
    /// of the tool. At most 20.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<RuleCondition>,
    /// What the rule does.
    pub effect: RuleEffect,
}

/// One condition of a rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RuleCondition {
    /// The argument tested: its name (`to`), or an RFC 6901 JSON Pointer
    /// (`/message/to`). Not used by `destination_in`, which tests every
    /// destination of the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument: Option<String>,
    /// The test.
    pub op: ConditionOp,
    /// What it tests against: any JSON value (`equals`), an array
    /// (`one_of`), a string (`glob`, `ends_with`), a number (`at_most`,
    /// `at_least`) or an array of domains, hosts and e-mail addresses
    /// (`destination_in`).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub value: Value,
}

/// A rule as stored and listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Rule {
    /// Its id (a UUID).
    pub id: String,
    /// The user's own, or an administrator's for everyone.
    pub scope: RuleScope,
    /// As stored: the host normalised (lower-case, punycode).
    pub connector_host: String,
    /// As stored.
    pub tool: String,
    /// As stored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<RuleCondition>,
    /// What it does.
    pub effect: RuleEffect,
    /// The rule in words, as the card and Activity name it ("Allow
    /// mail.example.com: send_email when to ends with @firm.example").
    pub description: String,
    /// RFC 3339.
    pub created_at: String,
    /// Admin rules: who made it (their email).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    /// A user's allow rule stops applying while the admin policy forbids
    /// "Always allow" (it is kept, and applies again if that is lifted).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suspended_by_policy: bool,
}

/// The rule that decided a call, as a card, a call's event and Activity
/// name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RuleRef {
    /// Its id (a UUID).
    pub id: String,
    /// Whose.
    pub scope: RuleScope,
    /// What it did.
    pub effect: RuleEffect,
    /// In words, as [`Rule::description`].
    pub description: String,
}
