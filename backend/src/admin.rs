//! Accounts as an administrator manages them (DESIGN §4, §8; issue 14):
//! the list, disabling and enabling, making and unmaking admins, and the
//! operator's command line (`countersign user …`: create, reset a
//! password). The HTTP handlers (`http/admin.rs`) and the CLI share these
//! functions, so both keep the same rules:
//!
//! - Disabling signs the user out everywhere, denies their waiting calls
//!   and stops their running turns, in the transaction that disables them.
//! - The last active administrator can be neither disabled nor unmade
//!   ([`AdminError::LastAdmin`]); changes are serialised by an advisory
//!   lock, so two admins unmaking each other at once cannot both succeed.
//! - Every change is an entry in the activity chain, in the same
//!   transaction ([`audit::append_admin`]).
//! - A password set here is one-time: the user must choose their own at
//!   the next sign-in (`users.must_change_password`).

use crate::{
    approvals,
    audit::{self, AdminEntry},
    auth::{Email, PasswordHasher},
    db,
    ids::UserId,
    turns,
};
use countersign_api::{ActivityKind, AdminOverview, AdminUser, SettingChange};
use sqlx::PgPool;
use time::{OffsetDateTime, format_description::well_known::Rfc3339};
use uuid::Uuid;

/// Key of the advisory lock that serialises changes to who is an admin.
const ADMINS_LOCK: i64 = 0x6164_6d69_6e73; // "admins"

/// Why an account change was refused.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// No such account.
    #[error("No such account.")]
    NotFound,
    /// It would leave the instance without an active administrator.
    #[error("last_admin")]
    LastAdmin,
    /// Bad input; the message says what.
    #[error("{0}")]
    Invalid(String),
    /// An account with this email exists.
    #[error("An account with this email already exists.")]
    EmailTaken,
    /// Hashing the password failed.
    #[error(transparent)]
    Auth(#[from] crate::auth::AuthError),
    /// Database failure.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Who made a change: an administrator signed in to the web app, or the
/// operator at the command line (recorded under the nil user id).
#[derive(Debug, Clone, Copy)]
pub enum Actor {
    Admin(UserId),
    Operator,
}

impl Actor {
    fn id(self) -> UserId {
        match self {
            Self::Admin(id) => id,
            Self::Operator => UserId(Uuid::nil()),
        }
    }
}

/// What to change about an account.
#[derive(Debug, Clone, Copy, Default)]
pub struct Change {
    pub disabled: Option<bool>,
    pub is_admin: Option<bool>,
    /// May give a second approval.
    pub is_approver: Option<bool>,
}

/// What became of a change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changed {
    /// Sessions signed out.
    pub sessions_revoked: u64,
    /// Waiting calls denied.
    pub calls_denied: u64,
    /// Running turns asked to stop (pass them to the hub's
    /// `cancel_local` after the commit, which [`update_user`] does not
    /// know about).
    pub turns_stopped: Vec<Uuid>,
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap_or_default()
}

/// Every account, oldest first, with what an administrator needs to see.
pub async fn users(pool: &PgPool) -> Result<Vec<AdminUser>, sqlx::Error> {
    accounts(pool, None).await
}

/// One account as [`users`] lists it, if it exists.
pub async fn user(pool: &PgPool, id: UserId) -> Result<Option<AdminUser>, sqlx::Error> {
    Ok(accounts(pool, Some(id)).await?.pop())
}

/// Every account, or only `only`: one statement for both.
async fn accounts(pool: &PgPool, only: Option<UserId>) -> Result<Vec<AdminUser>, sqlx::Error> {
    let mut tx = db::service_tx(pool).await?;
    let rows = sqlx::query!(
        r#"select u.id, u.email, u.is_admin, u.is_approver, u.disabled_at is not null as "disabled!",
                  u.must_change_password, u.created_at,
                  exists (select 1 from mfa_totp m
                           where m.user_id = u.id and m.confirmed_at is not null) as "mfa!",
                  (select max(s.last_seen_at) from sessions s
                    where s.user_id = u.id and s.revoked_at is null) as last_seen_at,
                  (select count(*) from connectors c where c.user_id = u.id) as "connectors!",
                  (select count(*) from mcp_pending_calls p
                    where p.user_id = u.id and p.status = 'pending' and p.expires_at > now())
                    as "pending!"
             from users u
            where $1::uuid is null or u.id = $1
            order by u.created_at, u.email"#,
        only as Option<UserId>,
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rows
        .into_iter()
        .map(|r| AdminUser {
            id: r.id.to_string(),
            email: r.email,
            is_admin: r.is_admin,
            is_approver: r.is_approver,
            disabled: r.disabled,
            mfa_enabled: r.mfa,
            must_change_password: r.must_change_password,
            created_at: rfc3339(r.created_at),
            last_seen_at: r.last_seen_at.map(rfc3339),
            connectors: r.connectors,
            pending_calls: r.pending,
        })
        .collect())
}

