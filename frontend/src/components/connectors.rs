//! Settings → "Connectors": the user's MCP servers, adding one (by hand or
//! from the deployment's offers), testing and refreshing it, deleting it, and
//! opening its tool review ([`ToolReviewList`], where "always allow" rules
//! are revoked), how many standing rules it has, and the per-connector
//! "Trust this server's safety annotations" switch (off by default; turning
//! it on asks first, turning it off does not).
//!
//! Credentials are write-only (DESIGN §3): the server answers "token set"
//! and header *names*, never values, and so does this section; "Change
//! credentials" replaces them. Turning trust on and changing credentials may
//! ask for a two-factor code first ([`StepUp`]). Refusals
//! (a private address, a bad URL, a taken name) are the server's words,
//! shown inline. Nothing here judges a server or its tools.

use std::collections::BTreeMap;

use countersign_api::{
    AuthType, Connector, ConnectorAuth, ConnectorStatus, CreateConnectorRequest,
};
use leptos::ev::SubmitEvent;
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api::{self, ApiError};
use crate::components::{FormError, StepUp, ToolReviewList};
use crate::session::SessionState;
use crate::tool_review::{counts_summary, grant_count_text, not_offered_line};

// Most custom headers a connector may carry: the server's own limit.
use countersign_api::MAX_HEADERS;

/// The connectors as last loaded, shared by the list, the add form and the
/// one-click offers; every change the server answers is written back here.
#[derive(Clone, Copy)]
struct ConnectorStore {
    list: RwSignal<Option<Result<Vec<Connector>, ApiError>>>,
}

impl ConnectorStore {
    fn new() -> Self {
        let store = Self {
            list: RwSignal::new(None),
        };
        store.reload();
        store
    }

    fn reload(self) {
        spawn_local(async move {
            let result = api::list_connectors().await;
            self.list.set(Some(result));
        });
    }

    /// Replaces the connector with the same id, or appends it.
    fn upsert(self, connector: Connector) {
        self.list.update(|list| {
            if let Some(Ok(items)) = list {
                match items.iter_mut().find(|c| c.id == connector.id) {
                    Some(slot) => *slot = connector,
                    None => items.push(connector),
                }
            }
        });
    }

    fn remove(self, id: &str) {
        self.list.update(|list| {
            if let Some(Ok(items)) = list {
                items.retain(|c| c.id != id);
            }
        });
    }

    fn get(self, id: &str) -> Option<Connector> {
        self.list.with(|list| match list {
            Some(Ok(items)) => items.iter().find(|c| c.id == id).cloned(),
            _ => None,
        })
    }

    fn ids(self) -> Vec<String> {
        self.list.with(|list| match list {
            Some(Ok(items)) => items.iter().map(|c| c.id.clone()).collect(),
            _ => Vec::new(),
        })
    }

    fn has_url(self, url: &str) -> bool {
        self.list.with(|list| match list {
            Some(Ok(items)) => items.iter().any(|c| c.url == url),
            _ => false,
        })
    }
}

/// The whole section.
#[component]
pub fn ConnectorsSection() -> impl IntoView {
    let store = ConnectorStore::new();

    let list_view = move || match store.list.with(|l| {
        l.as_ref()
            .map(|r| r.as_ref().map(Vec::len).map_err(Clone::clone))
    }) {
        None => view! { <p class="muted">"Loading…"</p> }.into_any(),
        Some(Err(error)) => view! {
            <p class="form-error" role="alert" data-testid="connectors-load-error">
                {error.detail}
            </p>
        }
        .into_any(),
        Some(Ok(0)) => {
            view! { <p class="muted" data-testid="connectors-empty">"No connectors yet."</p> }
                .into_any()
        }
        Some(Ok(_)) => ().into_any(),
    };

    view! {
        <section class="panel" aria-labelledby="connectors-heading" data-testid="connectors-section">
            <h2 id="connectors-heading">"Connectors"</h2>
            <p>
                "The MCP servers whose tools the assistant may use. After adding one, review its tools: only the tools you keep are offered to the assistant, and each call still asks you unless you decide otherwise."
            </p>
            {list_view}
            <ul class="connector-list">
                <For each=move || store.ids() key=|id| id.clone() let:id>
                    <ConnectorRow id=id store=store />
                </For>
            </ul>
            <AvailableOffers store=store />
            <AddConnectorForm store=store />
        </section>
    }
}

