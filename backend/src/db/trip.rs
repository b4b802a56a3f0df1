//! One round trip for reads that stand alone ([`run`], [`run_parts`]),
//! and for a write that is one statement of ids ([`run`]).
//!
//! A transaction opened by [`super::user_tx`] or [`super::service_tx`]
//! costs two round trips for a single read: the `BEGIN` that sets the
//! role, then the statement (the `ROLLBACK` is off the caller's way).
//! sqlx sends one message and waits for its answer, so they cannot be
//! pipelined. A read that is a transaction by itself (the session behind
//! a cookie, on every request; a stream's next events) is sent instead as
//! one simple query, in which each read is a transaction of its own:
//!
//! ```sql
//! begin; select set_config('role', 'service_role', true), set_config('countersign.user_id', '', true);
//! execute cs_session_is_live(decode('…', 'hex'), '1800000'::int8); commit;
//! begin; select set_config('role', 'authenticated', true), set_config('countersign.user_id', '…', true);
//! execute cs_events_after('…'::uuid, '41'::int8, '500'::int8); commit
//! ```
//!
//! Each transaction starts with the same role statement the `BEGIN` of a
//! transaction carries (DESIGN §3: role and user id set together, at the
//! start of the transaction, local to it), so each read runs as exactly
//! one role, and reads that need different roles (a stream's session
//! check as the service, its events as the user) still share the round
//! trip. Each then executes a statement this connection prepared
//! ([`Statement`]): prepared, so it keeps one plan per connection like
//! every other statement the server sends (`plan_cache_mode`,
//! [`super::connect`]), and planned as the role it runs as, so row-level
//! security applies to it. The role and the user id end with each
//! transaction. A failure skips the rest of the query and leaves its
//! transaction aborted; it is rolled back at once (or the connection is
//! closed), so the connection goes back to the pool outside any
//! transaction.
//!
//! A simple query takes no bind parameters, so the values are written
//! into its text, and only ever as [`Arg`]s: ids, numbers, hashes, `null`
//! and words of the server's own vocabulary (`&'static str`: a status, a
//! grant), each built from a typed value and written in an alphabet that
//! cannot end a literal (hex digits and dashes, decimal digits, lowercase
//! letters and `_`). There is no `Arg` for text that came from outside
//! the server, and none should be added: a statement's text is
//! what Postgres writes to its log with an error
//! (`log_min_error_statement`) or a slow statement, and users' content (a
//! message, a model's answer, a tool's arguments) must not reach that
//! log. Writes of content, and reads by a name a model chose, go through
//! a transaction and bind parameters, whose values Postgres does not log
//! with an error (each connection sets `log_parameter_max_length_on_error`
//! to 0, [`super::connect`]) nor with a logged statement when
//! `log_parameter_max_length` is 0, which the server asks for at start-up
//! ([`super::warn_if_postgres_logs_content`]).
//!
//! A connection prepares a statement the first time it runs it: the
//! execution fails with "prepared statement does not exist" (its
//! transaction is rolled back), the trip's statements are prepared on the
//! same connection, and the trip is sent again.

use crate::ids::UserId;
use futures_util::TryStreamExt as _;
use sqlx::{Either, PgPool, Postgres, pool::PoolConnection, postgres::PgRow};
use uuid::Uuid;

/// A statement a trip executes, prepared on each connection by name.
#[derive(Debug)]
pub struct Statement {
    /// Its name on the connection (`cs_…`; sqlx's own are `sqlx_s_…`).
    pub name: &'static str,
    /// The types of `$1`, `$2`, … as `PREPARE` takes them: `(uuid, int8)`.
    pub params: &'static str,
    /// The statement, with `$n` parameters.
    pub sql: &'static str,
}

/// Whom a trip runs as.
#[derive(Debug, Clone, Copy)]
pub enum As {
    /// `authenticated`, with `auth.uid()` = this user.
    User(UserId),
    /// `service_role`, with no user.
    Service,
}

