//! Liveness and readiness probes.

use super::error::ApiError;
use crate::AppState;
use axum::{Json, extract::State};
use serde_json::{Value, json};

/// `GET /healthz`: the process answers.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "health",
    responses(
        (status = 200, description = "`{\"status\":\"ok\"}`: the process answers"),
    ),
)]
pub async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// `GET /readyz`: the database answers too, and this instance's `LISTEN`
/// connection is up, so decisions taken on other instances wake its turns
/// (503 otherwise).
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "health",
    responses(
        (status = 200, description = "`{\"status\":\"ready\"}`: the database answers too"),
        (status = 503, description = "The database is not reachable, or this instance's LISTEN connection is down (reconnecting)", body = countersign_api::ErrorBody),
    ),
)]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    match sqlx::query_scalar!(r#"select 1 as "one""#)
        .fetch_one(&state.db)
        .await
    {
        Ok(_) if state.hub.listening() => Ok(Json(json!({ "status": "ready" }))),
        Ok(_) => {
            tracing::warn!("readiness check failed: the event listener is reconnecting");
            Err(ApiError::Unavailable(
                "Not listening for events yet: the LISTEN connection is reconnecting.".to_owned(),
            ))
        }
        Err(err) => {
            tracing::warn!(error = %err, "readiness check failed");
            Err(ApiError::Unavailable(
                "The database is not reachable.".to_owned(),
            ))
        }
    }
}
