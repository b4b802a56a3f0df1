//! The approval ledger (DESIGN §6): the only module that writes
//! `mcp_pending_calls`. Every transition is one conditional UPDATE, so two
//! instances, two tabs or fifty concurrent requests cannot both win:
//!
//! ```text
//! pending → approved → executing → executed | failed
//! pending → denied | expired
//! ```
//!
//! A row binds the exact call: the arguments' RFC 8785 canonical JSON and
//! its SHA-256 are stored, and an HMAC (key `COUNTERSIGN_APPROVAL_KEY`,
//! named by a key id) covers id, user, chat, turn, connector, destination
//! (the connector URL at proposal), tool, arguments digest and expiry. A decision carries only approve/deny and
//! the digest the card showed; it can never change what runs. The turn
//! claims an approved row, re-reads and re-verifies it, runs it and records
//! the outcome; a failure still spends the approval.
//!
//! Waiting holds no pooled connection: one [`Watcher`] per instance reads
//! the statuses of every call its turns wait for, woken by `NOTIFY` from
//! whichever instance took the decision and polling as a fallback.

use crate::{
    AppState, Config,
    db::{
        self,
        trip::{Arg, As, Part, Statement},
    },
    digest::{canonical, sha256_hex},
    events,
    ids::{ChatId, ConnectorId, PendingCallId, ToolContext, TurnId, UserId},
    metrics::Decided,
};
use countersign_api::{
    ChatEvent, GrantKind, PendingCall, PendingCallStatus, Provenance, Resolution, ToolCallStatus,
    ToolRisk,
};
use hmac::{Hmac, KeyInit as _, Mac as _};
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use sqlx::{FromRow as _, Row as _, types::Json};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};
use time::OffsetDateTime;
use tokio::sync::watch;
use uuid::Uuid;

/// What the model is told when the user declines.
pub const DECLINED: &str = r#"{"ok":false,"error":"The user declined this tool call."}"#;
/// What the model is told when nobody decided in time.
pub const EXPIRED: &str = "The user did not approve this tool call in time.";

type HmacSha256 = Hmac<Sha256>;

/// One HMAC key and its id (the first 8 hex digits of its SHA-256).
#[derive(Clone)]
struct Key {
    id: String,
    mac: HmacSha256,
}

impl Key {
    fn new(bytes: &[u8]) -> anyhow::Result<Self> {
        anyhow::ensure!(
            bytes.len() >= 32,
            "COUNTERSIGN_APPROVAL_KEY must be at least 32 bytes (64 hex characters)"
        );
        let id = hex::encode(&Sha256::digest(bytes)[..4]);
        let mac = HmacSha256::new_from_slice(bytes)
            .map_err(|_| anyhow::anyhow!("unusable COUNTERSIGN_APPROVAL_KEY"))?;
        Ok(Self { id, mac })
    }

    fn from_hex(hex_key: &str) -> anyhow::Result<Self> {
        let bytes = hex::decode(hex_key.trim())
            .map_err(|_| anyhow::anyhow!("COUNTERSIGN_APPROVAL_KEY must be hex"))?;
        Self::new(&bytes)
    }
}

/// The keys that sign and verify ledger rows. Never printed.
#[derive(Clone)]
pub struct ApprovalKeys {
    current: Key,
    previous: Option<Key>,
}

impl std::fmt::Debug for ApprovalKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalKeys")
            .field("current", &self.current.id)
            .field("previous", &self.previous.as_ref().map(|k| &k.id))
            .finish()
    }
}

/// What the HMAC covers.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    /// Ledger id.
    pub id: PendingCallId,
    /// The only user who may decide it.
    pub user_id: UserId,
    /// Where the card is shown.
    pub chat_id: ChatId,
    /// The turn that waits for it (a turn grant is scoped to it).
    pub turn_id: TurnId,
    /// Re-checked as the user's, kept tool's connector at the claim.
    pub connector_id: ConnectorId,
    /// The connector URL the call was proposed for (and may only run on).
    pub destination_url: &'a str,
    /// Tool name on its server.
    pub tool_name: &'a str,
    /// SHA-256 of the canonical arguments.
    pub arguments_digest: &'a str,
    /// Expiry, in microseconds since the epoch (the database's precision).
    pub expires_at_micros: i128,
}

impl Binding<'_> {
    /// Length-prefixed fields, so no two bindings share their bytes.
    fn message(&self) -> Vec<u8> {
        let fields = [
            self.id.to_string(),
            self.user_id.to_string(),
            self.chat_id.to_string(),
            self.turn_id.to_string(),
            self.connector_id.to_string(),
            self.destination_url.to_owned(),
            self.tool_name.to_owned(),
            self.arguments_digest.to_owned(),
            self.expires_at_micros.to_string(),
        ];
        let mut message = b"countersign/approval/v2".to_vec();
        for field in fields {
            message.extend_from_slice(&(field.len() as u64).to_be_bytes());
            message.extend_from_slice(field.as_bytes());
        }
        message
    }
}

impl ApprovalKeys {
    /// Keys from settings. Without `COUNTERSIGN_APPROVAL_KEY`, a random key
    /// for this process only (with a warning): calls approved through
    /// another instance then fail closed.
    pub fn from_config(config: &Config) -> anyhow::Result<Self> {
        let current = match &config.approval_key {
            Some(key) => Key::from_hex(key.expose())?,
            None => {
                tracing::warn!(
                    "COUNTERSIGN_APPROVAL_KEY is not set: using a key for this process only. \
                     Set the same key on every instance, or approved calls will fail on the others."
                );
                Key::new(&rand::random::<[u8; 32]>())?
            }
        };
        let previous = config
            .approval_key_previous
            .as_ref()
            .map(|k| Key::from_hex(k.expose()))
            .transpose()?;
        Ok(Self { current, previous })
    }

    /// Keys from raw bytes (tests).
    pub fn from_bytes(current: &[u8]) -> anyhow::Result<Self> {
        Ok(Self {
            current: Key::new(current)?,
            previous: None,
        })
    }

