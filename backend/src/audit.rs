//! The activity log (issue 6): every proposed MCP call, what decided it
//! and how it ended, as an append-only hash chain.
//!
//! Each row's `hash` is SHA-256 over the previous row's hash and the RFC
//! 8785 canonical JSON of its own entry, so changing, removing or
//! reordering any row breaks every hash after it; [`verify`] (the CLI's
//! `countersign audit verify`) names the first row that does not match.
//! Appends are serialised by a transaction-scoped advisory lock. Entries
//! carry the arguments' digest, never the arguments.
//!
//! A call is written down *before* it runs: if that append fails, the call
//! does not run.
//!
//! For auditors: [`export`] writes the chain as JSON lines ending with its
//! head, which `countersign audit verify --file` (or any SHA-256 and RFC
//! 8785 implementation) re-computes without the database. [`head()`] is the
//! latest row as `SEQ:DIGEST`: recorded somewhere the database's owners
//! cannot write, it anchors the chain — whoever can rewrite the table can
//! re-hash every row after the one they changed, and `verify` alone would
//! pass, but the recorded head is then no longer in the chain
//! ([`verify_with_head`]).
//!
//! What it deliberately does not do: sign heads or ship them anywhere (a
//! cron line does, see `docs/operations.md`), or prune the chain.

pub mod export;
pub mod head;
pub mod query;

pub use head::{Head, RecordedHead, head};

use crate::{
    db::{self, trip::Statement},
    digest,
    ids::{ChatId, ConnectorId, TurnId, UserId},
};
use countersign_api::{
    ActivityDecision, ActivityFilter, ActivityKind, ActivityOutcome, Destination, GrantKind,
    Provenance, SettingChange,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::{PgPool, Row as _};
use std::fmt;
use uuid::Uuid;

/// The `prev_hash` of the first row.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Key of the advisory lock that orders appends.
const CHAIN_LOCK: i64 = 0x636f_756e_7465_7273; // "counters"

/// One entry, before it is chained.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    pub user_id: UserId,
    pub chat_id: ChatId,
    pub turn_id: TurnId,
    /// Which call (the ledger id when a card was shown, else the model's
    /// call id): entries of one call share it.
    pub call_ref: &'a str,
    /// `decided` (before the call runs, or when it will not), `outcome`.
    pub kind: ActivityKind,
    /// No foreign key: the log outlives a deleted connector.
    pub connector_id: ConnectorId,
    /// Its name.
    pub connector_name: &'a str,
    /// Tool name on its server.
    pub tool_name: &'a str,
    /// SHA-256 of the canonical arguments.
    pub arguments_digest: &'a str,
    /// `approved`, `denied`, `expired`, or the rule that let it run
    /// (`turn_grant`, `always_grant`, `trusted_annotations`); `None` on
    /// `outcome` entries (stored as `""`, as always).
    pub decision: Option<ActivityDecision>,
    /// With `approved`: `once`, `turn` or `always`.
    pub grant: Option<GrantKind>,
    /// `running` (decided, about to run), `not_run`, `ok`, `error`.
    pub outcome: ActivityOutcome,
    /// Why, when not ok.
    pub error: Option<&'a str>,
    /// For `outcome` entries.
    pub duration_ms: Option<u64>,
    /// For `decided` entries: where the call sends data and the flows its
    /// provenance flagged (empty on `outcome` entries).
    pub evidence: &'a Evidence,
}

/// What a `decided` entry says about where a call sends data (issue 45):
/// read from the signed arguments and the call's provenance when it is
/// decided, so the log can show it after the ledger row (and its
/// arguments) is gone. Destinations and flow texts name hosts, addresses
/// and tools, never argument text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evidence {
    /// As the card's "Sends to" listed them.
    pub destinations: Vec<Destination>,
    /// Why provenance flagged the call, in words (none: not flagged):
    /// each flow, then the results of its turn that gave instructions.
    pub flows: Vec<String>,
    /// "Edit and allow": the digest of the arguments the card showed
    /// (the entry's `arguments_digest` is the edited ones').
    pub shown_arguments_digest: Option<String>,
    /// The rule that allowed or refused the call, when one did.
    pub rule: Option<countersign_api::RuleRef>,
    /// `result_reviewed`: how the review of its result ended.
    pub result_review: Option<countersign_api::ResultReviewStatus>,
    /// `decided`, for a call the policy gave a second approver: who
    /// decided it (their e-mail).
    pub second_approver: Option<String>,
}

