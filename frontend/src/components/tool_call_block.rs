//! A compact block for a tool call inside an answer.

use leptos::prelude::*;

use crate::api;
use crate::components::connectors::open_sign_in_page;
use crate::components::{FormError, OriginChip, StepUp, last_error};
use crate::model::transcript::{SignInAgain, ToolCall, ToolResult, ToolState};
use crate::session::SessionState;

/// "tool_name", its arguments as pretty JSON, where it stands (running /
/// ok / error with the reason), for an MCP call that ran without a
/// card, the rule that let it run, and for one that failed because its
/// OAuth connector needs a new sign-in, "Sign in to <connector> again".
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
            let name = call.shown_name().to_owned();
            let error = match call.state {
                ToolState::Error(Some(error)) => Some(error),
                _ => None,
            };
            let arguments = (!call.arguments.is_empty()).then_some(call.arguments);
            let origin = call.origin.map(|origin| view! { <OriginChip origin=origin /> });
            let sign_in = call.sign_in.map(|again| view! { <SignInAgainButton again=*again /> });
            let result = call.result.map(|result| view! { <ToolResultFold result=*result /> });
            view! {
                <section class="tool-call" data-testid="tool-call" data-state=state aria-label="Tool call">
                    <p class="tool-call-head">
                        <span class="tool-label">"Tool"</span>
                        <code class="tool-name" data-testid="tool-name">
                            {name}
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
                    {result}
                    {origin}
                    {sign_in}
                </section>
            }
        })
    }
}

/// What a call returned, folded: "Result (N characters)" opens the text
/// (plain text, never markup; cleaned and capped by the server).
#[component]
pub fn ToolResultFold(result: ToolResult) -> impl IntoView {
    view! {
        {result.contains_instructions.then(|| view! {
            <p class="tool-result-instructions" data-testid="tool-result-instructions">
                "This result contains instructions; Countersign treated them as data."
            </p>
        })}
        <details class="tool-result" data-testid="tool-result">
            <summary>{result.label()}</summary>
            <pre class="tool-result-text" data-testid="tool-result-text">{result.text}</pre>
        </details>
    }
}

/// "Sign in to <connector> again": starts the connector's sign-in and
/// sends the window to the authorization server's page (the callback
/// brings the browser back to Settings). One click, one sign-in: nothing
/// retries by itself.
#[component]
pub fn SignInAgainButton(again: SignInAgain) -> impl IntoView {
    let session = SessionState::expect();
    let step_up = StepUp::expect();
    let id = again.connector_id.clone();
    let start = Action::new_local(move |_: &()| {
        let token = session.csrf_token().unwrap_or_default();
        let id = id.clone();
        async move {
            let started = step_up
                .run(|| api::start_connector_sign_in(&token, &id))
                .await
                .map_err(|failure| failure.detail)?;
            open_sign_in_page(&started.authorization_url)
        }
    });
    let pending = start.pending();
    let error = last_error(start);
    let label = format!("Sign in to {} again", again.connector_name);
    view! {
        <p class="tool-sign-in">
            <button type="button" class="button primary small" data-testid="tool-sign-in-again"
                aria-disabled=move || pending.get().then_some("true")
                on:click=move |_| {
                    if !pending.get_untracked() {
                        start.dispatch_local(());
                    }
                }>
                {move || if pending.get() { "Opening the sign-in page…".to_owned() } else { label.clone() }}
            </button>
        </p>
        <FormError message=error testid="tool-sign-in-error" />
    }
}
