//! A connector's tools to review (DESIGN §5, connect-time review): one row
//! per tool with a "Keep" box, its description, the server's annotations
//! *as the server's claims*, badges for new and changed tools, and for a
//! changed tool what changed since the user kept it. "Keep these tools"
//! keeps the checked ones and declines the rest. The tools come in two
//! groups by what they declare — read-only, and those that can change data
//! or reach outside (or declare nothing) — each with "Keep all" and "Keep
//! none" for its own boxes.
//!
//! A tool with an "always allow" rule carries a chip — "always allowed", or
//! "suspended: the tool changed" when the server found its descriptor moved
//! (DESIGN §5 rule 2) — with Revoke, which deletes the rule; the server's
//! reloaded list then shows what stands.

use countersign_api::{ConnectorTool, ReviewState, ReviewToolsRequest};
use leptos::html::P;
use leptos::prelude::*;

use crate::api;
use crate::components::{FormError, last_error};
use crate::model::tool_review::{
    GrantChip, annotation_claims, descriptor_changes, grant_chip, offered_line, review_request,
    risk_groups, starts_kept,
};
use crate::session::SessionState;

/// The review list of one connector, loaded again whenever `version` moves
/// (after Test, Refresh, a saved review or a revoked rule).
#[component]
pub fn ToolReviewList(
    connector_id: String,
    version: ReadSignal<u32>,
    /// Called after a review was saved or a rule revoked: the connector's
    /// counts moved, and the list should be loaded again.
    #[prop(into)]
    on_changed: Callback<()>,
) -> impl IntoView {
    // Lives here, not in the form: saving reloads the list, which rebuilds
    // the form, and the "Saved" notice must outlive that.
    let notice = RwSignal::new(None::<String>);
    let notice_line = NodeRef::<P>::new();
    // A revoked rule's Revoke button goes with the reload: the keyboard
    // lands on the line saying what happened.
    let on_revoked = Callback::new(move |tool: String| {
        notice.set(Some(format!(
            "Revoked. The next call to {tool} asks for your approval again."
        )));
        on_changed.run(());
        request_animation_frame(move || {
            if let Some(line) = notice_line.try_get_untracked().flatten() {
                let _ = line.focus();
            }
        });
    });
    let tools = {
        let connector_id = connector_id.clone();
        LocalResource::new(move || {
            version.track();
            let connector_id = connector_id.clone();
            async move { api::connector_tools(&connector_id).await }
        })
    };

    view! {
        <div class="tool-review" data-testid="tool-review">
            {move || match tools.get() {
                None => view! { <p class="muted">"Loading tools…"</p> }.into_any(),
                Some(Err(error)) => view! {
                    <p class="form-error" role="alert" data-testid="tools-load-error">{error.detail}</p>
                }
                .into_any(),
                Some(Ok(list)) if list.is_empty() => view! {
                    <p class="muted" data-testid="tools-empty">
                        "No tools listed yet. Test the connector to fetch its tools."
                    </p>
                }
                .into_any(),
                Some(Ok(list)) => view! {
                    <ReviewForm
                        connector_id=connector_id.clone()
                        tools=list
                        on_saved=on_changed
                        on_revoked=on_revoked
                        notice=notice
                    />
                }
                .into_any(),
            }}
            {move || notice.get().map(|text| view! {
                <p class="key-notice" role="status" tabindex="-1" node_ref=notice_line
                    data-testid="review-notice">{text}</p>
            })}
        </div>
    }
}