impl Evidence {
    /// The evidence of a call that sends to `destinations` (read from its
    /// signed arguments by the caller: the log depends on no reader of
    /// arguments) and, when it was traced, has this provenance.
    pub fn of(destinations: Vec<Destination>, provenance: Option<&Provenance>) -> Self {
        Self {
            destinations,
            flows: provenance.map(flagged_because).unwrap_or_default(),
            shown_arguments_digest: None,
            rule: None,
            result_review: None,
            second_approver: None,
        }
    }

    /// Nothing: what an `outcome` entry carries.
    pub const NONE: &'static Self = &Self {
        destinations: Vec::new(),
        flows: Vec::new(),
        shown_arguments_digest: None,
        rule: None,
        result_review: None,
        second_approver: None,
    };
}

/// Why a call's provenance flagged it, in words: each flow as the card
/// said it, then the results of the turn that gave the assistant
/// instructions (the call may be following them).
fn flagged_because(provenance: &Provenance) -> Vec<String> {
    let mut why: Vec<String> = provenance
        .flows
        .iter()
        .map(|flow| flow.text.clone())
        .collect();
    let mut read: Vec<String> = Vec::new();
    for source in &provenance.instructions_in {
        let name = format!("{}: {}", source.connector_name, source.tool_name);
        if !read.contains(&name) {
            read.push(name);
        }
    }
    if !read.is_empty() {
        why.push(format!(
            "This reply read text that gives the assistant instructions ({}); this call may be \
             following them",
            read.join(", ")
        ));
    }
    why
}

/// One entry exactly as the chain stores it (`activity.entry`, the JSON
/// the hash covers): written and read through this one struct, so the
/// writer and the activity page cannot disagree on a field. Every field
/// has a default, so an entry is readable whatever it lacks; what is read
/// back is never re-hashed (`verify` hashes the stored JSON itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Stored {
    /// Place in the chain.
    pub seq: i64,
    /// RFC 3339 with microseconds, UTC, by the database's clock.
    pub at: String,
    /// Whose log it is (`GET /api/activity` shows only theirs).
    pub user_id: Uuid,
    pub chat_id: Uuid,
    pub turn_id: Uuid,
    /// Entries of one call share it.
    pub call_ref: String,
    /// `decided` or `outcome`.
    pub kind: ActivityKind,
    /// No foreign key: the log outlives a deleted connector.
    pub connector_id: Uuid,
    /// Its name then.
    pub connector_name: String,
    /// Tool name on its server.
    pub tool_name: String,
    /// SHA-256 of the canonical arguments.
    pub arguments_digest: String,
    /// The decision or rule, `""` on outcome entries (as always stored).
    pub decision: String,
    /// With `approved`.
    pub grant: Option<GrantKind>,
    /// `running`, `not_run`, `ok`, `error`.
    pub outcome: ActivityOutcome,
    /// Why, when not ok.
    pub error: Option<String>,
    /// For outcome entries.
    pub duration_ms: Option<u64>,
    /// `policy_changed` / `user_changed`: what an administrator changed.
    /// Absent from call entries, whose JSON stays what it always was.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<SettingChange>,
    /// `user_changed`: the account changed, and its email then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject_user_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// `decided`: where the call sends data. Absent when it names none
    /// (and from entries before issue 45), so those entries' JSON is what
    /// it always was.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub destinations: Vec<Destination>,
    /// `decided`: its provenance flagged a flow. Absent when not.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub flagged: bool,
    /// `decided`: the flagged flows in words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<String>,
    /// `activity_read`: what the administrator asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<ActivityFilter>,
    /// `activity_read`: `csv` or `json` when it was an export.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub export: Option<String>,
    /// `activity_read`: the calls waiting for a decision were read, not
    /// the log.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waiting: bool,
    /// `decided`, after "Edit and allow": the digest of the arguments the
    /// card showed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shown_arguments_digest: Option<String>,
    /// `decided`: the rule that allowed or refused the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<countersign_api::RuleRef>,
    /// `result_reviewed`: how the review of the call's result ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_review: Option<countersign_api::ResultReviewStatus>,
    /// `decided`: the second approver's e-mail, when the policy gave the
    /// call one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_approver: Option<String>,
}

