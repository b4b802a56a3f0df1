//! The module-import cycle check (issue 10): within each crate, a module
//! may not reach itself through `use crate::…`, `crate::…` paths or
//! `super::…` paths. Run as a test of xtask, so `cargo xtask test` runs it.
//!
//! What counts: module `a` imports module `b` when a path in `a`'s file
//! (outside its `#[cfg(test)]` tail and its comments) names `b` or an item in `b`; the
//! target is the longest module prefix of the path. What does not count:
//! a module and its own ancestors or descendants (a parent declares its
//! children and re-exports them; a child reads its parent's items — that
//! nesting is the layout, not an import), and test code.
//!
//! What it deliberately does not do: resolve `use` of re-exported names to
//! where they are defined (the re-exporting module is the dependency), or
//! macros that paste paths. It is a text scan, not a compiler pass, which
//! is enough for this codebase's plain `use` statements.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

/// A module path, e.g. `["http", "extract"]`; the crate root is `[]`.
type Module = Vec<String>;

/// Every `.rs` file under `src`, as (module path, text).
fn modules(src: &Path) -> std::io::Result<BTreeMap<Module, String>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.insert(module_of(src, &path), std::fs::read_to_string(&path)?);
            }
        }
    }
    Ok(out)
}

fn module_of(src: &Path, file: &Path) -> Module {
    let relative: PathBuf = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Module = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.as_slice(), [only] if only == "lib" || only == "main") {
        parts.clear();
    }
    parts
}

/// The code before the file's `#[cfg(test)]` module, if any, without its
/// comment lines (a doc link is not an import).
fn without_tests(text: &str) -> String {
    let code = text.find("#[cfg(test)]").map_or(text, |at| &text[..at]);
    code.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Expands `{a, b::{c, d}}`-style groups of a `use` tree into full paths.
fn expand(prefix: &[String], tree: &str, out: &mut Vec<Module>) {
    let tree = tree.trim();
    if let Some(inner) = tree.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(prefix, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(prefix, &inner[start..], out);
        return;
    }
    match tree.split_once("::") {
        Some((head, rest)) => {
            let mut next = prefix.to_vec();
            next.push(head.trim().to_owned());
            expand(&next, rest, out);
        }
        None => {
            let name = tree.split_whitespace().next().unwrap_or("");
            let mut path = prefix.to_vec();
            if !name.is_empty() && name != "self" && name != "*" {
                path.push(name.to_owned());
            }
            out.push(path);
        }
    }
}

/// Every module path `text` (the file of module `at`) names.
fn paths(at: &Module, text: &str) -> Vec<Module> {
    let mut out = Vec::new();
    // `use crate::…;` and `use super::…;`, with groups.
    let mut rest = text;
    while let Some(i) = rest.find("use ") {
        let before_ok = i == 0 || !is_ident(rest[..i].chars().next_back().unwrap_or(' '));
        let after = &rest[i + 4..];
        let end = after.find(';').unwrap_or(after.len());
        if before_ok {
            let tree = after[..end].trim();
            for root in ["crate::", "super::"] {
                if let Some(tail) = tree.strip_prefix(root) {
                    let base = if root == "crate::" {
                        Vec::new()
                    } else {
                        at[..at.len().saturating_sub(1)].to_vec()
                    };
                    expand(&base, tail, &mut out);
                }
            }
        }
        rest = &after[end.min(after.len())..];
    }
    // Inline `crate::a::b` and `super::a` paths in code.
    for root in ["crate::", "super::"] {
        let mut rest = text;
        while let Some(i) = rest.find(root) {
            let before_ok = i == 0 || !is_ident(rest[..i].chars().next_back().unwrap_or(' '));
            let after = &rest[i + root.len()..];
            if before_ok {
                let mut path = if root == "crate::" {
                    Vec::new()
                } else {
                    at[..at.len().saturating_sub(1)].to_vec()
                };
                for segment in after.split("::") {
                    let ident: String = segment.chars().take_while(|&c| is_ident(c)).collect();
                    if ident.is_empty() {
                        break;
                    }
                    let whole = ident.len() == segment.len();
                    path.push(ident);
                    if !whole {
                        break;
                    }
                }
                out.push(path);
            }
            rest = after;
        }
    }
    out
}

fn nested(a: &Module, b: &Module) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// The module imports of one crate, `src` its source folder.
fn graph(src: &Path) -> std::io::Result<BTreeMap<Module, BTreeSet<Module>>> {
    let files = modules(src)?;
    let known: BTreeSet<&Module> = files.keys().collect();
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, text) in &files {
        let targets = edges.entry(module.clone()).or_default();
        for path in paths(module, &without_tests(text)) {
            let target = (0..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|prefix| known.contains(prefix));
            if let Some(target) = target
                && !nested(module, &target)
            {
                targets.insert(target);
            }
        }
    }
    Ok(edges)
}