    /// Signs `binding`: the key id and the tag (hex).
    pub fn sign(&self, binding: &Binding<'_>) -> (String, String) {
        let mut mac = self.current.mac.clone();
        mac.update(&binding.message());
        (
            self.current.id.clone(),
            hex::encode(mac.finalize().into_bytes()),
        )
    }

    /// Whether `tag` is the HMAC of `binding` under the key `key_id`, in
    /// constant time.
    pub fn verify(&self, key_id: &str, binding: &Binding<'_>, tag: &str) -> bool {
        let key = std::iter::once(&self.current)
            .chain(self.previous.as_ref())
            .find(|k| k.id == key_id);
        let (Some(key), Ok(tag)) = (key, hex::decode(tag)) else {
            return false;
        };
        let mut mac = key.mac.clone();
        mac.update(&binding.message());
        mac.verify_slice(&tag).is_ok()
    }
}

/// A ledger row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Row {
    /// Ledger id.
    pub id: PendingCallId,
    /// The only user who may decide it.
    pub user_id: UserId,
    pub chat_id: ChatId,
    /// The turn that waits for it.
    pub turn_id: TurnId,
    /// The model's call id.
    pub call_id: String,
    /// No foreign key: a connector deleted while the call waits leaves the
    /// evidence; the claim re-checks that the tool is still the user's.
    pub connector_id: ConnectorId,
    /// Its name when proposed.
    pub connector_name: String,
    /// Tool name on its server.
    pub tool_name: String,
    /// Tool name as offered to the model.
    pub model_tool_name: String,
    /// The arguments.
    pub arguments: Value,
    /// Their canonical JSON.
    pub arguments_canonical: String,
    /// Its SHA-256.
    pub arguments_digest: String,
    /// The tool's descriptor digest when proposed.
    pub descriptor_digest: String,
    /// Host the call goes to.
    pub destination: String,
    /// The connector URL at proposal: the only one it may run against.
    pub destination_url: String,
    /// Why it asks.
    pub reason: String,
    /// The grants its card offers, as stored (`text[]` of [`GrantKind`]
    /// words; read them with [`Row::offered_grants`]).
    pub offered_grants_stored: Vec<String>,
    /// Where it stands.
    pub status: PendingCallStatus,
    /// `once`, `turn` or `always` once approved, as stored (read it with
    /// [`Row::grant`]).
    pub grant_kind: Option<String>,
    /// Which key signed it.
    pub hmac_key_id: String,
    /// The tag.
    pub hmac: String,
    /// Why it failed.
    pub error: Option<String>,
    /// After this it cannot be approved.
    pub expires_at: OffsetDateTime,
    /// Its turn stops waiting then (never after `expires_at`): what the
    /// card counts down to.
    pub decide_by: OffsetDateTime,
    /// When it was decided (or expired).
    pub decided_at: Option<OffsetDateTime>,
    /// When its execution was claimed (`approved → executing`).
    pub claimed_at: Option<OffsetDateTime>,
    /// Where its arguments came from (none on rows from before issue 16).
    pub provenance: Option<Json<Provenance>>,
}

impl Row {
    /// The grants its card offers.
    pub fn offered_grants(&self) -> Vec<GrantKind> {
        self.offered_grants_stored
            .iter()
            .map(|g| GrantKind::from_wire(g))
            .collect()
    }

    /// How far the approval reaches, once approved.
    pub fn grant(&self) -> Option<GrantKind> {
        self.grant_kind.as_deref().map(GrantKind::from_wire)
    }

    fn binding(&self) -> Binding<'_> {
        Binding {
            id: self.id,
            user_id: self.user_id,
            chat_id: self.chat_id,
            turn_id: self.turn_id,
            connector_id: self.connector_id,
            destination_url: &self.destination_url,
            tool_name: &self.tool_name,
            arguments_digest: &self.arguments_digest,
            expires_at_micros: self.expires_at.unix_timestamp_nanos() / 1000,
        }
    }

    /// Whether the stored arguments are the ones that were shown and
    /// signed: both stored forms agree, the digest is theirs, and the HMAC
    /// holds.
    pub fn verify(&self, keys: &ApprovalKeys) -> bool {
        canonical(&self.arguments) == self.arguments_canonical
            && sha256_hex(&self.arguments_canonical) == self.arguments_digest
            && keys.verify(&self.hmac_key_id, &self.binding(), &self.hmac)
    }

    fn expires_at_rfc3339(&self) -> String {
        self.expires_at
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    }

    fn decide_by_rfc3339(&self) -> String {
        self.decide_by
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    }

    /// When it was decided, RFC 3339.
    pub fn decided_at_rfc3339(&self) -> Option<String> {
        self.decided_at.and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
    }

    /// The arguments, pretty-printed for the card.
    pub fn arguments_pretty(&self) -> String {
        serde_json::to_string_pretty(&self.arguments).unwrap_or_default()
    }

    /// The `mcp_confirmation_required` event: the stored evidence, and
    /// what the reviewed descriptor says about the tool.
    pub fn required_event(&self, about: &AboutTool) -> ChatEvent {
        ChatEvent::McpConfirmationRequired {
            turn_id: self.turn_id.to_string(),
            id: self.id.to_string(),
            call_id: self.call_id.clone(),
            connector_id: self.connector_id.to_string(),
            connector_name: self.connector_name.clone(),
            tool_name: self.tool_name.clone(),
            arguments: self.arguments.clone(),
            arguments_json: self.arguments_pretty(),
            arguments_digest: self.arguments_digest.clone(),
            destination: self.destination.clone(),
            reason: self.reason.clone(),
            expires_at: self.expires_at_rfc3339(),
            decide_by: self.decide_by_rfc3339(),
            offered_grants: self.offered_grants(),
            tool_title: about.title.clone(),
            tool_description: about.description.clone(),
            risk: Some(about.risk.clone()),
            provenance: self.provenance.as_ref().map(|p| Box::new(p.0.clone())),
            character_warnings: crate::characters::warnings(&self.arguments),
            destinations: crate::destinations::destinations(&self.arguments),
        }
    }

    /// The row as `GET /api/mcp-pending-calls` shows it.
    pub fn to_api(&self, expires_in_secs: f64, decide_in_secs: f64) -> PendingCall {
        PendingCall {
            id: self.id.to_string(),
            chat_id: self.chat_id.to_string(),
            turn_id: self.turn_id.to_string(),
            call_id: self.call_id.clone(),
            connector_id: self.connector_id.to_string(),
            connector_name: self.connector_name.clone(),
            tool_name: self.tool_name.clone(),
            arguments: self.arguments.clone(),
            arguments_json: self.arguments_pretty(),
            arguments_digest: self.arguments_digest.clone(),
            destination: self.destination.clone(),
            reason: self.reason.clone(),
            expires_at: self.expires_at_rfc3339(),
            expires_in_secs,
            decide_by: self.decide_by_rfc3339(),
            decide_in_secs,
            offered_grants: self.offered_grants(),
            provenance: self.provenance.as_ref().map(|p| p.0.clone()),
            character_warnings: crate::characters::warnings(&self.arguments),
            destinations: crate::destinations::destinations(&self.arguments),
        }
    }
}

