//! Installs what a fresh Debian 12 machine with only Rust lacks: the wasm32
//! target, `wasm-bindgen-cli` at the `Cargo.lock` version, Postgres,
//! Chromium, Node.js and the e2e packages. Each check is cheap when the tool
//! is already there.

use crate::proc::{cmd, is_root, on_path, output, run};
use anyhow::{Context as _, bail};
use std::path::{Path, PathBuf};

/// `apt-get install -y PACKAGES` (after `apt-get update`), as root or
/// through `sudo -n`.
pub fn apt_install(packages: &[&str]) -> anyhow::Result<()> {
    let apt = |args: &[&str]| {
        let mut c = if is_root() {
            cmd("apt-get")
        } else {
            let mut c = cmd("sudo");
            c.args(["-n", "apt-get"]);
            c
        };
        c.env("DEBIAN_FRONTEND", "noninteractive").args(args);
        c
    };
    run(&mut apt(&["update", "-q"])).context("apt-get update (are you root or a sudoer?)")?;
    let mut install = apt(&["install", "-y", "-q", "--no-install-recommends"]);
    install.args(packages);
    run(&mut install)
}

/// The wasm32 target (rust-toolchain.toml lists it; this covers toolchains
/// installed before the file existed).
pub fn ensure_wasm_target() -> anyhow::Result<()> {
    let installed = output(cmd("rustup").args(["target", "list", "--installed"]))?;
    if !installed
        .lines()
        .any(|l| l.trim() == "wasm32-unknown-unknown")
    {
        run(cmd("rustup").args(["target", "add", "wasm32-unknown-unknown"]))?;
    }
    Ok(())
}

/// The version of `package` that `Cargo.lock` pins (its first entry).
pub fn locked_version(package: &str) -> anyhow::Result<String> {
    let lock =
        std::fs::read_to_string(crate::root().join("Cargo.lock")).context("reading Cargo.lock")?;
    let name = format!("name = \"{package}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == name
            && let Some(v) = lines
                .next()
                .and_then(|l| l.strip_prefix("version = \""))
                .and_then(|l| l.strip_suffix('"'))
        {
            return Ok(v.to_owned());
        }
    }
    bail!("Cargo.lock has no {package} package")
}

/// `wasm-bindgen` CLI at exactly the locked version. Installed without
/// `--locked`: its own lockfile names a crate release the offline index
/// lacks (RECIPES.md).
pub fn ensure_wasm_bindgen() -> anyhow::Result<()> {
    ensure_wasm_target()?;
    let want = locked_version("wasm-bindgen")?;
    let have = output(cmd("wasm-bindgen").arg("--version")).unwrap_or_default();
    if have.split_whitespace().nth(1) != Some(want.as_str()) {
        println!("wasm-bindgen-cli {want} is missing: installing it (about 3 minutes, once)");
        run(cmd("cargo").args(["install", "wasm-bindgen-cli", "--version", &want]))?;
    }
    Ok(())
}

/// `sqlx-cli` (`cargo sqlx`) at the locked `sqlx` version, Postgres
/// only: it writes and checks the compile-checked queries' offline data
/// (`backend/.sqlx/`).
pub fn ensure_sqlx_cli() -> anyhow::Result<()> {
    let want = locked_version("sqlx")?;
    let have = output(cmd("cargo").args(["sqlx", "--version"])).unwrap_or_default();
    if have.split_whitespace().nth(1) != Some(want.as_str()) {
        println!("sqlx-cli {want} is missing: installing it (about 3 minutes, once)");
        run(cmd("cargo").args([
            "install",
            "sqlx-cli",
            "--version",
            &want,
            "--locked",
            "--no-default-features",
            "--features",
            "postgres",
        ]))?;
    }
    Ok(())
}

/// The folder holding `initdb`, `pg_ctl` and `postgres`: the newest
/// `/usr/lib/postgresql/*/bin` (Debian), else whatever PATH has. Installs
/// Debian's `postgresql` when none is found.
pub fn postgres_bin_dir() -> anyhow::Result<PathBuf> {
    if let Some(dir) = find_postgres() {
        return Ok(dir);
    }
    println!("No Postgres binaries found: installing Debian's postgresql");
    apt_install(&["postgresql"])?;
    find_postgres().context("postgresql installed, yet initdb is still missing")
}

fn find_postgres() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let major = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((major, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    let path = output(cmd("sh").args(["-c", "command -v initdb"])).ok()?;
    Path::new(path.trim()).parent().map(Path::to_path_buf)
}

/// Debian's Chromium, for the e2e tests (no test tool may download its own).
pub fn ensure_chromium() -> anyhow::Result<()> {
    if !Path::new("/usr/bin/chromium").exists() {
        apt_install(&["chromium"])?;
    }
    Ok(())
}

/// Node.js and npm, for Playwright.
pub fn ensure_node() -> anyhow::Result<()> {
    if !(on_path("node") && on_path("npm")) {
        apt_install(&["nodejs", "npm"])?;
    }
    Ok(())
}

/// `npm ci` in `e2e/` when `node_modules` is missing or older than the
/// lockfile. Playwright's browser download is skipped: it uses Debian's.
pub fn ensure_e2e_packages() -> anyhow::Result<()> {
    ensure_node()?;
    let e2e = crate::root().join("e2e");
    let stamp = e2e.join("node_modules/.package-lock.json");
    let lock = e2e.join("package-lock.json");
    let fresh = match (std::fs::metadata(&stamp), std::fs::metadata(&lock)) {
        (Ok(s), Ok(l)) => s.modified()? >= l.modified()?,
        _ => false,
    };
    if !fresh {
        run(cmd("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&e2e)
            .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1"))?;
    }
    Ok(())
}
