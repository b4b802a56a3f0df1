//! The instance's admin policy (DESIGN §5 "Admin policy"): one stored row,
//! stricter than any user's choice, read wherever it applies — by the tool
//! box for the gate's facts at call time ([`Policy::facts`]), by the
//! connector session on every connection ([`Policy::allows_host`]), by the
//! grant and trust handlers — never cached.
//!
//! Patterns in `always_ask_tools` are `connector-host/tool`, each side a
//! glob (the `glob` crate): `*/delete_*` is every connector's `delete_…`
//! tools and `mail.example.com/*` every tool of one host. Entries of
//! `connector_hosts` are a host (`mcp.example.com`, `10.0.0.7`, `[::1]`)
//! or `*.domain`, which matches the domain's subdomains, not the domain.
//!
//! **Policy matches what things are, not how they are spelled.** A host,
//! on both sides, is read as a URL's host is ([`normal_host`]):
//! lower-case, no trailing dot, IDNA names in punycode, IP literals in
//! their one canonical form (`0x7f.1` is `127.0.0.1`; an IPv4-mapped IPv6
//! address is its IPv4 address). A pattern's host also matches every
//! address the connector's name resolves to ([`Policy::always_asks`]
//! takes them): `127.0.0.1/*` covers the same server added as
//! `localhost`. A tool name, on both sides, is folded ([`fold_tool`]):
//! lower-case, and each character's Unicode TR39 skeleton, so
//! `Send_message` and a Cyrillic `ѕend_message` are `*/send_*`'s. Tool
//! names holding `/`, control or invisible characters are dropped at
//! listing (`mcp`), and a pattern that could never match is refused
//! ([`parse_tool_patterns`]).
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
use countersign_api::{ActivityKind, Destination, DestinationKind, PolicyUpdate, SettingChange};
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
    /// Domains, hosts and e-mail addresses inside the firm
    /// ([`parse_destination`], each covering its subdomains).
    pub internal_destinations: Vec<String>,
    /// Patterns as `always_ask_tools`: these tools' results wait for the
    /// user's review before the model reads them (docs/design.md §6.5a).
    pub review_results_tools: Vec<String>,
    /// Patterns as `always_ask_tools`: these tools' calls need a second
    /// approval, from an approver who is not the requester.
    pub second_approval_tools: Vec<String>,
    /// Entries as `internal_destinations`: a call that sends to one of
    /// them needs a second approval.
    pub second_approval_destinations: Vec<String>,
    pub updated_at: Option<OffsetDateTime>,
    pub updated_by: Option<Uuid>,
}

const MATCH: MatchOptions = MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

/// The characters a glob gives meaning to: left as they are by folding.
const GLOB_CHARS: &[char] = &['*', '?', '[', ']', '!', '-'];

/// The host of a connector URL, normalised ([`normal_host`]; `None` for no
/// host).
pub fn host_of(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    normal_host(&url_host(&url)?)
}

/// The URL's host as written in a URL (`[…]` around IPv6).
fn url_host(url: &reqwest::Url) -> Option<String> {
    url.host().map(|h| match h {
        url::Host::Ipv6(ip) => format!("[{ip}]"),
        other => other.to_string(),
    })
}

/// `host` as a URL's host is read: lower-case, without a trailing dot,
/// IDNA names in punycode, an IP literal in its canonical form (an
/// IPv4-mapped IPv6 address as its IPv4 address, IPv6 in brackets).
/// `None` when it is no host.
pub fn normal_host(host: &str) -> Option<String> {
    let trimmed = host.trim().trim_end_matches('.');
    // A port (even the scheme's own, which the URL parser drops) is no
    // part of a host.
    if trimmed.is_empty() || (trimmed.contains(':') && !trimmed.starts_with('[')) {
        return None;
    }
    let url = reqwest::Url::parse(&format!("https://{trimmed}/")).ok()?;
    if url.path() != "/" || url.port().is_some() || !url.username().is_empty() {
        return None;
    }
    Some(match url.host()? {
        url::Host::Domain(name) => name.trim_end_matches('.').to_ascii_lowercase(),
        url::Host::Ipv4(ip) => ip.to_string(),
        url::Host::Ipv6(ip) => address_text(std::net::IpAddr::V6(ip)),
    })
}

