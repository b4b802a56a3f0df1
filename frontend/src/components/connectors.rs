//! Settings → "Connectors": the user's MCP servers, adding one (by hand or
//! from the deployment's offers), testing and refreshing it, deleting it, and
//! opening its tool review ([`ToolReviewList`], where "always allow" rules
//! are revoked), how many standing rules it has, and the per-connector
//! "Trust this server's safety annotations" switch (off by default; turning
//! it on asks first, turning it off does not).
//!
//! Credentials are write-only (DESIGN §3): the server answers "token set"
//! and header *names*, never values, and so does this section; "Change
//! credentials" replaces them. An OAuth connector is signed in to on its
//! authorization server's own page (Sign in on its row); the section shows
//! the outcome once when the browser comes back. Turning trust on and changing credentials may
//! ask for a two-factor code first ([`StepUp`]). Refusals
//! (a private address, a bad URL, a taken name) are the server's words,
//! shown inline. Nothing here judges a server or its tools.
//!
//! [`ConnectorsSection`] is the section; one file per piece of it:
//! `store.rs` (the list as the server last answered it), `row.rs` (one
//! connector and its actions), `sign_in.rs` (an OAuth connector's sign-in
//! and the line after coming back from it), `trust_toggle.rs`,
//! `change_credentials.rs`, `available_offers.rs`, `add_form.rs`, and
//! `auth_fields.rs` (the credentials fields, custom-header rows and OAuth
//! client fields both forms share).
//!
//! [`ToolReviewList`]: crate::components::ToolReviewList
//! [`StepUp`]: crate::components::StepUp

mod add_form;
mod auth_fields;
mod available_offers;
mod change_credentials;
mod row;
mod sign_in;
pub(crate) use sign_in::open_sign_in_page;
mod store;
mod trust_toggle;

use leptos::prelude::*;

use add_form::AddConnectorForm;
use available_offers::AvailableOffers;
use row::ConnectorRow;
use sign_in::SignInReturnLine;
use store::ConnectorStore;

use crate::model::oauth::SignInReturn;

/// The whole section.
#[component]
pub fn ConnectorsSection(
    /// Where a connector sign-in just left the browser (Settings' query),
    /// shown once at the top of the section.
    sign_in_return: Option<SignInReturn>,
) -> impl IntoView {
    let store = ConnectorStore::new();

    let list_view = move || match store.list.with(|l| {
        l.as_ref()
            .map(|r| r.as_ref().map(Vec::len).map_err(Clone::clone))
    }) {
        // The first load is the `Transition`'s fallback.
        None => ().into_any(),
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
            {sign_in_return.map(|outcome| view! { <SignInReturnLine outcome=outcome store=store /> })}
            // Later loads (after Test, Refresh, a review) keep the list.
            <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {list_view}
                <ul class="connector-list">
                    <For each=move || store.ids() key=|id| id.clone() let:id>
                        <ConnectorRow id=id store=store />
                    </For>
                </ul>
            </Transition>
            <AvailableOffers store=store />
            <AddConnectorForm store=store />
        </section>
    }
}
