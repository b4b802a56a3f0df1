//! `countersign audit export`: the chain as JSON lines for an auditor, and
//! `countersign audit verify --file`, which re-computes an export without
//! the database.
//!
//! The format, one JSON object per line:
//!
//! ```text
//! {"seq":1,"at":"2026-12-01T10:00:00.123456Z","prev_hash":"000…","hash":"5e3…","entry":{…}}
//! …
//! {"head":{"seq":12,"hash":"9ab…"}}
//! ```
//!
//! `entry` is the stored JSON itself; `at` is when the row was written
//! (UTC, RFC 3339). Row `n`'s `hash` is the lowercase hex SHA-256 of its
//! `prev_hash`, a newline (`\n`) and the RFC 8785 (JCS) canonical form of
//! its `entry` ([`super::chain_hash`]); its `prev_hash` is row `n-1`'s
//! `hash`, [`super::GENESIS`] for row 1; `entry.seq` is `n`. The last line is
//! the chain's head when the export began; the rows run up to it. An
//! export `--since` a later row starts with that row: its `prev_hash`
//! links it to the previous export (or a recorded head).
//!
//! What it deliberately does not do: hold the chain in memory (it reads
//! and writes a page at a time), or write anything but the chain.

use super::{Head, PAGE, RecordedHead, Verified, Walk, head::HeadCheck};
use crate::db;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgPool;
use std::{
    io::{BufRead, Write},
    path::Path,
    str::FromStr,
};
use time::{OffsetDateTime, format_description::well_known::Rfc3339};

/// Why an export could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Reading the chain.
    #[error("reading the activity log: {0}")]
    Db(#[from] sqlx::Error),
    /// Writing or reading the file.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A line of an export that is not one of its two shapes.
    #[error("line {line} of the export: {reason}")]
    Malformed {
        /// 1-based.
        line: u64,
        /// What is wrong with it.
        reason: String,
    },
}

/// Where an export starts: a row, or the first row written at or after a
/// time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Since {
    /// This sequence number.
    Seq(i64),
    /// The first row written at or after this time.
    Time(OffsetDateTime),
}

impl FromStr for Since {
    type Err = String;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        if let Ok(seq) = value.parse::<i64>() {
            return Ok(Self::Seq(seq));
        }
        OffsetDateTime::parse(value, &Rfc3339)
            .map(Self::Time)
            .map_err(|_| {
                format!(
                    "{value:?} is neither a row number nor an RFC 3339 time like \
                     2026-12-01T00:00:00Z"
                )
            })
    }
}

/// One row of an export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    seq: i64,
    at: String,
    prev_hash: String,
    hash: String,
    entry: Value,
}

/// An export's last line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HeadLine {
    head: HeadFields,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HeadFields {
    seq: i64,
    hash: String,
}

/// Writes the chain from `since` (else from row 1) up to its current head
/// to `out`, one row per line, then the head line. Returns the head and
/// how many rows were written.
pub async fn export(
    pool: &PgPool,
    since: Option<&Since>,
    out: &mut impl Write,
) -> Result<(Head, u64), ExportError> {
    let head = super::head(pool).await?;
    let mut next = match since {
        None => 1,
        Some(Since::Seq(seq)) => (*seq).max(1),
        Some(Since::Time(at)) => {
            let mut tx = db::service_tx(pool).await?;
            let first =
                sqlx::query_scalar!("select min(seq) from activity where created_at >= $1", at)
                    .fetch_one(&mut *tx)
                    .await?;
            tx.commit().await?;
            first.unwrap_or(head.seq + 1)
        }
    };
    let mut written = 0_u64;
    while next <= head.seq {
        let mut tx = db::service_tx(pool).await?;
        let page = sqlx::query!(
            "select seq, created_at, entry, prev_hash, hash from activity \
             where seq >= $1 and seq <= $2 order by seq limit $3",
            next,
            head.seq,
            PAGE,
        )
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        let Some(last) = page.last().map(|row| row.seq) else {
            break;
        };
        for row in page {
            let at = row
                .created_at
                .to_offset(time::UtcOffset::UTC)
                .format(&Rfc3339)
                .map_err(std::io::Error::other)?;
            let line = Row {
                seq: row.seq,
                at,
                prev_hash: row.prev_hash,
                hash: row.hash,
                entry: row.entry,
            };
            serde_json::to_writer(&mut *out, &line).map_err(std::io::Error::from)?;
            out.write_all(b"\n")?;
            written += 1;
        }
        next = last + 1;
    }
    let line = HeadLine {
        head: HeadFields {
            seq: head.seq,
            hash: head.hash.clone(),
        },
    };
    serde_json::to_writer(&mut *out, &line).map_err(std::io::Error::from)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok((head, written))
}

