//! `cargo xtask …`: the project's automation, in Rust rather than shell.
//!
//! - `run`: install what is missing, build the web app, start a private
//!   Postgres under `.data/` (unless `DATABASE_URL` is set) and the server
//!   on http://127.0.0.1:3000. Ctrl-C stops both.
//! - `test`: every check CI runs: fmt, clippy (host and wasm32), unit and
//!   API tests against a throwaway Postgres, the MCP conformance suite, the
//!   schema drift check, and the browser e2e in headless Chromium.
//! - `conformance`: the official MCP conformance suite against our MCP
//!   client (the probe) and the demo MCP server, in a private network
//!   namespace; fails on failures `e2e/conformance-baseline.yml` does not
//!   list.
//! - `e2e [ARGS…]`: only the browser journeys, against a throwaway
//!   Postgres; ARGS go to `playwright test` (a spec's name, `-g TITLE`).
//! - `schema`: regenerate `schema.sql` from a freshly migrated database.
//! - `sqlx`: regenerate `backend/.sqlx/`, the offline data of the server's
//!   compile-checked queries, from a freshly migrated database.
//! - `openapi`: regenerate `docs/openapi.json` from the server's own
//!   `countersign openapi` (an API test compares it with what
//!   `/api/openapi.json` serves).
//! - `faults`: the fault harness (issue 15): MCP servers, Postgres and the
//!   server itself broken on purpose, several instances, a fuzzed API,
//!   hostile URLs, load; one table of scenario | expected | observed |
//!   holds. The fast scenarios also run in `test`.
//! - `eval`: the injection corpus (issue 16) against provenance: attack
//!   and benign scenarios through the API, one table per configuration of
//!   kind | scenarios | proposed | flagged | asked | ran without a card.
//!   The corpus test also runs in `test`.
//! - `cycles`: the module-import cycle check (also run as a test).
//! - `bench`: time to first token added by the server, memory per idle
//!   stream (printed figures, never asserted); `bench memory` only the
//!   memory figures, `bench latency` only the timings with one call.
//!
//! Each step prints the command it runs, so a failure says where it was.

mod bench;
mod conformance;
mod cycles;
mod eval;
mod faults;
mod interop;
mod pg;
mod proc;
mod run;
mod schema;
mod site;
mod sqlx;
mod test;
mod tools;
mod web;

use std::path::PathBuf;

const USAGE: &str = "usage: cargo xtask <command>

commands:
  run          run the product: embedded Postgres, server on http://127.0.0.1:3000
  test         run every check (what CI runs)
  conformance  the official MCP conformance suite against the probe and the demo server
  e2e [ARGS]   only the browser journeys (headless Chromium), for iterating;
               ARGS go to `playwright test`, e.g. `cargo xtask e2e elicitation -g reload`
  schema       regenerate schema.sql from a freshly migrated database
  sqlx         regenerate backend/.sqlx (the compile-checked queries' offline data)
  openapi      regenerate docs/openapi.json (the API tests fail when it differs)
  faults       break things on purpose (MCP servers, Postgres, the server, instances)
               and print what held: scenario | expected | observed | holds
  eval         run the injection corpus (issue 16) and print its flag rates:
               kind | scenarios | proposed | flagged | asked | ran without a card
  bench [memory | latency]
               print the server's figures (time to first token, memory per stream,
               approvals); `memory`: only the memory figures, `latency`: only
               time to first token and one approval's decision → execution
  cycles       check that no module imports itself through others (also a test)
  web          build the web app into frontend/build (hashed, precompressed)";

/// `cargo xtask openapi`: the server's own `countersign openapi`, written
/// to docs/openapi.json.
fn openapi() -> anyhow::Result<()> {
    run::build_server()?;
    let json = proc::output(proc::cmd(run::server_bin()).arg("openapi"))?;
    let path = root().join("docs").join("openapi.json");
    std::fs::write(&path, json)?;
    println!("wrote {}", path.display());
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("run") => run::run(),
        Some("test") => test::test(),
        Some("conformance") => conformance::conformance(&args[1..]),
        Some("e2e") => test::e2e_only(&args[1..]),
        Some("schema") => schema::write(),
        Some("sqlx") => sqlx::write(),
        Some("openapi") => openapi(),
        Some("bench") => bench::bench(&args[1..]),
        Some("faults") => faults::faults(),
        Some("eval") => eval::eval(),
        Some("cycles") => cycles::print(),
        Some("web") => web::build().map(drop),
        Some("-h" | "--help" | "help") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(anyhow::anyhow!("unknown command `{other}`\n\n{USAGE}")),
    };
    if let Err(err) = result {
        eprintln!("\nxtask: error: {err:#}");
        std::process::exit(1);
    }
}

/// The workspace root (xtask's parent folder).
pub fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}
