//! `/api/activity…` and `/api/admin/activity…` (issue 45; DESIGN §9
//! "Activity is an audit trail"): the activity log narrowed by date,
//! connector, tool, decision and flag ([`crate::audit::query`]), exported
//! as CSV or JSON, and the administrators' view across users.
//!
//! An export is streamed a page at a time (each page its own short read)
//! and bounded by [`EXPORT_ROW_CAP`] entries; the cap is stated in the
//! `X-Row-Cap` header and in the file, and the file's end says whether
//! the cap cut it. An administrator's read of anyone's log but their own
//! is written to the chain (`activity_read`) before it is answered.
//!
//! 200; 401 (signed out); 403 (not an administrator, on `/api/admin/…`);
//! 404 (no such account); 422 (a filter that is not what it should be,
//! named); 400 (a query string that does not parse, e.g. `flagged=maybe`).

use super::{
    admin::Admin,
    error::ApiError,
    extract::{CurrentUser, Query},
};
use crate::{
    AppState,
    audit::{
        self,
        query::{self, Filter, FilterError, Line, Whose},
    },
    db,
    ids::UserId,
};
use axum::{
    body::{Body, Bytes},
    extract::State,
    http::{HeaderValue, header},
    response::{IntoResponse as _, Response},
};
use countersign_api::{
    ActivityEntry, ActivityFilter,
    approvals::{EXPORT_ROW_CAP, LIST_ROW_CAP},
};
use futures_util::StreamExt as _;
use serde::Deserialize;
use std::collections::HashMap;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

/// Entries an export reads per query.
const EXPORT_PAGE: usize = 1000;

impl From<FilterError> for ApiError {
    fn from(err: FilterError) -> Self {
        Self::Unprocessable(err.0)
    }
}

/// `?format=csv|json`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportFormat {
    /// `csv` or `json`.
    pub format: String,
}

/// `?user=`: whose log an administrator reads.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WhoseQuery {
    /// An account's id (a UUID) or email; absent: every account's.
    pub user: Option<String>,
}

/// `?before=`: the next (older) page of a list.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Only entries older than this one (its `seq`): the next page
    /// starts before the last entry of the one before. Absent: from the
    /// newest.
    pub before: Option<i64>,
}

/// The two export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Csv,
    Json,
}

impl Format {
    fn parse(word: &str) -> Result<Self, ApiError> {
        match word.trim() {
            "csv" => Ok(Self::Csv),
            "json" => Ok(Self::Json),
            _ => Err(ApiError::Unprocessable(
                "format must be \"csv\" or \"json\".".into(),
            )),
        }
    }

    const fn word(self) -> &'static str {
        match self {
            Self::Csv => "csv",
            Self::Json => "json",
        }
    }
}

/// `GET /api/activity`: the caller's activity log, narrowed.
#[utoipa::path(
    get,
    path = "/activity",
    tag = "activity",
    params(ActivityFilter, PageQuery),
    responses(
        (status = 200, description = "The caller's activity log, newest first (at most 500 entries: a full page has older ones, read with `before` set to its last entry's `seq`), with each entry's chain hash; narrowed by the filters, a call matching as a whole (its `decided` entry decides, its `outcome` entry comes with it)", body = Vec<countersign_api::ActivityEntry>),
        (status = 400, description = "A query string that does not parse (`flagged` not `true` or `false`)", body = countersign_api::ErrorBody),
        (status = 422, description = "A filter that is not what it should be (a time, a decision), named", body = countersign_api::ErrorBody),
    ),
)]
pub async fn list_activity(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(asked): Query<ActivityFilter>,
    Query(paged): Query<PageQuery>,
) -> Result<axum::Json<Vec<ActivityEntry>>, ApiError> {
    let filter = Filter::parse(&asked)?;
    let whose = Whose::Own(user.user_id.into());
    let lines = query::page(&state.db, whose, &filter, paged.before, cap(LIST_ROW_CAP)).await?;
    Ok(axum::Json(entries(&state, lines, false).await?))
}

