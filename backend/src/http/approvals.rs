//! `/api/mcp-pending-calls…`: the caller's live approvals and the decision
//! (DESIGN §6). The decision is one conditional UPDATE in
//! [`crate::approvals::decide`]; this module only maps its answers:
//! 200, 404 (unknown, another user's, already decided), 410 (expired),
//! 409 (digest mismatch, nothing decided), 422 (a grant not offered yet).

use super::{
    error::ApiError,
    extract::{CurrentUser, Json, Path},
};
use crate::{
    AppState,
    approvals::{self, DecideError, Verdict},
};
use axum::extract::State;
use countersign_api::{DecideRequest, DecideResponse, PendingCall};
use uuid::Uuid;

impl From<DecideError> for ApiError {
    fn from(err: DecideError) -> Self {
        let message = err.to_string();
        match err {
            DecideError::NotFound => Self::NotFound(message),
            DecideError::Expired => Self::Gone(message),
            DecideError::DigestMismatch => Self::Conflict(message),
            DecideError::Database(e) => e.into(),
        }
    }
}

/// `GET /api/mcp-pending-calls`: the caller's calls waiting for a decision.
pub async fn list_pending(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<axum::Json<Vec<PendingCall>>, ApiError> {
    let rows = approvals::live_for_user(&state, user.user_id).await?;
    Ok(axum::Json(
        rows.iter().map(|(row, left)| row.to_api(*left)).collect(),
    ))
}

/// `POST /api/mcp-pending-calls/{id}`.
pub async fn decide(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
    Json(req): Json<DecideRequest>,
) -> Result<axum::Json<DecideResponse>, ApiError> {
    let verdict = match req.decision.as_str() {
        "approve" => Verdict::Approve,
        "deny" => Verdict::Deny,
        _ => {
            return Err(ApiError::Unprocessable(
                "decision must be \"approve\" or \"deny\".".into(),
            ));
        }
    };
    let grant = req.grant.as_deref().unwrap_or("once");
    match grant {
        "once" => {}
        "turn" | "always" => {
            return Err(ApiError::Unprocessable(format!(
                "grant \"{grant}\" is not available yet: use \"once\"."
            )));
        }
        _ => {
            return Err(ApiError::Unprocessable(
                "grant must be \"once\", \"turn\" or \"always\".".into(),
            ));
        }
    }
    let digest = req.arguments_digest.trim();
    if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ApiError::Unprocessable(
            "arguments_digest must be the 64 hex digits shown with the call.".into(),
        ));
    }
    let status = approvals::decide(
        &state,
        user.user_id,
        id,
        verdict,
        grant,
        &digest.to_ascii_lowercase(),
    )
    .await?;
    Ok(axum::Json(DecideResponse {
        status: status.to_owned(),
    }))
}