/// The cycles (strongly connected components of two or more modules).
fn cycles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    // Tarjan, iterative enough for a few hundred modules.
    struct State<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        on_stack: BTreeSet<&'a Module>,
        stack: Vec<&'a Module>,
        next: usize,
        found: Vec<Vec<Module>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Module) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        let edges = s.edges;
        for w in edges.get(v).into_iter().flatten() {
            let Some((w, _)) = edges.get_key_value(w) else {
                continue;
            };
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        on_stack: BTreeSet::new(),
        stack: Vec::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found
}

/// The server's layering rule (ARCHITECTURE, "Invariants"): `http` →
/// domain → `db`. Only `http` itself and the crate root (which mounts the
/// router and starts the server) may import `http`; a domain module that
/// did would know about status codes and requests.
fn layering_violations(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<String> {
    let is_http = |m: &Module| m.first().is_some_and(|first| first == "http");
    edges
        .iter()
        .filter(|(from, _)| !from.is_empty() && !is_http(from))
        .flat_map(|(from, to)| {
            to.iter()
                .filter(|t| is_http(t))
                .map(move |t| format!("backend: {} imports {}", from.join("::"), t.join("::")))
        })
        .collect()
}

/// Every breach of the layering rule in the server, as printable lines.
pub fn layering() -> std::io::Result<Vec<String>> {
    Ok(layering_violations(&graph(
        &crate::root().join("backend").join("src"),
    )?))
}

/// `cargo xtask cycles`: prints the cycles and layering breaches, fails
/// when there is one.
pub fn print() -> anyhow::Result<()> {
    let mut problems = check()?;
    problems.extend(layering()?);
    if problems.is_empty() {
        println!("no module import cycles; the server's domain modules import no http");
        return Ok(());
    }
    anyhow::bail!(
        "module import cycles or layering breaches:\n{}",
        problems.join("\n")
    )
}

/// The cycles of every crate in the workspace, as printable lines.
pub fn check() -> std::io::Result<Vec<String>> {
    let mut problems = Vec::new();
    for krate in ["backend", "demo-mcp", "frontend", "shared", "xtask"] {
        let edges = graph(&crate::root().join(krate).join("src"))?;
        for cycle in cycles(&edges) {
            let names: Vec<String> = cycle
                .iter()
                .map(|m| {
                    if m.is_empty() {
                        "(root)".to_owned()
                    } else {
                        m.join("::")
                    }
                })
                .collect();
            problems.push(format!("{krate}: {}", names.join(" ↔ ")));
        }
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edges(pairs: &[(&str, &[&str])]) -> BTreeMap<Module, BTreeSet<Module>> {
        let m = |s: &str| -> Module {
            s.split('/')
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect()
        };
        pairs
            .iter()
            .map(|(from, to)| (m(from), to.iter().map(|t| m(t)).collect()))
            .collect()
    }

    #[test]
    fn use_trees_and_inline_paths_are_read_into_module_paths() {
        let at: Module = vec!["http".into(), "auth".into()];
        let found = paths(
            &at,
            "use crate::{AppState, approvals::{self, Row}, db};\nuse super::error::ApiError;\nfn f() { crate::events::append(); }",
        );
        let names: Vec<String> = found.iter().map(|p| p.join("::")).collect();
        for expected in [
            "AppState",
            "approvals",
            "approvals::Row",
            "db",
            "http::error::ApiError",
            "events::append",
        ] {
            assert!(
                names.contains(&expected.to_owned()),
                "{expected} in {names:?}"
            );
        }
    }

    #[test]
    fn a_cycle_is_found_and_nesting_is_not_one() {
        let g = edges(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"]), ("d", &["a"])]);
        assert_eq!(cycles(&g).len(), 1);
        assert_eq!(cycles(&g)[0].len(), 3);
        let acyclic = edges(&[("a", &["b"]), ("b", &["c"]), ("c", &[])]);
        assert!(cycles(&acyclic).is_empty());
        assert!(nested(
            &vec!["http".into()],
            &vec!["http".into(), "auth".into()]
        ));
    }

    #[test]
    fn a_domain_module_that_imports_http_breaks_the_layering() {
        let g = edges(&[
            ("", &["http"]),
            ("http/chats", &["turns", "db"]),
            ("turns", &["db", "http/error"]),
            ("db", &[]),
        ]);
        assert_eq!(
            layering_violations(&g),
            ["backend: turns imports http::error"]
        );
    }

    #[test]
    fn the_server_keeps_its_layers() {
        let problems = layering().expect("read the sources");
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn the_workspace_has_no_module_import_cycles() {
        let problems = check().expect("read the sources");
        assert!(
            problems.is_empty(),
            "module import cycles:\n{}",
            problems.join("\n")
        );
    }
}
