//! API tests: the real server on port 0, a fresh real Postgres database per
//! test (on the cluster named by `COUNTERSIGN_TEST_SUPERUSER_URL`, which
//! `cargo xtask test` starts), real HTTP through reqwest.
//!
//! Modules mirror the URL tree: `auth` for `/api/auth/*`, `health` for the
//! probes and the static app, `rls` for the database's own guarantees.

mod activity;
mod activity_trail;
mod admin;
mod approvals;
mod auth;
mod chats;
mod connectors;
mod delivery;
mod edit_and_allow;
mod faults;
#[path = "../support/faults.rs"]
mod faults_report;
mod grants;
mod hardening;
mod health;
mod helpers;
mod host;
mod inputs;
mod logs;
mod metrics;
mod mfa;
mod oauth_flow;
mod oauth_hostile;
mod oauth_store;
mod oidc;
mod provenance;
mod provenance_corpus;
mod py_oauth;
mod result_review;
mod rls;
mod rotation;
mod rules;
mod second_approval;
mod server_bounds;
mod stamps;
#[path = "../support/db.rs"]
mod test_db;
mod transactions;
mod turns;
mod upgrades;
