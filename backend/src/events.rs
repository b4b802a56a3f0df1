//! The per-chat event log and its wake-ups across instances (DESIGN §7, §10).
//!
//! Every event of a turn is appended to `chat_events` with the chat's next
//! sequence number and announced with `pg_notify` in the same transaction,
//! so listeners hear of it only once it is committed. Each instance keeps
//! one `LISTEN` connection ([`EventHub`]) and fans notifications out to its
//! streams through a broadcast channel; streams then read the events from
//! Postgres, so a missed or lagging wake-up costs latency, never an event.
//!
//! The hub also carries turn cancellations (`countersign_cancel`) to
//! whichever instance runs the turn, and approval decisions
//! (`countersign_approvals`) to the instance whose turn waits for them.

use crate::{
    db::Tx,
    ids::{ChatId, TurnId},
};
use countersign_api::ChatEvent;
use sqlx::{PgPool, postgres::PgListener};
use std::{collections::HashMap, sync::Mutex, time::Duration};
use tokio::sync::{broadcast, watch};
use uuid::Uuid;

/// Channel of "chat X has events up to seq N".
const EVENTS_CHANNEL: &str = "countersign_events";
/// Channel of "stop turn X".
const CANCEL_CHANNEL: &str = "countersign_cancel";
/// Channel of "pending call X was decided" (by any instance).
const APPROVALS_CHANNEL: &str = "countersign_approvals";

