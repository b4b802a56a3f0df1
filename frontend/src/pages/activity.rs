//! `/activity`: the activity log as an audit trail (DESIGN §9, issue 45):
//! filters (dates, connector, tool, decision, flagged), the calls waiting
//! for a decision, one row per proposed call — when (to the second, with
//! the zone), connector and tool, where it sends data, a flagged flow,
//! what decided it, how it ended, the digest of its arguments (never the
//! arguments: the log has none) — and CSV and JSON exports of what the
//! filters show. Administrators can read one account's log or every
//! account's (the server records that they did).
//!
//! The rows are [`group_calls`]' of `GET /api/activity` (or
//! `/api/admin/activity`); the filters are the server's, the page only
//! fills them in.

use leptos::prelude::*;
use leptos_router::components::A;

use countersign_api::{
    ActivityEntry, ActivityFilter, AdminWaitingCall, PendingCall, approvals::LIST_ROW_CAP,
};

use crate::api;
use crate::clock::minutes_east_at;
use crate::components::set_page_title;
use crate::model::activity::{
    CallRow, DECISION_CHOICES, FilterForm, Scope, decision_text, destination_text, group_calls,
    outcome_text, result_review_text, short_digest,
};
use crate::model::admin::{admin_entry_text, is_admin_entry};
use crate::model::approval::duration_text;
use crate::model::when::full_time_text;
use crate::pages::chat_path;
use crate::session::SessionState;

