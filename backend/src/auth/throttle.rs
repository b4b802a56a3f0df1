//! Throttling of guesses, counted in Postgres so that every instance behind
//! a load balancer sees the same attempts: passwords (sign-in, and the
//! current password that account actions ask for) and two-factor codes per
//! account and per IP address, sign-ups per IP address.
//!
//! # Why the count holds under concurrency
//!
//! "Count, verify, then record the failure" is a race: twenty simultaneous
//! guesses all count zero before any of them records anything, and all
//! twenty get an answer (issue 9 saw 7 of 7 get 401 with a limit of 5). So
//! an attempt is counted *before* it is verified, under a lock:
//!
//! - [`reserve`] (passwords, sign-ups): in one short transaction, take a
//!   transaction-scoped advisory lock per key (`pg_advisory_xact_lock`, the
//!   account's key first and then the address's, always in that order, so
//!   two attempts never wait on each other in a cycle), count the window,
//!   refuse at the limit, and insert the attempt as a failure. The commit
//!   releases the locks; the next attempt on the same key then counts this
//!   one. The password is verified afterwards, with no lock and no
//!   connection held (argon2 takes ~0.1 s). Only an attempt that turns out
//!   right takes its row back ([`release`]); a crash in between leaves it
//!   counted (fail closed).
//! - [`lock_and_check`] (two-factor codes, cheap to verify): the same lock,
//!   held by the caller's transaction across check, verification and
//!   [`record_failure`], so attempts on one account queue behind each
//!   other.
//!
//! Each answer other than 429 therefore owns a row that was inserted while
//! fewer than the limit were counted, so N simultaneous wrong guesses get
//! at most the limit's worth of answers other than 429.
//!
//! An unknown email and a wrong password take the same path (reserve, a
//! hash verified either way, the row kept), so they get the same answer in
//! similar time.
//!
//! What it deliberately does not do: decide where a request comes from
//! (`http::extract::Client` does, honouring `COUNTERSIGN_TRUSTED_PROXIES`),
//! or throttle anything but guesses and sign-ups.

use super::AuthError;
use crate::db::Tx;
use std::{net::IpAddr, time::Duration};

/// How many failures, in which window, before sign-in answers 429.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Failures per account.
    pub per_account: i64,
    /// Failures per IP address.
    pub per_ip: i64,
    /// Sign-up attempts per IP address.
    pub signups_per_ip: i64,
    /// The window failures are counted in.
    pub window: Duration,
}

impl From<&crate::Config> for Limits {
    fn from(c: &crate::Config) -> Self {
        Self {
            per_account: c.login_max_failures_per_account,
            per_ip: c.login_max_failures_per_ip,
            signups_per_ip: c.signup_max_per_ip,
            window: Duration::from_secs(c.login_window_secs),
        }
    }
}

/// The first half of an advisory lock key: which kind of thing is locked.
/// The two-`int4` form of `pg_advisory_xact_lock` is a key space of its
/// own, apart from the single-`bigint` lock that serialises sign-ups.
#[derive(Debug, Clone, Copy)]
#[repr(i32)]
enum LockClass {
    /// Guesses at one account (passwords and codes).
    Account = 0x7468_0001,
    /// Guesses from one address.
    Address = 0x7468_0002,
    /// Sign-ups from one address.
    SignupAddress = 0x7468_0003,
}

