//! The second approver (docs/design.md §6.3): a call the admin policy's
//! `require_second_approval` covers waits, after its requester's approve
//! ([`super::decide`] writes `awaiting_second`), for an approver — an
//! administrator or an account marked approver — who is not the
//! requester. The approver sees it in their inbox ([`inbox`]: the card,
//! its provenance and destinations, who asked; never the rest of the
//! chat) and decides it with [`decide`]: one conditional UPDATE on id +
//! `awaiting_second` + unexpired + matching digest + another account, so
//! the requester can never be their own second approver, whichever of
//! their sessions asks. The requester's turn waits as for any card (one
//! TTL covers both decisions) and runs the call only through
//! [`super::run_approved`].
//!
//! Both decisions are in the activity chain: [`requested`] appends the
//! requester's (`first_approval`), the turn's `decided` entry names the
//! approver (`second_approver`).

use super::DecideError;
use crate::{
    AppState, audit, db, events,
    ids::{ChatId, ConnectorId, PendingCallId, TurnId, UserId},
    metrics::Decided,
};
use countersign_api::{
    ActivityDecision, ActivityKind, ActivityOutcome, ChatEvent, GrantKind, PendingCallStatus,
    Provenance, SecondApproval,
};
use sqlx::types::Json;
use time::format_description::well_known::Rfc3339;

/// Why an approver's decision was not taken.
#[derive(Debug, thiserror::Error)]
pub enum SecondError {
    /// As any decision's: unknown, already decided, expired, another
    /// digest.
    #[error(transparent)]
    Decide(#[from] DecideError),
    /// The approver asked for this call: another approver must decide.
    #[error("own_call")]
    OwnCall,
}

impl From<sqlx::Error> for SecondError {
    fn from(err: sqlx::Error) -> Self {
        Self::Decide(DecideError::Database(err))
    }
}

/// Whether `user` may give a second approval: an administrator or an
/// account marked approver, not disabled.
pub async fn is_approver(state: &AppState, user: UserId) -> Result<bool, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let yes = sqlx::query_scalar!(
        r#"select (is_admin or is_approver) and disabled_at is null as "yes!"
             from users where id = $1"#,
        user as UserId,
    )
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(yes.unwrap_or(false))
}

/// The calls waiting for a second approval that `approver` may give
/// (every account's but their own), oldest first.
pub async fn inbox(state: &AppState, approver: UserId) -> Result<Vec<SecondApproval>, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let rows = sqlx::query!(
        r#"select p.id, u.email, p.requester_approved_at as "requester_approved_at!",
                  p.connector_name, p.tool_name, p.arguments, p.arguments_digest, p.destination,
                  p.reason, p.expires_at,
                  extract(epoch from p.expires_at - now())::float8 as "left!",
                  p.provenance as "provenance: Json<Provenance>"
             from mcp_pending_calls p
             join users u on u.id = p.user_id
            where p.status = 'awaiting_second' and p.expires_at > now() and p.user_id <> $1
            order by p.created_at
            limit 200"#,
        approver as UserId,
    )
    .fetch_all(&mut *tx)
    .await?;
    db::end_read(tx);
    let rfc3339 = |at: time::OffsetDateTime| at.format(&Rfc3339).unwrap_or_default();
    Ok(rows
        .into_iter()
        .map(|r| SecondApproval {
            id: r.id.to_string(),
            requester_email: r.email,
            requester_approved_at: rfc3339(r.requester_approved_at),
            connector_name: r.connector_name,
            tool_name: r.tool_name,
            arguments_json: serde_json::to_string_pretty(&r.arguments).unwrap_or_default(),
            character_warnings: crate::characters::warnings(&r.arguments),
            destinations: crate::destinations::destinations(&r.arguments),
            arguments: r.arguments,
            arguments_digest: r.arguments_digest,
            destination: r.destination,
            reason: r.reason,
            expires_at: rfc3339(r.expires_at),
            expires_in_secs: r.left.max(0.0),
            provenance: r.provenance.map(|p| p.0),
        })
        .collect())
}

