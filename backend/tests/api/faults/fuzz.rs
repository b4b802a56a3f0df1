//! Issue 15 item 5: the API fuzzed from its own OpenAPI document.
//! [schemathesis](https://schemathesis.readthedocs.io) (PyPI, pinned and
//! installed by `cargo xtask faults` into the folder named by
//! `COUNTERSIGN_FAULTS_SCHEMATHESIS`) reads `/api/openapi.json` from the
//! real in-process server and sends every operation in it generated
//! requests — valid and invalid, boundary values, unexpected methods — as
//! an anonymous client, a signed-in user and an administrator. Every
//! response must be no 5xx, and must conform to the document (its status,
//! content type, headers and body schema): a miss is a bug in the handler
//! or in its `#[utoipa::path]`, fixed there, never baselined.
//!
//! The seeded data gives the fuzzer real things to touch: each signed-in
//! run has the demo connector, a chat with a turn's events, an "Always
//! allow" rule and a card waiting for a decision, and path parameters named
//! `id` draw from those ids half the time (a dictionary), random values
//! otherwise. Whatever cannot be fuzzed in the main run is in its own run,
//! never silently left out: `POST /api/auth/logout` ends the session it is
//! sent with, so it runs last, alone, on a session of its own (after the
//! first success the rest see 401, which the document names).
//!
//! Loopback only: connector host names resolve to nothing ([`NoNames`]),
//! a fuzzed connector URL whose host is a public IP literal is pointed at
//! a documentation address (which the SSRF guard refuses) by the hook in
//! `fuzz_hooks.py`, and the model providers' base URLs are a closed
//! loopback port.

use crate::{
    faults_report::check,
    helpers::{GOOD_PASSWORD, TestApp, add_demo_connector, email, spawn_app_custom},
};
use countersign::config::Secret;
use countersign_demo_mcp::DemoServer;
use reqwest::{StatusCode, header};
use serde_json::{Value, json};
use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

/// The variable naming the folder schemathesis is installed in.
const SCHEMATHESIS_VAR: &str = "COUNTERSIGN_FAULTS_SCHEMATHESIS";

/// Generated cases per operation and phase.
const MAX_EXAMPLES: u32 = 20;

/// The time budget of one run, in seconds (schemathesis stops there).
const MAX_TIME_SECS: u32 = 60;

/// What `schemathesis run` checks on every response: no 5xx; the status,
/// content type, headers and body as the document says; that an operation
/// the document secures refuses a request without its session or CSRF
/// token (`ignored_auth`), and that a request the document calls invalid is
/// refused (`negative_data_rejection`); that a required header left out is
/// refused, a 405 names what is allowed, and a deleted thing is gone.
///
/// Left out, on purpose: `positive_data_acceptance` (a schema-valid body
/// may rightly meet a documented 409 or 422: the password policy, a taken
/// name, an unknown model are rules, not schema), `unsupported_method` (an
/// undeclared method like `TRACE` on `/api` meets the CSRF guard, 403,
/// before routing could say 405: the guard checks every method not known
/// to be safe) and `object_level_authorization` (two users' objects; the
/// row-level security tests own that).
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
                      response_headers_conformance,response_schema_conformance,ignored_auth,\
                      negative_data_rejection,missing_required_header,allow_header_conformance,\
                      use_after_free,ensure_resource_availability";

/// The fixed seed, so a finding reproduces; `COUNTERSIGN_FAULTS_FUZZ_SEED`
/// picks another.
const DEFAULT_SEED: u64 = 15_005;

/// The deployment key the seeded connectors' credentials are sealed with.
const KEY_HEX: &str = "4c1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

/// A resolver that knows no host name, so no fuzzed connector URL leads
/// anywhere but to a refusal.
#[derive(Debug)]
struct NoNames;

impl countersign::ssrf::HostResolver for NoNames {
    fn lookup<'a>(&'a self, _host: &'a str) -> countersign::ssrf::Lookup<'a> {
        Box::pin(async {
            Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such host (the fuzz test resolves no name)",
            ))
        })
    }
}