/// The rows and the save button for one loaded tool list.
#[component]
fn ReviewForm(
    connector_id: String,
    tools: Vec<ConnectorTool>,
    on_saved: Callback<()>,
    /// Called with a tool's name after its rule was revoked.
    on_revoked: Callback<String>,
    /// "Saved." after a save, shown by the list around this form.
    notice: RwSignal<Option<String>>,
) -> impl IntoView {
    let session = SessionState::expect();
    let boxes: Vec<(String, String, RwSignal<bool>)> = tools
        .iter()
        .filter(|tool| !tool.removed)
        .map(|tool| {
            (
                tool.name.clone(),
                tool.descriptor_digest.clone(),
                RwSignal::new(starts_kept(tool.review_state)),
            )
        })
        .collect();
    let boxes = StoredValue::new(boxes);
    let id_prefix = format!("tool-group-{connector_id}");
    let review = Action::new_local(move |body: &ReviewToolsRequest| {
        let body = body.clone();
        let token = session.csrf_token().unwrap_or_default();
        let connector_id = connector_id.clone();
        notice.set(None);
        async move {
            api::review_tools(&token, &connector_id, &body)
                .await
                .map_err(|failure| failure.detail)?;
            notice.set(Some(
                "Saved. Only the tools you kept are offered to the assistant.".into(),
            ));
            on_saved.run(());
            Ok(())
        }
    });
    let busy = review.pending();
    let error = last_error(review);
    let save = move |_| {
        if busy.get_untracked() {
            return;
        }
        let body =
            boxes.with_value(|boxes| {
                review_request(boxes.iter().map(|(name, digest, keep)| {
                    (name.as_str(), digest.as_str(), keep.get_untracked())
                }))
            });
        review.dispatch_local(body);
    };

    let keep_of = move |name: &str| {
        boxes.with_value(|boxes| {
            boxes
                .iter()
                .find(|(n, _, _)| n == name)
                .map(|(_, _, keep)| *keep)
        })
    };
    let groups = risk_groups(&tools)
        .into_iter()
        .map(|(group, members)| {
            let keeps: Vec<RwSignal<bool>> = members
                .iter()
                .filter_map(|&i| keep_of(&tools[i].name))
                .collect();
            let set_all = move |value: bool| {
                for keep in &keeps {
                    keep.set(value);
                }
            };
            let set_all = StoredValue::new(set_all);
            let count = members.len();
            let heading_id = format!("{id_prefix}-{}", group.key());
            let labelled_by = heading_id.clone();
            let rows = members
                .iter()
                .map(|&i| {
                    let tool = tools[i].clone();
                    let keep = keep_of(&tool.name);
                    view! { <ToolRow tool=tool keep=keep on_revoked=on_revoked /> }
                })
                .collect_view();
            view! {
                <section class="tool-group" data-testid="tool-group" data-group=group.key()
                    aria-labelledby=labelled_by>
                    <div class="tool-group-head">
                        <h4 id=heading_id>{format!("{} ({count})", group.heading())}</h4>
                        <div class="tool-group-actions">
                            <button type="button" class="button secondary small"
                                data-testid="tool-group-keep-all"
                                on:click=move |_| set_all.with_value(|f| f(true))>
                                "Keep all"
                                <span class="visually-hidden">{format!(" {}", group.heading().to_lowercase())}</span>
                            </button>
                            <button type="button" class="button secondary small"
                                data-testid="tool-group-keep-none"
                                on:click=move |_| set_all.with_value(|f| f(false))>
                                "Keep none"
                                <span class="visually-hidden">{format!(" of the {}", group.heading().to_lowercase())}</span>
                            </button>
                        </div>
                    </div>
                    <p class="muted tool-group-note">{group.note()}</p>
                    <ul class="tool-list">{rows}</ul>
                </section>
            }
        })
        .collect_view();

    let offered = offered_line(&tools);
    view! {
        <p class="review-offered" data-testid="review-offered">{offered}</p>
        <p class="muted">
            "Keep the tools the assistant may use. Annotations are what the server says about its own tools; Countersign does not verify them."
        </p>
        {groups}
        // In sight at the end of a long list: it sticks to the bottom of
        // the page while the list scrolls past.
        <div class="review-save-bar">
            <FormError message=error testid="review-error" />
            <button type="button" class="button primary" data-testid="review-save"
                disabled=move || busy.get() on:click=save>
                {move || if busy.get() { "Saving…" } else { "Keep these tools" }}
            </button>
        </div>
    }
}

