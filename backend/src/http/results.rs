//! `/api/mcp-pending-calls/{id}/result` and `/api/mcp-result-reviews`: a
//! tool's result the user reviews before the model reads it
//! (docs/design.md §6.5a). The decision is one conditional UPDATE in
//! [`crate::results::decide`]; this module only maps its outcomes: 200,
//! 404 (unknown, another user's, already decided), 410 (its time is over:
//! withheld), 422 (a malformed action or redaction).

use super::{
    error::ApiError,
    extract::{CurrentUser, Json, Path},
};
use crate::{
    AppState,
    results::{self, DecideError},
};
use axum::extract::State;
use countersign_api::{ResultDecided, ResultDecision, ResultReview};
use uuid::Uuid;

impl From<DecideError> for ApiError {
    fn from(err: DecideError) -> Self {
        let message = err.to_string();
        match err {
            DecideError::NotFound => Self::NotFound(message),
            DecideError::Expired => Self::Gone(message),
            DecideError::Invalid(_) => Self::Unprocessable(message),
            DecideError::Database(e) => e.into(),
        }
    }
}

/// `GET /api/mcp-result-reviews`: the caller's results waiting for review,
/// each with its text.
#[utoipa::path(
    get,
    path = "/mcp-result-reviews",
    tag = "approvals",
    responses(
        (status = 200, description = "The caller's tool results waiting for review", body = Vec<countersign_api::ResultReview>),
    ),
)]
pub async fn list_result_reviews(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<axum::Json<Vec<ResultReview>>, ApiError> {
    let rows = results::live_for_user(&state, user.user_id.into(), None).await?;
    Ok(axum::Json(
        rows.iter().map(|(row, left)| row.to_api(*left)).collect(),
    ))
}

/// `GET /api/mcp-pending-calls/{id}/result`: one result waiting for
/// review, with its whole text (404 once decided: the text is not kept).
#[utoipa::path(
    get,
    path = "/mcp-pending-calls/{id}/result",
    tag = "approvals",
    params(
        ("id" = Uuid, Path, description = "The review's id (`mcp_result_review_required.id`)."),
    ),
    responses(
        (status = 200, description = "The result, waiting for review", body = countersign_api::ResultReview),
        (status = 404, description = "Not the caller's, unknown, decided or expired", body = countersign_api::ErrorBody),
    ),
)]
pub async fn show_result(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
) -> Result<axum::Json<ResultReview>, ApiError> {
    let rows = results::live_for_user(&state, user.user_id.into(), Some(id)).await?;
    rows.first()
        .map(|(row, left)| axum::Json(row.to_api(*left)))
        .ok_or_else(|| ApiError::NotFound(DecideError::NotFound.to_string()))
}

/// `POST /api/mcp-pending-calls/{id}/result`.
#[utoipa::path(
    post,
    path = "/mcp-pending-calls/{id}/result",
    tag = "approvals",
    params(
        ("id" = Uuid, Path, description = "The review's id (`mcp_result_review_required.id`)."),
    ),
    request_body = countersign_api::ResultDecision,
    responses(
        (status = 200, description = "Decided", body = countersign_api::ResultDecided),
        (status = 404, description = "Not the caller's, unknown, or already decided", body = countersign_api::ErrorBody),
        (status = 410, description = "Its time is over: it was withheld", body = countersign_api::ErrorBody),
        (status = 422, description = "A malformed action, or redactions that are empty, outside the text, or sent without `redact`", body = countersign_api::ErrorBody),
    ),
)]
pub async fn decide_result(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
    Json(req): Json<ResultDecision>,
) -> Result<axum::Json<ResultDecided>, ApiError> {
    let status =
        results::decide(&state, user.user_id.into(), id, req.action, req.redactions).await?;
    Ok(axum::Json(ResultDecided { status }))
}