/// [`export`] to `output`, else to stdout.
pub async fn export_to(
    pool: &PgPool,
    since: Option<&Since>,
    output: Option<&Path>,
) -> Result<(Head, u64), ExportError> {
    match output {
        Some(path) => {
            let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
            export(pool, since, &mut file).await
        }
        None => export(pool, since, &mut std::io::BufWriter::new(std::io::stdout())).await,
    }
}

/// Re-computes an export read from `input`, and with `recorded`, checks
/// that it contains that head. A first row after row 1 is taken to follow
/// its `prev_hash` (which a recorded head or an earlier export vouches
/// for). Fails only when the input is not an export at all.
pub fn verify_export(
    input: impl BufRead,
    recorded: Option<&RecordedHead>,
) -> Result<Verified, ExportError> {
    let mut walk: Option<Walk> = None;
    let mut anchor = recorded.map(HeadCheck::new);
    let mut head_line: Option<HeadFields> = None;
    for (number, line) in (1_u64..).zip(input.lines()) {
        let line = line?;
        let malformed = |reason: String| ExportError::Malformed {
            line: number,
            reason,
        };
        if head_line.is_some() {
            return Err(malformed("a line after the head line".to_owned()));
        }
        let value: Value =
            serde_json::from_str(&line).map_err(|err| malformed(format!("not JSON: {err}")))?;
        if value.get("head").is_some() {
            let HeadLine { head } = serde_json::from_value(value)
                .map_err(|err| malformed(format!("not a head line: {err}")))?;
            head_line = Some(head);
            continue;
        }
        let row: Row =
            serde_json::from_value(value).map_err(|err| malformed(format!("not a row: {err}")))?;
        let walk = walk.get_or_insert_with(|| {
            if row.seq <= 1 {
                Walk::from_genesis()
            } else {
                if let Some(anchor) = &mut anchor {
                    anchor.see(row.seq - 1, &row.prev_hash);
                }
                Walk::after(row.seq - 1, &row.prev_hash)
            }
        });
        if let Err(broken) = walk.step(row.seq, &row.entry, &row.prev_hash, &row.hash) {
            return Ok(broken);
        }
        if let Some(anchor) = &mut anchor {
            anchor.see(row.seq, &row.hash);
        }
    }
    let walk = walk.unwrap_or_else(Walk::from_genesis);
    let last = walk.head();
    let Some(head) = head_line else {
        return Ok(Verified::Broken {
            seq: last.seq + 1,
            reason: "the export ends without its head line: it was cut short".to_owned(),
        });
    };
    if walk.checked() > 0 && (head.seq != last.seq || head.hash != last.hash) {
        return Ok(Verified::Broken {
            seq: head.seq,
            reason: format!(
                "the head line says {}:{}, the last row is {last}",
                head.seq, head.hash
            ),
        });
    }
    Ok(match anchor {
        Some(anchor) => anchor.finish(&last, walk.checked()),
        None => Verified::Intact(walk.checked()),
    })
}

