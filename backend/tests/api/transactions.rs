//! How a transaction begins (`db::user_tx`, `db::service_tx`): in one
//! round trip, and safely when the caller goes away while the server's
//! answer to `BEGIN` is still on its way.
//!
//! The answer is held back by a loopback TCP relay between a one-connection
//! pool and Postgres, so the moment of the drop is not left to chance.

use crate::helpers::{TestApp, spawn_app};
use countersign::db;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use std::time::Duration;
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{TcpListener, TcpStream},
    sync::watch,
};

/// A relay to `upstream`: bytes to the server pass at once; bytes back
/// wait while `hold` is true.
async fn holding_relay(upstream: String) -> (u16, watch::Sender<bool>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (hold, held) = watch::channel(false);
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let server = TcpStream::connect(&upstream).await.expect("postgres");
            let (mut client_read, mut client_write) = client.into_split();
            let (mut server_read, mut server_write) = server.into_split();
            tokio::spawn(async move {
                let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
            });
            let mut held = held.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let Ok(n) = server_read.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    if held.wait_for(|hold| !*hold).await.is_err() {
                        return;
                    }
                    if client_write.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, hold)
}

/// A pool of one connection to the app's database, as the app connects:
/// whatever one use leaves on it, the next query meets.
async fn one_connection(app: &TestApp) -> sqlx::PgPool {
    PgPoolOptions::new()
        .max_connections(1)
        .connect_with((*app.pool.connect_options()).clone())
        .await
        .expect("pool")
}

/// Whether the connection runs inside a transaction begun before this
/// statement: then `now()` (the transaction's start) is earlier than the
/// statement's own start. A simple query, so that outside a transaction
/// block the two are one instant (the extended protocol's messages each
/// move the statement's clock).
async fn in_an_old_transaction(pool: &sqlx::PgPool) -> bool {
    use sqlx::Row as _;
    let mut conn = pool.acquire().await.expect("connection");
    sqlx::raw_sql("select now() <> statement_timestamp()")
        .fetch_one(&mut *conn)
        .await
        .expect("select")
        .get::<bool, _>(0)
}

