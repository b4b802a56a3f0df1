//! Waiting for a decision without holding a connection: [`wait`] (a
//! decision, Stop, or expiry by conditional UPDATE that honours a decision
//! landing first), and the instance's one [`Watcher`], which reads the
//! statuses of every call its turns wait for, woken by `NOTIFY` from
//! whichever instance decided and polling as a fallback.

use crate::{AppState, db, ids::PendingCallId, metrics::Decided};
use countersign_api::PendingCallStatus;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};
use tokio::sync::watch;
use uuid::Uuid;

/// How a wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waited {
    /// Approved: claim and run it.
    Approved,
    /// Declined (the model is told; the server is never contacted).
    Denied,
    /// Nobody decided in time.
    Expired,
    /// The turn was stopped; the call was denied.
    Cancelled,
    /// The row is in a state no wait expects (recovered elsewhere), or
    /// gone (`None`: swept or deleted).
    Gone(Option<PendingCallStatus>),
}

impl Waited {
    fn from_status(status: PendingCallStatus) -> Option<Self> {
        match status {
            // Approved by the user, waiting for a second approver: still
            // a wait.
            PendingCallStatus::Pending | PendingCallStatus::AwaitingSecond => None,
            PendingCallStatus::Approved => Some(Self::Approved),
            PendingCallStatus::Denied => Some(Self::Denied),
            PendingCallStatus::Expired => Some(Self::Expired),
            other => Some(Self::Gone(Some(other))),
        }
    }
}

/// Test seams: code that runs at fixed points of the lifecycle, so tests
/// can land a decision exactly where a race would.
#[derive(Clone, Default)]
pub struct Hooks {
    /// Runs after the wait gave up and before the expiry UPDATE.
    pub before_expire: Option<Hook>,
    /// Runs when a decision was taken, before the chat is told of it
    /// (`mcp_confirmation_resolved`).
    pub before_resolved: Option<Hook>,
}

/// A test seam's code: given the pending call's id, runs to completion
/// before the lifecycle goes on.
pub type Hook = Arc<dyn Fn(Uuid) -> futures_util::future::BoxFuture<'static, ()> + Send + Sync>;

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("before_expire", &self.before_expire.is_some())
            .field("before_resolved", &self.before_resolved.is_some())
            .finish()
    }
}

/// Waits for the decision on `id`, at most `COUNTERSIGN_APPROVAL_WAIT_SECS`,
/// holding no database connection in between reads. A Stop denies the
/// call. At the end, expiry by conditional UPDATE: if it changes no row, a
/// decision won the race and is honoured.
pub async fn wait(
    state: &AppState,
    id: PendingCallId,
    cancel: &mut watch::Receiver<bool>,
) -> Result<Waited, sqlx::Error> {
    let deadline =
        tokio::time::Instant::now() + Duration::from_secs(state.config.approval_wait_secs);
    let mut decided = state.watcher.watch(state, id);
    let result = loop {
        if let Some(waited) = decided.borrow_and_update().and_then(Waited::from_status) {
            break Some(waited);
        }
        tokio::select! {
            changed = decided.changed() => {
                if changed.is_err() {
                    break None;
                }
            }
            () = tokio::time::sleep_until(deadline) => break None,
            _ = cancel.changed() => {
                state.watcher.forget(id);
                return Box::pin(cancel_one(state, id)).await;
            }
        }
    };
    state.watcher.forget(id);
    if let Some(waited) = result {
        return Ok(waited);
    }
    if let Some(hook) = &state.approval_hooks.before_expire {
        hook(id.into()).await;
    }
    // Boxed, like `cancel_one`: a waiting call's future (one per card, a
    // thousand at once) then holds only the wait itself.
    Box::pin(expire_or_honour(state, id)).await
}

/// `pending → expired`; when no row changes, a decision landed first:
/// re-read once and honour it.
pub async fn expire_or_honour(state: &AppState, id: PendingCallId) -> Result<Waited, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let expired = sqlx::query!(
        "update mcp_pending_calls set status = 'expired', decided_at = now()
          where id = $1 and status in ('pending', 'awaiting_second')",
        id as PendingCallId,
    )
    .execute(&mut *tx)
    .await?;
    if expired.rows_affected() == 1 {
        tx.commit().await?;
        state.metrics.decided(Decided::Expired);
        return Ok(Waited::Expired);
    }
    let status = sqlx::query_scalar!(
        r#"select status as "status: PendingCallStatus" from mcp_pending_calls where id = $1"#,
        id as PendingCallId,
    )
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(match status {
        Some(status) => {
            Waited::from_status(status).unwrap_or(Waited::Gone(Some(PendingCallStatus::Pending)))
        }
        None => Waited::Gone(None),
    })
}

