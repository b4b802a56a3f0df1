//! Reading the activity log narrowed by a filter (issue 45, "Activity is
//! an audit trail"): `GET /api/activity`, its export and the
//! administrators' view across users all read through [`page`].
//!
//! A call matches as a whole: its `decided` entry holds the connector,
//! tool, decision and flag, and its `outcome` entry is judged by that
//! entry (looked up by `call_ref` through `activity_call_idx`), so a
//! filtered page never shows an outcome without the call it ends, nor
//! drops it. Dates, too, are the call's: when it was decided.
//!
//! What it deliberately does not do: read anything but the chain (no
//! arguments exist there), write to it (an administrator's read is
//! recorded by [`super::append_read`] before this runs), or hold a
//! transaction across pages: each page is its own short read, so an
//! export streamed to a slow client holds no connection while it waits.

use super::Stored;
use crate::{db, ids::UserId};
use countersign_api::{ActivityDecision, ActivityFilter};
use sqlx::PgPool;
use time::{Date, Duration, OffsetDateTime, format_description::well_known::Rfc3339};
use uuid::Uuid;

/// A filter that cannot be applied, in words for the caller (a 422).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FilterError(pub String);

/// [`ActivityFilter`] parsed at the edge: times as instants, the
/// decision a word of the vocabulary, blanks as absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Inclusive.
    pub from: Option<OffsetDateTime>,
    /// Exclusive.
    pub to: Option<OffsetDateTime>,
    /// An id or a name (matched case-insensitively).
    pub connector: Option<String>,
    /// Matched case-insensitively.
    pub tool: Option<String>,
    /// Never `Unknown`.
    pub decision: Option<ActivityDecision>,
    /// Flagged calls only, or unflagged calls only.
    pub flagged: Option<bool>,
}

