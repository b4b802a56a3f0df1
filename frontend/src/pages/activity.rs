//! `/activity`: the activity log (DESIGN §5), one row per proposed tool
//! call — when, connector, tool, the digest of its arguments (never the
//! arguments: the log has none), what decided it, how it ended and how long
//! it ran. The rows are [`group_calls`]' of `GET /api/activity`.

use leptos::prelude::*;
use leptos_router::components::A;

use crate::api;
use crate::clock::minutes_east_at;
use crate::components::set_page_title;
use crate::model::activity::{CallRow, decision_text, group_calls, outcome_text, short_digest};
use crate::model::admin::{change_text, entry_subject, is_admin_entry};
use crate::model::approval::duration_text;
use crate::model::when::date_time_text;
use crate::pages::chat_path;

/// The page: an explanation, Refresh, and the table.
#[component]
pub fn ActivityPage() -> impl IntoView {
    set_page_title("Activity");
    let log = LocalResource::new(api::activity);

    let table = move || match log.get() {
        None => view! { <p class="muted">"Loading…"</p> }.into_any(),
        Some(Err(error)) => view! {
            <p class="form-error" role="alert" data-testid="activity-error">{error.detail}</p>
        }
        .into_any(),
        Some(Ok(entries)) => {
            let rows = group_calls(&entries);
            let changes: Vec<_> = entries
                .iter()
                .filter(|e| is_admin_entry(e))
                .cloned()
                .collect();
            let admin_changes = (!changes.is_empty()).then(|| view! {
                <section class="panel admin-changes" aria-labelledby="admin-changes-heading" data-testid="activity-admin-changes">
                    <h2 id="admin-changes-heading">"Your changes as an administrator"</h2>
                    <ul class="admin-change-list">
                        {changes.into_iter().map(|entry| {
                            let at = date_time_text(&entry.at, minutes_east_at);
                            let lines = entry.changes.iter().map(change_text).collect::<Vec<_>>().join("; ");
                            view! {
                                <li data-testid="activity-admin-change">
                                    <span class="muted">{at}</span>" · "<strong>{entry_subject(&entry)}</strong>": "{lines}
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                </section>
            });
            if rows.is_empty() {
                view! {
                    {admin_changes}
                    <p class="muted" data-testid="activity-empty">"No tool calls yet."</p>
                }
                .into_any()
            } else {
                view! {
                    {admin_changes}
                    <div class="table-scroll">
                        <table class="activity-table" role="table" data-testid="activity-table">
                            <caption class="visually-hidden">"Tool calls, most recent first"</caption>
                            <thead role="rowgroup">
                                <tr role="row">
                                    <th scope="col" role="columnheader">"Time"</th>
                                    <th scope="col" role="columnheader">"Connector"</th>
                                    <th scope="col" role="columnheader">"Tool"</th>
                                    <th scope="col" role="columnheader">"Arguments digest"</th>
                                    <th scope="col" role="columnheader">"Decision"</th>
                                    <th scope="col" role="columnheader">"Outcome"</th>
                                    <th scope="col" role="columnheader">"Duration"</th>
                                    <th scope="col" role="columnheader">"Chat"</th>
                                </tr>
                            </thead>
                            <tbody role="rowgroup">
                                {rows.into_iter().map(|row| view! { <ActivityRow row=row /> }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }
                .into_any()
            }
        }
    };

    view! {
        <div class="page wide-page">
            <h1>"Activity"</h1>
            <p class="lead">
                "Every tool call the assistant proposed, what decided it and how it ended. Arguments are not kept here, only their SHA-256 digest: the same digest means the same arguments."
            </p>
            <p>
                <button type="button" class="button secondary small" data-testid="activity-refresh"
                    on:click=move |_| log.refetch()>
                    "Refresh"
                </button>
            </p>
            {table}
        </div>
    }
}

/// One call.
#[component]
fn ActivityRow(row: CallRow) -> impl IntoView {
    let when = date_time_text(&row.at, minutes_east_at);
    let decision = decision_text(row.decision, row.grant);
    let outcome = outcome_text(row.outcome);
    let duration = row.duration_ms.map(duration_text).unwrap_or_default();
    let digest = short_digest(&row.arguments_digest);
    view! {
        // Explicit roles: on a narrow screen CSS lays the row out as
        // blocks, and the cells must still read as a table's.
        <tr
            role="row"
            data-testid="activity-row"
            data-call-ref=row.call_ref.clone()
            data-decision=row.decision.map_or("", |d| d.as_str())
            data-outcome=row.outcome.as_str()
        >
            <td role="cell" data-label="Time"><time datetime=row.at.clone() title=row.at.clone()>{when}</time></td>
            <td role="cell" data-label="Connector" data-testid="activity-connector">{row.connector_name.clone()}</td>
            <td role="cell" data-label="Tool"><code data-testid="activity-tool">{row.tool_name.clone()}</code></td>
            <td role="cell" data-label="Arguments digest">
                // Short in the table; the whole digest on hover, and when a
                // keyboard focuses it (CSS swaps the two).
                <code
                    class="digest"
                    data-testid="activity-digest"
                    data-digest=row.arguments_digest.clone()
                    title=row.arguments_digest.clone()
                    tabindex="0"
                >
                    <span class="digest-short">{digest}</span>
                    <span class="digest-full">{row.arguments_digest.clone()}</span>
                </code>
            </td>
            <td role="cell" data-label="Decision" data-testid="activity-decision">{decision}</td>
            <td role="cell" data-label="Outcome" data-testid="activity-outcome">
                <span class="outcome" data-outcome=row.outcome.as_str()>{outcome}</span>
                {row.error.clone().map(|error| view! {
                    <p class="activity-error">{error}</p>
                })}
            </td>
            <td role="cell" data-label="Duration" data-testid="activity-duration">{duration}</td>
            <td role="cell" data-label="Chat">
                <A href=chat_path(&row.chat_id) {..} data-testid="activity-chat-link">
                    "Open the chat"
                </A>
            </td>
        </tr>
    }
}