/// A value written into a trip's text: an id, a number, a hash or a word
/// of the server's own vocabulary, only ever hex digits, dashes, decimal
/// digits, lowercase letters and `_` inside its quotes, so nothing in it
/// can end a literal or start a statement. Never content (see the
/// module's documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg(String);

impl Arg {
    /// A `uuid`.
    pub fn uuid(id: impl Into<Uuid>) -> Self {
        Arg(format!("'{}'::uuid", id.into()))
    }

    /// A `bigint`.
    pub fn int(n: i64) -> Self {
        Arg(format!("'{n}'::int8"))
    }

    /// A word of the server's own vocabulary (a status, a grant: an
    /// enum's wire name, never anything a user, a model or a server
    /// wrote), as `text`. Only lowercase ASCII letters and `_` are
    /// written: anything else is left out, so it cannot end its literal.
    pub fn word(word: &'static str) -> Self {
        let word: String = word
            .chars()
            .filter(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        Arg(format!("'{word}'::text"))
    }

    /// SQL's `null` (a parameter left out).
    pub fn null() -> Self {
        Arg("null".to_owned())
    }

    /// A `bytea`, sent as hex.
    pub fn bytes(bytes: &[u8]) -> Self {
        Arg(format!("decode('{}', 'hex')", hex::encode(bytes)))
    }
}

/// One transaction of a trip: a statement, its arguments, and whom it
/// runs as.
#[derive(Debug)]
pub struct Part {
    /// Whom it runs as.
    pub who: As,
    /// What it executes.
    pub statement: &'static Statement,
    /// `$1`, `$2`, … in order.
    pub args: Vec<Arg>,
}

/// Runs `part`, in one round trip and one transaction of its own;
/// returns its rows (text format: read them with `Row::try_get`, which
/// parses them). Like [`super::user_tx`]'s `BEGIN`, it runs in a task of
/// its own (`db::detached`).
pub async fn run(pool: &PgPool, part: Part) -> Result<Vec<PgRow>, sqlx::Error> {
    let mut rows = run_parts(pool, vec![part]).await?;
    Ok(rows.pop().unwrap_or_default())
}

/// Runs `parts` in order, each as a transaction of its own (its role set
/// at its start, as [`run`] does), all in one round trip on one
/// connection; returns each part's rows. Reads that stand apart but are
/// needed together (a stream's session check and its read; the facts a
/// turn reads before its first model call) then cost one round trip
/// instead of one each, and one connection. The first part that fails
/// ends the trip: the later parts do not run. Parts should be reads: on
/// a connection's first use of a statement the trip is sent again, and
/// the parts before the one that was not prepared yet run twice. A write
/// goes alone, through [`run`] (a ledger decision, a claim): its one
/// statement either ran and committed or was rolled back.
pub async fn run_parts(pool: &PgPool, parts: Vec<Part>) -> Result<Vec<Vec<PgRow>>, sqlx::Error> {
    if parts.is_empty() {
        return Ok(Vec::new());
    }
    let statements: Vec<&'static Statement> = parts.iter().map(|p| p.statement).collect();
    let query = parts
        .into_iter()
        .map(|part| {
            let role = match part.who {
                As::User(user_id) => super::user_role(user_id),
                As::Service => super::SERVICE_ROLE.to_owned(),
            };
            let args: Vec<String> = part.args.into_iter().map(|a| a.0).collect();
            // `execute name()` is a syntax error: no parentheses for none.
            let args = if args.is_empty() {
                String::new()
            } else {
                format!("({})", args.join(", "))
            };
            format!(
                "begin; {role}; execute {}{args}; commit",
                part.statement.name
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let pool = pool.clone();
    super::detached(async move {
        let mut conn = pool.acquire().await?;
        match send(&mut conn, &query, statements.len()).await {
            Err(err) if not_prepared(&err) => {
                for statement in &statements {
                    prepare(&mut conn, statement).await?;
                }
                send(&mut conn, &query, statements.len()).await
            }
            result => result,
        }
    })
    .await
}

/// The statements of each part: `begin`, the role, `execute`, `commit`.
const PER_PART: usize = 4;
/// Which of them is the `execute`.
const EXECUTE: usize = 2;

/// Sends one simple query of `parts` parts; the rows of each part's
/// `execute`. A failed part leaves its transaction aborted (the rest of
/// the query is skipped): it is rolled back before the connection is
/// used again, or the connection is closed.
async fn send(
    conn: &mut PoolConnection<Postgres>,
    query: &str,
    parts: usize,
) -> Result<Vec<Vec<PgRow>>, sqlx::Error> {
    let result = async {
        let mut rows: Vec<Vec<PgRow>> = (0..parts).map(|_| Vec::new()).collect();
        for (statement, row) in rows_by_statement(conn, query.to_owned()).await? {
            if statement % PER_PART == EXECUTE {
                rows[statement / PER_PART].push(row);
            }
        }
        Ok(rows)
    }
    .await;
    if result.is_err()
        && sqlx::raw_sql("rollback")
            .execute(&mut **conn)
            .await
            .is_err()
    {
        conn.close_on_drop();
    }
    result
}

/// Sends `query` (a simple query: several statements, no parameters) and
/// returns every row with the index of the statement that returned it.
pub(super) async fn rows_by_statement(
    conn: &mut sqlx::PgConnection,
    query: String,
) -> Result<Vec<(usize, PgRow)>, sqlx::Error> {
    let mut results = sqlx::raw_sql(sqlx::AssertSqlSafe(query)).fetch_many(conn);
    let (mut statement, mut rows) = (0, Vec::new());
    while let Some(item) = results.try_next().await? {
        match item {
            Either::Left(_done) => statement += 1,
            Either::Right(row) => rows.push((statement, row)),
        }
    }
    Ok(rows)
}

/// Prepares `statement` on this connection, unless it already is.
pub(super) async fn prepare(
    conn: &mut sqlx::PgConnection,
    statement: &Statement,
) -> Result<(), sqlx::Error> {
    let prepare = format!(
        "prepare {} {} as {}",
        statement.name, statement.params, statement.sql
    );
    match sqlx::raw_sql(sqlx::AssertSqlSafe(prepare))
        .execute(conn)
        .await
    {
        Err(sqlx::Error::Database(db)) if db.code().as_deref() == Some("42P05") => Ok(()),
        result => result.map(drop),
    }
}

/// "prepared statement does not exist" (SQLSTATE 26000).
pub(super) fn not_prepared(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.code().as_deref() == Some("26000"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What may appear inside an argument's quotes.
    fn quoted_parts_are_inert(arg: &Arg) -> bool {
        arg.0.split('\'').skip(1).step_by(2).all(|inside| {
            inside
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c == '-' || c.is_ascii_lowercase() || c == '_')
        }) && arg.0.matches('\'').count().is_multiple_of(2)
    }

    #[test]
    fn no_value_can_end_its_literal() {
        for arg in [
            Arg::bytes(b"'\\\0;$$"),
            Arg::bytes(&[0xff; 32]),
            Arg::uuid(Uuid::new_v4()),
            Arg::uuid(Uuid::nil()),
            Arg::int(i64::MIN),
            Arg::int(i64::MAX),
            Arg::null(),
            Arg::word("approved"),
            Arg::word("it's'; drop table x; --"),
        ] {
            assert!(quoted_parts_are_inert(&arg), "{arg:?}");
            assert!(!arg.0.contains(';'), "{arg:?}");
        }
        assert_eq!(Arg::int(i64::MIN).0, "'-9223372036854775808'::int8");
        assert_eq!(Arg::word("always").0, "'always'::text");
        assert_eq!(Arg::word("it's'; drop").0, "'itsdrop'::text");
    }
}
