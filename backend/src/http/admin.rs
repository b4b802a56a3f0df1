//! `/api/admin/…` (DESIGN §8): the instance's policy and its accounts,
//! for administrators only — 403 for everyone else, whatever they send.
//! Every change needs a recent step-up when the administrator has
//! two-factor sign-in (a stolen session without the second factor cannot
//! loosen the policy), and enters the activity chain.
//!
//! 200 with the new state; 403 (not an admin; `mfa_required`), 404 (no
//! such account), 409 `last_admin` (the change would leave no active
//! administrator), 422 (a malformed list entry, named).

use super::{
    error::ApiError,
    extract::{CurrentUser, Json, Path},
};
use crate::{
    AppState,
    admin::{self, Actor, AdminError, Change},
    auth::SessionUser,
    db, policy,
};
use axum::{extract::FromRequestParts, extract::State, http::request::Parts};
use countersign_api::{AdminOverview, AdminUser, AdminUserUpdate, Policy, PolicyUpdate};
use uuid::Uuid;

impl From<AdminError> for ApiError {
    fn from(err: AdminError) -> Self {
        let message = err.to_string();
        match err {
            AdminError::NotFound => Self::NotFound(message),
            AdminError::LastAdmin | AdminError::EmailTaken => Self::Conflict(message),
            AdminError::Invalid(_) => Self::Unprocessable(message),
            AdminError::Auth(e) => e.into(),
            AdminError::Database(e) => Self::Internal(e.into()),
        }
    }
}

/// A signed-in administrator (the flag as stored now: the session lookup
/// reads it with every request). 403 for anyone else.
#[derive(Debug, Clone)]
pub struct Admin(pub SessionUser);

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let CurrentUser(user) = CurrentUser::from_request_parts(parts, state).await?;
        if !user.is_admin {
            return Err(ApiError::Forbidden(
                "Only an administrator can do this.".into(),
            ));
        }
        Ok(Self(user))
    }
}

async fn policy_view(state: &AppState, stored: &policy::Policy) -> Result<Policy, ApiError> {
    let updated_by = match stored.updated_by {
        Some(id) => {
            let mut tx = db::service_tx(&state.db).await?;
            let email = sqlx::query_scalar!("select email from users where id = $1", id)
                .fetch_optional(&mut *tx)
                .await?;
            tx.commit().await?;
            email
        }
        None => None,
    };
    Ok(stored.to_api(updated_by))
}

/// `GET /api/admin/policy`.
#[utoipa::path(
    get,
    path = "/admin/policy",
    tag = "admin",
    responses(
        (status = 200, description = "The instance's policy", body = countersign_api::Policy),
        (status = 403, description = "Not an administrator", body = countersign_api::ErrorBody),
    ),
)]
pub async fn get_policy(
    State(state): State<AppState>,
    Admin(_): Admin,
) -> Result<axum::Json<Policy>, ApiError> {
    let stored = policy::current(&state.db).await?;
    Ok(axum::Json(policy_view(&state, &stored).await?))
}

/// `PUT /api/admin/policy`: fields left out keep their value.
#[utoipa::path(
    put,
    path = "/admin/policy",
    tag = "admin",
    request_body = countersign_api::PolicyUpdate,
    responses(
        (status = 200, description = "The policy as stored (lists trimmed, hosts lower-cased); the change is in the activity chain", body = countersign_api::Policy),
        (status = 403, description = "Not an administrator; `mfa_required`: this session needs a recent two-factor step-up (`POST /api/auth/mfa/step-up`), then the same request again; `mfa_enrolment_required`: the deployment or the admin policy requires two-factor sign-in and the account has none", body = countersign_api::ErrorBody),
        (status = 422, description = "A list entry that is not a valid pattern or host (the detail names it), or too many", body = countersign_api::ErrorBody),
    ),
)]
pub async fn put_policy(
    State(state): State<AppState>,
    Admin(user): Admin,
    Json(req): Json<PolicyUpdate>,
) -> Result<axum::Json<Policy>, ApiError> {
    super::mfa::require_step_up(&state, &user).await?;
    let stored = policy::update(&state.db, user.user_id.into(), &req).await?;
    Ok(axum::Json(policy_view(&state, &stored).await?))
}

/// `GET /api/admin/users`.
#[utoipa::path(
    get,
    path = "/admin/users",
    tag = "admin",
    responses(
        (status = 200, description = "Every account, oldest first", body = Vec<countersign_api::AdminUser>),
        (status = 403, description = "Not an administrator", body = countersign_api::ErrorBody),
    ),
)]
pub async fn list_users(
    State(state): State<AppState>,
    Admin(_): Admin,
) -> Result<axum::Json<Vec<AdminUser>>, ApiError> {
    Ok(axum::Json(admin::users(&state.db).await?))
}

/// `PATCH /api/admin/users/{id}` `{disabled?, is_admin?}` → the account.
#[utoipa::path(
    patch,
    path = "/admin/users/{id}",
    tag = "admin",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    request_body = countersign_api::AdminUserUpdate,
    responses(
        (status = 200, description = "The account as changed (disabled: signed out everywhere, its waiting calls denied, its turns stopped)", body = countersign_api::AdminUser),
        (status = 403, description = "Not an administrator; `mfa_required`: this session needs a recent two-factor step-up (`POST /api/auth/mfa/step-up`), then the same request again; `mfa_enrolment_required`: the deployment or the admin policy requires two-factor sign-in and the account has none", body = countersign_api::ErrorBody),
        (status = 404, description = "No such account", body = countersign_api::ErrorBody),
        (status = 409, description = "`last_admin`: the change would leave no active administrator", body = countersign_api::ErrorBody),
    ),
)]
pub async fn update_user(
    State(state): State<AppState>,
    Admin(user): Admin,
    Path(id): Path<Uuid>,
    Json(req): Json<AdminUserUpdate>,
) -> Result<axum::Json<AdminUser>, ApiError> {
    super::mfa::require_step_up(&state, &user).await?;
    let done = admin::update_user(
        &state.db,
        Actor::Admin(user.user_id.into()),
        id.into(),
        Change {
            disabled: req.disabled,
            is_admin: req.is_admin,
            is_approver: req.is_approver,
        },
    )
    .await?;
    // Turns this instance runs stop now; others' at their next NOTIFY.
    for turn in &done.turns_stopped {
        state.hub.cancel_local(*turn);
    }
    admin::user(&state.db, id.into())
        .await?
        .map(axum::Json)
        .ok_or_else(|| AdminError::NotFound.into())
}

/// `GET /api/admin/overview`: accounts, connectors, waiting calls and
/// running turns of the whole instance.
#[utoipa::path(
    get,
    path = "/admin/overview",
    tag = "admin",
    responses(
        (status = 200, description = "Accounts, connectors, waiting calls and running turns", body = countersign_api::AdminOverview),
        (status = 403, description = "Not an administrator", body = countersign_api::ErrorBody),
    ),
)]
pub async fn overview(
    State(state): State<AppState>,
    Admin(_): Admin,
) -> Result<axum::Json<AdminOverview>, ApiError> {
    Ok(axum::Json(admin::overview(&state.db).await?))
}
