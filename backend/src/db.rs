//! The database: pool, migrations, role bootstrap, and the only ways into
//! a transaction.
//!
//! Architecture invariant: the server's login role has no privileges of its
//! own (it is `NOINHERIT` and owns nothing). Every query runs inside a
//! transaction opened by [`user_tx`] (as `authenticated`, with
//! `auth.uid()` set) or [`service_tx`] / [`service_locked`] (as
//! `service_role`), or is a transaction by itself: sent by [`trip::run`]
//! as one or the other, or one of the two writes a turn makes on its way
//! to the first token (`events::append_alone`, `turns::store_alone`),
//! each one statement outside any transaction that calls a function of
//! the migrations (`append_chat_event_as`, `store_turn_as`) whose first
//! act is the switch to `authenticated` with the user's id, local to that
//! statement's implicit transaction, and which refuses to run once a role
//! is set. Row-level
//! security, enabled and forced on every table, does the rest: a query that
//! forgets its `where user_id = …` still sees only the caller's rows.

pub mod trip;

use crate::ids::UserId;
use sqlx::{
    Connection as _, PgPool, Postgres, Transaction,
    migrate::Migrator,
    postgres::{PgConnection, PgPoolOptions, PgRow},
};
use std::time::Duration;

/// Every migration in `migrations/`, embedded at compile time.
pub static MIGRATOR: Migrator = sqlx::migrate!("../migrations");

/// Role that owns the schema and runs migrations (embedded set-up).
pub const OWNER_ROLE: &str = "countersign_owner";
/// The server's login role (embedded set-up).
pub const APP_ROLE: &str = "countersign_app";

/// A transaction that runs as `authenticated` for one user, or as
/// `service_role`.
pub type Tx = Transaction<'static, Postgres>;

/// A pooled connection idle for less than this is handed out without a
/// ping (see [`connect`]).
const PING_IF_IDLE_FOR: Duration = Duration::from_secs(1);

/// Opens the server's pool.
#[tracing::instrument(skip_all)]
pub async fn connect(url: &str) -> Result<PgPool, sqlx::Error> {
    PgPoolOptions::new()
        .max_connections(16)
        .acquire_timeout(Duration::from_secs(10))
        // By default sqlx pings every connection it hands out: one more
        // round trip on every transaction's way. It also pings each one as
        // it comes back (off the request's way), so a connection idle for
        // less than `PING_IF_IDLE_FOR` answered a moment ago; only those
        // idle longer are pinged, which is what finds the connections a
        // Postgres restart ended (a failed ping replaces the connection).
        .test_before_acquire(false)
        // Every statement the server sends is prepared, and looks rows up
        // by ids and sequence numbers: one plan serves every value. Left
        // to itself Postgres plans each of a connection's first five
        // executions of a statement anew for its values (custom plans),
        // and keeps doing so where the generic plan's estimate is not
        // cheaper; with row-level security's policies in every query that
        // planning is most of a short statement's time (a turn's first
        // statement: 0.44 ms planning, 0.45 ms running). Once per
        // connection, so the plan is built on a statement's first use and
        // reused after.
        //
        // And: a failed statement's bound values (users' content) are not
        // written to Postgres's log, whatever the database's default
        // (`logs_parameters`).
        .after_connect(|conn, _meta| {
            Box::pin(async move {
                sqlx::raw_sql(
                    "set plan_cache_mode = force_generic_plan; \
                     set log_parameter_max_length_on_error = 0",
                )
                .execute(conn)
                .await?;
                Ok(())
            })
        })
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= PING_IF_IDLE_FOR {
                    conn.ping().await?;
                }
                Ok(true)
            })
        })
        .connect(url)
        .await
}

