//! The database's own guarantees (DESIGN §3), checked against the real
//! catalog and with real role switches: these hold even for a query that
//! forgets its `where user_id = …`.

use crate::helpers::spawn_app;
use countersign::db;
use sqlx::{Connection as _, PgConnection};

const SQLSTATE_INSUFFICIENT_PRIVILEGE: &str = "42501";

fn is_permission_denied(err: &sqlx::Error) -> bool {
    err.as_database_error()
        .and_then(|e| e.code())
        .is_some_and(|code| code == SQLSTATE_INSUFFICIENT_PRIVILEGE)
}

#[tokio::test]
async fn as_authenticated_user_a_sees_and_changes_only_their_own_rows() {
    let app = spawn_app().await;
    let (a, _) = app.signed_up_user().await;
    let (b, _) = app.signed_up_user().await;

    let mut tx = db::user_tx(&app.pool, a).await.expect("user tx");
    // No WHERE clause: the policy alone decides.
    let visible: Vec<uuid::Uuid> = sqlx::query_scalar("select user_id from profiles")
        .fetch_all(&mut *tx)
        .await
        .expect("select");
    assert_eq!(visible, vec![a], "B's profile must be invisible to A");

    let changed = sqlx::query("update profiles set display_name = 'pwned' where user_id = $1")
        .bind(b)
        .execute(&mut *tx)
        .await
        .expect("update");
    assert_eq!(changed.rows_affected(), 0, "A cannot change B's row");

    let forged = sqlx::query("insert into profiles (user_id, display_name) values ($1, 'forged')")
        .bind(b)
        .execute(&mut *tx)
        .await;
    assert!(forged.is_err(), "A cannot write a row owned by B");
}

#[tokio::test]
async fn anon_and_authenticated_cannot_read_sessions_or_password_hashes() {
    let app = spawn_app().await;
    let (a, _) = app.signed_up_user().await;

    for table in [
        "sessions",
        "users",
        "login_failures",
        "signup_attempts",
        "provider_keys",
    ] {
        let mut tx = db::user_tx(&app.pool, a).await.expect("user tx");
        let err = sqlx::query(sqlx::AssertSqlSafe(format!("select * from {table}")))
            .fetch_all(&mut *tx)
            .await
            .expect_err("authenticated must not read it");
        assert!(
            is_permission_denied(&err),
            "authenticated on {table}: {err}"
        );
        drop(tx);

        // The server's role may not become anon; a superuser may.
        let mut su = app.superuser().await;
        let mut tx = su.begin().await.expect("tx");
        sqlx::query("set local role anon")
            .execute(&mut *tx)
            .await
            .expect("switch to anon");
        let err = sqlx::query(sqlx::AssertSqlSafe(format!("select * from {table}")))
            .fetch_all(&mut *tx)
            .await
            .expect_err("anon must not read it");
        assert!(is_permission_denied(&err), "anon on {table}: {err}");
    }

    let mut tx = db::user_tx(&app.pool, a).await.expect("user tx");
    let err = sqlx::query("select password_hash from users where id = $1")
        .bind(a)
        .fetch_all(&mut *tx)
        .await
        .expect_err("not even one's own hash");
    assert!(is_permission_denied(&err), "{err}");
}

#[tokio::test]
async fn the_login_role_alone_can_read_nothing() {
    let app = spawn_app().await;
    app.signed_up_user().await;
    for table in ["users", "sessions", "profiles"] {
        let err = sqlx::query(sqlx::AssertSqlSafe(format!("select * from {table}")))
            .fetch_all(&app.pool)
            .await
            .expect_err("no role switch, no access");
        assert!(is_permission_denied(&err), "{table}: {err}");
    }
}

#[tokio::test]
async fn every_table_has_rls_enabled_and_forced() {
    let app = spawn_app().await;
    let mut su = app.superuser().await;
    let tables: Vec<(String, bool, bool)> = sqlx::query_as(
        "select c.oid::regclass::text, c.relrowsecurity, c.relforcerowsecurity
           from pg_class c join pg_namespace n on n.oid = c.relnamespace
          where c.relkind in ('r', 'p') and n.nspname in ('public', 'auth')
          order by 1",
    )
    .fetch_all(&mut su)
    .await
    .expect("catalog");
    assert!(
        tables.len() >= 5,
        "expected the foundation tables, got {tables:?}"
    );
    for (table, enabled, forced) in &tables {
        assert!(enabled, "{table}: row level security is not enabled");
        assert!(forced, "{table}: row level security is not forced");
    }
}

