//! Sending a message with a session this instance already knows
//! (`http::session::Known`): the turn's statement checks the session's
//! stamp instead of a lookup in front of it. Each attack below is a
//! session that changed after this instance last looked it up — signed out
//! from another instance, its user disabled or made to choose a new
//! password, or simply idle for too long — and must not send a message.

use crate::helpers::{GOOD_PASSWORD, TestApp, spawn_app, spawn_app_with};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::PgConnection;
use uuid::Uuid;

/// A signed-up user with a chat, whose one message this instance answered:
/// the session is known here now. Returns the user's id and the chat's.
async fn known_session(app: &TestApp) -> (Uuid, String) {
    let (user, _) = app.signed_up_user().await;
    let chat = app.create_chat("offline/demo").await;
    let mut stream = app.stream(&chat, None).await;
    app.send(&chat, "the first message").await;
    stream.until("turn_finished").await;
    (user, chat)
}

async fn post_message(app: &TestApp, chat: &str) -> (StatusCode, Value) {
    let res = app
        .post(
            &format!("/api/chats/{chat}/messages"),
            &json!({ "content": "the second message" }),
        )
        .await;
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}

async fn turns_of(su: &mut PgConnection, chat: &str) -> i64 {
    sqlx::query_scalar("select count(*) from turns where chat_id = $1::uuid")
        .bind(chat)
        .fetch_one(su)
        .await
        .expect("count")
}

async fn epoch_of(su: &mut PgConnection, user: Uuid) -> i64 {
    sqlx::query_scalar("select epoch from session_epochs where user_id = $1")
        .bind(user)
        .fetch_one(su)
        .await
        .expect("epoch")
}

/// A text delta appended as user `$1` to chat `$2`, with the epoch and clock
/// a stream of this instance would take it with.
const APPEND_STAMPED: &str = "select * from append_chat_event_stamped_as($1, $2::uuid, null, \
     'text_delta', '{\"type\": \"text_delta\", \"text\": \"x\"}'::jsonb, 'countersign_events')";

/// A turn stored as user `$1` with the stamp (`$2` epoch, `$3` end) in chat
/// `$4`.
const STORE_STAMPED: &str = "select * from store_turn_stamped_as($1, $2, $3, $4::uuid, \
     gen_random_uuid(), gen_random_uuid(), 'a title', 'a message', \
     '{\"type\": \"turn_started\"}'::jsonb, 'countersign_events')";

/// A session known here, then `change` (`$1` the user's id) written in
/// the database only, as another instance or an administrator writes it;
/// then a message. Returns the answer, and how many turns the chat has.
async fn known_then_changed(change: &str) -> (StatusCode, Value, i64) {
    let app = spawn_app().await;
    let (user, chat) = known_session(&app).await;
    let mut su = app.superuser().await;
    sqlx::query(sqlx::AssertSqlSafe(change))
        .bind(user)
        .execute(&mut su)
        .await
        .expect(change);
    let (status, body) = post_message(&app, &chat).await;
    (status, body, turns_of(&mut su, &chat).await)
}

#[tokio::test]
async fn a_known_session_signed_out_elsewhere_cannot_send_a_message() {
    let (status, body, turns) =
        known_then_changed("update sessions set revoked_at = now() where user_id = $1").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(turns, 1, "no turn was stored");
}

#[tokio::test]
async fn a_known_session_of_a_disabled_user_cannot_send_a_message() {
    let (status, body, turns) =
        known_then_changed("update users set disabled_at = now() where id = $1").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(turns, 1, "no turn was stored");
}

#[tokio::test]
async fn a_known_session_whose_password_was_reset_cannot_send_a_message() {
    let (status, body, turns) =
        known_then_changed("update users set must_change_password = true where id = $1").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["detail"], "password_change_required");
    assert_eq!(turns, 1, "no turn was stored");
}

/// Nothing in the database changes: the session ends by its idle limit
/// alone, and the stamp's end, checked by the database's clock, says so.
#[tokio::test]
async fn a_known_session_past_its_idle_limit_cannot_send_a_message() {
    let app = spawn_app_with(|config| config.session_idle_secs = 2).await;
    let (_, chat) = known_session(&app).await;
    // The passing of time is what is tested: there is no event to await.
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;

    let (status, body) = post_message(&app, &chat).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let mut su = app.superuser().await;
    assert_eq!(turns_of(&mut su, &chat).await, 1, "no turn was stored");
}

