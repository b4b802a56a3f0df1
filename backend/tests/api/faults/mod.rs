//! Fault scenarios (issue 15, `cargo xtask faults`): each breaks one thing
//! on purpose and checks the invariants — no execution without a recorded
//! approval or rule, none twice, no approval lost, the user always told —
//! writing its row through [`crate::faults_report::check`]. Fast scenarios
//! are plain tests; slow ones are `#[ignore = "slow, issue 15: run by cargo xtask faults"]`.

mod fuzz;
mod hold;
mod instances;
mod load;
mod mcp;
mod pg_cluster;
mod postgres;
mod process;
mod real_server;
mod ssrf;
