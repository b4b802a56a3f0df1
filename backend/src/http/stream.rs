//! `GET /api/chats/{id}/stream`: Server-Sent Events. Replays the chat's
//! event log after `Last-Event-ID` (or `?after=`, default 0), then follows
//! new events as they are committed, on this instance or any other. Each
//! event's `id:` is its sequence number, its `data:` the stored JSON; while
//! idle the stream writes `: keep-alive` every `COUNTERSIGN_KEEPALIVE_SECS`.
//!
//! An open stream holds no database connection: it borrows one per read,
//! after a wake-up from the instance's `LISTEN` hub. Wake-ups are lost
//! only while the hub's `LISTEN` connection is down, and the hub says when
//! it is restored: then every stream reads again. An idle stream costs the
//! database nothing of its own.
//!
//! A stream lives only as long as the session that opened it: with every
//! read (so before each delivery batch) it re-checks the session by its
//! token hash (`session::is_live`, one indexed read, in the read's round
//! trip, `db::trip`), and delivers the batch only if the session is
//! live; and at least once per
//! keep-alive period the instance re-checks the sessions of all its open
//! streams in one read (`stream_sessions`). It ends when the session was
//! signed out, signed out from another session, or expired. Nothing read
//! after that is delivered.
//!
//! An event a turn of this instance appended (its `turn_started`
//! included) comes with its wake-up (`events::Direct`), and is delivered
//! without a round trip when it is the very next event, and its stamp
//! matches the stream's last check: the user's session epoch the append
//! read (under the lock that orders it against every change to the
//! user's sessions, migrations `session_stamps` and
//! `turn_started_direct`) is the one that check read with the session, and
//! the database's clock then was more than [`MARGIN_MS`] before the end
//! that check gave the session. Then nothing about the session changed
//! between the check and the event's commit, and the session had not
//! ended by it: what a check after the commit would have found.

use super::{
    error::ApiError,
    extract::{CurrentUser, Path, Query},
    session::{SESSION_COOKIE, cookie},
};
use crate::{AppState, auth::session, db, events};
use axum::{
    extract::State,
    http::{HeaderMap, HeaderValue},
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
};
use serde::Deserialize;
use std::{collections::VecDeque, convert::Infallible, sync::Arc, time::Duration};
use uuid::Uuid;

/// Events read per database round trip.
const PAGE: i64 = 500;

/// How long before its session's end a stream stops taking events
/// without a check: the event's clock is read just before its commit.
pub const MARGIN_MS: i64 = 1_000;

/// `?after=N`.
#[derive(Debug, Default, Deserialize)]
pub struct StreamQuery {
    /// Replay events with a sequence number above this.
    pub after: Option<i64>,
}

struct Follow {
    state: AppState,
    user_id: Uuid,
    chat_id: Uuid,
    /// SHA-256 of the session cookie the stream was opened with.
    token_hash: Vec<u8>,
    last: i64,
    wakeups: events::ChatWakeups,
    /// Changes when the hub's `LISTEN` is restored: wake-ups may have been
    /// lost, so read again.
    restored: tokio::sync::watch::Receiver<u64>,
    /// Events to deliver: their sequence numbers and `data:`.
    buffer: VecDeque<(i64, Box<str>)>,
    /// The last read returned less than a page: once its events are out,
    /// wait for a wake-up before reading again.
    caught_up: bool,
    /// Told when the session ends (the instance's periodic check).
    session: super::stream_sessions::Watched,
    /// The session's stamp, as the last batch's check found it live.
    checked: Option<session::Stamp>,
    /// Counts this stream in `/metrics` until it ends.
    _open: crate::metrics::Open,
}