/// Titles and descriptions longer than this (in characters) are cut on
/// the card.
pub const ABOUT_MAX_CHARS: usize = 1000;

/// What the card says about a tool, from the descriptor the user reviewed
/// (not stored with the row: it is not part of what was approved).
#[derive(Debug, Clone)]
pub struct AboutTool {
    /// Its title, if it has one.
    pub title: Option<String>,
    /// Its description.
    pub description: Option<String>,
    /// What its annotations declare.
    pub risk: ToolRisk,
}

/// A gated call to put before the user.
#[derive(Debug, Clone)]
pub struct Proposal<'a> {
    /// Who, where.
    pub ctx: ToolContext,
    /// The model's call id.
    pub call_id: &'a str,
    /// The kept tool's connector.
    pub connector_id: ConnectorId,
    /// Its name.
    pub connector_name: &'a str,
    /// Tool name on its server.
    pub tool_name: &'a str,
    /// Tool name as offered to the model.
    pub model_tool_name: &'a str,
    /// The arguments object, exactly as it would run.
    pub arguments: &'a Value,
    /// The tool's current descriptor digest.
    pub descriptor_digest: &'a str,
    /// The connector URL it may run against (the card shows its host).
    pub destination_url: &'a str,
    /// Why it asks.
    pub reason: &'a str,
    /// The grants the card offers (`gate::offered_grants`: only "Allow
    /// once" for a tool that changed since it was reviewed or that the
    /// policy says always asks; no "Always allow" under a policy that
    /// forbids it). "Allow once" is always among them.
    pub offered_grants: &'a [GrantKind],
    /// Where the arguments came from (stored with the row: positions and
    /// digests, never a copy of the matched text).
    pub provenance: &'a Provenance,
}

/// Writes a `pending` row, expiring `COUNTERSIGN_APPROVAL_TTL_SECS` from
/// the database's now, signed. Sweeps aged terminal rows first (best
/// effort).
pub async fn propose(state: &AppState, p: &Proposal<'_>) -> Result<Row, sqlx::Error> {
    if let Err(err) = sweep(state).await {
        tracing::warn!(error = %err, "approval ledger sweep failed");
    }
    let arguments_canonical = canonical(p.arguments);
    let arguments_digest = sha256_hex(&arguments_canonical);
    let id = PendingCallId::new_v4();
    let mut tx = db::service_tx(&state.db).await?;
    let times = sqlx::query!(
        r#"select date_trunc('microseconds', now() + make_interval(secs => $1::float8))
                  as "expires_at!",
                  date_trunc('microseconds', now() + make_interval(secs => least($1, $2)::float8))
                  as "decide_by!""#,
        state.config.approval_ttl_secs as f64,
        state.config.approval_wait_secs as f64,
    )
    .fetch_one(&mut *tx)
    .await?;
    let (expires_at, decide_by) = (times.expires_at, times.decide_by);
    let (hmac_key_id, hmac) = state.approval_keys.sign(&Binding {
        id,
        user_id: p.ctx.user_id,
        chat_id: p.ctx.chat_id,
        turn_id: p.ctx.turn_id,
        connector_id: p.connector_id,
        destination_url: p.destination_url,
        tool_name: p.tool_name,
        arguments_digest: &arguments_digest,
        expires_at_micros: expires_at.unix_timestamp_nanos() / 1000,
    });
    let offered_grants: Vec<&str> = std::iter::once(GrantKind::Once)
        .chain(p.offered_grants.iter().copied())
        .filter(|g| *g != GrantKind::Unknown)
        .fold(Vec::new(), |mut seen, g| {
            if !seen.contains(&g.as_str()) {
                seen.push(g.as_str());
            }
            seen
        });
    let row = sqlx::query_as!(
        Row,
        r#"insert into mcp_pending_calls (id, user_id, chat_id, turn_id, call_id, connector_id,
             connector_name, tool_name, model_tool_name, arguments, arguments_canonical,
             arguments_digest, descriptor_digest, destination, destination_url, reason,
             offered_grants, hmac_key_id, hmac, expires_at, decide_by, provenance)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                 $18, $19, $20, $21, $22)
         returning id as "id: _", user_id as "user_id: _", chat_id as "chat_id: _",
                   turn_id as "turn_id: _", call_id, connector_id as "connector_id: _",
                   connector_name, tool_name, model_tool_name, arguments, arguments_canonical,
                   arguments_digest, descriptor_digest, destination, destination_url, reason,
                   offered_grants as offered_grants_stored, status as "status: _", grant_kind,
                   hmac_key_id, hmac, error, expires_at, decide_by, decided_at, claimed_at,
                   provenance as "provenance: Json<Provenance>""#,
        id as PendingCallId,
        p.ctx.user_id as UserId,
        p.ctx.chat_id as ChatId,
        p.ctx.turn_id as TurnId,
        p.call_id,
        p.connector_id as ConnectorId,
        p.connector_name,
        p.tool_name,
        p.model_tool_name,
        p.arguments,
        &arguments_canonical,
        &arguments_digest,
        p.descriptor_digest,
        destination(p.destination_url),
        p.destination_url,
        p.reason,
        &offered_grants as &[&str],
        &hmac_key_id,
        &hmac,
        expires_at,
        decide_by,
        Json(p.provenance) as _,
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(row)
}

