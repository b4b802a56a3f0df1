//! Two-factor sign-in with TOTP (RFC 6238: HMAC-SHA1, 6 digits, 30 s),
//! recovery codes, and the step-up that guards trust-changing actions.
//!
//! - Enrolment: a 160-bit secret, sealed at rest with the deployment key,
//!   shown once as base32 and an `otpauth://` URI; it counts only after a
//!   first valid code confirms it, which also hands out ten single-use
//!   recovery codes (only their SHA-256 is stored).
//! - A code is accepted for the current step ± 1, and never twice: the
//!   last accepted step is stored and every later code must be newer.
//! - Step-up: a valid code marks the session `mfa_verified_at`; for 10
//!   minutes the session may turn trust on, create an always-rule, change
//!   connector credentials or a provider key. Accounts without MFA have no
//!   second factor to step up with and are not asked.
//! - Wrong codes are throttled per account like sign-ins, under the
//!   account's throttle lock, so simultaneous guesses queue and count.
//!
//! The RFC 6238 arithmetic (HMAC, dynamic truncation, the ± 1 window, a
//! constant-time comparison) and base32 are `totp-rs`'s. Ours, deliberately:
//! "each code once" (totp-rs leaves it to the caller; the last accepted
//! step lives in Postgres, under the row lock of the check), the secret's
//! generation and sealing, and the `otpauth://` URI, written by hand so it
//! stays byte-identical to what enrolled apps were shown (totp-rs's
//! `otpauth` feature orders and encodes it differently, and pulls in `url`).

use super::{AuthError, throttle};
use crate::{
    db::{self, Tx},
    secrets::{Sealed, SecretBox},
};
use sha2::{Digest as _, Sha256};
use sqlx::PgPool;
use totp_rs::{Algorithm, Builder, Secret, Totp};
use uuid::Uuid;

/// Seconds per TOTP step.
const STEP_SECS: i64 = 30;
/// How long a step-up lasts.
pub const STEP_UP_SECS: i64 = 600;
/// Recovery codes handed out at confirmation.
const RECOVERY_CODES: usize = 10;

/// RFC 4648 base32 without padding (the alphabet authenticator apps read).
pub fn base32(bytes: &[u8]) -> String {
    Secret::from(bytes).to_base32()
}

/// The TOTP every authenticator app assumes: HMAC-SHA1, 6 digits, 30 s
/// steps, and one step of skew either side.
fn totp(secret: &[u8]) -> Totp {
    // `build` would also refuse secrets under 128 bits; ours are 160 bits
    // (`enrol`), and the RFC's own test seed is too, so there is no
    // error to handle.
    Builder::new()
        .with_algorithm(Algorithm::SHA1)
        .with_digits(6)
        .with_step_duration(STEP_SECS.unsigned_abs())
        .with_skew(1)
        .with_secret(secret)
        .build_noncompliant()
}

/// The first Unix second of `step` (steps before 1970 read as step 0).
fn start_of(step: i64) -> u64 {
    u64::try_from(step.saturating_mul(STEP_SECS)).unwrap_or(0)
}

/// The 6-digit code of `secret` at time step `step` (RFC 6238 §4).
pub fn code_at(secret: &[u8], step: i64) -> String {
    totp(secret).generate(start_of(step)).to_string()
}

/// The step of a Unix time.
pub fn step_of(unix_secs: i64) -> i64 {
    unix_secs.div_euclid(STEP_SECS)
}

/// The step among `now_step - 1 ..= now_step + 1` whose code is `code`.
fn matching_step(secret: &[u8], code: &str, now_step: i64) -> Option<i64> {
    // Apps show "123 456"; totp-rs takes exactly six ASCII digits.
    let code = code.trim().replace(' ', "");
    let step = totp(secret).check(&code, start_of(now_step))?;
    i64::try_from(step).ok()
}

/// The associated data binding a TOTP secret to its owner (also what
/// `secrets::rotate` re-seals it with).
pub(crate) fn aad(user_id: Uuid) -> Vec<u8> {
    format!("countersign/totp/{user_id}").into_bytes()
}

fn recovery_hash(code: &str) -> Vec<u8> {
    let normal: String = code
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_uppercase())
        .collect();
    Sha256::digest(normal.as_bytes()).to_vec()
}