/// `user_id = auth.uid()` inlined into a scan reads the setting and casts
/// it once per row; `(select auth.uid())` is computed once per statement
/// (an InitPlan). Same rule, and a chat of 380 messages counted in 0.05
/// ms instead of 0.18 (migration `rls_uid_once`).
#[tokio::test]
async fn every_policy_reads_the_user_id_once_per_statement() {
    let app = spawn_app().await;
    let mut su = app.superuser().await;
    let policies: Vec<(String, String, Option<String>, Option<String>)> = sqlx::query_as(
        "select tablename::text, policyname::text, qual, with_check from pg_policies
          where schemaname = 'public' and 'authenticated' = any(roles) order by 1, 2",
    )
    .fetch_all(&mut su)
    .await
    .expect("catalog");
    let per_row = |expr: &Option<String>| {
        expr.as_deref().is_some_and(|e| {
            e.matches("auth.uid()").count() != e.matches("SELECT auth.uid()").count()
        })
    };
    let owners = policies
        .iter()
        .filter(|(_, _, q, _)| q.as_deref().is_some_and(|q| q.contains("auth.uid()")));
    assert!(
        owners.count() >= 9,
        "expected the owner policies, got {policies:?}"
    );
    for (table, policy, qual, check) in &policies {
        assert!(
            !per_row(qual) && !per_row(check),
            "{table}.{policy} reads auth.uid() once per row: {qual:?} {check:?}"
        );
    }
}

#[tokio::test]
async fn anon_has_no_privilege_on_any_table_and_service_tables_none_for_authenticated() {
    let app = spawn_app().await;
    let mut su = app.superuser().await;
    let grants: Vec<(String, String, String)> = sqlx::query_as(
        "select r.rolname::text, c.oid::regclass::text, p.priv
           from pg_class c
           join pg_namespace n on n.oid = c.relnamespace
           cross join pg_roles r
           cross join unnest(array['SELECT','INSERT','UPDATE','DELETE','TRUNCATE','REFERENCES','TRIGGER']) p(priv)
          where c.relkind in ('r', 'p', 'v', 'm', 'S') and n.nspname in ('public', 'auth')
            and r.rolname in ('anon', 'authenticated')
            and (c.relkind = 'S' and has_sequence_privilege(r.oid, c.oid, 'USAGE') and p.priv = 'SELECT'
                 or c.relkind <> 'S' and has_table_privilege(r.oid, c.oid, p.priv))
          order by 1, 2, 3",
    )
    .fetch_all(&mut su)
    .await
    .expect("catalog");
    let anon: Vec<_> = grants.iter().filter(|(r, _, _)| r == "anon").collect();
    assert!(anon.is_empty(), "anon may: {anon:?}");
    let service_only = [
        "users",
        "sessions",
        "login_failures",
        "signup_attempts",
        "provider_keys",
        "connector_secrets",
        "mcp_pending_calls",
        "connector_oauth",
        "oauth_states",
        "admin_policy",
        "_sqlx_migrations",
    ];
    let leaked: Vec<_> = grants
        .iter()
        .filter(|(_, t, _)| service_only.contains(&t.as_str()))
        .collect();
    assert!(
        leaked.is_empty(),
        "authenticated may touch service-only tables: {leaked:?}"
    );
}

#[tokio::test]
async fn the_servers_role_cannot_bypass_rls_and_an_owner_role_is_flagged() {
    let app = spawn_app().await;
    let risk = db::role_risk(&app.pool).await.expect("catalog");
    assert!(!risk.any(), "countersign_app must be harmless: {risk:?}");

    // The role that migrated owns the tables: the start-up check must say so.
    let owner_pool = db::connect(&app.owner_db_url).await.expect("owner pool");
    let risk = db::role_risk(&owner_pool).await.expect("catalog");
    assert!(risk.owned_relations > 0 && risk.any(), "{risk:?}");

    let mut su = PgConnection::connect(&app.superuser_db_url)
        .await
        .expect("su");
    let (superuser, bypass): (bool, bool) = sqlx::query_as(
        "select rolsuper, rolbypassrls from pg_roles where rolname = 'countersign_app'",
    )
    .fetch_one(&mut su)
    .await
    .expect("role");
    assert!(!superuser && !bypass);
}