/// The user's live (pending, unexpired) calls, oldest first, with the
/// seconds each has left until it expires and until its turn stops
/// waiting.
pub async fn live_for_user(
    state: &AppState,
    user_id: UserId,
) -> Result<Vec<(Row, f64, f64)>, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    // `now()` is the transaction's start, the same in both statements.
    let now = sqlx::query_scalar!(r#"select now() as "now!""#)
        .fetch_one(&mut *tx)
        .await?;
    let rows = sqlx::query_as!(
        Row,
        r#"select id as "id: _", user_id as "user_id: _", chat_id as "chat_id: _",
                  turn_id as "turn_id: _", call_id, connector_id as "connector_id: _",
                  connector_name, tool_name, model_tool_name, arguments, arguments_canonical,
                  arguments_digest, descriptor_digest, destination, destination_url, reason,
                  offered_grants as offered_grants_stored, status as "status: _", grant_kind,
                  hmac_key_id, hmac, error, expires_at, decide_by, decided_at, claimed_at,
                  provenance as "provenance: Json<Provenance>"
             from mcp_pending_calls
            where user_id = $1 and status = 'pending' and expires_at > now()
            order by created_at"#,
        user_id as UserId,
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let left = (row.expires_at - now).as_seconds_f64();
            let to_decide = (row.decide_by - now).as_seconds_f64().max(0.0);
            (row, left, to_decide)
        })
        .collect())
}

/// How many calls wait for a decision now, on every instance (pending and
/// not yet expired): the `/metrics` gauge, read at scrape time only.
pub async fn pending_count(pool: &sqlx::PgPool) -> Result<i64, sqlx::Error> {
    let mut tx = db::service_tx(pool).await?;
    let count = sqlx::query_scalar!(
        r#"select count(*) as "count!" from mcp_pending_calls
            where status = 'pending' and expires_at > now()"#,
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(count)
}

/// A user's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Run it.
    Approve,
    /// Do not.
    Deny,
}

impl Verdict {
    /// The ledger status it leads to.
    pub fn status(self) -> PendingCallStatus {
        match self {
            Self::Approve => PendingCallStatus::Approved,
            Self::Deny => PendingCallStatus::Denied,
        }
    }
}

/// Why a decision was not taken.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    /// Unknown, another user's, or already decided.
    #[error("No such pending tool call.")]
    NotFound,
    /// The owner decided too late.
    #[error("This tool call approval has expired.")]
    Expired,
    /// The digest is not the one of the stored arguments.
    #[error("The arguments changed since this card was shown; nothing was decided. Reload.")]
    DigestMismatch,
    /// The card does not offer this grant (the tool changed since it was
    /// reviewed: only "Allow once").
    #[error("grant_not_offered")]
    GrantNotOffered,
    /// Database failure.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Decides a pending call: one conditional UPDATE on id + user + pending +
/// unexpired + matching digest; then `NOTIFY`. When it changes no row, a
/// read (which decides nothing) says why.
pub async fn decide(
    state: &AppState,
    user_id: UserId,
    id: PendingCallId,
    verdict: Verdict,
    grant: GrantKind,
    arguments_digest: &str,
) -> Result<PendingCallStatus, DecideError> {
    let status = verdict.status();
    let grant = (verdict == Verdict::Approve).then_some(grant.as_str());
    // The decision and its NOTIFY (to every instance, once committed) in
    // one statement, a transaction of its own in one round trip: a row
    // comes back only when the UPDATE changed one. The digest was checked
    // to be 64 hex digits, so it travels as the bytes they spell.
    let digest = hex::decode(arguments_digest)
        .ok()
        .filter(|bytes| hex::encode(bytes) == arguments_digest);
    let decided = match &digest {
        Some(digest) => db::trip::run(
            &state.db,
            Part {
                who: As::Service,
                statement: &DECIDE,
                args: vec![
                    Arg::uuid(id),
                    Arg::uuid(user_id),
                    Arg::bytes(digest),
                    Arg::word(status.as_str()),
                    grant.map_or_else(Arg::null, Arg::word),
                ],
            },
        )
        .await?
        .first()
        .map(|row| row.try_get::<bool, _>(0))
        .transpose()?
        .unwrap_or(false),
        None => false,
    };
    if decided {
        // A turn of this instance that waits for it wakes now, without
        // the NOTIFY's hop and the watcher's read; any other instance's
        // watcher reads it on the NOTIFY. The status is what this very
        // conditional UPDATE committed, and the claim still decides.
        if state.config.approval_notify {
            state.watcher.settle(id, status);
        }
        state.metrics.decided(match verdict {
            Verdict::Approve => Decided::Approved,
            Verdict::Deny => Decided::Denied,
        });
        return Ok(status);
    }
    let mut tx = db::service_tx(&state.db).await?;
    let why = sqlx::query!(
        r#"select status as "status: PendingCallStatus", expires_at <= now() as "late!",
                  arguments_digest = $3 as "same!",
                  $4::text is null or $4 = any (offered_grants) as "offered!"
             from mcp_pending_calls where id = $1 and user_id = $2"#,
        id as PendingCallId,
        user_id as UserId,
        arguments_digest,
        grant,
    )
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    use PendingCallStatus::{Expired, Pending};
    let why = why.map(|r| (r.status, r.late, r.same, r.offered));
    Err(match why {
        Some((Expired, _, _, _)) | Some((Pending, true, _, _)) => DecideError::Expired,
        Some((Pending, false, false, _)) => DecideError::DigestMismatch,
        Some((Pending, false, true, false)) => DecideError::GrantNotOffered,
        _ => DecideError::NotFound,
    })
}