/// The other sessions of the same user are signed out (a password change
/// elsewhere): the epoch moved, the stamp of this one fails, and the
/// session, still live, is looked up again and sends the message.
#[tokio::test]
async fn a_known_session_still_live_after_a_change_sends_after_a_new_lookup() {
    let app = spawn_app().await;
    let (user, chat) = known_session(&app).await;
    let mut su = app.superuser().await;
    let before = epoch_of(&mut su, user).await;
    let other = app.at(&app.base);
    let email: String = sqlx::query_scalar("select email from users where id = $1")
        .bind(user)
        .fetch_one(&mut su)
        .await
        .expect("email");
    let (status, _, _) = other.login(&email, GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::OK);
    let res = other.post("/api/auth/logout", &json!({})).await;
    assert!(res.status().is_success(), "{}", res.status());
    assert!(
        epoch_of(&mut su, user).await > before,
        "the sign-out moved the epoch"
    );

    let (status, body) = post_message(&app, &chat).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(turns_of(&mut su, &chat).await, 2);
}

/// That a known session is taken without a lookup: a revocation written
/// with the epoch's trigger switched off is not seen by the known session
/// (and is by any request that looks it up). The triggers are what make
/// the known path safe; the tests above show they do.
#[tokio::test]
async fn a_known_session_is_not_looked_up_again() {
    let app = spawn_app().await;
    let (user, chat) = known_session(&app).await;
    let mut su = app.superuser().await;
    sqlx::query("alter table sessions disable trigger session_epoch_after_session_update")
        .execute(&mut su)
        .await
        .expect("trigger off");
    sqlx::query("update sessions set revoked_at = now() where user_id = $1")
        .bind(user)
        .execute(&mut su)
        .await
        .expect("revoke");
    sqlx::query("alter table sessions enable trigger session_epoch_after_session_update")
        .execute(&mut su)
        .await
        .expect("trigger on");

    let (status, body) = post_message(&app, &chat).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(
        app.get("/api/auth/me").await.status(),
        StatusCode::UNAUTHORIZED,
        "a lookup sees the revocation"
    );
}

/// Which changes move a user's epoch: every change to the user or to one
/// of their sessions, but a session's `last_seen_at` alone (every lookup
/// refreshes it) and a new session.
#[tokio::test]
async fn every_change_to_a_user_or_their_sessions_moves_the_epoch() {
    let app = spawn_app().await;
    let (user, _) = app.signed_up_user().await;
    let mut su = app.superuser().await;
    let mut epoch = epoch_of(&mut su, user).await;
    let changes = [
        (
            "update sessions set last_seen_at = now() where user_id = $1",
            false,
        ),
        (
            "update sessions set mfa_verified_at = now() where user_id = $1",
            true,
        ),
        (
            "update sessions set expires_at = expires_at - interval '1 second' where user_id = $1",
            true,
        ),
        (
            "update sessions set revoked_at = now() where user_id = $1",
            true,
        ),
        (
            "update users set is_admin = not is_admin where id = $1",
            true,
        ),
        (
            "update users set must_change_password = true where id = $1",
            true,
        ),
        ("update users set disabled_at = now() where id = $1", true),
        (
            "update users set password_hash = password_hash || 'x' where id = $1",
            true,
        ),
        ("delete from sessions where user_id = $1", true),
    ];
    for (change, moves) in changes {
        sqlx::query(change)
            .bind(user)
            .execute(&mut su)
            .await
            .expect(change);
        let now = epoch_of(&mut su, user).await;
        assert_eq!(now > epoch, moves, "{change}: {epoch} → {now}");
        epoch = now;
    }
    // A new session: no stamp names it yet.
    let again = app.at(&app.base);
    let email: String = sqlx::query_scalar("select email from users where id = $1")
        .bind(user)
        .fetch_one(&mut su)
        .await
        .expect("email");
    sqlx::query("update users set disabled_at = null, must_change_password = false where id = $1")
        .bind(user)
        .execute(&mut su)
        .await
        .expect("enable");
    epoch = epoch_of(&mut su, user).await;
    let _ = again.login(&email, GOOD_PASSWORD).await;
    assert_eq!(
        epoch_of(&mut su, user).await,
        epoch,
        "a sign-in moves nothing"
    );

    // A deleted user takes their epoch along, and nothing fails.
    sqlx::query("delete from users where id = $1")
        .bind(user)
        .execute(&mut su)
        .await
        .expect("delete the user");
    let left: i64 = sqlx::query_scalar("select count(*) from session_epochs where user_id = $1")
        .bind(user)
        .fetch_one(&mut su)
        .await
        .expect("count");
    assert_eq!(left, 0);
}