/// Holds the lock of (`class`, `key`) until `tx` ends. Keys are hashed to
/// 32 bits: a collision only makes two keys queue behind each other.
async fn lock(tx: &mut Tx, class: LockClass, key: &str) -> Result<(), AuthError> {
    sqlx::query!(
        "select pg_advisory_xact_lock($1, hashtext($2))",
        class as i32,
        key,
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

fn ip_net(ip: Option<IpAddr>) -> Option<sqlx::types::ipnet::IpNet> {
    ip.map(sqlx::types::ipnet::IpNet::from)
}

fn retry_secs(secs: Option<f64>, window: f64) -> u64 {
    secs.unwrap_or(window).ceil().max(1.0) as u64
}

/// Refuses with [`AuthError::Throttled`] when the account or the address has
/// reached its limit inside the window. The retry hint is when the oldest
/// counted failure leaves the window. Only meaningful under [`lock`].
async fn check(
    tx: &mut Tx,
    limits: &Limits,
    email: &str,
    ip: Option<IpAddr>,
) -> Result<(), AuthError> {
    let window = limits.window.as_secs_f64();
    let counted = sqlx::query!(
        r#"with recent as (
             select email, ip, failed_at from login_failures
              where failed_at > now() - make_interval(secs => $3)
                and (email = $1 or ip = $2))
         select
           (select count(*) from recent where email = $1) as "account_failures!",
           (select extract(epoch from min(failed_at) + make_interval(secs => $3) - now())::float8
              from recent where email = $1) as account_retry,
           (select count(*) from recent where ip = $2) as "ip_failures!",
           (select extract(epoch from min(failed_at) + make_interval(secs => $3) - now())::float8
              from recent where ip = $2) as ip_retry"#,
        email,
        ip_net(ip),
        window,
    )
    .fetch_one(&mut **tx)
    .await?;
    let (account_failures, account_retry, ip_failures, ip_retry) = (
        counted.account_failures,
        counted.account_retry,
        counted.ip_failures,
        counted.ip_retry,
    );

    if account_failures >= limits.per_account {
        return Err(AuthError::Throttled {
            retry_after_secs: retry_secs(account_retry, window),
        });
    }
    if ip.is_some() && ip_failures >= limits.per_ip {
        return Err(AuthError::Throttled {
            retry_after_secs: retry_secs(ip_retry, window),
        });
    }
    Ok(())
}

/// Takes the account's (and the address's) throttle lock for the rest of
/// `tx`, then refuses when either is at its limit. The caller verifies and
/// calls [`record_failure`] in the same transaction.
pub async fn lock_and_check(
    tx: &mut Tx,
    limits: &Limits,
    email: &str,
    ip: Option<IpAddr>,
) -> Result<(), AuthError> {
    lock(tx, LockClass::Account, email).await?;
    if let Some(ip) = ip {
        lock(tx, LockClass::Address, &ip.to_string()).await?;
    }
    check(tx, limits, email, ip).await
}

/// A counted password attempt, to be taken back with [`release`] if the
/// password turns out right.
#[derive(Debug)]
#[must_use = "a right password must release its reservation"]
pub struct Reservation {
    id: i64,
}

/// Counts an attempt on `email` from `ip` as a failure before it is
/// verified, or refuses with [`AuthError::Throttled`]. Commit `tx` before
/// verifying: that releases the locks.
pub async fn reserve(
    tx: &mut Tx,
    limits: &Limits,
    email: &str,
    ip: Option<IpAddr>,
) -> Result<Reservation, AuthError> {
    lock_and_check(tx, limits, email, ip).await?;
    let id: i64 = sqlx::query_scalar!(
        "insert into login_failures (email, ip) values ($1, $2) returning id",
        email,
        ip_net(ip),
    )
    .fetch_one(&mut **tx)
    .await?;
    Ok(Reservation { id })
}

/// The attempt was right after all: it no longer counts.
pub async fn release(tx: &mut Tx, reservation: Reservation) -> Result<(), AuthError> {
    sqlx::query!("delete from login_failures where id = $1", reservation.id,)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Counts a failed attempt (under [`lock_and_check`]'s lock), and forgets
/// failures older than a day.
pub async fn record_failure(tx: &mut Tx, email: &str, ip: Option<IpAddr>) -> Result<(), AuthError> {
    sqlx::query!(
        "insert into login_failures (email, ip) values ($1, $2)",
        email,
        ip_net(ip),
    )
    .execute(&mut **tx)
    .await?;
    forget_old(tx).await
}

/// Forgets failures and sign-up attempts older than a day.
pub async fn forget_old(tx: &mut Tx) -> Result<(), AuthError> {
    sqlx::query!("delete from login_failures where failed_at < now() - interval '1 day'")
        .execute(&mut **tx)
        .await?;
    sqlx::query!("delete from signup_attempts where attempted_at < now() - interval '1 day'")
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// After a successful sign-in the account's count starts again; the
/// address's does not (one address guessing many accounts stays throttled).
pub async fn clear_account(tx: &mut Tx, email: &str) -> Result<(), AuthError> {
    sqlx::query!("delete from login_failures where email = $1", email,)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Counts a sign-up attempt from `ip` before its password is hashed, or
/// refuses with [`AuthError::Throttled`] at the per-address limit. Attempts
/// count whether or not they end in an account (each one costs a hash).
/// Commit `tx` to release the lock.
pub async fn reserve_signup(tx: &mut Tx, limits: &Limits, ip: IpAddr) -> Result<(), AuthError> {
    lock(tx, LockClass::SignupAddress, &ip.to_string()).await?;
    let window = limits.window.as_secs_f64();
    let counted = sqlx::query!(
        r#"select count(*) as "attempts!",
                  extract(epoch from min(attempted_at) + make_interval(secs => $2) - now())::float8
                    as retry
             from signup_attempts
            where ip = $1 and attempted_at > now() - make_interval(secs => $2)"#,
        sqlx::types::ipnet::IpNet::from(ip),
        window,
    )
    .fetch_one(&mut **tx)
    .await?;
    let (attempts, retry) = (counted.attempts, counted.retry);
    if attempts >= limits.signups_per_ip {
        return Err(AuthError::SignupThrottled {
            retry_after_secs: retry_secs(retry, window),
        });
    }
    sqlx::query!(
        "insert into signup_attempts (ip) values ($1)",
        sqlx::types::ipnet::IpNet::from(ip),
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}
