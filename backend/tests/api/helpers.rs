//! `spawn_app()`: a server on a free port over its own new database; the
//! approval fixtures (the demo MCP server, a user with the demo connector
//! and an offline chat, proposing and deciding calls, reading the ledger)
//! that the gate, grant and hardening tests share.

use crate::test_db::TestDb;
use countersign::{AppState, Config, config::Secret, db, tools::ToolBox};
use countersign_api::PendingCallStatus;
use countersign_demo_mcp::DemoServer;
use reqwest::{StatusCode, header};
use serde_json::{Value, json};
use sqlx::Row as _;
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
    /// The server's settings.
    pub config: Config,
}

/// A server with the default settings.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// A server whose settings `configure` may change first.
pub async fn spawn_app_with(configure: impl FnOnce(&mut Config)) -> TestApp {
    spawn_app_full(configure, None).await
}

/// A server with settings and, optionally, the tools its models may call.
pub async fn spawn_app_full(
    configure: impl FnOnce(&mut Config),
    tools: Option<Arc<dyn ToolBox>>,
) -> TestApp {
    spawn_app_custom(configure, move |state| {
        if let Some(tools) = tools {
            state.tools = tools;
        }
    })
    .await
}

/// A server with settings, whose state `customize` may change before it
/// serves (tools, test hooks).
pub async fn spawn_app_custom(
    configure: impl FnOnce(&mut Config),
    customize: impl FnOnce(&mut AppState),
) -> TestApp {
    countersign::telemetry::init_for_tests();
    let test_db = TestDb::migrated().await;
    let pool = db::connect(&test_db.app_url)
        .await
        .expect("connect as the app role");

    let mut config = Config::with_database_url(test_db.app_url);
    config.static_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../frontend/dist");
    config.approval_key = Some(countersign::config::Secret::new(
        "5e1f2a3b4c5d6e7f8091a2b3c4d5e6f7a8b9cadbecfd0e1f2031425364758697",
    ));
    configure(&mut config);

    let base = serve(pool.clone(), config.clone(), customize).await;
    TestApp {
        base,
        pool,
        superuser_db_url: test_db.superuser_url,
        owner_db_url: test_db.owner_url,
        client: new_client(),
        csrf: std::sync::Mutex::new(None),
        config,
    }
}

/// Starts one server instance (with its own `LISTEN` connection) on a free
/// port; returns its base URL.
async fn serve(pool: PgPool, config: Config, customize: impl FnOnce(&mut AppState)) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a free port");
    let addr: SocketAddr = listener.local_addr().expect("local addr");
    let mut state = AppState::new(pool, config)
        .await
        .expect("app state")
        .with_resolver(Arc::new(TestResolver))
        .expect("resolver");
    customize(&mut state);
    tokio::spawn(countersign::serve(listener, state, std::future::pending()));
    format!("http://{addr}")
}

/// A second server instance on the same database (as behind a load
/// balancer), with its own pool and hub. Returns a `TestApp` whose client
/// shares nothing with `app`'s.
pub async fn second_instance(app: &TestApp) -> TestApp {
    let pool = db::connect(app.config.database_url.expose())
        .await
        .expect("second pool");
    let base = serve(pool.clone(), app.config.clone(), |_| {}).await;
    TestApp {
        base,
        pool,
        superuser_db_url: app.superuser_db_url.clone(),
        owner_db_url: app.owner_db_url.clone(),
        client: new_client(),
        csrf: std::sync::Mutex::new(None),
        config: app.config.clone(),
    }
}

