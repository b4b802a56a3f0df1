//! `/api/mcp-pending-calls…` and `/api/grants…`: the caller's live
//! approvals and the decision
//! (DESIGN §6). The decision is one conditional UPDATE in
//! [`crate::approvals::decide`]; this module only maps its answers:
//! 200, 404 (unknown, another user's, already decided), 410 (expired),
//! 409 (digest mismatch, nothing decided), 403 `grant_not_offered` (a
//! grant the card does not offer), 403 `forbidden_by_policy` ("Always
//! allow" while the admin policy forbids it), 422 (malformed).

use super::{
    error::{ApiError, FORBIDDEN_BY_POLICY},
    extract::{CurrentUser, Json, Path},
};
use crate::{
    AppState,
    approvals::{self, DecideError, Verdict},
    db,
};
use axum::{extract::State, http::StatusCode};
use countersign_api::approvals::MAX_DECLINE_REASON_CHARS;
use countersign_api::{
    DecideRequest, DecideResponse, Decision, Grant, GrantKind, PendingCall, PendingCallStatus,
};
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

impl From<DecideError> for ApiError {
    fn from(err: DecideError) -> Self {
        let message = err.to_string();
        match err {
            DecideError::NotFound => Self::NotFound(message),
            DecideError::Expired => Self::Gone(message),
            DecideError::DigestMismatch => Self::Conflict(message),
            // 403 `{"detail":"grant_not_offered"}`: the card offered only
            // "Allow once" (the tool changed since it was reviewed).
            DecideError::GrantNotOffered => Self::Forbidden(message),
            DecideError::Database(e) => e.into(),
        }
    }
}

/// `GET /api/mcp-pending-calls`: the caller's calls waiting for a decision.
#[utoipa::path(
    get,
    path = "/mcp-pending-calls",
    tag = "approvals",
    responses(
        (status = 200, description = "The caller's calls waiting for a decision, oldest first", body = Vec<countersign_api::PendingCall>),
    ),
)]
pub async fn list_pending(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<axum::Json<Vec<PendingCall>>, ApiError> {
    let rows = approvals::live_for_user(&state, user.user_id.into()).await?;
    Ok(axum::Json(
        rows.iter()
            .map(|(row, left, to_decide)| row.to_api(*left, *to_decide))
            .collect(),
    ))
}

/// `POST /api/mcp-pending-calls/{id}`.
#[utoipa::path(
    post,
    path = "/mcp-pending-calls/{id}",
    tag = "approvals",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    request_body = countersign_api::DecideRequest,
    responses(
        (status = 200, description = "Decided (one conditional update: exactly one decision wins); with `edited_arguments`, approved once with those arguments, signed anew, and their digest answered", body = countersign_api::DecideResponse),
        (status = 403, description = "`grant_not_offered`: the card does not offer this grant; `forbidden_by_policy`: the admin policy forbids it (\"Always allow\"); `mfa_required`: this session needs a recent two-factor step-up (`POST /api/auth/mfa/step-up`), then the same request again; `mfa_enrolment_required`: the deployment or the admin policy requires two-factor sign-in and the account has none (\"Always allow\" needs a step-up)", body = countersign_api::ErrorBody),
        (status = 404, description = "Not the caller's, unknown, or already decided", body = countersign_api::ErrorBody),
        (status = 409, description = "The arguments digest is not the one shown; nothing was decided", body = countersign_api::ErrorBody),
        (status = 410, description = "Expired: nobody decided in time", body = countersign_api::ErrorBody),
        (status = 422, description = "A malformed decision, grant or digest; a `reason` with an approve; `edited_arguments` with a deny or a grant other than `once`, not a JSON object, not valid against the tool's reviewed input schema (the first failure named), or holding a number that cannot be carried exactly — nothing was decided", body = countersign_api::ErrorBody),
    ),
)]
pub async fn decide(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
    Json(req): Json<DecideRequest>,
) -> Result<axum::Json<DecideResponse>, ApiError> {
    let verdict = match req.decision {
        Decision::Approve => Verdict::Approve,
        Decision::Deny => Verdict::Deny,
        Decision::Unknown => {
            return Err(ApiError::Unprocessable(
                "decision must be \"approve\" or \"deny\".".into(),
            ));
        }
    };
    let grant = req.grant.unwrap_or(GrantKind::Once);
    if grant == GrantKind::Unknown {
        return Err(ApiError::Unprocessable(
            "grant must be \"once\", \"turn\" or \"always\".".into(),
        ));
    }
    if verdict == Verdict::Approve && grant == GrantKind::Always {
        // The policy as it is now, not as it was when the card was shown.
        if crate::policy::current(&state.db).await?.forbid_always_allow {
            return Err(ApiError::Forbidden(FORBIDDEN_BY_POLICY.into()));
        }
        // An always-rule needs a recent step-up.
        super::mfa::require_step_up(&state, &user).await?;
    }
    let digest = req.arguments_digest.trim();
    if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ApiError::Unprocessable(
            "arguments_digest must be the 64 hex digits shown with the call.".into(),
        ));
    }
    // "Decline and tell the assistant why": the user's words, bounded.
    let reason = req
        .reason
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty());
    if let Some(reason) = reason {
        if verdict != Verdict::Deny {
            return Err(ApiError::Unprocessable(
                "reason goes with a deny: it tells the assistant why.".into(),
            ));
        }
        if reason.chars().count() > MAX_DECLINE_REASON_CHARS {
            return Err(ApiError::Unprocessable(format!(
                "reason is at most {MAX_DECLINE_REASON_CHARS} characters."
            )));
        }
    }
    let digest = digest.to_ascii_lowercase();
    // "Edit and allow": the user's own arguments, once.
    if let Some(edited) = &req.edited_arguments {
        if verdict != Verdict::Approve {
            return Err(ApiError::Unprocessable(
                "edited_arguments go with an approve.".into(),
            ));
        }
        if grant != GrantKind::Once {
            return Err(ApiError::Unprocessable(
                "An edited call is allowed once: grant must be \"once\".".into(),
            ));
        }
        let edited =
            approvals::approve_edited(&state, user.user_id.into(), id.into(), &digest, edited)
                .await
                .map_err(|err| match err {
                    approvals::EditError::Decide(err) => ApiError::from(err),
                    approvals::EditError::Invalid(why) => ApiError::Unprocessable(why),
                })?;
        if edited.status == PendingCallStatus::AwaitingSecond {
            approvals::second::requested(&state, id.into()).await;
        }
        return Ok(axum::Json(DecideResponse {
            status: edited.status,
            arguments_digest: Some(edited.arguments_digest),
        }));
    }
    let status = approvals::decide(
        &state,
        user.user_id.into(),
        id.into(),
        verdict,
        grant,
        &digest,
        reason,
    )
    .await?;
    if status == PendingCallStatus::AwaitingSecond {
        approvals::second::requested(&state, id.into()).await;
    }
    Ok(axum::Json(DecideResponse {
        status,
        arguments_digest: None,
    }))
}

