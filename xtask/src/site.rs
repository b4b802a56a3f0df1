//! The web app as the server serves it (DESIGN §9a): the committed sources
//! of `frontend/dist/` and the wasm-bindgen output put together into one
//! folder (`frontend/build/`, the server's default `COUNTERSIGN_STATIC_DIR`),
//! with
//!
//! - every asset that `index.html` loads under a content-hashed name in
//!   `assets/` (`app.3f9c0d1e2a4b5c6d.css`), so the server can let browsers
//!   keep it for a year (`immutable`) and a new build is a new name;
//! - `index.html` (never cached: `no-cache`) pointing at those names, the
//!   loader `app.js` pointing at the hashed glue and wasm;
//! - a `.br` (brotli, quality 11) and a `.gz` (gzip -9) beside every text or
//!   wasm file, for `ServeDir`'s precompressed variants: nothing is
//!   compressed per request.

use anyhow::{Context as _, bail};
use sha2::{Digest as _, Sha256};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// What wasm-bindgen writes (`--target web`), read from `pkg`.
const GLUE: &str = "countersign_web.js";
const WASM: &str = "countersign_web_bg.wasm";

/// The folder the server serves, and what a first load costs.
#[derive(Debug)]
pub struct Site {
    pub dir: PathBuf,
    /// The files of a first load (wasm, the two scripts, the stylesheet):
    /// served name, raw bytes, brotli bytes.
    pub first_load: Vec<(String, u64, u64)>,
}

impl Site {
    /// Brotli bytes of a first load: what a browser that asks for `br`
    /// receives (`index.html` aside).
    pub fn first_load_brotli(&self) -> u64 {
        self.first_load.iter().map(|(_, _, br)| br).sum()
    }
}

/// `stem.<16 hex of SHA-256>.ext`.
fn hashed_name(name: &str, bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    match name.rsplit_once('.') {
        Some((stem, ext)) => format!("{stem}.{hex}.{ext}"),
        None => format!("{name}.{hex}"),
    }
}

/// `text` with `from` replaced by `to`, which must occur exactly once (a
/// source that changed shape fails the build rather than serving a page
/// that loads nothing).
fn replace_once(text: &str, from: &str, to: &str, file: &str) -> anyhow::Result<String> {
    match text.matches(from).count() {
        1 => Ok(text.replacen(from, to, 1)),
        n => bail!("{file}: expected `{from}` once, found it {n} times"),
    }
}

/// Puts the site together in `out` (emptied first) from the committed
/// `source` (`index.html`, `app.js`, `app.css`, `favicon.svg`) and
/// wasm-bindgen's `pkg`.
pub fn assemble(source: &Path, pkg: &Path, out: &Path) -> anyhow::Result<Site> {
    if out.exists() {
        std::fs::remove_dir_all(out).with_context(|| format!("emptying {}", out.display()))?;
    }
    let assets = out.join("assets");
    std::fs::create_dir_all(&assets)?;
    let read = |dir: &Path, name: &str| {
        std::fs::read(dir.join(name))
            .with_context(|| format!("reading {}", dir.join(name).display()))
    };
    let mut first_load = Vec::new();
    let mut put = |name: &str, bytes: &[u8]| -> anyhow::Result<String> {
        let served = hashed_name(name, bytes);
        std::fs::write(assets.join(&served), bytes)?;
        let br = precompress(&assets.join(&served), bytes)?;
        first_load.push((served.clone(), bytes.len() as u64, br));
        Ok(format!("/assets/{served}"))
    };

    // The wasm and its glue first: the loader names them.
    let wasm = put(WASM, &read(pkg, WASM)?)?;
    let glue = put(GLUE, &read(pkg, GLUE)?)?;
    let loader = String::from_utf8(read(source, "app.js")?).context("app.js is not UTF-8")?;
    let loader = replace_once(&loader, &format!("/pkg/{GLUE}"), &glue, "app.js")?;
    let loader = replace_once(&loader, &format!("/pkg/{WASM}"), &wasm, "app.js")?;
    let loader = put("app.js", loader.as_bytes())?;
    let css = put("app.css", &read(source, "app.css")?)?;

    let index =
        String::from_utf8(read(source, "index.html")?).context("index.html is not UTF-8")?;
    let mut page = index;
    for (from, to) in [
        ("\"/app.css\"", &css),
        ("\"/app.js\"", &loader),
        (&*format!("\"/pkg/{GLUE}\""), &glue),
        (&*format!("\"/pkg/{WASM}\""), &wasm),
    ] {
        page = replace_once(&page, from, &format!("\"{to}\""), "index.html")?;
    }
    std::fs::write(out.join("index.html"), &page)?;
    precompress(&out.join("index.html"), page.as_bytes())?;
    let favicon = read(source, "favicon.svg")?;
    std::fs::write(out.join("favicon.svg"), &favicon)?;
    precompress(&out.join("favicon.svg"), &favicon)?;

    Ok(Site {
        dir: out.to_owned(),
        first_load,
    })
}