/// The instance at a glance.
pub async fn overview(pool: &PgPool) -> Result<AdminOverview, sqlx::Error> {
    let mut tx = db::service_tx(pool).await?;
    let r = sqlx::query!(
        r#"select (select count(*) from users) as "users!",
                  (select count(*) from connectors) as "connectors!",
                  (select count(*) from mcp_pending_calls
                    where status = 'pending' and expires_at > now()) as "pending!",
                  (select count(*) from turns where status = 'running') as "turns!""#
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(AdminOverview {
        users: r.users,
        connectors: r.connectors,
        pending_calls: r.pending,
        turns_running: r.turns,
    })
}

/// The account with this email (the command line names accounts so).
pub async fn find_by_email(pool: &PgPool, email: &str) -> Result<UserId, AdminError> {
    let email = Email::parse(email).map_err(|_| AdminError::NotFound)?;
    let mut tx = db::service_tx(pool).await?;
    let id = sqlx::query_scalar!("select id from users where email = $1", email.as_str())
        .fetch_optional(&mut *tx)
        .await?;
    tx.commit().await?;
    id.map(UserId).ok_or(AdminError::NotFound)
}

/// Applies `change` to account `target` as `actor`. Nothing is written
/// when nothing would change.
pub async fn update_user(
    pool: &PgPool,
    actor: Actor,
    target: UserId,
    change: Change,
) -> Result<Changed, AdminError> {
    let mut tx = db::service_tx(pool).await?;
    sqlx::query!("select pg_advisory_xact_lock($1)", ADMINS_LOCK)
        .execute(&mut *tx)
        .await?;
    let row = sqlx::query!(
        r#"select email, is_admin, is_approver, disabled_at is not null as "disabled!"
             from users where id = $1 for update"#,
        target as UserId,
    )
    .fetch_optional(&mut *tx)
    .await?
    .ok_or(AdminError::NotFound)?;
    let disabled = change.disabled.unwrap_or(row.disabled);
    let is_admin = change.is_admin.unwrap_or(row.is_admin);
    let is_approver = change.is_approver.unwrap_or(row.is_approver);
    let mut changes = Vec::new();
    for (setting, before, after) in [
        ("disabled", row.disabled, disabled),
        ("is_admin", row.is_admin, is_admin),
        ("is_approver", row.is_approver, is_approver),
    ] {
        if before != after {
            changes.push(SettingChange {
                setting: setting.to_owned(),
                before: before.to_string(),
                after: after.to_string(),
            });
        }
    }
    if changes.is_empty() {
        tx.commit().await?;
        return Ok(Changed::default());
    }
    // An active admin stops being one: there must be another.
    let was_active_admin = row.is_admin && !row.disabled;
    let stays_active_admin = is_admin && !disabled;
    if was_active_admin && !stays_active_admin {
        let others: i64 = sqlx::query_scalar!(
            r#"select count(*) as "n!" from users
                where is_admin and disabled_at is null and id <> $1"#,
            target as UserId,
        )
        .fetch_one(&mut *tx)
        .await?;
        if others == 0 {
            return Err(AdminError::LastAdmin);
        }
    }
    sqlx::query!(
        "update users
            set is_admin = $2, is_approver = $4,
                disabled_at = case when $3 then coalesce(disabled_at, now()) end
          where id = $1",
        target as UserId,
        is_admin,
        disabled,
        is_approver,
    )
    .execute(&mut *tx)
    .await?;
    let mut done = Changed::default();
    if disabled && !row.disabled {
        done.sessions_revoked = sqlx::query!(
            "update sessions set revoked_at = now() where user_id = $1 and revoked_at is null",
            target as UserId,
        )
        .execute(&mut *tx)
        .await?
        .rows_affected();
        done.calls_denied = approvals::deny_for_user(&mut tx, target).await?;
        done.turns_stopped = turns::stop_all_for_user(&mut tx, target.0).await?;
    }
    audit::append_admin(
        &mut tx,
        &AdminEntry {
            admin: actor.id(),
            kind: ActivityKind::UserChanged,
            subject: Some((target, row.email)),
            connector: None,
            changes,
        },
    )
    .await?;
    tx.commit().await?;
    tracing::info!(
        user.id = %actor.id(),
        target.id = %target,
        disabled,
        is_admin,
        sessions_revoked = done.sessions_revoked,
        calls_denied = done.calls_denied,
        "account changed by an administrator"
    );
    Ok(done)
}

/// What the command line says for `err` (the API says `last_admin`).
pub fn describe(err: &AdminError) -> String {
    match err {
        AdminError::LastAdmin => {
            "this is the last active administrator; make another account an admin first".into()
        }
        other => other.to_string(),
    }
}

/// `countersign user list`: one line per account.
pub fn list_text(users: &[AdminUser]) -> String {
    let mut out = String::from("email\tadmin\tdisabled\ttwo-factor\tlast seen\n");
    for u in users {
        let yes = |b: bool| if b { "yes" } else { "no" };
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\n",
            u.email,
            yes(u.is_admin),
            yes(u.disabled),
            yes(u.mfa_enabled),
            u.last_seen_at.as_deref().unwrap_or("never")
        ));
    }
    out
}

