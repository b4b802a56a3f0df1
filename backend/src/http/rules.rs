//! `/api/rules…` (the caller's own rules) and `/api/admin/rules…` (an
//! administrator's, for everyone): allow / ask / deny with conditions
//! (`crate::rules`, docs/design.md §5 "Rules").
//!
//! An allow rule widens what runs unseen, as "Always allow" does: it
//! needs a recent step-up (403 `mfa_required`), and the admin policy's
//! `forbid_always_allow` refuses it (403 `forbidden_by_policy`). Ask and
//! deny rules only narrow, and need neither. Every administrator's change
//! needs a step-up and enters the activity chain.
//!
//! 201 with the rule; 204 on removal; 404 for another's or an unknown id;
//! 409 at the limit; 422 for a rule that cannot be read (the detail says
//! which part).

use super::{
    admin::Admin,
    error::{ApiError, FORBIDDEN_BY_POLICY},
    extract::{CurrentUser, Json, Path},
};
use crate::{
    AppState,
    rules::{self, RuleError},
};
use axum::{extract::State, http::StatusCode};
use countersign_api::{Rule, RuleEffect, RuleRequest};
use uuid::Uuid;

impl From<RuleError> for ApiError {
    fn from(err: RuleError) -> Self {
        let message = err.to_string();
        match err {
            RuleError::Invalid(_) => Self::Unprocessable(message),
            RuleError::TooMany => Self::Conflict(message),
            RuleError::NotFound => Self::NotFound(message),
            RuleError::Database(e) => Self::Internal(e.into()),
        }
    }
}

/// `GET /api/rules`: the caller's own rules, oldest first.
#[utoipa::path(
    get,
    path = "/rules",
    tag = "rules",
    responses(
        (status = 200, description = "The caller's rules; an allow rule is marked suspended while the admin policy forbids \"Always allow\"", body = Vec<countersign_api::Rule>),
    ),
)]
pub async fn list_rules(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<axum::Json<Vec<Rule>>, ApiError> {
    let forbid = crate::policy::current(&state.db).await?.forbid_always_allow;
    Ok(axum::Json(
        rules::list_own(&state.db, user.user_id.into(), forbid).await?,
    ))
}

/// `POST /api/rules`: makes one of the caller's rules.
#[utoipa::path(
    post,
    path = "/rules",
    tag = "rules",
    request_body = countersign_api::RuleRequest,
    responses(
        (status = 201, description = "The rule as stored, with its words", body = countersign_api::Rule),
        (status = 403, description = "An allow rule: `forbidden_by_policy` (the admin policy forbids \"Always allow\"); `mfa_required`: this session needs a recent two-factor step-up (`POST /api/auth/mfa/step-up`), then the same request again; `mfa_enrolment_required`: the deployment or the admin policy requires two-factor sign-in and the account has none", body = countersign_api::ErrorBody),
        (status = 409, description = "The caller has as many rules as allowed", body = countersign_api::ErrorBody),
        (status = 422, description = "A host, pattern or condition that cannot be read (the detail says which)", body = countersign_api::ErrorBody),
    ),
)]
pub async fn create_rule(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Json(req): Json<RuleRequest>,
) -> Result<(StatusCode, axum::Json<Rule>), ApiError> {
    // Read it before anything else is asked of the user.
    rules::parse(&req).map_err(RuleError::from)?;
    if req.effect == RuleEffect::Allow {
        if crate::policy::current(&state.db).await?.forbid_always_allow {
            return Err(ApiError::Forbidden(FORBIDDEN_BY_POLICY.into()));
        }
        super::mfa::require_step_up(&state, &user).await?;
    }
    let rule = rules::create_own(&state.db, user.user_id.into(), &req).await?;
    tracing::info!(rule.id = %rule.id, effect = %rule.effect, "rule made");
    Ok((StatusCode::CREATED, axum::Json(rule)))
}

/// `DELETE /api/rules/{id}`: removes one of the caller's rules.
#[utoipa::path(
    delete,
    path = "/rules/{id}",
    tag = "rules",
    params(("id" = Uuid, Path, description = "Its id (a UUID).")),
    responses(
        (status = 204, description = "Removed: it decides no further call"),
        (status = 404, description = "No such rule of the caller", body = countersign_api::ErrorBody),
    ),
)]
pub async fn delete_rule(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    rules::delete_own(&state.db, user.user_id.into(), id).await?;
    tracing::info!(rule.id = %id, "rule removed");
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/admin/rules`: the administrators' rules, oldest first.
#[utoipa::path(
    get,
    path = "/admin/rules",
    tag = "admin",
    responses(
        (status = 200, description = "The rules for everyone", body = Vec<countersign_api::Rule>),
        (status = 403, description = "Not an administrator", body = countersign_api::ErrorBody),
    ),
)]
pub async fn admin_list_rules(
    State(state): State<AppState>,
    Admin(_): Admin,
) -> Result<axum::Json<Vec<Rule>>, ApiError> {
    Ok(axum::Json(rules::list_admin(&state.db).await?))
}

/// `POST /api/admin/rules`: makes a rule for everyone; it decides before
/// any user's rule.
#[utoipa::path(
    post,
    path = "/admin/rules",
    tag = "admin",
    request_body = countersign_api::RuleRequest,
    responses(
        (status = 201, description = "The rule as stored, with its words; the change is in the activity chain", body = countersign_api::Rule),
        (status = 403, description = "Not an administrator; `mfa_required`: this session needs a recent two-factor step-up, then the same request again; `mfa_enrolment_required`", body = countersign_api::ErrorBody),
        (status = 409, description = "As many rules as allowed", body = countersign_api::ErrorBody),
        (status = 422, description = "A host, pattern or condition that cannot be read (the detail says which)", body = countersign_api::ErrorBody),
    ),
)]
pub async fn admin_create_rule(
    State(state): State<AppState>,
    Admin(user): Admin,
    Json(req): Json<RuleRequest>,
) -> Result<(StatusCode, axum::Json<Rule>), ApiError> {
    rules::parse(&req).map_err(RuleError::from)?;
    super::mfa::require_step_up(&state, &user).await?;
    let rule = rules::create_admin(&state.db, user.user_id.into(), &req).await?;
    tracing::info!(rule.id = %rule.id, effect = %rule.effect, "admin rule made");
    Ok((StatusCode::CREATED, axum::Json(rule)))
}

/// `DELETE /api/admin/rules/{id}`: removes a rule for everyone.
#[utoipa::path(
    delete,
    path = "/admin/rules/{id}",
    tag = "admin",
    params(("id" = Uuid, Path, description = "Its id (a UUID).")),
    responses(
        (status = 204, description = "Removed; the change is in the activity chain"),
        (status = 403, description = "Not an administrator; `mfa_required`", body = countersign_api::ErrorBody),
        (status = 404, description = "No such rule for everyone", body = countersign_api::ErrorBody),
    ),
)]
pub async fn admin_delete_rule(
    State(state): State<AppState>,
    Admin(user): Admin,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    super::mfa::require_step_up(&state, &user).await?;
    rules::delete_admin(&state.db, user.user_id.into(), id).await?;
    tracing::info!(rule.id = %id, "admin rule removed");
    Ok(StatusCode::NO_CONTENT)
}
