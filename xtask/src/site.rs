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
//! - the lazily loaded wasm chunks under hashed names too, and the
//!   splitter's chunk loader (`__wasm_split.js`) pointing at them and at the
//!   glue, the glue pointing at it;
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
/// What the splitter writes beside them: the chunk loader the glue imports.
const SPLIT_LOADER: &str = "__wasm_split.js";

/// The folder the server serves, and what a first load costs.
#[derive(Debug)]
pub struct Site {
    pub dir: PathBuf,
    /// The files of a first load (wasm, the two scripts, the stylesheet):
    /// served name, raw bytes, brotli bytes.
    pub first_load: Vec<(String, u64, u64)>,
    /// The lazily loaded wasm chunks, fetched on the first call of one of
    /// their `#[lazy]` functions: served name, raw bytes, brotli bytes.
    pub chunks: Vec<(String, u64, u64)>,
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
/// wasm-bindgen's `pkg`, which also holds the splitter's `chunks` (file
/// names) and its chunk loader.
pub fn assemble(source: &Path, pkg: &Path, chunks: &[String], out: &Path) -> anyhow::Result<Site> {
    if out.exists() {
        std::fs::remove_dir_all(out).with_context(|| format!("emptying {}", out.display()))?;
    }
    let assets = out.join("assets");
    std::fs::create_dir_all(&assets)?;
    let read = |dir: &Path, name: &str| {
        std::fs::read(dir.join(name))
            .with_context(|| format!("reading {}", dir.join(name).display()))
    };
    // `bytes` as `served` in `assets/`, with its twins: served name, raw
    // and brotli bytes.
    let write = |served: String, bytes: &[u8]| -> anyhow::Result<(String, u64, u64)> {
        std::fs::write(assets.join(&served), bytes)?;
        let br = precompress(&assets.join(&served), bytes)?;
        Ok((served, bytes.len() as u64, br))
    };
    let mut first_load = Vec::new();
    // The same, counted in the first load; answers its address.
    let mut put = |served: String, bytes: &[u8]| -> anyhow::Result<String> {
        let entry = write(served, bytes)?;
        let url = format!("/assets/{}", entry.0);
        first_load.push(entry);
        Ok(url)
    };

    // The chunks first: the chunk loader names them (relative to itself,
    // and everything lives in `assets/`).
    let mut served_chunks = Vec::new();
    let mut split_loader = match std::fs::read(pkg.join(SPLIT_LOADER)) {
        Ok(bytes) => Some(String::from_utf8(bytes).context("the chunk loader is not UTF-8")?),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound && chunks.is_empty() => None,
        Err(error) => {
            return Err(error)
                .with_context(|| format!("reading {}", pkg.join(SPLIT_LOADER).display()));
        }
    };
    for chunk in chunks {
        let bytes = read(pkg, chunk)?;
        let entry = write(hashed_name(chunk, &bytes), &bytes)?;
        if let Some(loader) = &mut split_loader {
            *loader = replace_once(
                loader,
                &format!("\"./{chunk}\""),
                &format!("\"./{}\"", entry.0),
                SPLIT_LOADER,
            )?;
        }
        served_chunks.push(entry);
    }

    // The wasm and its glue next: the loader names them. The glue imports
    // the chunk loader and the chunk loader the glue, so one of the two
    // names cannot be the hash of its final text: the chunk loader's name
    // hashes its text (with the chunks' names) together with the glue and
    // the wasm it will point at, so it still changes whenever any of them
    // does.
    let wasm_bytes = read(pkg, WASM)?;
    let wasm = put(hashed_name(WASM, &wasm_bytes), &wasm_bytes)?;
    let mut glue_text = String::from_utf8(read(pkg, GLUE)?).context("the glue is not UTF-8")?;
    let split_loader = match split_loader {
        Some(loader) if glue_text.contains(&format!("from \"./{SPLIT_LOADER}\"")) => {
            let mut covered = loader.clone().into_bytes();
            covered.extend_from_slice(glue_text.as_bytes());
            covered.extend_from_slice(&wasm_bytes);
            let served = hashed_name(SPLIT_LOADER, &covered);
            // One `import * as importN from "./__wasm_split.js"` per
            // chunk loader function. Only the module specifiers change:
            // the keys of the imports object are the wasm's own import
            // names, which stay `./__wasm_split.js`.
            glue_text = glue_text.replace(
                &format!("from \"./{SPLIT_LOADER}\""),
                &format!("from \"./{served}\""),
            );
            Some((served, loader))
        }
        // Nothing is lazy: the glue imports no chunk loader.
        _ => None,
    };
    let glue = put(
        hashed_name(GLUE, glue_text.as_bytes()),
        glue_text.as_bytes(),
    )?;
    let split_loader = match split_loader {
        Some((served, loader)) => {
            let glue_file = glue.trim_start_matches("/assets/");
            let loader = replace_once(
                &loader,
                &format!("\"./{GLUE}\""),
                &format!("\"./{glue_file}\""),
                SPLIT_LOADER,
            )?;
            Some(put(served, loader.as_bytes())?)
        }
        None => None,
    };
    let loader = String::from_utf8(read(source, "app.js")?).context("app.js is not UTF-8")?;
    let loader = replace_once(&loader, &format!("/pkg/{GLUE}"), &glue, "app.js")?;
    let loader = replace_once(&loader, &format!("/pkg/{WASM}"), &wasm, "app.js")?;
    let loader = put(hashed_name("app.js", loader.as_bytes()), loader.as_bytes())?;
    let css = String::from_utf8(read(source, "app.css")?).context("app.css is not UTF-8")?;
    let css_bytes = without_comments(&css).into_bytes();
    let css = put(hashed_name("app.css", &css_bytes), &css_bytes)?;

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
    // The chunk loader is a static import of the glue: preloaded with it,
    // or dropped from the page when nothing is lazy.
    let preload = format!("\"/pkg/{SPLIT_LOADER}\"");
    page = match &split_loader {
        Some(url) => replace_once(&page, &preload, &format!("\"{url}\""), "index.html")?,
        None => page
            .lines()
            .filter(|line| !line.contains(&preload))
            .map(|line| format!("{line}\n"))
            .collect(),
    };
    std::fs::write(out.join("index.html"), &page)?;
    precompress(&out.join("index.html"), page.as_bytes())?;
    let favicon = read(source, "favicon.svg")?;
    std::fs::write(out.join("favicon.svg"), &favicon)?;
    precompress(&out.join("favicon.svg"), &favicon)?;

    Ok(Site {
        dir: out.to_owned(),
        first_load,
        chunks: served_chunks,
    })
}

/// The stylesheet as served: its comments, written for the people who
/// edit `frontend/dist/app.css`, left out (a comment inside a quoted
/// string is text, and stays). Every page's first load carries the
/// stylesheet: without them it was 7,440 brotli bytes instead of 9,903.
fn without_comments(css: &str) -> String {
    let mut out = String::with_capacity(css.len());
    let mut rest = css;
    while let Some(at) = rest.find(['/', '"', '\'']) {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        if let Some(comment) = from.strip_prefix("/*") {
            // An unclosed comment runs to the end, as in a browser.
            rest = comment.find("*/").map_or("", |end| &comment[end + 2..]);
            continue;
        }
        let quote = from.chars().next().unwrap_or('/');
        if quote == '/' {
            out.push('/');
            rest = &from[1..];
            continue;
        }
        // A string, escapes included, up to its closing quote.
        let mut end = from.len();
        let mut escaped = false;
        for (i, c) in from.char_indices().skip(1) {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == quote || c == '\n' {
                end = i + c.len_utf8();
                break;
            }
        }
        out.push_str(&from[..end]);
        rest = &from[end..];
    }
    out.push_str(rest);
    // The lines a comment stood on.
    out.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| format!("{line}\n"))
        .collect()
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
    #[test]
    fn the_served_stylesheet_drops_comments_but_not_text_that_looks_like_one() {
        let css = "/* The card. */\n.card {\n  /* edge */ color: red; /* x */\n}\n\n\
                   .q::before { content: \"/* kept */\"; }\n.r { content: '\\'/*'; }\n\
                   a[href^=\"http://\"] { b: c }\n/* unclosed";
        assert_eq!(
            without_comments(css),
            ".card {\n   color: red; \n}\n.q::before { content: \"/* kept */\"; }\n\
             .r { content: '\\'/*'; }\na[href^=\"http://\"] { b: c }\n"
        );
    }

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
            r#"<link rel="stylesheet" href="/app.css"><link rel="modulepreload" href="/pkg/countersign_web.js">
<link rel="modulepreload" href="/pkg/__wasm_split.js">
<link rel="preload" href="/pkg/countersign_web_bg.wasm"><script type="module" src="/app.js"></script>"#,
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
        // The shapes wasm-bindgen and the splitter write.
        std::fs::write(
            pkg.join(GLUE),
            "import * as import1 from \"./__wasm_split.js\";\n".repeat(2)
                + "const imports = { \"./__wasm_split.js\": import1 };\n"
                + &"export default function init() {}\n".repeat(20),
        )?;
        std::fs::write(pkg.join(WASM), vec![0u8; 4096])?;
        let chunk = "split_settings_1.wasm".to_owned();
        std::fs::write(pkg.join(&chunk), vec![1u8; 4096])?;
        std::fs::write(
            pkg.join(SPLIT_LOADER),
            "import { initSync } from \"./countersign_web.js\";\n".to_owned()
                + "export const __wasm_split_load_settings = makeLoad(new URL(\"./split_settings_1.wasm\", import.meta.url), []);\n"
                + &"function makeLoad() {}\n".repeat(20),
        )?;

