//! The instance's admin policy (DESIGN §5 "Admin policy"): one stored row,
//! stricter than any user's choice, read wherever it applies — by the tool
//! box for the gate's facts at call time ([`Policy::facts`]), by the
//! connector session on every connection ([`Policy::allows_host`]), by the
//! grant and trust handlers — never cached.
//!
//! Patterns in `always_ask_tools` are globs (the `glob` crate) over
//! `connector-host/tool`: `*` and `?` never cross the `/`, so
//! `*/delete_*` is every connector's `delete_…` tools and
//! `mail.example.com/*` every tool of one host. Hosts are compared
//! lower-case; tool names as the server spells them. Entries of
//! `connector_hosts` are a host (`mcp.example.com`, `10.0.0.7`, `[::1]`)
//! or `*.domain`, which matches the domain's subdomains, not the domain.
//!
//! [`update`] writes a change and its activity-chain entry in one
//! transaction: no change without its record.

use crate::{
    audit::{self, AdminEntry},
    db::{
        self,
        trip::{As, Part, Statement},
    },
    gate::PolicyFacts,
    ids::UserId,
};
use countersign_api::{ActivityKind, PolicyUpdate, SettingChange};
use glob::{MatchOptions, Pattern};
use sqlx::{FromRow as _, PgPool, postgres::PgRow};
use time::{OffsetDateTime, format_description::well_known::Rfc3339};
use uuid::Uuid;

/// At most this many entries in each list.
pub const MAX_ENTRIES: usize = 200;
/// At most this many characters in one entry.
pub const MAX_ENTRY_CHARS: usize = 300;

/// The policy as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct Policy {
    pub forbid_always_allow: bool,
    pub forbid_trust_annotations: bool,
    pub always_ask_tools: Vec<String>,
    pub connector_hosts: Vec<String>,
    pub require_mfa: bool,
    pub updated_at: Option<OffsetDateTime>,
    pub updated_by: Option<Uuid>,
}

const MATCH: MatchOptions = MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

/// The host of a connector URL, lower-case (`None` for no host).
pub fn host_of(url: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .ok()?
        .host_str()
        .map(str::to_ascii_lowercase)
}

impl Policy {
    /// Whether a call to `tool` of the connector at `url` always asks.
    /// A URL without a host matches no pattern's host but `*`.
    pub fn always_asks(&self, url: &str, tool: &str) -> bool {
        let subject = format!("{}/{tool}", host_of(url).unwrap_or_default());
        self.always_ask_tools.iter().any(|pattern| {
            // Stored patterns were checked on the way in; one that no
            // longer parses asks (closed, never open).
            Pattern::new(pattern).map_or(true, |p| p.matches_with(&subject, MATCH))
        })
    }

    /// Whether connectors may point at `url`'s host: always when the list
    /// is empty.
    pub fn allows_host(&self, url: &str) -> bool {
        if self.connector_hosts.is_empty() {
            return true;
        }
        let Some(host) = host_of(url) else {
            return false;
        };
        self.connector_hosts
            .iter()
            .any(|entry| match entry.strip_prefix("*.") {
                Some(domain) => host
                    .strip_suffix(domain)
                    .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
                None => *entry == host,
            })
    }

    /// What the gate needs to know of the policy for one call.
    pub fn facts(&self, url: &str, tool: &str) -> PolicyFacts {
        PolicyFacts {
            always_ask: self.always_asks(url, tool),
            forbid_always_allow: self.forbid_always_allow,
            forbid_trust_annotations: self.forbid_trust_annotations,
        }
    }

    /// As the API shows it; `updated_by` is the administrator's email.
    pub fn to_api(&self, updated_by: Option<String>) -> countersign_api::Policy {
        countersign_api::Policy {
            forbid_always_allow: self.forbid_always_allow,
            forbid_trust_annotations: self.forbid_trust_annotations,
            always_ask_tools: self.always_ask_tools.clone(),
            connector_hosts: self.connector_hosts.clone(),
            require_mfa: self.require_mfa,
            updated_at: self
                .updated_at
                .and_then(|t| t.format(&Rfc3339).ok())
                .unwrap_or_default(),
            updated_by,
        }
    }

