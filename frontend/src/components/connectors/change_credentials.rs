//! "Change credentials" of one connector: the form that replaces them.

use countersign_api::Connector;
use leptos::ev::SubmitEvent;
use leptos::prelude::*;
use leptos::task::spawn_local;

use super::auth_fields::{AuthDraft, AuthFields};
use super::store::ConnectorStore;
use crate::api;
use crate::components::{FormError, StepUp};
use crate::session::SessionState;

/// "Change credentials" of one connector: replaces them entirely (the old
/// ones are never shown). With two-factor sign-in on, this may ask for a
/// code first ([`StepUp`]).
#[component]
pub(super) fn ChangeCredentials(
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
