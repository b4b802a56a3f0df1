//! The credentials part of the add form and of "Change credentials": the
//! kind (none, bearer token, custom headers, OAuth sign-in), the token, the
//! custom header rows (at most [`MAX_HEADERS`]) and an OAuth client the
//! user was given (all optional), as a draft both forms send.

use std::collections::BTreeMap;

use countersign_api::{AuthType, Connector, ConnectorAuth};
use leptos::prelude::*;

use crate::model::oauth::scope_list;

// Most custom headers a connector may carry: the server's own limit.
use countersign_api::MAX_HEADERS;

/// One custom header row of a credentials form.
#[derive(Clone, Copy)]
struct HeaderRow {
    key: u32,
    name: RwSignal<String>,
    value: RwSignal<String>,
}

/// The credentials a form is being filled with: the kind, a bearer token,
/// custom headers, or an OAuth client (id, secret, scopes; each may stay
/// empty).
#[derive(Clone, Copy)]
pub(super) struct AuthDraft {
    kind: RwSignal<AuthType>,
    token: RwSignal<String>,
    headers: RwSignal<Vec<HeaderRow>>,
    next_key: RwSignal<u32>,
    client_id: RwSignal<String>,
    client_secret: RwSignal<String>,
    scopes: RwSignal<String>,
}

impl AuthDraft {
    pub(super) fn new() -> Self {
        Self {
            kind: RwSignal::new(AuthType::None),
            token: RwSignal::new(String::new()),
            headers: RwSignal::new(Vec::new()),
            next_key: RwSignal::new(1),
            client_id: RwSignal::new(String::new()),
            client_secret: RwSignal::new(String::new()),
            scopes: RwSignal::new(String::new()),
        }
    }

    /// Starts from what the connector has: its kind, and its header names
    /// with empty values (the values are write-only). An OAuth client's
    /// fields start empty: the server does not say what was entered.
    pub(super) fn from_connector(connector: Option<&Connector>) -> Self {
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
    pub(super) fn to_auth(self) -> ConnectorAuth {
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
            AuthType::OAuth => ConnectorAuth {
                kind: AuthType::OAuth.to_string(),
                client_id: filled(self.client_id),
                client_secret: filled(self.client_secret),
                scopes: scope_list(&self.scopes.get_untracked()),
                ..ConnectorAuth::default()
            },
            _ => ConnectorAuth {
                kind: AuthType::None.to_string(),
                ..ConnectorAuth::default()
            },
        }
    }

    pub(super) fn clear(self) {
        self.token.set(String::new());
        self.headers.set(Vec::new());
        self.client_id.set(String::new());
        self.client_secret.set(String::new());
        self.scopes.set(String::new());
        self.kind.set(AuthType::None);
    }
}

/// A text field's value as sent: trimmed, `None` when empty.
fn filled(field: RwSignal<String>) -> Option<String> {
    let value = field.get_untracked().trim().to_owned();
    (!value.is_empty()).then_some(value)
}

/// The credentials fields of a form. Element ids start with `id_prefix`
/// (unique on the page); `data-testid`s with `testid_prefix`.
#[component]
pub(super) fn AuthFields(
    draft: AuthDraft,
    id_prefix: String,
    testid_prefix: &'static str,
) -> impl IntoView {
    let select_id = format!("{id_prefix}-auth");
    let token_id = format!("{id_prefix}-token");
    let note_id = format!("{id_prefix}-secret-note");
    let token_note_id = note_id.clone();
    let oauth_fields = {
        let id_prefix = id_prefix.clone();
        move || oauth_client_fields(draft, &id_prefix, testid_prefix)
    };
    // Outside `view!`: a `>` in an attribute's expression ends the tag
    // there, and the rest of the expression is rendered as text.
    let headers_full = move || draft.headers.with(Vec::len) >= MAX_HEADERS;
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
                        disabled=headers_full
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
                <option value=AuthType::OAuth.as_str()>"OAuth (sign in)"</option>
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
        <Show when=move || draft.kind.get() == AuthType::OAuth>{oauth_fields.clone()}</Show>
        <Show when=move || draft.kind.get() != AuthType::None>
            <p id=note_id.clone() class="muted">
                {move || if draft.kind.get() == AuthType::OAuth {
                    "A client secret and the tokens from signing in are stored encrypted and never shown again."
                } else {
                    "Stored encrypted and never shown again: later you will see that a token is set, or the header names, not the values."
                }}
            </p>
        </Show>
    }
}

/// The OAuth client a user may have been given (all optional): client ID,
/// client secret (write-only) and scopes.
fn oauth_client_fields(
    draft: AuthDraft,
    id_prefix: &str,
    testid_prefix: &'static str,
) -> impl IntoView + use<> {
    let hint_id = format!("{id_prefix}-oauth-hint");
    let client_id_id = format!("{id_prefix}-client-id");
    let secret_id = format!("{id_prefix}-client-secret");
    let scopes_id = format!("{id_prefix}-scopes");
    let scopes_hint_id = format!("{id_prefix}-scopes-hint");
    view! {
        <fieldset class="connector-oauth-client" aria-describedby=hint_id.clone()
            data-testid=format!("{testid_prefix}-oauth-client")>
            <legend>"OAuth client " <span class="optional">"(optional)"</span></legend>
            <p id=hint_id.clone() class="hint">
                "Leave these empty and Countersign registers itself with the server. After adding the connector, press Sign in: you sign in on the server's own page."
            </p>
            <div class="field">
                <label for=client_id_id.clone()>"Client ID"</label>
                <input id=client_id_id data-testid=format!("{testid_prefix}-client-id") type="text"
                    autocomplete="off" spellcheck="false" bind:value=draft.client_id />
            </div>
            <div class="field">
                <label for=secret_id.clone()>"Client secret"</label>
                <input id=secret_id data-testid=format!("{testid_prefix}-client-secret") type="password"
                    autocomplete="off" spellcheck="false" bind:value=draft.client_secret />
            </div>
            <div class="field">
                <label for=scopes_id.clone()>"Scopes"</label>
                <input id=scopes_id data-testid=format!("{testid_prefix}-scopes") type="text"
                    autocomplete="off" spellcheck="false" aria-describedby=scopes_hint_id.clone()
                    bind:value=draft.scopes />
                <p id=scopes_hint_id class="hint">
                    "Separated by spaces. Empty: what the server asks for."
                </p>
            </div>
        </fieldset>
    }
}