/// [`verify_export`] of the file at `path`.
pub fn verify_file(path: &Path, recorded: Option<&RecordedHead>) -> Result<Verified, ExportError> {
    let file = std::fs::File::open(path).map_err(|err| {
        std::io::Error::new(err.kind(), format!("opening {}: {err}", path.display()))
    })?;
    verify_export(std::io::BufReader::new(file), recorded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{GENESIS, chain_hash};
    use serde_json::json;

    /// An export of `n` rows, built by the hash rule alone.
    fn export_of(n: i64) -> Vec<String> {
        let mut prev = GENESIS.to_owned();
        let mut lines = Vec::new();
        for seq in 1..=n {
            let entry = json!({"seq": seq, "at": "2026-12-01T00:00:00.000000Z", "tool_name": "t"});
            let hash = chain_hash(&prev, &entry);
            lines.push(
                json!({"seq": seq, "at": "2026-12-01T00:00:00Z", "prev_hash": prev, "hash": hash, "entry": entry})
                    .to_string(),
            );
            prev = hash;
        }
        lines.push(json!({"head": {"seq": n, "hash": prev}}).to_string());
        lines
    }

    fn verify(lines: &[String], head: Option<&str>) -> Verified {
        let recorded = head.map(|h| h.parse::<RecordedHead>().expect("a head"));
        verify_export(lines.join("\n").as_bytes(), recorded.as_ref()).expect("an export")
    }

    fn head_of(lines: &[String]) -> String {
        let last: Value = serde_json::from_str(lines.last().expect("a line")).expect("JSON");
        format!(
            "{}:{}",
            last["head"]["seq"],
            last["head"]["hash"].as_str().expect("hash")
        )
    }

    #[test]
    fn an_export_built_by_the_hash_rule_verifies_whole_and_from_a_later_row() {
        let lines = export_of(5);
        assert_eq!(verify(&lines, None), Verified::Intact(5));
        assert_eq!(verify(&lines, Some(&head_of(&lines))), Verified::Intact(5));
        // `--since 3`: rows 3 to 5, linked to row 2 by the first prev_hash.
        let row2: Value = serde_json::from_str(&lines[1]).expect("JSON");
        let since = lines[2..].to_vec();
        assert_eq!(verify(&since, None), Verified::Intact(3));
        let row2_head = format!("2:{}", row2["hash"].as_str().expect("hash"));
        assert_eq!(verify(&since, Some(&row2_head)), Verified::Intact(3));
        // The empty chain.
        let empty = export_of(0);
        assert_eq!(verify(&empty, None), Verified::Intact(0));
        assert_eq!(Head::genesis().to_string(), format!("0:{GENESIS}"));
    }

    #[test]
    fn a_changed_dropped_or_cut_export_is_named() {
        let lines = export_of(4);
        let mut changed = lines.clone();
        changed[2] = changed[2].replace("\"tool_name\":\"t\"", "\"tool_name\":\"u\"");
        assert!(
            matches!(verify(&changed, None), Verified::Broken { seq: 3, ref reason } if reason.contains("content")),
            "{:?}",
            verify(&changed, None)
        );
        let mut dropped = lines.clone();
        dropped.remove(1);
        assert!(matches!(
            verify(&dropped, None),
            Verified::Broken { seq: 3, ref reason } if reason.contains("row 2 is missing")
        ));
        let cut = lines[..3].to_vec();
        assert!(matches!(
            verify(&cut, None),
            Verified::Broken { ref reason, .. } if reason.contains("cut short")
        ));
        let mut wrong_head = lines.clone();
        wrong_head.pop();
        wrong_head.push(json!({"head": {"seq": 9, "hash": GENESIS}}).to_string());
        assert!(matches!(
            verify(&wrong_head, None),
            Verified::Broken { ref reason, .. } if reason.contains("the head line says")
        ));
        let mut extra = lines.clone();
        extra.push(lines[0].clone());
        assert!(matches!(
            verify_export(extra.join("\n").as_bytes(), None),
            Err(ExportError::Malformed { line: 6, .. })
        ));
    }

    #[test]
    fn since_is_a_row_number_or_an_rfc_3339_time() {
        assert_eq!("12".parse::<Since>(), Ok(Since::Seq(12)));
        assert!(matches!(
            "2026-12-01T10:00:00+01:00".parse::<Since>(),
            Ok(Since::Time(t)) if t.unix_timestamp() == 1_796_115_600
        ));
        assert!("yesterday".parse::<Since>().is_err());
    }
}
