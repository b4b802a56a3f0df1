//! The per-chat event log and its wake-ups across instances (DESIGN §7, §10).
//!
//! Every event of a turn is appended to `chat_events` with the chat's next
//! sequence number and announced with `pg_notify` in the same transaction,
//! so listeners hear of it only once it is committed: inside a transaction
//! of the caller's ([`append`]), or as one of its own in one round trip
//! ([`append_alone`], how a turn writes its events). Each instance keeps
//! one `LISTEN` connection ([`EventHub`]) and wakes the streams of that
//! chat only (a watch of the highest sequence number heard, per chat with
//! streams open here); streams then read the events from Postgres, so a
//! missed wake-up costs latency, never an event. An event a turn of this
//! instance appended ([`append_alone`]) comes with its wake-up
//! ([`Direct`]), and a stream of this instance may deliver it without
//! reading it back, when it is the very next event and its stamp says the
//! stream's session has not changed since the stream last checked it
//! (http/stream.rs). While such an append is under way, the wake-ups the
//! `LISTEN` connection hears for its chat are held, and given with the
//! append's own ([`EventHub::writing`]): the NOTIFY of the append itself
//! tends to arrive before the append's answer, and would start a read.
//!
//! A lost `LISTEN` connection (a Postgres restart) is noticed, logged and
//! restored by the hub itself; until it is, `/readyz` answers 503, and once
//! it is, the approval watcher and every stream read the database again, so
//! the NOTIFYs sent meanwhile cost latency, not decisions or events.
//!
//! The hub also carries turn cancellations (`countersign_cancel`) to
//! whichever instance runs the turn, and approval decisions
//! (`countersign_approvals`) to the instance whose turn waits for them.

use crate::{
    db::{
        Tx,
        trip::{self, Arg, As, Part, Statement},
    },
    ids::{ChatId, TurnId, UserId},
};
use countersign_api::ChatEvent;
use sqlx::{
    PgPool, Row as _,
    postgres::{PgListener, PgRow},
};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};
use tokio::sync::{broadcast, watch};
use uuid::Uuid;

/// Channel of "chat X has events up to seq N".
pub const EVENTS_CHANNEL: &str = "countersign_events";
/// Channel of "stop turn X".
const CANCEL_CHANNEL: &str = "countersign_cancel";
/// Channel of "pending call X was decided" (by any instance): the payload
/// is the call's id. `approvals::decide` sends it from its own UPDATE's
/// statement; everything else through [`notify_decided`].
pub const APPROVALS_CHANNEL: &str = "countersign_approvals";

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