/// One tool. `keep` is `None` for a tool the server no longer lists.
#[component]
fn ToolRow(
    tool: ConnectorTool,
    keep: Option<RwSignal<bool>>,
    on_revoked: Callback<String>,
) -> impl IntoView {
    // Names come from the server: keep element ids to a safe alphabet.
    let slug: String = tool
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let keep_id = format!(
        "tool-keep-{}-{slug}",
        tool.descriptor_digest.get(..8).unwrap_or("")
    );
    let description_id = format!("{keep_id}-description");
    let claims = annotation_claims(tool.annotations.as_ref());
    let changes = if tool.review_state == ReviewState::Changed {
        descriptor_changes(&tool)
    } else {
        Vec::new()
    };
    let is_new = tool.review_state == ReviewState::New && !tool.removed;
    let is_changed = tool.review_state == ReviewState::Changed && !tool.removed;
    let shown_title = tool.title.clone().filter(|t| !t.trim().is_empty());
    let rule = grant_chip(&tool).map(
        |chip| view! { <RuleChip chip=chip tool_name=tool.name.clone() on_revoked=on_revoked /> },
    );

    let control = match keep {
        Some(keep) => view! {
            <input type="checkbox" id=keep_id.clone() data-testid="tool-keep"
                aria-describedby=description_id.clone() bind:checked=keep />
            <label for=keep_id.clone()>
                "Keep"
                <span class="visually-hidden">{format!(" {}", tool.name)}</span>
            </label>
        }
        .into_any(),
        None => view! {
            <span class="tool-removed" data-testid="tool-removed">"No longer offered"</span>
        }
        .into_any(),
    };

    view! {
        <li class="tool-row" data-testid="tool-row" data-tool-name=tool.name.clone()
            data-review-state=tool.review_state.as_str() data-removed=tool.removed.to_string()>
            <div class="tool-row-head">
                <span class="tool-keep">{control}</span>
                <span class="tool-name">
                    {shown_title.map(|title| view! { <strong>{title}</strong> " " })}
                    <code>{tool.name.clone()}</code>
                </span>
                {is_new.then(|| view! { <span class="badge badge-new" data-testid="tool-badge-new">"new"</span> })}
                {is_changed.then(|| view! { <span class="badge badge-changed" data-testid="tool-badge-changed">"changed"</span> })}
            </div>
            <p id=description_id class="tool-description">
                {tool.description.clone().unwrap_or_else(|| "No description.".into())}
            </p>
            <p class="annotation-claims" data-testid="annotation-claims">{claims}</p>
            {rule}
            {(!changes.is_empty()).then(|| view! {
                <details class="what-changed" data-testid="tool-what-changed">
                    <summary>"What changed"</summary>
                    {changes
                        .into_iter()
                        .map(|change| view! {
                            <div class="change">
                                <h4>{change.label}</h4>
                                <div class="change-sides">
                                    <div class="change-side">
                                        <p class="change-caption">"When you kept it"</p>
                                        <pre data-testid="what-changed-before">{change.before}</pre>
                                    </div>
                                    <div class="change-side">
                                        <p class="change-caption">"Now"</p>
                                        <pre data-testid="what-changed-after">{change.after}</pre>
                                    </div>
                                </div>
                            </div>
                        })
                        .collect_view()}
                </details>
            })}
        </li>
    }
}

/// "always allowed · Revoke" (or suspended): the user's standing rule for
/// one tool. Revoke deletes it; a 404 means it is gone already, which is
/// what the user wanted, so the list is reloaded either way.
#[component]
fn RuleChip(chip: GrantChip, tool_name: String, on_revoked: Callback<String>) -> impl IntoView {
    let session = SessionState::expect();
    let label = format!("Revoke the always-allow rule for {tool_name}");
    let revoke = Action::new_local(move |(): &()| {
        let token = session.csrf_token().unwrap_or_default();
        let grant_id = chip.grant_id.clone();
        let tool_name = tool_name.clone();
        async move {
            match api::revoke_grant(&token, &grant_id).await {
                Ok(()) => on_revoked.run(tool_name),
                Err(failure) if failure.status == Some(404) => on_revoked.run(tool_name),
                Err(failure) => return Err(failure.detail),
            }
            Ok(())
        }
    });
    let busy = revoke.pending();
    let error = last_error(revoke);
    let on_revoke = move |_| {
        if !busy.get_untracked() {
            revoke.dispatch_local(());
        }
    };
    view! {
        <p
            class="grant-chip"
            class:suspended=chip.suspended
            data-testid="tool-grant"
            data-suspended=chip.suspended.to_string()
        >
            <span data-testid="tool-grant-text">{chip.text}</span>
            <span aria-hidden="true">" · "</span>
            <button
                type="button"
                class="grant-revoke"
                data-testid="tool-grant-revoke"
                aria-label=label
                disabled=move || busy.get()
                on:click=on_revoke
            >
                {move || if busy.get() { "Revoking…" } else { "Revoke" }}
            </button>
        </p>
        <FormError message=error testid="tool-grant-error" />
    }
}
