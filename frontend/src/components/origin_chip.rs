//! The chip on an MCP call that ran, saying what let it run (DESIGN §5):
//! the user's approval and when, or the rule that let it run without a
//! card. The words come from [`origin_text`]; the server decided.

use leptos::prelude::*;
use leptos::web_sys::js_sys::Date;
use wasm_bindgen::JsValue;

use crate::approval::origin_text;
use crate::transcript::Origin;

/// Minutes the browser's zone is east of UTC at `ms` (since the epoch).
fn minutes_east_at(ms: f64) -> i64 {
    // `getTimezoneOffset` is UTC minus local, in minutes (whole for every
    // zone in use since 1972).
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a zone offset in minutes fits in i64"
    )]
    let west = Date::new(&JsValue::from_f64(ms)).get_timezone_offset() as i64;
    -west
}

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