/// Tells every instance, when `tx` commits, that pending call `id` was
/// decided (or denied by a connector's re-pointing): their approval
/// watchers wake and re-read the ledger.
pub async fn notify_decided(
    tx: &mut crate::db::Tx,
    id: crate::ids::PendingCallId,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "select pg_notify($1, $2)",
        APPROVALS_CHANNEL,
        id.to_string(),
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Tells every instance, when `tx` commits, that input request `id` was
/// answered: the waits of `crate::inputs` wake and re-read their rows (on
/// the approvals channel: one wake-up path for every "the user decided").
pub async fn notify_answered(tx: &mut crate::db::Tx, id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "select pg_notify($1, $2)",
        APPROVALS_CHANNEL,
        format!("input {id}"),
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A committed event's place in its chat's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// The chat.
    pub chat_id: Uuid,
    /// Its sequence number.
    pub seq: i64,
}

/// Appends `event` to the chat's log inside `tx` (a user transaction) and
/// queues the cross-instance wake-up for commit. Returns the sequence number.
pub async fn append(
    tx: &mut Tx,
    chat_id: impl Into<ChatId>,
    turn_id: Option<TurnId>,
    event: &ChatEvent,
) -> Result<i64, sqlx::Error> {
    let chat_id: ChatId = chat_id.into();
    let data = serde_json::to_value(event).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    let kind = data
        .get("type")
        .and_then(|t| t.as_str())
        .unwrap_or("unknown")
        .to_owned();
    // The row lock of this UPDATE orders concurrent appends to one chat.
    let seq: i64 = sqlx::query_scalar!(
        "update chats set last_seq = last_seq + 1 where id = $1 returning last_seq",
        chat_id as ChatId,
    )
    .fetch_one(&mut **tx)
    .await?;
    sqlx::query!(
        "insert into chat_events (chat_id, seq, turn_id, type, data) values ($1, $2, $3, $4, $5)",
        chat_id as ChatId,
        seq,
        turn_id as Option<TurnId>,
        kind,
        data,
    )
    .execute(&mut **tx)
    .await?;
    sqlx::query!(
        "select pg_notify($1, $2)",
        EVENTS_CHANNEL,
        format!("{chat_id} {seq}"),
    )
    .execute(&mut **tx)
    .await?;
    Ok(seq)
}

/// Events of a chat after `after`, oldest first, at most `limit`: the raw
/// stored JSON (it already carries `type` and `turn_id`).
pub async fn after(
    tx: &mut Tx,
    chat_id: Uuid,
    after: i64,
    limit: i64,
) -> Result<Vec<(i64, serde_json::Value)>, sqlx::Error> {
    sqlx::query!(
        "select seq, data from chat_events where chat_id = $1 and seq > $2 order by seq limit $3",
        chat_id,
        after,
        limit,
    )
    .map(|r| (r.seq, r.data))
    .fetch_all(&mut **tx)
    .await
}

/// Asks every instance to stop `turn_id` (the one running it will).
pub async fn request_cancel(tx: &mut Tx, turn_id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "select pg_notify($1, $2)",
        CANCEL_CHANNEL,
        turn_id.to_string(),
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// This instance's end of `LISTEN`: wake-ups for streams, cancellations
/// for the turns it runs.
#[derive(Debug)]
pub struct EventHub {
    appended: broadcast::Sender<Appended>,
    running: Mutex<HashMap<Uuid, watch::Sender<bool>>>,
    closing: watch::Sender<bool>,
    /// "Read the approval ledger again": `true` when a `NOTIFY` said a
    /// call was decided, `false` for a local nudge.
    approvals: broadcast::Sender<bool>,
    /// Set once this instance's turn heartbeat loop runs.
    heartbeat: std::sync::atomic::AtomicBool,
}

impl EventHub {
    /// A hub that hears only this process (tests of single pieces).
    pub fn local() -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self {
            appended: broadcast::channel(1024).0,
            running: Mutex::new(HashMap::new()),
            closing: watch::channel(false).0,
            approvals: broadcast::channel(64).0,
            heartbeat: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Starts listening on a dedicated connection of `pool`. The listener
    /// reconnects by itself; notifications sent while it is away are lost,
    /// which streams make up for by re-reading the log on every keep-alive.
    pub async fn listen(pool: &PgPool) -> Result<std::sync::Arc<Self>, sqlx::Error> {
        let hub = Self::local();
        let mut listener = PgListener::connect_with(pool).await?;
        listener
            .listen_all([EVENTS_CHANNEL, CANCEL_CHANNEL, APPROVALS_CHANNEL])
            .await?;
        let weak = std::sync::Arc::downgrade(&hub);
        tokio::spawn(async move {
            loop {
                let notification = match listener.recv().await {
                    Ok(n) => n,
                    Err(err) => {
                        tracing::warn!(error = %err, "event listener lost its connection; retrying");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                };
                let Some(hub) = weak.upgrade() else { return };
                hub.dispatch(notification.channel(), notification.payload());
            }
        });
        Ok(hub)
    }

    fn dispatch(&self, channel: &str, payload: &str) {
        match channel {
            EVENTS_CHANNEL => {
                let parsed = payload.split_once(' ').and_then(|(chat, seq)| {
                    Some(Appended {
                        chat_id: chat.parse().ok()?,
                        seq: seq.parse().ok()?,
                    })
                });
                if let Some(appended) = parsed {
                    // No subscribers is fine.
                    let _ = self.appended.send(appended);
                }
            }
            APPROVALS_CHANNEL => {
                let _ = self.approvals.send(true);
            }
            CANCEL_CHANNEL => {
                if let Ok(turn_id) = payload.parse::<Uuid>() {
                    self.cancel_local(turn_id);
                }
            }
            _ => {}
        }
    }

    /// The server is shutting down: open streams end (browsers reconnect
    /// to another instance with `Last-Event-ID`), so graceful shutdown is not
    /// held up by connections that never finish.
    pub fn close(&self) {
        self.closing.send_replace(true);
    }

    /// Resolves once [`EventHub::close`] was called.
    pub async fn closed(&self) {
        let mut rx = self.closing.subscribe();
        // An error means the hub is gone: closed as well.
        let _ = rx.wait_for(|closing| *closing).await;
    }

    /// Wake-ups of every chat; streams filter their own.
    pub fn subscribe(&self) -> broadcast::Receiver<Appended> {
        self.appended.subscribe()
    }

    /// Wake-ups of the approval watcher.
    pub fn subscribe_approvals(&self) -> broadcast::Receiver<bool> {
        self.approvals.subscribe()
    }

    /// Nudges the approval watcher to read the ledger now.
    pub fn wake_approvals(&self) {
        let _ = self.approvals.send(false);
    }

    /// Registers a turn this instance runs; the receiver turns `true` when
    /// someone asks to stop it.
    pub fn register_turn(&self, turn_id: TurnId) -> watch::Receiver<bool> {
        let (tx, rx) = watch::channel(false);
        self.lock_running().insert(turn_id.into(), tx);
        rx
    }

    /// The turns this instance runs now.
    pub fn running_turns(&self) -> Vec<Uuid> {
        self.lock_running().keys().copied().collect()
    }

    /// `true` exactly once per hub: whoever gets it starts the heartbeat.
    pub fn first_turn(&self) -> bool {
        !self
            .heartbeat
            .swap(true, std::sync::atomic::Ordering::SeqCst)
    }

    /// Forgets a finished turn.
    pub fn unregister_turn(&self, turn_id: TurnId) {
        self.lock_running().remove(&turn_id.into());
    }

    /// Stops a turn if it runs here.
    pub fn cancel_local(&self, turn_id: Uuid) {
        if let Some(tx) = self.lock_running().get(&turn_id) {
            let _ = tx.send(true);
        }
    }

    fn lock_running(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, watch::Sender<bool>>> {
        // A panic while holding this lock leaves a plain map: keep using it.
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
