//! Server-side sessions. The browser holds an opaque random token in an
//! `HttpOnly` cookie; the database holds only its SHA-256.

use super::AuthError;
use crate::db::{
    self, Tx,
    trip::{self, Arg, As, Part, Statement},
};
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use sha2::{Digest as _, Sha256};
use sqlx::{PgPool, Row as _, postgres::PgRow};
use std::{net::IpAddr, time::Duration};
use uuid::Uuid;

/// Where a request came from, recorded on the session and used for
/// throttling.
#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    /// Peer address.
    pub ip: Option<IpAddr>,
    /// `User-Agent`, truncated.
    pub user_agent: Option<String>,
}

/// A freshly opened session: the token goes into the cookie, the CSRF token
/// to the app.
#[derive(Debug, Clone)]
pub struct NewSession {
    /// Session id.
    pub id: Uuid,
    /// The cookie value. Never stored, never logged.
    pub token: String,
    /// Value the app sends back as `X-CSRF-Token`.
    pub csrf_token: String,
}

/// The user behind a valid session cookie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionUser {
    /// Session id.
    pub session_id: Uuid,
    /// User id.
    pub user_id: Uuid,
    /// Normalised email.
    pub email: String,
    /// Admin flag.
    pub is_admin: bool,
    /// An administrator reset the password: until the user chooses a new
    /// one, only `me`, sign-out and the password change are allowed.
    pub must_change_password: bool,
    /// The session's CSRF token.
    pub csrf_token: String,
    /// What a statement checks, as the user, to know that nothing about
    /// this session or its user changed since this lookup
    /// ([`stamp_check`]).
    pub stamp: Stamp,
}

/// A session as one lookup found it: the user's epoch then (one more with
/// every change to the user's sessions or account, by the migration
/// `session_stamps`' triggers) and when the session ends by itself, unless
/// used again (its absolute expiry, or its idle limit counted from the use
/// the lookup saw). A statement that holds it proves, in its own
/// transaction and by the database's clock, that the session still
/// stands: [`stamp_check`], the migration's `store_turn_stamped_as`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The user's session epoch.
    pub epoch: i64,
    /// When the session ends unless used again, in milliseconds since 1970.
    pub ends_ms: i64,
}

/// The SQLSTATE of the migration's `check_session_stamp` when a stamp no
/// longer holds.
pub const STAMP_STALE: &str = "CSSES";

/// Whether `err` says that a stamp no longer holds.
pub fn is_stale_stamp(err: &sqlx::Error) -> bool {
    err.as_database_error()
        .and_then(|e| e.code())
        .is_some_and(|code| code == STAMP_STALE)
}

pub fn random_token() -> String {
    let bytes: [u8; 32] = rand::random();
    URL_SAFE_NO_PAD.encode(bytes)
}

/// SHA-256 of a cookie token, as stored.
pub fn token_hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Opens a session for `user_id` inside the caller's service transaction.
pub async fn create(
    tx: &mut Tx,
    user_id: Uuid,
    client: &ClientInfo,
    absolute: Duration,
) -> Result<NewSession, AuthError> {
    let session = NewSession {
        id: Uuid::new_v4(),
        token: random_token(),
        csrf_token: random_token(),
    };
    let user_agent = client
        .user_agent
        .as_deref()
        .map(|ua| ua.chars().take(256).collect::<String>());
    sqlx::query!(
        "insert into sessions (id, user_id, token_hash, csrf_token, expires_at, user_agent, ip)
         values ($1, $2, $3, $4, now() + make_interval(secs => $5), $6, $7)",
        session.id,
        user_id,
        token_hash(&session.token),
        &session.csrf_token,
        absolute.as_secs_f64(),
        user_agent,
        client.ip.map(sqlx::types::ipnet::IpNet::from),
    )
    .execute(&mut **tx)
    .await?;
    Ok(session)
}

/// The session behind the token hash `$1`, if it is neither revoked, past
/// its absolute expiry, nor idle for longer than `$2` milliseconds, with
/// its user (not disabled) and its [`Stamp`]; `last_seen_at` is refreshed
/// at most once a minute, by the same statement.
static LOOKUP: Statement = Statement {
    name: "cs_session_lookup",
    params: "(bytea, int8)",
    sql: "with found as ( \
            select s.id, s.user_id, u.email, u.is_admin, u.must_change_password, s.csrf_token, \
                   s.last_seen_at < now() - interval '60 seconds' as stale, \
                   s.last_seen_at, s.expires_at, e.epoch \
              from sessions s join users u on u.id = s.user_id \
              join session_epochs e on e.user_id = s.user_id \
             where s.token_hash = $1 \
               and s.revoked_at is null \
               and u.disabled_at is null \
               and s.expires_at > now() \
               and s.last_seen_at > now() - make_interval(secs => $2 / 1000.0) \
          ), touched as ( \
            update sessions set last_seen_at = now() where id in (select id from found where stale) \
          ) \
          select id, user_id, email, is_admin, must_change_password, csrf_token, epoch, \
                 floor(extract(epoch from least( \
                   expires_at, \
                   case when stale then now() else last_seen_at end \
                     + make_interval(secs => $2 / 1000.0))) * 1000)::int8 as ends_ms \
            from found",
};

/// Fails with [`STAMP_STALE`] unless the stamp (`$1` the epoch, `$2` its
/// end) still holds for the user it runs as: the migration's
/// `check_session_stamp`.
static STAMP: Statement = Statement {
    name: "cs_session_stamp",
    params: "(int8, int8)",
    sql: "select public.check_session_stamp($1, $2)",
};

