//! Settings → "Models and keys": the user's own API keys for the model
//! providers, and the models usable now.
//!
//! Keys are write-only (DESIGN §3): the server answers whether one is set,
//! never the key, so this shows "Key set" / "Not set" and offers Save and
//! Remove. The input is cleared after a save. With two-factor sign-in on,
//! changing a key may need a step-up first ([`StepUp`]).

use countersign_api::ProviderKeyStatus;
use leptos::prelude::*;

use crate::api;
use crate::components::{FormError, StepUp, last_error, last_notice, submit_handler};
use crate::session::SessionState;

/// Providers whose keys a user can store: id, the name people know, and the
/// `data-testid` of the row's error.
const PROVIDERS: [(&str, &str, &str); 2] = [
    ("anthropic", "Anthropic", "key-error-anthropic"),
    ("openai", "OpenAI", "key-error-openai"),
];

/// The section: one row per provider, then the models list.
#[component]
pub fn ProviderKeys() -> impl IntoView {
    let statuses = LocalResource::new(api::provider_keys);
    let models = LocalResource::new(api::list_models);

    let rows = PROVIDERS
        .into_iter()
        .map(|(provider, name, error_testid)| {
            let status = Signal::derive(move || match statuses.get() {
                Some(Ok(list)) => {
                    Some(list.into_iter().find(|s| s.provider == provider).unwrap_or(
                        ProviderKeyStatus {
                            provider: provider.to_owned(),
                            is_set: false,
                            deployment_key: false,
                        },
                    ))
                }
                _ => None,
            });
            view! {
                <ProviderKeyRow
                    provider=provider
                    name=name
                    error_testid=error_testid
                    status=status
                    on_changed=move || {
                        statuses.refetch();
                        models.refetch();
                    }
                />
            }
        })
        .collect_view();

    let load_error = move || match statuses.get() {
        Some(Err(error)) => Some(error.detail),
        _ => None,
    };

    let model_list = move || match models.get() {
        None => view! { <p class="muted">"Loading…"</p> }.into_any(),
        Some(Err(error)) => view! {
            <p class="form-error" role="alert">
                {error.detail}
            </p>
        }
        .into_any(),
        Some(Ok(list)) => view! {
            <ul class="model-list" data-testid="model-list">
                {list
                    .models
                    .into_iter()
                    .map(|model| {
                        view! {
                            <li>
                                <span class="model-label">{model.label}</span>
                                " "
                                <code class="muted">{model.id}</code>
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        }
        .into_any(),
    };

    view! {
        <section class="panel" aria-labelledby="models-keys-heading" data-testid="models-and-keys">
            <h2 id="models-keys-heading">"Models and keys"</h2>
            <p>
                "Your own API keys for the model providers. They are stored encrypted and never shown again: you can replace or remove a key, not read it."
            </p>
            <FormError message=Signal::derive(load_error) testid="key-load-error" />
            <div class="key-rows">{rows}</div>
            <h3>"Models you can use now"</h3>
            {model_list}
        </section>
    }
}

/// What a key row asks the server.
#[derive(Debug, Clone)]
enum KeyRequest {
    /// Store this key.
    Save(String),
    /// Remove the stored key.
    Remove,
}

/// One provider: its status, a password field with Save, and Remove.
#[component]
fn ProviderKeyRow(
    provider: &'static str,
    name: &'static str,
    error_testid: &'static str,
    /// `None` while loading.
    status: Signal<Option<ProviderKeyStatus>>,
    /// Called after the key was saved or removed.
    #[prop(into)]
    on_changed: Callback<()>,
) -> impl IntoView {
    let session = SessionState::expect();
    let step_up = StepUp::expect();
    let key = RwSignal::new(String::new());
    // Save and Remove share one action: one runs at a time, and its
    // failure or notice is the row's.
    let act = Action::new_local(move |request: &KeyRequest| {
        let request = request.clone();
        let token = session.csrf_token().unwrap_or_default();
        async move {
            let notice = match request {
                KeyRequest::Save(api_key) => {
                    step_up
                        .run(|| api::set_provider_key(&token, provider, &api_key))
                        .await
                        .map_err(|failure| failure.detail)?;
                    key.set(String::new());
                    "Key saved."
                }
                KeyRequest::Remove => {
                    step_up
                        .run(|| api::delete_provider_key(&token, provider))
                        .await
                        .map_err(|failure| failure.detail)?;
                    "Key removed."
                }
            };
            on_changed.run(());
            Ok(notice)
        }
    });
    let busy = act.pending();
    let error = last_error(act);
    let notice = last_notice(act);
    let save = submit_handler(act, move || {
        let api_key = key.get_untracked().trim().to_owned();
        (!api_key.is_empty()).then_some(KeyRequest::Save(api_key))
    });
    let remove = move |_| {
        if !busy.get_untracked() {
            act.dispatch_local(KeyRequest::Remove);
        }
    };

    let is_set = move || status.get().is_some_and(|s| s.is_set);
    let status_text = move || match status.get() {
        None => "Checking…",
        Some(s) if s.is_set => "Key set",
        Some(_) => "Not set",
    };
    let deployment = move || status.get().is_some_and(|s| s.deployment_key);
    let input_id = format!("key-input-{provider}");
    let status_id = format!("key-status-{provider}");

    view! {
        <div class="key-row" data-provider=provider>
            <div class="key-row-head">
                <h3>{name}</h3>
                <p class="key-status" id=status_id.clone() data-testid=format!("key-status-{provider}") data-set=move || is_set().to_string()>
                    {status_text}
                </p>
                <Show when=deployment>
                    <p class="key-deployment muted" data-testid=format!("key-deployment-{provider}")>
                        "Deployment key available"
                    </p>
                </Show>
            </div>
            <form class="key-form" on:submit=save>
                <label for=input_id.clone()>{format!("{name} API key")}</label>
                <div class="key-controls">
                    <input
                        id=input_id
                        data-testid=format!("key-input-{provider}")
                        type="password"
                        name=format!("{provider}-api-key")
                        autocomplete="off"
                        spellcheck="false"
                        aria-describedby=status_id
                        bind:value=key
                    />
                    <button
                        type="submit"
                        class="button primary"
                        data-testid=format!("key-save-{provider}")
                        disabled=move || busy.get() || key.with(|k| k.trim().is_empty())
                    >
                        "Save"
                    </button>
                    <button
                        type="button"
                        class="button secondary"
                        data-testid=format!("key-remove-{provider}")
                        aria-label=format!("Remove the {name} key")
                        disabled=move || busy.get() || !is_set()
                        on:click=remove
                    >
                        "Remove"
                    </button>
                </div>
            </form>
            <FormError message=error testid=error_testid />
            {move || {
                notice
                    .get()
                    .map(|text| {
                        view! {
                            <p class="key-notice" role="status" data-testid=format!("key-notice-{provider}")>
                                {text}
                            </p>
                        }
                    })
            }}
        </div>
    }
}