/// A user reads their own epoch and no one else's, and can write none: a
/// user who could set their epoch back would make an old stamp hold again.
#[tokio::test]
async fn a_user_reads_only_their_own_epoch_and_writes_none() {
    let app = spawn_app().await;
    let (a, _) = app.signed_up_user().await;
    let (b, _) = app.signed_up_user().await;

    let mut tx = countersign::db::user_tx(&app.pool, a)
        .await
        .expect("user tx");
    // No WHERE clause: the policy alone decides.
    let visible: Vec<Uuid> = sqlx::query_scalar("select user_id from session_epochs")
        .fetch_all(&mut *tx)
        .await
        .expect("select");
    assert_eq!(visible, vec![a], "B's epoch must be invisible to A");
    drop(tx);
    for write in [
        "update session_epochs set epoch = 0",
        "delete from session_epochs",
        "insert into session_epochs (user_id) values ($1)",
    ] {
        let mut tx = countersign::db::user_tx(&app.pool, a)
            .await
            .expect("user tx");
        let query = sqlx::query(write);
        let query = if write.contains("$1") {
            query.bind(b)
        } else {
            query
        };
        let err = query
            .execute(&mut *tx)
            .await
            .expect_err("authenticated must not write it");
        assert_eq!(
            err.as_database_error().and_then(|e| e.code()).as_deref(),
            Some("42501"),
            "{write}: {err}"
        );
    }
}

/// An event appended while a change to the user's sessions is under way
/// waits for that change to commit, and carries the epoch after it: a
/// stream of this instance never takes an event committed after a sign-out
/// as if its session still stood (`http::stream`'s direct delivery).
#[tokio::test]
async fn an_append_during_a_sign_out_waits_for_it_and_carries_the_new_epoch() {
    use sqlx::Connection as _;
    let app = spawn_app().await;
    let (user, _) = app.signed_up_user().await;
    let chat = app.create_chat("offline/demo").await;
    let mut su = app.superuser().await;
    let before = epoch_of(&mut su, user).await;
    let mut sign_out = su.begin().await.expect("begin");
    sqlx::query("update sessions set revoked_at = now() where user_id = $1")
        .bind(user)
        .execute(&mut *sign_out)
        .await
        .expect("revoke");

    let pool = app.pool.clone();
    let mut append = tokio::spawn(async move {
        sqlx::query_as::<_, (i64, Option<i64>, i64)>(APPEND_STAMPED)
            .bind(user)
            .bind(chat)
            .fetch_one(&pool)
            .await
    });
    waits_for_the_lock(
        &app,
        &mut append,
        "the append did not wait for the sign-out",
    )
    .await;
    sign_out.commit().await.expect("commit");
    let (_, epoch, _) = append.await.expect("task").expect("append");
    assert_eq!(epoch, Some(before + 1), "the epoch after the sign-out");
}

/// Until an advisory lock is waited for (the statement `task` runs waits
/// on the user's session lock), or `task` ends first: then it panics with
/// `what`.
async fn waits_for_the_lock<T: std::fmt::Debug>(
    app: &TestApp,
    task: &mut tokio::task::JoinHandle<T>,
    what: &str,
) {
    let mut watcher = app.superuser().await;
    let waiting = async {
        while !sqlx::query_scalar::<_, bool>(
            "select exists (select 1 from pg_locks where locktype = 'advisory' and not granted)",
        )
        .fetch_one(&mut watcher)
        .await
        .expect("locks")
        {}
    };
    tokio::select! {
        () = waiting => {}
        ended = &mut *task => panic!("{what}: {ended:?}"),
    }
    assert!(!task.is_finished(), "{what}");
}