impl Follow {
    /// The session's check and the events after `last` (at most a page),
    /// in one round trip ([`db::trip`]: two transactions, the check as
    /// the service, the read as the user), with the session's stamp. `None`
    /// when the session ended, or either failed: nothing read is then
    /// delivered.
    async fn batch(&self) -> Option<(session::Stamp, Vec<(i64, serde_json::Value)>)> {
        let chat_id = self.chat_id;
        let parts = vec![
            session::is_live(&self.token_hash, self.state.config.session_idle()),
            events::after_part(self.user_id.into(), chat_id.into(), self.last, PAGE),
        ];
        let rows = match db::trip::run_parts(&self.state.db, parts).await {
            Ok(rows) => rows,
            Err(err) => {
                // Fail closed; the browser reconnects with Last-Event-ID.
                tracing::warn!(error = %err, chat.id = %chat_id, "stream read failed");
                return None;
            }
        };
        match session::stamp_in(&rows[0])
            .map(|stamp| stamp.map(|stamp| (stamp, events::events_in(&rows[1]))))
        {
            Ok(Some((stamp, Ok(events)))) => Some((stamp, events)),
            Ok(None) => {
                tracing::info!(chat.id = %chat_id, "session ended; closing its stream");
                None
            }
            Ok(Some((_, Err(err)))) | Err(err) => {
                tracing::warn!(error = %err, chat.id = %chat_id, "stream read failed");
                None
            }
        }
    }

    /// Waits for a wake-up about this chat past `last` (or a restored
    /// `LISTEN`: wake-ups may have been lost), with the event itself when
    /// this instance appended it. `None` when the stream must end: its
    /// session ended, or the hub is gone (shutdown).
    async fn wait(&mut self) -> Option<Option<Arc<events::Direct>>> {
        loop {
            tokio::select! {
                woke = self.wakeups.heard.changed() => {
                    woke.ok()?;
                    let heard = self.wakeups.heard.borrow_and_update();
                    if heard.seq > self.last {
                        return Some(heard.direct.clone());
                    }
                }
                _ = self.restored.changed() => return Some(None),
                changed = self.session.ended.changed() => {
                    if changed.is_err() || *self.session.ended.borrow() {
                        return None;
                    }
                }
                () = self.state.hub.closed() => return None,
            }
        }
    }

    fn takes(&self, direct: &events::Direct) -> bool {
        takes(self.last, self.checked, direct)
    }

    async fn next(mut self) -> Option<(Result<Event, Infallible>, Self)> {
        loop {
            if let Some((seq, data)) = self.buffer.pop_front() {
                self.last = seq;
                let event = Event::default().id(seq.to_string()).data(data);
                return Some((Ok(event), self));
            }
            // A batch is over (or the read found nothing). A page that was
            // not full read everything committed when it ran, and a later
            // commit wakes `wait` (its wake-up is kept in the watch until
            // then): nothing to read before waiting. After the wait, read.
            if self.caught_up {
                let woke = self.wait().await?;
                if let Some(direct) = woke.filter(|direct| self.takes(direct))
                    && let Some(data) = &direct.data
                {
                    self.buffer.push_back((direct.seq, data.clone()));
                    continue;
                }
            }
            // Before every batch the session is checked, with the read
            // (one round trip); the batch is delivered only if the session
            // is live. Boxed: its state then exists only while it runs, and
            // an idle stream, parked in `wait`, is small.
            let (checked, rows) = Box::pin(self.batch()).await?;
            self.checked = Some(checked);
            self.caught_up = rows.len() < PAGE as usize;
            self.buffer.extend(
                rows.into_iter()
                    .map(|(seq, data)| (seq, data.to_string().into())),
            );
        }
    }
}

/// Whether a stream whose last event was `last`, and whose session's last
/// check found it live with stamp `checked`, may deliver `direct` without
/// a round trip: it is the next event, and that check holds for it (see
/// the module's documentation).
fn takes(last: i64, checked: Option<session::Stamp>, direct: &events::Direct) -> bool {
    direct.seq == last + 1
        && direct.data.is_some()
        && checked.is_some_and(|checked| {
            direct.epoch == Some(checked.epoch)
                && direct.at_ms.saturating_add(MARGIN_MS) < checked.ends_ms
        })
}

