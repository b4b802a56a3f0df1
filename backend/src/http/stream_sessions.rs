//! The sessions of this instance's open event streams, re-checked for all
//! of them in one read per keep-alive period (`auth::session::live_among`)
//! instead of one read per stream: 10,000 idle streams once cost 1,300
//! database transactions a second and starved the pool (issue 15's load
//! scenario). A stream whose session ended (signed out, signed out from
//! another session, disabled, expired) is told through its watch and ends.
//!
//! A failed check ends nothing: an open stream delivers nothing without a
//! read of its own, and each delivery is preceded by its own session check
//! (`stream.rs`), so an unverified session still gets no event; ending
//! every stream on a database blip would only make every browser
//! reconnect at once.

use crate::{AppState, auth::session};
use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, OnceLock},
};
use tokio::sync::watch;

/// One session's open streams on this instance.
#[derive(Debug)]
struct Entry {
    streams: usize,
    ended: watch::Sender<bool>,
}

/// This instance's registry (one per `AppState`).
#[derive(Debug, Default)]
pub struct StreamSessions {
    open: Mutex<HashMap<Vec<u8>, Entry>>,
    started: OnceLock<()>,
}

/// A stream's hold on its session's entry: `ended` turns `true` when the
/// session ends; dropping it forgets the stream.
#[derive(Debug)]
pub struct Watched {
    registry: Arc<StreamSessions>,
    token_hash: Vec<u8>,
    /// Turns `true` once the session is no longer live.
    pub ended: watch::Receiver<bool>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        let mut open = self.registry.lock();
        if let Some(entry) = open.get_mut(&self.token_hash) {
            entry.streams -= 1;
            if entry.streams == 0 {
                open.remove(&self.token_hash);
            }
        }
    }
}

impl StreamSessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, Entry>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Watches the session behind `token_hash` for a stream; starts this
    /// instance's check loop with the first stream.
    pub fn watch(state: &AppState, token_hash: &[u8]) -> Watched {
        let registry = state.stream_sessions.clone();
        registry.started.get_or_init(|| {
            tokio::spawn(check_loop(state.clone()));
        });
        let ended = {
            let mut open = registry.lock();
            let entry = open.entry(token_hash.to_vec()).or_insert_with(|| Entry {
                streams: 0,
                ended: watch::Sender::new(false),
            });
            entry.streams += 1;
            entry.ended.subscribe()
        };
        Watched {
            registry,
            token_hash: token_hash.to_vec(),
            ended,
        }
    }

    /// How many distinct sessions have streams open here.
    pub fn sessions(&self) -> usize {
        self.lock().len()
    }
}

/// Sessions checked per read.
const CHUNK: usize = 1_000;

/// Every keep-alive period: one read per [`CHUNK`] watched sessions; the
/// streams of every session that is no longer live are told.
async fn check_loop(state: AppState) {
    let period = std::time::Duration::from_secs(state.config.keepalive_secs.max(1));
    let idle = state.config.session_idle();
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = state.hub.closed() => return,
        }
        let watched: Vec<Vec<u8>> = state.stream_sessions.lock().keys().cloned().collect();
        for chunk in watched.chunks(CHUNK) {
            match session::live_among(&state.db, chunk, idle).await {
                Ok(live) => {
                    let live: HashSet<Vec<u8>> = live.into_iter().collect();
                    let open = state.stream_sessions.lock();
                    for hash in chunk.iter().filter(|h| !live.contains(*h)) {
                        if let Some(entry) = open.get(hash) {
                            tracing::info!("session ended; closing its streams");
                            entry.ended.send_replace(true);
                        }
                    }
                }
                Err(err) => {
                    tracing::warn!(error = %err, sessions = chunk.len(), "stream session check failed; checking again next period");
                }
            }
        }
    }
}
