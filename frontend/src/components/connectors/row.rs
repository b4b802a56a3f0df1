//! One connector in the list: what the server last answered about it (status,
//! destination, authentication, protocol, tool counts, standing rules, the
//! last error, tools not offered), and Test, Refresh, Review tools, Change
//! credentials and Delete (which asks first). An OAuth connector also shows
//! its sign-in ([`SignInControls`]).

use countersign_api::{AuthType, Connector, ConnectorStatus};
use leptos::prelude::*;
use leptos_router::components::A;

use super::change_credentials::ChangeCredentials;
use super::sign_in::{SignInControls, error_is_about_sign_in};
use super::store::ConnectorStore;
use super::trust_toggle::{ReviewToggle, TrustToggle};
use crate::api;
use crate::components::{FormError, ToolReviewList, last_error};
use crate::model::tool_review::{counts_summary, grant_count_text, not_offered_line};
use crate::session::SessionState;

/// What a row's buttons ask the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RowRequest {
    /// Test: connect and list the tools.
    Test,
    /// Refresh: list the tools again.
    Refresh,
    /// Delete the connector.
    Delete,
}

/// One connector: what the server last answered about it, and its actions.
#[component]
pub(super) fn ConnectorRow(id: String, store: ConnectorStore) -> impl IntoView {
    let session = SessionState::expect();
    let connector = {
        let id = id.clone();
        Memo::new(move |_| store.get(&id))
    };
    let field = move |f: fn(&Connector) -> String| {
        move || connector.with(|c| c.as_ref().map(f).unwrap_or_default())
    };

    let review_open = RwSignal::new(false);
    let tools_version = RwSignal::new(0_u32);
    let row_ref = NodeRef::<leptos::html::Li>::new();
    // Just added here: the review opens, with the tools as listed now, in
    // view, so it cannot be missed (nothing is offered until it is saved).
    {
        let id = id.clone();
        Effect::new(move |_| {
            if store.is_added(&id) && row_ref.get().is_some() {
                store.seen_added();
                review_open.set(true);
                tools_version.update(|v| *v += 1);
                request_animation_frame(move || {
                    if let Some(row) = row_ref.try_get_untracked().flatten() {
                        row.scroll_into_view_with_bool(true);
                    }
                });
            }
        });
    }
    // The server's tool counts moved (a Test elsewhere, the first listing
    // after adding): the open review loads the list again.
    let counts = Memo::new(move |_| connector.with(|c| c.as_ref().map(|c| c.tool_counts.clone())));
    Effect::new(move |previous: Option<()>| {
        counts.track();
        if previous.is_some() {
            tools_version.update(|v| *v += 1);
        }
    });
    let confirming = RwSignal::new(false);
    let editing = RwSignal::new(false);
    let credentials_notice = RwSignal::new(None::<String>);
    let credentials_id = id.clone();
    let sign_in_id = id.clone();
    let id_for_action = id.clone();
    let edit_button = NodeRef::<leptos::html::Button>::new();
    let sign_in_button = NodeRef::<leptos::html::Button>::new();
    // Closing the form puts the keyboard back on its button.
    let close_credentials = move |notice: Option<String>| {
        credentials_notice.set(notice);
        editing.set(false);
        request_animation_frame(move || {
            if let Some(button) = edit_button.try_get_untracked().flatten() {
                let _ = button.focus();
            }
        });
    };

    // Test, Refresh and Delete share one action: one runs at a time, and
    // its failure is the row's error.
    let act = Action::new_local(move |request: &RowRequest| {
        let request = *request;
        let token = session.csrf_token().unwrap_or_default();
        let id = id_for_action.clone();
        async move {
            if request == RowRequest::Delete {
                return match api::delete_connector(&token, &id).await {
                    Ok(()) => {
                        store.remove(&id);
                        Ok(())
                    }
                    Err(failure) => {
                        confirming.set(false);
                        Err(failure.detail)
                    }
                };
            }
            let result = if request == RowRequest::Refresh {
                api::refresh_connector(&token, &id).await
            } else {
                api::test_connector(&token, &id).await
            };
            let outcome = match result {
                Ok(updated) => {
                    store.upsert(updated);
                    Ok(())
                }
                Err(failure) => {
                    store.reload();
                    let oauth = connector.with_untracked(|c| c.as_ref().map(|c| c.auth_type))
                        == Some(AuthType::OAuth);
                    // 502 and 422 are stored as the connector's
                    // `last_error`, which the reload brings in; so is an
                    // OAuth connector's 409 "Sign in to this connector
                    // again.", shown beside its Sign in button, where the
                    // keyboard goes.
                    if matches!(failure.status, Some(422 | 502)) {
                        Ok(())
                    } else if oauth && failure.is_conflict() {
                        request_animation_frame(move || {
                            if let Some(button) = sign_in_button.try_get_untracked().flatten() {
                                let _ = button.focus();
                            }
                        });
                        Ok(())
                    } else {
                        Err(failure.detail)
                    }
                }
            };
            tools_version.update(|v| *v += 1);
            outcome
        }
    });
    let pending = act.pending();
    let running = act.input();
    let error = last_error(act);
    let run = move |request: RowRequest| {
        if !pending.get_untracked() {
            act.dispatch_local(request);
        }
    };

    let status = move || connector.with(|c| c.as_ref().map(|c| c.status));
    let status_text = move || match status() {
        Some(ConnectorStatus::Ok) => "OK",
        Some(ConnectorStatus::Error) => "Error",
        _ => "Not tested yet",
    };
    // An OAuth connector's sign-in error is shown by its Sign in button.
    let stored_error = move || {
        connector.with(|c| {
            c.as_ref()
                .filter(|c| c.status == ConnectorStatus::Error && !error_is_about_sign_in(c))
                .and_then(|c| c.last_error.clone())
        })
    };
    let uses_oauth =
        move || connector.with(|c| c.as_ref().is_some_and(|c| c.auth_type == AuthType::OAuth));
    let auth_text = move || {
        connector.with(|c| match c {
            Some(c) if c.auth_type == AuthType::Bearer && c.token_set => {
                "Bearer token set".to_owned()
            }
            Some(c) if c.auth_type == AuthType::Bearer => "Bearer token not set".to_owned(),
            Some(c) if c.auth_type == AuthType::Headers => {
                format!("Custom headers: {}", c.header_names.join(", "))
            }
            Some(c) if c.auth_type == AuthType::OAuth => "OAuth sign-in".to_owned(),
            _ => "No authentication".to_owned(),
        })
    };
    let protocol = move || {
        connector.with(|c| {
            c.as_ref()
                .and_then(|c| c.protocol_version.clone())
                .map(|v| format!("MCP {v}"))
        })
    };
    let counts = move || connector.with(|c| c.as_ref().map(|c| counts_summary(&c.tool_counts)));
    let not_offered = move || {
        connector.with(|c| {
            c.as_ref()
                .map(|c| {
                    c.dropped_tools
                        .iter()
                        .map(not_offered_line)
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
    };
    let rules = move || connector.with(|c| c.as_ref().map(|c| grant_count_text(c.grant_count)));
    let name = field(|c| c.name.clone());
    let host = field(|c| c.host.clone());
    let heading_id = format!("connector-{id}-name");
    let review_id = format!("connector-{id}-review");
    let question_id = format!("connector-{id}-delete-question");

    view! {
        <li class="connector-row" node_ref=row_ref data-testid="connector-row" data-connector-name=name aria-labelledby=heading_id.clone()>
            <div class="connector-head">
                <h3 id=heading_id.clone()>{name}</h3>
                <p class="connector-status" data-testid="connector-status"
                    data-status=move || status().map_or("", ConnectorStatus::as_str)>
                    {status_text}
                </p>
            </div>
            <dl class="connector-facts">
                <div>
                    <dt>"Destination"</dt>
                    <dd><code data-testid="connector-host">{host}</code></dd>
                </div>
                <div>
                    <dt>"Authentication"</dt>
                    <dd data-testid="connector-auth">{auth_text}</dd>
                </div>
                {move || protocol().map(|p| view! {
                    <div>
                        <dt>"Protocol"</dt>
                        <dd data-testid="connector-protocol">{p}</dd>
                    </div>
                })}
                {move || counts().map(|text| view! {
                    <div>
                        <dt>"Tools"</dt>
                        <dd data-testid="connector-tool-counts">{text}</dd>
                    </div>
                })}
                {move || rules().map(|text| view! {
                    <div>
                        <dt>"Standing rules"</dt>
                        <dd>
                            <A href="/settings/rules" {..} data-testid="connector-grant-count">{text}</A>
                        </dd>
                    </div>
                })}
            </dl>
            <Show when=uses_oauth>
                <SignInControls id=sign_in_id.clone() connector=connector store=store button=sign_in_button />
            </Show>
            {move || stored_error().map(|text| view! {
                <p class="connector-last-error" data-testid="connector-last-error">
                    {text}
                </p>
            })}
            {move || not_offered().into_iter().map(|line| view! {
                <p class="connector-not-offered" data-testid="connector-not-offered">{line}</p>
            }).collect_view()}
            <div class="connector-actions">
                <button type="button" class="button secondary small" data-testid="connector-test"
                    disabled=move || pending.get() on:click=move |_| run(RowRequest::Test)>
                    {move || if running.get() == Some(RowRequest::Test) { "Testing…" } else { "Test" }}
                </button>
                <button type="button" class="button secondary small" data-testid="connector-refresh"
                    disabled=move || pending.get() on:click=move |_| run(RowRequest::Refresh)>
                    {move || if running.get() == Some(RowRequest::Refresh) { "Refreshing…" } else { "Refresh" }}
                </button>
                <button type="button" class="button secondary small" data-testid="connector-review"
                    aria-expanded=move || review_open.get().to_string()
                    aria-controls=review_id.clone()
                    on:click=move |_| review_open.update(|open| *open = !*open)>
                    {move || if review_open.get() { "Hide tools" } else { "Review tools" }}
                </button>
                <button type="button" class="button secondary small" data-testid="connector-credentials-edit"
                    node_ref=edit_button
                    aria-expanded=move || editing.get().to_string()
                    on:click=move |_| {
                        credentials_notice.set(None);
                        editing.update(|open| *open = !*open);
                    }>
                    "Change credentials"
                </button>
                <button type="button" class="button secondary small danger-text" data-testid="connector-delete"
                    disabled=move || pending.get() || confirming.get()
                    on:click=move |_| confirming.set(true)>
                    "Delete"
                </button>
            </div>
            <Show when=move || editing.get()>
                <ChangeCredentials
                    id=credentials_id.clone()
                    connector=connector
                    store=store
                    on_close=close_credentials
                />
            </Show>
            {move || credentials_notice.get().map(|text| view! {
                <p class="key-notice" role="status" data-testid="connector-credentials-notice">{text}</p>
            })}
            <TrustToggle id=id.clone() connector=connector store=store />
            <ReviewToggle id=id.clone() connector=connector store=store />
            <FormError message=error testid="connector-error" />
            <Show when=move || confirming.get()>
                <div class="confirm" role="alertdialog" aria-labelledby=question_id.clone() data-testid="connector-delete-dialog">
                    <p id=question_id.clone() class="confirm-question">
                        {move || format!("Delete the connector “{}”?", name())}
                    </p>
                    <p class="muted">"Its tools and every “always allow” you gave them are deleted with it."</p>
                    <div class="confirm-buttons">
                        <button type="button" class="button danger" data-testid="connector-delete-confirm"
                            disabled=move || pending.get() on:click=move |_| run(RowRequest::Delete)>
                            {move || if running.get() == Some(RowRequest::Delete) { "Deleting…" } else { "Delete connector" }}
                        </button>
                        <button type="button" class="button secondary" data-testid="connector-delete-cancel"
                            on:click=move |_| confirming.set(false)>
                            "Cancel"
                        </button>
                    </div>
                </div>
            </Show>
            <div id=review_id>
                <Show when=move || review_open.get()>
                    <ToolReviewList
                        connector_id=id.clone()
                        version=tools_version.read_only()
                        on_changed=move || {
                            tools_version.update(|v| *v += 1);
                            store.reload();
                        }
                    />
                </Show>
            </div>
        </li>
    }
}