/// Writes `path.br` and `path.gz` beside `path` (when smaller than the
/// file itself); returns the bytes a brotli client receives.
fn precompress(path: &Path, bytes: &[u8]) -> anyhow::Result<u64> {
    let mut br = Vec::new();
    {
        let params = brotli::enc::BrotliEncoderParams {
            quality: 11,
            lgwin: 24,
            ..Default::default()
        };
        brotli::BrotliCompress(&mut &bytes[..], &mut br, &params)?;
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(bytes)?;
    let gz = gz.finish()?;
    let with = |ext: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(ext);
        PathBuf::from(name)
    };
    let mut served = bytes.len() as u64;
    if br.len() < bytes.len() {
        std::fs::write(with(".br"), &br)?;
        served = br.len() as u64;
    }
    if gz.len() < bytes.len() {
        std::fs::write(with(".gz"), &gz)?;
    }
    Ok(served)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_content_hash() {
        let a = hashed_name("app.css", b"body{}");
        assert!(a.starts_with("app.") && a.ends_with(".css") && a.len() == "app..css".len() + 16);
        assert_eq!(a, hashed_name("app.css", b"body{}"));
        assert_ne!(a, hashed_name("app.css", b"body{ }"));
    }

    #[test]
    fn the_site_points_at_its_hashed_assets_and_has_compressed_twins() -> anyhow::Result<()> {
        let tmp = std::env::temp_dir().join(format!("cs-site-{}", std::process::id()));
        let (source, pkg, out) = (tmp.join("src"), tmp.join("pkg"), tmp.join("out"));
        std::fs::create_dir_all(&source)?;
        std::fs::create_dir_all(&pkg)?;
        std::fs::write(
            source.join("index.html"),
            r#"<link rel="stylesheet" href="/app.css"><link rel="modulepreload" href="/pkg/countersign_web.js"><link rel="preload" href="/pkg/countersign_web_bg.wasm"><script type="module" src="/app.js"></script>"#,
        )?;
        std::fs::write(
            source.join("app.js"),
            "import init from '/pkg/countersign_web.js';\ninit({ module_or_path: '/pkg/countersign_web_bg.wasm' });\n",
        )?;
        std::fs::write(
            source.join("app.css"),
            "body { color: black; }\n".repeat(50),
        )?;
        std::fs::write(source.join("favicon.svg"), "<svg/>")?;
        std::fs::write(
            pkg.join(GLUE),
            "export default function init() {}\n".repeat(20),
        )?;
        std::fs::write(pkg.join(WASM), vec![0u8; 4096])?;

        let site = assemble(&source, &pkg, &out)?;
        let index = std::fs::read_to_string(out.join("index.html"))?;
        assert!(
            !index.contains("/pkg/") && !index.contains("\"/app."),
            "{index}"
        );
        assert_eq!(site.first_load.len(), 4);
        for (served, raw, br) in &site.first_load {
            let file = out.join("assets").join(served);
            assert_eq!(std::fs::metadata(&file)?.len(), *raw);
            assert!(
                index.contains(&format!("/assets/{served}")),
                "{served} in index.html"
            );
            assert!(br < raw, "{served} compresses");
            let mut twin = file.into_os_string();
            twin.push(".br");
            assert!(PathBuf::from(twin).exists(), "{served}.br");
        }
        let loader = site
            .first_load
            .iter()
            .find(|(n, ..)| n.starts_with("app.") && n.ends_with(".js"))
            .context("the loader")?;
        let loader = std::fs::read_to_string(out.join("assets").join(&loader.0))?;
        assert!(!loader.contains("/pkg/"), "{loader}");
        // A source that lost a reference fails the build.
        std::fs::write(source.join("app.js"), "import init from '/elsewhere.js';\n")?;
        assert!(assemble(&source, &pkg, &out).is_err());
        std::fs::remove_dir_all(&tmp)?;
        Ok(())
    }
}