/// The page: an explanation, the filters, what waits, and the calls.
#[component]
pub fn ActivityPage() -> impl IntoView {
    set_page_title("Activity");
    let session = SessionState::expect();
    let is_admin = Memo::new(move |_| session.user().is_some_and(|user| user.is_admin));

    // What the form holds, and what was last applied (the log reads that).
    let form = RwSignal::new(FilterForm::default());
    let scope_choice = RwSignal::new(Scope::Own);
    let applied = RwSignal::new((Scope::Own, ActivityFilter::default()));

    let log = LocalResource::new(move || {
        let (scope, filter) = applied.get();
        async move { api::activity(&scope, &filter, None).await }
    });
    // The older pages read with "Show older calls", after the first.
    let older = RwSignal::new(Vec::<Vec<ActivityEntry>>::new());
    let older_state = RwSignal::new(Older::Idle);
    let waiting = LocalResource::new(api::pending_calls);
    // In an administrator's view: the calls waiting across accounts (a
    // read of others' that the server records).
    let waiting_across = LocalResource::new(move || {
        let (scope, _) = applied.get();
        async move {
            if scope.is_admin_view() {
                Some(api::admin_pending_calls(&scope).await)
            } else {
                None
            }
        }
    });
    let accounts = LocalResource::new(move || async move {
        if is_admin.get() {
            api::admin_users().await.unwrap_or_default()
        } else {
            Vec::new()
        }
    });

    let apply = move || {
        let filter = form.get_untracked().to_filter(minutes_east_at);
        older.set(Vec::new());
        older_state.set(Older::Idle);
        applied.set((scope_choice.get_untracked(), filter));
    };
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        apply();
    };
    let clear = move |_| {
        form.set(FilterForm::default());
        scope_choice.set(Scope::Own);
        older.set(Vec::new());
        older_state.set(Older::Idle);
        applied.set((Scope::Own, ActivityFilter::default()));
    };
    // The `seq` the next page starts before, when the last page read was
    // full (there may be more).
    let next_before = move || {
        let first = log.get().and_then(Result::ok)?;
        let pages = older.get();
        let last = pages.last().unwrap_or(&first);
        (last.len() >= LIST_ROW_CAP)
            .then(|| last.last().map(|e| e.seq))
            .flatten()
    };
    let show_older = move |_| {
        let Some(before) = next_before() else { return };
        let (scope, filter) = applied.get_untracked();
        older_state.set(Older::Loading);
        leptos::task::spawn_local(async move {
            match api::activity(&scope, &filter, Some(before)).await {
                Ok(page) => {
                    // A page for filters since changed is dropped.
                    if applied.with_untracked(|a| a.0 == scope && a.1 == filter) {
                        older.update(|pages| pages.push(page));
                        older_state.set(Older::Idle);
                    }
                }
                Err(error) => older_state.set(Older::Failed(error.detail)),
            }
        });
    };
    let export_url = move |format: &'static str| {
        let (scope, filter) = applied.get();
        api::activity_url(&scope, &filter, Some(format))
    };
    let admin_view = move || applied.get().0.is_admin_view();

    // One labelled text-like field of the form.
    let field = move |id: &'static str,
                      label: &'static str,
                      kind: &'static str,
                      get: fn(&FilterForm) -> String,
                      set: fn(&mut FilterForm, String)| {
        view! {
            <div class="activity-filter">
                <label for=id>{label}</label>
                <input
                    id=id
                    type=kind
                    data-testid=id
                    prop:value=move || form.with(get)
                    on:input=move |ev| {
                        let value = event_target_value(&ev);
                        form.update(|f| set(f, value));
                    }
                />
            </div>
        }
    };

    let scope_select = move || {
        is_admin.get().then(|| {
            let options = move || {
                accounts
                    .get()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|user| {
                        let value = Scope::Account(user.id.clone()).value();
                        view! { <option value=value>{user.email}</option> }
                    })
                    .collect_view()
            };
            view! {
                <div class="activity-filter">
                    <label for="activity-scope">"Whose activity"</label>
                    <select
                        id="activity-scope"
                        data-testid="activity-scope"
                        prop:value=move || scope_choice.get().value()
                        on:change=move |ev| scope_choice.set(Scope::from_value(&event_target_value(&ev)))
                    >
                        <option value="">"Mine"</option>
                        <option value="*">"Every account"</option>
                        {options}
                    </select>
                </div>
            }
        })
    };

    let table = move || match log.get() {
        None => view! { <p class="muted">"Loading…"</p> }.into_any(),
        Some(Err(error)) => view! {
            <p class="form-error" role="alert" data-testid="activity-error">{error.detail}</p>
        }
        .into_any(),
        Some(Ok(first)) => {
            let mut entries = first;
            older.with(|pages| entries.extend(pages.iter().flatten().cloned()));
            let with_account = admin_view();
            let rows = group_calls(&entries);
            let changes: Vec<_> = entries
                .iter()
                .filter(|e| is_admin_entry(e))
                .cloned()
                .collect();
            let heading = if with_account {
                "Administrators' changes and reads"
            } else {
                "Your changes as an administrator"
            };
            let admin_changes = (!changes.is_empty()).then(|| view! {
                <section class="panel admin-changes" aria-labelledby="admin-changes-heading" data-testid="activity-admin-changes">
                    <h2 id="admin-changes-heading">{heading}</h2>
                    <ul class="admin-change-list">
                        {changes.into_iter().map(|entry| {
                            let at = full_time_text(&entry.at, minutes_east_at);
                            let who = entry.user_email.clone().map(|email| format!("{email} · "));
                            view! {
                                <li data-testid="activity-admin-change" data-kind=entry.kind.as_str()>
                                    <span class="muted">{at}</span>" · "{who}{admin_entry_text(&entry)}
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                </section>
            });
            let count = rows.len();
            if rows.is_empty() {
                view! {
                    {admin_changes}
                    <p class="muted" data-testid="activity-empty">"No tool calls match."</p>
                }
                .into_any()
            } else {
                view! {
                    {admin_changes}
                    <p class="muted activity-count" data-testid="activity-count">
                        {format!("{count} call{}, most recent first.", if count == 1 { "" } else { "s" })}
                    </p>
                    // Explicit roles: on a narrow screen CSS lays the rows out as
                    // cards, and the cells must still read as a table's.
                    <table class="activity-table" class:with-account=with_account role="table" data-testid="activity-table">
                        <caption class="visually-hidden">"Tool calls, most recent first"</caption>
                        <thead role="rowgroup">
                            <tr role="row">
                                <th scope="col" role="columnheader" class="col-time">"Time"</th>
                                {with_account.then(|| view! { <th scope="col" role="columnheader" class="col-account">"Account"</th> })}
                                <th scope="col" role="columnheader" class="col-tool">"Connector and tool"</th>
                                <th scope="col" role="columnheader" class="col-dest">"Sends to"</th>
                                <th scope="col" role="columnheader" class="col-flow">"Flagged flow"</th>
                                <th scope="col" role="columnheader" class="col-decision">"Decision"</th>
                                <th scope="col" role="columnheader" class="col-outcome">"Outcome"</th>
                                <th scope="col" role="columnheader" class="col-digest">"Arguments digest"</th>
                                <th scope="col" role="columnheader" class="col-chat">"Chat"</th>
                            </tr>
                        </thead>
                        <tbody role="rowgroup">
                            {rows.into_iter().map(|row| view! { <ActivityRow row=row with_account=with_account /> }).collect_view()}
                        </tbody>
                    </table>
                }
                .into_any()
            }
        }
    };

    let waiting_list = move || {
        if admin_view() {
            return match waiting_across.get().flatten()? {
                Err(error) => Some(
                    view! { <p class="form-error" role="alert" data-testid="activity-waiting-error">{error.detail}</p> }
                        .into_any(),
                ),
                Ok(calls) => Some(waiting_section(
                    "Waiting for a decision",
                    calls.into_iter().map(|call| view! { <WaitingAcross call=call /> }.into_any()).collect(),
                )),
            };
        }
        let calls = waiting.get().and_then(Result::ok).unwrap_or_default();
        Some(waiting_section(
            "Waiting for your decision",
            calls
                .into_iter()
                .map(|call| view! { <WaitingCall call=call /> }.into_any())
                .collect(),
        ))
    };

    view! {
        <div class="page wide-page activity-page">
            <h1>"Activity"</h1>
            <p class="lead">
                "Every tool call the assistant proposed, what decided it and how it ended. Arguments are not kept here, only their SHA-256 digest: the same digest means the same arguments."
            </p>
            <form class="panel activity-filters" role="search" aria-label="Filter the activity" data-testid="activity-filters" on:submit=on_submit>
                <div class="activity-filter-grid">
                    {scope_select}
                    {field("activity-from", "From (day)", "date", |f| f.from_date.clone(), |f, v| f.from_date = v)}
                    {field("activity-to", "To (day)", "date", |f| f.to_date.clone(), |f, v| f.to_date = v)}
                    {field("activity-connector", "Connector", "text", |f| f.connector.clone(), |f, v| f.connector = v)}
                    {field("activity-tool", "Tool", "text", |f| f.tool.clone(), |f, v| f.tool = v)}
                    <div class="activity-filter">
                        <label for="activity-decision">"Decision"</label>
                        <select
                            id="activity-decision"
                            data-testid="activity-decision-filter"
                            prop:value=move || form.with(|f| f.decision.clone())
                            on:change=move |ev| {
                                let value = event_target_value(&ev);
                                form.update(|f| f.decision = value);
                            }
                        >
                            <option value="">"Any"</option>
                            {DECISION_CHOICES.iter().map(|(decision, words)| view! {
                                <option value=decision.as_str()>{*words}</option>
                            }).collect_view()}
                        </select>
                    </div>
                    <div class="activity-filter">
                        <label for="activity-flagged">"Flagged flow"</label>
                        <select
                            id="activity-flagged"
                            data-testid="activity-flagged-filter"
                            prop:value=move || form.with(|f| f.flagged.clone())
                            on:change=move |ev| {
                                let value = event_target_value(&ev);
                                form.update(|f| f.flagged = value);
                            }
                        >
                            <option value="">"Any"</option>
                            <option value="flagged">"Flagged only"</option>
                            <option value="unflagged">"Not flagged"</option>
                        </select>
                    </div>
                </div>
                <div class="activity-filter-actions">
                    <button type="submit" class="button small" data-testid="activity-apply">"Apply filters"</button>
                    <button type="button" class="button secondary small" data-testid="activity-clear" on:click=clear>"Clear"</button>
                    <button type="button" class="button secondary small" data-testid="activity-refresh"
                        on:click=move |_| {
                            older.set(Vec::new());
                            older_state.set(Older::Idle);
                            log.refetch();
                            waiting.refetch();
                            waiting_across.refetch();
                        }>
                        "Refresh"
                    </button>
                    <span class="activity-exports">
                        <a class="button secondary small" href=move || export_url("csv") download="" data-testid="activity-export-csv">"Export CSV"</a>
                        <a class="button secondary small" href=move || export_url("json") download="" data-testid="activity-export-json">"Export JSON"</a>
                    </span>
                </div>
                <p class="muted activity-export-note">"An export holds what the filters show, at most 10,000 entries; the file says whether it was cut."</p>
            </form>
            {waiting_list}
            {table}
            {move || next_before().map(|_| view! {
                <p class="activity-more">
                    <button
                        type="button"
                        class="button secondary"
                        data-testid="activity-show-older"
                        disabled=move || older_state.get() == Older::Loading
                        on:click=show_older
                    >
                        {move || if older_state.get() == Older::Loading { "Loading older calls…" } else { "Show older calls" }}
                    </button>
                    {move || match older_state.get() {
                        Older::Failed(detail) => Some(view! {
                            <span class="form-error" role="alert" data-testid="activity-older-error">{detail}</span>
                        }),
                        _ => None,
                    }}
                </p>
            })}
        </div>
    }
}

/// The calls waiting, under `heading`: the caller's own, or in an
/// administrator's view every account's.
fn waiting_section(heading: &'static str, calls: Vec<AnyView>) -> AnyView {
    view! {
        <section class="panel activity-waiting" aria-labelledby="activity-waiting-heading" data-testid="activity-waiting">
            <h2 id="activity-waiting-heading">{heading}</h2>
            {if calls.is_empty() {
                view! { <p class="muted" data-testid="activity-waiting-empty">"Nothing is waiting."</p> }.into_any()
            } else {
                view! { <ul class="activity-waiting-list">{calls}</ul> }.into_any()
            }}
        </section>
    }
    .into_any()
}

/// Where reading an older page stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Older {
    Idle,
    Loading,
    Failed(String),
}

/// One call waiting for a decision.
#[component]
fn WaitingCall(call: PendingCall) -> impl IntoView {
    let flagged = call.provenance.as_ref().is_some_and(|p| p.flagged());
    let decide_by = full_time_text(&call.decide_by, minutes_east_at);
    let destinations = call
        .destinations
        .iter()
        .map(destination_text)
        .collect::<Vec<_>>()
        .join(", ");
    view! {
        <li class="activity-waiting-call" data-testid="activity-waiting-call" data-flagged=flagged.to_string()>
            <strong>{call.connector_name.clone()}": "<code>{call.tool_name.clone()}</code></strong>
            {flagged.then(|| view! { <span class="flag-badge">"Flagged flow"</span> })}
            <span class="muted">" · decide by "<time datetime=call.decide_by.clone()>{decide_by}</time></span>
            {(!destinations.is_empty()).then(|| view! {
                <span class="activity-waiting-dest">" · sends to "{destinations}</span>
            })}
            " · "
            <A href=chat_path(&call.chat_id) {..} data-testid="activity-waiting-link">"Open the chat to decide"</A>
        </li>
    }
}

/// Another account's call waiting for a decision, in an administrator's
/// view: whose, which tool, where it sends data, since when (only its
/// account can decide it).
#[component]
fn WaitingAcross(call: AdminWaitingCall) -> impl IntoView {
    let since = full_time_text(&call.waiting_since, minutes_east_at);
    let destinations = call
        .destinations
        .iter()
        .map(destination_text)
        .collect::<Vec<_>>()
        .join(", ");
    view! {
        <li class="activity-waiting-call" data-testid="activity-waiting-call" data-flagged=call.flagged.to_string()>
            <span class="activity-waiting-who">{call.user_email.clone()}</span>" · "
            <strong>{call.connector_name.clone()}": "<code>{call.tool_name.clone()}</code></strong>
            {call.flagged.then(|| view! { <span class="flag-badge">"Flagged flow"</span> })}
            <span class="muted">" · waiting since "<time datetime=call.waiting_since.clone()>{since}</time></span>
            {(!destinations.is_empty()).then(|| view! {
                <span class="activity-waiting-dest">" · sends to "{destinations}</span>
            })}
        </li>
    }
}

/// One call.
#[component]
fn ActivityRow(row: CallRow, with_account: bool) -> impl IntoView {
    let when = full_time_text(&row.at, minutes_east_at);
    let decision = decision_text(row.decision, row.grant, row.rule.as_ref());
    let outcome = outcome_text(row.outcome);
    let duration = row.duration_ms.map(duration_text);
    let digest = short_digest(&row.arguments_digest);
    let account = row.user_email.clone().unwrap_or_default();
    view! {
        <tr
            role="row"
            data-testid="activity-row"
            data-call-ref=row.call_ref.clone()
            data-decision=row.decision.map_or("", |d| d.as_str())
            data-outcome=row.outcome.as_str()
            data-flagged=row.flagged.to_string()
        >
            <td role="cell" data-label="Time"><time datetime=row.at.clone() data-testid="activity-time">{when}</time></td>
            {with_account.then(|| view! {
                <td role="cell" data-label="Account" data-testid="activity-account">{account}</td>
            })}
            <td role="cell" data-label="Connector and tool">
                <span data-testid="activity-connector">{row.connector_name.clone()}</span>
                " · "
                <code data-testid="activity-tool">{row.tool_name.clone()}</code>
            </td>
            <td role="cell" data-label="Sends to" data-testid="activity-destinations">
                {if row.destinations.is_empty() {
                    view! { <span class="muted">"None named"</span> }.into_any()
                } else {
                    view! {
                        <ul class="destination-list">
                            {row.destinations.iter().map(|d| view! {
                                <li data-testid="activity-destination">{destination_text(d)}</li>
                            }).collect_view()}
                        </ul>
                    }
                    .into_any()
                }}
            </td>
            <td role="cell" data-label="Flagged flow" data-testid="activity-flow">
                {if row.flagged {
                    view! {
                        <span class="flag-badge">"Flagged"</span>
                        {row.flows.iter().map(|flow| view! { <p class="flow-text">{flow.clone()}</p> }).collect_view()}
                    }
                    .into_any()
                } else {
                    view! { <span class="muted">"No"</span> }.into_any()
                }}
            </td>
            <td role="cell" data-label="Decision" data-testid="activity-decision">{decision}</td>
            <td role="cell" data-label="Outcome">
                <span class="outcome" data-outcome=row.outcome.as_str() data-testid="activity-outcome">{outcome}</span>
                {duration.map(|d| view! {
                    <span class="muted">" · "<span data-testid="activity-duration">{d}</span></span>
                })}
                {row.error.clone().map(|error| view! {
                    <p class="activity-error">{error}</p>
                })}
                {row.result_review.map(|status| view! {
                    <p class="muted" data-testid="activity-result-review" data-review=status.as_str()>
                        {result_review_text(status)}
                    </p>
                })}
            </td>
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
            <td role="cell" data-label="Chat">
                // Another account's chat is theirs to open.
                {if with_account {
                    view! { <span class="muted">"Theirs"</span> }.into_any()
                } else {
                    view! {
                        <A href=chat_path(&row.chat_id) {..} data-testid="activity-chat-link">
                            "Open the chat"
                        </A>
                    }
                    .into_any()
                }}
            </td>
        </tr>
    }
}
