//! Entry point of the browser bundle: installs the panic hook and mounts
//! [`countersign_web::App`] on `<body>`. Everything else lives in the library.

fn main() {
    // Panics show up in the browser console with a Rust backtrace instead of
    // an opaque `unreachable` trap.
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(countersign_web::App);
}