/// A session as the document's security schemes name it: the
/// `countersign_session` cookie's value and the `X-CSRF-Token` header's.
#[derive(Debug, Clone)]
struct Session {
    cookie: String,
    csrf: String,
}

/// What a signed-in account owns: its session, its account id and the ids
/// of the things seeded for it.
#[derive(Debug)]
struct Identity {
    session: Session,
    account: String,
    things: BTreeSet<String>,
}

/// One run to make: who, which operations, which ids to draw from, and
/// which of them belong to someone else.
#[derive(Debug)]
struct Plan {
    name: &'static str,
    session: Option<Session>,
    scope: Scope,
    /// The dictionary path parameters draw from.
    ids: BTreeSet<String>,
    /// The other account's things among `ids`: a request naming one must
    /// never be answered 2xx.
    foreign: BTreeSet<String>,
}

/// One schemathesis run's figures, read from its NDJSON event log.
#[derive(Debug, Default)]
struct Figures {
    /// The operations sent at least one request outside the stateful
    /// phase (`GET /api/chats/{id}`, as the document names them).
    operations: BTreeSet<String>,
    requests: usize,
    server_errors: usize,
    /// Each failing check, named with its operation and schemathesis'
    /// failure code, and the cases that failed it.
    failures: std::collections::BTreeMap<String, BTreeSet<String>>,
    /// Network errors and schemathesis' own errors, as it words them.
    errors: Vec<String>,
    /// Requests whose URL names another account's thing.
    foreign_requests: usize,
    /// Those answered 2xx (`METHOD uri → status`): each a leak.
    foreign_answered: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow, issue 15: run by cargo xtask faults"]
async fn every_operation_fuzzed_from_the_document_answers_no_5xx_and_as_documented() {
    let Some(schemathesis) = std::env::var_os(SCHEMATHESIS_VAR).map(PathBuf::from) else {
        check(
            "API fuzzed from its OpenAPI document",
            "schemathesis is installed (by `cargo xtask faults`)",
            &format!("{SCHEMATHESIS_VAR} is not set: run this through `cargo xtask faults`"),
            false,
        );
        return;
    };
    let demo = DemoServer::start("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("demo server");
    let allow = demo.addr().to_string().parse().expect("allow list");
    let app = spawn_app_custom(
        |c| {
            c.secret_key = Some(Secret::new(KEY_HEX));
            c.allow_private_connectors = allow;
            c.keepalive_secs = 1;
            // No provider is ever reached: a closed loopback port.
            c.anthropic_base_url = "http://127.0.0.1:9".to_owned();
            c.openai_base_url = Some("http://127.0.0.1:9".to_owned());
        },
        |state| {
            *state = state
                .clone()
                .with_resolver(Arc::new(NoNames))
                .expect("resolver");
        },
    )
    .await;
    let seed = std::env::var("COUNTERSIGN_FAULTS_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    // schemathesis leaves out the operation it loads the document from, so
    // it reads the served document from a file instead.
    let document = app.get_json("/api/openapi.json").await;
    let out = report_root();

    let mut failed = 0;
    for plan in plans(&app, &demo).await {
        let started = Instant::now();
        let dir = out.join(plan.name.split([' ', ',']).next().unwrap_or(plan.name));
        let run = Run {
            install: &schemathesis,
            base: &app.base,
            dir: &dir,
            document: &document,
            plan: &plan,
            seed,
        };
        let figures = run.run().await;
        let in_scope = plan.scope.operations(&document);
        let unexercised: Vec<&String> = in_scope.difference(&figures.operations).collect();
        let holds = figures.server_errors == 0
            && figures.failures.is_empty()
            && figures.errors.is_empty()
            && unexercised.is_empty()
            && figures.foreign_answered.is_empty()
            && (plan.foreign.is_empty() || figures.foreign_requests > 0);
        let observed = format!(
            "{}; {} s (seed {seed}; reports in {})",
            figures.describe(&in_scope, &unexercised, !plan.foreign.is_empty()),
            started.elapsed().as_secs(),
            dir.display(),
        );
        let ok = std::panic::catch_unwind(|| {
            check(
                &format!("API fuzzed from its OpenAPI document: {}", plan.name),
                &plan.scope.expected(!plan.foreign.is_empty()),
                &observed,
                holds,
            );
        })
        .is_ok();
        if !ok {
            failed += 1;
        }
    }
    assert_eq!(failed, 0, "{failed} fuzz run(s) found something");
}

/// Seeds two accounts (the first, so the administrator, and a user) and
/// plans the four runs. Each signed-in run may also name the other
/// account's things, which must stay out of its reach; the
/// administrator's may name the user's account (to change it), never its
/// own (it could disable itself and end the run).
async fn plans(app: &TestApp, demo: &DemoServer) -> Vec<Plan> {
    let admin = signed_in(&app.at(&app.base), demo).await;
    let user = signed_in(&app.at(&app.base), demo).await;
    let logout = signed_in_again(app).await;
    let union = |a: &BTreeSet<String>, b: &BTreeSet<String>| -> BTreeSet<String> {
        a.union(b).cloned().collect()
    };
    let mut admin_ids = union(&admin.things, &user.things);
    admin_ids.insert(user.account.clone());
    vec![
        Plan {
            name: "anonymous",
            session: None,
            scope: Scope::All,
            ids: union(&admin.things, &user.things),
            foreign: BTreeSet::new(),
        },
        Plan {
            name: "signed-in user",
            session: Some(user.session.clone()),
            scope: Scope::AllButLogout,
            ids: union(&user.things, &admin.things),
            foreign: admin.things.clone(),
        },
        Plan {
            name: "administrator",
            session: Some(admin.session.clone()),
            scope: Scope::AllButLogout,
            ids: admin_ids,
            foreign: user.things.clone(),
        },
        Plan {
            name: "logout, on a session of its own",
            session: Some(logout),
            scope: Scope::LogoutOnly,
            ids: BTreeSet::new(),
            foreign: BTreeSet::new(),
        },
    ]
}

impl Figures {
    /// The row's `observed`: operations, requests, 5xx, failing checks
    /// (named), errors, and the other account's things when `foreign`.
    fn describe(
        &self,
        in_scope: &BTreeSet<String>,
        unexercised: &[&String],
        foreign: bool,
    ) -> String {
        let mut text = format!(
            "{} of {} operations{}, {} requests, {} 5xx, {} failing checks",
            self.operations.len(),
            in_scope.len(),
            if unexercised.is_empty() {
                String::new()
            } else {
                format!(" (never sent: {unexercised:?})")
            },
            self.requests,
            self.server_errors,
            self.failures.values().map(BTreeSet::len).sum::<usize>(),
        );
        if !self.failures.is_empty() {
            let named: Vec<String> = self
                .failures
                .iter()
                .map(|(check, cases)| format!("{check} ×{}", cases.len()))
                .collect();
            text.push_str(&format!(" ({})", named.join(", ")));
        }
        if !self.errors.is_empty() {
            text.push_str(&format!("; errors: {}", self.errors.join("; ")));
        }
        if foreign {
            text.push_str(&format!(
                "; {} requests named the other account's things, {} answered 2xx{}",
                self.foreign_requests,
                self.foreign_answered.len(),
                if self.foreign_answered.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", self.foreign_answered.join(", "))
                }
            ));
        }
        text
    }
}

/// The operation that ends the session it is sent with.
const LOGOUT: &str = "POST /api/auth/logout";

/// Which operations a run sends.
#[derive(Debug, Clone, Copy)]
enum Scope {
    All,
    AllButLogout,
    LogoutOnly,
}

impl Scope {
    /// The row's `expected`; `foreign` when the run also names the other
    /// account's things.
    fn expected(self, foreign: bool) -> String {
        let what = match self {
            Scope::All => "every operation in the document, no session",
            Scope::AllButLogout => {
                "every operation but logout (its own run), with the session cookie, CSRF token and Origin"
            }
            Scope::LogoutOnly => {
                "POST /api/auth/logout, which ends its session (so the rest see 401)"
            }
        };
        format!(
            "{what}: 0 responses 5xx, 0 that violate the document (status, content type, headers, body){}",
            if foreign {
                "; the other account's things, named in URLs, never answered 2xx"
            } else {
                ""
            }
        )
    }

    /// The document's operations this run must send (`METHOD /path`).
    fn operations(self, document: &Value) -> BTreeSet<String> {
        let all = document["paths"]
            .as_object()
            .expect("paths")
            .iter()
            .flat_map(|(path, item)| {
                item.as_object()
                    .expect("a path item")
                    .keys()
                    .filter(|m| ["get", "put", "post", "delete", "patch"].contains(&m.as_str()))
                    .map(move |m| format!("{} {path}", m.to_uppercase()))
            });
        all.filter(|op| match self {
            Scope::All => true,
            Scope::AllButLogout => op != LOGOUT,
            Scope::LogoutOnly => op == LOGOUT,
        })
        .collect()
    }

    /// Its time budget, in seconds: logout is one operation without a body.
    fn max_time_secs(self) -> u32 {
        match self {
            Scope::All | Scope::AllButLogout => MAX_TIME_SECS,
            Scope::LogoutOnly => 10,
        }
    }

    fn args(self) -> &'static [&'static str] {
        match self {
            Scope::All => &[],
            Scope::AllButLogout => &["--exclude-path", "/api/auth/logout"],
            Scope::LogoutOnly => &["--include-path", "/api/auth/logout"],
        }
    }
}

/// Signs up on `app`'s client, adds the demo connector and seeds a chat
/// with a turn that leaves an "Always allow" rule and a waiting card.
/// Returns the session and the ids.
async fn signed_in(app: &TestApp, demo: &DemoServer) -> Identity {
    let (status, cookie, body) = app.signup(&email(), GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let connector = add_demo_connector(app, demo).await;
    let chat = app.create_chat("offline/demo").await;
    let mut stream = app.stream(&chat, None).await;
    let mut ids = BTreeSet::from([connector, chat.clone()]);

    // An "Always allow" rule, from an approved call.
    let card = proposed(
        app,
        &mut stream,
        &chat,
        "add_note",
        json!({"title": "fuzz"}),
    )
    .await;
    let res = app
        .post(
            &format!("/api/mcp-pending-calls/{}", card["id"].as_str().expect("id")),
            &json!({"decision": "approve", "grant": "always", "arguments_digest": card["arguments_digest"]}),
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK, "approve");
    stream.until("turn_finished").await;
    ids.insert(card["id"].as_str().expect("id").to_owned());
    for grant in app.get_array("/api/grants").await {
        ids.insert(grant["id"].as_str().expect("grant id").to_owned());
    }
    // A card left waiting.
    let card = proposed(
        app,
        &mut stream,
        &chat,
        "delete_note",
        json!({"id": "note-1"}),
    )
    .await;
    ids.insert(card["id"].as_str().expect("id").to_owned());
    ids.insert(card["turn_id"].as_str().expect("turn id").to_owned());

    Identity {
        session: session(app, &cookie.expect("a session cookie")),
        account: app.get_json("/api/auth/me").await["user"]["id"]
            .as_str()
            .expect("user id")
            .to_owned(),
        things: ids,
    }
}

/// Asks the offline model in `chat` to call the demo's `tool`; returns the
/// card's event.
async fn proposed(
    app: &TestApp,
    stream: &mut crate::helpers::SseReader,
    chat: &str,
    tool: &str,
    arguments: Value,
) -> Value {
    app.send(chat, &format!("use demo__{tool} with {arguments}"))
        .await;
    let events = stream.until("mcp_confirmation_required").await;
    events.last().expect("a card").1.clone()
}

/// A third account, signed up on a fresh client: the session the logout
/// run ends.
async fn signed_in_again(app: &TestApp) -> Session {
    let fresh = app.at(&app.base);
    let (status, cookie, body) = fresh.signup(&email(), GOOD_PASSWORD).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    session(&fresh, &cookie.expect("a session cookie"))
}

/// The session's cookie value (from the sign-up's `Set-Cookie`) and CSRF
/// token (from its answer, as `GET /api/auth/me` also gives it).
fn session(app: &TestApp, set_cookie: &str) -> Session {
    let pair = set_cookie.split(';').next().expect("name=value").trim();
    let (name, value) = pair.split_once('=').expect("name=value");
    assert_eq!(name, "countersign_session", "the cookie the document names");
    Session {
        cookie: value.to_owned(),
        csrf: app.csrf_token(),
    }
}

/// Where the runs' reports go: beside the fault report, or in a temporary
/// folder.
fn report_root() -> PathBuf {
    std::env::var_os(crate::faults_report::REPORT_VAR)
        .and_then(|p| PathBuf::from(p).parent().map(Path::to_path_buf))
        .unwrap_or_else(std::env::temp_dir)
        .join("fuzz")
}

/// One schemathesis run.
struct Run<'a> {
    /// Where schemathesis is installed (`pip install --target`).
    install: &'a Path,
    /// The server, `http://127.0.0.1:PORT`.
    base: &'a str,
    /// Where its configuration, document copy and reports go.
    dir: &'a Path,
    /// The document the server serves.
    document: &'a Value,
    /// Who, which operations, which ids.
    plan: &'a Plan,
    seed: u64,
}

impl Run<'_> {
    /// Runs schemathesis and reads its figures.
    async fn run(&self) -> Figures {
        let dir = self.dir;
        if dir.exists() {
            std::fs::remove_dir_all(dir).expect("clear the old reports");
        }
        std::fs::create_dir_all(dir).expect("report dir");
        let config = dir.join("schemathesis.toml");
        std::fs::write(
            &config,
            config_toml(&self.plan.ids, self.plan.session.as_ref()),
        )
        .expect("write the config");
        let document = dir.join("openapi.json");
        std::fs::write(&document, self.document.to_string()).expect("write the document");
        let ndjson = dir.join("events.ndjson");
        let max_time = self.plan.scope.max_time_secs();

        let mut cmd = tokio::process::Command::new("python3");
        cmd.env(
            "PYTHONPATH",
            std::env::join_paths([
                self.install.to_path_buf(),
                Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/api/faults"),
            ])
            .expect("PYTHONPATH"),
        )
        .env("SCHEMATHESIS_HOOKS", "fuzz_hooks")
        .current_dir(dir)
        .args(["-m", "schemathesis.cli", "--no-color", "--config-file"])
        .arg(&config)
        .arg("run")
        .arg(&document)
        .args(["--url", self.base])
        .args(["--checks", CHECKS])
        .args(["--max-examples", &MAX_EXAMPLES.to_string()])
        .args(["--max-time", &max_time.to_string()])
        .args(["--seed", &self.seed.to_string()])
        // One worker: CPython 3.11's parser is not safe to share between
        // threads ("AST constructor recursion depth mismatch").
        .args(["--workers", "1", "--request-timeout", "10"])
        .args(["--report", "ndjson,junit", "--report-ndjson-path"])
        .arg(&ndjson)
        .arg("--report-junit-path")
        .arg(dir.join("junit.xml"))
        .args(self.plan.scope.args())
        .kill_on_drop(true);
        // Same-origin, as a browser tab sends it.
        cmd.arg("--header")
            .arg(format!("{}: {}", header::ORIGIN, self.base));
        let bound = Duration::from_secs(u64::from(max_time) * 3 + 30);
        let output = tokio::time::timeout(bound, cmd.output())
            .await
            .unwrap_or_else(|_| panic!("schemathesis ran past {} s", bound.as_secs()))
            .expect("start python3 -m schemathesis.cli");
        std::fs::write(dir.join("stdout.txt"), &output.stdout).expect("keep stdout");
        std::fs::write(dir.join("stderr.txt"), &output.stderr).expect("keep stderr");
        println!("{}", String::from_utf8_lossy(&output.stdout));
        let text = std::fs::read_to_string(&ndjson).unwrap_or_else(|err| {
            panic!(
                "schemathesis wrote no {} ({err}); it said: {}",
                ndjson.display(),
                String::from_utf8_lossy(&output.stderr)
            )
        });
        figures(&text, &self.plan.foreign)
    }
}

