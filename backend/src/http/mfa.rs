//! `/api/auth/mfa/*` and `/api/auth/sessions…`: two-factor enrolment,
//! confirmation, step-up and disabling; the caller's sessions. Also the
//! step-up guard the trust-changing handlers call.

use super::{
    auth::HASHER,
    error::ApiError,
    extract::{Client, CurrentUser, Json},
    security::CarriesSecret,
};
use crate::{
    AppState,
    auth::{
        self, SessionUser,
        mfa::{self, MfaError},
        throttle::Limits,
    },
    db,
};
use axum::{Extension, extract::State, http::StatusCode};
use countersign_api::{MfaCodeRequest, MfaConfirmed, MfaEnrolRequest, MfaEnrolment, SessionInfo};
use time::{OffsetDateTime, format_description::well_known::Rfc3339};
use uuid::Uuid;

impl From<MfaError> for ApiError {
    fn from(err: MfaError) -> Self {
        let message = err.to_string();
        match err {
            MfaError::WrongCode => Self::Unauthorized(message),
            MfaError::State(_) => Self::Conflict(message),
            MfaError::NoSecretKey => Self::Unavailable(message),
            MfaError::Auth(auth) => auth.into(),
        }
    }
}

/// The detail of the 403 a trust-widening action answers when the session
/// must step up first.
pub const MFA_REQUIRED: &str = "mfa_required";

/// The detail of the 403 a trust-widening action answers under
/// `COUNTERSIGN_REQUIRE_MFA=true` when the account has not enrolled MFA.
pub const MFA_ENROLMENT_REQUIRED: &str = "mfa_enrolment_required";

/// The guard of every trust-widening action (turning trust on, an
/// always-rule, connector credentials or URL, provider keys): 403
/// `{"detail":"mfa_required"}` when the account has MFA and this session
/// has not stepped up in the last 10 minutes; 403
/// `{"detail":"mfa_enrolment_required"}` when the deployment requires MFA
/// (`COUNTERSIGN_REQUIRE_MFA`) and the account has none. Handlers call only
/// this, so every guarded action gets both rules.
pub async fn require_step_up(state: &AppState, user: &SessionUser) -> Result<(), ApiError> {
    match mfa::step_up_status(&state.db, user.user_id, user.session_id).await? {
        mfa::StepUp::Fresh => Ok(()),
        // `COUNTERSIGN_REQUIRE_MFA` or the admin policy's `require_mfa`.
        mfa::StepUp::NotEnrolled
            if !state.config.require_mfa
                && !crate::policy::current(&state.db).await?.require_mfa =>
        {
            Ok(())
        }
        mfa::StepUp::NotEnrolled => Err(ApiError::Forbidden(MFA_ENROLMENT_REQUIRED.into())),
        mfa::StepUp::Needed => Err(ApiError::Forbidden(MFA_REQUIRED.into())),
    }
}

/// `POST /api/auth/mfa/enroll` `{password}`: a new secret (replacing an
/// unconfirmed one); 400 without the current password, 401 with a wrong
/// one (throttled like sign-in); 409 while MFA is on.
#[utoipa::path(
    post,
    path = "/auth/mfa/enroll",
    tag = "auth",
    request_body = countersign_api::MfaEnrolRequest,
    responses(
        (status = 200, description = "A new secret to confirm with a first code", body = countersign_api::MfaEnrolment),
        (status = 400, description = "`Enter your current password.`", body = countersign_api::ErrorBody),
        (status = 401, description = "`Wrong password.`", body = countersign_api::ErrorBody),
        (status = 409, description = "Two-factor sign-in is already on", body = countersign_api::ErrorBody),
        (status = 429, description = "Too many attempts for this account or address: try again after `Retry-After` seconds", body = countersign_api::ErrorBody),
        (status = 503, description = "The server has no secret key to seal the secret with", body = countersign_api::ErrorBody),
    ),
)]
pub async fn enroll(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Client(client): Client,
    Json(req): Json<MfaEnrolRequest>,
) -> Result<(Extension<CarriesSecret>, axum::Json<MfaEnrolment>), ApiError> {
    auth::verify_current_password(
        &state.db,
        &HASHER,
        &Limits::from(state.config.as_ref()),
        &user,
        req.password.as_deref(),
        &client,
    )
    .await?;
    let enrolment =
        mfa::enrol(&state.db, state.secrets.as_ref(), user.user_id, &user.email).await?;
    let qr_svg = qrcode::QrCode::new(enrolment.uri.as_bytes())
        .map_err(|e| ApiError::Internal(anyhow::anyhow!("QR code: {e}")))?
        .render::<qrcode::render::svg::Color<'_>>()
        .min_dimensions(200, 200)
        .build();
    Ok((
        Extension(CarriesSecret),
        axum::Json(MfaEnrolment {
            secret: enrolment.secret,
            otpauth_uri: enrolment.uri,
            qr_svg,
        }),
    ))
}

