//! Builds the web app: the `countersign-web` crate to wasm32 (linked with
//! its relocations), split at its `#[lazy]` functions into a main module
//! and lazily loaded chunks (`wasm_split_cli_support`, the splitter `cargo
//! leptos --split` uses), then `wasm-bindgen` on the main module into
//! `target/web/pkg/`, then `wasm-opt -Oz` on every module (npm's
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

/// Where the split step puts the main module (for wasm-bindgen) and the
/// lazily loaded chunks with their loader (`__wasm_split.js`).
const SPLIT_LOADER: &str = "__wasm_split.js";

/// Release build of the web app (size profile), split into the main module
/// and the chunks of its `#[lazy]` functions, put together as the site.
///
/// The order is the one `cargo leptos --split` uses: link with relocations
/// kept, split the raw module, wasm-bindgen the main module only (the
/// chunks import what they need from it through `__wasm_split.js`), then
/// `wasm-opt` every module.
pub fn build() -> anyhow::Result<site::Site> {
    let root = crate::root();
    tools::ensure_wasm_bindgen()?;
    // wasm-opt comes with the e2e packages (npm binaryen).
    tools::ensure_e2e_packages()?;
    // `cargo rustc` passes the link argument to the binary's own link only:
    // the dependencies keep their build (and `.cargo/config.toml`'s
    // `erase_components` still applies). The splitter needs the linker's
    // relocations to move functions and data between modules.
    run(cmd("cargo").args([
        "rustc",
        "-p",
        "countersign-web",
        "--bin",
        "countersign_web",
        "--profile",
        "wasm-release",
        "--target",
        "wasm32-unknown-unknown",
        "--",
        "-C",
        "link-arg=--emit-relocs",
    ]))?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let wasm = target.join("wasm32-unknown-unknown/wasm-release/countersign_web.wasm");
    let split_dir = target.join("web/split");
    let out = target.join("web/pkg");
    // Where earlier builds put it, beside the sources: gone, so nothing
    // serves a stale copy.
    let legacy = root.join("frontend/dist/pkg");
    if legacy.exists() {
        std::fs::remove_dir_all(&legacy)?;
    }
    for dir in [&split_dir, &out] {
        if dir.exists() {
            std::fs::remove_dir_all(dir)?;
        }
    }
    let split = split(&wasm, &split_dir)?;

    run(cmd("wasm-bindgen")
        // Names only help panic backtraces; dropping them saves ~40 %.
        // The chunks link against the linker's own exports (the function
        // table, memory, stack pointer): keep them. (`--no-demangle` as
        // `cargo leptos --split` passes it.)
        .args([
            "--target",
            "web",
            "--no-typescript",
            "--remove-name-section",
            "--keep-lld-exports",
            "--no-demangle",
            "--out-name",
            "countersign_web",
            "--out-dir",
        ])
        .arg(&out)
        .arg(&split.main))?;
    let wasm_opt = root.join("e2e/node_modules/.bin/wasm-opt");
    anyhow::ensure!(
        wasm_opt.exists(),
        "{} is missing: the e2e packages (npm binaryen) did not install it",
        wasm_opt.display()
    );
    // The chunks and the loader go beside the glue: the loader imports the
    // glue as `./countersign_web.js` and fetches `./<chunk>.wasm`.
    let mut chunks = Vec::new();
    for chunk in &split.chunks {
        let name = chunk.file_name().context("a chunk without a name")?;
        std::fs::copy(chunk, out.join(name))?;
        chunks.push(name.to_string_lossy().into_owned());
    }
    std::fs::copy(split_dir.join(SPLIT_LOADER), out.join(SPLIT_LOADER))?;
    // The main module first: it takes longest, the chunks fill in beside it.
    let modules: Vec<_> = std::iter::once("countersign_web_bg.wasm".to_owned())
        .chain(chunks.clone())
        .map(|module| out.join(module))
        .collect();
    let cache = target.join("web/wasm-opt-cache");
    std::fs::create_dir_all(&cache)?;
    let kept = optimize_all(&wasm_opt, &modules, &cache)?;
    // Only this build's modules stay cached.
    for entry in std::fs::read_dir(&cache)? {
        let path = entry?.path();
        if !kept.contains(&path) {
            std::fs::remove_file(&path)?;
        }
    }
    let site = site::assemble(&root.join("frontend/dist"), &out, &chunks, &site_dir())
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
    for (name, raw, br) in &site.chunks {
        println!(
            "web app: lazy chunk {name}: {} KiB, {} KiB brotli",
            raw / 1024,
            br / 1024
        );
    }
    Ok(site)
}

/// What [`split`] wrote.
struct Split {
    /// The main module, for wasm-bindgen.
    main: std::path::PathBuf,
    /// The lazily loaded modules.
    chunks: Vec<std::path::PathBuf>,
}