/// Another server instance on `app`'s database with settings `configure`
/// changed from `app`'s (a restart with new settings, or one instance of a
/// rolling deploy). Its client shares nothing with `app`'s.
pub async fn instance_with(app: &TestApp, configure: impl FnOnce(&mut Config)) -> TestApp {
    let mut config = app.config.clone();
    configure(&mut config);
    let pool = db::connect(config.database_url.expose())
        .await
        .expect("instance pool");
    let base = serve(pool.clone(), config.clone(), |_| {}).await;
    TestApp {
        base,
        pool,
        superuser_db_url: app.superuser_db_url.clone(),
        owner_db_url: app.owner_db_url.clone(),
        client: new_client(),
        csrf: std::sync::Mutex::new(None),
        config,
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

    /// The same database behind another server at `base`, with a fresh
    /// client (not signed in).
    pub fn at(&self, base: &str) -> TestApp {
        TestApp {
            base: base.to_owned(),
            pool: self.pool.clone(),
            superuser_db_url: self.superuser_db_url.clone(),
            owner_db_url: self.owner_db_url.clone(),
            client: new_client(),
            csrf: Default::default(),
            config: self.config.clone(),
        }
    }

    /// The current session's CSRF token.
    pub fn csrf_token(&self) -> String {
        self.csrf.lock().expect("lock").clone().expect("signed in")
    }

    /// POST JSON with the current CSRF token (if any).
    pub async fn post(&self, path: &str, body: &Value) -> reqwest::Response {
        self.request(reqwest::Method::POST, path, Some(body.clone()))
            .await
    }

    /// Any method, with the current CSRF token (if any) and an optional
    /// JSON body: the one way tests send PUT, PATCH and DELETE.
    pub async fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> reqwest::Response {
        let mut req = self.client.request(method, self.url(path));
        if let Some(token) = self.csrf.lock().expect("lock").clone() {
            req = req.header("x-csrf-token", token);
        }
        if let Some(body) = body {
            req = req.json(&body);
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

/// One SSE frame as read off the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// An event: its `id:` and parsed `data:`.
    Event(i64, Value),
    /// A comment line (`: keep-alive`).
    Comment(String),
}

/// Reads a chat's SSE stream frame by frame.
#[derive(Debug)]
pub struct SseReader {
    response: reqwest::Response,
    buffer: String,
    frames: std::collections::VecDeque<Frame>,
}

impl SseReader {
    /// Reads the stream `response` already opened (a caller that needs its
    /// headers first).
    pub fn from_response(response: reqwest::Response) -> Self {
        Self {
            response,
            buffer: String::new(),
            frames: Default::default(),
        }
    }

    /// The next frame, or `None` when the stream ends or nothing arrives
    /// within `wait`.
    pub async fn next_frame(&mut self, wait: std::time::Duration) -> Option<Frame> {
        loop {
            if let Some(frame) = self.frames.pop_front() {
                return Some(frame);
            }
            let chunk = tokio::time::timeout(wait, self.response.chunk())
                .await
                .ok()?;
            let chunk = chunk.expect("stream chunk")?;
            self.buffer
                .push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut id, mut data, mut comment) = (None, String::new(), None);
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        id = v.trim().parse::<i64>().ok();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.strip_prefix(' ').unwrap_or(v));
                    } else if let Some(v) = line.strip_prefix(':') {
                        comment = Some(v.trim().to_owned());
                    }
                }
                match (id, comment) {
                    (Some(id), _) => self.frames.push_back(Frame::Event(
                        id,
                        serde_json::from_str(&data).expect("event data is JSON"),
                    )),
                    (None, Some(c)) => self.frames.push_back(Frame::Comment(c)),
                    _ => {}
                }
            }
        }
    }

    /// Every frame until the server ends the stream: `Some(frames)` when it
    /// ended within `within`, `None` when it was still open then. Events
    /// come unparsed, as `Frame::Event(-1, <the raw block as a string>)`:
    /// the caller only asks whether any came.
    pub async fn frames_until_end(&mut self, within: std::time::Duration) -> Option<Vec<Frame>> {
        let deadline = tokio::time::Instant::now() + within;
        let mut frames: Vec<Frame> = self.frames.drain(..).collect();
        loop {
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .ok()?;
            match chunk {
                // A stream cut off mid-way ends too.
                Ok(None) | Err(_) => return Some(frames),
                Ok(Some(chunk)) => {
                    self.buffer
                        .push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
                    while let Some(end) = self.buffer.find("\n\n") {
                        let block: String = self.buffer.drain(..end + 2).collect();
                        if block.lines().any(|l| l.starts_with("data:")) {
                            frames.push(Frame::Event(-1, Value::String(block)));
                        } else {
                            frames.push(Frame::Comment(block.trim().to_owned()));
                        }
                    }
                }
            }
        }
    }

    /// The next event (skipping comments); panics when none comes within
    /// [`EVENT_WAIT`].
    pub async fn next_event(&mut self) -> (i64, Value) {
        loop {
            match self.next_frame(EVENT_WAIT).await {
                Some(Frame::Event(id, data)) => return (id, data),
                Some(Frame::Comment(_)) => {}
                None => panic!("no event within {EVENT_WAIT:?}"),
            }
        }
    }

    /// Events up to and including the first of `kind`, passing on the way
    /// (as the user, unread) every result held for review
    /// (`mcp_result_review_required`) — for tests about what comes after.
    pub async fn until_passing(&mut self, app: &TestApp, kind: &str) -> Vec<(i64, Value)> {
        let mut seen = Vec::new();
        loop {
            let (id, data) = self.next_event().await;
            if data["type"] == "mcp_result_review_required" {
                let res = pass_result(app, &data).await;
                assert_eq!(res.status(), StatusCode::OK, "pass {data}");
            }
            let done = data["type"] == kind;
            seen.push((id, data));
            if done {
                return seen;
            }
        }
    }

    /// Events up to and including the first of `kind`.
    pub async fn until(&mut self, kind: &str) -> Vec<(i64, Value)> {
        let mut seen = Vec::new();
        loop {
            let (id, data) = self.next_event().await;
            let done = data["type"] == kind;
            seen.push((id, data));
            if done {
                return seen;
            }
        }
    }
}

