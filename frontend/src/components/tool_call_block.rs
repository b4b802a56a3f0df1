//! A compact block for a tool call inside an answer.

use leptos::prelude::*;

use crate::components::OriginChip;
use crate::model::transcript::{ToolCall, ToolState};

/// "tool_name", its arguments as pretty JSON, where it stands (running /
/// ok / error with the reason), and for an MCP call that ran without a
/// card, the rule that let it run.
#[component]
pub fn ToolCallBlock(
    /// The call; `None` renders nothing.
    call: Signal<Option<ToolCall>>,
) -> impl IntoView {
    move || {
        call.get().map(|call| {
            let (state, label) = match &call.state {
                ToolState::Running => ("running", "Running…"),
                ToolState::Ok => ("ok", "OK"),
                ToolState::Error(_) => ("error", "Error"),
                ToolState::Unfinished => ("unfinished", "Did not finish"),
            };
            let error = match call.state {
                ToolState::Error(Some(error)) => Some(error),
                _ => None,
            };
            let arguments = (!call.arguments.is_empty()).then_some(call.arguments);
            let origin = call.origin.map(|origin| view! { <OriginChip origin=origin /> });
            view! {
                <section class="tool-call" data-testid="tool-call" data-state=state aria-label="Tool call">
                    <p class="tool-call-head">
                        <span class="tool-label">"Tool"</span>
                        <code class="tool-name" data-testid="tool-name">
                            {call.tool_name}
                        </code>
                        <span class=format!("tool-status {state}") data-testid="tool-status">
                            {label}
                        </span>
                    </p>
                    {arguments
                        .map(|arguments| {
                            view! {
                                <pre class="tool-args" aria-label="Arguments">
                                    <code>{arguments}</code>
                                </pre>
                            }
                        })}
                    {error
                        .map(|error| {
                            view! {
                                <p class="tool-error" data-testid="tool-error">
                                    {error}
                                </p>
                            }
                        })}
                    {origin}
                </section>
            }
        })
    }
}