/// The handler.
#[utoipa::path(
    get,
    path = "/chats/{id}/stream",
    tag = "chats",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
        ("after" = Option<i64>, Query, description = "Replay events with a sequence number above this (`Last-Event-ID` wins when both are sent)"),
        ("Last-Event-ID" = Option<String>, Header, description = "The last event's `id:` (EventSource sends it when it reconnects)"),
    ),
    responses(
        (status = 200, description = "`text/event-stream`: each event's `id:` is its sequence number and its `data:` one chat event (the `ChatEvent` schema); a comment every few seconds keeps it open"),
        (status = 404, description = "No such chat of the caller", body = countersign_api::ErrorBody),
    ),
)]
pub async fn chat_stream(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(chat_id): Path<Uuid>,
    Query(query): Query<StreamQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let last_event_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok());
    let after = last_event_id.or(query.after).unwrap_or(0).max(0);
    // `CurrentUser` resolved this very cookie; the stream re-checks it.
    let token_hash = cookie(&headers, SESSION_COOKIE)
        .map(|token| session::token_hash(&token))
        .ok_or_else(ApiError::sign_in_required)?;

    // Subscribe before the first read, so nothing committed in between is
    // missed.
    let wakeups = state.hub.subscribe_chat(chat_id);
    let restored = state.hub.subscribe_restored();
    let mut tx = db::user_tx(&state.db, user.user_id).await?;
    let exists: bool = sqlx::query_scalar!(
        r#"select exists (select 1 from chats where id = $1) as "exists!""#,
        chat_id,
    )
    .fetch_one(&mut *tx)
    .await?;
    db::end_read(tx);
    if !exists {
        return Err(ApiError::NotFound("No such chat.".into()));
    }

    let keepalive = Duration::from_secs(state.config.keepalive_secs.max(1));
    let session = super::stream_sessions::StreamSessions::watch(&state, &token_hash);
    let follow = Follow {
        _open: state.metrics.sse_stream_open(),
        state,
        user_id: user.user_id,
        chat_id,
        token_hash,
        last: after,
        wakeups,
        restored,
        buffer: VecDeque::new(),
        caught_up: false,
        session,
        checked: None,
    };
    let stream = futures_util::stream::unfold(follow, Follow::next);
    let mut response = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(keepalive).text("keep-alive"))
        .into_response();
    // Proxies must pass events through as they come.
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    // Written on the bare socket once its head is due: an idle stream then
    // holds none of hyper's per-connection buffers (`http::conn`).
    response.extensions_mut().insert(super::conn::Detach);
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn future_size<A, F>(_: fn(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// An idle stream is parked in `next`: its future must not carry the
    /// database round trips' state (they are boxed, and each runs its
    /// query in a task of its own, `db::trip`). Sizes, not times.
    #[test]
    fn an_idle_stream_holds_no_database_future_state() {
        let next = future_size(Follow::next);
        let wait = future_size(|follow: &'static mut Follow| follow.wait());
        // What one batch's check and read add while they run.
        let batch = future_size(|follow: &'static Follow| follow.batch());
        let held = std::mem::size_of::<Follow>();
        // Here (debug build): next 1,592 B, the stream 504 B, its wait
        // 576 B, a batch 560 B. When the batch began its own transactions
        // it was ~3 KB, and unboxed it made `next` 3,584 B. The stream's
        // whole cost is the bench's figure (budget 8 KiB per idle stream);
        // this keeps its future to a fraction of that.
        assert!(
            next <= 2048,
            "next {next} B; Follow {held} B, a batch's round trips {batch} B, wait {wait} B"
        );
    }

    #[test]
    fn an_event_is_taken_without_a_read_only_when_the_last_check_holds_for_it() {
        let checked = Some(session::Stamp {
            epoch: 3,
            ends_ms: 100_000,
        });
        let direct = |seq, epoch, at_ms| events::Direct {
            seq,
            data: Some("{}".into()),
            epoch,
            at_ms,
        };
        assert!(takes(41, checked, &direct(42, Some(3), 50_000)));
        assert!(
            !takes(41, None, &direct(42, Some(3), 50_000)),
            "never checked"
        );
        assert!(
            !takes(40, checked, &direct(42, Some(3), 50_000)),
            "an event in between"
        );
        assert!(
            !takes(41, checked, &direct(42, Some(4), 50_000)),
            "the user's sessions changed since the check"
        );
        assert!(!takes(41, checked, &direct(42, None, 50_000)), "no epoch");
        let mut long = direct(42, Some(3), 50_000);
        long.data = None;
        assert!(!takes(41, checked, &long), "too long to hand over: read it");
        assert!(
            !takes(41, checked, &direct(42, Some(3), 99_500)),
            "too close to the session's end"
        );
    }
}
