//! `spawn_app()`: a server on a free port over its own new database.

use countersign::{AppState, Config, db};
use reqwest::{StatusCode, Url, header};
use serde_json::{Value, json};
use sqlx::{Connection as _, PgConnection, PgPool};
use std::{net::SocketAddr, sync::Arc};
use uuid::Uuid;

/// A passphrase the password policy accepts.
pub const GOOD_PASSWORD: &str = "tidal quartz lantern orchard";

/// A running server and handles on its database.
#[derive(Debug)]
pub struct TestApp {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The server's own pool (login role `countersign_app`).
    pub pool: PgPool,
    /// Superuser URL of this test's database, for looking behind the API.
    pub superuser_db_url: String,
    /// Owner-role URL of this test's database.
    pub owner_db_url: String,
    /// A client with a cookie jar, like a browser tab.
    pub client: reqwest::Client,
    /// The CSRF token of the client's current session, if any.
    pub csrf: std::sync::Mutex<Option<String>>,
}

fn superuser_url() -> Url {
    let raw = std::env::var("COUNTERSIGN_TEST_SUPERUSER_URL").unwrap_or_else(|_| {
        panic!(
            "COUNTERSIGN_TEST_SUPERUSER_URL is not set. Run the tests with `cargo xtask test`, \
             which starts a throwaway Postgres, or point it at a superuser of a scratch cluster."
        )
    });
    Url::parse(&raw).expect("COUNTERSIGN_TEST_SUPERUSER_URL is a URL")
}

fn with_login(url: &Url, user: &str, password: &str, database: &str) -> String {
    let mut url = url.clone();
    url.set_username(user).expect("URL has a host");
    url.set_password(Some(password)).expect("URL has a host");
    url.set_path(database);
    url.to_string()
}

/// A server with the default settings.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// A server whose settings `configure` may change first.
pub async fn spawn_app_with(configure: impl FnOnce(&mut Config)) -> TestApp {
    countersign::telemetry::init();
    let su = superuser_url();
    let database = format!("t_{}", Uuid::new_v4().simple());
    db::bootstrap(su.as_str(), &database, "test-owner", "test-app")
        .await
        .expect("bootstrap the test database");
    let owner_db_url = with_login(&su, db::OWNER_ROLE, "test-owner", &database);
    let app_url = with_login(&su, db::APP_ROLE, "test-app", &database);
    let mut superuser_db = su.clone();
    superuser_db.set_path(&database);

    db::migrate(&owner_db_url).await.expect("migrate");
    let pool = db::connect(&app_url)
        .await
        .expect("connect as the app role");

    let mut config = Config::with_database_url(app_url);
    config.static_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../frontend/dist");
    configure(&mut config);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a free port");
    let addr: SocketAddr = listener.local_addr().expect("local addr");
    let state = AppState {
        db: pool.clone(),
        config: Arc::new(config),
    };
    tokio::spawn(countersign::serve(listener, state, std::future::pending()));

    TestApp {
        base: format!("http://{addr}"),
        pool,
        superuser_db_url: superuser_db.to_string(),
        owner_db_url,
        client: new_client(),
        csrf: std::sync::Mutex::new(None),
    }
}

/// A client with its own cookie jar and no redirects.
pub fn new_client() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("reqwest client")
}

/// A unique email address.
pub fn email() -> String {
    format!("user-{}@example.org", Uuid::new_v4().simple())
}

impl TestApp {
    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A superuser connection to this test's database.
    pub async fn superuser(&self) -> PgConnection {
        PgConnection::connect(&self.superuser_db_url)
            .await
            .expect("superuser connection")
    }

    /// POST JSON with the current CSRF token (if any).
    pub async fn post(&self, path: &str, body: &Value) -> reqwest::Response {
        let mut req = self.client.post(self.url(path)).json(body);
        if let Some(token) = self.csrf.lock().expect("lock").clone() {
            req = req.header("x-csrf-token", token);
        }
        req.send().await.expect("request")
    }

    /// GET.
    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("request")
    }

    /// Signs up; on success remembers the CSRF token. Returns status, the
    /// `Set-Cookie` header and the JSON body.
    pub async fn signup(&self, email: &str, password: &str) -> (StatusCode, Option<String>, Value) {
        let res = self
            .post(
                "/api/auth/signup",
                &json!({ "email": email, "password": password }),
            )
            .await;
        self.remember(res).await
    }

    /// Signs in; on success remembers the CSRF token.
    pub async fn login(&self, email: &str, password: &str) -> (StatusCode, Option<String>, Value) {
        let res = self
            .post(
                "/api/auth/login",
                &json!({ "email": email, "password": password }),
            )
            .await;
        self.remember(res).await
    }

    async fn remember(&self, res: reqwest::Response) -> (StatusCode, Option<String>, Value) {
        let status = res.status();
        let cookie = res
            .headers()
            .get(header::SET_COOKIE)
            .map(|v| v.to_str().expect("ascii cookie").to_owned());
        let body: Value = res.json().await.expect("JSON body");
        if status.is_success() {
            *self.csrf.lock().expect("lock") = body["csrf_token"].as_str().map(str::to_owned);
        }
        (status, cookie, body)
    }

    /// A new user, signed in on this app's client. Returns their id.
    pub async fn signed_up_user(&self) -> (Uuid, String) {
        let email = email();
        let (status, _, body) = self.signup(&email, GOOD_PASSWORD).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let id = body["user"]["id"]
            .as_str()
            .expect("user id")
            .parse()
            .expect("uuid");
        (id, email)
    }
}