/// `GET /api/activity/export`: the caller's filtered log as a file.
#[utoipa::path(
    get,
    path = "/activity/export",
    tag = "activity",
    params(ExportFormat, ActivityFilter),
    responses(
        (status = 200, description = "An attachment, streamed: at most 10,000 entries, newest first (the cap is in the `X-Row-Cap` header and in the file). JSON: an `ActivityExport` whose `truncated` says whether the cap cut it. CSV: a first line `# …` stating the cap and the filter, a header row, one row per entry (a cell that could start a spreadsheet formula is prefixed with `'`), and a last line `# N rows; complete` (`# 1 row; …`) or `# N rows; truncated …`", content(
            (countersign_api::ActivityExport = "application/json"),
            (String = "text/csv"),
        )),
        (status = 400, description = "A query string that does not parse", body = countersign_api::ErrorBody),
        (status = 422, description = "A format other than `csv` or `json`, or a filter that is not what it should be", body = countersign_api::ErrorBody),
    ),
)]
pub async fn export_activity(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Query(format): Query<ExportFormat>,
    Query(asked): Query<ActivityFilter>,
) -> Result<Response, ApiError> {
    let format = Format::parse(&format.format)?;
    let filter = Filter::parse(&asked)?;
    Ok(export(
        state,
        Whose::Own(user.user_id.into()),
        filter,
        asked,
        format,
    ))
}

/// `GET /api/admin/activity`: one account's activity log, or every
/// account's, for administrators.
#[utoipa::path(
    get,
    path = "/admin/activity",
    tag = "admin",
    params(WhoseQuery, ActivityFilter, PageQuery),
    responses(
        (status = 200, description = "The account's (or every account's) log, newest first (at most 500 entries: older ones with `before`), each entry with `user_email`; reading anyone's but one's own is written to the administrator's log first (`activity_read`)", body = Vec<countersign_api::ActivityEntry>),
        (status = 403, description = "Not an administrator", body = countersign_api::ErrorBody),
        (status = 404, description = "No such account", body = countersign_api::ErrorBody),
        (status = 422, description = "A filter that is not what it should be, named", body = countersign_api::ErrorBody),
    ),
)]
pub async fn admin_list_activity(
    State(state): State<AppState>,
    Admin(admin): Admin,
    Query(whose): Query<WhoseQuery>,
    Query(asked): Query<ActivityFilter>,
    Query(paged): Query<PageQuery>,
) -> Result<axum::Json<Vec<ActivityEntry>>, ApiError> {
    let filter = Filter::parse(&asked)?;
    let read = audit::Read::Log { export: None };
    let whose = Whose::Admin(admin_read(&state, admin.user_id.into(), whose, &asked, read).await?);
    let lines = query::page(&state.db, whose, &filter, paged.before, cap(LIST_ROW_CAP)).await?;
    Ok(axum::Json(entries(&state, lines, true).await?))
}

/// `GET /api/admin/activity/export`: the administrators' view as a file.
#[utoipa::path(
    get,
    path = "/admin/activity/export",
    tag = "admin",
    params(WhoseQuery, ExportFormat, ActivityFilter),
    responses(
        (status = 200, description = "As `GET /api/activity/export`, each entry with its account's email; written to the administrator's log first (`activity_read`, with the format) unless it is their own log", content(
            (countersign_api::ActivityExport = "application/json"),
            (String = "text/csv"),
        )),
        (status = 403, description = "Not an administrator", body = countersign_api::ErrorBody),
        (status = 404, description = "No such account", body = countersign_api::ErrorBody),
        (status = 422, description = "A format other than `csv` or `json`, or a filter that is not what it should be", body = countersign_api::ErrorBody),
    ),
)]
pub async fn admin_export_activity(
    State(state): State<AppState>,
    Admin(admin): Admin,
    Query(whose): Query<WhoseQuery>,
    Query(format): Query<ExportFormat>,
    Query(asked): Query<ActivityFilter>,
) -> Result<Response, ApiError> {
    let format = Format::parse(&format.format)?;
    let filter = Filter::parse(&asked)?;
    let read = audit::Read::Log {
        export: Some(format.word()),
    };
    let whose = Whose::Admin(admin_read(&state, admin.user_id.into(), whose, &asked, read).await?);
    Ok(export(state, whose, filter, asked, format))
}

