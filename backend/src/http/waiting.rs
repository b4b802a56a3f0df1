//! `GET /api/waiting`: what waits for the caller across chats, in short —
//! live approvals, input requests and result reviews, soonest deadline
//! first (DESIGN §9: a waiting card is never lost). The web app reads it
//! every few seconds for the chat list's badges, the tab title and Home;
//! each row's whole body stays with its own endpoint.

use super::{error::ApiError, extract::CurrentUser};
use crate::{AppState, approvals, inputs, results};
use axum::extract::State;
use countersign_api::{WaitingItem, WaitingKind};

/// `GET /api/waiting`.
#[utoipa::path(
    get,
    path = "/waiting",
    tag = "approvals",
    responses(
        (status = 200, description = "What waits for the caller, soonest deadline first", body = Vec<countersign_api::WaitingItem>),
    ),
)]
pub async fn list_waiting(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<axum::Json<Vec<WaitingItem>>, ApiError> {
    let user_id = user.user_id.into();
    let calls = approvals::live_for_user(&state, user_id).await?;
    let questions = inputs::live_for_user(&state, user_id).await?;
    let reviews = results::live_for_user(&state, user_id, None).await?;

    let mut items: Vec<WaitingItem> = calls
        .iter()
        .map(|(row, left, to_decide)| {
            let call = row.to_api(*left, *to_decide);
            WaitingItem {
                kind: WaitingKind::Approval,
                id: call.id,
                chat_id: call.chat_id,
                connector_name: call.connector_name,
                tool_name: call.tool_name,
                decide_by: call.decide_by,
                decide_in_secs: call.decide_in_secs,
            }
        })
        .chain(questions.iter().map(|(row, left)| {
            let question = row.to_api(*left);
            WaitingItem {
                kind: WaitingKind::Input,
                id: question.id,
                chat_id: question.chat_id,
                connector_name: question.connector_name,
                tool_name: question.tool_name,
                decide_by: question.decide_by,
                decide_in_secs: question.decide_in_secs,
            }
        }))
        .chain(reviews.iter().map(|(row, left)| {
            let review = row.to_api(*left);
            WaitingItem {
                kind: WaitingKind::Review,
                id: review.id,
                chat_id: review.chat_id,
                connector_name: review.connector_name,
                tool_name: review.tool_name,
                decide_by: review.decide_by,
                decide_in_secs: review.decide_in_secs,
            }
        }))
        .filter(|item| item.decide_in_secs > 0.0)
        .collect();
    items.sort_by(|a, b| a.decide_in_secs.total_cmp(&b.decide_in_secs));
    Ok(axum::Json(items))
}