    /// Each setting that differs from `before`, as the activity log
    /// records it.
    fn changes_from(&self, before: &Policy) -> Vec<SettingChange> {
        let mut changes = Vec::new();
        let mut flag = |setting: &str, was: bool, now: bool| {
            if was != now {
                changes.push(SettingChange {
                    setting: setting.to_owned(),
                    before: was.to_string(),
                    after: now.to_string(),
                });
            }
        };
        flag(
            "forbid_always_allow",
            before.forbid_always_allow,
            self.forbid_always_allow,
        );
        flag(
            "forbid_trust_annotations",
            before.forbid_trust_annotations,
            self.forbid_trust_annotations,
        );
        flag("require_mfa", before.require_mfa, self.require_mfa);
        for (setting, was, now) in [
            (
                "always_ask_tools",
                &before.always_ask_tools,
                &self.always_ask_tools,
            ),
            (
                "connector_hosts",
                &before.connector_hosts,
                &self.connector_hosts,
            ),
        ] {
            if was != now {
                changes.push(SettingChange {
                    setting: setting.to_owned(),
                    before: was.join(", "),
                    after: now.join(", "),
                });
            }
        }
        changes
    }
}

/// Why an update was refused.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// An entry of a list is not what it must be; the message says which.
    #[error("{0}")]
    Invalid(String),
    /// Database failure.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

fn bounded(list: &[String], what: &str) -> Result<(), PolicyError> {
    if list.len() > MAX_ENTRIES {
        return Err(PolicyError::Invalid(format!(
            "{what}: at most {MAX_ENTRIES} entries."
        )));
    }
    if let Some(long) = list.iter().find(|e| e.chars().count() > MAX_ENTRY_CHARS) {
        return Err(PolicyError::Invalid(format!(
            "{what}: \"{}…\" is longer than {MAX_ENTRY_CHARS} characters.",
            long.chars().take(40).collect::<String>()
        )));
    }
    Ok(())
}

/// `always_ask_tools` as typed → as stored: trimmed, the host part
/// lower-cased, duplicates and blanks dropped, each a valid glob of the
/// shape `host/tool`.
pub fn parse_tool_patterns(list: &[String]) -> Result<Vec<String>, PolicyError> {
    bounded(list, "Tools that always ask")?;
    let mut out: Vec<String> = Vec::new();
    for raw in list {
        let entry = raw.trim();
        if entry.is_empty() {
            continue;
        }
        let invalid = |why: &str| {
            PolicyError::Invalid(format!(
                "Tools that always ask: \"{entry}\" {why} (write connector-host/tool, e.g. \
                 mail.example.com/send_* or */delete_*)."
            ))
        };
        let Some((host, tool)) = entry.split_once('/') else {
            return Err(invalid("has no /"));
        };
        if host.is_empty() || tool.is_empty() || tool.contains('/') {
            return Err(invalid("must have exactly one / between two parts"));
        }
        if entry.chars().any(char::is_control) || entry.contains(char::is_whitespace) {
            return Err(invalid("contains spaces or control characters"));
        }
        let pattern = format!("{}/{tool}", host.to_ascii_lowercase());
        if Pattern::new(&pattern).is_err() {
            return Err(invalid("is not a valid pattern"));
        }
        if !out.contains(&pattern) {
            out.push(pattern);
        }
    }
    Ok(out)
}

/// `connector_hosts` as typed → as stored: trimmed, lower-case, each a
/// bare host (no scheme, port or path) or `*.` and a domain.
pub fn parse_hosts(list: &[String]) -> Result<Vec<String>, PolicyError> {
    bounded(list, "Allowed connector hosts")?;
    let mut out: Vec<String> = Vec::new();
    for raw in list {
        let entry = raw.trim().to_ascii_lowercase();
        if entry.is_empty() {
            continue;
        }
        let host = entry.strip_prefix("*.").unwrap_or(&entry);
        let parsed = reqwest::Url::parse(&format!("https://{host}/")).ok();
        let same = parsed
            .as_ref()
            .and_then(|u| u.host_str())
            .is_some_and(|h| h == host)
            && parsed.as_ref().is_some_and(|u| u.port().is_none());
        if !same || host.contains('*') {
            return Err(PolicyError::Invalid(format!(
                "Allowed connector hosts: \"{entry}\" is not a host name (write mcp.example.com \
                 or *.example.com, without https:// or a port)."
            )));
        }
        if !out.contains(&entry) {
            out.push(entry);
        }
    }
    Ok(out)
}

/// The policy now, in one round trip ([`db::trip`]).
pub async fn current(pool: &PgPool) -> Result<Policy, sqlx::Error> {
    policy_in(&db::trip::run(pool, now()).await?)
}

