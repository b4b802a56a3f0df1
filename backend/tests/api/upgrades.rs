//! A database upgraded across the migrations that fill in a new column or
//! table from what the database already holds: each must see those rows,
//! though it runs as the tables' owner under forced row-level security.

use crate::test_db::TestDb;
use countersign::db;
use sqlx::{Connection as _, PgConnection, migrate::Migrator};
use uuid::Uuid;

/// The first migration that fills in from existing rows (`decide_by`):
/// the database is migrated to just before it.
const FIRST_BACKFILL: i64 = 20261201000060;

/// A user, a chat with three messages and a pending call, written before
/// the backfilling migrations ran, as a database in use holds them; then
/// the rest of the migrations: the call has a deadline, the chat counts
/// its messages, and the user has a session epoch.
#[tokio::test]
async fn an_upgraded_database_counts_the_messages_and_epochs_it_already_held() {
    let test_db = TestDb::create("t").await;
    let before = Migrator::with_migrations(
        db::MIGRATOR
            .iter()
            .filter(|m| m.version < FIRST_BACKFILL)
            .cloned()
            .collect(),
    );
    let mut owner = PgConnection::connect(&test_db.owner_url)
        .await
        .expect("owner");
    before.run(&mut owner).await.expect("migrate to before");

    let mut su = PgConnection::connect(&test_db.superuser_url)
        .await
        .expect("superuser");
    let (user, chat, turn) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    for (sql, ids) in [
        (
            "insert into users (id, email, password_hash) values ($1, 'old@example.test', 'x')",
            vec![user],
        ),
        (
            "insert into chats (id, user_id, model, last_seq) values ($1, $2, 'offline/demo', 1)",
            vec![chat, user],
        ),
        (
            "insert into turns (id, chat_id, user_id, model, started_seq, status) \
             values ($1, $2, $3, 'offline/demo', 1, 'done')",
            vec![turn, chat, user],
        ),
        (
            "insert into messages (id, chat_id, user_id, turn_id, role, content) values \
             (gen_random_uuid(), $1, $2, $3, 'user', 'one'), \
             (gen_random_uuid(), $1, $2, $3, 'assistant', 'two'), \
             (gen_random_uuid(), $1, $2, $3, 'user', 'three')",
            vec![chat, user, turn],
        ),
        (
            "insert into mcp_pending_calls (id, user_id, chat_id, turn_id, call_id, \
             connector_id, connector_name, tool_name, model_tool_name, arguments, \
             arguments_canonical, arguments_digest, descriptor_digest, destination, reason, \
             hmac_key_id, hmac, expires_at, destination_url, offered_grants) values \
             (gen_random_uuid(), $1, $2, $3, 'call-1', gen_random_uuid(), 'Demo', 'echo', \
             'demo__echo', '{}', '{}', repeat('a', 64), 'digest', 'demo.test', 'a reason', \
             'key-1', 'mac', now() + interval '1 hour', 'https://demo.test/mcp', \
             array['once'])",
            vec![user, chat, turn],
        ),
    ] {
        let mut query = sqlx::query(sql);
        for id in ids {
            query = query.bind(id);
        }
        query.execute(&mut su).await.expect(sql);
    }

    owner.close().await.expect("close");

    db::migrate(&test_db.owner_url)
        .await
        .expect("migrate the rest");
    let deadline: bool = sqlx::query_scalar(
        "select decide_by = least(created_at + interval '90 seconds', expires_at) \
         from mcp_pending_calls where chat_id = $1",
    )
    .bind(chat)
    .fetch_one(&mut su)
    .await
    .expect("pending call");
    assert!(deadline, "the pending call has the default deadline");
    let count: i64 = sqlx::query_scalar("select message_count from chats where id = $1")
        .bind(chat)
        .fetch_one(&mut su)
        .await
        .expect("chat");
    assert_eq!(count, 3, "the chat counts the messages it had");
    let epochs: i64 = sqlx::query_scalar("select count(*) from session_epochs where user_id = $1")
        .bind(user)
        .fetch_one(&mut su)
        .await
        .expect("epochs");
    assert_eq!(epochs, 1, "the user has a session epoch");
    let forced: Vec<(String, bool)> = sqlx::query_as(
        "select relname::text, relforcerowsecurity from pg_class \
         where relname in ('chats', 'messages', 'users', 'session_epochs', 'mcp_pending_calls') \
         order by relname",
    )
    .fetch_all(&mut su)
    .await
    .expect("catalog");
    assert!(
        forced.iter().all(|(_, force)| *force),
        "row-level security is forced again: {forced:?}"
    );
}

/// A database that recorded a corrected migration with the checksum it was
/// released with (`db::REPAIRED`) migrates, and records the corrected one:
/// sqlx would otherwise refuse it as a changed migration.
#[tokio::test]
async fn a_database_that_recorded_a_corrected_migration_as_released_still_migrates() {
    let test_db = TestDb::migrated().await;
    let mut su = PgConnection::connect(&test_db.superuser_url)
        .await
        .expect("superuser");
    for (version, released) in db::REPAIRED {
        sqlx::query("update _sqlx_migrations set checksum = decode($1, 'hex') where version = $2")
            .bind(released)
            .bind(version)
            .execute(&mut su)
            .await
            .expect("record the released checksum");
    }
    db::migrate(&test_db.owner_url)
        .await
        .expect("migrates, the checksums repaired");
    for (version, _) in db::REPAIRED {
        let recorded: Vec<u8> =
            sqlx::query_scalar("select checksum from _sqlx_migrations where version = $1")
                .bind(version)
                .fetch_one(&mut su)
                .await
                .expect("recorded");
        let corrected = db::MIGRATOR
            .iter()
            .find(|m| m.version == version)
            .expect("migration")
            .checksum
            .to_vec();
        assert_eq!(recorded, corrected, "migration {version}");
    }
}
