//! The chain's head (`SEQ:DIGEST`, the latest row) and the check that a
//! head recorded elsewhere is still in the chain.
//!
//! A rewrite by someone with rights on the table can re-hash every row
//! after the one it changed, so the chain still verifies on its own. What
//! it cannot change is a head that was copied out before: that row's hash
//! moves, and [`HeadCheck`] says so. An empty chain's head is
//! `0:` + [`GENESIS`], which every chain contains.

use super::{GENESIS, Verified};
use crate::db;
use serde::Serialize;
use sqlx::PgPool;
use std::{fmt, str::FromStr};

/// A row of the chain by its place and hash, as `countersign audit head`
/// prints it and an export's last line holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Head {
    /// Its sequence number (0: the empty chain).
    pub seq: i64,
    /// Its hash (64 lowercase hex digits).
    pub hash: String,
}

impl Head {
    /// The head of the empty chain, `0:` + [`GENESIS`].
    pub fn genesis() -> Self {
        Self {
            seq: 0,
            hash: GENESIS.to_owned(),
        }
    }
}

impl fmt::Display for Head {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.seq, self.hash)
    }
}

/// A head recorded elsewhere, as `--head` takes it: `SEQ:DIGEST`, or the
/// digest alone (then any row with that hash will do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedHead {
    /// The row it names, if it names one.
    pub seq: Option<i64>,
    /// Its hash, lowercase.
    pub hash: String,
}

impl fmt::Display for RecordedHead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.seq {
            Some(seq) => write!(f, "{seq}:{}", self.hash),
            None => f.write_str(&self.hash),
        }
    }
}

impl FromStr for RecordedHead {
    type Err = String;
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        let shape = || {
            format!(
                "{value:?} is not a head: give SEQ:DIGEST as `countersign audit head` \
                 prints it, or the 64-hex-digit DIGEST alone"
            )
        };
        let value = value.trim();
        let (seq, hash) = match value.split_once(':') {
            Some((seq, hash)) => (Some(seq.parse::<i64>().map_err(|_| shape())?), hash),
            None => (None, value),
        };
        if seq.is_some_and(|seq| seq < 0)
            || hash.len() != 64
            || !hash.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Err(shape());
        }
        Ok(Self {
            seq,
            hash: hash.to_ascii_lowercase(),
        })
    }
}

/// The chain's latest row, or `0:GENESIS` when it is empty.
pub async fn head(pool: &PgPool) -> Result<Head, sqlx::Error> {
    let mut tx = db::service_tx(pool).await?;
    let last = sqlx::query_as!(
        Head,
        r#"select seq as "seq!", hash as "hash!" from activity order by seq desc limit 1"#
    )
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(last.unwrap_or_else(Head::genesis))
}

/// Watches the rows of a walk go by for a recorded head; pure, so the
/// database walk and the export walk share it.
#[derive(Debug, Clone)]
pub struct HeadCheck<'a> {
    recorded: &'a RecordedHead,
    /// `Some(Ok)`: seen; `Some(Err)`: its row has another hash, and why.
    found: Option<Result<(), String>>,
}

impl<'a> HeadCheck<'a> {
    /// Starts looking for `recorded`.
    pub fn new(recorded: &'a RecordedHead) -> Self {
        let mut check = Self {
            recorded,
            found: None,
        };
        check.see(0, GENESIS);
        check
    }

    /// A row of the chain (or the point a walk starts after).
    pub fn see(&mut self, seq: i64, hash: &str) {
        if self.found.is_some() {
            return;
        }
        let recorded = self.recorded;
        match recorded.seq {
            Some(at) if at == seq && recorded.hash == hash => self.found = Some(Ok(())),
            Some(at) if at == seq => {
                self.found = Some(Err(format!(
                    "row {seq}'s hash is now {hash}: the chain was rewritten at or before \
                     row {seq} after that head was recorded"
                )));
            }
            None if recorded.hash == hash => self.found = Some(Ok(())),
            _ => {}
        }
    }

