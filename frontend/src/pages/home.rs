//! `/`: the landing page of a signed-in user. It says what to do first
//! (issue 12 item 9): add a connector — the deployment's demo one in one
//! click, its tools kept right here — then try a phrase the offline demo
//! model understands, as a button that opens a new chat with the phrase in
//! its composer (unsent).

use countersign_api::{Connector, CreateConnectorRequest};
use leptos::prelude::*;
use leptos_router::components::A;

use countersign_api::AvailableConnector;

use crate::api;
use crate::chats::{ChatList, ListState};
use crate::components::{FormError, NewChatButton, ToolReviewList, last_error, set_page_title};
use crate::pages::{ApprovalsForYou, ApprovalsPage, chat_path};
use crate::session::SessionState;
use crate::waiting::WaitingList;

/// What the offline demo model turns into a call of the demo's read-only
/// search (`use TOOL with {JSON}`).
pub const TRY_PHRASE: &str = r#"use search_notes with {"query": "lease"}"#;

/// Where the first step stands, from the user's connectors.
#[derive(Debug, Clone, PartialEq)]
enum ConnectorStep {
    /// Not known yet.
    Loading,
    /// No connector yet.
    None,
    /// A connector whose tools are not kept yet: review them.
    Review(Box<Connector>),
    /// Some connector offers kept tools.
    Done { name: String, kept: i64 },
}

/// The first step's state: done when a connector has kept tools; else the
/// first connector to review; else none.
fn connector_step(connectors: &[Connector]) -> ConnectorStep {
    let kept = |c: &Connector| c.tool_counts.get("kept").copied().unwrap_or(0);
    if let Some(done) = connectors.iter().find(|c| kept(c) > 0) {
        return ConnectorStep::Done {
            name: done.name.clone(),
            kept: kept(done),
        };
    }
    connectors.first().map_or(ConnectorStep::None, |c| {
        ConnectorStep::Review(Box::new(c.clone()))
    })
}

/// "Waiting for you": every decision a chat waits for, soonest first,
/// each a link to its chat (nothing while nothing waits).
#[component]
fn WaitingForYou() -> impl IntoView {
    let waiting = WaitingList::expect();
    let chats = ChatList::expect();
    let items = Memo::new(move |_| waiting.all());
    move || {
        let items = items.get();
        (!items.is_empty()).then(|| view! {
            <section class="panel waiting-panel" data-testid="waiting-for-you" aria-labelledby="waiting-heading">
                <h2 id="waiting-heading">"Waiting for you"</h2>
                <ul class="waiting-items">
                    {items.into_iter().map(|item| {
                        let chat = chats
                            .title_of(&item.chat_id)
                            .filter(|t| !t.trim().is_empty())
                            .unwrap_or_else(|| "New chat".to_owned());
                        view! {
                            <li data-testid="waiting-item" data-kind=item.kind.as_str()>
                                <A href=chat_path(&item.chat_id)>
                                    {format!("{} {}", item.what, item.kind.words())}
                                </A>
                                <span class="muted">{format!(" in \u{201c}{chat}\u{201d}")}</span>
                            </li>
                        }
                    }).collect_view()}
                </ul>
            </section>
        })
    }
}