/// Why an MFA action failed.
#[derive(Debug, thiserror::Error)]
pub enum MfaError {
    /// Wrong, expired or reused code.
    #[error("That code is not valid. Use the current code from your authenticator app.")]
    WrongCode,
    /// Nothing to confirm, or already enabled.
    #[error("{0}")]
    State(&'static str),
    /// No deployment key to seal the secret with.
    #[error(
        "Two-factor sign-in is not available on this server yet: ask your administrator to set \
         up its secret key."
    )]
    NoSecretKey,
    /// Throttled, database.
    #[error(transparent)]
    Auth(#[from] AuthError),
}

impl From<sqlx::Error> for MfaError {
    fn from(err: sqlx::Error) -> Self {
        Self::Auth(err.into())
    }
}

/// A started enrolment: what the user's authenticator app needs.
#[derive(Debug, Clone)]
pub struct Enrolment {
    /// Base32 secret.
    pub secret: String,
    /// `otpauth://totp/…`.
    pub uri: String,
}

/// Starts (or restarts) enrolment. Refused while MFA is enabled.
pub async fn enrol(
    pool: &PgPool,
    secrets: Option<&SecretBox>,
    user_id: Uuid,
    email: &str,
) -> Result<Enrolment, MfaError> {
    let secrets = secrets.ok_or(MfaError::NoSecretKey)?;
    let secret: [u8; 20] = rand::random();
    let sealed = secrets.seal(&secret, &aad(user_id));
    let mut tx = db::service_tx(pool).await?;
    let stored = sqlx::query!(
        "insert into mfa_totp (user_id, key_id, nonce, ciphertext) values ($1, $2, $3, $4)
         on conflict (user_id) do update
            set key_id = excluded.key_id, nonce = excluded.nonce,
                ciphertext = excluded.ciphertext, created_at = now(), last_step = null
          where mfa_totp.confirmed_at is null",
        user_id,
        &sealed.key_id,
        &sealed.nonce,
        &sealed.ciphertext,
    )
    .execute(&mut *tx)
    .await?;
    if stored.rows_affected() == 0 {
        return Err(MfaError::State(
            "Two-factor sign-in is already on. Turn it off first to enrol a new device.",
        ));
    }
    tx.commit().await?;
    let secret = base32(&secret);
    let label: String = email
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'-' | b'_' | b'@' => {
                char::from(b).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect();
    Ok(Enrolment {
        uri: format!(
            "otpauth://totp/Countersign:{label}?secret={secret}&issuer=Countersign&algorithm=SHA1&digits=6&period=30"
        ),
        secret,
    })
}

/// Whether the user has confirmed MFA.
pub async fn enabled(pool: &PgPool, user_id: Uuid) -> Result<bool, sqlx::Error> {
    let mut tx = db::service_tx(pool).await?;
    let on: bool = sqlx::query_scalar!(
        r#"select exists (select 1 from mfa_totp where user_id = $1 and confirmed_at is not null) as "exists!""#,
        user_id,
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(on)
}

/// Checks `code` (TOTP, or a recovery code when `recovery` allows it)
/// inside `tx`: consumes the step or the recovery code. Throttled per
/// account; failures are counted.
/// Which secret a code is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// The unconfirmed one being set up (no recovery codes yet).
    Enrolling,
    /// The confirmed one; a recovery code also counts.
    Enabled,
}

struct StoredSecret {
    key_id: String,
    nonce: Vec<u8>,
    ciphertext: Vec<u8>,
    last_step: Option<i64>,
    now: i64,
}

async fn check_code(
    tx: &mut Tx,
    secrets: Option<&SecretBox>,
    limits: &throttle::Limits,
    (user_id, email): (Uuid, &str),
    code: &str,
    stage: Stage,
) -> Result<bool, MfaError> {
    let (confirmed, recovery) = (stage == Stage::Enabled, stage == Stage::Enabled);
    // The account's throttle lock is held until `tx` ends, across the
    // check, the verification and the recorded failure (see `throttle`).
    throttle::lock_and_check(tx, limits, email, None).await?;
    let row = sqlx::query_as!(
        StoredSecret,
        r#"select key_id, nonce, ciphertext, last_step,
                  extract(epoch from now())::int8 as "now!"
             from mfa_totp
            where user_id = $1 and (confirmed_at is not null) = $2
            for update"#,
        user_id,
        confirmed,
    )
    .fetch_optional(&mut **tx)
    .await?;
    let Some(StoredSecret {
        key_id,
        nonce,
        ciphertext,
        last_step,
        now,
    }) = row
    else {
        return Err(MfaError::State(if confirmed {
            "Two-factor sign-in is not on."
        } else {
            "Start the set-up first."
        }));
    };
    let secret = secrets
        .ok_or(MfaError::NoSecretKey)?
        .open(
            &Sealed {
                key_id,
                nonce,
                ciphertext,
            },
            &aad(user_id),
        )
        .map_err(|err| {
            // The user sees a refused code; the operator needs the reason
            // (a key dropped before `countersign secrets rotate` ran).
            tracing::error!(user.id = %user_id, error = %err, "cannot open the stored TOTP secret");
            MfaError::NoSecretKey
        })?;
    if let Some(step) = matching_step(&secret, code, step_of(now)) {
        if last_step.is_some_and(|last| step <= last) {
            // A code that was already used (or an older one).
            throttle::record_failure(tx, email, None).await?;
            return Ok(false);
        }
        sqlx::query!(
            "update mfa_totp set last_step = $2 where user_id = $1",
            user_id,
            step,
        )
        .execute(&mut **tx)
        .await?;
        return Ok(true);
    }
    if recovery {
        let used = sqlx::query!(
            "update mfa_recovery_codes set used_at = now()
              where user_id = $1 and code_hash = $2 and used_at is null",
            user_id,
            recovery_hash(code),
        )
        .execute(&mut **tx)
        .await?;
        if used.rows_affected() == 1 {
            return Ok(true);
        }
    }
    throttle::record_failure(tx, email, None).await?;
    Ok(false)
}

/// Confirms enrolment with a first code; returns the recovery codes (shown
/// once).
pub async fn confirm(
    pool: &PgPool,
    secrets: Option<&SecretBox>,
    limits: &throttle::Limits,
    user_id: Uuid,
    email: &str,
    code: &str,
) -> Result<Vec<String>, MfaError> {
    let mut tx = db::service_tx(pool).await?;
    if !check_code(
        &mut tx,
        secrets,
        limits,
        (user_id, email),
        code,
        Stage::Enrolling,
    )
    .await?
    {
        tx.commit().await?;
        return Err(MfaError::WrongCode);
    }
    sqlx::query!(
        "update mfa_totp set confirmed_at = now() where user_id = $1",
        user_id,
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query!("delete from mfa_recovery_codes where user_id = $1", user_id,)
        .execute(&mut *tx)
        .await?;
    let mut codes = Vec::with_capacity(RECOVERY_CODES);
    for _ in 0..RECOVERY_CODES {
        let raw = base32(&rand::random::<[u8; 7]>());
        let code = format!("{}-{}", &raw[..5], &raw[5..10]);
        sqlx::query!(
            "insert into mfa_recovery_codes (user_id, code_hash) values ($1, $2)",
            user_id,
            recovery_hash(&code),
        )
        .execute(&mut *tx)
        .await?;
        codes.push(code);
    }
    throttle::clear_account(&mut tx, email).await?;
    tx.commit().await?;
    tracing::info!(user.id = %user_id, "two-factor sign-in enabled");
    Ok(codes)
}

/// Verifies a code of an enabled account (sign-in, step-up, disabling):
/// a TOTP code or an unused recovery code.
pub async fn verify(
    pool: &PgPool,
    secrets: Option<&SecretBox>,
    limits: &throttle::Limits,
    user_id: Uuid,
    email: &str,
    code: &str,
) -> Result<(), MfaError> {
    let mut tx = db::service_tx(pool).await?;
    let ok = check_code(
        &mut tx,
        secrets,
        limits,
        (user_id, email),
        code,
        Stage::Enabled,
    )
    .await?;
    if ok {
        throttle::clear_account(&mut tx, email).await?;
    }
    tx.commit().await?;
    if ok { Ok(()) } else { Err(MfaError::WrongCode) }
}

/// Marks the session as stepped up now.
pub async fn mark_step_up(pool: &PgPool, session_id: Uuid) -> Result<(), sqlx::Error> {
    let mut tx = db::service_tx(pool).await?;
    sqlx::query!(
        "update sessions set mfa_verified_at = now() where id = $1",
        session_id,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// Where a session stands for a trust-widening action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepUp {
    /// The account has no MFA: there is no second factor to step up with
    /// (unless the deployment requires enrolment first).
    NotEnrolled,
    /// The session stepped up within the last [`STEP_UP_SECS`].
    Fresh,
    /// The account has MFA and this session has not stepped up recently.
    Needed,
}

/// Whether a sensitive action may go ahead for this session, and if not,
/// why.
pub async fn step_up_status(
    pool: &PgPool,
    user_id: Uuid,
    session_id: Uuid,
) -> Result<StepUp, sqlx::Error> {
    let mut tx = db::service_tx(pool).await?;
    let row = sqlx::query!(
        r#"select exists (select 1 from mfa_totp
                           where user_id = $1 and confirmed_at is not null) as "enrolled!",
                  exists (select 1 from sessions where id = $2 and user_id = $1
                            and mfa_verified_at > now() - make_interval(secs => $3)) as "fresh!""#,
        user_id,
        session_id,
        STEP_UP_SECS as f64,
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(match (row.enrolled, row.fresh) {
        (false, _) => StepUp::NotEnrolled,
        (true, true) => StepUp::Fresh,
        (true, false) => StepUp::Needed,
    })
}

/// Turns MFA off (after a valid code) and forgets the recovery codes.
pub async fn disable(pool: &PgPool, user_id: Uuid) -> Result<(), sqlx::Error> {
    let mut tx = db::service_tx(pool).await?;
    sqlx::query!("delete from mfa_totp where user_id = $1", user_id,)
        .execute(&mut *tx)
        .await?;
    sqlx::query!("delete from mfa_recovery_codes where user_id = $1", user_id,)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    tracing::info!(user.id = %user_id, "two-factor sign-in disabled");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_the_rfc_6238_test_vectors() {
        // RFC 6238 appendix B, SHA-1 seed "12345678901234567890"; the RFC
        // prints 8 digits, a 6-digit code is their last six.
        let seed = b"12345678901234567890";
        for (time, eight) in [
            (59, "94287082"),
            (1_111_111_109, "07081804"),
            (1_111_111_111, "14050471"),
            (1_234_567_890, "89005924"),
            (2_000_000_000, "69279037"),
        ] {
            assert_eq!(code_at(seed, step_of(time)), eight[2..], "t={time}");
        }
    }

    #[test]
    fn a_code_is_accepted_one_step_either_side_and_nowhere_else() {
        let seed = b"12345678901234567890";
        let now = step_of(1_234_567_890);
        assert_eq!(
            matching_step(seed, &code_at(seed, now - 1), now),
            Some(now - 1)
        );
        assert_eq!(
            matching_step(seed, &code_at(seed, now + 1), now),
            Some(now + 1)
        );
        assert_eq!(matching_step(seed, &code_at(seed, now - 2), now), None);
        let code = code_at(seed, now);
        let spaced = format!(" {} {} ", &code[..3], &code[3..]);
        assert_eq!(
            matching_step(seed, &spaced, now),
            Some(now),
            "spaces as apps print them are ignored"
        );
        assert_eq!(matching_step(seed, "12345", now), None);
        assert_eq!(matching_step(seed, "+12345", now), None);
        assert_eq!(matching_step(seed, "abcdef", now), None);
    }

    #[test]
    fn base32_is_rfc_4648() {
        assert_eq!(base32(b""), "");
        assert_eq!(base32(b"f"), "MY");
        assert_eq!(base32(b"foobar"), "MZXW6YTBOI");
        assert_eq!(
            base32(b"12345678901234567890"),
            "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
        );
    }

    #[test]
    fn recovery_codes_ignore_case_and_dashes() {
        assert_eq!(recovery_hash("abcde-fghij"), recovery_hash("ABCDEFGHIJ"));
    }
}