/// Tells every instance, when `tx` commits, that result review `id` was
/// decided: the waits of `crate::results` wake and re-read their rows.
pub async fn notify_reviewed(tx: &mut crate::db::Tx, id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "select pg_notify($1, $2)",
        APPROVALS_CHANNEL,
        format!("review {id}"),
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

/// An event [`append_alone`] committed, as a stream of this instance may
/// deliver it without reading it back: its sequence number, its JSON, and
/// what says whether the stream's session still stood when it was
/// committed — the user's session epoch, read under the lock that makes a
/// change to the user's sessions wait for the append's commit (or the
/// append for the change's), and the database's clock then.
#[derive(Debug, Clone, PartialEq)]
pub struct Direct {
    /// Its sequence number.
    pub seq: i64,
    /// Its `data:`, the JSON stored, when at most [`DIRECT_MAX_BYTES`]
    /// long (a stream reads a longer one back: the hub keeps the last
    /// event of each chat with streams here, and a thousand chats waiting
    /// for approvals should not each keep a card).
    pub data: Option<Box<str>>,
    /// The user's session epoch (`None`: no row, which no stamp matches).
    pub epoch: Option<i64>,
    /// The database's clock once it was written, in milliseconds since 1970.
    pub at_ms: i64,
}

impl Direct {
    /// Event `seq`, stored as `data`, committed with `epoch` at `at_ms`:
    /// its text kept when at most [`DIRECT_MAX_BYTES`] long.
    pub fn new(seq: i64, data: &serde_json::Value, epoch: Option<i64>, at_ms: i64) -> Self {
        let data = serde_json::to_string(data)
            .ok()
            .filter(|text| text.len() <= DIRECT_MAX_BYTES)
            .map(String::into_boxed_str);
        Self {
            seq,
            data,
            epoch,
            at_ms,
        }
    }
}

/// The longest `data:` a [`Direct`] carries: a streamed answer's deltas
/// are far shorter.
pub const DIRECT_MAX_BYTES: usize = 1024;

/// What a chat's streams here heard last: the highest sequence number, and
/// the event itself when this instance appended it and it is that one.
#[derive(Debug, Clone, Default)]
pub struct Heard {
    /// The highest sequence number heard of.
    pub seq: i64,
    /// That event, when [`append_alone`] here committed it.
    pub direct: Option<Arc<Direct>>,
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
    let (kind, data) = stored(event)?;
    // One statement, one round trip (the migration's
    // `append_chat_event`): the next sequence number (the row lock of its
    // UPDATE orders concurrent appends to one chat), the event, and the
    // wake-up the other instances hear once `tx` commits.
    let seq = sqlx::query_scalar!(
        "select append_chat_event($1, $2, $3, $4, $5)",
        chat_id as ChatId,
        turn_id as Option<TurnId>,
        kind,
        data,
        EVENTS_CHANNEL,
    )
    .fetch_one(&mut **tx)
    .await?;
    seq.ok_or(sqlx::Error::RowNotFound)
}

/// Appends `event` to the chat's log as a transaction of its own, as
/// `user_id`, in one round trip: the statement runs outside any
/// transaction, so it is its own (implicit) one, and its first act is the
/// switch to `authenticated` with `auth.uid()` = `user_id`, local to it
/// (the migration's `append_chat_event_as`); the append then runs as the
/// user, under row-level security. [`append`] inside a transaction costs
/// its `BEGIN` and `COMMIT` besides, two more round trips: this is how a
/// turn writes its events, the first token's among them. `RowNotFound`
/// when the chat is not the user's.
pub async fn append_alone(
    pool: &PgPool,
    user_id: UserId,
    chat_id: ChatId,
    turn_id: Option<TurnId>,
    event: &ChatEvent,
) -> Result<Direct, sqlx::Error> {
    let (kind, data) = stored(event)?;
    let pool = pool.clone();
    // In a task of its own, like every other way into a transaction
    // (`db::detached`): a caller that goes away does not cut the
    // conversation short. The migration's `append_chat_event_stamped_as`:
    // `append_chat_event_as`, and the epoch and clock of a [`Direct`].
    crate::db::detached(async move {
        let row = sqlx::query!(
            r#"select seq as "seq!", epoch, at_ms as "at_ms!"
                 from append_chat_event_stamped_as($1, $2, $3, $4, $5, $6)"#,
            user_id as UserId,
            chat_id as ChatId,
            turn_id as Option<TurnId>,
            kind,
            data,
            EVENTS_CHANNEL,
        )
        .fetch_optional(&pool)
        .await?
        .ok_or(sqlx::Error::RowNotFound)?;
        Ok(Direct::new(row.seq, &data, row.epoch, row.at_ms))
    })
    .await
}

/// An event as the log stores it: its `type`, and its JSON.
fn stored(event: &ChatEvent) -> Result<(String, serde_json::Value), sqlx::Error> {
    let data = serde_json::to_value(event).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    let kind = data
        .get("type")
        .and_then(|t| t.as_str())
        .unwrap_or("unknown")
        .to_owned();
    Ok((kind, data))
}

/// The events of a chat after `$2`, oldest first, at most `$3`: the raw
/// stored JSON (it already carries `type` and `turn_id`).
static AFTER: Statement = Statement {
    name: "cs_events_after",
    params: "(uuid, int8, int8)",
    sql: "select seq, data from chat_events where chat_id = $1 and seq > $2 order by seq limit $3",
};

/// Events of a chat after `after`, oldest first, at most `limit`, as
/// `user_id`, in one round trip ([`trip`]).
pub async fn after(
    pool: &PgPool,
    user_id: UserId,
    chat_id: ChatId,
    after: i64,
    limit: i64,
) -> Result<Vec<(i64, serde_json::Value)>, sqlx::Error> {
    events_in(&trip::run(pool, after_part(user_id, chat_id, after, limit)).await?)
}

/// [`after`] as a part of a larger [`trip`]; read its rows with
/// [`events_in`].
pub fn after_part(user_id: UserId, chat_id: ChatId, after: i64, limit: i64) -> Part {
    Part {
        who: As::User(user_id),
        statement: &AFTER,
        args: vec![Arg::uuid(chat_id), Arg::int(after), Arg::int(limit)],
    }
}

/// [`after`]'s events, from its part's rows.
pub fn events_in(rows: &[PgRow]) -> Result<Vec<(i64, serde_json::Value)>, sqlx::Error> {
    rows.iter()
        .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
        .collect()
}

/// The statements [`trip`] runs here, for the test that prepares them all.
pub static TRIPS: [&Statement; 1] = [&AFTER];

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

/// How long to wait between attempts to reconnect a lost `LISTEN`
/// connection (each attempt itself waits for the pool's connect timeout).
const RELISTEN_EVERY: Duration = Duration::from_millis(500);

/// A new connection of `pool` listening on every channel.
async fn subscribed(pool: &PgPool) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.eager_reconnect(false);
    listener
        .listen_all([EVENTS_CHANNEL, CANCEL_CHANNEL, APPROVALS_CHANNEL])
        .await?;
    Ok(listener)
}