/// Welcome heading, what Countersign does, the two first steps, and
/// "Start a chat".
#[component]
pub fn HomePage() -> impl IntoView {
    // `/approvals` shares this route and chunk (`crate::lazy`).
    if leptos_router::hooks::use_location()
        .pathname
        .get_untracked()
        == "/approvals"
    {
        return view! { <ApprovalsPage /> }.into_any();
    }
    set_page_title("Home");
    let session = SessionState::expect();
    let chats = ChatList::expect();
    let name = move || session.user().map(|user| user.display_name);
    let has_chats = move || matches!(chats.state(), ListState::Loaded(list) if !list.is_empty());

    let connectors = LocalResource::new(api::list_connectors);
    let step = Memo::new(move |_| match connectors.get() {
        Some(Ok(list)) => connector_step(&list),
        // A failed load shows the way to Settings, which says why.
        Some(Err(_)) => ConnectorStep::None,
        None => ConnectorStep::Loading,
    });
    let reviewed = RwSignal::new(0_u32);

    view! {
        <div class="page home">
            <h1>"Welcome, " {name}</h1>
            <p class="lead">
                "Countersign lets an assistant use your connected tools, and runs nothing consequential without your approval."
            </p>
            <WaitingForYou />
            <ApprovalsForYou />
            <section class="panel onboarding" data-testid="onboarding" aria-labelledby="onboarding-heading">
                <h2 id="onboarding-heading">"Get started"</h2>
                <ol class="steps">
                    <li class="step" data-testid="step-connector"
                        data-done=move || matches!(step.get(), ConnectorStep::Done { .. }).to_string()>
                        <h3>"Add a connector"</h3>
                        {move || match step.get() {
                            ConnectorStep::Loading => view! { <p class="muted">"Loading…"</p> }.into_any(),
                            ConnectorStep::None => view! {
                                <p>
                                    "A connector is an MCP server that gives the assistant tools. Every call it proposes waits for your approval."
                                </p>
                                <AddDemo on_added=move || connectors.refetch() />
                            }
                            .into_any(),
                            ConnectorStep::Review(connector) => view! {
                                <p data-testid="step-connector-review">
                                    {format!(
                                        "Added {}. Now keep the tools the assistant may use — the phrase below needs Search notes.",
                                        connector.name,
                                    )}
                                </p>
                                {connector.last_error.clone().map(|error| view! {
                                    <p class="form-error" role="alert">{error}</p>
                                })}
                                <ToolReviewList
                                    connector_id=connector.id.clone()
                                    version=reviewed.read_only()
                                    on_changed=move || {
                                        reviewed.update(|v| *v += 1);
                                        connectors.refetch();
                                    }
                                />
                            }
                            .into_any(),
                            ConnectorStep::Done { name, kept } => view! {
                                <p data-testid="step-connector-done">
                                    {format!(
                                        "Done: {name} offers {kept} {} to the assistant. ",
                                        if kept == 1 { "tool" } else { "tools" },
                                    )}
                                    <A href="/settings">"Manage connectors in Settings"</A>
                                </p>
                            }
                            .into_any(),
                        }}
                    </li>
                    <li class="step" data-testid="step-try">
                        <h3>"Try it"</h3>
                        <p>
                            "The offline demo model calls a tool when you write "
                            <code>"use TOOL with {JSON}"</code>
                            ". This opens a new chat with the phrase in the composer; nothing is sent until you press Send:"
                        </p>
                        <NewChatButton
                            testid="try-phrase"
                            error_testid="try-phrase-error"
                            class="button secondary phrase"
                            label=TRY_PHRASE
                            draft=TRY_PHRASE
                        />
                    </li>
                </ol>
            </section>
            <section class="panel empty-state" data-testid="home-empty-state">
                <h2>"Start a chat"</h2>
                <p>
                    {move || {
                        if has_chats() {
                            "Pick up a conversation from the sidebar, or start a new one."
                        } else {
                            "You have no chats yet. Start one and ask anything; the offline demo model works without any setup."
                        }
                    }}
                </p>
                <NewChatButton testid="start-chat" error_testid="start-chat-error" label="Start a chat" />
            </section>
        </div>
    }
    .into_any()
}

/// "Add <the demo>": the deployment's first one-click offer, created and
/// tested; or, with no offer, the way to Settings.
#[component]
fn AddDemo(#[prop(into)] on_added: Callback<()>) -> impl IntoView {
    let session = SessionState::expect();
    let offers = LocalResource::new(api::available_connectors);
    let add = Action::new_local(move |offer: &AvailableConnector| {
        let offer = offer.clone();
        let token = session.csrf_token().unwrap_or_default();
        async move {
            let created = api::create_connector(
                &token,
                &CreateConnectorRequest {
                    name: offer.name,
                    url: offer.url,
                    auth: None,
                },
            )
            .await
            .map_err(|failure| failure.detail)?;
            // Its tools come with the test; a failure is stored as the
            // connector's last error, shown with the review.
            let _ = api::test_connector(&token, &created.id).await;
            on_added.run(());
            Ok::<(), String>(())
        }
    });
    let busy = add.pending();
    let error = last_error(add);
    move || match offers.get() {
        Some(Ok(list)) if !list.is_empty() => {
            let offer = list[0].clone();
            let label = format!("Add {}", offer.name);
            let description = offer.description.clone();
            view! {
                <p class="muted">{description}</p>
                <button
                    type="button"
                    class="button primary"
                    data-testid="onboarding-add-demo"
                    disabled=move || busy.get()
                    on:click=move |_| {
                        if !busy.get_untracked() {
                            add.dispatch_local(offer.clone());
                        }
                    }
                >
                    {move || if busy.get() { "Adding…".to_owned() } else { label.clone() }}
                </button>
                <span class="step-or">
                    " or "
                    <A href="/settings">"add your own in Settings"</A>
                </span>
                <FormError message=error testid="onboarding-add-error" />
            }
            .into_any()
        }
        Some(_) => view! {
            <p>
                <A href="/settings">"Add a connector in Settings"</A>
            </p>
        }
        .into_any(),
        None => view! { <p class="muted">"Loading…"</p> }.into_any(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use countersign_api::Connector;

    fn connector(name: &str, kept: i64) -> Connector {
        let json = serde_json::json!({
            "id": name, "name": name, "slug": name, "url": "https://h/mcp", "host": "h",
            "auth_type": "none", "token_set": false, "header_names": [],
            "trust_annotations": false, "status": "ok", "last_error": null,
            "protocol_version": null, "last_checked_at": null,
            "tool_counts": {"kept": kept, "new": 3}, "created_at": "c",
        });
        serde_json::from_value(json).expect("a connector")
    }

    #[test]
    fn the_first_step_is_done_only_when_a_connector_offers_kept_tools() {
        assert_eq!(connector_step(&[]), ConnectorStep::None);
        assert!(matches!(
            connector_step(&[connector("Demo", 0)]),
            ConnectorStep::Review(c) if c.name == "Demo"
        ));
        assert_eq!(
            connector_step(&[connector("Demo", 0), connector("Notes", 2)]),
            ConnectorStep::Done {
                name: "Notes".into(),
                kept: 2
            }
        );
    }
}