/// `POST /api/auth/mfa/confirm` `{code}`: turns MFA on; the recovery codes,
/// once. Counts as a step-up.
#[utoipa::path(
    post,
    path = "/auth/mfa/confirm",
    tag = "auth",
    request_body = countersign_api::MfaCodeRequest,
    responses(
        (status = 200, description = "On; the recovery codes, shown once. Counts as a step-up", body = countersign_api::MfaConfirmed),
        (status = 401, description = "A wrong, expired or reused code", body = countersign_api::ErrorBody),
        (status = 409, description = "Nothing to confirm", body = countersign_api::ErrorBody),
        (status = 429, description = "Too many attempts for this account or address: try again after `Retry-After` seconds", body = countersign_api::ErrorBody),
    ),
)]
pub async fn confirm(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Json(req): Json<MfaCodeRequest>,
) -> Result<(Extension<CarriesSecret>, axum::Json<MfaConfirmed>), ApiError> {
    let recovery_codes = mfa::confirm(
        &state.db,
        state.secrets.as_ref(),
        &Limits::from(state.config.as_ref()),
        user.user_id,
        &user.email,
        &req.code,
    )
    .await?;
    mfa::mark_step_up(&state.db, user.session_id).await?;
    Ok((
        Extension(CarriesSecret),
        axum::Json(MfaConfirmed { recovery_codes }),
    ))
}

/// `POST /api/auth/mfa/step-up` `{code}` → 204: this session may do the
/// guarded actions for 10 minutes.
#[utoipa::path(
    post,
    path = "/auth/mfa/step-up",
    tag = "auth",
    request_body = countersign_api::MfaCodeRequest,
    responses(
        (status = 204, description = "This session may do the guarded actions for 10 minutes"),
        (status = 401, description = "A wrong, expired or reused code", body = countersign_api::ErrorBody),
        (status = 409, description = "Two-factor sign-in is not on", body = countersign_api::ErrorBody),
        (status = 429, description = "Too many attempts for this account or address: try again after `Retry-After` seconds", body = countersign_api::ErrorBody),
    ),
)]
pub async fn step_up(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Json(req): Json<MfaCodeRequest>,
) -> Result<StatusCode, ApiError> {
    verify_code(&state, &user, &req.code).await?;
    mfa::mark_step_up(&state.db, user.session_id).await?;
    tracing::info!(user.id = %user.user_id, "step-up");
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/auth/mfa/disable` `{code}` → 204.
#[utoipa::path(
    post,
    path = "/auth/mfa/disable",
    tag = "auth",
    request_body = countersign_api::MfaCodeRequest,
    responses(
        (status = 204, description = "Two-factor sign-in is off"),
        (status = 401, description = "A wrong, expired or reused code", body = countersign_api::ErrorBody),
        (status = 409, description = "Two-factor sign-in is not on", body = countersign_api::ErrorBody),
        (status = 429, description = "Too many attempts for this account or address: try again after `Retry-After` seconds", body = countersign_api::ErrorBody),
    ),
)]
pub async fn disable(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Json(req): Json<MfaCodeRequest>,
) -> Result<StatusCode, ApiError> {
    verify_code(&state, &user, &req.code).await?;
    mfa::disable(&state.db, user.user_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Checks the caller's TOTP or recovery code (throttled; a failure counts).
async fn verify_code(state: &AppState, user: &SessionUser, code: &str) -> Result<(), ApiError> {
    mfa::verify(
        &state.db,
        state.secrets.as_ref(),
        &Limits::from(state.config.as_ref()),
        user.user_id,
        &user.email,
        code,
    )
    .await?;
    Ok(())
}

/// `GET /api/auth/sessions`: the caller's live sessions, newest first.
#[utoipa::path(
    get,
    path = "/auth/sessions",
    tag = "auth",
    responses(
        (status = 200, description = "The caller's live sessions, newest first", body = Vec<countersign_api::SessionInfo>),
    ),
)]
pub async fn list_sessions(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<axum::Json<Vec<SessionInfo>>, ApiError> {
    struct Row {
        id: Uuid,
        created_at: OffsetDateTime,
        last_seen_at: OffsetDateTime,
        user_agent: Option<String>,
        ip: Option<String>,
    }
    let mut tx = db::service_tx(&state.db).await?;
    let rows = sqlx::query_as!(
        Row,
        "select id, created_at, last_seen_at, user_agent, host(ip) as ip
               from sessions
              where user_id = $1 and revoked_at is null and expires_at > now()
                and last_seen_at > now() - make_interval(secs => $2)
              order by last_seen_at desc",
        user.user_id,
        state.config.session_idle().as_secs_f64(),
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(axum::Json(
        rows.into_iter()
            .map(|r| SessionInfo {
                id: r.id.to_string(),
                created_at: r.created_at.format(&Rfc3339).unwrap_or_default(),
                last_seen_at: r.last_seen_at.format(&Rfc3339).unwrap_or_default(),
                user_agent: r.user_agent,
                ip: r.ip,
                current: r.id == user.session_id,
            })
            .collect(),
    ))
}

/// `POST /api/auth/sessions/revoke-others` → `{"revoked": n}`: signs out
/// every other session of the caller.
#[utoipa::path(
    post,
    path = "/auth/sessions/revoke-others",
    tag = "auth",
    responses(
        (status = 200, description = "How many other sessions were signed out", body = countersign_api::RevokedSessions),
    ),
)]
pub async fn revoke_other_sessions(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<axum::Json<countersign_api::RevokedSessions>, ApiError> {
    let mut tx = db::service_tx(&state.db).await?;
    let revoked = sqlx::query!(
        "update sessions set revoked_at = now()
          where user_id = $1 and id <> $2 and revoked_at is null",
        user.user_id,
        user.session_id,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    tracing::info!(user.id = %user.user_id, revoked = revoked.rows_affected(), "other sessions signed out");
    Ok(axum::Json(countersign_api::RevokedSessions {
        revoked: revoked.rows_affected(),
    }))
}