impl Default for Stored {
    /// What a field an entry lacks reads as (`Unknown` words, nil ids).
    fn default() -> Self {
        Self {
            seq: 0,
            at: String::new(),
            user_id: Uuid::nil(),
            chat_id: Uuid::nil(),
            turn_id: Uuid::nil(),
            call_ref: String::new(),
            kind: ActivityKind::Unknown,
            connector_id: Uuid::nil(),
            connector_name: String::new(),
            tool_name: String::new(),
            arguments_digest: String::new(),
            decision: String::new(),
            grant: None,
            outcome: ActivityOutcome::Unknown,
            error: None,
            duration_ms: None,
            changes: Vec::new(),
            subject_user_id: None,
            subject: None,
            destinations: Vec::new(),
            flagged: false,
            flows: Vec::new(),
            filter: None,
            export: None,
            waiting: false,
            shown_arguments_digest: None,
            rule: None,
            result_review: None,
            second_approver: None,
        }
    }
}

impl Entry<'_> {
    #[cfg(test)]
    fn to_json(&self, seq: i64, at: &str) -> Value {
        to_json(self.stored(seq, at))
    }

    fn stored(&self, seq: i64, at: &str) -> Stored {
        Stored {
            seq,
            at: at.to_owned(),
            user_id: self.user_id.0,
            chat_id: self.chat_id.0,
            turn_id: self.turn_id.0,
            call_ref: self.call_ref.to_owned(),
            kind: self.kind,
            connector_id: self.connector_id.0,
            connector_name: self.connector_name.to_owned(),
            tool_name: self.tool_name.to_owned(),
            arguments_digest: self.arguments_digest.to_owned(),
            // An outcome entry has always said `""` here; the chain keeps it.
            decision: self
                .decision
                .map_or("", ActivityDecision::as_str)
                .to_owned(),
            grant: self.grant,
            outcome: self.outcome,
            error: self.error.map(str::to_owned),
            duration_ms: self.duration_ms,
            destinations: self.evidence.destinations.clone(),
            flagged: !self.evidence.flows.is_empty(),
            flows: self.evidence.flows.clone(),
            shown_arguments_digest: self.evidence.shown_arguments_digest.clone(),
            rule: self.evidence.rule.clone(),
            result_review: self.evidence.result_review,
            second_approver: self.evidence.second_approver.clone(),
            ..Stored::default()
        }
    }
}

impl Stored {
    /// As `GET /api/activity` shows it, with its chain hash.
    pub fn to_api(self, hash: String) -> countersign_api::ActivityEntry {
        countersign_api::ActivityEntry {
            user_id: self.user_id.to_string(),
            user_email: None,
            destinations: self.destinations,
            flagged: self.flagged,
            flows: self.flows,
            filter: self.filter,
            export: self.export,
            waiting: self.waiting,
            shown_arguments_digest: self.shown_arguments_digest,
            rule: self.rule,
            result_review: self.result_review,
            second_approver: self.second_approver,
            seq: self.seq,
            hash,
            at: self.at,
            call_ref: self.call_ref,
            kind: self.kind,
            chat_id: self.chat_id.to_string(),
            connector_id: self.connector_id.to_string(),
            connector_name: self.connector_name,
            tool_name: self.tool_name,
            arguments_digest: self.arguments_digest,
            decision: (!self.decision.is_empty())
                .then(|| ActivityDecision::from_wire(&self.decision)),
            grant: self.grant,
            outcome: self.outcome,
            error: self.error,
            duration_ms: self.duration_ms,
            changes: self.changes,
            subject: self.subject,
        }
    }
}

