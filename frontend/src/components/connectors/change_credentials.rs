//! "Change credentials" of one connector: the form that replaces them.

use countersign_api::{Connector, ConnectorAuth};
use leptos::prelude::*;

use super::auth_fields::{AuthDraft, AuthFields};
use super::store::ConnectorStore;
use crate::api;
use crate::components::{FormError, StepUp, last_error, submit_handler};
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
    let heading_id = format!("connector-{id}-credentials-heading");

    let save = {
        let id = id.clone();
        Action::new_local(move |body: &ConnectorAuth| {
            let body = body.clone();
            let csrf = session.csrf_token().unwrap_or_default();
            let id = id.clone();
            async move {
                let updated = step_up
                    .run(|| api::set_connector_auth(&csrf, &id, &body))
                    .await
                    .map_err(|failure| failure.detail)?;
                store.upsert(updated);
                on_close.run(Some(
                    "Credentials saved. Test the connector to check them.".into(),
                ));
                Ok(())
            }
        })
    };
    let busy = save.pending();
    let error = last_error(save);
    let submit = submit_handler(save, move || Some(auth.to_auth()));

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
