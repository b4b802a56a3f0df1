//! The browser's time zone, for the [`crate::model`] functions that take a
//! zone offset as an argument (so that they can be tested on the host).
//!
//! It only asks the browser (`Date.prototype.getTimezoneOffset`); on the
//! host there is no browser to ask, so nothing here is called by tests.

use leptos::web_sys::js_sys::Date;
use wasm_bindgen::JsValue;

/// Minutes the browser's zone is east of UTC at `ms` (since the epoch).
pub fn minutes_east_at(ms: f64) -> i64 {
    // `getTimezoneOffset` is UTC minus local, in minutes (whole for every
    // zone in use since 1972).
    #[expect(
        clippy::cast_possible_truncation,
        reason = "a zone offset in minutes fits in i64"
    )]
    let west = Date::new(&JsValue::from_f64(ms)).get_timezone_offset() as i64;
    -west
}