/// The policy now.
static NOW: Statement = Statement {
    name: "cs_policy_now",
    params: "",
    sql: "select forbid_always_allow, forbid_trust_annotations, always_ask_tools, \
                 connector_hosts, require_mfa, updated_at, updated_by \
            from admin_policy where id",
};

/// The statements [`db::trip`] runs here, for the test that prepares them all.
pub static TRIPS: [&Statement; 1] = [&NOW];

/// [`current`] as a part of a larger trip; read it with [`policy_in`].
pub fn now() -> Part {
    Part {
        who: As::Service,
        statement: &NOW,
        args: Vec::new(),
    }
}

/// The policy, from [`now`]'s rows. The migration writes the one row (and
/// nothing deletes it); read without it, the policy is the default:
/// nothing forbidden.
pub fn policy_in(rows: &[PgRow]) -> Result<Policy, sqlx::Error> {
    Ok(rows
        .first()
        .map(Policy::from_row)
        .transpose()?
        .unwrap_or_default())
}

/// The policy, locked for an update in `tx`.
async fn read_for_update(tx: &mut db::Tx) -> Result<Policy, sqlx::Error> {
    let row = sqlx::query_as!(
        Policy,
        "select forbid_always_allow, forbid_trust_annotations, always_ask_tools,
                    connector_hosts, require_mfa, updated_at, updated_by
               from admin_policy where id for update"
    )
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row.unwrap_or_default())
}

