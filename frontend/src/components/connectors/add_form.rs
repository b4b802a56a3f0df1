//! "Add a connector": name, server URL and credentials.

use countersign_api::{AuthType, CreateConnectorRequest};
use leptos::prelude::*;

use super::auth_fields::{AuthDraft, AuthFields};
use super::store::ConnectorStore;
use crate::api;
use crate::components::{FormError, last_error, last_notice, submit_handler};
use crate::session::SessionState;

/// "Add a connector": name, URL and credentials.
#[component]
pub(super) fn AddConnectorForm(store: ConnectorStore) -> impl IntoView {
    let session = SessionState::expect();
    let name = RwSignal::new(String::new());
    let url = RwSignal::new(String::new());
    let auth = AuthDraft::new();
    let add = Action::new_local(move |body: &CreateConnectorRequest| {
        let body = body.clone();
        let csrf = session.csrf_token().unwrap_or_default();
        async move {
            let created = api::create_connector(&csrf, &body)
                .await
                .map_err(|failure| failure.detail)?;
            let notice = if created.auth_type == AuthType::OAuth {
                format!(
                    "Added “{}”. Sign in to it, then review its tools.",
                    created.name
                )
            } else {
                format!("Added “{}”. Test it, then review its tools.", created.name)
            };
            store.added(created);
            name.set(String::new());
            url.set(String::new());
            auth.clear();
            Ok(notice)
        }
    });
    let busy = add.pending();
    let error = last_error(add);
    let notice = last_notice(add);
    let submit = submit_handler(add, move || {
        Some(CreateConnectorRequest {
            name: name.get_untracked().trim().to_owned(),
            url: url.get_untracked().trim().to_owned(),
            auth: Some(auth.to_auth()),
        })
    });

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
