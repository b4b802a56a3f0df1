//! The test database: a fresh database on the scratch cluster named by
//! `COUNTERSIGN_TEST_SUPERUSER_URL`, with the server's roles, made by
//! `countersign::db::bootstrap` as in production. The API tests, the
//! interop tests and both benches get their databases here.
//!
//! What it owns: reading that variable, naming each new database, the
//! roles' passwords, each login's URL, and migrating. What it deliberately
//! does not do: open pools, start servers or make users; each caller does
//! that its own way.
//!
//! It is one file pulled into each of those crates with
//! `#[path = "…"] mod test_db;`, not a dev-only crate. Such a crate would
//! need `countersign` (for `db::bootstrap`) while `countersign`
//! dev-depends on it. Cargo allows that cycle, but it adds a package to the
//! workspace for about fifty lines. Every target here already has `sqlx`,
//! `reqwest` and `uuid`.
#![allow(
    dead_code,
    reason = "one file compiled into four crates (API tests, interop tests, two benches), each using only part of it"
)]

use countersign::db;
use reqwest::Url;
use uuid::Uuid;

/// The password [`db::bootstrap`] gives the owner role. Roles belong to the
/// whole cluster, and every bootstrap sets their passwords again, so every
/// test database uses this one password (and [`APP_PASSWORD`]). Then a
/// bench and a test run on one cluster cannot change each other's
/// passwords.
const OWNER_PASSWORD: &str = "test-owner";
/// The password [`db::bootstrap`] gives the server's login role.
const APP_PASSWORD: &str = "test-app";

/// A new database with the server's roles, and a URL for each login.
#[derive(Debug)]
pub struct TestDb {
    /// `{prefix}_{uuid}`, unique on the cluster.
    pub name: String,
    /// The cluster's superuser, on this database (to look behind the API).
    pub superuser_url: String,
    /// The owner role ([`db::OWNER_ROLE`]), on this database: it migrates.
    pub owner_url: String,
    /// The server's login role ([`db::APP_ROLE`]), on this database.
    pub app_url: String,
}

impl TestDb {
    /// Bootstraps the roles and a new database named `{prefix}_{uuid}`
    /// (not migrated: a server started with a migration URL migrates it).
    pub async fn create(prefix: &str) -> Self {
        Self::create_on(&superuser_url(), prefix).await
    }

    /// [`TestDb::create`] on the cluster of `su`, a superuser's URL (a
    /// scenario with a cluster of its own, which it restarts).
    pub async fn create_on(su: &Url, prefix: &str) -> Self {
        let su = su.clone();
        let name = format!("{prefix}_{}", Uuid::new_v4().simple());
        db::bootstrap(su.as_str(), &name, OWNER_PASSWORD, APP_PASSWORD)
            .await
            .expect("bootstrap the test database");
        let on_this_database = |login: Option<(&str, &str)>| {
            let mut url = su.clone();
            if let Some((user, password)) = login {
                url.set_username(user).expect("URL has a host");
                url.set_password(Some(password)).expect("URL has a host");
            }
            url.set_path(&name);
            url.to_string()
        };
        Self {
            superuser_url: on_this_database(None),
            owner_url: on_this_database(Some((db::OWNER_ROLE, OWNER_PASSWORD))),
            app_url: on_this_database(Some((db::APP_ROLE, APP_PASSWORD))),
            name,
        }
    }

    /// A new database named `t_{uuid}`, migrated as the owner role: what
    /// a test that talks to the database directly, or runs the server in
    /// process, needs.
    pub async fn migrated() -> Self {
        let test_db = Self::create("t").await;
        db::migrate(&test_db.owner_url).await.expect("migrate");
        test_db
    }
}

/// `COUNTERSIGN_TEST_SUPERUSER_URL`: a superuser of a scratch cluster.
fn superuser_url() -> Url {
    let raw = std::env::var("COUNTERSIGN_TEST_SUPERUSER_URL").unwrap_or_else(|_| {
        panic!(
            "COUNTERSIGN_TEST_SUPERUSER_URL is not set. Run the tests with `cargo xtask test`, \
             which starts a throwaway Postgres, or point it at a superuser of a scratch cluster."
        )
    });
    Url::parse(&raw).expect("COUNTERSIGN_TEST_SUPERUSER_URL is a URL")
}
