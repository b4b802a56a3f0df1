//! Proof of life: one [`heartbeat`] loop per instance, started with its
//! first turn, which [`beat`]s for every turn the instance runs and turns
//! a stored Stop into a local cancel. Reaping the turns that stopped
//! beating is [`super::store`]'s.

use crate::{AppState, db};
use std::time::Duration;

/// Proves that every turn this instance runs is alive, in one UPDATE every
/// `COUNTERSIGN_TURN_HEARTBEAT_SECS` (not one per turn: a thousand turns
/// waiting for approvals would otherwise cost 12,000 writes a minute), and
/// turns a stored Stop into a local cancel (for a Stop that arrived before
/// the turn registered, or whose NOTIFY was lost). One loop per instance,
/// started with its first turn.
pub(super) async fn heartbeat(state: AppState) {
    let mut tick = tokio::time::interval(period(state.config.turn_heartbeat_secs));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = state.hub.closed() => return,
        }
        if let Err(err) = beat(&state).await {
            tracing::warn!(error = %err, "heartbeat failed");
        }
    }
}

/// The loop's period for a setting of `secs`: at least a second (a zero
/// period would make `interval` panic, and a loop with no pause would
/// write without end).
fn period(secs: u64) -> Duration {
    Duration::from_secs(secs.max(1))
}

/// One heartbeat of this instance's running turns (the loop's, and the
/// recovery's before it reaps: after a database outage longer than the
/// stale window this instance's own live turns must not look dead to it).
pub async fn beat(state: &AppState) -> Result<(), sqlx::Error> {
    let running = state.hub.running_turns();
    if running.is_empty() {
        return Ok(());
    }
    let mut tx = db::service_tx(&state.db).await?;
    let rows = sqlx::query!(
        "update turns set heartbeat_at = now() where id = any($1) and status = 'running'
         returning id, cancel_requested",
        &running,
    )
    .map(|r| (r.id, r.cancel_requested))
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    for (turn_id, cancel) in rows {
        if cancel {
            state.hub.cancel_local(turn_id);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heartbeat_beats_at_the_setting_and_never_without_a_pause() {
        assert_eq!(period(5), Duration::from_secs(5), "as set");
        assert_eq!(period(0), Duration::from_secs(1), "zero: once a second");
    }
}