/// Splits the linked module `wasm` at its `#[lazy]` functions into `dir`:
/// `main.wasm`, one module per lazy function and per group of functions
/// that several lazy functions share, and `__wasm_split.js`, which loads
/// them on the first call.
fn split(wasm: &std::path::Path, dir: &std::path::Path) -> anyhow::Result<Split> {
    let input = std::fs::read(wasm).with_context(|| format!("reading {}", wasm.display()))?;
    let main = dir.join("main.wasm");
    let link_name = format!("./{SPLIT_LOADER}");
    let mut options = wasm_split_cli_support::Options::new(&input);
    options.output_dir = dir;
    options.main_out_path = &main;
    options.link_name = &link_name;
    // The loader asks the glue for the main module's exports.
    options.main_module = "./countersign_web.js";
    println!("$ wasm-split {} {}", wasm.display(), dir.display());
    let split = wasm_split_cli_support::transform(options)
        // eyre's report, as text: the chain and the splitter's context.
        .map_err(|report| anyhow::anyhow!("{report:?}"))
        .context("splitting the wasm at its #[lazy] functions")?;
    Ok(Split {
        main,
        chunks: split.split_modules,
    })
}

/// The `wasm-opt` flags of every module.
///
/// `--low-memory-unused` lets `-Oz` fold pointer arithmetic into load and
/// store offsets (about 1.6 KB of the main module, brotli): it holds for
/// Rust's wasm32 layout, whose stack is first in memory and grows down
/// towards address 0, so the low 1 KiB is touched only a kilobyte short
/// of a stack overflow (the globals say so: stack pointer and data both
/// start at 1 MiB). The producers and target-features sections are for
/// tools, not browsers.
const WASM_OPT_FLAGS: [&str; 9] = [
    "-Oz",
    "--low-memory-unused",
    "--strip-debug",
    "--strip-producers",
    "--strip-target-features",
    "--enable-bulk-memory",
    "--enable-nontrapping-float-to-int",
    "--enable-sign-ext",
    "--enable-mutable-globals",
];

/// How many `wasm-opt` runs at once, at most: npm's wasm-opt is binaryen
/// compiled to JavaScript, one thread a run, so two cores halve the time
/// of a build whose modules all changed.
const WASM_OPT_JOBS: usize = 2;

/// [`optimize`] on every module, [`WASM_OPT_JOBS`] at a time (fewer on a
/// machine with fewer cores), in the order given. Answers the cached
/// files.
fn optimize_all(
    wasm_opt: &std::path::Path,
    modules: &[std::path::PathBuf],
    cache: &std::path::Path,
) -> anyhow::Result<std::collections::HashSet<std::path::PathBuf>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let jobs = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, WASM_OPT_JOBS);
    let next = AtomicUsize::new(0);
    let work = || -> anyhow::Result<Vec<std::path::PathBuf>> {
        let mut done = Vec::new();
        // The next module nobody has taken; a failure stops this worker
        // and, through `next`, the others after their current run.
        while let Some(module) = modules.get(next.fetch_add(1, Ordering::Relaxed)) {
            match optimize(wasm_opt, module, cache) {
                Ok(cached) => done.push(cached),
                Err(error) => {
                    next.store(modules.len(), Ordering::Relaxed);
                    return Err(error);
                }
            }
        }
        Ok(done)
    };
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs).map(|_| scope.spawn(work)).collect();
        let mut kept = std::collections::HashSet::new();
        for worker in workers {
            let done = worker
                .join()
                .map_err(|_| anyhow::anyhow!("a wasm-opt worker panicked"))??;
            kept.extend(done);
        }
        Ok(kept)
    })
}

/// `wasm-opt` on `module` in place, remembered in `cache` by the input's
/// hash: npm's wasm-opt starts a Node with binaryen each time (seconds),
/// and a rebuild with unchanged code splits into the very same modules.
/// Answers the cached file.
fn optimize(
    wasm_opt: &std::path::Path,
    module: &std::path::Path,
    cache: &std::path::Path,
) -> anyhow::Result<std::path::PathBuf> {
    use sha2::{Digest as _, Sha256};
    let input = std::fs::read(module)?;
    let mut key = Sha256::new();
    key.update(WASM_OPT_FLAGS.join(" "));
    key.update(&input);
    let key: String = key.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let cached = cache.join(format!("{key}.wasm"));
    if !cached.exists() {
        // Renamed into place: an interrupted run leaves no half a module.
        let partial = cached.with_extension("partial");
        run(cmd(wasm_opt)
            .args(WASM_OPT_FLAGS)
            .arg("-o")
            .arg(&partial)
            .arg(module))?;
        std::fs::rename(&partial, &cached)?;
    }
    std::fs::copy(&cached, module)?;
    Ok(cached)
}