/// The hub's `LISTEN` task, until the hub is dropped: notifications are
/// dispatched; a lost connection (sqlx's `Ok(None)`, or any error) marks
/// the hub not listening, is logged, and is replaced by a new connection
/// that listens again (sqlx's own eager reconnect is off: it would restore
/// `LISTEN` without telling), after which the hub catches up
/// ([`EventHub::restored`]).
async fn listen_loop(pool: PgPool, mut listener: PgListener, hub: std::sync::Weak<EventHub>) {
    loop {
        let received = listener.try_recv().await;
        let Some(live) = hub.upgrade() else { return };
        let lost = match received {
            Ok(Some(notification)) => {
                live.dispatch(notification.channel(), notification.payload());
                continue;
            }
            Ok(None) => "the connection closed".to_owned(),
            Err(err) => err.to_string(),
        };
        live.listening
            .store(false, std::sync::atomic::Ordering::SeqCst);
        tracing::warn!(error = %lost, "event listener lost its connection; reconnecting");
        drop(live);
        drop(listener);
        listener = loop {
            if hub.strong_count() == 0 {
                return;
            }
            match subscribed(&pool).await {
                Ok(listener) => break listener,
                Err(err) => {
                    tracing::warn!(error = %err, "event listener cannot reconnect yet");
                    tokio::time::sleep(RELISTEN_EVERY).await;
                }
            }
        };
        let Some(live) = hub.upgrade() else { return };
        tracing::warn!("event listener reconnected; LISTEN restored");
        live.restored();
    }
}

/// The streams of one chat on this instance.
#[derive(Debug)]
struct ChatEntry {
    streams: usize,
    heard: watch::Sender<Heard>,
    /// Appends of this instance under way ([`EventHub::writing`]).
    writing: usize,
    /// The highest sequence number heard while they were: given with the
    /// last one's own.
    held: i64,
}

impl ChatEntry {
    /// Wakes the chat's streams if `seq` is news.
    fn wake(&self, seq: i64, direct: Option<Arc<Direct>>) {
        self.heard.send_if_modified(|heard| {
            let newer = seq > heard.seq;
            if newer {
                *heard = Heard { seq, direct };
            }
            newer
        });
    }
}

/// One stream's subscription to its chat's wake-ups.
#[derive(Debug)]
pub struct ChatWakeups {
    hub: std::sync::Arc<EventHub>,
    chat_id: Uuid,
    /// What was heard last; changes on each wake-up.
    pub heard: watch::Receiver<Heard>,
}

/// An append of this instance under way in one chat ([`EventHub::writing`]).
/// Dropped without [`Writing::done`] (the append failed), it gives the
/// wake-ups it held.
#[derive(Debug)]
pub struct Writing {
    hub: Arc<EventHub>,
    chat_id: Uuid,
    counted: bool,
    direct: Option<Direct>,
}

impl Writing {
    /// The append committed `direct`: the chat's streams here wake with it
    /// (or with a later number heard meanwhile, and then read).
    pub fn done(mut self, direct: Direct) {
        self.direct = Some(direct);
    }
}

impl Drop for Writing {
    fn drop(&mut self) {
        let mut chats = self.hub.lock_chats();
        let Some(entry) = chats.get_mut(&self.chat_id) else {
            return;
        };
        if self.counted {
            entry.writing = entry.writing.saturating_sub(1);
        }
        let own = self.direct.take();
        let own_seq = own.as_ref().map_or(0, |d| d.seq);
        let held = entry.held;
        if entry.writing == 0 {
            entry.held = 0;
        }
        if own_seq >= held {
            entry.wake(own_seq, own.map(Arc::new));
        } else {
            entry.wake(held, None);
        }
    }
}