/// [`decide`]'s conditional UPDATE with its NOTIFY: `$3` is the digest's
/// bytes, `$4` the status, `$5` the grant (or null).
static DECIDE: Statement = Statement {
    name: "cs_decide",
    params: "(uuid, uuid, bytea, text, text)",
    sql: "with decided as ( \
            update mcp_pending_calls set status = $4, grant_kind = $5, decided_at = now() \
             where id = $1 and user_id = $2 and status = 'pending' and expires_at > now() \
               and arguments_digest = encode($3, 'hex') \
               and ($5 is null or $5 = any (offered_grants)) \
            returning id) \
          select true from decided, \
                 lateral (select pg_notify('countersign_approvals', decided.id::text)) as wake",
};

/// [`claim`]'s UPDATE: `approved → executing`, returning the row.
static CLAIM: Statement = Statement {
    name: "cs_claim",
    params: "(uuid)",
    sql: "update mcp_pending_calls set status = 'executing', claimed_at = now() \
           where id = $1 and status = 'approved' \
          returning id, user_id, chat_id, turn_id, call_id, connector_id, connector_name, \
                    tool_name, model_tool_name, arguments, arguments_canonical, \
                    arguments_digest, descriptor_digest, destination, destination_url, reason, \
                    offered_grants as offered_grants_stored, status, grant_kind, hmac_key_id, \
                    hmac, error, expires_at, decide_by, decided_at, claimed_at, provenance",
};

/// [`grant_of`]'s read.
static GRANT_OF: Statement = Statement {
    name: "cs_grant_of",
    params: "(uuid)",
    sql: "select grant_kind from mcp_pending_calls where id = $1",
};

/// The statements [`db::trip`] runs here, for the test that prepares them all.
pub static TRIPS: [&Statement; 3] = [&DECIDE, &CLAIM, &GRANT_OF];

/// `statement` on pending call `id`, as the service.
fn of_call(statement: &'static Statement, id: PendingCallId) -> Part {
    Part {
        who: As::Service,
        statement,
        args: vec![Arg::uuid(id)],
    }
}

/// How a wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waited {
    /// Approved: claim and run it.
    Approved,
    /// Declined (the model is told; the server is never contacted).
    Denied,
    /// Nobody decided in time.
    Expired,
    /// The turn was stopped; the call was denied.
    Cancelled,
    /// The row is in a state no wait expects (recovered elsewhere), or
    /// gone (`None`: swept or deleted).
    Gone(Option<PendingCallStatus>),
}

impl Waited {
    fn from_status(status: PendingCallStatus) -> Option<Self> {
        match status {
            PendingCallStatus::Pending => None,
            PendingCallStatus::Approved => Some(Self::Approved),
            PendingCallStatus::Denied => Some(Self::Denied),
            PendingCallStatus::Expired => Some(Self::Expired),
            other => Some(Self::Gone(Some(other))),
        }
    }
}

/// Test seams: code that runs at fixed points of the lifecycle, so tests
/// can land a decision exactly where a race would.
#[derive(Clone, Default)]
pub struct Hooks {
    /// Runs after the wait gave up and before the expiry UPDATE.
    pub before_expire: Option<Hook>,
    /// Runs when a decision was taken, before the chat is told of it
    /// (`mcp_confirmation_resolved`).
    pub before_resolved: Option<Hook>,
}

/// A test seam's code: given the pending call's id, runs to completion
/// before the lifecycle goes on.
pub type Hook = Arc<dyn Fn(Uuid) -> futures_util::future::BoxFuture<'static, ()> + Send + Sync>;

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("before_expire", &self.before_expire.is_some())
            .field("before_resolved", &self.before_resolved.is_some())
            .finish()
    }
}

/// Waits for the decision on `id`, at most `COUNTERSIGN_APPROVAL_WAIT_SECS`,
/// holding no database connection in between reads. A Stop denies the
/// call. At the end, expiry by conditional UPDATE: if it changes no row, a
/// decision won the race and is honoured.
pub async fn wait(
    state: &AppState,
    id: PendingCallId,
    cancel: &mut watch::Receiver<bool>,
) -> Result<Waited, sqlx::Error> {
    let deadline =
        tokio::time::Instant::now() + Duration::from_secs(state.config.approval_wait_secs);
    let mut decided = state.watcher.watch(state, id);
    let result = loop {
        if let Some(waited) = decided.borrow_and_update().and_then(Waited::from_status) {
            break Some(waited);
        }
        tokio::select! {
            changed = decided.changed() => {
                if changed.is_err() {
                    break None;
                }
            }
            () = tokio::time::sleep_until(deadline) => break None,
            _ = cancel.changed() => {
                state.watcher.forget(id);
                return Box::pin(cancel_one(state, id)).await;
            }
        }
    };
    state.watcher.forget(id);
    if let Some(waited) = result {
        return Ok(waited);
    }
    if let Some(hook) = &state.approval_hooks.before_expire {
        hook(id.into()).await;
    }
    // Boxed, like `cancel_one`: a waiting call's future (one per card, a
    // thousand at once) then holds only the wait itself.
    Box::pin(expire_or_honour(state, id)).await
}

/// `pending → expired`; when no row changes, a decision landed first:
/// re-read once and honour it.
pub async fn expire_or_honour(state: &AppState, id: PendingCallId) -> Result<Waited, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let expired = sqlx::query!(
        "update mcp_pending_calls set status = 'expired', decided_at = now()
          where id = $1 and status = 'pending'",
        id as PendingCallId,
    )
    .execute(&mut *tx)
    .await?;
    if expired.rows_affected() == 1 {
        tx.commit().await?;
        state.metrics.decided(Decided::Expired);
        return Ok(Waited::Expired);
    }
    let status = sqlx::query_scalar!(
        r#"select status as "status: PendingCallStatus" from mcp_pending_calls where id = $1"#,
        id as PendingCallId,
    )
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(match status {
        Some(status) => {
            Waited::from_status(status).unwrap_or(Waited::Gone(Some(PendingCallStatus::Pending)))
        }
        None => Waited::Gone(None),
    })
}

