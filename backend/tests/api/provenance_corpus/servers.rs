//! The corpus's MCP servers: six rmcp servers on one loopback port
//! (`/mail/mcp`, `/drive/mcp`, `/bank/mcp`, `/slack/mcp`, `/web/mcp`,
//! `/calendar/mcp`), one per connector a user adds, with the tools of
//! AgentDojo's suites and realistic annotations — reads read-only and
//! closed-world (the web fetch read-only but open-world), senders
//! open-world, a few writes that stay inside the service closed-world,
//! deletes and the password change destructive. The workload reaches each
//! at a host of its own ([`CorpusServers::start_named`]).
//!
//! Reads return the corpus's documents ([`super::documents::lookup`]) and
//! the workload's ([`super::workload::document`]);
//! every other call answers a plain "done". Every call that arrives is
//! recorded with the run it belongs to — the `X-Corpus-Run` header each
//! run's connectors send — so the runner can count what executed.

use super::documents;
use axum::Router;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

/// The header naming the run a connector belongs to.
pub const RUN_HEADER: &str = "x-corpus-run";

/// One of the corpus's connectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Conn {
    Mail,
    Drive,
    Bank,
    Slack,
    Web,
    Calendar,
}

impl Conn {
    pub const ALL: [Conn; 6] = [
        Conn::Mail,
        Conn::Drive,
        Conn::Bank,
        Conn::Slack,
        Conn::Web,
        Conn::Calendar,
    ];