/// A turn stored while a change to the user's sessions is under way waits
/// for that change to commit, and then stores nothing: its stamp's check
/// runs under the user's session lock, so the `turn_started` a stored turn
/// hands to this instance's streams carries an epoch no change had moved
/// when it committed (`http::stream`'s direct delivery).
#[tokio::test]
async fn a_turn_stored_during_a_sign_out_waits_for_it_and_stores_nothing() {
    use sqlx::Connection as _;
    let app = spawn_app().await;
    let (user, _) = app.signed_up_user().await;
    let chat = app.create_chat("offline/demo").await;
    let mut su = app.superuser().await;
    let epoch = epoch_of(&mut su, user).await;
    let in_an_hour = time::OffsetDateTime::now_utc().unix_timestamp() * 1000 + 3_600_000;
    let mut sign_out = su.begin().await.expect("begin");
    sqlx::query("update sessions set revoked_at = now() where user_id = $1")
        .bind(user)
        .execute(&mut *sign_out)
        .await
        .expect("revoke");

    let pool = app.pool.clone();
    let chat_id = chat.clone();
    let mut store = tokio::spawn(async move {
        sqlx::query_as::<_, (i64, String, i64, i64, i64)>(STORE_STAMPED)
            .bind(user)
            .bind(epoch)
            .bind(in_an_hour)
            .bind(chat_id)
            .fetch_one(&pool)
            .await
    });
    waits_for_the_lock(&app, &mut store, "the store did not wait for the sign-out").await;
    sign_out.commit().await.expect("commit");
    let err = store
        .await
        .expect("task")
        .expect_err("a turn stored after the sign-out");
    assert!(
        countersign::auth::session::is_stale_stamp(&err),
        "the stamp's check failed: {err}"
    );
    assert_eq!(turns_of(&mut su, &chat).await, 0, "nothing stored");
}

/// The SQLSTATE `query` fails with in a transaction at isolation `level`
/// (rolled back); panics if it runs.
async fn refused_at(
    su: &mut PgConnection,
    level: &str,
    query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
) -> Option<String> {
    use sqlx::Connection as _;
    let mut tx = su.begin().await.expect("begin");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "set transaction isolation level {level}"
    )))
    .execute(&mut *tx)
    .await
    .expect("level");
    let err = query
        .execute(&mut *tx)
        .await
        .err()
        .unwrap_or_else(|| panic!("it ran at {level}"));
    tx.rollback().await.expect("rollback");
    err.as_database_error()
        .and_then(|e| e.code())
        .map(|code| code.into_owned())
}

/// The stamped writes read the user's epoch after waiting for the user's
/// lock, which holds only if that read takes a snapshot of its own (READ
/// COMMITTED): at REPEATABLE READ the snapshot would predate the wait, and
/// a sign-out committed meanwhile would go unseen. Both refuse to run at
/// any other level.
#[tokio::test]
async fn the_stamped_writes_refuse_to_run_above_read_committed() {
    let app = spawn_app().await;
    let (user, _) = app.signed_up_user().await;
    let chat = app.create_chat("offline/demo").await;
    let mut su = app.superuser().await;
    let epoch = epoch_of(&mut su, user).await;
    let in_an_hour = time::OffsetDateTime::now_utc().unix_timestamp() * 1000 + 3_600_000;
    for level in ["repeatable read", "serializable"] {
        let append = sqlx::query(APPEND_STAMPED).bind(user).bind(&chat);
        assert_eq!(
            refused_at(&mut su, level, append).await.as_deref(),
            Some("CSISO"),
            "append at {level}"
        );
        let store = sqlx::query(STORE_STAMPED)
            .bind(user)
            .bind(epoch)
            .bind(in_an_hour)
            .bind(&chat);
        assert_eq!(
            refused_at(&mut su, level, store).await.as_deref(),
            Some("CSISO"),
            "store at {level}"
        );
    }
    assert_eq!(turns_of(&mut su, &chat).await, 0, "nothing stored");
}

