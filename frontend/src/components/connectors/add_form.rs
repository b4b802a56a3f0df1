//! "Add a connector": name, server URL and credentials.

use countersign_api::CreateConnectorRequest;
use leptos::ev::SubmitEvent;
use leptos::prelude::*;
use leptos::task::spawn_local;

use super::auth_fields::{AuthDraft, AuthFields};
use super::store::ConnectorStore;
use crate::api;
use crate::components::FormError;
use crate::session::SessionState;

/// "Add a connector": name, URL and credentials.
#[component]
pub(super) fn AddConnectorForm(store: ConnectorStore) -> impl IntoView {
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
