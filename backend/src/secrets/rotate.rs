//! `countersign secrets rotate | status`: moving every sealed value onto a
//! new `COUNTERSIGN_SECRET_KEY` (docs/operations.md, "Rotating keys").
//!
//! What it owns: the list of sealed columns ([`COLUMNS`]) and, for each,
//! how to read a batch, which associated data a row was sealed with, and
//! how to write it back. [`rotate`] re-seals every value whose `key_id` is
//! not the current key's, batch by batch: each batch is one service
//! transaction that locks its rows (`for update`), opens each with the
//! owner's associated data and writes the value sealed under the current
//! key with the same associated data. Rows are visited in primary-key
//! order (keyset pagination), so a row that does not open is passed over,
//! reported and left as it is, and a run always ends. A second run finds
//! nothing to do. [`status`] counts values per key id.
//!
//! What it deliberately does not do: decide when a key may be dropped (the
//! operator reads `status`), touch the approval ledger's HMAC key (ledger
//! rows live minutes; nothing to re-seal), or print anything secret — a
//! report names tables, row ids and key ids only.
//!
//! Architecture invariant: every column that holds a [`Sealed`] value is in
//! [`COLUMNS`], with the associated data its writer uses (each module's own
//! `aad` function, called from here, so the two cannot drift apart). A new
//! sealed column without an entry here would survive a rotation under the
//! old key and stop opening when that key is dropped; the API test
//! `rotation` stores one value of every kind and fails on a forgotten one.

use super::{Sealed, SecretBox, SecretError};
use crate::{
    auth::mfa,
    connectors,
    connectors::oauth::store,
    db::{self, Tx},
    models,
};
use std::fmt;
use uuid::Uuid;

/// One sealed column set: a table, and which of its sealed values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// `connector_secrets`: bearer tokens and custom headers.
    ConnectorSecrets,
    /// `provider_keys`: users' own model provider keys.
    ProviderKeys,
    /// `mfa_totp`: TOTP secrets.
    MfaTotp,
    /// `connector_oauth.client_*`: the OAuth client (its secret, if any).
    OAuthClient,
    /// `connector_oauth.tokens_*`: access and refresh tokens (nullable).
    OAuthTokens,
    /// `oauth_states`: authorization requests in flight (PKCE verifiers).
    OAuthStates,
}

/// Every sealed column set, in the order a run visits them.
pub const COLUMNS: [Column; 6] = [
    Column::ConnectorSecrets,
    Column::ProviderKeys,
    Column::MfaTotp,
    Column::OAuthClient,
    Column::OAuthTokens,
    Column::OAuthStates,
];

impl Column {
    /// The name a report prints: the table, and the column set where a
    /// table has two.
    pub fn name(self) -> &'static str {
        match self {
            Self::ConnectorSecrets => "connector_secrets",
            Self::ProviderKeys => "provider_keys",
            Self::MfaTotp => "mfa_totp",
            Self::OAuthClient => "connector_oauth.client",
            Self::OAuthTokens => "connector_oauth.tokens",
            Self::OAuthStates => "oauth_states",
        }
    }
}

/// Where a row is, as its primary key. Also the keyset cursor: the next
/// batch starts after the last row of this one.
#[derive(Debug, Clone, PartialEq, Eq)]
enum RowKey {
    /// `connector_id` (connector_secrets, connector_oauth), `user_id`
    /// (mfa_totp).
    Id(Uuid),
    /// `(user_id, provider)` (provider_keys).
    UserProvider(Uuid, String),
    /// `state_hash` (oauth_states).
    StateHash(String),
}

impl fmt::Display for RowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Id(id) => write!(f, "{id}"),
            Self::UserProvider(user, provider) => write!(f, "{user}/{provider}"),
            Self::StateHash(hash) => write!(f, "{hash}"),
        }
    }
}

/// A stored value to re-seal.
struct Stored {
    key: RowKey,
    aad: Vec<u8>,
    sealed: Sealed,
}

/// A value that opens under neither key: left as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unopenable {
    /// The row's primary key (`connector_id`, `user_id`, `user_id/provider`
    /// or `state_hash`).
    pub row: String,
    /// The key id stored with it.
    pub key_id: String,
    /// Why: an unknown key, or a value that does not open under its key.
    pub reason: String,
}

/// What a run did to one column set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnReport {
    /// Which column set.
    pub column: Column,
    /// Values re-sealed under the current key.
    pub resealed: u64,
    /// Values that open under neither key (left as they are).
    pub unopenable: Vec<Unopenable>,
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The key id every value was re-sealed under.
    pub key_id: String,
    /// One entry per column set, in [`COLUMNS`] order.
    pub columns: Vec<ColumnReport>,
}