    /// The verdict once every row was seen: `Intact(rows)` when the head
    /// was among them; `last` is the walk's last row.
    pub fn finish(self, last: &Head, rows: u64) -> Verified {
        let missing = |reason: String| Verified::HeadMissing { reason };
        match (self.found, self.recorded.seq) {
            (Some(Ok(())), _) => Verified::Intact(rows),
            (Some(Err(reason)), _) => missing(reason),
            (None, Some(seq)) if seq > last.seq => missing(format!(
                "the chain ends at row {}, before row {seq}: rows were removed after that \
                 head was recorded",
                last.seq
            )),
            (None, Some(seq)) => missing(format!(
                "row {seq} was not among the rows checked (from row {} to row {})",
                last.seq + 1 - i64::try_from(rows).unwrap_or(i64::MAX),
                last.seq
            )),
            (None, None) => missing(format!(
                "no row has that hash: the chain was rewritten after that head was \
                 recorded (or the head is from another database); the chain's head is {last}"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(c: char) -> String {
        c.to_string().repeat(64)
    }

    #[test]
    fn a_recorded_head_reads_as_seq_and_digest_or_the_digest_alone() {
        /// Text, then what it reads as (the row, the digest's one repeated
        /// digit) or `None` when refused, then why.
        type Case<'a> = (&'a str, Option<(Option<i64>, &'a str)>, &'a str);
        let cases: &[Case<'_>] = &[
            (
                &format!("12:{}", h('a')),
                Some((Some(12), "a")),
                "SEQ:DIGEST",
            ),
            (&h('b'), Some((None, "b")), "the digest alone"),
            (
                &format!(" 3:{} ", h('C')),
                Some((Some(3), "c")),
                "spaced, upper case",
            ),
            (
                &format!("0:{GENESIS}"),
                Some((Some(0), "0")),
                "the empty chain",
            ),
            (&format!("-1:{}", h('a')), None, "a negative row"),
            (&format!("x:{}", h('a')), None, "not a number"),
            ("12:abc", None, "too short"),
            (&format!("1:{}", h('g')), None, "not hex"),
            ("", None, "empty"),
        ];
        for (text, expected, why) in cases {
            let parsed = text.parse::<RecordedHead>();
            match expected {
                Some((seq, c)) => {
                    let head = parsed.unwrap_or_else(|e| panic!("{why}: {e}"));
                    assert_eq!(head.seq, *seq, "{why}");
                    assert_eq!(head.hash, c.repeat(64), "{why}");
                }
                None => assert!(parsed.is_err(), "{why}"),
            }
        }
    }

    #[test]
    fn the_check_finds_the_head_and_names_what_is_missing() {
        let last = Head {
            seq: 3,
            hash: h('c'),
        };
        let rows = [(1, h('a')), (2, h('b')), (3, h('c'))];
        let run = |recorded: &str| {
            let recorded: RecordedHead = recorded.parse().expect("a head");
            let mut check = HeadCheck::new(&recorded);
            for (seq, hash) in &rows {
                check.see(*seq, hash);
            }
            check.finish(&last, 3)
        };
        let cases: &[(String, Option<&str>, &str)] = &[
            (format!("2:{}", h('b')), None, "an earlier head"),
            (format!("3:{}", h('c')), None, "the current head"),
            (h('b'), None, "a digest alone"),
            (format!("0:{GENESIS}"), None, "the empty chain's head"),
            (
                format!("2:{}", h('e')),
                Some("row 2's hash is now"),
                "rewritten",
            ),
            (
                format!("5:{}", h('e')),
                Some("ends at row 3, before row 5"),
                "cut short",
            ),
            (h('e'), Some("no row has that hash"), "a digest nowhere"),
        ];
        for (recorded, missing, why) in cases {
            match (run(recorded), missing) {
                (Verified::Intact(3), None) => {}
                (Verified::HeadMissing { reason }, Some(says)) if reason.contains(says) => {}
                (other, _) => panic!("{why}: {other:?}"),
            }
        }
    }
}