/// A Stop while waiting: `pending → denied`; a decision that landed first
/// is honoured only if it was a denial (the turn is stopping: nothing runs).
async fn cancel_one(state: &AppState, id: PendingCallId) -> Result<Waited, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let cancelled = sqlx::query!(
        "update mcp_pending_calls set status = 'denied', decided_at = now(),
                error = 'The turn was stopped.'
          where id = $1 and status in ('pending', 'awaiting_second')",
        id as PendingCallId,
    )
    .execute(&mut *tx)
    .await?;
    // An approval that landed first is never claimed: it is spent unused.
    let spent = sqlx::query!(
        "update mcp_pending_calls set status = 'failed', executed_at = now(),
                error = 'The turn was stopped before it ran.'
          where id = $1 and status = 'approved'",
        id as PendingCallId,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    if cancelled.rows_affected() == 1 {
        state.metrics.decided(Decided::Cancelled);
    }
    // A decline that landed first stays the user's decline (its card says
    // who declined it, not that the reply was stopped).
    if cancelled.rows_affected() == 0 && spent.rows_affected() == 0 {
        return Ok(Waited::Denied);
    }
    Ok(Waited::Cancelled)
}

/// One per instance: the statuses of every call this instance's turns wait
/// for, read in one query per wake-up (a `NOTIFY` from [`crate::events::notify_decided`] from any
/// instance) or per poll interval, whichever comes first.
#[derive(Debug, Default)]
pub struct Watcher {
    waiting: Mutex<HashMap<PendingCallId, watch::Sender<Option<PendingCallStatus>>>>,
    started: OnceLock<()>,
}

impl Watcher {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<PendingCallId, watch::Sender<Option<PendingCallStatus>>>>
    {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts watching `id`; the receiver gets its status once it is no
    /// longer `pending`.
    pub fn watch(
        &self,
        state: &AppState,
        id: PendingCallId,
    ) -> watch::Receiver<Option<PendingCallStatus>> {
        self.started.get_or_init(|| {
            tokio::spawn(watch_loop(state.clone(), state.hub.subscribe_approvals()));
        });
        let (tx, rx) = watch::channel(None);
        self.lock().insert(id, tx);
        // Read once now: a decision may have landed before we listened.
        state.hub.wake_approvals();
        rx
    }

    /// Tells the turn waiting for `id` on this instance, if any, its
    /// status: one this instance committed (`decide`).
    pub(super) fn settle(&self, id: PendingCallId, status: PendingCallStatus) {
        if let Some(tx) = self.lock().get(&id) {
            tx.send_replace(Some(status));
        }
    }

    /// Stops watching `id`.
    pub fn forget(&self, id: PendingCallId) {
        self.lock().remove(&id);
    }

    /// How many calls this instance waits for.
    pub fn waiting(&self) -> usize {
        self.lock().len()
    }
}

async fn watch_loop(state: AppState, mut wake: tokio::sync::broadcast::Receiver<bool>) {
    let poll = Duration::from_millis(state.config.approval_poll_ms.max(10));
    let notify = state.config.approval_notify;
    loop {
        tokio::select! {
            () = tokio::time::sleep(poll) => {}
            woken = wake.recv() => match woken {
                // Poll-only mode (a benchmark's baseline) ignores NOTIFY.
                Ok(true) if !notify => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                _ => {}
            },
        }
        // Only the calls whose status this instance does not know yet: a
        // decision taken here was told at once (`settle`), and its NOTIFY,
        // which comes back here too, needs no read.
        let ids: Vec<PendingCallId> = state
            .watcher
            .lock()
            .iter()
            .filter(|(_, status)| status.borrow().is_none())
            .map(|(id, _)| *id)
            .collect();
        if !ids.is_empty() {
            match decided_among(&state, &ids).await {
                Ok(decided) => {
                    let waiting = state.watcher.lock();
                    for (id, status) in decided {
                        if let Some(tx) = waiting.get(&id) {
                            tx.send_replace(Some(status));
                        }
                    }
                }
                Err(err) => tracing::warn!(error = %err, "approval watcher cannot read the ledger"),
            }
        }
    }
}

async fn decided_among(
    state: &AppState,
    ids: &[PendingCallId],
) -> Result<Vec<(PendingCallId, PendingCallStatus)>, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let rows = sqlx::query!(
        r#"select id as "id: PendingCallId", status as "status: PendingCallStatus"
             from mcp_pending_calls
            where id = any($1) and status not in ('pending', 'awaiting_second')"#,
        ids as &[PendingCallId],
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rows.into_iter().map(|r| (r.id, r.status)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_ends_on_every_status_but_pending() {
        use PendingCallStatus as S;
        let cases = [
            (S::Pending, None, "still waiting"),
            (S::AwaitingSecond, None, "waiting for the second approver"),
            (S::Approved, Some(Waited::Approved), "approved: claim it"),
            (S::Denied, Some(Waited::Denied), "declined"),
            (S::Expired, Some(Waited::Expired), "nobody decided"),
            (
                S::Executing,
                Some(Waited::Gone(Some(S::Executing))),
                "claimed elsewhere",
            ),
            (
                S::Failed,
                Some(Waited::Gone(Some(S::Failed))),
                "recovered elsewhere",
            ),
            (
                S::Executed,
                Some(Waited::Gone(Some(S::Executed))),
                "ran elsewhere",
            ),
        ];
        for (status, waited, why) in cases {
            assert_eq!(Waited::from_status(status), waited, "{why}");
        }
    }
}