/// Migrations corrected after they were released, each with the checksum
/// (SHA-384 of its text) it was released with. Each wrote rows of a table
/// with row-level security forced while the force was on, as the
/// migrating owner, whom forced security lets touch no row: on a database
/// holding such rows it failed (and the database stayed before it), and
/// where it passed it had no row to touch, which is what the corrected
/// text does there too. So a database that recorded the released text is
/// where the corrected one would have left it, and [`migrate`] records
/// the corrected checksum for it; without that, sqlx refuses a database
/// whose applied migration changed. `tests/api/upgrades.rs` migrates
/// databases holding those rows.
///
/// "Released" is the text `main` landed with: an earlier text of
/// `session_stamps`, on `main` only between two commits of the session
/// that wrote it, is not repaired (a database that ran it lacks functions
/// the later migrations call) and fails with sqlx's `VersionMismatch`.
pub const REPAIRED: [(i64, &str); 2] = [
    // `decide_by`: its backfill of the pending calls' deadline saw none,
    // and `set not null` then failed on a database holding pending calls.
    (
        20261201000060,
        "04ed512e86e7ab008ba0f5b98466acb540cc323a309744fe8513adb9987dfc6529fae0f76c59f98357049a8d7e302a5a",
    ),
    // `session_stamps`: its backfill of every user's epoch failed on a
    // database holding users (the insert into `session_epochs`).
    (
        20261206000010,
        "fc8d7d9fe557f7571aa702bb5ffb5630e0d4d59ba0d353701b39db9e2d1bc89125c2ae5db90ee071cf8b717f0904a1f0",
    ),
];

/// Applies pending migrations with a single connection of the owner role,
/// having first recorded the corrected checksum of each [`REPAIRED`]
/// migration the database recorded as released.
#[tracing::instrument(skip_all)]
pub async fn migrate(owner_url: &str) -> Result<(), sqlx::migrate::MigrateError> {
    let mut conn = PgConnection::connect(owner_url).await?;
    repair_checksums(&mut conn).await?;
    MIGRATOR.run(&mut conn).await?;
    conn.close().await?;
    Ok(())
}

/// [`REPAIRED`]: where the database recorded a corrected migration with
/// the checksum it was released with, the corrected one. Nothing on a new
/// database (no `_sqlx_migrations` yet).
async fn repair_checksums(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    let recorded =
        sqlx::query_scalar!(r#"select to_regclass('_sqlx_migrations') is not null as "recorded!""#)
            .fetch_one(&mut *conn)
            .await?;
    if !recorded {
        return Ok(());
    }
    for (version, released) in REPAIRED {
        let corrected = MIGRATOR
            .iter()
            .find(|m| m.version == version)
            .map(|m| m.checksum.to_vec())
            .ok_or_else(|| sqlx::Error::Protocol(format!("no migration {version}")))?;
        let released = hex::decode(released).map_err(|e| sqlx::Error::Decode(e.into()))?;
        let repaired = sqlx::query!(
            "update _sqlx_migrations set checksum = $1 where version = $2 and checksum = $3",
            corrected,
            version,
            released,
        )
        .execute(&mut *conn)
        .await?;
        if repaired.rows_affected() > 0 {
            tracing::info!(version, "recorded a corrected migration's checksum");
        }
    }
    Ok(())
}

/// Begins a transaction as `authenticated` with `auth.uid()` = `user_id`.
/// Role and user id are set by the `BEGIN` itself (one round trip), and are
/// local to the transaction, so nothing leaks to the next user of the
/// pooled connection.
#[tracing::instrument(skip_all, fields(user.id = %user_id))]
pub async fn user_tx(
    pool: &PgPool,
    user_id: impl Into<UserId> + std::fmt::Display,
) -> Result<Tx, sqlx::Error> {
    begin(pool, format!("begin; {}", user_role(user_id.into()))).await
}

/// The statement that makes the rest of a transaction run as
/// `authenticated` for `user_id`: one of the two places the server's code
/// sets a role (the `BEGIN` of [`user_tx`], and [`trip::run`]; the
/// migrations' `…_as` functions make the same switch, as their first
/// act).
fn user_role(user_id: UserId) -> String {
    // A UUID's text is hex digits and dashes: nothing in it can end the
    // literal (the statement takes no bind parameters).
    format!(
        "select set_config('role', 'authenticated', true), \
         set_config('countersign.user_id', '{user_id}', true)"
    )
}

/// The statement that makes the rest of a transaction run as
/// `service_role`, with no user: the other place a role is set.
const SERVICE_ROLE: &str = "select set_config('role', 'service_role', true), \
                            set_config('countersign.user_id', '', true)";

/// Begins a transaction as `service_role`: the server's own bookkeeping
/// (accounts, sessions, throttling), never reachable as a user.
#[tracing::instrument(skip_all)]
pub async fn service_tx(pool: &PgPool) -> Result<Tx, sqlx::Error> {
    begin(pool, format!("begin; {SERVICE_ROLE}")).await
}

/// A `service_role` transaction whose `BEGIN` round trip also takes the
/// transaction-level advisory lock `key` (held until the transaction
/// ends) and then executes `read` (a [`trip::Statement`] of no
/// parameters, prepared on the connection's first use of it), each a
/// statement of its own: `read` sees what the lock's previous holder
/// committed. `work` gets the connection and `read`'s rows (text format:
/// read them with `Row::try_get`); once it succeeds the transaction
/// commits, otherwise it is rolled back.
///
/// One round trip fewer than [`service_tx`] + a lock + a read, for a
/// writer whose statement depends on what it read under the lock (the
/// activity chain's next link: `audit::append`, on an approved call's way
/// to execution). It runs in a task of its own (`detached`), so a caller
/// that goes away does not stop it half-way; should `work` panic, the
/// connection is closed, never put back in the pool inside the
/// transaction.
pub async fn service_locked<T: Send + 'static>(
    pool: &PgPool,
    key: i64,
    read: &'static trip::Statement,
    work: impl for<'c> FnOnce(
        &'c mut PgConnection,
        Vec<PgRow>,
    ) -> futures_util::future::BoxFuture<'c, Result<T, sqlx::Error>>
    + Send
    + 'static,
) -> Result<T, sqlx::Error> {
    let pool = pool.clone();
    detached(async move {
        let mut open = Open {
            conn: pool.acquire().await?,
            ended: false,
        };
        let conn = &mut *open.conn;
        let result = async {
            let rows = match locked(conn, key, read).await {
                Err(err) if trip::not_prepared(&err) => {
                    sqlx::raw_sql("rollback").execute(&mut *conn).await?;
                    trip::prepare(conn, read).await?;
                    locked(conn, key, read).await?
                }
                rows => rows?,
            };
            let value = work(&mut *conn, rows).await?;
            sqlx::raw_sql("commit").execute(&mut *conn).await?;
            Ok(value)
        }
        .await;
        let ended = result.is_ok() || sqlx::raw_sql("rollback").execute(&mut *conn).await.is_ok();
        open.ended = ended;
        result
    })
    .await
}

