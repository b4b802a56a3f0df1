//! `/api/admin/…` (DESIGN §5 "Admin policy", §8): the instance's policy and
//! its accounts, for administrators only (403 for everyone else).

use serde::{Deserialize, Serialize};

/// `GET /api/admin/policy`, and `PUT`'s answer: what an administrator set,
/// stricter than any user's choice.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Policy {
    /// No "Always allow": the card does not offer it, the API refuses it
    /// (403 `forbidden_by_policy`) and existing rules stop applying.
    pub forbid_always_allow: bool,
    /// No "Trust this server's safety annotations": the switch cannot be
    /// turned on and where it is on it stops applying.
    pub forbid_trust_annotations: bool,
    /// Glob patterns over `connector-host/tool` (`*` within a part, `?`,
    /// `[…]`; hosts lower-case) whose calls always ask, whatever grant or
    /// trust exists.
    pub always_ask_tools: Vec<String>,
    /// When not empty, the only hosts connectors may point at (`host` or
    /// `*.domain`), checked on add, URL change and every connection.
    pub connector_hosts: Vec<String>,
    /// Two-factor sign-in must be set up before any trust-widening action.
    pub require_mfa: bool,
    /// Domains, hosts and e-mail addresses inside the firm (each domain
    /// covering its subdomains): a flow whose connector and every
    /// destination are among them is shown with its provenance but not
    /// flagged as leaving.
    #[serde(default)]
    pub internal_destinations: Vec<String>,
    /// `connector-host/tool` glob patterns (as `always_ask_tools`) whose
    /// results wait for the user's review before the model reads them.
    #[serde(default)]
    pub review_results_tools: Vec<String>,
    /// Calls that need a second approval, from an approver who is not the
    /// requester, after the requester's own.
    #[serde(default)]
    pub require_second_approval: SecondApprovalPolicy,
    /// RFC 3339: when it last changed.
    #[serde(default)]
    pub updated_at: String,
    /// Who changed it last (their email), if anyone has.
    #[serde(default)]
    pub updated_by: Option<String>,
}

/// `PUT /api/admin/policy`: a field left out keeps its value, so a client
/// that knows fewer settings cannot clear the ones it does not know.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PolicyUpdate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forbid_always_allow: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forbid_trust_annotations: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub always_ask_tools: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector_hosts: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_mfa: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_destinations: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_results_tools: Option<Vec<String>>,
    /// Replaces both lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_second_approval: Option<SecondApprovalPolicy>,
}

/// The admin policy's `require_second_approval`: a call needs a second
/// approval when its tool matches one of `tools` or it sends to one of
/// `destinations`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SecondApprovalPolicy {
    /// `connector-host/tool` glob patterns, as `always_ask_tools`.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Domains, hosts and e-mail addresses (as `internal_destinations`):
    /// a call that sends to one of them.
    #[serde(default)]
    pub destinations: Vec<String>,
}

/// One account as `GET /api/admin/users` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AdminUser {
    /// User id (UUID).
    pub id: String,
    /// Email address.
    pub email: String,
    /// An administrator.
    pub is_admin: bool,
    /// May give a second approval (administrators may too).
    #[serde(default)]
    pub is_approver: bool,
    /// Disabled: cannot sign in, signed out everywhere.
    pub disabled: bool,
    /// Two-factor sign-in is on.
    pub mfa_enabled: bool,
    /// A password reset is waiting to be replaced by the user's own.
    #[serde(default)]
    pub must_change_password: bool,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339: the last request of any of their sessions, if any.
    pub last_seen_at: Option<String>,
    /// How many connectors they have.
    pub connectors: i64,
    /// How many of their calls wait for a decision.
    pub pending_calls: i64,
}

/// `PATCH /api/admin/users/{id}`: what to change (absent: unchanged).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AdminUserUpdate {
    /// `true` signs the user out everywhere and denies their waiting calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// The last active administrator cannot be removed (409 `last_admin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_admin: Option<bool>,
    /// May give a second approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_approver: Option<bool>,
}

/// `GET /api/admin/overview`: the instance at a glance.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AdminOverview {
    /// Accounts, disabled ones included.
    pub users: i64,
    /// Connectors of every user.
    pub connectors: i64,
    /// Calls waiting for a decision, of every user.
    pub pending_calls: i64,
    /// Turns running now, on any instance.
    pub turns_running: i64,
}

/// One setting an administrator changed, as the activity log records it:
/// `setting` is the policy field's name (or, for an account, `disabled`,
/// `is_admin`, `password`), `before` and `after` its values as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SettingChange {
    pub setting: String,
    pub before: String,
    pub after: String,
}