/// `GET /api/admin/pending-calls`: the calls waiting for a decision, of
/// one account or every account, for administrators — whose, which tool,
/// where it sends data, until when; never the arguments or the chat.
#[utoipa::path(
    get,
    path = "/admin/pending-calls",
    tag = "admin",
    params(WhoseQuery),
    responses(
        (status = 200, description = "The calls waiting now, oldest first (at most 500); reading anyone's but one's own is written to the administrator's log first (`activity_read` with `waiting`)", body = Vec<countersign_api::AdminWaitingCall>),
        (status = 403, description = "Not an administrator", body = countersign_api::ErrorBody),
        (status = 404, description = "No such account", body = countersign_api::ErrorBody),
    ),
)]
pub async fn admin_pending_calls(
    State(state): State<AppState>,
    Admin(admin): Admin,
    Query(whose): Query<WhoseQuery>,
) -> Result<axum::Json<Vec<countersign_api::AdminWaitingCall>>, ApiError> {
    let asked = ActivityFilter::default();
    let read = audit::Read::Waiting;
    let subject = admin_read(&state, admin.user_id.into(), whose, &asked, read).await?;
    let calls = crate::approvals::waiting_across(&state, subject, cap(LIST_ROW_CAP)).await?;
    Ok(axum::Json(calls))
}

/// Whose log (or waiting calls) an administrator asked for: one account,
/// or every account (`None`). Unless it is their own, the read is written
/// to their log first (no entry, no answer).
async fn admin_read(
    state: &AppState,
    admin: UserId,
    whose: WhoseQuery,
    asked: &ActivityFilter,
    read: audit::Read<'_>,
) -> Result<Option<UserId>, ApiError> {
    let subject = match whose
        .user
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty())
    {
        None => None,
        Some(user) => Some(account(state, user).await?),
    };
    if subject.as_ref().map(|(id, _)| *id) != Some(admin) {
        audit::append_read(&state.db, admin, subject.clone(), asked, read).await?;
        tracing::info!(
            user.id = %admin,
            subject.id = ?subject.as_ref().map(|(id, _)| id.0),
            "an administrator read another account's activity"
        );
    }
    Ok(subject.map(|(id, _)| id))
}

/// The account `user` names (an id or an email), with its email; 404
/// when there is none.
async fn account(state: &AppState, user: &str) -> Result<(UserId, String), ApiError> {
    let id = Uuid::parse_str(user).ok();
    let email = id.is_none().then(|| user.to_lowercase());
    let mut tx = db::service_tx(&state.db).await?;
    let row = sqlx::query!(
        "select id, email from users where id = $1 or email = $2",
        id,
        email,
    )
    .fetch_optional(&mut *tx)
    .await?;
    db::end_read(tx);
    row.map(|r| (UserId(r.id), r.email))
        .ok_or_else(|| ApiError::NotFound("No such account.".into()))
}

fn cap(rows: usize) -> i64 {
    i64::try_from(rows).unwrap_or(i64::MAX)
}

/// The lines as the API shows them; with `emails`, each with its
/// account's email.
async fn entries(
    state: &AppState,
    lines: Vec<Line>,
    emails: bool,
) -> Result<Vec<ActivityEntry>, sqlx::Error> {
    let emails = if emails {
        let mut ids: Vec<Uuid> = lines.iter().map(|l| l.stored.user_id).collect();
        ids.sort_unstable();
        ids.dedup();
        query::emails(&state.db, &ids).await?
    } else {
        HashMap::new()
    };
    Ok(lines
        .into_iter()
        .map(|line| {
            let email = emails.get(&line.stored.user_id).cloned();
            ActivityEntry {
                user_email: email,
                ..line.stored.to_api(line.hash)
            }
        })
        .collect())
}

/// Where a streamed export stands between pages.
struct Cursor {
    state: AppState,
    whose: Whose,
    filter: Filter,
    format: Format,
    /// The next page starts below this sequence number.
    before: Option<i64>,
    /// Entries written so far.
    sent: usize,
    /// The opening (head) is written.
    opened: bool,
    /// The closing is written: nothing follows.
    closed: bool,
}

