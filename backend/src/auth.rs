//! Accounts, passwords, sessions and sign-in throttling (DESIGN §4).
//!
//! Owns the rules: what a valid email and password are, how passwords are
//! hashed, how a session token becomes a signed-in user, when sign-in is
//! throttled. Knows nothing of HTTP: handlers in `http::auth` map
//! [`AuthError`] to status codes.

pub mod mfa;
pub mod oidc;
pub mod password;
pub mod session;
pub mod throttle;

use crate::db;
use sqlx::PgPool;
use uuid::Uuid;

pub use password::{PasswordHasher, check_password_policy};
pub use session::{NewSession, SessionUser};

/// Why an account operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The email address is malformed.
    #[error("Enter a valid email address.")]
    InvalidEmail,
    /// The display name is empty or too long.
    #[error("The display name must be 1 to 100 characters.")]
    InvalidDisplayName,
    /// The password breaks the policy; the message says how.
    #[error("{0}")]
    WeakPassword(String),
    /// Another account has this email.
    #[error("An account with this email already exists. Sign in instead.")]
    EmailTaken,
    /// `COUNTERSIGN_ALLOW_SIGNUP=false` and an admin exists.
    #[error("Sign-up is closed on this server. Ask an administrator for an account.")]
    SignupClosed,
    /// Unknown email or wrong password: one answer for both.
    #[error("Wrong email or password.")]
    WrongCredentials,
    /// The password was right; the account needs its second factor.
    #[error("mfa_required")]
    MfaRequired,
    /// A wrong, expired or reused two-factor code.
    #[error("That code is not valid. Use the current code from your authenticator app.")]
    WrongCode,
    /// The current password, asked again for an account action, is wrong.
    #[error("Wrong password.")]
    WrongPassword,
    /// An account action was asked for without the current password.
    #[error("Enter your current password.")]
    PasswordRequired,
    /// An administrator disabled the account (told only to someone who
    /// knew its password).
    #[error("account_disabled")]
    Disabled,
    /// Too many sign-ups from this address within the window.
    #[error("Too many sign-ups from your network. Try again in {retry_after_secs} seconds.")]
    SignupThrottled {
        /// Seconds until a new attempt can succeed.
        retry_after_secs: u64,
    },
    /// Too many recent failures for this account or address.
    #[error("Too many failed sign-ins. Try again in {retry_after_secs} seconds.")]
    Throttled {
        /// Seconds until a new attempt can succeed.
        retry_after_secs: u64,
    },
    /// The database failed.
    #[error("database error")]
    Database(#[from] sqlx::Error),
    /// Hashing failed (out of memory, a panicked worker).
    #[error("password hashing failed: {0}")]
    Hashing(String),
}

/// An email address as the server stores it: trimmed and lower-cased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email(String);

impl Email {
    /// Parses untrusted input. Deliberately loose (one `@`, something on
    /// each side, a dot in the domain, no spaces or control characters):
    /// the real check is whether mail arrives.
    pub fn parse(input: &str) -> Result<Self, AuthError> {
        let email = input.trim().to_lowercase();
        let Some((local, domain)) = email.split_once('@') else {
            return Err(AuthError::InvalidEmail);
        };
        let well_formed = !local.is_empty()
            && domain.contains('.')
            && !domain.starts_with('.')
            && !domain.ends_with('.')
            && !domain.contains('@')
            && email.chars().count() <= 254
            && !email.chars().any(|c| c.is_whitespace() || c.is_control());
        if well_formed {
            Ok(Self(email))
        } else {
            Err(AuthError::InvalidEmail)
        }
    }

    /// The normalised address.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A user as the server knows them after a profile read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserProfile {
    /// User id.
    pub id: Uuid,
    /// Normalised email.
    pub email: String,
    /// Shown name.
    pub display_name: String,
    /// Admin flag.
    pub is_admin: bool,
    /// An administrator reset the password: the user must choose one.
    pub must_change_password: bool,
}

impl From<UserProfile> for countersign_api::User {
    fn from(u: UserProfile) -> Self {
        Self {
            id: u.id.to_string(),
            email: u.email,
            display_name: u.display_name,
            is_admin: u.is_admin,
            must_change_password: u.must_change_password,
        }
    }
}

