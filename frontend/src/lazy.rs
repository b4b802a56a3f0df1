//! The split points (issue 13): the screens that are rarely the first one
//! — signing in and up, the home page, Settings, Activity — and the
//! approval and elicitation cards inside a chat, compiled into wasm chunks that the
//! browser fetches the first time one of them is shown. `cargo xtask web`
//! splits the module at these functions; code that only one chunk reaches
//! goes into it, code that several share into a shared chunk, and the main
//! module keeps the shell and the chat page.
//!
//! The screens are grouped by how they are visited, one chunk a group:
//! `auth` (sign-in, sign-up), `home`, `settings` (every section: moving
//! between tabs then costs nothing), `activity`, and inside a chat
//! `approval_card` and `input_card` (which also holds the result review
//! card: both wait for the user while a call runs); and the two-factor
//! step-up dialog,
//! `step_up`, the first time a server asks for it. Fewer
//! groups mean fewer shared chunks (each one a request, and a `wasm-opt`
//! run in the build).
//!
//! A chunk that cannot be fetched — most often a tab left open across a
//! deploy, whose chunks' hashed names are gone (404) — is not a panic: the
//! split functions are `fallible`, and the failure shows
//! [`ChunkUnavailable`] in the screen's (or card's) place, which loads the
//! page afresh once so that the new build's `index.html` (never cached)
//! loads the new build, and otherwise says so with a Reload button.
//!
//! A route here is a [`LazyRoute`]: its `data` runs in the main module (it
//! has nothing to start: each page starts its own reads), its `view` calls
//! the chunk. The router keeps the page it shows until the chunk has
//! arrived, and a visit after that costs nothing: a chunk loads once.

use leptos::prelude::*;
use leptos::wasm_split::{SplitLoaderError, wasm_split};
use leptos_router::LazyRoute;
use leptos_router::hooks::use_url;

use crate::components::{
    ApprovalCard, InputCard, ProviderKeys, RequireSession, ReviewCard, SecuritySection,
    StepUpDialog,
};
use crate::model::transcript::{ToolCall, Transcript};
use crate::pages::{
    ActivityPage, AdminSettings, ConnectorsSettings, HomePage, SettingsPage, SettingsSection,
    SignInPage, SignUpPage, StandingRules,
};

/// A chunk did not load (logged to the console by the chunk loader).
#[derive(Debug)]
pub struct ChunkFailed;

impl From<SplitLoaderError> for ChunkFailed {
    fn from(_: SplitLoaderError) -> Self {
        Self
    }
}