impl Drop for ChatWakeups {
    fn drop(&mut self) {
        let mut chats = self.hub.lock_chats();
        if let Some(entry) = chats.get_mut(&self.chat_id) {
            entry.streams -= 1;
            if entry.streams == 0 {
                chats.remove(&self.chat_id);
            }
        }
    }
}

/// This instance's end of `LISTEN`: wake-ups for streams, cancellations
/// for the turns it runs.
#[derive(Debug)]
pub struct EventHub {
    /// Per chat with streams open on this instance: the highest sequence
    /// number heard of. A wake-up reaches only its own chat's streams
    /// (one broadcast to every stream woke 10,000 idle streams for each
    /// event of any chat).
    chats: Mutex<HashMap<Uuid, ChatEntry>>,
    running: Mutex<HashMap<Uuid, watch::Sender<bool>>>,
    closing: watch::Sender<bool>,
    /// "Read the approval ledger again": `true` when a `NOTIFY` said a
    /// call was decided, `false` for a local nudge.
    approvals: broadcast::Sender<bool>,
    /// Set once this instance's turn heartbeat loop runs.
    heartbeat: std::sync::atomic::AtomicBool,
    /// Whether the `LISTEN` connection is up (`/readyz` says 503 while it
    /// is not).
    listening: std::sync::atomic::AtomicBool,
    /// Bumped each time `LISTEN` is restored after a lost connection:
    /// streams re-read the log at once (NOTIFYs sent meanwhile are lost).
    restored: watch::Sender<u64>,
}