/// [`service_locked`]'s first round trip: `BEGIN`, the role, the lock,
/// `read`'s rows.
async fn locked(
    conn: &mut PgConnection,
    key: i64,
    read: &trip::Statement,
) -> Result<Vec<PgRow>, sqlx::Error> {
    // An integer's text and a statement's name: nothing in it can end
    // the statement. The rows are those of the fourth statement.
    let query = format!(
        "begin; {SERVICE_ROLE}; select pg_advisory_xact_lock({key}); execute {}",
        read.name
    );
    Ok(trip::rows_by_statement(conn, query)
        .await?
        .into_iter()
        .filter_map(|(statement, row)| (statement == 3).then_some(row))
        .collect())
}

/// A connection inside a transaction [`service_locked`] opened: closed
/// when dropped, unless the transaction was seen to end.
struct Open {
    conn: sqlx::pool::PoolConnection<Postgres>,
    ended: bool,
}

impl Drop for Open {
    fn drop(&mut self) {
        if !self.ended {
            self.conn.close_on_drop();
        }
    }
}

/// Ends a transaction that only read. Nothing is lost by not committing,
/// and the round trip is not on the caller's way: the drop queues the
/// `ROLLBACK`, which the pool sends when it takes the connection back.
pub fn end_read(tx: Tx) {
    drop(tx);
}

/// `BEGIN` with the role statement, in one round trip, and safe to cancel.
///
/// sqlx counts a transaction only once the server has answered its
/// `BEGIN`, and rolls back on drop only what it counted: a caller dropped
/// while the answer is on its way (a client that went away mid-request)
/// would put the connection back in the pool inside that transaction, and
/// the next request on it would read that old transaction's `now()` —
/// the clock every session and approval expiry is checked against. So the
/// `BEGIN` runs in a task of its own: a caller that goes away leaves it to
/// finish, and the transaction it opened is dropped there, which rolls it
/// back before the connection is reused (`tests/api/transactions.rs`).
async fn begin(pool: &PgPool, statement: String) -> Result<Tx, sqlx::Error> {
    let pool = pool.clone();
    detached(async move { pool.begin_with(sqlx::AssertSqlSafe(statement)).await }).await
}