#[tokio::test]
async fn as_authenticated_user_a_cannot_see_user_bs_chats_turns_messages_or_events() {
    let app = spawn_app().await;
    let (a, _) = app.signed_up_user().await;
    let chat_a = app.create_chat("offline/demo").await;
    let mut stream = app.stream(&chat_a, None).await;
    app.send(&chat_a, "A's privileged note").await;
    stream.until("turn_finished").await;

    let b_app = crate::helpers::TestApp {
        client: crate::helpers::new_client(),
        csrf: Default::default(),
        ..app
    };
    let (b, _) = b_app.signed_up_user().await;
    let chat_b = b_app.create_chat("offline/demo").await;

    for (user, own_chat, other) in [(a, &chat_a, "B"), (b, &chat_b, "A")] {
        let mut tx = db::user_tx(&b_app.pool, user).await.expect("user tx");
        for table in ["chats", "turns", "messages", "chat_events"] {
            let column = if table == "chats" { "id" } else { "chat_id" };
            // No WHERE on the owner: the policies alone decide.
            let chats: Vec<uuid::Uuid> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "select distinct {column} from {table}"
            )))
            .fetch_all(&mut *tx)
            .await
            .expect("select");
            assert!(
                chats.iter().all(|c| c.to_string() == *own_chat),
                "{table}: {other}'s rows are visible: {chats:?}"
            );
        }
    }
}

/// A turn's events are written as one statement outside any transaction
/// (`events::append_alone`, the migration's `append_chat_event_stamped_as`
/// around `append_chat_event_as`), whose
/// first act is the switch to the user. What a hostile caller of it could
/// try: another user's chat, and a transaction already under way as the
/// service (where the switch would turn it into a user's).
#[tokio::test]
async fn an_event_written_in_one_round_trip_runs_as_its_user_and_only_at_a_transactions_start() {
    use countersign::{events, ids::ChatId};
    use countersign_api::ChatEvent;

    let app = spawn_app().await;
    let (a, _) = app.signed_up_user().await;
    let chat_a: uuid::Uuid = app.create_chat("offline/demo").await.parse().expect("id");
    let b_app = crate::helpers::TestApp {
        client: crate::helpers::new_client(),
        csrf: Default::default(),
        ..app
    };
    let (b, _) = b_app.signed_up_user().await;
    let chat_b: uuid::Uuid = b_app.create_chat("offline/demo").await.parse().expect("id");
    let event = |text: &str| ChatEvent::Error {
        turn_id: uuid::Uuid::nil().to_string(),
        message: text.to_owned(),
    };
    async fn log_of(app: &crate::helpers::TestApp, chat: uuid::Uuid) -> Vec<String> {
        sqlx::query_scalar(
            "select data->>'message' from chat_events where chat_id = $1 order by seq",
        )
        .bind(chat)
        .fetch_all(&mut app.superuser().await)
        .await
        .expect("log")
    }

    let append = |chat: uuid::Uuid, text: &'static str| {
        let pool = b_app.pool.clone();
        async move {
            events::append_alone(&pool, a.into(), ChatId::from(chat), None, &event(text)).await
        }
    };

    // Its own chat: written, as the chat's next event.
    let seq = append(chat_a, "A's own")
        .await
        .expect("A appends to A's chat")
        .seq;
    assert!(seq >= 1);
    assert_eq!(log_of(&b_app, chat_a).await, vec!["A's own".to_owned()]);

    // B's chat, as A: the row-level security of the chats decides.
    let err = append(chat_b, "A into B's chat")
        .await
        .expect_err("A must not append to B's chat");
    assert!(matches!(err, sqlx::Error::RowNotFound), "{err}");
    assert!(
        log_of(&b_app, chat_b).await.is_empty(),
        "B's log was written"
    );

    // Inside a transaction that has its role already: refused, whichever
    // role it is, so the function never changes a transaction's role.
    for (service, function) in [true, false].into_iter().flat_map(|s| {
        [
            (s, "append_chat_event_as"),
            (s, "append_chat_event_stamped_as"),
        ]
    }) {
        let mut tx = if service {
            db::service_tx(&b_app.pool).await.expect("service tx")
        } else {
            db::user_tx(&b_app.pool, b).await.expect("user tx")
        };
        let err = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {function}($1, $2, null, 'error', '{{}}'::jsonb, 'countersign_events')"
        )))
        .bind(b)
        .bind(chat_b)
        .fetch_one(&mut *tx)
        .await
        .expect_err("a role is set: refused");
        assert!(
            err.to_string().contains("a role is set"),
            "{function}, service {service}: {err}"
        );
    }
    assert!(
        log_of(&b_app, chat_b).await.is_empty(),
        "B's log was written"
    );
}