#[tokio::test]
async fn a_transaction_dropped_while_it_begins_is_not_left_open_for_the_next_request() {
    let app = spawn_app().await;
    let (user, _) = app.signed_up_user().await;
    let options: PgConnectOptions = (*app.pool.connect_options()).clone();
    let upstream = format!("{}:{}", options.get_host(), options.get_port());
    let (port, hold) = holding_relay(upstream).await;
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .test_before_acquire(false)
        .connect_with(options.port(port))
        .await
        .expect("pool through the relay");
    assert!(!in_an_old_transaction(&pool).await, "a clean start");

    for (what, begins) in [("user", true), ("service", false)] {
        // The pool takes a connection back with a round trip of its own:
        // hold nothing until the connection is idle in the pool again.
        tokio::time::timeout(Duration::from_secs(10), async {
            while pool.num_idle() == 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the connection back in the pool");
        hold.send_replace(true);
        // The caller gives up while the server's answer to BEGIN is held.
        let dropped = tokio::time::timeout(Duration::from_millis(200), async {
            if begins {
                db::user_tx(&pool, user).await.map(drop)
            } else {
                db::service_tx(&pool).await.map(drop)
            }
        })
        .await;
        assert!(dropped.is_err(), "{what}: BEGIN answered while held");
        hold.send_replace(false);

        assert!(
            !in_an_old_transaction(&pool).await,
            "{what}: the next request ran inside the dropped caller's transaction"
        );
        let mut conn = pool.acquire().await.expect("connection");
        let role: String = sqlx::query_scalar("select current_user::text")
            .fetch_one(&mut *conn)
            .await
            .expect("role");
        assert_eq!(
            role,
            db::APP_ROLE,
            "{what}: the role did not outlive its transaction"
        );
    }

    // And a transaction begun normally still is one, with its role.
    let mut tx = db::user_tx(&pool, user).await.expect("tx");
    let (role, uid): (String, String) =
        sqlx::query_as("select current_user::text, current_setting('countersign.user_id')")
            .fetch_one(&mut *tx)
            .await
            .expect("select");
    assert_eq!((role.as_str(), uid), ("authenticated", user.to_string()));
}

/// The server's connections plan a statement once, on its first use, and
/// reuse that plan whatever the values (`db::connect`).
#[tokio::test]
async fn the_servers_connections_keep_one_plan_per_statement() {
    use sqlx::Row as _;
    let app = spawn_app().await;
    let mode: String = sqlx::raw_sql("show plan_cache_mode")
        .fetch_one(&app.pool)
        .await
        .expect("show")
        .get(0);
    assert_eq!(mode, "force_generic_plan");
}

/// A read sent as a transaction by itself (`db::trip`): it runs as the
/// user it names, under row-level security, and its role and user id end
/// with it, whether it succeeded or failed; in a trip of several parts,
/// each part runs as its own role, whatever the part before it ran as.
#[tokio::test]
async fn a_trip_runs_as_its_user_and_leaves_nothing_on_its_connection() {
    use countersign::{auth::session, db::trip, events};
    use countersign_api::ChatEvent;
    let app = spawn_app().await;
    let (alice, _) = app.signed_up_user().await;
    let (bob, _) = app.signed_up_user().await;
    let bobs_chat: uuid::Uuid = app.create_chat("offline/demo").await.parse().expect("id");
    let mut tx = db::user_tx(&app.pool, bob).await.expect("tx");
    let event = ChatEvent::Error {
        turn_id: String::new(),
        message: "Bob's".to_owned(),
    };
    let seq = events::append(&mut tx, bobs_chat, None, &event)
        .await
        .expect("append");
    tx.commit().await.expect("commit");

    let pool = one_connection(&app).await;
    // A simple query, as `in_an_old_transaction` explains.
    let left_behind = || async {
        use sqlx::Row as _;
        let mut conn = pool.acquire().await.expect("connection");
        let row = sqlx::raw_sql(
            "select current_user::text, coalesce(current_setting('countersign.user_id', true), ''), \
                    now() <> statement_timestamp()",
        )
        .fetch_one(&mut *conn)
        .await
        .expect("select");
        (
            row.get::<String, _>(0),
            row.get::<String, _>(1),
            row.get::<bool, _>(2),
        )
    };
    let nothing = (db::APP_ROLE.to_owned(), String::new(), false);

    // Alice reads none of Bob's events: row-level security hides them.
    let alices = events::after(&pool, alice.into(), bobs_chat.into(), 0, 100)
        .await
        .expect("read");
    assert!(alices.is_empty(), "{alices:?}");
    assert_eq!(left_behind().await, nothing, "after Alice's read");

    // Bob reads his.
    let bobs = events::after(&pool, bob.into(), bobs_chat.into(), seq - 1, 100)
        .await
        .expect("read");
    assert_eq!(bobs.len(), 1);
    assert_eq!(
        (bobs[0].0, bobs[0].1["message"].as_str()),
        (seq, Some("Bob's"))
    );
    assert_eq!(left_behind().await, nothing, "after Bob's read");

    // As `service_role`: a session lookup.
    let found = session::lookup(&pool, "no such token", Duration::from_secs(60))
        .await
        .expect("lookup");
    assert!(found.is_none());
    assert_eq!(left_behind().await, nothing, "after a service read");

    // A trip that fails rolls back, and its connection is outside any
    // transaction (a negative LIMIT is refused by Postgres).
    let failed = events::after(&pool, bob.into(), bobs_chat.into(), 0, -1).await;
    assert!(failed.is_err(), "{failed:?}");
    assert_eq!(left_behind().await, nothing, "after a trip that failed");

    // Several parts in one trip, each as its own role: a stream's batch.
    // Alice's read after a service check is still only Alice's.
    let live = || session::is_live(&[0; 32], Duration::from_secs(60));
    let rows = trip::run_parts(
        &pool,
        vec![
            live(),
            events::after_part(alice.into(), bobs_chat.into(), 0, 100),
        ],
    )
    .await
    .expect("trip");
    assert!(
        session::stamp_in(&rows[0]).expect("live").is_none(),
        "no session has that token"
    );
    assert!(
        rows[1].is_empty(),
        "Alice read Bob's events: {:?}",
        rows[1].len()
    );
    assert_eq!(left_behind().await, nothing, "after a two-part trip");

    // Bob's read, then a service check: each part sees what its role sees.
    let rows = trip::run_parts(
        &pool,
        vec![
            events::after_part(bob.into(), bobs_chat.into(), seq - 1, 100),
            live(),
        ],
    )
    .await
    .expect("trip");
    assert_eq!(events::events_in(&rows[0]).expect("events").len(), 1);
    assert!(
        session::stamp_in(&rows[1]).expect("live").is_none(),
        "no session has that token"
    );
    assert_eq!(left_behind().await, nothing, "after a two-part trip");

    // A first part that fails ends the trip, and nothing is left behind:
    // its transaction is rolled back, not left aborted on the connection.
    let failed = trip::run_parts(
        &pool,
        vec![
            events::after_part(bob.into(), bobs_chat.into(), 0, -1),
            live(),
        ],
    )
    .await;
    assert!(failed.is_err(), "{failed:?}");
    assert_eq!(
        left_behind().await,
        nothing,
        "after a two-part trip that failed"
    );
}

/// `db::service_locked` (the activity chain's append: the `BEGIN`, the
/// lock and a read in one round trip, a transaction sqlx does not track)
/// ends its transaction whatever its work does: committed when it
/// succeeds; rolled back, its writes gone, when it fails; and when it
/// panics the connection is closed, never handed to the next request
/// inside the transaction (as the service, with its lock held).
#[tokio::test]
async fn a_locked_service_transaction_ends_whatever_its_work_does() {
    use countersign::db::trip::Statement;
    use sqlx::Row as _;
    let app = spawn_app().await;
    let pool = one_connection(&app).await;
    let left_behind = || async {
        let mut conn = pool.acquire().await.expect("connection");
        let row = sqlx::raw_sql(
            "select current_user::text, now() <> statement_timestamp(), \
                    (select count(*) from pg_locks where locktype = 'advisory' \
                      and pid = pg_backend_pid()), \
                    current_setting('application_name') = 'written'",
        )
        .fetch_one(&mut *conn)
        .await
        .expect("select");
        (
            row.get::<String, _>(0),
            row.get::<bool, _>(1),
            row.get::<i64, _>(2),
            row.get::<bool, _>(3),
        )
    };
    let nothing = (db::APP_ROLE.to_owned(), false, 0, false);
    let key = 4242;

    // Its work reads what `read` returned, as the service, under the lock.
    static WHO: Statement = Statement {
        name: "cs_test_who",
        params: "",
        sql: "select current_user::text as who",
    };
    static ONE: Statement = Statement {
        name: "cs_test_one",
        params: "",
        sql: "select 1",
    };
    let seen = db::service_locked(&pool, key, &WHO, |_, rows| {
        Box::pin(async move { rows[0].try_get::<String, _>("who") })
    })
    .await
    .expect("work");
    assert_eq!(seen, "service_role");
    assert_eq!(left_behind().await, nothing, "after a committed one");

    // Work that fails: rolled back, what it wrote gone.
    let failed = db::service_locked(&pool, key, &ONE, |conn, _| {
        Box::pin(async move {
            sqlx::raw_sql("select set_config('application_name', 'written', false)")
                .execute(&mut *conn)
                .await?;
            sqlx::raw_sql("select 1/0").execute(conn).await?;
            Ok(())
        })
    })
    .await;
    assert!(failed.is_err(), "{failed:?}");
    assert_eq!(left_behind().await, nothing, "after one whose work failed");

    // Work that panics: the connection is closed, not reused.
    let panicked = db::service_locked(&pool, key, &ONE, move |_, _| {
        Box::pin(async move {
            if key == 4242 {
                panic!("work panicked");
            }
            Ok(())
        })
    })
    .await;
    assert!(panicked.is_err(), "{panicked:?}");
    assert_eq!(
        left_behind().await,
        nothing,
        "after one whose work panicked"
    );
}

/// Every statement a trip runs prepares against the schema, as the role
/// it runs as: a renamed column fails here, not on a user's request.
#[tokio::test]
async fn every_trip_statement_prepares_against_the_schema() {
    use countersign::{
        approvals, auth::session, db::trip::Statement, events, models, policy, tools,
    };
    let app = spawn_app().await;
    let statements: Vec<(&Statement, &str)> = events::TRIPS
        .iter()
        .chain(&tools::connector::TRIPS)
        .chain(&countersign::turns::TRIPS)
        .map(|s| (*s, "authenticated"))
        .chain(
            session::TRIPS
                .iter()
                .chain(&policy::TRIPS)
                .chain(&models::TRIPS)
                .chain(&approvals::TRIPS)
                .chain(&countersign::connectors::TRIPS)
                .chain(&countersign::audit::TRIPS)
                .map(|s| (*s, "service_role")),
        )
        .collect();
    for (statement, role) in statements {
        let mut conn = app.pool.acquire().await.expect("connection");
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "begin; select set_config('role', '{role}', true); \
             prepare checked {} as {}; deallocate checked; rollback",
            statement.params, statement.sql
        )))
        .execute(&mut *conn)
        .await
        .unwrap_or_else(|err| panic!("{}: {err}", statement.name));
    }
}