/// Runs `work` in a task of its own, so that a caller that goes away does
/// not stop it half-way through a conversation with the server ([`begin`],
/// [`trip::run`]).
pub(crate) async fn detached<T: Send + 'static>(
    work: impl Future<Output = Result<T, sqlx::Error>> + Send + 'static,
) -> Result<T, sqlx::Error> {
    tokio::spawn(work)
        .await
        .map_err(|err| sqlx::Error::Io(std::io::Error::other(err)))?
}

/// What the server's login role could do that it should not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleRisk {
    /// The role is a superuser or can become one.
    pub superuser: bool,
    /// The role has BYPASSRLS or can become a role that has it.
    pub bypass_rls: bool,
    /// Tables, views and sequences the role owns (owners can switch RLS off).
    pub owned_relations: i64,
}

impl RoleRisk {
    /// Whether any of the above holds.
    pub fn any(&self) -> bool {
        self.superuser || self.bypass_rls || self.owned_relations > 0
    }
}

/// Looks at the pool's role in the catalog.
pub async fn role_risk(pool: &PgPool) -> Result<RoleRisk, sqlx::Error> {
    let row = sqlx::query!(
        r#"select
            exists (select 1 from pg_roles r
                    where r.rolsuper and pg_has_role(current_user, r.oid, 'member')) as "superuser!",
            exists (select 1 from pg_roles r
                    where (r.rolbypassrls or r.rolsuper)
                      and pg_has_role(current_user, r.oid, 'member')) as "bypass_rls!",
            (select count(*) from pg_class c
              where pg_has_role(current_user, c.relowner, 'member')
                and c.relnamespace in (select oid from pg_namespace
                                       where nspname not in ('pg_catalog', 'information_schema', 'pg_toast')))
              as "owned_relations!""#,
    )
    .fetch_one(pool)
    .await?;
    Ok(RoleRisk {
        superuser: row.superuser,
        bypass_rls: row.bypass_rls,
        owned_relations: row.owned_relations,
    })
}

/// Whether Postgres, as configured for the pool's database, writes the
/// values bound to the server's statements (users' messages, models'
/// answers, tools' arguments) to its log: it does with every statement it
/// logs (slow, sampled, or all the data-modifying ones) unless
/// `log_parameter_max_length` is 0. Only a superuser can change those
/// settings. With a failed statement it does not: any session may set
/// `log_parameter_max_length_on_error`, and `connect` sets it to 0 on each
/// connection.
pub async fn logs_parameters(pool: &PgPool) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        r#"with s as (select name, setting from pg_settings)
           select (select setting::int from s where name = 'log_parameter_max_length') <> 0
              and ((select setting::int from s where name = 'log_min_duration_statement') >= 0
                or ((select setting::int from s where name = 'log_min_duration_sample') >= 0
                    and (select setting::float8 from s where name = 'log_statement_sample_rate') > 0)
                or (select setting::float8 from s where name = 'log_transaction_sample_rate') > 0
                or (select setting from s where name = 'log_statement') in ('mod', 'all'))
              as "logs!""#
    )
    .fetch_one(pool)
    .await
}

/// Logs a warning when Postgres writes the values of the statements it
/// logs ([`logs_parameters`]).
pub async fn warn_if_postgres_logs_content(pool: &PgPool) -> Result<(), sqlx::Error> {
    if logs_parameters(pool).await? {
        tracing::warn!(
            "Postgres logs statements with the values bound to them: users' messages, models' \
             answers and tools' arguments will be in its log. Set log_parameter_max_length = 0 \
             (see docs/operations.md)."
        );
    }
    Ok(())
}

/// Logs a loud warning when the server's role could read past row-level
/// security: a superuser, a BYPASSRLS role, or the owner of the tables.
pub async fn warn_if_role_can_bypass_rls(pool: &PgPool) -> Result<(), sqlx::Error> {
    let risk = role_risk(pool).await?;
    if risk.any() {
        tracing::warn!(
            role.superuser = risk.superuser,
            role.bypass_rls = risk.bypass_rls,
            role.owned_relations = risk.owned_relations,
            "!!! DATABASE_URL's role can bypass row-level security. Users' data is then kept \
             apart by application code alone. Run the server as a login role that is not a \
             superuser, has no BYPASSRLS and owns no tables, and run migrations with \
             COUNTERSIGN_MIGRATION_DATABASE_URL (see docs/operations.md)."
        );
    }
    Ok(())
}

