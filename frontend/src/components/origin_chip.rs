//! The chip on an MCP call that ran, saying what let it run (DESIGN §5):
//! the user's approval and when, or the rule that let it run without a
//! card. The words come from [`origin_text`]; the server decided.

use leptos::prelude::*;

use crate::clock::minutes_east_at;
use crate::model::approval::origin_text;
use crate::model::transcript::Origin;

/// The chip of one call.
#[component]
pub fn OriginChip(
    /// What let the call run.
    origin: Origin,
) -> impl IntoView {
    view! {
        <p class="origin-chip" data-testid="tool-origin" data-origin=origin.key()>
            {origin_text(&origin, minutes_east_at)}
        </p>
    }
}
