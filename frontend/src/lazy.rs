//! The split points (issue 13): the screens that are rarely the first one
//! — signing in and up, the home page, every Settings section, Activity —
//! and the elicitation card inside a chat, each compiled into a wasm chunk
//! of its own that the browser fetches the first time it is shown.
//! `cargo xtask web` splits the module at these functions; code that only
//! one of them reaches goes into its chunk, code that several share into a
//! shared chunk, and the main module keeps the shell and the chat page.
//!
//! A route here is a `LazyRoute`: its `data` runs in the main module (it
//! has nothing to start: each page starts its own reads), its `view` is
//! the chunk. The router keeps the page it shows until the chunk has
//! arrived, and a visit after that costs nothing: a chunk loads once.

use leptos::prelude::*;
use leptos_router::{LazyRoute, lazy_route};

use crate::components::{InputCard, ProviderKeys, RequireSession, SecuritySection};
use crate::model::transcript::Transcript;
use crate::pages::{
    ActivityPage, AdminSettings, ConnectorsSettings, HomePage, SettingsPage, SettingsSection,
    SignInPage, SignUpPage, StandingRules,
};

/// `/signin`, for signed-out visitors.
#[derive(Debug)]
pub struct SignInRoute;

#[lazy_route]
impl LazyRoute for SignInRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <RequireSession signed_in=false redirect="/"><SignInPage /></RequireSession> }
            .into_any()
    }
}

/// `/signup`, for signed-out visitors.
#[derive(Debug)]
pub struct SignUpRoute;

#[lazy_route]
impl LazyRoute for SignUpRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <RequireSession signed_in=false redirect="/"><SignUpPage /></RequireSession> }
            .into_any()
    }
}

/// `/`, the first steps.
#[derive(Debug)]
pub struct HomeRoute;

#[lazy_route]
impl LazyRoute for HomeRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <HomePage /> }.into_any()
    }
}

/// `/activity`.
#[derive(Debug)]
pub struct ActivityRoute;

#[lazy_route]
impl LazyRoute for ActivityRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <ActivityPage /> }.into_any()
    }
}

/// `/settings`: Connectors.
#[derive(Debug)]
pub struct SettingsConnectorsRoute;

#[lazy_route]
impl LazyRoute for SettingsConnectorsRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <SettingsPage section=SettingsSection::Connectors><ConnectorsSettings /></SettingsPage> }
            .into_any()
    }
}

/// `/settings/models`: Models & keys.
#[derive(Debug)]
pub struct SettingsModelsRoute;

#[lazy_route]
impl LazyRoute for SettingsModelsRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <SettingsPage section=SettingsSection::Models><ProviderKeys /></SettingsPage> }
            .into_any()
    }
}

/// `/settings/security`.
#[derive(Debug)]
pub struct SettingsSecurityRoute;

#[lazy_route]
impl LazyRoute for SettingsSecurityRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <SettingsPage section=SettingsSection::Security><SecuritySection /></SettingsPage> }
            .into_any()
    }
}

/// `/settings/rules`: Always allowed.
#[derive(Debug)]
pub struct SettingsRulesRoute;

#[lazy_route]
impl LazyRoute for SettingsRulesRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <SettingsPage section=SettingsSection::Rules><StandingRules /></SettingsPage> }
            .into_any()
    }
}

/// `/settings/admin`, for administrators.
#[derive(Debug)]
pub struct SettingsAdminRoute;

#[lazy_route]
impl LazyRoute for SettingsAdminRoute {
    fn data() -> Self {
        Self
    }

    fn view(_this: Self) -> AnyView {
        view! { <SettingsPage section=SettingsSection::Admin><AdminSettings /></SettingsPage> }
            .into_any()
    }
}

/// The input card's view, from its chunk (most chats never see one).
#[leptos::lazy]
fn input_card_view(transcript: RwSignal<Transcript>, input_id: String) -> AnyView {
    view! { <InputCard transcript=transcript input_id=input_id /> }.into_any()
}

/// [`InputCard`], drawn once its chunk has arrived (at once after the
/// first): nothing shows in its place until then.
#[component]
pub fn LazyInputCard(
    /// The chat's transcript, where the answer's progress is recorded.
    transcript: RwSignal<Transcript>,
    /// The input request's id.
    input_id: String,
) -> impl IntoView {
    Suspend::new(input_card_view(transcript, input_id))
}