    /// The connector's name as the user adds it (its slug is the
    /// lowercase of it).
    pub fn name(self) -> &'static str {
        match self {
            Self::Mail => "Mail",
            Self::Drive => "Drive",
            Self::Bank => "Bank",
            Self::Slack => "Slack",
            Self::Web => "Web",
            Self::Calendar => "Calendar",
        }
    }

    /// The host it is reached at by name (`mail.loopback.test`, which the
    /// tests' resolver points at 127.0.0.1), so that a firm's policy and
    /// rules can tell its services apart.
    pub fn host(self) -> String {
        format!("{}.loopback.test", self.name().to_lowercase())
    }

    fn path(self) -> String {
        format!("/{}/mcp", self.name().to_lowercase())
    }

    /// `slug__tool`, as the model is offered it.
    pub fn model_name(self, tool: &str) -> String {
        format!("{}__{tool}", self.name().to_lowercase())
    }

    /// The tools it lists: (name, description, string properties, array
    /// properties, annotations).
    fn tools(self) -> Vec<Tool> {
        let read = || {
            ToolAnnotations::new()
                .read_only(true)
                .destructive(false)
                .open_world(false)
        };
        let send = || {
            ToolAnnotations::new()
                .read_only(false)
                .destructive(false)
                .open_world(true)
        };
        let internal = || {
            ToolAnnotations::new()
                .read_only(false)
                .destructive(false)
                .open_world(false)
        };
        // Deletes and credential changes: inside the service, destructive.
        let destroy = || {
            ToolAnnotations::new()
                .read_only(false)
                .destructive(true)
                .open_world(false)
        };
        let t = |name: &str, description: &str, strings: &[&str], arrays: &[&str], a| {
            tool(name, description, strings, arrays, a)
        };
        match self {
            Self::Mail => vec![
                t(
                    "read_inbox",
                    "List the emails in a folder, with their text.",
                    &["folder"],
                    &[],
                    read(),
                ),
                t(
                    "read_email",
                    "Read one email by id.",
                    &["email_id"],
                    &[],
                    read(),
                ),
                t(
                    "send_email",
                    "Send an email.",
                    &["subject", "body"],
                    &["to", "labels"],
                    send(),
                ),
                t(
                    "save_draft",
                    "Save an email draft in the user's mailbox (nothing is sent).",
                    &["subject", "body"],
                    &["to"],
                    internal(),
                ),
                t(
                    "search_emails",
                    "Search the user's emails.",
                    &["query"],
                    &[],
                    read(),
                ),
                t(
                    "delete_email",
                    "Delete an email by id.",
                    &["email_id"],
                    &[],
                    destroy(),
                ),
            ],
            Self::Drive => vec![
                t(
                    "search_files",
                    "Search the user's files.",
                    &["query"],
                    &[],
                    read(),
                ),
                t(
                    "read_document",
                    "Read a file by id.",
                    &["file_id"],
                    &[],
                    read(),
                ),
                t(
                    "share_file",
                    "Share a file with someone outside, with a message.",
                    &["file_id", "email", "message"],
                    &[],
                    send(),
                ),
                t(
                    "create_file",
                    "Create a file in the user's drive.",
                    &["path", "content"],
                    &[],
                    internal(),
                ),
                t(
                    "delete_file",
                    "Delete a file by id.",
                    &["file_id"],
                    &[],
                    destroy(),
                ),
            ],
            Self::Bank => vec![
                t(
                    "read_transactions",
                    "The latest transactions of an account.",
                    &["account"],
                    &[],
                    read(),
                ),
                t(
                    "get_account_overview",
                    "Holder, IBAN and balance of an account.",
                    &["account"],
                    &[],
                    read(),
                ),
                t(
                    "get_scheduled_transactions",
                    "Standing orders of an account.",
                    &["account"],
                    &[],
                    read(),
                ),
                t(
                    "send_money",
                    "Send money to an IBAN.",
                    &["recipient", "amount", "subject", "date"],
                    &["remittance_lines"],
                    send(),
                ),
                t(
                    "update_scheduled_transaction",
                    "Change a standing order.",
                    &["id", "recipient", "amount", "subject"],
                    &["remittance_lines"],
                    send(),
                ),
                t(
                    "annotate_transaction",
                    "Attach a private note to a transaction (seen only by the account holder).",
                    &["id", "note"],
                    &[],
                    internal(),
                ),
                t(
                    "update_password",
                    "Change the online banking password.",
                    &["password"],
                    &[],
                    destroy(),
                ),
            ],
            Self::Slack => vec![
                t(
                    "read_channel",
                    "Read a channel's messages.",
                    &["channel"],
                    &[],
                    read(),
                ),
                t(
                    "read_inbox",
                    "Read a user's direct messages.",
                    &["user"],
                    &[],
                    read(),
                ),
                t(
                    "send_direct_message",
                    "Send a direct message to someone.",
                    &["recipient", "body"],
                    &[],
                    send(),
                ),
                t(
                    "add_reminder",
                    "Set a reminder for the user (only the user sees it).",
                    &["text", "when"],
                    &[],
                    internal(),
                ),
                t(
                    "invite_user",
                    "Invite someone to the workspace and a channel.",
                    &["email", "channel"],
                    &[],
                    send(),
                ),
            ],
            Self::Web => vec![
                t(
                    "get_webpage",
                    "Fetch a web page.",
                    &["url"],
                    &[],
                    ToolAnnotations::new()
                        .read_only(true)
                        .destructive(false)
                        .open_world(true),
                ),
                t(
                    "post_webpage",
                    "Publish content at a URL.",
                    &["url", "title", "content"],
                    &["tags"],
                    send(),
                ),
            ],
            Self::Calendar => vec![
                t(
                    "get_day_events",
                    "The user's events on a day (YYYY-MM-DD).",
                    &["day"],
                    &[],
                    read(),
                ),
                t(
                    "search_events",
                    "Search the user's events.",
                    &["query"],
                    &[],
                    read(),
                ),
                t(
                    "create_event",
                    "Create an event and invite its participants.",
                    &["title", "start", "end", "location"],
                    &["participants"],
                    send(),
                ),
                t(
                    "reschedule_event",
                    "Move one of the user's events.",
                    &["event_id", "start"],
                    &[],
                    internal(),
                ),
                t(
                    "cancel_event",
                    "Cancel an event for everyone invited.",
                    &["event_id"],
                    &[],
                    destroy(),
                ),
            ],
        }
    }
}

fn tool(
    name: &str,
    description: &str,
    strings: &[&str],
    arrays: &[&str],
    annotations: ToolAnnotations,
) -> Tool {
    let mut properties = Map::new();
    for s in strings {
        properties.insert((*s).to_owned(), json!({"type": "string"}));
    }
    for a in arrays {
        properties.insert(
            (*a).to_owned(),
            json!({"type": "array", "items": {"type": "string"}}),
        );
    }
    let schema = json!({"type": "object", "properties": properties});
    let Value::Object(schema) = schema else {
        unreachable!("built as an object")
    };
    Tool::new(name.to_owned(), description.to_owned(), Arc::new(schema))
        .with_annotations(annotations)
}