/// The hash of a row: SHA-256 over the previous hash, a newline and the
/// entry's canonical JSON.
pub fn chain_hash(prev_hash: &str, entry: &Value) -> String {
    digest::sha256_hex(format!("{prev_hash}\n{}", digest::canonical(entry)))
}

/// Appends `entry` to the chain; returns its sequence number. Three
/// round trips: the `BEGIN` with the lock and the read of the last link
/// ([`db::service_locked`]), the insert, the `COMMIT` — an approved
/// call's entry is on its way to execution.
pub async fn append(pool: &PgPool, entry: &Entry<'_>) -> Result<i64, sqlx::Error> {
    let user_id = entry.user_id;
    let stored = entry.stored(0, "");
    db::service_locked(pool, CHAIN_LOCK, &LAST, move |conn, rows| {
        Box::pin(async move {
            let row = rows.first().ok_or(sqlx::Error::RowNotFound)?;
            let (seq, prev_hash) = next_link(row.try_get("seq")?, row.try_get("hash")?);
            let value = to_json(Stored {
                seq,
                at: row.try_get("at")?,
                ..stored
            });
            insert(conn, user_id, seq, &value, &prev_hash).await?;
            Ok(seq)
        })
    })
    .await
}

/// The last link and the database's time now (one row, the link's
/// columns null on an empty chain). Read under [`CHAIN_LOCK`], by a
/// statement after the one that took it.
static LAST: Statement = Statement {
    name: "cs_chain_last",
    params: "",
    sql: "select last.seq, last.hash, \
                 to_char(now() at time zone 'utc', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') as at \
            from (values (1)) as one \
            left join lateral (select seq, hash from activity order by seq desc limit 1) as last \
              on true",
};

/// The statements [`db::trip`] prepares here, for the test that prepares
/// them all.
pub static TRIPS: [&Statement; 1] = [&LAST];

/// The sequence number and `prev_hash` of the link after `last`.
fn next_link(seq: Option<i64>, hash: Option<String>) -> (i64, String) {
    match (seq, hash) {
        (Some(seq), Some(hash)) => (seq + 1, hash),
        _ => (1, GENESIS.to_owned()),
    }
}

fn to_json(stored: Stored) -> Value {
    #[expect(clippy::expect_used, reason = "a struct of strings, ids and enums")]
    serde_json::to_value(stored).expect("an activity entry is JSON")
}