impl Report {
    /// True when every value is now under the current key.
    pub fn is_complete(&self) -> bool {
        self.columns.iter().all(|c| c.unopenable.is_empty())
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "re-sealing under key {}", self.key_id)?;
        for c in &self.columns {
            writeln!(
                f,
                "{:<24} {} re-sealed, {} could not be opened",
                c.column.name(),
                c.resealed,
                c.unopenable.len()
            )?;
            for u in &c.unopenable {
                writeln!(
                    f,
                    "  {} row {}: sealed with key {}: {}",
                    c.column.name(),
                    u.row,
                    u.key_id,
                    u.reason
                )?;
            }
        }
        let resealed: u64 = self.columns.iter().map(|c| c.resealed).sum();
        let left: usize = self.columns.iter().map(|c| c.unopenable.len()).sum();
        if left == 0 {
            writeln!(
                f,
                "done: {resealed} re-sealed; every value is under key {}",
                self.key_id
            )
        } else {
            writeln!(
                f,
                "{resealed} re-sealed; {left} values open under neither key and were left as they are"
            )
        }
    }
}

/// How many values each key id holds, per column set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// `(column set, key id, values)`, in [`COLUMNS`] order then by key id.
    pub counts: Vec<(Column, String, i64)>,
    /// The current key's id, when the key was given.
    pub current: Option<String>,
    /// The previous key's id, when it was given.
    pub previous: Option<String>,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.counts.is_empty() {
            return writeln!(f, "no sealed values");
        }
        for (column, key_id, n) in &self.counts {
            let which = if self.current.as_deref() == Some(key_id) {
                " (current)"
            } else if self.previous.as_deref() == Some(key_id) {
                " (previous)"
            } else {
                ""
            };
            writeln!(f, "{:<24} {key_id}{which:<11} {n}", column.name())?;
        }
        if let Some(current) = &self.current {
            let others: i64 = self
                .counts
                .iter()
                .filter(|(_, k, _)| k != current)
                .map(|(_, _, n)| n)
                .sum();
            if others == 0 {
                writeln!(
                    f,
                    "every value is under the current key: COUNTERSIGN_SECRET_KEY_PREVIOUS is no \
                     longer needed"
                )?;
            } else {
                writeln!(
                    f,
                    "{others} values are under other keys: run `countersign secrets rotate`"
                )?;
            }
        }
        Ok(())
    }
}

/// Re-seals every value not under `secrets`' current key, `batch` rows per
/// transaction (at least one).
#[tracing::instrument(skip_all, fields(secrets.key_id = secrets.key_id()))]
pub async fn rotate(
    pool: &sqlx::PgPool,
    secrets: &SecretBox,
    batch: u32,
) -> Result<Report, sqlx::Error> {
    let batch = i64::from(batch.max(1));
    let current = secrets.key_id();
    let mut columns = Vec::with_capacity(COLUMNS.len());
    for column in COLUMNS {
        let mut report = ColumnReport {
            column,
            resealed: 0,
            unopenable: Vec::new(),
        };
        let mut after: Option<RowKey> = None;
        loop {
            let mut tx = db::service_tx(pool).await?;
            let rows = fetch(&mut tx, column, current, after.as_ref(), batch).await?;
            let Some(last) = rows.last() else {
                tx.commit().await?;
                break;
            };
            after = Some(last.key.clone());
            for row in rows {
                match secrets.open(&row.sealed, &row.aad) {
                    Ok(plain) => {
                        let sealed = secrets.seal(&plain, &row.aad);
                        write(&mut tx, column, &row.key, &sealed).await?;
                        report.resealed += 1;
                    }
                    Err(err) => report.unopenable.push(Unopenable {
                        row: row.key.to_string(),
                        key_id: row.sealed.key_id.clone(),
                        reason: reason(&err),
                    }),
                }
            }
            tx.commit().await?;
        }
        tracing::info!(
            secrets.column = column.name(),
            secrets.resealed = report.resealed,
            secrets.unopenable = report.unopenable.len(),
            "re-sealed"
        );
        columns.push(report);
    }
    Ok(Report {
        key_id: current.to_owned(),
        columns,
    })
}

fn reason(err: &SecretError) -> String {
    match err {
        SecretError::UnknownKey { .. } => {
            "neither COUNTERSIGN_SECRET_KEY nor COUNTERSIGN_SECRET_KEY_PREVIOUS".to_owned()
        }
        other => other.to_string(),
    }
}

