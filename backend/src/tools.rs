//! What the tool loop can call. A [`ToolBox`] lists the tools a user's
//! model may see and runs one call. The chat's turn loop (`turns`) is its
//! only caller; MCP connectors (behind the approval gate) will be one
//! implementation, tests bring their own.

use crate::llm::{ToolCall, ToolSpec};
use std::{fmt::Debug, future::Future, pin::Pin};
use uuid::Uuid;

/// A boxed future, for object-safe async methods.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Who is calling, from where.
#[derive(Debug, Clone, Copy)]
pub struct ToolContext {
    /// The user whose model made the call.
    pub user_id: Uuid,
    /// The chat.
    pub chat_id: Uuid,
    /// The turn.
    pub turn_id: Uuid,
}

/// The result of one call, as the model will see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    /// Whether the call ran and succeeded.
    pub ok: bool,
    /// Result text, or why it did not run.
    pub content: String,
}

impl ToolOutcome {
    /// A failure the model (and the user) can read.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            ok: false,
            content: message.into(),
        }
    }
}

/// A source of tools.
pub trait ToolBox: Send + Sync + Debug {
    /// Tools offered to `user_id`'s model now.
    fn tools_for(&self, user_id: Uuid) -> BoxFuture<'_, Vec<ToolSpec>>;

    /// Runs one call. Must re-check at call time that the tool exists and
    /// belongs to the user: the model may name anything. Never panics on
    /// bad input; every call gets an outcome.
    fn call<'a>(&'a self, ctx: ToolContext, call: &'a ToolCall) -> BoxFuture<'a, ToolOutcome>;
}

/// No tools at all (until connectors land).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTools;

impl ToolBox for NoTools {
    fn tools_for(&self, _: Uuid) -> BoxFuture<'_, Vec<ToolSpec>> {
        Box::pin(async { Vec::new() })
    }

    fn call<'a>(&'a self, _: ToolContext, call: &'a ToolCall) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(
            async move { ToolOutcome::error(format!("There is no tool named \"{}\".", call.name)) },
        )
    }
}
