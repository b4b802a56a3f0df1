//! The app's plain-Rust half: what the pages show, computed from what the
//! server sent, with no Leptos, no DOM and no network. Each module is a set
//! of pure functions and data types, unit-tested on the host
//! (`cargo test -p countersign-web --lib`); the components call them and
//! render the result.
//!
//! What belongs here: turning wire types into words, rows and states
//! ([`transcript`], [`approval`], a server's request for input as a form
//! or a URL in [`input_request`], [`tool_review`], [`activity`],
//! [`security`], [`when`], connector sign-in in [`oauth`], where sign-in
//! returns to in [`return_to`]), rendering
//! Markdown safely ([`markdown`]) and the step-up's retry rule
//! ([`step_up`]). What does not: anything that holds a
//! signal, builds a URL, calls `fetch`, opens a stream or asks the browser
//! (the session, the chat list, [`crate::api`], [`crate::sse`],
//! [`crate::clock`]); those take or give the values these functions use.
//! Nothing here decides what the server decides.

pub mod activity;
pub mod admin;
pub mod approval;
pub mod input_request;
pub mod markdown;
pub mod oauth;
pub mod result_review;
pub mod return_to;
pub mod rule_draft;
pub mod security;
pub mod step_up;
pub mod tool_review;
pub mod transcript;
pub mod waiting;
pub mod when;