impl TestApp {
    /// Opens `GET /api/chats/{id}/stream`, optionally with `Last-Event-ID`.
    pub async fn stream(&self, chat_id: &str, last_event_id: Option<i64>) -> SseReader {
        let mut req = self
            .client
            .get(self.url(&format!("/api/chats/{chat_id}/stream")));
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id.to_string());
        }
        let response = req.send().await.expect("stream request");
        assert_eq!(response.status(), StatusCode::OK, "stream status");
        SseReader::from_response(response)
    }

    /// Creates a chat; returns its id.
    pub async fn create_chat(&self, model: &str) -> String {
        let res = self.post("/api/chats", &json!({ "model": model })).await;
        assert_eq!(res.status(), StatusCode::CREATED);
        let body: Value = res.json().await.expect("JSON");
        body["id"].as_str().expect("id").to_owned()
    }

    /// Sends a message; returns the turn id.
    pub async fn send(&self, chat_id: &str, content: &str) -> String {
        let res = self
            .post(
                &format!("/api/chats/{chat_id}/messages"),
                &json!({ "content": content }),
            )
            .await;
        assert_eq!(res.status(), StatusCode::ACCEPTED);
        let body: Value = res.json().await.expect("JSON");
        body["turn_id"].as_str().expect("turn id").to_owned()
    }

    /// `GET` as JSON, asserting 200.
    pub async fn get_json(&self, path: &str) -> Value {
        let res = self.get(path).await;
        assert_eq!(res.status(), StatusCode::OK, "GET {path}");
        res.json().await.expect("JSON")
    }

    /// `GET` a JSON array, asserting 200.
    pub async fn get_array(&self, path: &str) -> Vec<Value> {
        match self.get_json(path).await {
            Value::Array(items) => items,
            other => panic!("GET {path}: not an array: {other}"),
        }
    }
}

/// The text of a turn's `text_delta` events, concatenated.
pub fn text_of(events: &[(i64, Value)]) -> String {
    events
        .iter()
        .filter(|(_, e)| e["type"] == "text_delta")
        .map(|(_, e)| e["text"].as_str().expect("text"))
        .collect()
}

/// How long a test waits for the next event of a stream: long enough that
/// only a hang reaches it, however busy the machine (a turn's events come
/// within milliseconds on a quiet one), so the suite fails a hang and not
/// a slow machine (issue 44, item 12).
pub const EVENT_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Connector host names for tests, so that no test ever asks a real DNS
/// server: `*.example.org`, `a.example` and `b.example` resolve to a public
/// documentation-free address (nothing is ever dialled there: tests that
/// connect use allow-listed loopback servers), everything else does not
/// exist.
#[derive(Debug)]
pub struct TestResolver;