/// Applies `update` (fields left out keep their value) as `admin`; the
/// activity chain records each setting that changed. Returns the policy.
pub async fn update(
    pool: &PgPool,
    admin: UserId,
    update: &PolicyUpdate,
) -> Result<Policy, PolicyError> {
    let always_ask = update
        .always_ask_tools
        .as_deref()
        .map(parse_tool_patterns)
        .transpose()?;
    let hosts = update
        .connector_hosts
        .as_deref()
        .map(parse_hosts)
        .transpose()?;
    let mut tx = db::service_tx(pool).await?;
    let before = read_for_update(&mut tx).await?;
    let after = Policy {
        forbid_always_allow: update
            .forbid_always_allow
            .unwrap_or(before.forbid_always_allow),
        forbid_trust_annotations: update
            .forbid_trust_annotations
            .unwrap_or(before.forbid_trust_annotations),
        always_ask_tools: always_ask.unwrap_or_else(|| before.always_ask_tools.clone()),
        connector_hosts: hosts.unwrap_or_else(|| before.connector_hosts.clone()),
        require_mfa: update.require_mfa.unwrap_or(before.require_mfa),
        ..before.clone()
    };
    let changes = after.changes_from(&before);
    if changes.is_empty() {
        tx.commit().await?;
        return Ok(before);
    }
    let stored = sqlx::query_as!(
        Policy,
        "update admin_policy
            set forbid_always_allow = $1, forbid_trust_annotations = $2,
                always_ask_tools = $3, connector_hosts = $4, require_mfa = $5,
                updated_at = now(), updated_by = $6
          where id
         returning forbid_always_allow, forbid_trust_annotations, always_ask_tools,
                   connector_hosts, require_mfa, updated_at, updated_by",
        after.forbid_always_allow,
        after.forbid_trust_annotations,
        &after.always_ask_tools,
        &after.connector_hosts,
        after.require_mfa,
        admin as UserId,
    )
    .fetch_one(&mut *tx)
    .await?;
    audit::append_admin(
        &mut tx,
        &AdminEntry {
            admin,
            kind: ActivityKind::PolicyChanged,
            subject: None,
            connector: None,
            changes,
        },
    )
    .await?;
    tx.commit().await?;
    tracing::info!(user.id = %admin, "admin policy changed");
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(tools: &[&str], hosts: &[&str]) -> Policy {
        Policy {
            always_ask_tools: parse_tool_patterns(
                &tools.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
            )
            .expect("valid patterns"),
            connector_hosts: parse_hosts(
                &hosts.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
            )
            .expect("valid hosts"),
            ..Policy::default()
        }
    }

    #[test]
    fn tool_patterns_match_host_slash_tool_and_never_cross_the_slash() {
        let p = policy(&["Mail.Example.com/send_*", "*/delete_*"], &[]);
        assert_eq!(
            p.always_ask_tools,
            ["mail.example.com/send_*", "*/delete_*"],
            "the host part is lower-cased"
        );
        let asks = |url: &str, tool: &str| p.always_asks(url, tool);
        assert!(asks("https://MAIL.example.com/mcp", "send_email"));
        assert!(asks("https://mail.example.com:8443/mcp", "send_"));
        assert!(
            !asks("https://mail.example.com/mcp", "Send_email"),
            "tool names keep their case"
        );
        assert!(!asks(
            "https://mail.example.com.evil.test/mcp",
            "send_email"
        ));
        assert!(!asks("https://other.example.com/mcp", "send_email"));
        assert!(asks("https://docs.example.com/mcp", "delete_page"));
        assert!(!asks("https://docs.example.com/mcp", "undelete_page"));
        // `*` does not cross `/`: a tool named `x/delete_y` is not `*/delete_*`'s.
        let q = policy(&["docs.example.com/*"], &[]);
        assert!(q.always_asks("https://docs.example.com/mcp", "anything"));
        assert!(!q.always_asks("https://docs.example.com/mcp", "a/b"));
        assert!(!Policy::default().always_asks("https://x.test/", "t"));
    }

    #[test]
    fn bad_tool_patterns_are_refused_with_the_entry_named() {
        for bad in [
            "send_email",
            "/tool",
            "host/",
            "a/b/c",
            "host/[",
            "ho st/x",
            "h/\u{7}",
        ] {
            let err = parse_tool_patterns(&[bad.to_owned()]).expect_err(bad);
            assert!(err.to_string().contains("always ask"), "{bad}: {err}");
        }
        let many = vec!["*/x".to_owned(); MAX_ENTRIES + 1];
        assert!(parse_tool_patterns(&many).is_err());
        assert_eq!(
            parse_tool_patterns(&["  */x ".into(), "*/x".into(), String::new()]).expect("ok"),
            ["*/x"],
            "trimmed, blanks and duplicates dropped"
        );
    }

    #[test]
    fn connector_hosts_allow_exact_hosts_and_subdomains_only() {
        let open = Policy::default();
        assert!(
            open.allows_host("https://anything.test/mcp"),
            "an empty list allows all"
        );
        let p = policy(
            &[],
            &["MCP.example.com", "*.corp.test", "10.0.0.7", "[::1]"],
        );
        assert!(p.allows_host("https://mcp.example.com/mcp"));
        assert!(p.allows_host("https://MCP.EXAMPLE.COM:8443/x"));
        assert!(!p.allows_host("https://example.com/mcp"));
        assert!(!p.allows_host("https://mcp.example.com.evil.test/mcp"));
        assert!(!p.allows_host("https://evilmcp.example.com/mcp"));
        assert!(p.allows_host("https://a.corp.test/mcp"));
        assert!(p.allows_host("https://a.b.corp.test/mcp"));
        assert!(
            !p.allows_host("https://corp.test/mcp"),
            "*.domain is its subdomains"
        );
        assert!(!p.allows_host("https://xcorp.test/mcp"));
        assert!(!p.allows_host("https://.corp.test/mcp"));
        assert!(p.allows_host("http://10.0.0.7:9000/mcp"));
        assert!(p.allows_host("http://[::1]:9000/mcp"));
        assert!(!p.allows_host("http://10.0.0.70/mcp"));
        assert!(!p.allows_host("not a url"));
        // Userinfo does not move the host.
        assert!(!p.allows_host("https://mcp.example.com@evil.test/mcp"));
    }

    #[test]
    fn bad_hosts_are_refused() {
        for bad in [
            "https://mcp.example.com",
            "mcp.example.com:443",
            "mcp.example.com/mcp",
            "*",
            "*.*.test",
            "a*b.test",
            "user@host.test",
            "ho st",
        ] {
            assert!(parse_hosts(&[bad.to_owned()]).is_err(), "{bad}");
        }
    }

    #[test]
    fn changes_name_each_setting_with_before_and_after() {
        let before = policy(&["*/a"], &[]);
        let after = Policy {
            forbid_always_allow: true,
            connector_hosts: vec!["x.test".into()],
            ..before.clone()
        };
        let changes = after.changes_from(&before);
        let pairs: Vec<_> = changes
            .iter()
            .map(|c| (c.setting.as_str(), c.before.as_str(), c.after.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("forbid_always_allow", "false", "true"),
                ("connector_hosts", "", "x.test")
            ]
        );
        assert!(before.changes_from(&before).is_empty());
    }
}