impl Filter {
    /// Parses what the query string said; names the first field that is
    /// not what it should be.
    pub fn parse(filter: &ActivityFilter) -> Result<Self, FilterError> {
        let text = |value: &Option<String>| {
            value
                .as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let decision = match text(&filter.decision) {
            None => None,
            Some(word) => Some(word.parse::<ActivityDecision>().map_err(|_| {
                FilterError(format!(
                    "decision must be one of {}.",
                    ActivityDecision::ALL
                        .iter()
                        .map(|d| d.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?),
        };
        let from = text(&filter.from)
            .map(|t| instant(&t, false).ok_or_else(|| bad_time("from")))
            .transpose()?;
        let to = text(&filter.to)
            .map(|t| instant(&t, true).ok_or_else(|| bad_time("to")))
            .transpose()?;
        Ok(Self {
            from,
            to,
            connector: text(&filter.connector),
            tool: text(&filter.tool),
            decision,
            flagged: filter.flagged,
        })
    }
}

fn bad_time(field: &str) -> FilterError {
    FilterError(format!(
        "{field} must be an RFC 3339 time (2026-12-07T09:30:00+01:00) or a date (2026-12-07)."
    ))
}

/// An RFC 3339 time, or a date: its start (UTC), or with `end` its end
/// (the next day's start, as the bound is exclusive).
fn instant(text: &str, end: bool) -> Option<OffsetDateTime> {
    if let Ok(at) = OffsetDateTime::parse(text, &Rfc3339) {
        return Some(at);
    }
    let date = date(text)?;
    let start = date.midnight().assume_utc();
    if end {
        start.checked_add(Duration::days(1))
    } else {
        Some(start)
    }
}

/// `YYYY-MM-DD`, exactly.
fn date(text: &str) -> Option<Date> {
    let mut parts = text.split('-');
    let (year, month, day) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || year.len() != 4 || month.len() != 2 || day.len() != 2 {
        return None;
    }
    let month = time::Month::try_from(month.parse::<u8>().ok()?).ok()?;
    Date::from_calendar_date(year.parse().ok()?, month, day.parse().ok()?).ok()
}

/// Whose log is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whose {
    /// The caller's own, in a transaction as that user (row-level
    /// security holds even if the query were wrong).
    Own(UserId),
    /// An administrator's view: one account's, or every account's
    /// (`None`), as the service.
    Admin(Option<UserId>),
}

/// One entry as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Its chain hash.
    pub hash: String,
    /// The entry (its `seq` set from the row).
    pub stored: Stored,
}

/// At most `limit` entries matching `filter`, newest first, all with a
/// sequence number below `before` (`None`: from the newest): one page.
/// The next page starts before the last entry of this one.
#[tracing::instrument(skip(pool, filter), err)]
pub async fn page(
    pool: &PgPool,
    whose: Whose,
    filter: &Filter,
    before: Option<i64>,
    limit: i64,
) -> Result<Vec<Line>, sqlx::Error> {
    let (mut tx, user) = match whose {
        Whose::Own(user) => (db::user_tx(pool, user).await?, Some(user)),
        Whose::Admin(user) => (db::service_tx(pool).await?, user),
    };
    let decision = filter.decision.map(ActivityDecision::as_str);
    let rows = sqlx::query!(
        r#"select a.seq, a.hash, a.entry
             from activity a
             left join lateral (
                   select d.entry, d.created_at from activity d
                    where a.entry ->> 'kind' = 'outcome'
                      and d.user_id = a.user_id
                      and d.entry ->> 'call_ref' = a.entry ->> 'call_ref'
                      and d.entry ->> 'kind' = 'decided'
                    order by d.seq
                    limit 1) as d on true
            where ($1::uuid is null or a.user_id = $1)
              and a.seq < $2
              and ($3::timestamptz is null or coalesce(d.created_at, a.created_at) >= $3)
              and ($4::timestamptz is null or coalesce(d.created_at, a.created_at) < $4)
              and ($5::text is null
                   or coalesce(d.entry, a.entry) ->> 'connector_id' = $5
                   or lower(coalesce(d.entry, a.entry) ->> 'connector_name') = lower($5))
              and ($6::text is null or lower(coalesce(d.entry, a.entry) ->> 'tool_name') = lower($6))
              and ($7::text is null or coalesce(d.entry, a.entry) ->> 'decision' = $7)
              and ($8::bool is null
                   or (coalesce(d.entry, a.entry) ->> 'kind' in ('decided', 'outcome')
                       and coalesce((coalesce(d.entry, a.entry) ->> 'flagged')::boolean, false) = $8))
            order by a.seq desc
            limit $9"#,
        user.map(|u| u.0) as Option<Uuid>,
        before.unwrap_or(i64::MAX),
        filter.from,
        filter.to,
        filter.connector.as_deref(),
        filter.tool.as_deref(),
        decision,
        filter.flagged,
        limit,
    )
    .fetch_all(&mut *tx)
    .await?;
    db::end_read(tx);
    Ok(rows
        .into_iter()
        .map(|r| {
            let mut stored = serde_json::from_value::<Stored>(r.entry).unwrap_or_else(|err| {
                tracing::warn!(activity.seq = r.seq, error = %err, "unreadable activity entry");
                Stored::default()
            });
            stored.seq = r.seq;
            Line {
                hash: r.hash,
                stored,
            }
        })
        .collect())
}

/// The emails of `ids` (for the administrators' view), as the service.
pub async fn emails(
    pool: &PgPool,
    ids: &[Uuid],
) -> Result<std::collections::HashMap<Uuid, String>, sqlx::Error> {
    let mut tx = db::service_tx(pool).await?;
    let rows = sqlx::query!("select id, email from users where id = any($1)", ids)
        .fetch_all(&mut *tx)
        .await?;
    db::end_read(tx);
    Ok(rows.into_iter().map(|r| (r.id, r.email)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(from: &str, to: &str, decision: &str) -> ActivityFilter {
        ActivityFilter {
            from: Some(from.into()),
            to: Some(to.into()),
            decision: Some(decision.into()),
            ..ActivityFilter::default()
        }
    }

    #[test]
    fn dates_cover_whole_days_and_times_keep_their_offsets() {
        let parsed = Filter::parse(&filter("2026-12-01", "2026-12-07", "denied")).expect("valid");
        assert_eq!(
            parsed.from.map(|t| t.format(&Rfc3339).expect("formats")),
            Some("2026-12-01T00:00:00Z".into()),
            "a date starts at its midnight"
        );
        assert_eq!(
            parsed.to.map(|t| t.format(&Rfc3339).expect("formats")),
            Some("2026-12-08T00:00:00Z".into()),
            "an end date runs through its day"
        );
        assert_eq!(parsed.decision, Some(ActivityDecision::Denied));
        let exact = Filter::parse(&filter(
            "2026-12-01T09:30:00+01:00",
            "2026-12-01T10:00:00Z",
            " approved ",
        ))
        .expect("valid");
        assert_eq!(
            exact.from.map(|t| t.unix_timestamp()),
            Some(1_796_113_800),
            "08:30 UTC"
        );
        assert_eq!(exact.decision, Some(ActivityDecision::Approved));
    }

    #[test]
    fn blanks_are_absent_and_bad_values_are_named() {
        let blank = ActivityFilter {
            from: Some(" ".into()),
            tool: Some(String::new()),
            ..ActivityFilter::default()
        };
        assert_eq!(Filter::parse(&blank), Ok(Filter::default()));
        let cases = [
            (filter("yesterday", "2026-12-07", "denied"), "from must be"),
            (filter("2026-12-01", "2026-13-01", "denied"), "to must be"),
            (
                filter("2026-12-01", "2026-12-07", "unknown"),
                "decision must be",
            ),
            (
                filter("2026-12-01", "2026-12-07", "maybe"),
                "decision must be",
            ),
        ];
        for (query, want) in cases {
            let err = Filter::parse(&query).expect_err(want);
            assert!(err.0.starts_with(want), "{query:?}: {err}");
        }
    }
}