/// A turn is stored as one statement outside any transaction (turns.rs
/// `store_alone`, the migration's `store_turn_as`), the switch to the user
/// its first act. Another user's chat stores nothing, a busy chat stores
/// nothing, and nothing means nothing: the chat's row, which the statement
/// writes before it tries the turn, is left as it was.
#[tokio::test]
async fn a_turn_stored_in_one_round_trip_runs_as_its_user_and_stores_all_or_nothing() {
    let app = spawn_app().await;
    let (a, _) = app.signed_up_user().await;
    let b_app = crate::helpers::TestApp {
        client: crate::helpers::new_client(),
        csrf: Default::default(),
        ..app
    };
    let (b, _) = b_app.signed_up_user().await;
    let chat_b: uuid::Uuid = b_app.create_chat("offline/demo").await.parse().expect("id");
    let store = |user: uuid::Uuid| {
        sqlx::query_as::<_, (i64, String, i64)>(
            "select * from store_turn_as($1, $2, $3, $4, 'a title', 'a message', \
             '{\"type\":\"turn_started\"}'::jsonb, 'countersign_events')",
        )
        .bind(user)
        .bind(chat_b)
        .bind(uuid::Uuid::new_v4())
        .bind(uuid::Uuid::new_v4())
    };
    let nothing_stored = |result: Result<(i64, String, i64), sqlx::Error>, what: &str| {
        let err = result.expect_err(what);
        assert_eq!(
            err.as_database_error().and_then(|e| e.code()).as_deref(),
            Some("CSNOT"),
            "{what}: {err}"
        );
    };
    let chat_row = || async {
        sqlx::query_as::<_, (i64, String, time::OffsetDateTime)>(
            "select last_seq, title, updated_at from chats where id = $1",
        )
        .bind(chat_b)
        .fetch_one(&mut b_app.superuser().await)
        .await
        .expect("chat")
    };

    let untouched = chat_row().await;
    nothing_stored(
        store(a).fetch_one(&b_app.pool).await,
        "A stores into B's chat",
    );
    assert_eq!(chat_row().await, untouched, "B's chat was changed by A");

    let (seq, model, messages) = store(b).fetch_one(&b_app.pool).await.expect("B's turn");
    assert_eq!((seq, model.as_str(), messages), (1, "offline/demo", 0));
    let stored = chat_row().await;
    assert_eq!((stored.0, stored.1.as_str()), (1, "a title"));

    // B's chat now has a running turn: a second one is refused, and the
    // sequence number it took is given back.
    nothing_stored(
        store(b).fetch_one(&b_app.pool).await,
        "a second running turn",
    );
    assert_eq!(chat_row().await, stored, "the busy chat's row was changed");

    for service in [true, false] {
        let mut tx = if service {
            db::service_tx(&b_app.pool).await.expect("service tx")
        } else {
            db::user_tx(&b_app.pool, b).await.expect("user tx")
        };
        let err = store(b)
            .fetch_one(&mut *tx)
            .await
            .expect_err("a role is set: refused");
        assert!(
            err.to_string().contains("a role is set"),
            "service {service}: {err}"
        );
        drop(tx);
        // The same for the statement that checks a session's stamp first.
        let mut tx = if service {
            db::service_tx(&b_app.pool).await.expect("service tx")
        } else {
            db::user_tx(&b_app.pool, b).await.expect("user tx")
        };
        let err = sqlx::query(
            "select * from store_turn_stamped_as($1, 0, 0, $2, $3, $4, 'a title', 'a message', \
             '{\"type\":\"turn_started\"}'::jsonb, 'countersign_events')",
        )
        .bind(b)
        .bind(chat_b)
        .bind(uuid::Uuid::new_v4())
        .bind(uuid::Uuid::new_v4())
        .fetch_one(&mut *tx)
        .await
        .expect_err("a role is set: refused");
        assert!(
            err.to_string().contains("a role is set"),
            "stamped, service {service}: {err}"
        );
    }
}