/// The run's configuration: the session as the values of the document's
/// security schemes (so schemathesis knows them, leaves them out to check
/// they are required, and sends the CSRF token only where the document asks
/// for it), and the seeded ids as a dictionary that path parameters named
/// `id` draw from half the time.
fn config_toml(ids: &BTreeSet<String>, session: Option<&Session>) -> String {
    // No example database: each run stands alone, and writes nothing
    // outside its folder.
    let mut toml = String::from("[generation]\ndatabase = \"none\"\n");
    if !ids.is_empty() {
        let values: Vec<String> = ids.iter().map(|id| format!("\"{id}\"")).collect();
        toml.push_str(&format!(
            "\n[dictionaries.seeded]\nvalues = [{}]\n\n[parameters]\n\"path.id\" = {{ dictionary = \"seeded\", probability = 0.5 }}\n\"path.turn_id\" = {{ dictionary = \"seeded\", probability = 0.5 }}\n",
            values.join(", ")
        ));
    }
    if let Some(session) = session {
        toml.push_str(&format!(
            "\n[auth.openapi.session]\napi_key = \"{}\"\n\n[auth.openapi.csrf]\napi_key = \"{}\"\n",
            session.cookie, session.csrf
        ));
    }
    toml
}

/// Counts what the NDJSON event log shows.
fn figures(ndjson: &str, foreign: &BTreeSet<String>) -> Figures {
    let mut figures = Figures::default();
    let mut operations = BTreeSet::new();
    for line in ndjson.lines().filter(|l| !l.trim().is_empty()) {
        let event: Value = serde_json::from_str(line).expect("an NDJSON event");
        let Some((kind, body)) = event.as_object().and_then(|o| o.iter().next()) else {
            continue;
        };
        if kind == "ScenarioFinished" {
            let recorder = &body["recorder"];
            let label = recorder["label"].as_str().unwrap_or("?").to_owned();
            if body["phase"] != "stateful"
                && recorder["interactions"]
                    .as_object()
                    .is_some_and(|m| !m.is_empty())
            {
                operations.insert(label.clone());
            }
            for interaction in recorder["interactions"]
                .as_object()
                .into_iter()
                .flat_map(|m| m.values())
            {
                figures.requests += 1;
                let status = interaction["response"]["status_code"].as_u64();
                if status.is_some_and(|s| s >= 500) {
                    figures.server_errors += 1;
                }
                let request = &interaction["request"];
                let uri = request["uri"].as_str().unwrap_or_default();
                if foreign.iter().any(|id| uri.contains(id.as_str())) {
                    figures.foreign_requests += 1;
                    if status.is_some_and(|s| (200..300).contains(&s)) {
                        figures.foreign_answered.push(format!(
                            "{} {uri} → {}",
                            request["method"].as_str().unwrap_or("?"),
                            status.unwrap_or_default()
                        ));
                    }
                }
            }
            for (case, results) in recorder["checks"].as_object().into_iter().flatten() {
                for result in results.as_array().into_iter().flatten() {
                    if result["status"] == "failure" {
                        let failure = &result["failure_info"]["failure"];
                        let named = format!(
                            "{label} {}: {} {}",
                            result["name"].as_str().unwrap_or("?"),
                            failure["code"].as_str().unwrap_or("?"),
                            failure["title"].as_str().unwrap_or("?"),
                        );
                        figures
                            .failures
                            .entry(named)
                            .or_default()
                            .insert(case.clone());
                    }
                }
            }
        } else if kind == "NonFatalError" || kind == "FatalError" {
            figures.errors.push(format!(
                "{}: {}: {}",
                body["label"].as_str().unwrap_or("the run"),
                body["value"]["type"].as_str().unwrap_or("?"),
                body["value"]["message"].as_str().unwrap_or("?"),
            ));
        }
    }
    figures.operations = operations;
    figures
}