/// `approver` decides call `id`: `awaiting_second → approved | denied`,
/// one conditional UPDATE (and its NOTIFY, which wakes the requester's
/// turn on whichever instance runs it). When it changes no row, a read
/// (which decides nothing) says why.
pub async fn decide(
    state: &AppState,
    approver: UserId,
    id: PendingCallId,
    approve: bool,
    arguments_digest: &str,
    reason: Option<&str>,
) -> Result<PendingCallStatus, SecondError> {
    let status = if approve {
        PendingCallStatus::Approved
    } else {
        PendingCallStatus::Denied
    };
    let reason = reason.filter(|_| !approve);
    let mut tx = db::service_tx(&state.db).await?;
    let decided = sqlx::query_scalar!(
        r#"update mcp_pending_calls
              set status = $4, decided_at = now(), second_approver_id = $2,
                  second_approver_email = (select email from users where id = $2),
                  second_decided_at = now(), decline_reason = $5
            where id = $1 and status = 'awaiting_second' and expires_at > now()
              and user_id <> $2 and arguments_digest = $3
        returning id"#,
        id as PendingCallId,
        approver as UserId,
        arguments_digest,
        status.as_str(),
        reason,
    )
    .fetch_optional(&mut *tx)
    .await?;
    if decided.is_some() {
        events::notify_decided(&mut tx, id).await?;
        tx.commit().await?;
        if state.config.approval_notify {
            state.watcher.settle(id, status);
        }
        state.metrics.decided(if approve {
            Decided::Approved
        } else {
            Decided::Denied
        });
        return Ok(status);
    }
    let why = sqlx::query!(
        r#"select status as "status: PendingCallStatus", expires_at <= now() as "late!",
                  arguments_digest = $2 as "same!", user_id = $3 as "own!"
             from mcp_pending_calls where id = $1"#,
        id as PendingCallId,
        arguments_digest,
        approver as UserId,
    )
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    use PendingCallStatus::{AwaitingSecond, Expired};
    Err(match why.map(|r| (r.status, r.late, r.same, r.own)) {
        Some((AwaitingSecond, _, _, true)) => SecondError::OwnCall,
        Some((Expired, ..)) | Some((AwaitingSecond, true, ..)) => DecideError::Expired.into(),
        Some((AwaitingSecond, false, false, false)) => DecideError::DigestMismatch.into(),
        _ => DecideError::NotFound.into(),
    })
}

/// After the requester's approve moved `id` to `awaiting_second`: the
/// chain's `first_approval` entry, the chat's
/// `mcp_second_approval_required` (every tab's card says what it waits
/// for), and an e-mail to each approver when SMTP is set. Best effort:
/// the decision stands, and the approver's decision is recorded on its
/// own.
pub async fn requested(state: &AppState, id: PendingCallId) {
    if let Err(err) = Box::pin(announce(state, id)).await {
        tracing::error!(error = %err, pending.id = %id, "cannot announce a second approval");
    }
}

async fn announce(state: &AppState, id: PendingCallId) -> Result<(), sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let row = sqlx::query!(
        r#"select p.user_id as "user_id: UserId", p.chat_id as "chat_id: ChatId",
                  p.turn_id as "turn_id: TurnId", p.connector_id as "connector_id: ConnectorId",
                  p.connector_name, p.tool_name, p.arguments, p.arguments_digest,
                  p.provenance as "provenance: Json<Provenance>", u.email
             from mcp_pending_calls p join users u on u.id = p.user_id
            where p.id = $1 and p.status = 'awaiting_second'"#,
        id as PendingCallId,
    )
    .fetch_optional(&mut *tx)
    .await?;
    let approvers = match &row {
        Some(r) => {
            sqlx::query_scalar!(
                "select email from users
              where (is_admin or is_approver) and disabled_at is null and id <> $1
              order by created_at limit 50",
                r.user_id as UserId,
            )
            .fetch_all(&mut *tx)
            .await?
        }
        None => Vec::new(),
    };
    tx.commit().await?;
    let Some(row) = row else {
        return Ok(());
    };
    let call_ref = id.to_string();
    let evidence = audit::Evidence::of(
        crate::destinations::destinations(&row.arguments),
        row.provenance.as_ref().map(|p| &p.0),
    );
    audit::append(
        &state.db,
        &audit::Entry {
            user_id: row.user_id,
            chat_id: row.chat_id,
            turn_id: row.turn_id,
            call_ref: &call_ref,
            kind: ActivityKind::FirstApproval,
            connector_id: row.connector_id,
            connector_name: &row.connector_name,
            tool_name: &row.tool_name,
            arguments_digest: &row.arguments_digest,
            decision: Some(ActivityDecision::Approved),
            grant: Some(GrantKind::Once),
            outcome: ActivityOutcome::NotRun,
            error: None,
            duration_ms: None,
            evidence: &evidence,
        },
    )
    .await?;
    events::append_alone(
        &state.db,
        row.user_id,
        row.chat_id,
        Some(row.turn_id),
        &ChatEvent::McpSecondApprovalRequired {
            turn_id: row.turn_id.to_string(),
            id: call_ref,
        },
    )
    .await?;
    if let Some(mailer) = state.mailer.clone() {
        let inbox_url = state
            .config
            .public_url
            .as_deref()
            .map(|url| format!("{}/approvals", url.trim_end_matches('/')));
        let (subject, body) = crate::mail::second_approval_notice(
            &row.email,
            &row.connector_name,
            &row.tool_name,
            inbox_url.as_deref(),
        );
        // Mail goes out on its own: a slow relay never holds the answer.
        tokio::spawn(async move {
            for to in approvers {
                if let Err(err) = mailer.send(&to, &subject, body.clone()).await {
                    tracing::warn!(error = %err, "cannot e-mail an approver");
                }
            }
        });
    }
    Ok(())
}