/// Validates a display name, defaulting to the email's local part.
pub fn display_name_or_default(name: Option<&str>, email: &Email) -> Result<String, AuthError> {
    let name = match name.map(str::trim) {
        Some(n) if !n.is_empty() => n.to_owned(),
        _ => email
            .as_str()
            .split('@')
            .next()
            .unwrap_or_default()
            .to_owned(),
    };
    let len = name.chars().count();
    if (1..=100).contains(&len) && !name.chars().any(char::is_control) {
        Ok(name)
    } else {
        Err(AuthError::InvalidDisplayName)
    }
}

/// What sign-up needs, already parsed.
#[derive(Debug, Clone, Copy)]
pub struct NewAccount<'a> {
    /// Normalised email.
    pub email: &'a Email,
    /// Plain password, not yet checked against the policy.
    pub password: &'a str,
    /// Validated display name.
    pub display_name: &'a str,
}

/// Creates an account and its first session. The first account of a
/// deployment becomes admin; when sign-up is closed only that first one
/// can be created.
#[tracing::instrument(skip_all)]
pub async fn sign_up(
    pool: &PgPool,
    hasher: &PasswordHasher,
    (allow_signup, limits): (bool, &throttle::Limits),
    account: NewAccount<'_>,
    client: &session::ClientInfo,
    session_absolute: std::time::Duration,
) -> Result<(UserProfile, NewSession), AuthError> {
    let NewAccount {
        email,
        password,
        display_name,
    } = account;
    check_password_policy(password, &[email.as_str(), display_name])?;
    // Counted before the hash: the hash is what a flood of sign-ups costs.
    if let Some(ip) = client.ip {
        let mut tx = db::service_tx(pool).await?;
        throttle::reserve_signup(&mut tx, limits, ip).await?;
        tx.commit().await?;
    }
    let hash = hasher.hash(password).await?;

    let mut tx = db::service_tx(pool).await?;
    // Serialise sign-ups so exactly one can be the first (admin).
    sqlx::query!("select pg_advisory_xact_lock(7305447302)")
        .execute(&mut *tx)
        .await?;
    let is_first: bool =
        sqlx::query_scalar!(r#"select not exists (select 1 from users) as "exists!""#)
            .fetch_one(&mut *tx)
            .await?;
    if !allow_signup && !is_first {
        return Err(AuthError::SignupClosed);
    }
    let user_id = Uuid::new_v4();
    let inserted = sqlx::query!(
        "insert into users (id, email, password_hash, is_admin) values ($1, $2, $3, $4)
         on conflict (email) do nothing",
        user_id,
        email.as_str(),
        &hash,
        is_first,
    )
    .execute(&mut *tx)
    .await?;
    if inserted.rows_affected() == 0 {
        return Err(AuthError::EmailTaken);
    }
    sqlx::query!(
        "insert into profiles (user_id, display_name) values ($1, $2)",
        user_id,
        display_name,
    )
    .execute(&mut *tx)
    .await?;
    let session = session::create(&mut tx, user_id, client, session_absolute).await?;
    tx.commit().await?;
    tracing::info!(user.id = %user_id, user.is_admin = is_first, "account created");
    Ok((
        UserProfile {
            id: user_id,
            email: email.as_str().to_owned(),
            display_name: display_name.to_owned(),
            is_admin: is_first,
            must_change_password: false,
        },
        session,
    ))
}

/// What a person typed to sign in (never printed but for the email).
#[derive(Clone, Copy)]
pub struct SignInAttempt<'a> {
    /// The email as typed.
    pub email: &'a str,
    /// The password as typed.
    pub password: &'a str,
    /// A TOTP or recovery code, if the person gave one.
    pub code: Option<&'a str>,
}

impl std::fmt::Debug for SignInAttempt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignInAttempt")
            .field("email", &self.email)
            .finish_non_exhaustive()
    }
}