/// A Stop while waiting: `pending → denied`; a decision that landed first
/// is honoured only if it was a denial (the turn is stopping: nothing runs).
async fn cancel_one(state: &AppState, id: PendingCallId) -> Result<Waited, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let cancelled = sqlx::query!(
        "update mcp_pending_calls set status = 'denied', decided_at = now(),
                error = 'The turn was stopped.'
          where id = $1 and status = 'pending'",
        id as PendingCallId,
    )
    .execute(&mut *tx)
    .await?;
    // An approval that landed first is never claimed: it is spent unused.
    sqlx::query!(
        "update mcp_pending_calls set status = 'failed', executed_at = now(),
                error = 'The turn was stopped before it ran.'
          where id = $1 and status = 'approved'",
        id as PendingCallId,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    if cancelled.rows_affected() == 1 {
        state.metrics.decided(Decided::Cancelled);
    }
    Ok(Waited::Cancelled)
}

/// `approved → executing`, exactly one winner. Returns the row as stored.
pub async fn claim(state: &AppState, id: PendingCallId) -> Result<Option<Row>, sqlx::Error> {
    // A transaction of its own, in one round trip.
    let rows = db::trip::run(&state.db, of_call(&CLAIM, id)).await?;
    let row = rows.first().map(Row::from_row).transpose()?;
    // Both instants are the database's, whichever instance decided.
    if let Some(Row {
        decided_at: Some(decided),
        claimed_at: Some(claimed),
        ..
    }) = &row
    {
        let latency = (*claimed - *decided).max(time::Duration::ZERO);
        state
            .metrics
            .decision_to_execution(latency.try_into().unwrap_or_default());
    }
    Ok(row)
}

/// `executing → executed | failed`. A failure still spends the approval.
/// An executed call approved with "Always allow this tool" creates (or
/// re-pins to this descriptor) the user's rule, in the same transaction;
/// decline, failure and expiry never create one.
pub async fn record(
    state: &AppState,
    id: PendingCallId,
    error: Option<&str>,
) -> Result<(), sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    sqlx::query!(
        "with done as (
             update mcp_pending_calls
                set status = case when $2::text is null then 'executed' else 'failed' end,
                    error = $2, executed_at = now()
              where id = $1 and status = 'executing'
              returning id, user_id, connector_id, tool_name, descriptor_digest, grant_kind, status)
         insert into tool_grants (id, user_id, connector_id, tool_name, descriptor_digest, created_from)
         select $3, d.user_id, d.connector_id, d.tool_name, d.descriptor_digest, d.id
           from done d
          where d.status = 'executed' and d.grant_kind = 'always'
            and exists (select 1 from connectors c
                         where c.id = d.connector_id and c.user_id = d.user_id)
         on conflict (connector_id, tool_name) do update
            set descriptor_digest = excluded.descriptor_digest,
                created_from = excluded.created_from, updated_at = now()",
        id as PendingCallId,
        error,
        Uuid::new_v4(),
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// How long [`record_until_stored`] keeps trying.
pub const RECORD_RETRY_FOR: Duration = Duration::from_secs(120);

/// [`record`], tried again (every 250 ms, then up to every 2 s) while the
/// database cannot take it, for at most [`RECORD_RETRY_FOR`]: the call ran
/// and its outcome is known, so a Postgres restart must not turn it into
/// "outcome unknown". Safe to repeat: `record` changes only an `executing`
/// row. Returns the last error when it gave up (the row then stays
/// `executing` until recovery fails it as "interrupted; outcome unknown").
pub async fn record_until_stored(
    state: &AppState,
    id: PendingCallId,
    error: Option<&str>,
) -> Result<(), sqlx::Error> {
    let give_up = tokio::time::Instant::now() + RECORD_RETRY_FOR;
    let mut pause = Duration::from_millis(250);
    loop {
        match record(state, id, error).await {
            Ok(()) => return Ok(()),
            Err(err) if tokio::time::Instant::now() + pause < give_up => {
                tracing::warn!(
                    error = %err, pending.id = %id,
                    "cannot record a call's outcome yet; retrying (it ran: it is never re-run)"
                );
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            Err(err) => return Err(err),
        }
    }
}

/// Whether an earlier call of this turn to this connector + tool, **with
/// this descriptor digest**, was approved "for the rest of this turn" and
/// ran. A tool that changed (and was kept again) mid-turn asks again.
pub async fn turn_grant(
    state: &AppState,
    ctx: ToolContext,
    connector_id: ConnectorId,
    tool_name: &str,
    descriptor_digest: &str,
) -> Result<bool, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let granted = sqlx::query_scalar!(
        r#"select exists (select 1 from mcp_pending_calls
                           where turn_id = $1 and user_id = $2 and connector_id = $3
                             and tool_name = $4 and grant_kind = 'turn' and status = 'executed'
                             and descriptor_digest = $5) as "granted!""#,
        ctx.turn_id as TurnId,
        ctx.user_id as UserId,
        connector_id as ConnectorId,
        tool_name,
        descriptor_digest,
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(granted)
}

/// The grant the user chose when approving `id` (`None` if it was not
/// approved, or is gone): `mcp_confirmation_resolved` carries it so every
/// tab's card says what was allowed.
pub async fn grant_of(
    state: &AppState,
    id: PendingCallId,
) -> Result<Option<GrantKind>, sqlx::Error> {
    let rows = db::trip::run(&state.db, of_call(&GRANT_OF, id)).await?;
    let grant: Option<Option<String>> = rows
        .first()
        .map(|row| row.try_get("grant_kind"))
        .transpose()?;
    Ok(grant.flatten().as_deref().map(GrantKind::from_wire))
}

