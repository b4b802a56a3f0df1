//! Builds the web app: the `countersign-web` crate to wasm32, then
//! `wasm-bindgen` into `target/web/pkg/`, then `wasm-opt -Oz` (npm's
//! `binaryen`, installed with the e2e packages: Debian's binaryen 108
//! produces wasm the browser rejects, see RECIPES.md), then the site the
//! server serves, `frontend/build/`, from it and the committed sources in
//! `frontend/dist/` (`site.rs`: hashed names, precompressed twins).

use crate::proc::{cmd, run};
use crate::{site, tools};
use anyhow::Context as _;

/// The folder the server serves: `COUNTERSIGN_STATIC_DIR` for `cargo xtask
/// run` and the tests (and the server's default, from the repository root).
pub fn site_dir() -> std::path::PathBuf {
    crate::root().join("frontend/build")
}

/// Release build of the web app (size profile), put together as the site.
pub fn build() -> anyhow::Result<site::Site> {
    let root = crate::root();
    tools::ensure_wasm_bindgen()?;
    // wasm-opt comes with the e2e packages (npm binaryen).
    tools::ensure_e2e_packages()?;
    run(cmd("cargo").args([
        "build",
        "-p",
        "countersign-web",
        "--profile",
        "wasm-release",
        "--target",
        "wasm32-unknown-unknown",
    ]))?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let wasm = target.join("wasm32-unknown-unknown/wasm-release/countersign_web.wasm");
    let out = target.join("web/pkg");
    // Where earlier builds put it, beside the sources: gone, so nothing
    // serves a stale copy.
    let legacy = root.join("frontend/dist/pkg");
    if legacy.exists() {
        std::fs::remove_dir_all(&legacy)?;
    }
    run(cmd("wasm-bindgen")
        // Names only help panic backtraces; dropping them saves ~40 %.
        .args([
            "--target",
            "web",
            "--no-typescript",
            "--remove-name-section",
            "--out-dir",
        ])
        .arg(&out)
        .arg(wasm))?;
    let wasm_opt = root.join("e2e/node_modules/.bin/wasm-opt");
    let bundle = out.join("countersign_web_bg.wasm");
    anyhow::ensure!(
        wasm_opt.exists(),
        "{} is missing: the e2e packages (npm binaryen) did not install it",
        wasm_opt.display()
    );
    run(cmd(&wasm_opt)
        .args([
            "-Oz",
            "--enable-bulk-memory",
            "--enable-nontrapping-float-to-int",
            "--enable-sign-ext",
            "--enable-mutable-globals",
            "-o",
        ])
        .arg(&bundle)
        .arg(&bundle))?;
    let site = site::assemble(&root.join("frontend/dist"), &out, &site_dir())
        .context("putting the web app together")?;
    for (name, raw, br) in &site.first_load {
        println!(
            "web app: {name}: {} KiB, {} KiB brotli",
            raw / 1024,
            br / 1024
        );
    }
    println!(
        "web app: first load {} KiB brotli (wasm + JS + CSS), in {}",
        site.first_load_brotli() / 1024,
        site.dir.display()
    );
    Ok(site)
}