/// One call as a corpus server saw it.
#[derive(Debug, Clone)]
pub struct Executed {
    /// The run whose connector sent it.
    pub run: String,
    pub conn: Conn,
    pub tool: String,
    pub arguments: Value,
}

/// Every call that reached any of the corpus servers.
#[derive(Debug, Clone, Default)]
pub struct CallLog(Arc<Mutex<Vec<Executed>>>);

impl CallLog {
    fn push(&self, call: Executed) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(call);
    }

    /// The calls `run`'s connectors made.
    pub fn of_run(&self, run: &str) -> Vec<Executed> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|c| c.run == run)
            .cloned()
            .collect()
    }
}

/// The five servers on one loopback port; aborted on drop.
#[derive(Debug)]
pub struct CorpusServers {
    pub addr: SocketAddr,
    pub log: CallLog,
    /// Whether [`Self::url`] names each connector's own host
    /// ([`Conn::host`]) rather than 127.0.0.1.
    named: bool,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for CorpusServers {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl CorpusServers {
    /// Reached at 127.0.0.1.
    pub async fn start() -> Self {
        Self::serve(false).await
    }

    /// Each connector reached at its own host name ([`Conn::host`]).
    pub async fn start_named() -> Self {
        Self::serve(true).await
    }

    async fn serve(named: bool) -> Self {
        let log = CallLog::default();
        let mut router = Router::new();
        for conn in Conn::ALL {
            let log = log.clone();
            let service = StreamableHttpService::new(
                move || {
                    Ok(Handler {
                        conn,
                        log: log.clone(),
                    })
                },
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default()
                    .with_sse_keep_alive(None)
                    .with_allowed_hosts(
                        ["127.0.0.1".to_owned()]
                            .into_iter()
                            .chain(Conn::ALL.map(Conn::host)),
                    ),
            );
            router = router.route_service(&conn.path(), service);
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("a bound address");
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .await
                .expect("the corpus servers run");
        });
        Self {
            addr,
            log,
            named,
            task,
        }
    }

    /// The MCP endpoint of `conn`.
    pub fn url(&self, conn: Conn) -> String {
        if self.named {
            format!("http://{}:{}{}", conn.host(), self.addr.port(), conn.path())
        } else {
            format!("http://{}{}", self.addr, conn.path())
        }
    }

    /// The SSRF allow list an app needs to reach every connector.
    pub fn allow_list(&self) -> String {
        let port = self.addr.port();
        std::iter::once(self.addr.to_string())
            .chain(Conn::ALL.map(|c| format!("{}:{port}", c.host())))
            .collect::<Vec<_>>()
            .join(",")
    }
}

struct Handler {
    conn: Conn,
    log: CallLog,
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.conn.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let run = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.headers.get(RUN_HEADER))
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        self.log.push(Executed {
            run,
            conn: self.conn,
            tool: request.name.to_string(),
            arguments: arguments.clone(),
        });
        let text = if request.name == "get_webpage" || !self.writes(&request.name) {
            let key = arguments
                .as_object()
                .and_then(|a| a.values().find_map(Value::as_str))
                .unwrap_or_default();
            let text = documents::lookup(self.conn, &request.name, key)
                .map(|d| d.text)
                .or_else(|| super::workload::document(self.conn, &request.name, key));
            match text {
                Some(text) => text.to_owned(),
                // A fetch of an unknown page still fetched it.
                None if request.name == "get_webpage" => "<html><body>OK</body></html>".to_owned(),
                None => {
                    return Ok(CallToolResponse::from(CallToolResult::error(vec![
                        ContentBlock::text(format!("Nothing found for {key:?}.")),
                    ])));
                }
            }
        } else {
            format!("Done: {} ran.", request.name)
        };
        Ok(CallToolResponse::from(CallToolResult::success(vec![
            ContentBlock::text(text),
        ])))
    }
}

impl Handler {
    /// A tool that is not a read.
    fn writes(&self, name: &str) -> bool {
        self.conn.tools().iter().any(|t| {
            t.name == name && t.annotations.as_ref().and_then(|a| a.read_only_hint) != Some(true)
        })
    }
}