/// A one-time password: 20 characters from an alphabet without look-alikes
/// (about 110 bits).
pub fn one_time_password() -> String {
    const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyzACDEFGHJKLMNPQRTUVWXY345679";
    (0..20)
        .map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// Sets a one-time password on `target` (the user must choose their own at
/// the next sign-in), signs them out everywhere, and returns it.
pub async fn reset_password(
    pool: &PgPool,
    hasher: &PasswordHasher,
    actor: Actor,
    target: UserId,
) -> Result<String, AdminError> {
    let password = one_time_password();
    let hash = hasher.hash(&password).await?;
    let mut tx = db::service_tx(pool).await?;
    let email = sqlx::query_scalar!(
        "update users set password_hash = $2, must_change_password = true
          where id = $1 returning email",
        target as UserId,
        &hash,
    )
    .fetch_optional(&mut *tx)
    .await?
    .ok_or(AdminError::NotFound)?;
    sqlx::query!(
        "update sessions set revoked_at = now() where user_id = $1 and revoked_at is null",
        target as UserId,
    )
    .execute(&mut *tx)
    .await?;
    audit::append_admin(
        &mut tx,
        &AdminEntry {
            admin: actor.id(),
            kind: ActivityKind::UserChanged,
            subject: Some((target, email)),
            connector: None,
            changes: vec![SettingChange {
                setting: "password".into(),
                before: String::new(),
                after: "reset (one-time)".into(),
            }],
        },
    )
    .await?;
    tx.commit().await?;
    Ok(password)
}

/// Creates an account with a one-time password (returned), an admin when
/// `is_admin` or when it is the first account.
pub async fn create_user(
    pool: &PgPool,
    hasher: &PasswordHasher,
    actor: Actor,
    email: &str,
    is_admin: bool,
) -> Result<(UserId, String), AdminError> {
    let email = Email::parse(email)
        .map_err(|_| AdminError::Invalid("Enter a valid email address.".into()))?;
    let password = one_time_password();
    let hash = hasher.hash(&password).await?;
    let id = UserId(Uuid::new_v4());
    let display_name = email
        .as_str()
        .split('@')
        .next()
        .unwrap_or_default()
        .to_owned();
    let mut tx = db::service_tx(pool).await?;
    // The same lock as sign-up's, so exactly one account is the first.
    sqlx::query!("select pg_advisory_xact_lock(7305447302)")
        .execute(&mut *tx)
        .await?;
    let inserted = sqlx::query!(
        "insert into users (id, email, password_hash, is_admin, must_change_password)
         values ($1, $2, $3, $4 or not exists (select 1 from users), true)
         on conflict (email) do nothing",
        id as UserId,
        email.as_str(),
        &hash,
        is_admin,
    )
    .execute(&mut *tx)
    .await?;
    if inserted.rows_affected() == 0 {
        return Err(AdminError::EmailTaken);
    }
    sqlx::query!(
        "insert into profiles (user_id, display_name) values ($1, $2)",
        id as UserId,
        display_name,
    )
    .execute(&mut *tx)
    .await?;
    audit::append_admin(
        &mut tx,
        &AdminEntry {
            admin: actor.id(),
            kind: ActivityKind::UserChanged,
            subject: Some((id, email.as_str().to_owned())),
            connector: None,
            changes: vec![SettingChange {
                setting: "account".into(),
                before: String::new(),
                after: "created".into(),
            }],
        },
    )
    .await?;
    tx.commit().await?;
    Ok((id, password))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_time_passwords_are_long_unambiguous_and_different() {
        let a = one_time_password();
        let b = one_time_password();
        assert_eq!(a.chars().count(), 20);
        assert_ne!(a, b);
        assert!(
            !a.contains(['0', 'O', 'o', '1', 'l', 'I']),
            "no look-alikes: {a}"
        );
        assert!(a.chars().count() >= countersign_api::PASSWORD_MIN_CHARS);
    }
}