/// The export as a streamed attachment.
fn export(
    state: AppState,
    whose: Whose,
    filter: Filter,
    asked: ActivityFilter,
    format: Format,
) -> Response {
    let now = time::OffsetDateTime::now_utc();
    let exported_at = now.format(&Rfc3339).unwrap_or_default();
    let head = match format {
        Format::Csv => csv_head(&asked, &exported_at),
        Format::Json => json_head(&asked, &exported_at),
    };
    let cursor = Cursor {
        state,
        whose,
        filter,
        format,
        before: None,
        sent: 0,
        opened: false,
        closed: false,
    };
    let body = futures_util::stream::unfold(cursor, move |mut cursor| {
        let head = head.clone();
        async move {
            if cursor.closed {
                return None;
            }
            if !cursor.opened {
                cursor.opened = true;
                return Some((Ok(Bytes::from(head)), cursor));
            }
            match next_chunk(&mut cursor).await {
                Ok(chunk) => Some((Ok(Bytes::from(chunk)), cursor)),
                Err(err) => {
                    // The status is sent: the stream ends abnormally, and
                    // the file lacks its closing line.
                    tracing::error!(error = %err, "cannot read the activity log for an export");
                    cursor.closed = true;
                    Some((Err(std::io::Error::other("activity export failed")), cursor))
                }
            }
        }
    });
    let (content_type, extension) = match format {
        Format::Csv => ("text/csv; charset=utf-8", "csv"),
        Format::Json => ("application/json", "json"),
    };
    let day = now.date();
    let disposition = format!("attachment; filename=\"countersign-activity-{day}.{extension}\"");
    // Fused: a body may be polled again after its end (the compression
    // layer does), which an unfused `unfold` answers with a panic.
    let mut response = Body::from_stream(body.fuse()).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    headers.insert("x-row-cap", HeaderValue::from(EXPORT_ROW_CAP));
    response
}

/// The next page of rows, and the closing when it is the last: the cap
/// reached (one entry more was read to know whether it cut anything), or
/// fewer entries than asked for.
async fn next_chunk(cursor: &mut Cursor) -> Result<String, sqlx::Error> {
    let remaining = EXPORT_ROW_CAP - cursor.sent;
    let want = EXPORT_PAGE.min(remaining + 1);
    let lines = query::page(
        &cursor.state.db,
        cursor.whose,
        &cursor.filter,
        cursor.before,
        cap(want),
    )
    .await?;
    let read = lines.len();
    let admin_view = matches!(cursor.whose, Whose::Admin(_));
    let mut rows = entries(&cursor.state, lines, admin_view).await?;
    let truncated = read > remaining;
    rows.truncate(remaining);
    let mut out = String::new();
    for entry in &rows {
        match cursor.format {
            Format::Csv => out.push_str(&csv_row(entry)),
            Format::Json => {
                if cursor.sent > 0 {
                    out.push_str(",\n");
                }
                out.push_str(&serde_json::to_string(entry).unwrap_or_else(|_| "null".into()));
            }
        }
        cursor.sent += 1;
        cursor.before = Some(entry.seq);
    }
    if truncated || read < want {
        cursor.closed = true;
        out.push_str(&match cursor.format {
            Format::Csv => csv_tail(cursor.sent, truncated),
            Format::Json => json_tail(cursor.sent, truncated),
        });
    }
    Ok(out)
}

/// The JSON export up to its rows: an `ActivityExport` whose `rows`,
/// `row_count` and `truncated` follow.
fn json_head(filter: &ActivityFilter, exported_at: &str) -> String {
    let filter = serde_json::to_string(filter).unwrap_or_else(|_| "{}".into());
    let exported_at = serde_json::Value::from(exported_at);
    format!(
        "{{\"row_cap\":{EXPORT_ROW_CAP},\"filter\":{filter},\"exported_at\":{exported_at},\"rows\":[\n"
    )
}

fn json_tail(rows: usize, truncated: bool) -> String {
    format!("\n],\"row_count\":{rows},\"truncated\":{truncated}}}\n")
}

/// The CSV columns, in order.
const CSV_COLUMNS: [&str; 22] = [
    "seq",
    "at",
    "user_id",
    "user_email",
    "kind",
    "call_ref",
    "chat_id",
    "connector_id",
    "connector_name",
    "tool_name",
    "arguments_digest",
    "decision",
    "grant",
    "outcome",
    "error",
    "duration_ms",
    "flagged",
    "destinations",
    "flows",
    "subject",
    "export",
    "hash",
];

fn csv_head(filter: &ActivityFilter, exported_at: &str) -> String {
    let narrowed = match filter.query_string() {
        q if q.is_empty() => "none".to_owned(),
        q => q,
    };
    format!(
        "# Countersign activity export; at most {EXPORT_ROW_CAP} rows, newest first; exported at {exported_at}; filter: {narrowed}\n{}\n",
        CSV_COLUMNS.join(",")
    )
}