        let site = assemble(&source, &pkg, std::slice::from_ref(&chunk), &out)?;
        let index = std::fs::read_to_string(out.join("index.html"))?;
        assert!(
            !index.contains("/pkg/") && !index.contains("\"/app."),
            "{index}"
        );
        assert_eq!(site.first_load.len(), 5);
        for (served, raw, br) in site.first_load.iter().chain(&site.chunks) {
            let file = out.join("assets").join(served);
            assert_eq!(std::fs::metadata(&file)?.len(), *raw);
            assert!(br < raw, "{served} compresses");
            let mut twin = file.into_os_string();
            twin.push(".br");
            assert!(PathBuf::from(twin).exists(), "{served}.br");
        }
        for (served, ..) in &site.first_load {
            assert!(
                index.contains(&format!("/assets/{served}")),
                "{served} in index.html"
            );
        }
        let served = |prefix: &str, ext: &str| {
            site.first_load
                .iter()
                .chain(&site.chunks)
                .find(|(n, ..)| n.starts_with(prefix) && n.ends_with(ext))
                .map(|(n, ..)| n.clone())
                .with_context(|| format!("{prefix}*{ext}"))
        };
        let loader = std::fs::read_to_string(out.join("assets").join(served("app.", ".js")?))?;
        assert!(!loader.contains("/pkg/"), "{loader}");
        // The glue imports the hashed chunk loader, which imports the
        // hashed glue and fetches the hashed chunk.
        let (glue, split_loader) = (
            served("countersign_web.", ".js")?,
            served("__wasm_split.", ".js")?,
        );
        let glue_text = std::fs::read_to_string(out.join("assets").join(&glue))?;
        assert_eq!(
            glue_text
                .matches(&format!("from \"./{split_loader}\""))
                .count(),
            2,
            "{glue_text}"
        );
        // The wasm still names its import module as it was linked.
        assert!(
            glue_text.contains("{ \"./__wasm_split.js\": import1 }"),
            "{glue_text}"
        );
        let split_text = std::fs::read_to_string(out.join("assets").join(&split_loader))?;
        assert!(
            split_text.contains(&format!("\"./{glue}\"")),
            "{split_text}"
        );
        let chunk_served = served("split_settings_1.", ".wasm")?;
        assert_ne!(chunk_served, chunk);
        assert!(
            split_text.contains(&format!("\"./{chunk_served}\"")),
            "{split_text}"
        );
        // A source that lost a reference fails the build.
        std::fs::write(source.join("app.js"), "import init from '/elsewhere.js';\n")?;
        assert!(assemble(&source, &pkg, std::slice::from_ref(&chunk), &out).is_err());
        std::fs::remove_dir_all(&tmp)?;
        Ok(())
    }
}