/// One connector: what the server last answered about it, and its actions.
#[component]
fn ConnectorRow(id: String, store: ConnectorStore) -> impl IntoView {
    let session = SessionState::expect();
    let connector = {
        let id = id.clone();
        Memo::new(move |_| store.get(&id))
    };
    let field = move |f: fn(&Connector) -> String| {
        move || connector.with(|c| c.as_ref().map(f).unwrap_or_default())
    };

    let busy = RwSignal::new(None::<&'static str>);
    let error = RwSignal::new(None::<String>);
    let review_open = RwSignal::new(false);
    let tools_version = RwSignal::new(0_u32);
    let confirming = RwSignal::new(false);
    let editing = RwSignal::new(false);
    let credentials_notice = RwSignal::new(None::<String>);
    let credentials_id = id.clone();
    let edit_button = NodeRef::<leptos::html::Button>::new();
    // Closing the form puts the keyboard back on its button.
    let close_credentials = move |notice: Option<String>| {
        credentials_notice.set(notice);
        editing.set(false);
        request_animation_frame(move || {
            if let Some(button) = edit_button.get_untracked() {
                let _ = button.focus();
            }
        });
    };

    let check = {
        let id = id.clone();
        move |refresh: bool| {
            if busy.get_untracked().is_some() {
                return;
            }
            let token = session.csrf_token().unwrap_or_default();
            let id = id.clone();
            busy.set(Some(if refresh { "refresh" } else { "test" }));
            error.set(None);
            spawn_local(async move {
                let result = if refresh {
                    api::refresh_connector(&token, &id).await
                } else {
                    api::test_connector(&token, &id).await
                };
                busy.set(None);
                match result {
                    Ok(updated) => store.upsert(updated),
                    Err(failure) => {
                        // 502 and 422 are stored as the connector's
                        // `last_error`, which the reload brings in.
                        if !matches!(failure.status, Some(422 | 502)) {
                            error.set(Some(failure.detail));
                        }
                        store.reload();
                    }
                }
                tools_version.update(|v| *v += 1);
            });
        }
    };
    let test = {
        let check = check.clone();
        move |_| check(false)
    };
    let refresh = move |_| check(true);

    let delete = {
        let id = id.clone();
        move |_| {
            if busy.get_untracked().is_some() {
                return;
            }
            let token = session.csrf_token().unwrap_or_default();
            let id = id.clone();
            busy.set(Some("delete"));
            error.set(None);
            spawn_local(async move {
                let result = api::delete_connector(&token, &id).await;
                busy.set(None);
                match result {
                    Ok(()) => store.remove(&id),
                    Err(failure) => {
                        confirming.set(false);
                        error.set(Some(failure.detail));
                    }
                }
            });
        }
    };

    let status = move || connector.with(|c| c.as_ref().map(|c| c.status));
    let status_text = move || match status() {
        Some(ConnectorStatus::Ok) => "OK",
        Some(ConnectorStatus::Error) => "Error",
        _ => "Not tested yet",
    };
    let last_error = move || {
        connector.with(|c| {
            c.as_ref()
                .filter(|c| c.status == ConnectorStatus::Error)
                .and_then(|c| c.last_error.clone())
        })
    };
    let auth_text = move || {
        connector.with(|c| match c {
            Some(c) if c.auth_type == AuthType::Bearer && c.token_set => {
                "Bearer token set".to_owned()
            }
            Some(c) if c.auth_type == AuthType::Bearer => "Bearer token not set".to_owned(),
            Some(c) if c.auth_type == AuthType::Headers => {
                format!("Custom headers: {}", c.header_names.join(", "))
            }
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
        <li class="connector-row" data-testid="connector-row" data-connector-name=name aria-labelledby=heading_id.clone()>
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
                        <dd data-testid="connector-grant-count">{text}</dd>
                    </div>
                })}
            </dl>
            {move || last_error().map(|text| view! {
                <p class="connector-last-error" data-testid="connector-last-error">
                    {text}
                </p>
            })}
            {move || not_offered().into_iter().map(|line| view! {
                <p class="connector-not-offered" data-testid="connector-not-offered">{line}</p>
            }).collect_view()}
            <div class="connector-actions">
                <button type="button" class="button secondary small" data-testid="connector-test"
                    disabled=move || busy.get().is_some() on:click=test>
                    {move || if busy.get() == Some("test") { "Testing…" } else { "Test" }}
                </button>
                <button type="button" class="button secondary small" data-testid="connector-refresh"
                    disabled=move || busy.get().is_some() on:click=refresh>
                    {move || if busy.get() == Some("refresh") { "Refreshing…" } else { "Refresh" }}
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
                    disabled=move || busy.get().is_some() || confirming.get()
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
            <FormError message=error testid="connector-error" />
            <Show when=move || confirming.get()>
                <div class="confirm" role="alertdialog" aria-labelledby=question_id.clone() data-testid="connector-delete-dialog">
                    <p id=question_id.clone() class="confirm-question">
                        {move || format!("Delete the connector “{}”?", name())}
                    </p>
                    <p class="muted">"Its tools and every “always allow” you gave them are deleted with it."</p>
                    <div class="confirm-buttons">
                        <button type="button" class="button danger" data-testid="connector-delete-confirm"
                            disabled=move || busy.get().is_some() on:click=delete.clone()>
                            {move || if busy.get() == Some("delete") { "Deleting…" } else { "Delete connector" }}
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

/// "Trust this server's safety annotations" (DESIGN §5 rule 3): a switch
/// showing what the server stored. Turning it on first says what it means —
/// the server writes its own annotations — and asks again; turning it off
/// (the safe direction) happens at once.
#[component]
fn TrustToggle(
    id: String,
    connector: Memo<Option<Connector>>,
    store: ConnectorStore,
) -> impl IntoView {
    let session = SessionState::expect();
    let step_up = StepUp::expect();
    let trusted =
        Memo::new(move |_| connector.with(|c| c.as_ref().is_some_and(|c| c.trust_annotations)));
    let busy = RwSignal::new(false);
    let asking = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let keep_asking = NodeRef::<leptos::html::Button>::new();
    let switch = NodeRef::<leptos::html::Button>::new();
    // Closing the question puts the keyboard back on the switch.
    let close_question = move || {
        asking.set(false);
        request_animation_frame(move || {
            if let Some(button) = switch.get_untracked() {
                let _ = button.focus();
            }
        });
    };

    let save = {
        let id = id.clone();
        move |trust: bool| {
            if busy.get_untracked() {
                return;
            }
            let token = session.csrf_token().unwrap_or_default();
            let id = id.clone();
            busy.set(true);
            error.set(None);
            spawn_local(async move {
                // Turning trust on may need a two-factor step-up first.
                let result = step_up
                    .run(|| api::set_trust_annotations(&token, &id, trust))
                    .await;
                busy.set(false);
                match result {
                    Ok(updated) => {
                        store.upsert(updated);
                        if asking.get_untracked() {
                            close_question();
                        }
                    }
                    Err(failure) => error.set(Some(failure.detail)),
                }
            });
        }
    };
    let on_switch = {
        let save = save.clone();
        move |_| {
            if busy.get_untracked() {
                return;
            }
            if trusted.get_untracked() {
                save(false);
            } else {
                asking.set(true);
                // The safe answer is where the keyboard lands.
                request_animation_frame(move || {
                    if let Some(button) = keep_asking.get_untracked() {
                        let _ = button.focus();
                    }
                });
            }
        }
    };
    let confirm = {
        let save = save.clone();
        move |_| save(true)
    };

    let label_id = format!("connector-{id}-trust-label");
    let note_id = format!("connector-{id}-trust-note");
    let question_id = format!("connector-{id}-trust-question");
    let warning_id = format!("connector-{id}-trust-warning");
    let name = move || connector.with(|c| c.as_ref().map(|c| c.name.clone()).unwrap_or_default());

    view! {
        <div class="trust" data-testid="connector-trust">
            <div class="trust-row">
                <button
                    type="button"
                    class="switch"
                    role="switch"
                    data-testid="connector-trust-toggle"
                    node_ref=switch
                    aria-checked=move || trusted.get().to_string()
                    aria-labelledby=label_id.clone()
                    aria-describedby=note_id.clone()
                    disabled=move || busy.get() || asking.get()
                    on:click=on_switch
                >
                    <span class="switch-knob" aria-hidden="true"></span>
                </button>
                <span id=label_id class="trust-label">
                    "Trust this server's safety annotations"
                </span>
            </div>
            <p id=note_id class="muted trust-note" data-testid="connector-trust-note">
                {move || if trusted.get() {
                    "On: tools this server declares read-only and closed-world run without asking you. Every other call still asks."
                } else {
                    "Off (recommended): every tool call asks for your approval."
                }}
            </p>
            <Show when=move || asking.get()>
                <div
                    class="confirm"
                    role="alertdialog"
                    aria-labelledby=question_id.clone()
                    aria-describedby=warning_id.clone()
                    data-testid="connector-trust-dialog"
                >
                    <p id=question_id.clone() class="confirm-question">
                        {move || format!("Trust the safety annotations of “{}”?", name())}
                    </p>
                    <p id=warning_id.clone() data-testid="connector-trust-warning">
                        "The server writes its own annotations and Countersign cannot check them. Only tools it declares read-only and closed-world would run without asking you; every other call still asks. You can turn this off at any time."
                    </p>
                    <div class="confirm-buttons">
                        <button type="button" class="button danger" data-testid="connector-trust-confirm"
                            disabled=move || busy.get() on:click=confirm.clone()>
                            {move || if busy.get() { "Saving…" } else { "Trust its annotations" }}
                        </button>
                        <button type="button" class="button secondary" data-testid="connector-trust-cancel"
                            node_ref=keep_asking on:click=move |_| close_question()>
                            "Keep asking"
                        </button>
                    </div>
                </div>
            </Show>
            <FormError message=error testid="connector-trust-error" />
        </div>
    }
}

/// The deployment's one-click offers: "Add" creates the connector and runs
/// Test right away.
#[component]
fn AvailableOffers(store: ConnectorStore) -> impl IntoView {
    let session = SessionState::expect();
    let offers = LocalResource::new(api::available_connectors);
    let busy = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);

    let add = move |name: String, url: String| {
        if busy.get_untracked() {
            return;
        }
        let token = session.csrf_token().unwrap_or_default();
        busy.set(true);
        error.set(None);
        spawn_local(async move {
            let body = CreateConnectorRequest {
                name,
                url,
                auth: None,
            };
            match api::create_connector(&token, &body).await {
                Ok(created) => {
                    let id = created.id.clone();
                    store.upsert(created);
                    match api::test_connector(&token, &id).await {
                        Ok(tested) => store.upsert(tested),
                        // The reason is stored as the connector's last_error.
                        Err(_) => store.reload(),
                    }
                }
                Err(failure) => error.set(Some(failure.detail)),
            }
            busy.set(false);
        });
    };

    move || {
        match offers.get() {
        Some(Ok(list)) if !list.is_empty() => view! {
            <div class="available" data-testid="available-connectors">
                <h3>"Available"</h3>
                <ul class="available-list">
                    {list
                        .into_iter()
                        .map(|offer| {
                            let url = offer.url.clone();
                            let added = Memo::new(move |_| store.has_url(&url));
                            let (name, url) = (offer.name.clone(), offer.url.clone());
                            view! {
                                <li class="available-offer">
                                    <div>
                                        <p class="available-name">{offer.name.clone()}</p>
                                        <p class="muted">{offer.description.clone()}</p>
                                        <code class="available-url">{offer.url.clone()}</code>
                                    </div>
                                    <button type="button" class="button primary small" data-testid="available-add"
                                        aria-label=format!("Add {}", offer.name)
                                        disabled=move || busy.get() || added.get()
                                        on:click=move |_| add(name.clone(), url.clone())>
                                        {move || if added.get() { "Added" } else { "Add" }}
                                    </button>
                                </li>
                            }
                        })
                        .collect_view()}
                </ul>
                <FormError message=error testid="available-error" />
            </div>
        }
        .into_any(),
        _ => ().into_any(),
    }
    }
}

/// One custom header row of a credentials form.
#[derive(Clone, Copy)]
struct HeaderRow {
    key: u32,
    name: RwSignal<String>,
    value: RwSignal<String>,
}

/// The credentials a form is being filled with: the kind, a bearer token,
/// or custom headers.
#[derive(Clone, Copy)]
struct AuthDraft {
    kind: RwSignal<AuthType>,
    token: RwSignal<String>,
    headers: RwSignal<Vec<HeaderRow>>,
    next_key: RwSignal<u32>,
}

impl AuthDraft {
    fn new() -> Self {
        Self {
            kind: RwSignal::new(AuthType::None),
            token: RwSignal::new(String::new()),
            headers: RwSignal::new(Vec::new()),
            next_key: RwSignal::new(1),
        }
    }

    /// Starts from what the connector has: its kind, and its header names
    /// with empty values (the values are write-only).
    fn from_connector(connector: Option<&Connector>) -> Self {
        let draft = Self::new();
        if let Some(connector) = connector {
            draft.kind.set(connector.auth_type);
            let rows = connector
                .header_names
                .iter()
                .map(|name| {
                    let row = draft.new_row();
                    row.name.set(name.clone());
                    row
                })
                .collect();
            draft.headers.set(rows);
        }
        draft
    }

    fn new_row(self) -> HeaderRow {
        let key = self.next_key.get_untracked();
        self.next_key.set(key + 1);
        HeaderRow {
            key,
            name: RwSignal::new(String::new()),
            value: RwSignal::new(String::new()),
        }
    }

    /// What to send, as filled in now.
    fn to_auth(self) -> ConnectorAuth {
        match self.kind.get_untracked() {
            AuthType::Bearer => ConnectorAuth {
                kind: AuthType::Bearer.to_string(),
                token: Some(self.token.get_untracked()),
                ..ConnectorAuth::default()
            },
            AuthType::Headers => {
                let map: BTreeMap<String, String> = self
                    .headers
                    .get_untracked()
                    .iter()
                    .filter(|row| !row.name.get_untracked().trim().is_empty())
                    .map(|row| {
                        (
                            row.name.get_untracked().trim().to_owned(),
                            row.value.get_untracked(),
                        )
                    })
                    .collect();
                ConnectorAuth {
                    kind: AuthType::Headers.to_string(),
                    headers: Some(map),
                    ..ConnectorAuth::default()
                }
            }
            _ => ConnectorAuth {
                kind: AuthType::None.to_string(),
                ..ConnectorAuth::default()
            },
        }
    }

    fn clear(self) {
        self.token.set(String::new());
        self.headers.set(Vec::new());
        self.kind.set(AuthType::None);
    }
}

/// The credentials fields of a form. Element ids start with `id_prefix`
/// (unique on the page); `data-testid`s with `testid_prefix`.
#[component]
fn AuthFields(draft: AuthDraft, id_prefix: String, testid_prefix: &'static str) -> impl IntoView {
    let select_id = format!("{id_prefix}-auth");
    let token_id = format!("{id_prefix}-token");
    let note_id = format!("{id_prefix}-secret-note");
    let token_note_id = note_id.clone();
    let header_rows = {
        let id_prefix = id_prefix.clone();
        move || {
            let id_prefix = id_prefix.clone();
            view! {
                <fieldset class="connector-headers">
                    <legend>"Custom headers (at most 20)"</legend>
                    <For each=move || draft.headers.get() key=|row| row.key let:row>
                        {
                            let name_id = format!("{id_prefix}-header-name-{}", row.key);
                            let value_id = format!("{id_prefix}-header-value-{}", row.key);
                            view! {
                                <div class="header-row" data-testid="connector-header-row">
                                    <label for=name_id.clone()>"Header name"</label>
                                    <input id=name_id type="text" autocomplete="off" spellcheck="false"
                                        data-testid="connector-header-name" bind:value=row.name />
                                    <label for=value_id.clone()>"Value"</label>
                                    <input id=value_id type="password" autocomplete="off"
                                        data-testid="connector-header-value" bind:value=row.value />
                                    <button type="button" class="button secondary small" data-testid="connector-header-remove"
                                        aria-label=move || {
                                            let n = row.name.get();
                                            if n.trim().is_empty() { "Remove this header".to_owned() } else { format!("Remove header {n}") }
                                        }
                                        on:click=move |_| draft.headers.update(|rows| rows.retain(|r| r.key != row.key))>
                                        "Remove"
                                    </button>
                                </div>
                            }
                        }
                    </For>
                    <button type="button" class="button secondary small" data-testid="connector-header-add"
                        disabled=move || draft.headers.with(Vec::len) >= MAX_HEADERS
                        on:click=move |_| {
                            if draft.headers.with_untracked(Vec::len) < MAX_HEADERS {
                                let row = draft.new_row();
                                draft.headers.update(|rows| rows.push(row));
                            }
                        }>
                        "Add header"
                    </button>
                </fieldset>
            }
        }
    };

    view! {
        <div class="field">
            <label for=select_id.clone()>"Authentication"</label>
            <select id=select_id data-testid=format!("{testid_prefix}-auth")
                prop:value=move || draft.kind.get().as_str()
                on:change=move |ev| {
                    let kind = AuthType::from_wire(&event_target_value(&ev));
                    if kind == AuthType::Headers && draft.headers.with_untracked(Vec::is_empty) {
                        let row = draft.new_row();
                        draft.headers.set(vec![row]);
                    }
                    draft.kind.set(kind);
                }>
                <option value=AuthType::None.as_str()>"None"</option>
                <option value=AuthType::Bearer.as_str()>"Bearer token"</option>
                <option value=AuthType::Headers.as_str()>"Custom headers"</option>
            </select>
        </div>
        <Show when=move || draft.kind.get() == AuthType::Bearer>
            <div class="field">
                <label for=token_id.clone()>"Bearer token"</label>
                <input id=token_id.clone() data-testid=format!("{testid_prefix}-token") type="password"
                    autocomplete="off" spellcheck="false" aria-describedby=token_note_id.clone()
                    bind:value=draft.token />
            </div>
        </Show>
        <Show when=move || draft.kind.get() == AuthType::Headers>{header_rows.clone()}</Show>
        <Show when=move || draft.kind.get() != AuthType::None>
            <p id=note_id.clone() class="muted">
                "Stored encrypted and never shown again: later you will see that a token is set, or the header names, not the values."
            </p>
        </Show>
    }
}

/// "Add a connector": name, URL and credentials.
#[component]
fn AddConnectorForm(store: ConnectorStore) -> impl IntoView {
    let session = SessionState::expect();
    let name = RwSignal::new(String::new());
    let url = RwSignal::new(String::new());
    let auth = AuthDraft::new();
    let busy = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let notice = RwSignal::new(None::<String>);

    let submit = move |event: SubmitEvent| {
        event.prevent_default();
        if busy.get_untracked() {
            return;
        }
        let body = CreateConnectorRequest {
            name: name.get_untracked().trim().to_owned(),
            url: url.get_untracked().trim().to_owned(),
            auth: Some(auth.to_auth()),
        };
        let csrf = session.csrf_token().unwrap_or_default();
        busy.set(true);
        error.set(None);
        notice.set(None);
        spawn_local(async move {
            let result = api::create_connector(&csrf, &body).await;
            busy.set(false);
            match result {
                Ok(created) => {
                    notice.set(Some(format!(
                        "Added “{}”. Test it, then review its tools.",
                        created.name
                    )));
                    store.upsert(created);
                    name.set(String::new());
                    url.set(String::new());
                    auth.clear();
                }
                Err(failure) => error.set(Some(failure.detail)),
            }
        });
    };

    view! {
        <form class="connector-add" on:submit=submit aria-labelledby="connector-add-heading">
            <h3 id="connector-add-heading">"Add a connector"</h3>
            <div class="field">
                <label for="connector-add-name">"Name"</label>
                <input id="connector-add-name" data-testid="connector-add-name" type="text"
                    autocomplete="off" required bind:value=name />
            </div>
            <div class="field">
                <label for="connector-add-url">"Server URL"</label>
                <input id="connector-add-url" data-testid="connector-add-url" type="url"
                    placeholder="https://example.com/mcp" autocomplete="off" spellcheck="false"
                    required bind:value=url />
            </div>
            <AuthFields draft=auth id_prefix="connector-add".to_owned() testid_prefix="connector-add" />
            <FormError message=error testid="connector-add-error" />
            {move || notice.get().map(|text| view! {
                <p class="key-notice" role="status" data-testid="connector-add-notice">{text}</p>
            })}
            <button type="submit" class="button primary" data-testid="connector-add-submit"
                disabled=move || busy.get()>
                {move || if busy.get() { "Adding…" } else { "Add connector" }}
            </button>
        </form>
    }
}

/// "Change credentials" of one connector: replaces them entirely (the old
/// ones are never shown). With two-factor sign-in on, this may ask for a
/// code first ([`StepUp`]).
#[component]
fn ChangeCredentials(
    id: String,
    connector: Memo<Option<Connector>>,
    store: ConnectorStore,
    /// Called with a notice after saving, or `None` on Cancel.
    #[prop(into)]
    on_close: Callback<Option<String>>,
) -> impl IntoView {
    let session = SessionState::expect();
    let step_up = StepUp::expect();
    let auth = connector.with_untracked(|c| AuthDraft::from_connector(c.as_ref()));
    let busy = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let heading_id = format!("connector-{id}-credentials-heading");

    let submit = {
        let id = id.clone();
        move |event: SubmitEvent| {
            event.prevent_default();
            if busy.get_untracked() {
                return;
            }
            let body = auth.to_auth();
            let csrf = session.csrf_token().unwrap_or_default();
            let id = id.clone();
            busy.set(true);
            error.set(None);
            spawn_local(async move {
                let result = step_up
                    .run(|| api::set_connector_auth(&csrf, &id, &body))
                    .await;
                busy.try_set(false);
                match result {
                    Ok(updated) => {
                        store.upsert(updated);
                        on_close.run(Some(
                            "Credentials saved. Test the connector to check them.".into(),
                        ));
                    }
                    Err(failure) => {
                        error.try_set(Some(failure.detail));
                    }
                }
            });
        }
    };

    view! {
        <form class="connector-credentials" on:submit=submit aria-labelledby=heading_id.clone()
            data-testid="connector-credentials-form">
            <h4 id=heading_id.clone()>"Change credentials"</h4>
            <AuthFields draft=auth id_prefix=format!("connector-{id}-credentials") testid_prefix="connector-credentials" />
            <FormError message=error testid="connector-credentials-error" />
            <div class="confirm-buttons">
                <button type="submit" class="button primary small" data-testid="connector-credentials-save"
                    disabled=move || busy.get()>
                    {move || if busy.get() { "Saving…" } else { "Save credentials" }}
                </button>
                <button type="button" class="button secondary small" data-testid="connector-credentials-cancel"
                    on:click=move |_| on_close.run(None)>
                    "Cancel"
                </button>
            </div>
        </form>
    }
}