/// An address as a normalised host: `127.0.0.1`, `[::1]`.
pub fn address_text(ip: std::net::IpAddr) -> String {
    match ip.to_canonical() {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// A tool name (or a pattern's tool part) as the policy compares it:
/// lower-case, each character's TR39 skeleton (look-alikes of other
/// scripts fold to the letter they imitate), lower-case again; a glob's
/// special characters stay as they are.
pub fn fold_tool(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut buf = [0u8; 4];
    for c in name.chars() {
        if GLOB_CHARS.contains(&c) {
            out.push(c);
            continue;
        }
        for lower in c.to_lowercase() {
            for folded in unicode_security::skeleton(lower.encode_utf8(&mut buf)) {
                out.extend(folded.to_lowercase());
            }
        }
    }
    out
}

/// A pattern's host part, normalised where it is a host and not a glob
/// (each label without glob characters through [`normal_host`]).
fn normal_host_pattern(host: &str) -> Option<String> {
    if !host.contains(['*', '?', '[', ']', '!']) || is_bracketed_ipv6(host) {
        return normal_host(host);
    }
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let mut labels = Vec::new();
    for label in host.split('.') {
        if label.contains(['*', '?', '[', ']', '!']) {
            labels.push(label.to_owned());
        } else {
            labels.push(normal_host(label)?);
        }
    }
    Some(labels.join("."))
}

fn is_bracketed_ipv6(host: &str) -> bool {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .is_some_and(|h| h.parse::<std::net::Ipv6Addr>().is_ok())
}

/// Whether stored pattern `pattern` (host part normalised) matches a
/// connector known by `hosts` (its normalised host and its addresses) and
/// its tool, folded.
fn pattern_matches(pattern: &str, hosts: &[String], folded_tool: &str) -> bool {
    let Some((host, tool)) = pattern.split_once('/') else {
        return true; // Checked on the way in; closed, never open.
    };
    let host_matches = if is_bracketed_ipv6(host) || !host.contains(['*', '?', '[', ']', '!']) {
        hosts.iter().any(|h| h == host)
    } else {
        match Pattern::new(host) {
            Ok(p) => hosts.iter().any(|h| p.matches_with(h, MATCH)),
            Err(_) => true,
        }
    };
    host_matches
        && Pattern::new(&fold_tool(tool)).map_or(true, |p| p.matches_with(folded_tool, MATCH))
}

impl Policy {
    /// Whether a call to `tool` of the connector at `url`, whose name
    /// resolved to `addresses`, always asks. A URL without a host matches
    /// no pattern's host but a glob's such as `*`.
    pub fn always_asks(&self, url: &str, addresses: &[std::net::IpAddr], tool: &str) -> bool {
        let mut hosts: Vec<String> = host_of(url).into_iter().collect();
        hosts.extend(addresses.iter().map(|ip| address_text(*ip)));
        if hosts.is_empty() {
            hosts.push(String::new());
        }
        let tool = fold_tool(tool);
        self.always_ask_tools
            .iter()
            .any(|pattern| pattern_matches(pattern, &hosts, &tool))
    }

    /// Whether results of `tool` of the connector at `url` (whose name
    /// resolved to `addresses`) wait for review, by the same matching as
    /// [`Self::always_asks`].
    pub fn reviews_results(&self, url: &str, addresses: &[std::net::IpAddr], tool: &str) -> bool {
        let mut hosts: Vec<String> = host_of(url).into_iter().collect();
        hosts.extend(addresses.iter().map(|ip| address_text(*ip)));
        if hosts.is_empty() {
            hosts.push(String::new());
        }
        let tool = fold_tool(tool);
        self.review_results_tools
            .iter()
            .any(|pattern| pattern_matches(pattern, &hosts, &tool))
    }

    /// Whether connectors may point at `url`'s host: always when the list
    /// is empty. By the host's name (normalised) only, never by what it
    /// resolves to: an allowed name or address is a trust decision another
    /// name of the same machine has not earned.
    pub fn allows_host(&self, url: &str) -> bool {
        if self.connector_hosts.is_empty() {
            return true;
        }
        let Some(host) = host_of(url) else {
            return false;
        };
        self.connector_hosts.iter().any(|entry| {
            let entry = entry.as_str();
            match entry.strip_prefix("*.") {
                Some(domain) => {
                    let domain = normal_host(domain).unwrap_or_else(|| domain.to_owned());
                    host.strip_suffix(domain.as_str())
                        .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.'))
                }
                None => normal_host(entry).is_some_and(|e| e == host),
            }
        })
    }

    /// Whether a call of `tool` at `url` (whose name resolved to
    /// `addresses`) that sends to `destinations` needs a second approval:
    /// its tool matches `second_approval_tools` (as [`Self::always_asks`]
    /// matches), or one of its destinations is covered by
    /// `second_approval_destinations` (as [`destination_in`] covers).
    pub fn needs_second_approval(
        &self,
        url: &str,
        addresses: &[std::net::IpAddr],
        tool: &str,
        destinations: &[Destination],
    ) -> bool {
        if destinations
            .iter()
            .any(|d| destination_in(d, &self.second_approval_destinations))
        {
            return true;
        }
        if self.second_approval_tools.is_empty() {
            return false;
        }
        let mut hosts: Vec<String> = host_of(url).into_iter().collect();
        hosts.extend(addresses.iter().map(|ip| address_text(*ip)));
        if hosts.is_empty() {
            hosts.push(String::new());
        }
        let tool = fold_tool(tool);
        self.second_approval_tools
            .iter()
            .any(|pattern| pattern_matches(pattern, &hosts, &tool))
    }

    /// What the gate needs to know of the policy for one call of `tool`
    /// at `url`, whose name resolved to `addresses`, sending to
    /// `destinations`.
    pub fn facts(
        &self,
        url: &str,
        addresses: &[std::net::IpAddr],
        tool: &str,
        destinations: &[Destination],
    ) -> PolicyFacts {
        PolicyFacts {
            always_ask: self.always_asks(url, addresses, tool),
            forbid_always_allow: self.forbid_always_allow,
            forbid_trust_annotations: self.forbid_trust_annotations,
            second_approval: self.needs_second_approval(url, addresses, tool, destinations),
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
            internal_destinations: self.internal_destinations.clone(),
            review_results_tools: self.review_results_tools.clone(),
            require_second_approval: countersign_api::SecondApprovalPolicy {
                tools: self.second_approval_tools.clone(),
                destinations: self.second_approval_destinations.clone(),
            },
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
            (
                "internal_destinations",
                &before.internal_destinations,
                &self.internal_destinations,
            ),
            (
                "review_results_tools",
                &before.review_results_tools,
                &self.review_results_tools,
            ),
            (
                "second_approval_tools",
                &before.second_approval_tools,
                &self.second_approval_tools,
            ),
            (
                "second_approval_destinations",
                &before.second_approval_destinations,
                &self.second_approval_destinations,
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
        // What could never match: a tool part with characters no listed
        // tool name has (invisible ones are dropped at listing), a host
        // part with a port, a scheme or something no host is.
        if tool.chars().any(countersign_api::characters::is_invisible) {
            return Err(invalid(
                "has invisible characters in its tool part, which no listed tool name has, so it                  could never match",
            ));
        }
        if !host.contains(['*', '?', '[', '!']) && host.contains(':') && !is_bracketed_ipv6(host) {
            return Err(invalid(
                "names a port, which connector hosts are compared without, so it could never match",
            ));
        }
        let Some(host) = normal_host_pattern(host) else {
            return Err(invalid(
                "has a host part that is no host name, so it could never match",
            ));
        };
        let pattern = format!("{host}/{tool}");
        let globs_parse = (is_bracketed_ipv6(&host) || Pattern::new(&host).is_ok())
            && Pattern::new(&fold_tool(tool)).is_ok();
        if !globs_parse {
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
        let (wild, host) = match entry.strip_prefix("*.") {
            Some(domain) => (true, domain),
            None => (false, entry.as_str()),
        };
        let normal = (!host.contains('*') && !host.contains('/'))
            .then(|| normal_host(host))
            .flatten();
        let Some(normal) = normal else {
            return Err(PolicyError::Invalid(format!(
                "Allowed connector hosts: \"{entry}\" is not a host name (write mcp.example.com \
                 or *.example.com, without https:// or a port)."
            )));
        };
        let stored = if wild { format!("*.{normal}") } else { normal };
        if !out.contains(&stored) {
            out.push(stored);
        }
    }
    Ok(out)
}

/// A destination-list entry as stored: a domain or host (normalised; it
/// covers its subdomains), or an e-mail address (its domain normalised).
/// `None` when it is none of these.
pub fn parse_destination(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if raw.is_empty() || raw.chars().count() > MAX_ENTRY_CHARS || raw.chars().any(char::is_control)
    {
        return None;
    }
    if let Some((local, domain)) = raw.rsplit_once('@') {
        if local.is_empty() || local.contains(char::is_whitespace) {
            return None;
        }
        return Some(format!("{}@{}", local.to_lowercase(), normal_host(domain)?));
    }
    let host = raw.strip_prefix("*.").unwrap_or(raw);
    if host.contains(['*', '/', '?']) {
        return None;
    }
    normal_host(host)
}

/// Whether destination `d` is covered by `entries` (as
/// [`parse_destination`] stores them): an address by an equal address or
/// by its domain or a parent domain, a host by itself or a parent domain,
/// a named destination (`#general`) by an equal entry.
pub fn destination_in(d: &Destination, entries: &[String]) -> bool {
    let covers = |domain: &str, entry: &str| {
        domain == entry
            || domain
                .strip_suffix(entry)
                .is_some_and(|sub| sub.ends_with('.'))
    };
    match d.kind {
        DestinationKind::Email => {
            let address = d.ascii.to_lowercase();
            let Some((_, domain)) = address.rsplit_once('@') else {
                return false;
            };
            entries.iter().any(|e| {
                if e.contains('@') {
                    *e == address
                } else {
                    covers(domain, e)
                }
            })
        }
        DestinationKind::Host => {
            let host = d.ascii.to_lowercase();
            entries.iter().any(|e| !e.contains('@') && covers(&host, e))
        }
        DestinationKind::Named | DestinationKind::Unknown => {
            let name = d.ascii.trim().to_lowercase();
            entries.contains(&name)
        }
    }
}

/// `internal_destinations` as typed → as stored
/// ([`parse_destination`]): domains and hosts normalised, e-mail
/// addresses with their domain normalised, duplicates and blanks dropped.
pub fn parse_internal(list: &[String]) -> Result<Vec<String>, PolicyError> {
    parse_destination_list(list, "Destinations inside the firm")
}

/// A list of destinations as typed → as stored ([`parse_destination`]);
/// `what` names the setting in an error.
pub fn parse_destination_list(list: &[String], what: &str) -> Result<Vec<String>, PolicyError> {
    bounded(list, what)?;
    let mut out: Vec<String> = Vec::new();
    for raw in list {
        if raw.trim().is_empty() {
            continue;
        }
        let Some(entry) = parse_destination(raw) else {
            return Err(PolicyError::Invalid(format!(
                "{what}: \"{}\" is not a domain, host or e-mail address \
                 (write firm.example, 10.0.0.7 or partner@firm.example).",
                raw.trim()
            )));
        };
        if !out.contains(&entry) {
            out.push(entry);
        }
    }
    Ok(out)
}

/// Whether a flow to the connector at `url` sending to `destinations`
/// stays inside the firm: the connector's host and every destination are
/// in `internal_destinations`, and the flow names a destination or goes
/// to a closed-world tool (an open-world tool with no destination in its
/// arguments may send anywhere).
pub fn stays_inside(
    policy: &Policy,
    url: &str,
    destinations: &[Destination],
    closed_world: bool,
) -> bool {
    if policy.internal_destinations.is_empty() {
        return false;
    }
    let inside = |d: &Destination| destination_in(d, &policy.internal_destinations);
    let connector = host_of(url).is_some_and(|host| {
        inside(&Destination {
            kind: DestinationKind::Host,
            ascii: host,
            unicode: None,
            path: String::new(),
        })
    });
    connector && (closed_world || !destinations.is_empty()) && destinations.iter().all(inside)
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
                 connector_hosts, require_mfa, internal_destinations, review_results_tools, \
                 second_approval_tools, second_approval_destinations, updated_at, updated_by \
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
                    connector_hosts, require_mfa, internal_destinations, review_results_tools,
                    second_approval_tools, second_approval_destinations, updated_at, updated_by
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
    let internal = update
        .internal_destinations
        .as_deref()
        .map(parse_internal)
        .transpose()?;
    let review = update
        .review_results_tools
        .as_deref()
        .map(parse_tool_patterns)
        .transpose()?;
    let second = update
        .require_second_approval
        .as_ref()
        .map(|s| {
            Ok::<_, PolicyError>((
                parse_tool_patterns(&s.tools)?,
                parse_destination_list(
                    &s.destinations,
                    "Destinations that need a second approval",
                )?,
            ))
        })
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
        internal_destinations: internal.unwrap_or_else(|| before.internal_destinations.clone()),
        review_results_tools: review.unwrap_or_else(|| before.review_results_tools.clone()),
        second_approval_tools: second
            .as_ref()
            .map_or_else(|| before.second_approval_tools.clone(), |s| s.0.clone()),
        second_approval_destinations: second.as_ref().map_or_else(
            || before.second_approval_destinations.clone(),
            |s| s.1.clone(),
        ),
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
                internal_destinations = $7, review_results_tools = $8,
                second_approval_tools = $9, second_approval_destinations = $10,
                updated_at = now(), updated_by = $6
          where id
         returning forbid_always_allow, forbid_trust_annotations, always_ask_tools,
                   connector_hosts, require_mfa, internal_destinations, review_results_tools,
                   second_approval_tools, second_approval_destinations, updated_at, updated_by",
        after.forbid_always_allow,
        after.forbid_trust_annotations,
        &after.always_ask_tools,
        &after.connector_hosts,
        after.require_mfa,
        admin as UserId,
        &after.internal_destinations,
        &after.review_results_tools,
        &after.second_approval_tools,
        &after.second_approval_destinations,
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
        let asks = |url: &str, tool: &str| p.always_asks(url, &[], tool);
        assert!(asks("https://MAIL.example.com/mcp", "send_email"));
        assert!(asks("https://mail.example.com:8443/mcp", "send_"));
        assert!(!asks(
            "https://mail.example.com.evil.test/mcp",
            "send_email"
        ));
        assert!(!asks("https://other.example.com/mcp", "send_email"));
        assert!(asks("https://docs.example.com/mcp", "delete_page"));
        assert!(!asks("https://docs.example.com/mcp", "undelete_page"));
        // `*` does not cross `/`: a tool named `x/delete_y` is not `*/delete_*`'s.
        let q = policy(&["docs.example.com/*"], &[]);
        assert!(q.always_asks("https://docs.example.com/mcp", &[], "anything"));
        assert!(!q.always_asks("https://docs.example.com/mcp", &[], "a/b"));
        assert!(!Policy::default().always_asks("https://x.test/", &[], "t"));
    }

    #[test]
    fn results_are_reviewed_for_the_tools_the_patterns_name_only() {
        let p = Policy {
            review_results_tools: parse_tool_patterns(&["*/read_*".to_owned()]).expect("valid"),
            ..Policy::default()
        };
        assert!(p.reviews_results("https://docs.example/mcp", &[], "read_file"));
        assert!(p.reviews_results("https://docs.example/mcp", &[], "READ_file"));
        assert!(!p.reviews_results("https://docs.example/mcp", &[], "search"));
        assert!(!p.always_asks("https://docs.example/mcp", &[], "read_file"));
        assert!(!Policy::default().reviews_results("https://x.test/", &[], "read_file"));
    }

    /// Issue 44, item 3: each of these escaped its pattern before
    /// matching normalised hosts, resolved addresses and folded names.
    #[test]
    fn policy_matches_what_a_host_and_a_tool_are_not_how_they_are_spelled() {
        use std::net::IpAddr;
        let p = policy(&["127.0.0.1/*", "*/send_*", "Bücher.Example./read_*"], &[]);
        let loopback: IpAddr = "127.0.0.1".parse().expect("ip");
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().expect("ip");
        for (url, addresses, tool, why) in [
            (
                "http://localhost:3100/mcp",
                vec![loopback],
                "search",
                "a name resolving to it",
            ),
            (
                "http://localhost:3100/mcp",
                vec![mapped],
                "search",
                "an IPv4-mapped address",
            ),
            (
                "http://0x7f.1:3100/mcp",
                vec![],
                "search",
                "a hex IPv4 literal",
            ),
            (
                "http://127.1:3100/mcp",
                vec![],
                "search",
                "a short IPv4 literal",
            ),
            (
                "http://[::ffff:127.0.0.1]:3100/mcp",
                vec![],
                "search",
                "a mapped literal",
            ),
            (
                "https://mail.test/mcp",
                vec![],
                "Send_message",
                "another case",
            ),
            (
                "https://mail.test/mcp",
                vec![],
                "SEND_MESSAGE",
                "upper case",
            ),
            (
                "https://mail.test/mcp",
                vec![],
                "\u{0455}end_message",
                "Cyrillic dze",
            ),
            (
                "https://mail.test/mcp",
                vec![],
                "s\u{0435}nd_message",
                "Cyrillic ie",
            ),
            (
                "https://xn--bcher-kva.example/mcp",
                vec![],
                "read_all",
                "punycode of an IDN pattern",
            ),
            (
                "https://BÜCHER.example./mcp",
                vec![],
                "read_all",
                "the IDN, a trailing dot",
            ),
        ] {
            assert!(p.always_asks(url, &addresses, tool), "{why}: {url} {tool}");
        }
        let other: IpAddr = "203.0.113.9".parse().expect("ip");
        assert!(!p.always_asks("https://mail.test/mcp", &[other], "search"));
        assert!(!p.always_asks("https://mail.test/mcp", &[], "resend_message"));
        let v6 = policy(&["[::1]/*", "[0:0::1]/x"], &[]);
        assert_eq!(v6.always_ask_tools, ["[::1]/*", "[::1]/x"]);
        let one: IpAddr = "::1".parse().expect("ip");
        assert!(v6.always_asks("http://localhost/mcp", &[one], "t"));
        assert!(v6.always_asks("http://[0::1]/mcp", &[], "t"));
        assert!(!v6.always_asks("http://[::2]/mcp", &[], "t"));
    }

    #[test]
    fn a_pattern_that_could_never_match_is_refused() {
        for (bad, words) in [
            ("127.0.0.1:3100/*", "port"),
            ("mcp.example.com:443/send_*", "port"),
            ("*/send\u{200B}_*", "invisible"),
            ("exa mple/x", "spaces"),
            ("ex%ample.com/x", "no host"),
        ] {
            let err = parse_tool_patterns(&[bad.to_owned()]).expect_err(bad);
            assert!(err.to_string().contains(words), "{bad}: {err}");
        }
        assert_eq!(
            parse_tool_patterns(&["0x7F.1/*".into(), "LOCALHOST./x".into()]).expect("ok"),
            ["127.0.0.1/*", "localhost/x"],
            "stored normalised"
        );
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