/// `GET /api/grants`: the caller's always-allow rules, each marked
/// suspended when its tool changed since (or is gone), or while the
/// policy forbids "Always allow".
#[utoipa::path(
    get,
    path = "/grants",
    tag = "approvals",
    responses(
        (status = 200, description = "The caller's always-allow rules, each marked suspended when the tool changed or the policy forbids them", body = Vec<countersign_api::Grant>),
    ),
)]
pub async fn list_grants(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<axum::Json<Vec<Grant>>, ApiError> {
    let by_policy = crate::policy::current(&state.db).await?.forbid_always_allow;
    let mut tx = db::user_tx(&state.db, user.user_id).await?;
    let rows = sqlx::query!(
        r#"select g.id, g.connector_id, c.name as connector_name, g.tool_name,
                  g.descriptor_digest,
                  coalesce(t.removed or t.descriptor_digest <> g.descriptor_digest, true)
                    as "suspended!",
                  g.created_at
             from tool_grants g
             join connectors c on c.id = g.connector_id
             left join connector_tools t
               on t.connector_id = g.connector_id and t.name = g.tool_name
            order by c.name, g.tool_name"#,
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(axum::Json(
        rows.into_iter()
            .map(|r| Grant {
                id: r.id.to_string(),
                connector_id: r.connector_id.to_string(),
                connector_name: r.connector_name,
                tool_name: r.tool_name,
                descriptor_digest: r.descriptor_digest,
                suspended: r.suspended || by_policy,
                suspended_by_policy: by_policy,
                created_at: r.created_at.format(&Rfc3339).unwrap_or_default(),
            })
            .collect(),
    ))
}

/// `DELETE /api/grants/{id}`: revokes one of the caller's rules (204), 404
/// for anything else.
#[utoipa::path(
    delete,
    path = "/grants/{id}",
    tag = "approvals",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    responses(
        (status = 204, description = "Revoked: the tool's next call asks"),
        (status = 404, description = "No such rule of the caller", body = countersign_api::ErrorBody),
    ),
)]
pub async fn delete_grant(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    let mut tx = db::user_tx(&state.db, user.user_id).await?;
    let deleted = sqlx::query!("delete from tool_grants where id = $1", id,)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    if deleted.rows_affected() == 0 {
        return Err(ApiError::NotFound("No such rule.".into()));
    }
    tracing::info!(grant.id = %id, "always-allow rule revoked");
    Ok(StatusCode::NO_CONTENT)
}