impl countersign::ssrf::HostResolver for TestResolver {
    fn lookup<'a>(&'a self, host: &'a str) -> countersign::ssrf::Lookup<'a> {
        Box::pin(async move {
            let host = host.trim_end_matches('.').to_ascii_lowercase();
            if host.ends_with(".example.org") || host == "a.example" || host == "b.example" {
                Ok(vec!["93.184.216.34".parse().expect("IP")])
            } else if host == "loopback.test"
                || host.ends_with(".loopback.test")
                || host == "localhost"
            {
                // Other names for this machine (the OAuth host tests, and
                // policy matched by address).
                Ok(vec!["127.0.0.1".parse().expect("IP")])
            } else {
                Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no such host (test resolver)",
                ))
            }
        })
    }
}

// ---- The approval fixtures.

/// The deployment key the fixtures' servers seal credentials with.
const KEY_HEX: &str = "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

pub(crate) struct Setup {
    pub demo: DemoServer,
    pub app: TestApp,
    pub user: Uuid,
    pub connector: String,
    pub chat: String,
}

pub(crate) async fn setup(configure: impl FnOnce(&mut Config)) -> Setup {
    setup_custom(configure, |_| {}).await
}

/// The demo server, an app allowed to reach it, a user with the demo
/// connector (every tool kept) and an offline chat.
pub(crate) async fn setup_custom(
    configure: impl FnOnce(&mut Config),
    customize: impl FnOnce(&mut AppState),
) -> Setup {
    let demo = DemoServer::start("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("demo server");
    let allow = demo.addr().to_string().parse().expect("allow list");
    let app = spawn_app_custom(
        |c| {
            c.secret_key = Some(Secret::new(KEY_HEX));
            c.allow_private_connectors = allow;
            configure(c);
        },
        customize,
    )
    .await;
    let (user, _) = app.signed_up_user().await;
    let connector = add_demo_connector(&app, &demo).await;
    let chat = app.create_chat("offline/demo").await;
    Setup {
        demo,
        app,
        user,
        connector,
        chat,
    }
}

pub(crate) async fn add_demo_connector(app: &TestApp, demo: &DemoServer) -> String {
    add_connector(app, json!({"name": "Demo", "url": demo.mcp_url()})).await
}

/// Adds the connector `body` describes (`POST /api/connectors`), refreshes
/// it and keeps every tool it lists; returns its id.
pub(crate) async fn add_connector(app: &TestApp, body: Value) -> String {
    let res = app.post("/api/connectors", &body).await;
    assert_eq!(res.status(), StatusCode::CREATED, "add {body}");
    let id = res.json::<Value>().await.expect("JSON")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let res = app
        .post(&format!("/api/connectors/{id}/refresh"), &json!({}))
        .await;
    assert_eq!(res.status(), StatusCode::OK, "refresh");
    let seen = seen(app, &id, None).await;
    let res = app
        .request(
            reqwest::Method::PUT,
            &format!("/api/connectors/{id}/tools/review"),
            Some(json!({"keep": seen, "decline": []})),
        )
        .await;
    assert!(res.status().is_success(), "review: {}", res.status());
    id
}

/// The connector's tools (or only those named) as a review names them:
/// `{"name", "descriptor_digest"}`, as the user sees them now.
pub(crate) async fn seen(app: &TestApp, connector: &str, only: Option<&[&str]>) -> Vec<Value> {
    let tools = app
        .get_json(&format!("/api/connectors/{connector}/tools"))
        .await;
    tools
        .as_array()
        .expect("tools")
        .iter()
        .filter(|t| only.is_none_or(|names| names.iter().any(|n| t["name"] == *n)))
        .map(|t| json!({"name": t["name"], "descriptor_digest": t["descriptor_digest"]}))
        .collect()
}

/// Asks the offline model to call `tool` with `arguments`; returns the
/// turn id and the card's event.
pub(crate) async fn propose(
    s: &Setup,
    stream: &mut SseReader,
    tool: &str,
    arguments: Value,
) -> (String, Value) {
    let turn = s
        .app
        .send(&s.chat, &format!("use demo__{tool} with {arguments}"))
        .await;
    let events = stream.until("mcp_confirmation_required").await;
    let (_, card) = events.last().expect("card").clone();
    assert_eq!(card["turn_id"], turn.as_str());
    (turn, card)
}

pub(crate) async fn decide(app: &TestApp, card: &Value, decision: &str) -> reqwest::Response {
    decide_with(
        app,
        card,
        json!({"decision": decision, "arguments_digest": card["arguments_digest"]}),
    )
    .await
}

pub(crate) async fn decide_with(app: &TestApp, card: &Value, body: Value) -> reqwest::Response {
    let id = card["id"].as_str().expect("id");
    app.post(&format!("/api/mcp-pending-calls/{id}"), &body)
        .await
}

/// Passes a result held for review (`mcp_result_review_required`) whole.
pub(crate) async fn pass_result(app: &TestApp, review: &Value) -> reqwest::Response {
    let id = review["id"].as_str().expect("id");
    app.post(
        &format!("/api/mcp-pending-calls/{id}/result"),
        &json!({"action": "pass"}),
    )
    .await
}

/// A ledger row's status (a word of the vocabulary, or the test fails) and
/// error, read as the superuser.
pub(crate) async fn ledger(app: &TestApp, id: &str) -> (PendingCallStatus, Option<String>) {
    let mut db = app.superuser().await;
    let row = sqlx::query("select status, error from mcp_pending_calls where id = $1::uuid")
        .bind(id)
        .fetch_one(&mut db)
        .await
        .expect("ledger row");
    let status: String = row.get("status");
    (
        status.parse().expect("a ledger status word"),
        row.get("error"),
    )
}

/// The first event of `kind` among `events` (panics when there is none).
pub(crate) fn event_of(events: &[(i64, Value)], kind: &str) -> Value {
    events
        .iter()
        .find(|(_, e)| e["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} event"))
        .1
        .clone()
}

/// Sends `message` in the fixture's chat and collects the turn's events
/// until it finishes.
pub(crate) async fn turn(s: &Setup, stream: &mut SseReader, message: &str) -> Vec<Value> {
    s.app.send(&s.chat, message).await;
    stream
        .until("turn_finished")
        .await
        .into_iter()
        .map(|(_, e)| e)
        .collect()
}

/// Approves `card` with `grant`, the arguments digest it showed.
pub(crate) async fn approve_with(app: &TestApp, card: &Value, grant: &str) -> reqwest::Response {
    decide_with(
        app,
        card,
        json!({"decision": "approve", "grant": grant, "arguments_digest": card["arguments_digest"]}),
    )
    .await
}

/// Switches "Trust this server's safety annotations" on.
pub(crate) async fn trust(s: &Setup) {
    let res = s
        .app
        .request(
            reqwest::Method::PATCH,
            &format!("/api/connectors/{}", s.connector),
            Some(json!({"trust_annotations": true})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
}

pub(crate) async fn state_of(app: &TestApp) -> AppState {
    AppState::new(app.pool.clone(), app.config.clone())
        .await
        .expect("state")
}

/// Refreshes the fixture's connector, asserting 200.
pub(crate) async fn refreshed(s: &Setup) {
    let res = s
        .app
        .post(
            &format!("/api/connectors/{}/refresh", s.connector),
            &json!({}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK, "refresh");
}

/// Keeps `names` of the fixture's connector as the user sees them now
/// (each with its current digest), asserting 204.
pub(crate) async fn keep_as_seen(s: &Setup, names: &[&str]) {
    let res = s
        .app
        .request(
            reqwest::Method::PUT,
            &format!("/api/connectors/{}/tools/review", s.connector),
            Some(json!({"keep": seen(&s.app, &s.connector, Some(names)).await, "decline": []})),
        )
        .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT, "keep {names:?}");
}
