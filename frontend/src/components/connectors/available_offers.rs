//! "Available": the connectors the deployment offers in one click
//! (`GET /api/connectors/available`).

use countersign_api::CreateConnectorRequest;
use leptos::prelude::*;

use super::store::ConnectorStore;
use crate::api;
use crate::components::{FormError, last_error};
use crate::session::SessionState;

/// The deployment's one-click offers: "Add" creates the connector and runs
/// Test right away.
#[component]
pub(super) fn AvailableOffers(store: ConnectorStore) -> impl IntoView {
    let session = SessionState::expect();
    let offers = LocalResource::new(api::available_connectors);
    let create = Action::new_local(move |body: &CreateConnectorRequest| {
        let body = body.clone();
        let token = session.csrf_token().unwrap_or_default();
        async move {
            let created = api::create_connector(&token, &body)
                .await
                .map_err(|failure| failure.detail)?;
            let id = created.id.clone();
            store.upsert(created);
            // Its review opens once its tools are listed.
            match api::test_connector(&token, &id).await {
                Ok(tested) => store.added(tested),
                // The reason is stored as the connector's last_error.
                Err(_) => store.reload(),
            }
            Ok(())
        }
    });
    let busy = create.pending();
    let error = last_error(create);
    let add = move |name: String, url: String| {
        if !busy.get_untracked() {
            create.dispatch_local(CreateConnectorRequest {
                name,
                url,
                auth: None,
            });
        }
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
                                        // The name holds the visible word (axe's
                                        // label-content-name-mismatch).
                                        aria-label={
                                            let name = offer.name.clone();
                                            move || format!("{} {name}", if added.get() { "Added" } else { "Add" })
                                        }
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
