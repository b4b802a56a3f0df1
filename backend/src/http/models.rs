//! `GET /api/models` and the user's provider keys under
//! `/api/settings/provider-keys`. Keys are write-only: the API tells only
//! whether one is set.

use super::{
    error::ApiError,
    extract::{CurrentUser, Json, Path},
};
use crate::{AppState, models};
use axum::{extract::State, http::StatusCode};
use countersign_api::{ModelsResponse, ProviderKeyStatus, SetProviderKeyRequest};

/// `GET /api/models`: what the caller can use now.
#[utoipa::path(
    get,
    path = "/models",
    tag = "models",
    responses(
        (status = 200, description = "The models the caller can use now", body = countersign_api::ModelsResponse),
    ),
)]
pub async fn list_models(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> axum::Json<ModelsResponse> {
    axum::Json(ModelsResponse {
        models: models::available(&state, user.user_id).await,
    })
}

/// `GET /api/settings/provider-keys`.
#[utoipa::path(
    get,
    path = "/settings/provider-keys",
    tag = "models",
    responses(
        (status = 200, description = "Which providers have a key (never the key)", body = Vec<countersign_api::ProviderKeyStatus>),
    ),
)]
pub async fn list_provider_keys(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<axum::Json<Vec<ProviderKeyStatus>>, ApiError> {
    Ok(axum::Json(models::key_status(&state, user.user_id).await?))
}

/// `PUT /api/settings/provider-keys/{provider}` → 204.
#[utoipa::path(
    put,
    path = "/settings/provider-keys/{provider}",
    tag = "models",
    params(
        ("provider" = String, Path, description = "`anthropic` or `openai`"),
    ),
    request_body = countersign_api::SetProviderKeyRequest,
    responses(
        (status = 204, description = "Stored, sealed"),
        (status = 403, description = "`mfa_required`: this session needs a recent two-factor step-up (`POST /api/auth/mfa/step-up`), then the same request again; `mfa_enrolment_required`: the deployment or the admin policy requires two-factor sign-in and the account has none", body = countersign_api::ErrorBody),
        (status = 404, description = "An unknown provider", body = countersign_api::ErrorBody),
        (status = 422, description = "A key of the wrong shape", body = countersign_api::ErrorBody),
        (status = 503, description = "The server has no secret key to seal it with", body = countersign_api::ErrorBody),
    ),
)]
pub async fn set_provider_key(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(provider): Path<String>,
    Json(req): Json<SetProviderKeyRequest>,
) -> Result<StatusCode, ApiError> {
    super::mfa::require_step_up(&state, &user).await?;
    models::set_key(&state, user.user_id, &provider, &req.api_key).await?;
    tracing::info!(user.id = %user.user_id, provider, "provider key stored");
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE /api/settings/provider-keys/{provider}` → 204.
#[utoipa::path(
    delete,
    path = "/settings/provider-keys/{provider}",
    tag = "models",
    params(
        ("provider" = String, Path, description = "`anthropic` or `openai`"),
    ),
    responses(
        (status = 204, description = "Forgotten"),
        (status = 404, description = "An unknown provider", body = countersign_api::ErrorBody),
    ),
)]
pub async fn delete_provider_key(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(provider): Path<String>,
) -> Result<StatusCode, ApiError> {
    super::mfa::require_step_up(&state, &user).await?;
    models::delete_key(&state, user.user_id, &provider).await?;
    Ok(StatusCode::NO_CONTENT)
}