/// Creates or updates, as a superuser: the NOLOGIN roles `anon`,
/// `authenticated`, `service_role`; the owner role [`OWNER_ROLE`]; the
/// server's login role [`APP_ROLE`] (`NOINHERIT`, so it holds no privilege
/// until it switches role inside a transaction); and `database`, owned by
/// the owner role. Safe to run again and concurrently.
#[tracing::instrument(skip_all, fields(db.name = database))]
pub async fn bootstrap(
    superuser_url: &str,
    database: &str,
    owner_password: &str,
    app_password: &str,
) -> Result<(), sqlx::Error> {
    let mut conn = PgConnection::connect(superuser_url).await?;
    // Roles are cluster-wide: serialise concurrent bootstraps (tests).
    sqlx::query!("select pg_advisory_lock(7305447301)")
        .execute(&mut conn)
        .await?;
    let result = bootstrap_locked(&mut conn, database, owner_password, app_password).await;
    sqlx::query!(r#"select pg_advisory_unlock(7305447301) as "unlocked""#)
        .fetch_one(&mut conn)
        .await?;
    result?;
    conn.close().await
}

async fn bootstrap_locked(
    conn: &mut PgConnection,
    database: &str,
    owner_password: &str,
    app_password: &str,
) -> Result<(), sqlx::Error> {
    for role in ["anon", "authenticated", "service_role"] {
        let ddl = format_sql(conn, "create role %I nologin", &[role]).await?;
        create_if_missing(conn, "pg_roles", "rolname", role, &ddl).await?;
    }
    let owner_ddl = format_sql(
        conn,
        "create role %I login nosuperuser nocreatedb nocreaterole nobypassrls",
        &[OWNER_ROLE],
    )
    .await?;
    create_if_missing(conn, "pg_roles", "rolname", OWNER_ROLE, &owner_ddl).await?;
    let app_ddl = format_sql(
        conn,
        "create role %I login noinherit nosuperuser nocreatedb nocreaterole nobypassrls",
        &[APP_ROLE],
    )
    .await?;
    create_if_missing(conn, "pg_roles", "rolname", APP_ROLE, &app_ddl).await?;
    for (role, password) in [(OWNER_ROLE, owner_password), (APP_ROLE, app_password)] {
        let ddl = format_sql(conn, "alter role %I with password %L", &[role, password]).await?;
        sqlx::raw_sql(sqlx::AssertSqlSafe(ddl))
            .execute(&mut *conn)
            .await?;
    }
    let grant = format_sql(conn, "grant authenticated, service_role to %I", &[APP_ROLE]).await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(grant))
        .execute(&mut *conn)
        .await?;

    let create_db =
        format_sql(conn, "create database %I owner %I", &[database, OWNER_ROLE]).await?;
    create_if_missing(conn, "pg_database", "datname", database, &create_db).await?;
    let lock_db = format_sql(
        conn,
        "revoke all on database %I from public; grant connect, temporary on database %I to %I",
        &[database, database, APP_ROLE],
    )
    .await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(lock_db))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Quotes identifiers (`%I`) and literals (`%L`) with Postgres' own
/// `format()`: DDL takes no bind parameters.
///
/// Dynamic SQL on purpose, like the rest of the bootstrap: the number of
/// `format()` arguments varies, the catalog looked up varies, and the DDL
/// it builds names roles and databases chosen at run time. None of it
/// touches the application's tables, which is what the compile-checked
/// queries guard.
async fn format_sql(
    conn: &mut PgConnection,
    template: &str,
    args: &[&str],
) -> Result<String, sqlx::Error> {
    let placeholders: Vec<String> = (2..args.len() + 2).map(|i| format!("${i}")).collect();
    let sql = format!("select format($1, {})", placeholders.join(", "));
    let mut query = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(template);
    for arg in args {
        query = query.bind(*arg);
    }
    query.fetch_one(conn).await
}

async fn create_if_missing(
    conn: &mut PgConnection,
    catalog: &str,
    column: &str,
    name: &str,
    ddl: &str,
) -> Result<(), sqlx::Error> {
    let exists: bool = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "select exists (select 1 from {catalog} where {column} = $1)"
    )))
    .bind(name)
    .fetch_one(&mut *conn)
    .await?;
    if !exists {
        sqlx::raw_sql(sqlx::AssertSqlSafe(ddl.to_owned()))
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}