/// A lazily loaded screen: the route type, the chunk (a `wasm_split`
/// module name) and the function in it that draws the screen.
macro_rules! lazy_screen {
    ($(#[$doc:meta])* $route:ident, $chunk:ident, $draw:ident, $view:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $route;

        #[wasm_split($chunk, wasm_split_path = ::leptos::wasm_split, fallible)]
        fn $draw() -> Result<AnyView, ChunkFailed> {
            Ok($view.into_any())
        }

        impl LazyRoute for $route {
            fn data() -> Self {
                Self
            }

            async fn view(_this: Self) -> AnyView {
                $draw()
                    .await
                    .unwrap_or_else(|ChunkFailed| view! { <ChunkUnavailable /> }.into_any())
            }
        }
    };
}

lazy_screen!(
    /// `/signin`, for signed-out visitors.
    SignInRoute,
    auth,
    sign_in_view,
    view! { <RequireSession signed_in=false redirect="/"><SignInPage /></RequireSession> }
);

lazy_screen!(
    /// `/signup`, for signed-out visitors.
    SignUpRoute,
    auth,
    sign_up_view,
    view! { <RequireSession signed_in=false redirect="/"><SignUpPage /></RequireSession> }
);

lazy_screen!(
    /// `/`, the first steps, and `/approvals`, an approver's "Approvals
    /// for you" (both list those calls): one route type and one split
    /// function for both, which [`HomePage`] tells apart by the address
    /// (a second split function costs the first load its glue).
    HomeRoute,
    home,
    home_view,
    view! { <HomePage /> }
);

lazy_screen!(
    /// `/activity`.
    ActivityRoute,
    activity,
    activity_view,
    view! { <ActivityPage /> }
);

lazy_screen!(
    /// `/settings`: Connectors.
    SettingsConnectorsRoute,
    settings,
    settings_connectors_view,
    view! { <SettingsPage section=SettingsSection::Connectors><ConnectorsSettings /></SettingsPage> }
);

lazy_screen!(
    /// `/settings/models`: Models & keys.
    SettingsModelsRoute,
    settings,
    settings_models_view,
    view! { <SettingsPage section=SettingsSection::Models><ProviderKeys /></SettingsPage> }
);

lazy_screen!(
    /// `/settings/security`.
    SettingsSecurityRoute,
    settings,
    settings_security_view,
    view! { <SettingsPage section=SettingsSection::Security><SecuritySection /></SettingsPage> }
);

lazy_screen!(
    /// `/settings/rules`: Always allowed.
    SettingsRulesRoute,
    settings,
    settings_rules_view,
    view! { <SettingsPage section=SettingsSection::Rules><StandingRules /></SettingsPage> }
);

lazy_screen!(
    /// `/settings/admin`, for administrators.
    SettingsAdminRoute,
    settings,
    settings_admin_view,
    view! { <SettingsPage section=SettingsSection::Admin><AdminSettings /></SettingsPage> }
);

/// The input card's view, or with `review` the result review card's,
/// from their chunk (most chats never see either: both are a running call
/// waiting for the user). One split function for both: a second costs the
/// first load its glue.
#[wasm_split(input_card, wasm_split_path = ::leptos::wasm_split, fallible)]
fn input_card_view(
    transcript: RwSignal<Transcript>,
    id: String,
    review: bool,
) -> Result<AnyView, ChunkFailed> {
    Ok(if review {
        view! { <ReviewCard transcript=transcript review_id=id /> }.into_any()
    } else {
        view! { <InputCard transcript=transcript input_id=id /> }.into_any()
    })
}

/// [`InputCard`] (or, with `review`, [`ReviewCard`]), drawn once its chunk
/// has arrived (at once after the first): nothing shows in its place until
/// then.
#[component]
pub fn LazyInputCard(
    /// The chat's transcript, where the answer's progress is recorded.
    transcript: RwSignal<Transcript>,
    /// The input request's (or the result review's) id.
    input_id: String,
    /// A result review, not an input request.
    #[prop(optional)]
    review: bool,
) -> impl IntoView {
    Suspend::new(async move {
        input_card_view(transcript, input_id, review)
            .await
            .unwrap_or_else(|ChunkFailed| view! { <ChunkUnavailable /> }.into_any())
    })
}

/// The approval card's view, from its chunk: shown only once a call waits
/// for a decision (and for the decided ones in a chat's history).
#[wasm_split(approval_card, wasm_split_path = ::leptos::wasm_split, fallible)]
fn approval_card_view(
    transcript: RwSignal<Transcript>,
    call: Signal<Option<ToolCall>>,
    approval_id: String,
) -> Result<AnyView, ChunkFailed> {
    Ok(
        view! { <ApprovalCard transcript=transcript call=call approval_id=approval_id /> }
            .into_any(),
    )
}

/// [`ApprovalCard`], drawn once its chunk has arrived (at once after the
/// first): nothing shows in its place until then.
#[component]
pub fn LazyApprovalCard(
    /// The chat's transcript, where the decision's progress is recorded.
    transcript: RwSignal<Transcript>,
    /// The tool call carrying the card.
    call: Signal<Option<ToolCall>>,
    /// Its ledger id (a different id is a different card).
    approval_id: String,
) -> impl IntoView {
    Suspend::new(async move {
        approval_card_view(transcript, call, approval_id)
            .await
            .unwrap_or_else(|ChunkFailed| view! { <ChunkUnavailable /> }.into_any())
    })
}

/// The step-up dialog's view, from its chunk: drawn the first time a
/// server asks for a two-factor step-up, and kept from then on.
#[wasm_split(step_up, wasm_split_path = ::leptos::wasm_split, fallible)]
fn step_up_view() -> Result<AnyView, ChunkFailed> {
    Ok(view! { <StepUpDialog /> }.into_any())
}

/// [`StepUpDialog`], once its chunk has arrived.
#[component]
pub fn LazyStepUpDialog() -> impl IntoView {
    Suspend::new(async move {
        step_up_view()
            .await
            .unwrap_or_else(|ChunkFailed| view! { <ChunkUnavailable /> }.into_any())
    })
}

/// Where the time of the last reload for a chunk is kept (milliseconds
/// since the epoch), for this tab only.
const RELOADED_AT: &str = "countersign.chunk-reload-at";

/// A chunk failing again this soon after such a reload is not a renamed
/// chunk of an old build: the notice stays, with its button.
const RELOAD_WINDOW_MS: u64 = 60_000;

/// In place of a screen or card whose chunk did not load: loads the
/// screen's address afresh once, so a tab open across a deploy picks up the
/// new build; a second failure within [`RELOAD_WINDOW_MS`] (or no session
/// storage to remember the first) leaves this notice and its Reload
/// button, so it never loops.
#[component]
pub fn ChunkUnavailable() -> impl IntoView {
    // The router's address, not the address bar's: the router puts a new
    // screen's address there only once the screen is drawn, so a reload
    // would land on the screen before.
    let address = router_address();
    let again = address.clone();
    Effect::new(move |_| {
        if reload_is_due() {
            load(&address);
        }
    });
    view! {
        <div class="app-updated" role="alert" data-testid="app-updated">
            <p>"Countersign was updated, or part of it could not load. Reload the page to continue."</p>
            <button
                type="button"
                class="button primary"
                data-testid="app-updated-reload"
                on:click=move |_| load(&again)
            >
                "Reload"
            </button>
        </div>
    }
}

/// The address (path, query, fragment) the router is showing.
fn router_address() -> String {
    let url = use_url().get_untracked();
    let mut address = url.path().to_owned();
    if !url.search().is_empty() {
        address.push('?');
        address.push_str(url.search());
    }
    if !url.hash().is_empty() && !url.hash().starts_with('#') {
        address.push('#');
    }
    address.push_str(url.hash());
    address
}

/// Whether to reload on our own: no such reload in the last
/// [`RELOAD_WINDOW_MS`]. Records this one.
fn reload_is_due() -> bool {
    let Some(storage) = window().session_storage().ok().flatten() else {
        return false;
    };
    // Whole milliseconds: no float parsing or printing in the bundle.
    let now = js_sys::Date::now() as u64;
    let last = storage
        .get_item(RELOADED_AT)
        .ok()
        .flatten()
        .and_then(|at| at.parse::<u64>().ok());
    if last.is_some_and(|last| now.saturating_sub(last) < RELOAD_WINDOW_MS) {
        return false;
    }
    storage.set_item(RELOADED_AT, &now.to_string()).is_ok()
}

/// A full page load of `address` on this origin: the server's
/// `index.html`, and the build it names.
fn load(address: &str) {
    let location = window().location();
    // Prefixed with the origin: a path starting `//` must not become
    // another host.
    let url = location.origin().map(|origin| format!("{origin}{address}"));
    if let Err(error) = url.and_then(|url| location.set_href(&url)) {
        leptos::logging::error!("loading {address}: {error:?}");
    }
}