/// A turn stored with a stamp wakes this instance's streams of its chat
/// with its `turn_started` itself — the event as stored, and the epoch it
/// was checked under — so they deliver it without reading it back.
#[tokio::test]
async fn a_stored_turn_hands_its_turn_started_to_this_instances_streams() {
    use countersign::auth::session::Stamp;
    let app = spawn_app().await;
    let (user, _) = app.signed_up_user().await;
    let chat = app.create_chat("offline/demo").await;
    let chat_id: Uuid = chat.parse().expect("uuid");
    let mut su = app.superuser().await;
    let epoch = epoch_of(&mut su, user).await;
    let state = crate::helpers::state_of(&app).await;
    let mut wakeups = state.hub.subscribe_chat(chat_id);
    let stamp = Stamp {
        epoch,
        ends_ms: time::OffsetDateTime::now_utc().unix_timestamp() * 1000 + 3_600_000,
    };
    countersign::turns::start(&state, user, stamp, chat_id, "hello")
        .await
        .expect("start");
    wakeups.heard.changed().await.expect("woken");
    let heard = wakeups.heard.borrow_and_update().clone();
    let direct = heard.direct.expect("woken with the event itself");
    assert_eq!(direct.seq, heard.seq);
    assert_eq!(direct.epoch, Some(epoch), "the stamp's epoch");
    let handed: Value =
        serde_json::from_str(direct.data.as_deref().expect("short: carried")).expect("json");
    let stored: Value =
        sqlx::query_scalar("select data from chat_events where chat_id = $1 and seq = $2")
            .bind(chat_id)
            .bind(direct.seq)
            .fetch_one(&mut su)
            .await
            .expect("stored");
    assert_eq!(handed["type"], "turn_started");
    assert_eq!(handed["model"], "offline/demo");
    assert_eq!(handed, stored, "the event as stored");
}

/// The tool box fetches a connector whose tool list is old before a turn
/// (and records what changed): on the user's behalf, so only once the
/// stamp of the session that sent the message holds. A stamp that does
/// not stops it before it connects.
#[tokio::test]
async fn a_stamp_that_no_longer_holds_stops_the_tool_box_before_it_fetches_a_connector() {
    use countersign::auth::session::{self, Stamp};
    // Every list is old: listing the tools fetches them first.
    let s = crate::helpers::setup(|c| c.tools_max_age_secs = 0).await;
    let state = crate::helpers::state_of(&s.app).await;
    let mut su = s.app.superuser().await;
    async fn checked_at(su: &mut PgConnection, connector: &str) -> Option<time::OffsetDateTime> {
        sqlx::query_scalar("select last_checked_at from connectors where id = $1::uuid")
            .bind(connector)
            .fetch_one(su)
            .await
            .expect("connector")
    }
    let before = checked_at(&mut su, &s.connector).await;
    let in_an_hour = time::OffsetDateTime::now_utc().unix_timestamp() * 1000 + 3_600_000;
    let epoch = epoch_of(&mut su, s.user).await;

    let gone = Stamp {
        epoch: epoch - 1,
        ends_ms: in_an_hour,
    };
    let (tools, reads) = state
        .tools
        .tools_with(
            &state,
            s.user,
            Vec::new(),
            Some(session::stamp_check(s.user, gone)),
        )
        .await;
    assert!(tools.is_empty(), "no tools offered");
    assert!(
        reads.as_ref().is_err_and(session::is_stale_stamp),
        "{reads:?}"
    );
    assert_eq!(
        checked_at(&mut su, &s.connector).await,
        before,
        "the connector was fetched"
    );

    // Control: with a stamp that holds, the same call fetches it.
    let holds = Stamp {
        epoch,
        ends_ms: in_an_hour,
    };
    let (tools, reads) = state
        .tools
        .tools_with(
            &state,
            s.user,
            Vec::new(),
            Some(session::stamp_check(s.user, holds)),
        )
        .await;
    assert!(reads.is_ok() && !tools.is_empty(), "{reads:?}");
    assert_ne!(checked_at(&mut su, &s.connector).await, before, "fetched");
}