/// Checks credentials under throttling and opens a session. Unknown email
/// and wrong password take the same path (a hash is verified either way)
/// and give the same error.
#[tracing::instrument(skip_all)]
pub async fn sign_in(
    pool: &PgPool,
    hasher: &PasswordHasher,
    limits: &throttle::Limits,
    attempt: SignInAttempt<'_>,
    client: &session::ClientInfo,
    session_absolute: std::time::Duration,
    secrets: Option<&crate::secrets::SecretBox>,
) -> Result<(UserProfile, NewSession), AuthError> {
    let SignInAttempt {
        email: email_input,
        password,
        code: mfa_code,
    } = attempt;
    // A malformed email is throttled and answered like any unknown one.
    let email_key = Email::parse(email_input)
        .map(|e| e.0)
        .unwrap_or_else(|_| email_input.trim().to_lowercase());

    let mut tx = db::service_tx(pool).await?;
    // Counted as a failure before it is verified (see `throttle`).
    let reservation = throttle::reserve(&mut tx, limits, &email_key, client.ip).await?;
    let row = sqlx::query!(
        "select id, password_hash, is_admin, disabled_at is not null as \"disabled!\",
                must_change_password
           from users where email = $1",
        &email_key,
    )
    .map(|r| {
        (
            r.id,
            r.password_hash,
            (r.is_admin, r.disabled, r.must_change_password),
        )
    })
    .fetch_optional(&mut *tx)
    .await?;
    // Hold no connection while hashing (~0.1 s of CPU).
    tx.commit().await?;

    let verified = match &row {
        Some((_, hash, _)) => hasher.verify(password, hash).await?,
        None => {
            hasher.verify_dummy(password).await?;
            false
        }
    };
    let mut tx = db::service_tx(pool).await?;
    let Some((user_id, _, (is_admin, disabled, must_change_password))) = row.filter(|_| verified)
    else {
        // The reservation stays: it is this failure.
        throttle::forget_old(&mut tx).await?;
        tx.commit().await?;
        return Err(AuthError::WrongCredentials);
    };
    throttle::release(&mut tx, reservation).await?;
    tx.commit().await?;
    if disabled {
        return Err(AuthError::Disabled);
    }
    if mfa::enabled(pool, user_id).await? {
        let code = mfa_code
            .filter(|c| !c.trim().is_empty())
            .ok_or(AuthError::MfaRequired)?;
        mfa::verify(pool, secrets, limits, user_id, &email_key, code)
            .await
            .map_err(|e| match e {
                mfa::MfaError::Auth(auth) => auth,
                _ => AuthError::WrongCode,
            })?;
    }
    let mut tx = db::service_tx(pool).await?;
    throttle::clear_account(&mut tx, &email_key).await?;
    let display_name: String = sqlx::query_scalar!(
        "select display_name from profiles where user_id = $1",
        user_id,
    )
    .fetch_one(&mut *tx)
    .await?;
    let session = session::create(&mut tx, user_id, client, session_absolute).await?;
    if mfa_code.is_some() {
        // Signing in with the second factor counts as a step-up.
        sqlx::query!(
            "update sessions set mfa_verified_at = now() where id = $1",
            session.id,
        )
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    tracing::info!(user.id = %user_id, "signed in");
    Ok((
        UserProfile {
            id: user_id,
            email: email_key,
            display_name,
            is_admin,
            must_change_password,
        },
        session,
    ))
}

/// Checks the signed-in user's current password, asked again before an
/// account action (changing the password, enrolling MFA). Throttled and
/// counted like a sign-in on the same account and address.
#[tracing::instrument(skip_all, fields(user.id = %user.user_id))]
pub async fn verify_current_password(
    pool: &PgPool,
    hasher: &PasswordHasher,
    limits: &throttle::Limits,
    user: &SessionUser,
    password: Option<&str>,
    client: &session::ClientInfo,
) -> Result<(), AuthError> {
    let password = password
        .filter(|p| !p.is_empty())
        .ok_or(AuthError::PasswordRequired)?;
    let mut tx = db::service_tx(pool).await?;
    let reservation = throttle::reserve(&mut tx, limits, &user.email, client.ip).await?;
    let hash: String = sqlx::query_scalar!(
        "select password_hash from users where id = $1",
        user.user_id,
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    if !hasher.verify(password, &hash).await? {
        return Err(AuthError::WrongPassword);
    }
    let mut tx = db::service_tx(pool).await?;
    throttle::release(&mut tx, reservation).await?;
    tx.commit().await?;
    Ok(())
}

/// Changes the signed-in user's password after checking the current one;
/// the new one must pass the sign-up policy. Every other session of the
/// user is signed out (this one stays). Returns how many were.
#[tracing::instrument(skip_all, fields(user.id = %user.user_id))]
pub async fn change_password(
    pool: &PgPool,
    hasher: &PasswordHasher,
    limits: &throttle::Limits,
    user: &SessionUser,
    (current, new): (&str, &str),
    client: &session::ClientInfo,
) -> Result<u64, AuthError> {
    let display_name = profile(pool, user).await?.display_name;
    check_password_policy(new, &[user.email.as_str(), display_name.as_str()])?;
    verify_current_password(pool, hasher, limits, user, Some(current), client).await?;
    let hash = hasher.hash(new).await?;
    let mut tx = db::service_tx(pool).await?;
    sqlx::query!(
        "update users set password_hash = $2, must_change_password = false where id = $1",
        user.user_id,
        &hash,
    )
    .execute(&mut *tx)
    .await?;
    let revoked = sqlx::query!(
        "update sessions set revoked_at = now()
          where user_id = $1 and id <> $2 and revoked_at is null",
        user.user_id,
        user.session_id,
    )
    .execute(&mut *tx)
    .await?
    .rows_affected();
    tx.commit().await?;
    tracing::info!(revoked, "password changed; other sessions signed out");
    Ok(revoked)
}

/// Reads the signed-in user's profile as that user (`authenticated`):
/// row-level security, not the `where`, decides what is visible.
#[tracing::instrument(skip_all, fields(user.id = %session.user_id))]
pub async fn profile(pool: &PgPool, session: &SessionUser) -> Result<UserProfile, AuthError> {
    let mut tx = db::user_tx(pool, session.user_id).await?;
    let display_name: Option<String> =
        sqlx::query_scalar!("select display_name from profiles where user_id = auth.uid()")
            .fetch_optional(&mut *tx)
            .await?;
    tx.commit().await?;
    Ok(UserProfile {
        id: session.user_id,
        email: session.email.clone(),
        display_name: display_name.unwrap_or_else(|| session.email.clone()),
        is_admin: session.is_admin,
        must_change_password: session.must_change_password,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_trimmed_and_lower_cased() {
        let email = Email::parse("  Ada.Lovelace@Example.ORG ").expect("valid");
        assert_eq!(email.as_str(), "ada.lovelace@example.org");
    }

    #[test]
    fn malformed_emails_are_refused() {
        for (input, why) in [
            ("", "empty"),
            ("ada", "no @"),
            ("@example.org", "no local part"),
            ("ada@", "no domain"),
            ("ada@example", "no dot in the domain"),
            ("ada@.example.org", "domain starts with a dot"),
            ("ada@example.org.", "domain ends with a dot"),
            ("a@b@example.org", "two @"),
            ("ada lovelace@example.org", "a space"),
            ("ada\u{7}@example.org", "a control character"),
        ] {
            assert!(Email::parse(input).is_err(), "{why}: {input:?}");
        }
        let long = format!("{}@example.org", "a".repeat(250));
        assert!(Email::parse(&long).is_err(), "longer than 254");
    }

    #[test]
    fn display_name_defaults_to_the_local_part() {
        let email = Email::parse("grace@example.org").expect("valid");
        assert_eq!(display_name_or_default(None, &email).expect("ok"), "grace");
        assert_eq!(
            display_name_or_default(Some("  "), &email).expect("ok"),
            "grace"
        );
        assert_eq!(
            display_name_or_default(Some(" Grace H. "), &email).expect("ok"),
            "Grace H."
        );
        assert!(display_name_or_default(Some(&"x".repeat(101)), &email).is_err());
    }
}
