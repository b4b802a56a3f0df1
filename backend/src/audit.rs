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

use crate::{
    db, digest,
    ids::{ChatId, ConnectorId, TurnId, UserId},
};
use countersign_api::{ActivityDecision, ActivityKind, ActivityOutcome, GrantKind};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

/// The `prev_hash` of the first row.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Key of the advisory lock that orders appends.
const CHAIN_LOCK: i64 = 0x636f_756e_7465_7273; // "counters"

/// One entry, before it is chained.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    /// Owner.
    pub user_id: UserId,
    /// Chat.
    pub chat_id: ChatId,
    /// Turn.
    pub turn_id: TurnId,
    /// Which call (the ledger id when a card was shown, else the model's
    /// call id): entries of one call share it.
    pub call_ref: &'a str,
    /// `decided` (before the call runs, or when it will not), `outcome`.
    pub kind: ActivityKind,
    /// Connector.
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
}

impl Entry<'_> {
    fn to_json(&self, seq: i64, at: &str) -> Value {
        json!({
            "seq": seq,
            "at": at,
            "user_id": self.user_id,
            "chat_id": self.chat_id,
            "turn_id": self.turn_id,
            "call_ref": self.call_ref,
            "kind": self.kind,
            "connector_id": self.connector_id,
            "connector_name": self.connector_name,
            "tool_name": self.tool_name,
            "arguments_digest": self.arguments_digest,
            // An outcome entry has always said `""` here; the chain keeps it.
            "decision": self.decision.map_or("", ActivityDecision::as_str),
            "grant": self.grant,
            "outcome": self.outcome,
            "error": self.error,
            "duration_ms": self.duration_ms,
        })
    }
}

/// The hash of a row: SHA-256 over the previous hash, a newline and the
/// entry's canonical JSON.
pub fn chain_hash(prev_hash: &str, entry: &Value) -> String {
    digest::sha256_hex(format!("{prev_hash}\n{}", digest::canonical(entry)))
}

/// Appends `entry` to the chain; returns its sequence number.
pub async fn append(pool: &PgPool, entry: &Entry<'_>) -> Result<i64, sqlx::Error> {
    let mut tx = db::service_tx(pool).await?;
    sqlx::query("select pg_advisory_xact_lock($1)")
        .bind(CHAIN_LOCK)
        .execute(&mut *tx)
        .await?;
    let last: Option<(i64, String)> =
        sqlx::query_as("select seq, hash from activity order by seq desc limit 1")
            .fetch_optional(&mut *tx)
            .await?;
    let (seq, prev_hash) = last.map_or((1, GENESIS.to_owned()), |(seq, hash)| (seq + 1, hash));
    let at: String = sqlx::query_scalar(
        "select to_char(now() at time zone 'utc', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')",
    )
    .fetch_one(&mut *tx)
    .await?;
    let value = entry.to_json(seq, &at);
    let hash = chain_hash(&prev_hash, &value);
    sqlx::query(
        "insert into activity (seq, user_id, entry, prev_hash, hash) values ($1, $2, $3, $4, $5)",
    )
    .bind(seq)
    .bind(entry.user_id)
    .bind(&value)
    .bind(&prev_hash)
    .bind(&hash)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(seq)
}

/// What [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verified {
    /// Every row matches; this many.
    Intact(u64),
    /// The first row that does not match, and why.
    Broken {
        /// Its sequence number.
        seq: i64,
        /// What does not match.
        reason: String,
    },
}

/// Re-computes the whole chain, in order, reading it in pages.
pub async fn verify(pool: &PgPool) -> Result<Verified, sqlx::Error> {
    let mut prev = GENESIS.to_owned();
    let mut expected_seq = 1_i64;
    let mut checked = 0_u64;
    loop {
        let mut tx = db::service_tx(pool).await?;
        let rows: Vec<(i64, Value, String, String)> = sqlx::query_as(
            "select seq, entry, prev_hash, hash from activity where seq >= $1 order by seq limit 1000",
        )
        .bind(expected_seq)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        if rows.is_empty() {
            return Ok(Verified::Intact(checked));
        }
        for (seq, entry, prev_hash, hash) in rows {
            let broken = |reason: &str| {
                Ok(Verified::Broken {
                    seq,
                    reason: reason.to_owned(),
                })
            };
            if seq != expected_seq {
                return broken(&format!("row {expected_seq} is missing"));
            }
            if entry.get("seq").and_then(Value::as_i64) != Some(seq) {
                return broken("its entry names another sequence number");
            }
            if prev_hash != prev {
                return broken("it does not follow the previous row's hash");
            }
            if chain_hash(&prev_hash, &entry) != hash {
                return broken("its content does not match its hash");
            }
            prev = hash;
            expected_seq += 1;
            checked += 1;
        }
    }
}

/// The user's entries, newest first.
pub async fn for_user(
    pool: &PgPool,
    user_id: Uuid,
    limit: i64,
) -> Result<Vec<(i64, String, Value)>, sqlx::Error> {
    let mut tx = db::user_tx(pool, user_id).await?;
    let rows = sqlx::query_as(
        "select seq, hash, entry from activity where user_id = $1 order by seq desc limit $2",
    )
    .bind(user_id)
    .bind(limit)
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rows)
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
        }
        .to_json(2, "2026-11-30T10:00:00.000000Z");
        assert_eq!(entry["decision"], "");
        assert_eq!(entry["grant"], "turn");
        assert_eq!(entry["outcome"], "not_run");
        assert_eq!(entry["kind"], "outcome");
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
        changed["decision"] = json!(ActivityDecision::Denied);
        assert_ne!(chain_hash(GENESIS, &changed), first, "the content counts");
    }
}