/// `not_an_approver`: only administrators and accounts marked approver
/// give second approvals.
pub const NOT_AN_APPROVER: &str = "not_an_approver";

/// `own_call`: the requester cannot be their own second approver.
pub const OWN_CALL: &str = "own_call";

impl From<approvals::second::SecondError> for ApiError {
    fn from(err: approvals::second::SecondError) -> Self {
        match err {
            approvals::second::SecondError::Decide(err) => err.into(),
            approvals::second::SecondError::OwnCall => Self::Forbidden(OWN_CALL.into()),
        }
    }
}

#[utoipa::path(
    get,
    path = "/approvals/inbox",
    tag = "approvals",
    responses(
        (status = 200, description = "Calls of other accounts waiting for the caller's second approval, oldest first", body = Vec<countersign_api::SecondApproval>),
        (status = 403, description = "`not_an_approver`: the caller is neither an administrator nor an approver", body = countersign_api::ErrorBody),
    ),
)]
pub async fn list_inbox(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<axum::Json<Vec<countersign_api::SecondApproval>>, ApiError> {
    if !approvals::second::is_approver(&state, user.user_id.into()).await? {
        return Err(ApiError::Forbidden(NOT_AN_APPROVER.into()));
    }
    Ok(axum::Json(
        approvals::second::inbox(&state, user.user_id.into()).await?,
    ))
}

#[utoipa::path(
    post,
    path = "/approvals/inbox/{id}",
    tag = "approvals",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    request_body = countersign_api::SecondDecideRequest,
    responses(
        (status = 200, description = "Decided: `approved` (the requester's turn runs it) or `denied`", body = countersign_api::DecideResponse),
        (status = 403, description = "`not_an_approver`; `own_call`: the caller asked for this call, so another approver must decide; `mfa_required`: a recent two-factor step-up is needed first; `mfa_enrolment_required`", body = countersign_api::ErrorBody),
        (status = 404, description = "Unknown, or not waiting for a second approval (already decided)", body = countersign_api::ErrorBody),
        (status = 409, description = "The arguments digest is not the one shown; nothing was decided", body = countersign_api::ErrorBody),
        (status = 410, description = "Expired: nobody decided in time", body = countersign_api::ErrorBody),
        (status = 422, description = "A malformed decision or digest, or a reason with an approve", body = countersign_api::ErrorBody),
    ),
)]
pub async fn decide_second(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
    Json(req): Json<countersign_api::SecondDecideRequest>,
) -> Result<axum::Json<DecideResponse>, ApiError> {
    let approve = match req.decision {
        Decision::Approve => true,
        Decision::Deny => false,
        Decision::Unknown => {
            return Err(ApiError::Unprocessable(
                "decision must be \"approve\" or \"deny\".".into(),
            ));
        }
    };
    let digest = req.arguments_digest.trim();
    if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ApiError::Unprocessable(
            "arguments_digest must be the 64 hex digits shown with the call.".into(),
        ));
    }
    let reason = req
        .reason
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty());
    if let Some(reason) = reason {
        if approve {
            return Err(ApiError::Unprocessable(
                "reason goes with a deny: it tells the requester's assistant why.".into(),
            ));
        }
        if reason.chars().count() > MAX_DECLINE_REASON_CHARS {
            return Err(ApiError::Unprocessable(format!(
                "reason is at most {MAX_DECLINE_REASON_CHARS} characters."
            )));
        }
    }
    if !approvals::second::is_approver(&state, user.user_id.into()).await? {
        return Err(ApiError::Forbidden(NOT_AN_APPROVER.into()));
    }
    // A stolen session without the second factor cannot approve.
    super::mfa::require_step_up(&state, &user).await?;
    let status = approvals::second::decide(
        &state,
        user.user_id.into(),
        id.into(),
        approve,
        &digest.to_ascii_lowercase(),
        reason,
    )
    .await?;
    Ok(axum::Json(DecideResponse {
        status,
        arguments_digest: None,
    }))
}
