//! Any path no route matches.

use leptos::prelude::*;
use leptos_router::components::A;

use crate::components::set_page_title;

/// "Page not found" with a way back.
#[component]
pub fn NotFoundPage() -> impl IntoView {
    set_page_title("Page not found");
    view! {
        <main class="auth-page">
            <div class="card">
                <h1>"Page not found"</h1>
                <p>"There is nothing at this address."</p>
                <A href="/">"Go to Countersign"</A>
            </div>
        </main>
    }
}
