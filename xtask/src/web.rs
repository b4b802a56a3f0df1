//! Builds the web app: the `countersign-web` crate to wasm32, then
//! `wasm-bindgen` into `frontend/dist/pkg/`, beside the committed
//! `index.html`, `app.js` and `app.css`.

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
    run(cmd("wasm-bindgen")
        // Names only help panic backtraces; dropping them saves ~40 %.
        .args([
            "--target",
            "web",
            "--no-typescript",
            "--remove-name-section",
            "--out-dir",
        ])
        .arg(root.join("frontend/dist/pkg"))
        .arg(wasm))
}