impl EventHub {
    /// A hub that hears only this process (tests of single pieces).
    pub fn local() -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self {
            chats: Mutex::new(HashMap::new()),
            running: Mutex::new(HashMap::new()),
            closing: watch::channel(false).0,
            approvals: broadcast::channel(64).0,
            heartbeat: std::sync::atomic::AtomicBool::new(false),
            listening: std::sync::atomic::AtomicBool::new(true),
            restored: watch::channel(0).0,
        })
    }

    /// Starts listening on a dedicated connection of `pool`, and keeps
    /// listening: a lost connection is noticed (its `LISTEN` is then down:
    /// [`EventHub::listening`] is false), reconnected, and `LISTEN`
    /// restored, after which everything that may have missed a NOTIFY
    /// meanwhile reads the database again — the approval watcher and every
    /// stream (they read the log from their last sequence number).
    pub async fn listen(pool: &PgPool) -> Result<std::sync::Arc<Self>, sqlx::Error> {
        let hub = Self::local();
        let listener = subscribed(pool).await?;
        tokio::spawn(listen_loop(
            pool.clone(),
            listener,
            std::sync::Arc::downgrade(&hub),
        ));
        Ok(hub)
    }

    /// Whether this instance hears the other instances now (its `LISTEN`
    /// connection is up). A hub that hears only this process always does.
    pub fn listening(&self) -> bool {
        self.listening.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Changes each time `LISTEN` is restored after a lost connection.
    pub fn subscribe_restored(&self) -> watch::Receiver<u64> {
        self.restored.subscribe()
    }

    /// `LISTEN` is back: whatever waited for a NOTIFY reads again.
    fn restored(&self) {
        self.listening
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.restored.send_modify(|n| *n += 1);
        self.wake_approvals();
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
                    self.appended(appended);
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

    /// Wakes the streams of `appended`'s chat open here, if any. Called by
    /// the `LISTEN` task for every instance's events, and by a writer of
    /// this instance right after its commit, so that streams here need not
    /// wait for the `NOTIFY` to come back from Postgres (the later `NOTIFY`
    /// of the same event then wakes no one).
    ///
    /// While an append of this instance is under way in the chat
    /// ([`EventHub::writing`]), the wake-up is held, and given when that
    /// append is done.
    pub fn appended(&self, appended: Appended) {
        let mut chats = self.lock_chats();
        if let Some(entry) = chats.get_mut(&appended.chat_id) {
            if entry.writing > 0 {
                entry.held = entry.held.max(appended.seq);
            } else {
                entry.wake(appended.seq, None);
            }
        }
    }

    /// An append of this instance is starting in chat `chat_id`: until the
    /// returned [`Writing`] is done or dropped, the chat's wake-ups are
    /// held, so that its streams here wake with the appended event itself
    /// rather than start a read on its NOTIFY. Held for one round trip at
    /// most, and given whatever the append's outcome.
    pub fn writing(self: &Arc<Self>, chat_id: Uuid) -> Writing {
        let counted = match self.lock_chats().get_mut(&chat_id) {
            Some(entry) => {
                entry.writing += 1;
                true
            }
            None => false,
        };
        Writing {
            hub: self.clone(),
            chat_id,
            counted,
            direct: None,
        }
    }

    fn lock_chats(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, ChatEntry>> {
        self.chats
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Wake-ups of one chat, for a stream; dropping it unsubscribes.
    pub fn subscribe_chat(self: &std::sync::Arc<Self>, chat_id: Uuid) -> ChatWakeups {
        let heard = {
            let mut chats = self.lock_chats();
            let entry = chats.entry(chat_id).or_insert_with(|| ChatEntry {
                streams: 0,
                heard: watch::Sender::new(Heard::default()),
                writing: 0,
                held: 0,
            });
            entry.streams += 1;
            entry.heard.subscribe()
        };
        ChatWakeups {
            hub: self.clone(),
            chat_id,
            heard,
        }
    }

    /// Chats with streams subscribed here.
    pub fn chats_followed(&self) -> usize {
        self.lock_chats().len()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wake_up_reaches_only_its_own_chats_streams_and_unsubscribing_forgets_the_chat() {
        let hub = EventHub::local();
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let mut first = hub.subscribe_chat(a);
        let second = hub.subscribe_chat(a);
        let other = hub.subscribe_chat(b);
        assert_eq!(hub.chats_followed(), 2);

        hub.dispatch(EVENTS_CHANNEL, &format!("{a} 7"));
        assert!(
            first.heard.has_changed().expect("open"),
            "chat a's stream woke"
        );
        assert_eq!(first.heard.borrow_and_update().seq, 7);
        assert!(
            !other.heard.has_changed().expect("open"),
            "chat b's did not"
        );
        // An older number (a late NOTIFY) wakes no one.
        hub.dispatch(EVENTS_CHANNEL, &format!("{a} 3"));
        assert!(!first.heard.has_changed().expect("open"));

        drop(first);
        assert_eq!(hub.chats_followed(), 2, "a still has a stream");
        drop(second);
        assert_eq!(
            hub.chats_followed(),
            1,
            "a is forgotten with its last stream"
        );
        hub.dispatch(EVENTS_CHANNEL, &format!("{a} 9"));
        assert!(!other.heard.has_changed().expect("open"));
        drop(other);
        assert_eq!(hub.chats_followed(), 0);
    }

    fn direct(seq: i64) -> Direct {
        Direct {
            seq,
            data: Some(r#"{"type":"text_delta"}"#.into()),
            epoch: Some(1),
            at_ms: 0,
        }
    }

    #[tokio::test]
    async fn an_append_under_way_holds_the_chats_wake_ups_and_gives_them_with_its_own() {
        let hub = EventHub::local();
        let a = Uuid::from_u128(1);
        let mut stream = hub.subscribe_chat(a);

        // Its own NOTIFY, heard before its answer: held, then the event.
        let writing = hub.writing(a);
        hub.dispatch(EVENTS_CHANNEL, &format!("{a} 5"));
        assert!(!stream.heard.has_changed().expect("open"), "held");
        writing.done(direct(5));
        let heard = stream.heard.borrow_and_update().clone();
        assert_eq!(heard.seq, 5);
        assert_eq!(heard.direct.as_deref(), Some(&direct(5)));

        // Another instance's later event heard meanwhile: the number
        // wins, without the event (the stream reads both).
        let writing = hub.writing(a);
        hub.dispatch(EVENTS_CHANNEL, &format!("{a} 7"));
        writing.done(direct(6));
        let heard = stream.heard.borrow_and_update().clone();
        assert_eq!((heard.seq, heard.direct.is_none()), (7, true));

        // A failed append gives what it held.
        let writing = hub.writing(a);
        hub.dispatch(EVENTS_CHANNEL, &format!("{a} 8"));
        drop(writing);
        assert_eq!(stream.heard.borrow_and_update().seq, 8);

        // Nothing under way: woken at once.
        hub.dispatch(EVENTS_CHANNEL, &format!("{a} 9"));
        assert_eq!(stream.heard.borrow_and_update().seq, 9);
    }
}