/// Counts values per key id and column set; `secrets`, when given, labels
/// the current and previous key.
pub async fn status(
    pool: &sqlx::PgPool,
    secrets: Option<&SecretBox>,
) -> Result<Status, sqlx::Error> {
    let mut tx = db::service_tx(pool).await?;
    let mut counts = Vec::new();
    for column in COLUMNS {
        let rows: Vec<(String, i64)> = match column {
            Column::ConnectorSecrets => sqlx::query!(
                r#"select key_id, count(*) as "n!" from connector_secrets group by key_id order by key_id"#
            )
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .map(|r| (r.key_id, r.n))
            .collect(),
            Column::ProviderKeys => sqlx::query!(
                r#"select key_id, count(*) as "n!" from provider_keys group by key_id order by key_id"#
            )
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .map(|r| (r.key_id, r.n))
            .collect(),
            Column::MfaTotp => sqlx::query!(
                r#"select key_id, count(*) as "n!" from mfa_totp group by key_id order by key_id"#
            )
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .map(|r| (r.key_id, r.n))
            .collect(),
            Column::OAuthClient => sqlx::query!(
                r#"select client_key_id as key_id, count(*) as "n!" from connector_oauth
                    group by client_key_id order by client_key_id"#
            )
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .map(|r| (r.key_id, r.n))
            .collect(),
            Column::OAuthTokens => sqlx::query!(
                r#"select tokens_key_id as "key_id!", count(*) as "n!" from connector_oauth
                    where tokens_key_id is not null
                    group by tokens_key_id order by tokens_key_id"#
            )
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .map(|r| (r.key_id, r.n))
            .collect(),
            Column::OAuthStates => sqlx::query!(
                r#"select key_id, count(*) as "n!" from oauth_states group by key_id order by key_id"#
            )
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .map(|r| (r.key_id, r.n))
            .collect(),
        };
        counts.extend(rows.into_iter().map(|(k, n)| (column, k, n)));
    }
    tx.commit().await?;
    Ok(Status {
        counts,
        current: secrets.map(|s| s.key_id().to_owned()),
        previous: secrets.and_then(|s| s.previous_key_id().map(str::to_owned)),
    })
}

/// The next `batch` rows of `column` not under key `current`, after
/// `after` in primary-key order, locked until `tx` ends.
async fn fetch(
    tx: &mut Tx,
    column: Column,
    current: &str,
    after: Option<&RowKey>,
    batch: i64,
) -> Result<Vec<Stored>, sqlx::Error> {
    let after_id = match after {
        Some(RowKey::Id(id)) => *id,
        _ => Uuid::nil(),
    };
    let sealed = |key_id, nonce, ciphertext| Sealed {
        key_id,
        nonce,
        ciphertext,
    };
    Ok(match column {
        Column::ConnectorSecrets => sqlx::query!(
            "select connector_id, user_id, key_id, nonce, ciphertext from connector_secrets
              where key_id <> $1 and connector_id > $2
              order by connector_id limit $3 for update",
            current,
            after_id,
            batch,
        )
        .fetch_all(&mut **tx)
        .await?
        .into_iter()
        .map(|r| Stored {
            key: RowKey::Id(r.connector_id),
            aad: connectors::aad(r.user_id, r.connector_id),
            sealed: sealed(r.key_id, r.nonce, r.ciphertext),
        })
        .collect(),
        Column::ProviderKeys => {
            let (after_user, after_provider) = match after {
                Some(RowKey::UserProvider(user, provider)) => (*user, provider.as_str()),
                _ => (Uuid::nil(), ""),
            };
            sqlx::query!(
                "select user_id, provider, key_id, nonce, ciphertext from provider_keys
                  where key_id <> $1 and (user_id, provider) > ($2, $3)
                  order by user_id, provider limit $4 for update",
                current,
                after_user,
                after_provider,
                batch,
            )
            .fetch_all(&mut **tx)
            .await?
            .into_iter()
            .map(|r| Stored {
                aad: models::aad(r.user_id, &r.provider),
                key: RowKey::UserProvider(r.user_id, r.provider),
                sealed: sealed(r.key_id, r.nonce, r.ciphertext),
            })
            .collect()
        }
        Column::MfaTotp => sqlx::query!(
            "select user_id, key_id, nonce, ciphertext from mfa_totp
              where key_id <> $1 and user_id > $2
              order by user_id limit $3 for update",
            current,
            after_id,
            batch,
        )
        .fetch_all(&mut **tx)
        .await?
        .into_iter()
        .map(|r| Stored {
            key: RowKey::Id(r.user_id),
            aad: mfa::aad(r.user_id),
            sealed: sealed(r.key_id, r.nonce, r.ciphertext),
        })
        .collect(),
        Column::OAuthClient => sqlx::query!(
            "select connector_id, user_id, client_key_id, client_nonce, client_ciphertext
               from connector_oauth
              where client_key_id <> $1 and connector_id > $2
              order by connector_id limit $3 for update",
            current,
            after_id,
            batch,
        )
        .fetch_all(&mut **tx)
        .await?
        .into_iter()
        .map(|r| Stored {
            key: RowKey::Id(r.connector_id),
            aad: store::aad(
                "connector_oauth_client",
                r.user_id.into(),
                r.connector_id.into(),
            ),
            sealed: sealed(r.client_key_id, r.client_nonce, r.client_ciphertext),
        })
        .collect(),
        Column::OAuthTokens => sqlx::query!(
            r#"select connector_id, user_id, tokens_key_id as "key_id!",
                      tokens_nonce as "nonce!", tokens_ciphertext as "ciphertext!"
                 from connector_oauth
                where tokens_key_id is not null and tokens_key_id <> $1 and connector_id > $2
                order by connector_id limit $3 for update"#,
            current,
            after_id,
            batch,
        )
        .fetch_all(&mut **tx)
        .await?
        .into_iter()
        .map(|r| Stored {
            key: RowKey::Id(r.connector_id),
            aad: store::aad(
                "connector_oauth_tokens",
                r.user_id.into(),
                r.connector_id.into(),
            ),
            sealed: sealed(r.key_id, r.nonce, r.ciphertext),
        })
        .collect(),
        Column::OAuthStates => {
            let after_hash = match after {
                Some(RowKey::StateHash(hash)) => hash.as_str(),
                _ => "",
            };
            sqlx::query!(
                "select state_hash, user_id, connector_id, key_id, nonce, ciphertext
                   from oauth_states
                  where key_id <> $1 and state_hash > $2
                  order by state_hash limit $3 for update",
                current,
                after_hash,
                batch,
            )
            .fetch_all(&mut **tx)
            .await?
            .into_iter()
            .map(|r| Stored {
                aad: store::aad("oauth_states", r.user_id.into(), r.connector_id.into()),
                key: RowKey::StateHash(r.state_hash),
                sealed: sealed(r.key_id, r.nonce, r.ciphertext),
            })
            .collect()
        }
    })
}

