//! Wire tests of the network model providers (DESIGN §2).
//!
//! Each test starts a local HTTP server ([`fake::FakeProvider`]) that replays
//! a provider's real streaming format from `fixtures/*.sse` (see
//! `fixtures/README.md` for where each body comes from) and records the
//! requests it receives, then drives `countersign::llm::{anthropic, openai}`
//! against it. Nothing leaves 127.0.0.1.
//!
//! The offline demo model is tested elsewhere; this target is only about
//! speaking the providers' HTTP + SSE correctly.

mod anthropic;
mod fake;
mod openai;