/// Ends every pending call for `connector_id` as denied (its URL changed:
/// what the cards show is no longer where the calls would go), and wakes
/// the turns that wait for them. Returns how many. Rows already approved
/// but not claimed fail at the claim, whose destination check no longer
/// holds.
pub async fn deny_for_connector(
    tx: &mut db::Tx,
    user_id: UserId,
    connector_id: ConnectorId,
) -> Result<u64, sqlx::Error> {
    let ids = sqlx::query_scalar!(
        r#"update mcp_pending_calls set status = 'denied', decided_at = now()
            where user_id = $1 and connector_id = $2 and status = 'pending'
        returning id as "id: PendingCallId""#,
        user_id as UserId,
        connector_id as ConnectorId,
    )
    .fetch_all(&mut **tx)
    .await?;
    for id in &ids {
        events::notify_decided(tx, *id).await?;
    }
    Ok(ids.len() as u64)
}

/// Ends every pending call of `user_id` as denied (an administrator
/// disabled the account: nobody may approve them now), and wakes the
/// turns that wait for them. Returns how many.
pub async fn deny_for_user(tx: &mut db::Tx, user_id: UserId) -> Result<u64, sqlx::Error> {
    let ids = sqlx::query_scalar!(
        r#"update mcp_pending_calls set status = 'denied', decided_at = now()
            where user_id = $1 and status = 'pending'
        returning id as "id: PendingCallId""#,
        user_id as UserId,
    )
    .fetch_all(&mut **tx)
    .await?;
    for id in &ids {
        events::notify_decided(tx, *id).await?;
    }
    Ok(ids.len() as u64)
}

/// `host[:port]` of a connector URL: the card's destination.
pub fn destination(url: &str) -> String {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| {
            let host = u.host_str()?.to_owned();
            Some(match u.port() {
                Some(port) => format!("{host}:{port}"),
                None => host,
            })
        })
        .unwrap_or_default()
}

/// Deletes terminal rows (and their arguments) older than the retention,
/// at most 500 at a time. Returns how many.
pub async fn sweep(state: &AppState) -> Result<u64, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let deleted = sqlx::query!(
        "delete from mcp_pending_calls where id in (
             select id from mcp_pending_calls
              where status in ('executed', 'failed', 'denied', 'expired')
                and created_at < now() - make_interval(secs => $1::float8)
              limit 500)",
        state.config.approval_retention_secs as f64,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(deleted.rows_affected())
}

/// What [`recover`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovered {
    /// `executing → failed` (outcome unknown).
    pub executing: u64,
    /// `approved → failed` (never ran).
    pub approved: u64,
    /// `pending → expired`.
    pub pending: u64,
}

/// Start-up recovery, the only other transitions: rows whose turn no
/// longer runs anywhere (finished, or its heartbeat is older than
/// `stale_secs`) are closed. Nothing is retried or re-executed. The chat
/// hears of each, so no card stays open.
pub async fn recover(state: &AppState, stale_secs: f64) -> Result<Recovered, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    struct Closed {
        id: PendingCallId,
        user_id: UserId,
        chat_id: ChatId,
        turn_id: TurnId,
        was: PendingCallStatus,
        call_id: String,
        connector_name: String,
        tool_name: String,
    }
    let rows = sqlx::query_as!(
        Closed,
        r#"with orphaned as (
             select p.id, p.status as was from mcp_pending_calls p
               left join turns t on t.id = p.turn_id
              where p.status in ('pending', 'approved', 'executing')
                and (t.id is null or t.status <> 'running'
                     or t.heartbeat_at < now() - make_interval(secs => $1::float8))
              for update of p skip locked)
         update mcp_pending_calls p
            set status = case o.was when 'pending' then 'expired' else 'failed' end,
                error = case o.was
                          when 'executing' then 'interrupted; outcome unknown'
                          when 'approved' then 'interrupted before it ran'
                          else null end,
                decided_at = coalesce(p.decided_at, now()),
                executed_at = case when o.was = 'pending' then null else now() end
           from orphaned o
          where p.id = o.id
          returning p.id as "id: _", p.user_id as "user_id: _", p.chat_id as "chat_id: _",
                    p.turn_id as "turn_id: _", o.was as "was!: _", p.call_id,
                    p.connector_name, p.tool_name"#,
        stale_secs,
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;

    let mut recovered = Recovered::default();
    for Closed {
        id,
        user_id,
        chat_id,
        turn_id,
        was,
        call_id,
        connector_name,
        tool_name,
    } in rows
    {
        let turn = turn_id.to_string();
        let event = match was {
            PendingCallStatus::Pending => {
                recovered.pending += 1;
                state.metrics.decided(Decided::Expired);
                ChatEvent::McpConfirmationResolved {
                    turn_id: turn,
                    id: id.to_string(),
                    decision: Resolution::Expired,
                    grant: None,
                }
            }
            _ => {
                if was == PendingCallStatus::Executing {
                    recovered.executing += 1;
                } else {
                    recovered.approved += 1;
                }
                ChatEvent::McpToolCall {
                    turn_id: turn,
                    id: id.to_string(),
                    call_id,
                    connector_name,
                    tool_name,
                    status: ToolCallStatus::Error,
                    error: Some(if was == PendingCallStatus::Executing {
                        "Interrupted: the server stopped while this call ran; its outcome is unknown."
                            .into()
                    } else {
                        "Interrupted: the server stopped before this call ran.".into()
                    }),
                    duration_ms: 0,
                    origin: None,
                    approved_at: None,
                    sign_in_connector_id: None,
                    result: None,
                    result_chars: None,
                    contains_instructions: false,
                    connector_id: None,
                }
            }
        };
        let result = async {
            let mut tx = db::user_tx(&state.db, user_id).await?;
            events::append(&mut tx, chat_id, Some(turn_id), &event).await?;
            tx.commit().await
        }
        .await;
        if let Err(err) = result {
            tracing::warn!(error = %err, "cannot tell a chat about a recovered tool call");
        }
    }
    if recovered != Recovered::default() {
        tracing::warn!(
            ?recovered,
            "approval ledger: closed calls of turns that stopped running"
        );
    }
    Ok(recovered)
}

