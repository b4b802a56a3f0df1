//! Giving memory back after a burst.
//!
//! glibc's allocator keeps what the process freed on its arenas' free
//! lists, resident, and returns pages only from the top of each heap: a
//! burst of turns (a thousand set up at once, then parked waiting for
//! approvals) leaves the server as large as the burst made it. Measured
//! with 1,000 parked approvals: 25 KiB of RSS each, of which ~10 KiB was
//! free memory that one `malloc_trim(0)` returned (`docs/operations.md`,
//! "Where the memory goes").
//!
//! [`Trimmer`] trims once a burst is over: after at least [`BURST`] turns
//! have started since the last trim, and then none for [`QUIET`]. A
//! trim walks and locks every arena in turn, so it never runs while turns
//! keep starting, and it runs on a blocking thread, off the runtime's
//! workers. A chat's ordinary pace (a turn now and then) never trims.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};
use tokio::sync::Notify;

/// Turns started since the last trim that make a burst.
pub const BURST: usize = 32;

/// How long no turn must start before a burst counts as over.
pub const QUIET: Duration = Duration::from_secs(1);

/// What a trim does: `countersign_malloc_trim::trim` in the server; tests
/// count calls.
pub type Trim = Arc<dyn Fn() -> bool + Send + Sync>;

/// Counts turn starts and trims the allocator once a burst of them is over.
pub struct Trimmer {
    shared: Arc<Shared>,
    /// Dropped with the trimmer: its task then ends.
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// What the trimmer and its task share.
#[derive(Debug, Default)]
struct Shared {
    /// Turns started since the last trim.
    started: AtomicUsize,
    nudge: Notify,
}

impl std::fmt::Debug for Trimmer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trimmer")
            .field("started", &self.shared.started.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Trimmer {
    /// A trimmer whose task (spawned here) runs `trim` after each burst.
    pub fn start(trim: Trim) -> Arc<Self> {
        let shared = Arc::new(Shared::default());
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let task = Arc::clone(&shared);
        tokio::spawn(async move {
            tokio::select! {
                () = run(&task, trim) => {}
                _ = stopped => {}
            }
        });
        Arc::new(Self {
            shared,
            _stop: stop,
        })
    }

    /// The allocator's own trim.
    pub fn glibc() -> Trim {
        Arc::new(countersign_malloc_trim::trim)
    }

    /// A turn started.
    pub fn turn_started(&self) {
        self.shared.started.fetch_add(1, Ordering::Relaxed);
        self.shared.nudge.notify_one();
    }
}

async fn run(shared: &Shared, trim: Trim) {
    loop {
        shared.nudge.notified().await;
        // Quiet: no turn started for QUIET.
        while tokio::time::timeout(QUIET, shared.nudge.notified())
            .await
            .is_ok()
        {}
        if shared.started.load(Ordering::Relaxed) < BURST {
            continue;
        }
        shared.started.store(0, Ordering::Relaxed);
        let trim = Arc::clone(&trim);
        let started = std::time::Instant::now();
        match tokio::task::spawn_blocking(move || trim()).await {
            Ok(returned) => tracing::debug!(
                returned,
                took_ms = started.elapsed().as_secs_f64() * 1e3,
                "allocator trimmed after a burst of turns"
            ),
            Err(err) => tracing::warn!(error = %err, "allocator trim failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trim that counts its calls and says each one.
    fn counting() -> (Trim, Arc<AtomicUsize>, Arc<Notify>) {
        let count = Arc::new(AtomicUsize::new(0));
        let trimmed = Arc::new(Notify::new());
        let (seen, said) = (Arc::clone(&count), Arc::clone(&trimmed));
        let trim: Trim = Arc::new(move || {
            seen.fetch_add(1, Ordering::SeqCst);
            said.notify_one();
            true
        });
        (trim, count, trimmed)
    }

    /// Waits for the next trim (its notice is kept if it came first);
    /// the count then.
    async fn settle(count: &AtomicUsize, trimmed: &Notify) -> usize {
        tokio::time::timeout(QUIET * 60, trimmed.notified())
            .await
            .expect("a trim");
        count.load(Ordering::SeqCst)
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_is_trimmed_once_it_is_over_and_an_ordinary_pace_never() {
        let (trim, count, trimmed) = counting();
        let trimmer = Trimmer::start(trim);

        // An ordinary pace: turns seconds apart, fewer than a burst.
        for _ in 0..BURST - 1 {
            trimmer.turn_started();
            tokio::time::sleep(QUIET * 3).await;
        }
        assert_eq!(count.load(Ordering::SeqCst), 0, "no burst, no trim");

        // A burst: the one more makes BURST; trimmed once quiet.
        trimmer.turn_started();
        assert_eq!(settle(&count, &trimmed).await, 1, "trimmed after the burst");

        // Turns that keep starting within QUIET of each other hold the
        // trim back until they stop.
        for _ in 0..BURST * 2 {
            trimmer.turn_started();
            tokio::time::sleep(QUIET / 4).await;
        }
        assert_eq!(
            count.load(Ordering::SeqCst),
            1,
            "not while the burst goes on"
        );
        assert_eq!(settle(&count, &trimmed).await, 2, "once after it");
        tokio::time::sleep(QUIET * 10).await;
        assert_eq!(
            count.load(Ordering::SeqCst),
            2,
            "nothing more without turns"
        );
    }
}
