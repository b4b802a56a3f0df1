//! Sign-in throttling per account and per IP address, counted in Postgres so
//! that every instance behind a load balancer sees the same failures.

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
    /// The window failures are counted in.
    pub window: Duration,
}

impl From<&crate::Config> for Limits {
    fn from(c: &crate::Config) -> Self {
        Self {
            per_account: c.login_max_failures_per_account,
            per_ip: c.login_max_failures_per_ip,
            window: Duration::from_secs(c.login_window_secs),
        }
    }
}

fn ip_net(ip: Option<IpAddr>) -> Option<sqlx::types::ipnet::IpNet> {
    ip.map(sqlx::types::ipnet::IpNet::from)
}

/// Refuses with [`AuthError::Throttled`] when the account or the address has
/// reached its limit inside the window. The retry hint is when the oldest
/// counted failure leaves the window.
pub async fn check(
    tx: &mut Tx,
    limits: &Limits,
    email: &str,
    ip: Option<IpAddr>,
) -> Result<(), AuthError> {
    let window = limits.window.as_secs_f64();
    let (account_failures, account_retry, ip_failures, ip_retry): (
        i64,
        Option<f64>,
        i64,
        Option<f64>,
    ) = sqlx::query_as(
        "with recent as (
             select email, ip, failed_at from login_failures
              where failed_at > now() - make_interval(secs => $3)
                and (email = $1 or ip = $2))
         select
           (select count(*) from recent where email = $1),
           (select extract(epoch from min(failed_at) + make_interval(secs => $3) - now())::float8
              from recent where email = $1),
           (select count(*) from recent where ip = $2),
           (select extract(epoch from min(failed_at) + make_interval(secs => $3) - now())::float8
              from recent where ip = $2)",
    )
    .bind(email)
    .bind(ip_net(ip))
    .bind(window)
    .fetch_one(&mut **tx)
    .await?;

    let retry = |secs: Option<f64>| secs.unwrap_or(window).ceil().max(1.0) as u64;
    if account_failures >= limits.per_account {
        return Err(AuthError::Throttled {
            retry_after_secs: retry(account_retry),
        });
    }
    if ip.is_some() && ip_failures >= limits.per_ip {
        return Err(AuthError::Throttled {
            retry_after_secs: retry(ip_retry),
        });
    }
    Ok(())
}

/// Counts a failed sign-in, and forgets failures older than a day.
pub async fn record_failure(tx: &mut Tx, email: &str, ip: Option<IpAddr>) -> Result<(), AuthError> {
    sqlx::query("insert into login_failures (email, ip) values ($1, $2)")
        .bind(email)
        .bind(ip_net(ip))
        .execute(&mut **tx)
        .await?;
    sqlx::query("delete from login_failures where failed_at < now() - interval '1 day'")
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// After a successful sign-in the account's count starts again; the
/// address's does not (one address guessing many accounts stays throttled).
pub async fn clear_account(tx: &mut Tx, email: &str) -> Result<(), AuthError> {
    sqlx::query("delete from login_failures where email = $1")
        .bind(email)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