/// One per instance: the statuses of every call this instance's turns wait
/// for, read in one query per wake-up (a `NOTIFY` from [`events::notify_decided`] from any
/// instance) or per poll interval, whichever comes first.
#[derive(Debug, Default)]
pub struct Watcher {
    waiting: Mutex<HashMap<PendingCallId, watch::Sender<Option<PendingCallStatus>>>>,
    started: OnceLock<()>,
}

impl Watcher {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<PendingCallId, watch::Sender<Option<PendingCallStatus>>>>
    {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts watching `id`; the receiver gets its status once it is no
    /// longer `pending`.
    pub fn watch(
        &self,
        state: &AppState,
        id: PendingCallId,
    ) -> watch::Receiver<Option<PendingCallStatus>> {
        self.started.get_or_init(|| {
            tokio::spawn(watch_loop(state.clone(), state.hub.subscribe_approvals()));
        });
        let (tx, rx) = watch::channel(None);
        self.lock().insert(id, tx);
        // Read once now: a decision may have landed before we listened.
        state.hub.wake_approvals();
        rx
    }

    /// Tells the turn waiting for `id` on this instance, if any, its
    /// status: one this instance committed (`decide`).
    fn settle(&self, id: PendingCallId, status: PendingCallStatus) {
        if let Some(tx) = self.lock().get(&id) {
            tx.send_replace(Some(status));
        }
    }

    /// Stops watching `id`.
    pub fn forget(&self, id: PendingCallId) {
        self.lock().remove(&id);
    }

    /// How many calls this instance waits for.
    pub fn waiting(&self) -> usize {
        self.lock().len()
    }
}

async fn watch_loop(state: AppState, mut wake: tokio::sync::broadcast::Receiver<bool>) {
    let poll = Duration::from_millis(state.config.approval_poll_ms.max(10));
    let notify = state.config.approval_notify;
    loop {
        tokio::select! {
            () = tokio::time::sleep(poll) => {}
            woken = wake.recv() => match woken {
                // Poll-only mode (a benchmark's baseline) ignores NOTIFY.
                Ok(true) if !notify => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                _ => {}
            },
        }
        // Only the calls whose status this instance does not know yet: a
        // decision taken here was told at once (`settle`), and its NOTIFY,
        // which comes back here too, needs no read.
        let ids: Vec<PendingCallId> = state
            .watcher
            .lock()
            .iter()
            .filter(|(_, status)| status.borrow().is_none())
            .map(|(id, _)| *id)
            .collect();
        if !ids.is_empty() {
            match decided_among(&state, &ids).await {
                Ok(decided) => {
                    let waiting = state.watcher.lock();
                    for (id, status) in decided {
                        if let Some(tx) = waiting.get(&id) {
                            tx.send_replace(Some(status));
                        }
                    }
                }
                Err(err) => tracing::warn!(error = %err, "approval watcher cannot read the ledger"),
            }
        }
    }
}

async fn decided_among(
    state: &AppState,
    ids: &[PendingCallId],
) -> Result<Vec<(PendingCallId, PendingCallStatus)>, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let rows = sqlx::query!(
        r#"select id as "id: PendingCallId", status as "status: PendingCallStatus"
             from mcp_pending_calls where id = any($1) and status <> 'pending'"#,
        ids as &[PendingCallId],
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rows.into_iter().map(|r| (r.id, r.status)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding<'a>(tool: &'a str, digest: &'a str) -> Binding<'a> {
        let id = PendingCallId(Uuid::from_u128(1));
        Binding {
            id,
            user_id: UserId(Uuid::from_u128(2)),
            chat_id: ChatId(Uuid::from_u128(3)),
            turn_id: TurnId(Uuid::from_u128(4)),
            connector_id: ConnectorId(Uuid::from_u128(5)),
            destination_url: "https://mcp.example/mcp",
            tool_name: tool,
            arguments_digest: digest,
            expires_at_micros: 1_700_000_000_000_000,
        }
    }

    #[test]
    fn a_decision_wakes_the_approvals_channel() {
        assert!(
            DECIDE
                .sql
                .contains(&format!("pg_notify('{}',", events::APPROVALS_CHANNEL))
        );
    }

    #[test]
    fn the_hmac_binds_every_field_and_names_its_key() {
        let keys = ApprovalKeys::from_bytes(&[7; 32]).expect("key");
        let b = binding("search", "ab");
        let (key_id, tag) = keys.sign(&b);
        assert!(keys.verify(&key_id, &b, &tag));
        assert!(!keys.verify(&key_id, &binding("delete", "ab"), &tag));
        assert!(!keys.verify(&key_id, &binding("search", "ac"), &tag));
        let mut later = b;
        later.expires_at_micros += 1;
        assert!(!keys.verify(&key_id, &later, &tag));
        let mut other_user = b;
        other_user.user_id = UserId(Uuid::from_u128(9));
        assert!(!keys.verify(&key_id, &other_user, &tag));
        let mut elsewhere = b;
        elsewhere.destination_url = "https://mcp.example.evil/mcp";
        assert!(!keys.verify(&key_id, &elsewhere, &tag), "another URL");
        assert!(!keys.verify("00000000", &b, &tag), "unknown key id");
        assert!(!keys.verify(&key_id, &b, "zz"), "not hex");
        let other = ApprovalKeys::from_bytes(&[8; 32]).expect("key");
        assert!(!other.verify(&key_id, &b, &tag));
        // Field boundaries are part of the message.
        assert_ne!(binding("ab", "c").message(), binding("a", "bc").message());
    }

    #[test]
    fn keys_are_at_least_256_bits_and_never_printed() {
        assert!(ApprovalKeys::from_bytes(&[1; 31]).is_err());
        let keys = ApprovalKeys::from_bytes(&[1; 32]).expect("key");
        let printed = format!("{keys:?}");
        assert!(!printed.contains("0101"), "{printed}");
    }
}
