//! What the tool loop can call. A [`ToolBox`] lists the tools a user's
//! model may see and runs one call. The chat's turn loop (`turns`) is its
//! only caller. [`connector::ConnectorTools`] is the real one: the user's
//! kept MCP tools, behind the gate and the approval ledger. Tests bring
//! their own.

pub mod connector;

use crate::{
    AppState,
    ids::ConnectorId,
    llm::{ToolCall, ToolSpec},
    provenance::{Seen, SeenBy},
};
use countersign_api::{ChatEvent, provenance::Source};
use std::{fmt::Debug, future::Future, pin::Pin, sync::Mutex};
use tokio::sync::watch;
use uuid::Uuid;

/// A boxed future, for object-safe async methods.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub use crate::ids::ToolContext;

/// Where a tool box writes the chat events of a call (cards, outcomes).
pub trait EventSink: Send + Sync {
    /// Appends `event` to the turn's chat.
    fn emit<'a>(&'a self, event: ChatEvent) -> BoxFuture<'a, ()>;
}

/// One call's surroundings.
pub struct ToolRun<'a> {
    /// The server.
    pub state: &'a AppState,
    /// Who, where.
    pub ctx: ToolContext,
    /// The turn's events.
    pub events: &'a dyn EventSink,
    /// Turns `true` when the user stops the turn.
    pub cancel: watch::Receiver<bool>,
    /// What this turn's calls returned so far.
    pub seen: &'a TurnSeen,
}

/// What this turn's tool calls returned, as the model got it: what a later
/// call of the turn is traced against (`crate::provenance`).
#[derive(Debug, Default)]
pub struct TurnSeen {
    results: Mutex<Vec<SeenResult>>,
}

#[derive(Debug, Clone)]
struct SeenResult {
    source: Source,
    connector_id: ConnectorId,
    text: String,
    contains_instructions: bool,
}

impl TurnSeen {
    /// Records a result.
    pub fn add(
        &self,
        source: Source,
        connector_id: ConnectorId,
        text: String,
        contains_instructions: bool,
    ) {
        self.lock().push(SeenResult {
            source,
            connector_id,
            text,
            contains_instructions,
        });
    }

    /// The results, as provenance sources.
    pub fn results(&self) -> Vec<Seen> {
        self.lock()
            .iter()
            .map(|r| Seen {
                by: SeenBy::Tool {
                    source: r.source.clone(),
                    connector_id: r.connector_id,
                },
                text: r.text.clone(),
            })
            .collect()
    }

    /// The results that hold instructions aimed at the assistant.
    pub fn instructions_in(&self) -> Vec<Source> {
        self.lock()
            .iter()
            .filter(|r| r.contains_instructions)
            .map(|r| r.source.clone())
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<SeenResult>> {
        // A panic elsewhere while holding it leaves plain data behind.
        self.results.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Debug for ToolRun<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRun")
            .field("ctx", &self.ctx)
            .finish_non_exhaustive()
    }
}

/// Why a call did not run, when the user (or the clock) said no.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotRun {
    /// The user declined it.
    Declined,
    /// Nobody decided in time.
    Expired,
}

/// The result of one call, as the model will see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    /// Whether the call ran and succeeded.
    pub ok: bool,
    /// Result text, or why it did not run.
    pub content: String,
    /// The tool box wrote the call's outcome event itself (`mcp_tool_call`
    /// or a resolved card); the loop adds no `tool_result`.
    pub reported: bool,
    /// The user (or expiry) kept it from running.
    pub not_run: Option<NotRun>,
}

impl ToolOutcome {
    /// A success.
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            ok: true,
            content: content.into(),
            reported: false,
            not_run: None,
        }
    }

    /// A failure the model (and the user) can read.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            ok: false,
            content: message.into(),
            reported: false,
            not_run: None,
        }
    }
}

/// [`ToolBox::tools_with`]'s answer: the tools, and the rows of each read
/// beside them.
pub type ToolsWith = (
    Vec<ToolSpec>,
    Result<Vec<Vec<sqlx::postgres::PgRow>>, sqlx::Error>,
);

/// A source of tools.
pub trait ToolBox: Send + Sync + Debug {
    /// Tools offered to `user_id`'s model now.
    fn tools_for<'a>(&'a self, state: &'a AppState, user_id: Uuid) -> BoxFuture<'a, Vec<ToolSpec>>;

    /// [`ToolBox::tools_for`], and `beside` (reads of the caller's, as
    /// parts of a [`crate::db::trip`]) in the same round trip where the tool
    /// box reads the database: each part's rows, in order. A trip's first
    /// failed part ends it, so the tools and the reads beside fail
    /// together. Before the tool box does anything on the user's behalf
    /// (fetching a connector's tool list again, recording what changed),
    /// it runs `first_check`, if any, and stops there if it fails: the
    /// error is then the reads' (`Err`), and no tools.
    fn tools_with<'a>(
        &'a self,
        state: &'a AppState,
        user_id: Uuid,
        beside: Vec<crate::db::trip::Part>,
        first_check: Option<crate::db::trip::Part>,
    ) -> BoxFuture<'a, ToolsWith> {
        // `tools_for` beside the reads. A tool box that acts on the user's
        // behalf while it lists its tools overrides this, to honour
        // `first_check` (the connectors' does).
        let _ = first_check;
        Box::pin(async move {
            tokio::join!(
                self.tools_for(state, user_id),
                crate::db::trip::run_parts(&state.db, beside)
            )
        })
    }

    /// Runs one call. Must re-check at call time that the tool exists and
    /// belongs to the user: the model may name anything. Never panics on
    /// bad input; every call gets an outcome.
    fn call<'a>(&'a self, run: &'a ToolRun<'a>, call: &'a ToolCall) -> BoxFuture<'a, ToolOutcome>;
}

/// No tools at all.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTools;

impl ToolBox for NoTools {
    fn tools_for<'a>(&'a self, _: &'a AppState, _: Uuid) -> BoxFuture<'a, Vec<ToolSpec>> {
        Box::pin(async { Vec::new() })
    }

    fn call<'a>(&'a self, _: &'a ToolRun<'a>, call: &'a ToolCall) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(
            async move { ToolOutcome::error(format!("There is no tool named \"{}\".", call.name)) },
        )
    }
}
