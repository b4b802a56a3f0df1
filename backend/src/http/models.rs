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
pub async fn list_models(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> axum::Json<ModelsResponse> {
    axum::Json(ModelsResponse {
        models: models::available(&state, user.user_id).await,
    })
}

/// `GET /api/settings/provider-keys`.
pub async fn list_provider_keys(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<axum::Json<Vec<ProviderKeyStatus>>, ApiError> {
    Ok(axum::Json(models::key_status(&state, user.user_id).await?))
}

/// `PUT /api/settings/provider-keys/{provider}` → 204.
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
pub async fn delete_provider_key(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(provider): Path<String>,
) -> Result<StatusCode, ApiError> {
    super::mfa::require_step_up(&state, &user).await?;
    models::delete_key(&state, user.user_id, &provider).await?;
    Ok(StatusCode::NO_CONTENT)
}