/// Whether the session whose token hashes to `$1` is live by [`LOOKUP`]'s
/// rule (`$2` milliseconds of idleness allowed), and if so its [`Stamp`]:
/// its user's epoch, read in the same snapshot, and when it ends unless
/// used again.
static IS_LIVE: Statement = Statement {
    name: "cs_session_is_live",
    params: "(bytea, int8)",
    sql: "select s.id is not null as live, e.epoch, \
                 floor(extract(epoch from least( \
                   s.expires_at, s.last_seen_at + make_interval(secs => $2 / 1000.0))) * 1000)::int8 \
                   as ends_ms \
            from (values (1)) as one (x) \
            left join sessions s \
              on s.token_hash = $1 \
             and s.revoked_at is null \
             and s.expires_at > now() \
             and s.last_seen_at > now() - make_interval(secs => $2 / 1000.0) \
            left join session_epochs e on e.user_id = s.user_id",
};

/// The statements [`trip`] runs here, for the test that prepares them all.
pub static TRIPS: [&Statement; 3] = [&LOOKUP, &IS_LIVE, &STAMP];

/// `idle` as [`LOOKUP`]'s and [`IS_LIVE`]'s `$2`.
fn idle_millis(idle: Duration) -> Arg {
    Arg::int(i64::try_from(idle.as_millis()).unwrap_or(i64::MAX))
}

/// The session behind `token`, if it is neither revoked, past its absolute
/// expiry, nor idle for longer than `idle`. Refreshes `last_seen_at` at most
/// once a minute, to keep reads cheap. One round trip ([`trip`]): on every
/// request's way.
#[tracing::instrument(skip_all)]
pub async fn lookup(
    pool: &PgPool,
    token: &str,
    idle: Duration,
) -> Result<Option<SessionUser>, AuthError> {
    let lookup = Part {
        who: As::Service,
        statement: &LOOKUP,
        args: vec![Arg::bytes(&token_hash(token)), idle_millis(idle)],
    };
    let rows = trip::run(pool, lookup).await?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    Ok(Some(SessionUser {
        session_id: row.try_get("id")?,
        user_id: row.try_get("user_id")?,
        email: row.try_get("email")?,
        is_admin: row.try_get("is_admin")?,
        must_change_password: row.try_get("must_change_password")?,
        csrf_token: row.try_get("csrf_token")?,
        stamp: Stamp {
            epoch: row.try_get("epoch")?,
            ends_ms: row.try_get("ends_ms")?,
        },
    }))
}

/// The check that `stamp` still holds for `user_id`, as the first part of
/// a [`trip`]: the trip's later parts run only if it does (a failed part
/// ends the trip), and the trip fails with [`STAMP_STALE`] if not. For a
/// trip whose answer may lead to writes as the user, on behalf of a
/// session that was not looked up for the request.
pub fn stamp_check(user_id: Uuid, stamp: Stamp) -> Part {
    Part {
        who: As::User(user_id.into()),
        statement: &STAMP,
        args: vec![Arg::int(stamp.epoch), Arg::int(stamp.ends_ms)],
    }
}

/// Whether the session whose token hashes to `token_hash` is still live by
/// the rules of [`lookup`] (not revoked, not past its absolute expiry, not
/// idle for longer than `idle`): one read on the unique `token_hash` index,
/// as a part of a [`trip`] (read its answer with [`stamp_in`]), and no
/// `last_seen_at` refresh. An open stream asks it with each read of its
/// events (`http::stream`), and holding a stream open is not activity.
pub fn is_live(token_hash: &[u8], idle: Duration) -> Part {
    Part {
        who: As::Service,
        statement: &IS_LIVE,
        args: vec![Arg::bytes(token_hash), idle_millis(idle)],
    }
}

/// [`is_live`]'s answer with the session's [`Stamp`]: `None` when the
/// session is not live.
pub fn stamp_in(rows: &[PgRow]) -> Result<Option<Stamp>, sqlx::Error> {
    let row = rows.first().ok_or(sqlx::Error::RowNotFound)?;
    if !row.try_get::<bool, _>("live")? {
        return Ok(None);
    }
    Ok(Some(Stamp {
        epoch: row.try_get("epoch")?,
        ends_ms: row.try_get("ends_ms")?,
    }))
}

/// Of `token_hashes`, those whose sessions are live by [`is_live`]'s rule,
/// in one read: how an instance re-checks the sessions of all its open
/// streams at once.
pub async fn live_among(
    pool: &PgPool,
    token_hashes: &[Vec<u8>],
    idle: Duration,
) -> Result<Vec<Vec<u8>>, AuthError> {
    let mut tx = db::service_tx(pool).await?;
    let live = sqlx::query_scalar!(
        r#"select token_hash from sessions
            where token_hash = any($1)
              and revoked_at is null
              and expires_at > now()
              and last_seen_at > now() - make_interval(secs => $2)"#,
        token_hashes,
        idle.as_secs_f64(),
    )
    .fetch_all(&mut *tx)
    .await?;
    db::end_read(tx);
    Ok(live)
}

/// Revokes one session (sign-out).
pub async fn revoke(pool: &PgPool, session_id: Uuid) -> Result<(), AuthError> {
    let mut tx = db::service_tx(pool).await?;
    sqlx::query!(
        "update sessions set revoked_at = now() where id = $1 and revoked_at is null",
        session_id,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}
