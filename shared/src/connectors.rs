//! Connectors: users' remote MCP servers and their tools (DESIGN §2, §5,
//! §8).

use crate::vocab::{AuthType, ConnectorStatus, OAuthStatus, ReviewState};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most custom headers per connector.
pub const MAX_HEADERS: usize = 20;

/// Headers (lower case) a connector's custom headers may not set: HTTP's
/// own and those the MCP transport sets. Checked when a connector is saved
/// and again when it connects, from this one list (so nothing saved can
/// fail at connect time for being reserved). Any `mcp-param-*` header is
/// reserved too (see [`is_reserved_header`]).
pub const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "connection",
    "content-length",
    "content-type",
    "host",
    "last-event-id",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
    "mcp-session-id",
    "te",
    "transfer-encoding",
    "upgrade",
];

/// Whether a custom header named `name` (any case) is reserved.
pub fn is_reserved_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    RESERVED_HEADERS.contains(&lower.as_str()) || lower.starts_with("mcp-param-")
}

/// How Countersign authenticates to a connector.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConnectorAuth {
    /// `none`, `bearer`, `headers` or `oauth` (an [`AuthType`] word). A
    /// string, not the enum: the server names an unknown type back in its
    /// 422.
    #[serde(rename = "type")]
    pub kind: String,
    /// The bearer token (`type: bearer`); write-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Custom headers (`type: headers`), at most 20; write-only values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    /// A client id registered with the authorization server out of band
    /// (`type: oauth`); without one Countersign registers itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// That client's secret (`type: oauth`); write-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// Scopes to ask for instead of those the server suggests (`type:
    /// oauth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
}

/// `POST /api/connectors`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreateConnectorRequest {
    /// Shown name, unique per user.
    pub name: String,
    /// The server's Streamable HTTP endpoint (https).
    pub url: String,
    /// Credentials; `{"type":"none"}` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<ConnectorAuth>,
}

/// `PATCH /api/connectors/{id}`: fields present are changed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UpdateConnectorRequest {
    /// New name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// New URL (checked like a new one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// New credentials (replace the old ones entirely).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<ConnectorAuth>,
    /// "Trust this server's safety annotations" (DESIGN §5 rule 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_annotations: Option<bool>,
    /// "Review results first": this connector's results wait for the
    /// user before the model reads them (docs/design.md §6.5a).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_results: Option<bool>,
}

/// A connector as the API shows it: never a secret, only what is set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Connector {
    /// Id (UUID).
    pub id: String,
    /// Shown name.
    pub name: String,
    /// Prefix of its tools' names for the model.
    pub slug: String,
    /// Endpoint URL.
    pub url: String,
    /// The host Countersign connects to (the card's "destination").
    pub host: String,
    /// `none`, `bearer`, `headers` or `oauth`.
    pub auth_type: AuthType,
    /// A bearer token is stored.
    pub token_set: bool,
    /// Names of the stored custom headers (values never leave the server).
    pub header_names: Vec<String>,
    /// "Trust this server's safety annotations" (off by default).
    pub trust_annotations: bool,
    /// The instance's policy forbids trusting annotations: the switch
    /// cannot be turned on, and where it is on it does not apply.
    #[serde(default)]
    pub trust_forbidden_by_policy: bool,
    /// "Review results first" (off by default): results wait for the user
    /// before the model reads them.
    #[serde(default)]
    pub review_results: bool,
    /// `untested`, `ok` or `error`.
    pub status: ConnectorStatus,
    /// Why the last Test/Refresh failed.
    pub last_error: Option<String>,
    /// Protocol version negotiated last time.
    pub protocol_version: Option<String>,
    /// RFC 3339.
    pub last_checked_at: Option<String>,
    /// Tools by review state: `new`, `kept`, `declined`, `changed` (the
    /// [`ReviewState`] words; string keys keep the JSON's key order).
    pub tool_counts: BTreeMap<String, i64>,
    /// RFC 3339.
    pub created_at: String,
    /// How many "always allow" rules its tools have.
    #[serde(default)]
    pub grant_count: i64,
    /// Tools the server listed at the last successful Test/Refresh that
    /// are not offered to the model (an invalid `x-mcp-header`), with why.
    #[serde(default)]
    pub dropped_tools: Vec<DroppedTool>,
    /// Where its OAuth sign-in stands (`not_applicable` unless `auth_type`
    /// is `oauth`).
    #[serde(default = "not_applicable")]
    pub oauth_status: OAuthStatus,
    /// The authorization server it signed in with, once it did.
    #[serde(default)]
    pub oauth_issuer: Option<String>,
}

