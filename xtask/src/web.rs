//! Builds the web app: the `countersign-web` crate to wasm32, then
//! `wasm-bindgen` into `frontend/dist/pkg/`, beside the committed
//! `index.html`, `app.js` and `app.css`, then `wasm-opt -Oz` when the npm
//! `binaryen` package is installed (by the e2e packages; Debian's binaryen
//! 108 produces wasm the browser rejects, see RECIPES.md).

use crate::proc::{cmd, run};

/// Release build of the web app (size profile).
pub fn build() -> anyhow::Result<()> {
    let root = crate::root();
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
    let out = root.join("frontend/dist/pkg");
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
    if wasm_opt.exists() {
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
    } else {
        println!(
            "(wasm-opt not installed: the web app is larger but works; `cargo xtask test` installs it)"
        );
    }
    let size = std::fs::metadata(&bundle)?.len();
    println!("web app: {} KiB of wasm", size / 1024);
    Ok(())
}