/// Inserts the link `value` after `prev_hash`.
async fn insert(
    conn: &mut sqlx::PgConnection,
    user_id: UserId,
    seq: i64,
    value: &Value,
    prev_hash: &str,
) -> Result<(), sqlx::Error> {
    let hash = chain_hash(prev_hash, value);
    sqlx::query!(
        "insert into activity (seq, user_id, entry, prev_hash, hash) values ($1, $2, $3, $4, $5)",
        seq,
        user_id as UserId,
        value,
        prev_hash,
        &hash,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// What an administrator changed (DESIGN §8: policy changes enter the
/// activity chain; so do changes to accounts), or what a user changed of
/// who they are to a connector (its OAuth account: `admin` is the user).
#[derive(Debug, Clone)]
pub struct AdminEntry {
    /// The administrator: the entry is in their log.
    pub admin: UserId,
    /// `policy_changed` or `user_changed`.
    pub kind: ActivityKind,
    /// For `user_changed`: the account and its email.
    pub subject: Option<(UserId, String)>,
    /// For `connector_account_changed`: the connector and its name.
    pub connector: Option<(ConnectorId, String)>,
    /// Each setting, before and after.
    pub changes: Vec<SettingChange>,
}

/// Appends an administrator's change inside `tx`, the transaction that
/// makes it: the change and its entry commit together or not at all.
pub async fn append_admin(tx: &mut db::Tx, entry: &AdminEntry) -> Result<i64, sqlx::Error> {
    sqlx::query!("select pg_advisory_xact_lock($1)", CHAIN_LOCK,)
        .execute(&mut **tx)
        .await?;
    chain(tx, entry.admin, |seq, at| {
        let stored = Stored {
            seq,
            at: at.to_owned(),
            user_id: entry.admin.0,
            kind: entry.kind,
            changes: entry.changes.clone(),
            subject_user_id: entry.subject.as_ref().map(|(id, _)| id.0),
            subject: entry.subject.as_ref().map(|(_, email)| email.clone()),
            connector_id: entry.connector.as_ref().map_or(Uuid::nil(), |(id, _)| id.0),
            connector_name: entry
                .connector
                .as_ref()
                .map(|(_, name)| name.clone())
                .unwrap_or_default(),
            ..Stored::default()
        };
        #[expect(clippy::expect_used, reason = "a struct of strings, ids and enums")]
        serde_json::to_value(stored).expect("an activity entry is JSON")
    })
    .await
}

/// What an administrator read of other accounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read<'a> {
    /// The activity log, on a page or as an export (`csv` or `json`).
    Log { export: Option<&'a str> },
    /// The calls waiting for a decision.
    Waiting,
}

/// Records that administrator `admin` read `subject`'s activity log or
/// waiting calls (or, with `None`, every account's) narrowed by `filter`:
/// an `activity_read` entry in the administrator's own log. Appended
/// *before* the read is answered: a read that cannot be written down is
/// not answered.
pub async fn append_read(
    pool: &PgPool,
    admin: UserId,
    subject: Option<(UserId, String)>,
    filter: &ActivityFilter,
    read: Read<'_>,
) -> Result<i64, sqlx::Error> {
    let (export, waiting) = match read {
        Read::Log { export } => (export, false),
        Read::Waiting => (None, true),
    };
    let mut tx = db::service_tx(pool).await?;
    sqlx::query!("select pg_advisory_xact_lock($1)", CHAIN_LOCK)
        .execute(&mut *tx)
        .await?;
    let seq = chain(&mut tx, admin, |seq, at| {
        to_json(Stored {
            seq,
            at: at.to_owned(),
            user_id: admin.0,
            kind: ActivityKind::ActivityRead,
            subject_user_id: subject.as_ref().map(|(id, _)| id.0),
            subject: subject.as_ref().map(|(_, email)| email.clone()),
            filter: Some(filter.clone()),
            export: export.map(str::to_owned),
            waiting,
            ..Stored::default()
        })
    })
    .await?;
    tx.commit().await?;
    Ok(seq)
}

/// Chains the entry `make` writes for its sequence number and time, in
/// `tx`, which already holds the lock that orders appends (`CHAIN_LOCK`:
/// taken with `append`'s `BEGIN`, or by `append_admin`).
///
/// The last entry is read by a statement after the one that took the lock:
/// under READ COMMITTED each statement reads a snapshot taken when it
/// starts, so only a later statement sees the entry the lock's previous
/// holder committed.
async fn chain(
    tx: &mut db::Tx,
    user_id: UserId,
    make: impl FnOnce(i64, &str) -> Value,
) -> Result<i64, sqlx::Error> {
    let last = sqlx::query(sqlx::AssertSqlSafe(LAST.sql))
        .fetch_one(&mut **tx)
        .await?;
    let (seq, prev_hash) = next_link(last.try_get("seq")?, last.try_get("hash")?);
    let at: String = last.try_get("at")?;
    let value = make(seq, &at);
    insert(tx, user_id, seq, &value, &prev_hash).await?;
    Ok(seq)
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verified {
    /// Every row matches (and the recorded head, if one was given, is
    /// among them); this many.
    Intact(u64),
    /// The first row that does not match, and why.
    Broken {
        /// Its sequence number.
        seq: i64,
        /// What does not match.
        reason: String,
    },
    /// Every row matches its predecessor, but the head recorded elsewhere
    /// is not in the chain: it was rewritten (or cut short) after that head
    /// was recorded.
    HeadMissing {
        /// What is missing, naming the row.
        reason: String,
    },
}

impl Verified {
    /// Whether nothing was found wrong.
    pub fn is_intact(&self) -> bool {
        matches!(self, Self::Intact(_))
    }
}

/// A verdict as the CLI prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report<'a> {
    /// What was verified: `activity log` or `export`.
    pub what: &'a str,
    /// The verdict.
    pub verified: Verified,
    /// The head it was checked against, if any.
    pub recorded: Option<&'a RecordedHead>,
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = self.what;
        match (&self.verified, self.recorded) {
            (Verified::Intact(rows), None) => write!(f, "{what} intact: {rows} rows"),
            (Verified::Intact(rows), Some(head)) => write!(
                f,
                "{what} intact: {rows} rows, the recorded head {head} among them"
            ),
            (Verified::Broken { seq, reason }, _) => {
                write!(f, "{what} broken at row {seq}: {reason}")
            }
            (Verified::HeadMissing { reason }, Some(head)) => write!(
                f,
                "{what} does not contain the recorded head {head}: {reason}"
            ),
            (Verified::HeadMissing { reason }, None) => {
                write!(f, "{what} does not contain the recorded head: {reason}")
            }
        }
    }
}

/// Re-computing the chain one row at a time, in order: the one rule that
/// [`verify`] (rows from the database) and [`export::verify_file`] (rows
/// from an export) share.
#[derive(Debug, Clone)]
pub struct Walk {
    prev: String,
    next_seq: i64,
    checked: u64,
}

impl Walk {
    /// A walk from the first row, whose `prev_hash` is [`GENESIS`].
    pub fn from_genesis() -> Self {
        Self::after(0, GENESIS)
    }

    /// A walk that starts after row `seq`, whose hash is taken to be
    /// `hash` (an export `--since` a later row: its first `prev_hash`).
    pub fn after(seq: i64, hash: &str) -> Self {
        Self {
            prev: hash.to_owned(),
            next_seq: seq + 1,
            checked: 0,
        }
    }

    /// Checks the next row; on a mismatch, says which row and why.
    pub fn step(
        &mut self,
        seq: i64,
        entry: &Value,
        prev_hash: &str,
        hash: &str,
    ) -> Result<(), Verified> {
        let broken = |reason: &str| {
            Err(Verified::Broken {
                seq,
                reason: reason.to_owned(),
            })
        };
        if seq != self.next_seq {
            return broken(&format!("row {} is missing", self.next_seq));
        }
        if entry.get("seq").and_then(Value::as_i64) != Some(seq) {
            return broken("its entry names another sequence number");
        }
        if prev_hash != self.prev {
            return broken("it does not follow the previous row's hash");
        }
        if chain_hash(prev_hash, entry) != hash {
            return broken("its content does not match its hash");
        }
        hash.clone_into(&mut self.prev);
        self.next_seq += 1;
        self.checked += 1;
        Ok(())
    }

    /// The last row checked (or the starting point).
    pub fn head(&self) -> Head {
        Head {
            seq: self.next_seq - 1,
            hash: self.prev.clone(),
        }
    }

    /// How many rows were checked.
    pub fn checked(&self) -> u64 {
        self.checked
    }
}

/// Rows [`verify`] reads per query: the chain is never in memory whole.
const PAGE: i64 = 1000;

/// Re-computes the whole chain, in order, reading it in pages.
pub async fn verify(pool: &PgPool) -> Result<Verified, sqlx::Error> {
    verify_with_head(pool, None).await
}

/// [`verify`], and with `recorded`, also that the chain contains that head
/// (the row with its hash, at its sequence number if it names one).
pub async fn verify_with_head(
    pool: &PgPool,
    recorded: Option<&RecordedHead>,
) -> Result<Verified, sqlx::Error> {
    let mut walk = Walk::from_genesis();
    let mut anchor = recorded.map(head::HeadCheck::new);
    loop {
        let mut tx = db::service_tx(pool).await?;
        let rows = sqlx::query!(
            "select seq, entry, prev_hash, hash from activity where seq >= $1 order by seq limit $2",
            walk.head().seq + 1,
            PAGE,
        )
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        if rows.is_empty() {
            return Ok(match anchor {
                Some(anchor) => anchor.finish(&walk.head(), walk.checked()),
                None => Verified::Intact(walk.checked()),
            });
        }
        for row in rows {
            if let Err(broken) = walk.step(row.seq, &row.entry, &row.prev_hash, &row.hash) {
                return Ok(broken);
            }
            if let Some(anchor) = &mut anchor {
                anchor.see(row.seq, &row.hash);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_entry_stores_the_empty_decision_it_always_stored() {
        let entry = Entry {
            user_id: UserId(Uuid::nil()),
            chat_id: ChatId(Uuid::nil()),
            turn_id: TurnId(Uuid::nil()),
            call_ref: "c",
            kind: ActivityKind::Outcome,
            connector_id: ConnectorId(Uuid::nil()),
            connector_name: "",
            tool_name: "",
            arguments_digest: "",
            decision: None,
            grant: Some(GrantKind::Turn),
            outcome: ActivityOutcome::NotRun,
            error: None,
            duration_ms: Some(3),
            evidence: Evidence::NONE,
        }
        .to_json(2, "2026-11-30T10:00:00.000000Z");
        assert_eq!(entry["decision"], "");
        assert_eq!(entry["grant"], "turn");
        assert_eq!(entry["outcome"], "not_run");
        assert_eq!(entry["kind"], "outcome");
    }

    #[test]
    fn the_stored_struct_writes_the_json_the_chain_always_held_and_reads_it_back() {
        let id = Uuid::from_u128(7);
        let entry = Entry {
            user_id: UserId(id),
            chat_id: ChatId(id),
            turn_id: TurnId(id),
            call_ref: "c1",
            kind: ActivityKind::Outcome,
            connector_id: ConnectorId(id),
            connector_name: "Docs",
            tool_name: "search",
            arguments_digest: "ab",
            decision: None,
            grant: None,
            outcome: ActivityOutcome::Error,
            error: Some("boom"),
            duration_ms: Some(12),
            evidence: Evidence::NONE,
        };
        let written = entry.to_json(3, "2026-11-30T10:00:00.000000Z");
        // What the hand-written `json!` of earlier versions produced, so
        // the chain's hashes and old rows stay valid.
        let before = serde_json::json!({
            "seq": 3, "at": "2026-11-30T10:00:00.000000Z", "user_id": id, "chat_id": id,
            "turn_id": id, "call_ref": "c1", "kind": "outcome", "connector_id": id,
            "connector_name": "Docs", "tool_name": "search", "arguments_digest": "ab",
            "decision": "", "grant": null, "outcome": "error", "error": "boom",
            "duration_ms": 12
        });
        assert_eq!(written, before);
        assert_eq!(digest::canonical(&written), digest::canonical(&before));
        let read: Stored = serde_json::from_value(written).expect("reads back");
        let api = read.to_api("h".into());
        assert_eq!(api.decision, None, "an outcome entry's empty decision");
        assert_eq!(api.error.as_deref(), Some("boom"));
        assert_eq!(api.chat_id, id.to_string());
        // A row lacking fields still reads, as unknown words.
        let sparse: Stored =
            serde_json::from_value(serde_json::json!({"call_ref": "x"})).expect("lenient");
        assert_eq!(sparse.kind, ActivityKind::Unknown);
    }

    #[test]
    fn each_hash_covers_the_previous_one_and_the_entry() {
        let entry = Entry {
            user_id: UserId(Uuid::nil()),
            chat_id: ChatId(Uuid::nil()),
            turn_id: TurnId(Uuid::nil()),
            call_ref: "c",
            kind: ActivityKind::Decided,
            connector_id: ConnectorId(Uuid::nil()),
            connector_name: "",
            tool_name: "",
            arguments_digest: "",
            decision: Some(ActivityDecision::Approved),
            grant: None,
            outcome: ActivityOutcome::Running,
            error: None,
            duration_ms: None,
            evidence: Evidence::NONE,
        }
        .to_json(1, "2026-11-30T10:00:00.000000Z");
        assert_eq!(entry["kind"], "decided");
        assert_eq!(entry["decision"], "approved");
        assert_eq!(entry["outcome"], "running");
        let first = chain_hash(GENESIS, &entry);
        assert_eq!(first.len(), 64);
        assert_ne!(
            chain_hash(&first, &entry),
            first,
            "the previous hash counts"
        );
        let mut changed = entry.clone();
        changed["decision"] = serde_json::json!(ActivityDecision::Denied);
        assert_ne!(chain_hash(GENESIS, &changed), first, "the content counts");
    }
}