/// Writes `sealed` into `column` of the row at `key` (locked by [`fetch`]).
async fn write(
    tx: &mut Tx,
    column: Column,
    key: &RowKey,
    sealed: &Sealed,
) -> Result<(), sqlx::Error> {
    let (key_id, nonce, ciphertext) = (&sealed.key_id, &sealed.nonce, &sealed.ciphertext);
    match (column, key) {
        (Column::ConnectorSecrets, RowKey::Id(id)) => sqlx::query!(
            "update connector_secrets set key_id = $2, nonce = $3, ciphertext = $4
              where connector_id = $1",
            id,
            key_id,
            nonce,
            ciphertext,
        )
        .execute(&mut **tx)
        .await
        .map(drop),
        (Column::ProviderKeys, RowKey::UserProvider(user, provider)) => sqlx::query!(
            "update provider_keys set key_id = $3, nonce = $4, ciphertext = $5
              where user_id = $1 and provider = $2",
            user,
            provider,
            key_id,
            nonce,
            ciphertext,
        )
        .execute(&mut **tx)
        .await
        .map(drop),
        (Column::MfaTotp, RowKey::Id(user)) => sqlx::query!(
            "update mfa_totp set key_id = $2, nonce = $3, ciphertext = $4 where user_id = $1",
            user,
            key_id,
            nonce,
            ciphertext,
        )
        .execute(&mut **tx)
        .await
        .map(drop),
        (Column::OAuthClient, RowKey::Id(id)) => sqlx::query!(
            "update connector_oauth
                set client_key_id = $2, client_nonce = $3, client_ciphertext = $4
              where connector_id = $1",
            id,
            key_id,
            nonce,
            ciphertext,
        )
        .execute(&mut **tx)
        .await
        .map(drop),
        (Column::OAuthTokens, RowKey::Id(id)) => sqlx::query!(
            "update connector_oauth
                set tokens_key_id = $2, tokens_nonce = $3, tokens_ciphertext = $4
              where connector_id = $1 and tokens_key_id is not null",
            id,
            key_id,
            nonce,
            ciphertext,
        )
        .execute(&mut **tx)
        .await
        .map(drop),
        (Column::OAuthStates, RowKey::StateHash(hash)) => sqlx::query!(
            "update oauth_states set key_id = $2, nonce = $3, ciphertext = $4
              where state_hash = $1",
            hash,
            key_id,
            nonce,
            ciphertext,
        )
        .execute(&mut **tx)
        .await
        .map(drop),
        _ => unreachable!("fetch gives each column set its own kind of row key"),
    }
}