fn not_applicable() -> OAuthStatus {
    OAuthStatus::NotApplicable
}

/// `POST /api/connectors/{id}/oauth/start`: where to send the browser.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OAuthStart {
    /// The authorization server's sign-in page, with this request's
    /// `state`, PKCE challenge and `resource`.
    pub authorization_url: String,
}

/// A tool the server listed that Countersign does not offer (DESIGN §2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DroppedTool {
    /// Its name on the server.
    pub name: String,
    /// Why it is not offered.
    pub reason: String,
}

/// One tool of a connector (`GET /api/connectors/{id}/tools`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConnectorTool {
    /// The tool's name on its server.
    pub name: String,
    /// The name offered to the model.
    pub model_name: String,
    /// Title, if the server gave one.
    pub title: Option<String>,
    /// Description, as the server wrote it.
    pub description: Option<String>,
    /// Input JSON Schema.
    pub input_schema: serde_json::Value,
    /// Annotations exactly as the server sent them: the server's own
    /// claims, never verified.
    pub annotations: Option<serde_json::Value>,
    /// SHA-256 (hex) of the RFC 8785 canonical descriptor.
    pub descriptor_digest: String,
    /// `new`, `kept`, `declined` or `changed`.
    pub review_state: ReviewState,
    /// The server no longer lists it.
    pub removed: bool,
    /// For a `changed` tool: the descriptor the user kept, to compare.
    pub reviewed_descriptor: Option<serde_json::Value>,
    /// RFC 3339.
    pub first_seen_at: String,
    /// RFC 3339.
    pub last_seen_at: String,
    /// RFC 3339: when its digest last moved.
    pub changed_at: Option<String>,
    /// The user's "always allow" rule for it (`DELETE /api/grants/{id}`
    /// revokes it).
    #[serde(default)]
    pub grant_id: Option<String>,
    /// The rule is suspended: the tool changed since it was allowed.
    #[serde(default)]
    pub grant_suspended: bool,
}

/// `PUT /api/connectors/{id}/tools/review`. Each tool is named with the
/// descriptor digest the user saw; a digest the server's list no longer
/// has is a 409 and nothing changes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReviewToolsRequest {
    /// Tools (names as on the server) to offer to the model; each must
    /// carry its `descriptor_digest`.
    #[serde(default)]
    pub keep: Vec<ReviewedTool>,
    /// Tools never to offer, and never to badge as new again. A bare name
    /// is accepted here: declining widens nothing.
    #[serde(default)]
    pub decline: Vec<ReviewedTool>,
}

/// A tool named in a review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum ReviewedTool {
    /// `{"name", "descriptor_digest"}`: the tool as the user saw it.
    Seen {
        /// Its name on the server.
        name: String,
        /// The `descriptor_digest` shown with it.
        descriptor_digest: String,
    },
    /// A bare name, as older clients send it (declines only).
    Name(String),
}

impl ReviewedTool {
    /// The tool's name on the server.
    pub fn name(&self) -> &str {
        match self {
            Self::Seen { name, .. } | Self::Name(name) => name,
        }
    }

    /// The digest the user saw, if named.
    pub fn digest(&self) -> Option<&str> {
        match self {
            Self::Seen {
                descriptor_digest, ..
            } => Some(descriptor_digest),
            Self::Name(_) => None,
        }
    }
}

/// A connector the deployment offers in one click (`GET
/// /api/connectors/available`), e.g. the demo server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AvailableConnector {
    /// Suggested name.
    pub name: String,
    /// Its endpoint.
    pub url: String,
    /// What it is, in a sentence.
    #[serde(default)]
    pub description: String,
}

/// `GET /api/connectors/available`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AvailableConnectors {
    /// The offers (none unless the deployment enables the demo).
    pub available: Vec<AvailableConnector>,
}
