//! One round trip for a read that stands alone ([`run`]).
//!
//! A transaction opened by [`super::user_tx`] or [`super::service_tx`]
//! costs two round trips for a single read: the `BEGIN` that sets the
//! role, then the statement (the `ROLLBACK` is off the caller's way).
//! sqlx sends one message and waits for its answer, so they cannot be
//! pipelined. A read that is a transaction by itself (the session behind
//! a cookie, on every request; a stream's next events) is sent instead as
//! one simple query of two statements, which Postgres runs as one
//! implicit transaction:
//!
//! ```sql
//! select set_config('role', 'authenticated', true), set_config('countersign.user_id', '…', true);
//! execute cs_events_after('…'::uuid, '41'::int8, '256'::int8)
//! ```
//!
//! The first is the same role statement the `BEGIN` of a transaction
//! carries (DESIGN §3: role and user id set together, in one round trip,
//! at the start of the transaction, local to it). The second executes a
//! statement this connection prepared ([`Statement`]): prepared, so it
//! keeps one plan per connection like every other statement the server
//! sends (`plan_cache_mode`, [`super::connect`]), and planned as the role
//! it runs as, so row-level security applies to it. The transaction ends
//! with the query, and everything rolls back if any part fails; either
//! way the role and the user id end with it, and the connection goes back
//! to the pool outside any transaction.
//!
//! A simple query takes no bind parameters, so the values are written
//! into its text, and only ever as [`Arg`]s: ids, numbers and hashes,
//! each built from a typed value and written in an alphabet that cannot
//! end a literal (hex digits and dashes, decimal digits). There is no
//! `Arg` for text, and none should be added: a statement's text is what
//! Postgres writes to its log with an error (`log_min_error_statement`)
//! or a slow statement, and users' content (a message, a model's answer,
//! a tool's arguments) must not reach that log. Writes of content go
//! through a transaction and bind parameters, which are not logged.
//!
//! A connection prepares a statement the first time it runs it: the
//! execution fails with "prepared statement does not exist" (nothing ran),
//! and the trip is sent again with the `PREPARE` in it, on the same
//! connection.

use crate::ids::UserId;
use futures_util::TryStreamExt as _;
use sqlx::{Either, PgPool, postgres::PgRow};
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

/// A value written into a trip's text: an id, a number or a hash, only
/// ever hex digits, dashes and decimal digits inside its quotes, so
/// nothing in it can end a literal or start a statement. Never content
/// (see the module's documentation).
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

    /// A `bytea`, sent as hex.
    pub fn bytes(bytes: &[u8]) -> Self {
        Arg(format!("decode('{}', 'hex')", hex::encode(bytes)))
    }
}

/// Runs `statement` with `args` as `who`, in one round trip and one
/// transaction of its own; returns its rows (text format: read them with
/// `Row::try_get`, which parses them). Like [`super::user_tx`]'s `BEGIN`,
/// it runs in a task of its own (`db::detached`).
pub async fn run(
    pool: &PgPool,
    who: As,
    statement: &'static Statement,
    args: Vec<Arg>,
) -> Result<Vec<PgRow>, sqlx::Error> {
    let role = match who {
        As::User(user_id) => super::user_role(user_id),
        As::Service => super::SERVICE_ROLE.to_owned(),
    };
    let args: Vec<String> = args.into_iter().map(|a| a.0).collect();
    let execute = format!("execute {}({})", statement.name, args.join(", "));
    let pool = pool.clone();
    super::detached(async move {
        let mut conn = pool.acquire().await?;
        match send(&mut conn, format!("{role}; {execute}")).await {
            Err(err) if not_prepared(&err) => {
                let prepare = format!(
                    "prepare {} {} as {}",
                    statement.name, statement.params, statement.sql
                );
                send(&mut conn, format!("{role}; {prepare}; {execute}")).await
            }
            result => result,
        }
    })
    .await
}

/// Sends one simple query; the rows of its last statement.
async fn send(conn: &mut sqlx::PgConnection, sql: String) -> Result<Vec<PgRow>, sqlx::Error> {
    let mut results = sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).fetch_many(&mut *conn);
    let (mut rows, mut last) = (Vec::new(), Vec::new());
    while let Some(item) = results.try_next().await? {
        match item {
            Either::Left(_done) => last = std::mem::take(&mut rows),
            Either::Right(row) => rows.push(row),
        }
    }
    Ok(last)
}

/// "prepared statement does not exist" (SQLSTATE 26000).
fn not_prepared(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.code().as_deref() == Some("26000"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What may appear inside an argument's quotes.
    fn quoted_parts_are_inert(arg: &Arg) -> bool {
        arg.0.split('\'').skip(1).step_by(2).all(|inside| {
            inside == "hex" || inside.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
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
        ] {
            assert!(quoted_parts_are_inert(&arg), "{arg:?}");
            assert!(!arg.0.contains(';'), "{arg:?}");
        }
        assert_eq!(Arg::int(i64::MIN).0, "'-9223372036854775808'::int8");
    }
}