fn csv_tail(rows: usize, truncated: bool) -> String {
    let rows = if rows == 1 {
        "1 row".to_owned()
    } else {
        format!("{rows} rows")
    };
    if truncated {
        format!(
            "# {rows}; truncated at the cap of {EXPORT_ROW_CAP} rows: narrow the filter (e.g. the dates) for the rest\n"
        )
    } else {
        format!("# {rows}; complete\n")
    }
}

/// One entry as a CSV line.
fn csv_row(entry: &ActivityEntry) -> String {
    let destinations = entry
        .destinations
        .iter()
        .map(|d| match &d.unicode {
            Some(unicode) => format!("{} ({unicode})", d.ascii),
            None => d.ascii.clone(),
        })
        .collect::<Vec<_>>()
        .join("; ");
    let cells = [
        entry.seq.to_string(),
        entry.at.clone(),
        entry.user_id.clone(),
        entry.user_email.clone().unwrap_or_default(),
        entry.kind.to_string(),
        entry.call_ref.clone(),
        entry.chat_id.clone(),
        entry.connector_id.clone(),
        entry.connector_name.clone(),
        entry.tool_name.clone(),
        entry.arguments_digest.clone(),
        entry.decision.map(|d| d.to_string()).unwrap_or_default(),
        entry.grant.map(|g| g.to_string()).unwrap_or_default(),
        entry.outcome.to_string(),
        entry.error.clone().unwrap_or_default(),
        entry.duration_ms.map(|d| d.to_string()).unwrap_or_default(),
        entry.flagged.to_string(),
        destinations,
        entry.flows.join(" | "),
        entry.subject.clone().unwrap_or_default(),
        entry.export.clone().unwrap_or_default(),
        entry.hash.clone(),
    ];
    let mut line = cells
        .iter()
        .map(|c| csv_cell(c))
        .collect::<Vec<_>>()
        .join(",");
    line.push('\n');
    line
}

/// A CSV cell: quoted when it holds a comma, quote or line break; and a
/// text a spreadsheet would take for a formula (`=`, `+`, `-`, `@`, tab,
/// carriage return first: a tool name or error text is the server's, and
/// may be hostile) is prefixed with `'`.
fn csv_cell(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_owned()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_cells_are_quoted_and_formulas_defused() {
        let cases = [
            ("plain", "plain", "left alone"),
            ("a,b", "\"a,b\"", "a comma is quoted"),
            ("say \"hi\"", "\"say \"\"hi\"\"\"", "quotes are doubled"),
            ("two\nlines", "\"two\nlines\"", "a line break is quoted"),
            (
                "=HYPERLINK(\"x\")",
                "\"'=HYPERLINK(\"\"x\"\")\"",
                "a formula is defused",
            ),
            ("@SUM(A1)", "'@SUM(A1)", "@ starts a formula too"),
            ("-1", "'-1", "so does a minus"),
            ("", "", "empty stays empty"),
        ];
        for (text, want, why) in cases {
            assert_eq!(csv_cell(text), want, "{why}");
        }
    }

    #[test]
    fn the_csv_states_its_cap_and_whether_it_was_cut() {
        let head = csv_head(
            &ActivityFilter {
                tool: Some("send".into()),
                ..ActivityFilter::default()
            },
            "2026-12-07T10:00:00Z",
        );
        assert!(head.starts_with("# Countersign activity export; at most 10000 rows"));
        assert!(head.contains("filter: tool=send"), "{head}");
        assert!(head.ends_with(&format!("{}\n", CSV_COLUMNS.join(","))));
        assert_eq!(csv_tail(3, false), "# 3 rows; complete\n");
        assert_eq!(csv_tail(1, false), "# 1 row; complete\n");
        assert!(csv_tail(10_000, true).starts_with("# 10000 rows; truncated at the cap"));
    }

    #[test]
    fn the_json_export_is_one_document_with_its_cap() {
        let doc = format!(
            "{}{}{}",
            json_head(&ActivityFilter::default(), "2026-12-07T10:00:00Z"),
            "",
            json_tail(0, false)
        );
        let export: countersign_api::ActivityExport =
            serde_json::from_str(&doc).expect("an ActivityExport");
        assert_eq!(export.row_cap, EXPORT_ROW_CAP);
        assert_eq!(export.row_count, 0);
        assert!(!export.truncated);
        assert!(export.rows.is_empty());
    }
}
