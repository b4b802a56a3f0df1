//! `/api/mcp-input-requests…`: the caller's live input requests and the
//! answer (DESIGN §6a). The answer is one conditional UPDATE in
//! [`crate::inputs::answer`]; this module only maps its outcomes: 200,
//! 404 (unknown, another user's, already answered), 410 (expired), 422
//! (malformed, or content that does not fit the form — the detail names
//! the field).

use super::{
    error::ApiError,
    extract::{CurrentUser, Json, Path},
};
use crate::{
    AppState,
    inputs::{self, AnswerError},
};
use axum::extract::State;
use countersign_api::{InputAnswer, InputAnswered, InputRequest};
use uuid::Uuid;

impl From<AnswerError> for ApiError {
    fn from(err: AnswerError) -> Self {
        let message = err.to_string();
        match err {
            AnswerError::NotFound => Self::NotFound(message),
            AnswerError::Expired => Self::Gone(message),
            AnswerError::Invalid(_) => Self::Unprocessable(message),
            AnswerError::Database(e) => e.into(),
        }
    }
}

/// `GET /api/mcp-input-requests`: the caller's questions waiting for an
/// answer.
#[utoipa::path(
    get,
    path = "/mcp-input-requests",
    tag = "approvals",
    responses(
        (status = 200, description = "The caller's questions from servers waiting for an answer", body = Vec<countersign_api::InputRequest>),
    ),
)]
pub async fn list(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<axum::Json<Vec<InputRequest>>, ApiError> {
    let rows = inputs::live_for_user(&state, user.user_id.into()).await?;
    Ok(axum::Json(
        rows.iter().map(|(row, left)| row.to_api(*left)).collect(),
    ))
}

/// `POST /api/mcp-input-requests/{id}`.
#[utoipa::path(
    post,
    path = "/mcp-input-requests/{id}",
    tag = "approvals",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    request_body = countersign_api::InputAnswer,
    responses(
        (status = 200, description = "Answered", body = countersign_api::InputAnswered),
        (status = 404, description = "Not the caller's, unknown, or already answered", body = countersign_api::ErrorBody),
        (status = 410, description = "Its time is over", body = countersign_api::ErrorBody),
        (status = 422, description = "The content does not fit the requested schema (the detail names the field), or a malformed action", body = countersign_api::ErrorBody),
    ),
)]
pub async fn answer(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
    Json(req): Json<InputAnswer>,
) -> Result<axum::Json<InputAnswered>, ApiError> {
    let status = inputs::answer(&state, user.user_id.into(), id, req.action, req.content).await?;
    Ok(axum::Json(InputAnswered { status }))
}
