//! `e2e/conformance-baseline.yml`: the conformance scenarios Countersign is
//! known to fail, each with the reason.
//!
//! The file is a YAML list of flat mappings, one per scenario, version and
//! side:
//!
//! ```yaml
//! - scenario: auth/metadata-default
//!   version: 2026-07-28
//!   side: client
//!   reason: OAuth is not implemented yet (issue 11)
//! ```
//!
//! What it owns: reading that file into [`Expected`] entries, strictly.
//! xtask has no YAML crate, so this reads the one shape the file uses — a
//! block list of mappings with the four keys above, each value on one
//! line, plain or quoted — and refuses anything else (flow collections,
//! multi-line values, unknown or repeated keys, a missing or empty reason)
//! with the line number, rather than guess. Comment lines (`#` first) and
//! blank lines are skipped; a ` #` in a plain value starts a comment, as in
//! YAML, so a reason that needs `#` is written in quotes.
//!
//! What it deliberately does not do: know which scenarios exist (the caller
//! checks the entries against the suite's own list).

use anyhow::{Context as _, bail};
use std::fmt;

/// Which side of the protocol a scenario tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Side {
    /// Our MCP client (the probe) against the suite's mock servers.
    Client,
    /// The demo MCP server against the suite's client.
    Server,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Client => "client",
            Side::Server => "server",
        })
    }
}

/// One known failure: a scenario at one protocol version, on one side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// The suite's scenario name, e.g. `auth/metadata-default`.
    pub scenario: String,
    /// The protocol version it runs at, e.g. `2026-07-28`.
    pub version: String,
    /// Client or server.
    pub side: Side,
    /// Why it fails, for the people reading the table.
    pub reason: String,
}

/// Reads the baseline file's text; `source` names it in errors.
pub fn parse(text: &str, source: &str) -> anyhow::Result<Vec<Expected>> {
    let mut entries: Vec<Expected> = Vec::new();
    let mut current: Option<(usize, Fields)> = None;
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let at = || format!("{source}:{line_no}");
        let trimmed = raw.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if raw.contains('\t') {
            bail!("{}: tabs are not allowed in YAML indentation", at());
        }
        let field = if let Some(rest) = raw.strip_prefix("- ") {
            if let Some((start, fields)) = current.take() {
                entries.push(fields.finish(source, start)?);
            }
            current = Some((line_no, Fields::default()));
            rest
        } else if raw.starts_with("  ") && !trimmed.starts_with('-') {
            if current.is_none() {
                bail!("{}: a field outside a list entry", at());
            }
            trimmed
        } else if trimmed == "[]" && entries.is_empty() && current.is_none() {
            // An empty list, written out.
            continue;
        } else {
            bail!(
                "{}: expected `- scenario: …` or an indented `key: value` line",
                at()
            );
        };
        let (key, value) = field
            .split_once(':')
            .with_context(|| format!("{}: expected `key: value`", at()))?;
        let value = scalar(value).with_context(at)?;
        let (_, fields) = current
            .as_mut()
            .expect("a field line always has an entry: checked above");
        fields.set(key.trim(), value).with_context(at)?;
    }
    if let Some((start, fields)) = current.take() {
        entries.push(fields.finish(source, start)?);
    }
    for (i, entry) in entries.iter().enumerate() {
        if entries[..i].iter().any(|earlier| {
            (&earlier.scenario, &earlier.version, earlier.side)
                == (&entry.scenario, &entry.version, entry.side)
        }) {
            bail!(
                "{source}: {} {} at {} is listed twice",
                entry.side,
                entry.scenario,
                entry.version
            );
        }
    }
    Ok(entries)
}

/// The fields of one entry as they are read.
#[derive(Debug, Default)]
struct Fields {
    scenario: Option<String>,
    version: Option<String>,
    side: Option<Side>,
    reason: Option<String>,
}

impl Fields {
    fn set(&mut self, key: &str, value: String) -> anyhow::Result<()> {
        fn once<T>(slot: &mut Option<T>, key: &str, value: T) -> anyhow::Result<()> {
            if slot.is_some() {
                bail!("`{key}` is given twice in one entry");
            }
            *slot = Some(value);
            Ok(())
        }
        match key {
            "scenario" => once(&mut self.scenario, key, value),
            "version" => once(&mut self.version, key, value),
            "side" => {
                let side = match value.as_str() {
                    "client" => Side::Client,
                    "server" => Side::Server,
                    other => bail!("side must be `client` or `server`, not `{other}`"),
                };
                once(&mut self.side, key, side)
            }
            "reason" => once(&mut self.reason, key, value),
            other => bail!("unknown key `{other}` (scenario, version, side, reason)"),
        }
    }

    fn finish(self, source: &str, line: usize) -> anyhow::Result<Expected> {
        let missing = |key: &str| format!("{source}:{line}: the entry has no `{key}`");
        let nonempty = |value: Option<String>, key: &str| match value {
            Some(v) if !v.trim().is_empty() => Ok(v),
            _ => Err(anyhow::anyhow!(missing(key))),
        };
        Ok(Expected {
            scenario: nonempty(self.scenario, "scenario")?,
            version: nonempty(self.version, "version")?,
            side: self.side.with_context(|| missing("side"))?,
            reason: nonempty(self.reason, "reason")?,
        })
    }
}

/// One value: plain (a trailing ` # comment` dropped), `"double"` (with
/// `\"` and `\\`) or `'single'` (with `''`) quoted.
fn scalar(raw: &str) -> anyhow::Result<String> {
    let value = raw.trim();
    if let Some(body) = value.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = body.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return after_quote(chars.as_str(), out),
                '\\' => match chars.next() {
                    Some('"') => out.push('"'),
                    Some('\\') => out.push('\\'),
                    other => bail!("unsupported escape \\{}", other.unwrap_or(' ')),
                },
                c => out.push(c),
            }
        }
        bail!("a double-quoted value is not closed on its line");
    }
    if let Some(body) = value.strip_prefix('\'') {
        let mut out = String::new();
        let mut chars = body.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' {
                if chars.peek() == Some(&'\'') {
                    chars.next();
                    out.push('\'');
                } else {
                    return after_quote(&chars.collect::<String>(), out);
                }
            } else {
                out.push(c);
            }
        }
        bail!("a single-quoted value is not closed on its line");
    }
    let plain = match value.find(" #") {
        Some(comment) => value[..comment].trim_end(),
        None => value,
    };
    if plain.is_empty() {
        bail!("an empty value (multi-line values are not supported: quote it on one line)");
    }
    if plain.starts_with(['[', '{', '|', '>', '&', '*', '!', '%', '@', '`', '"', '\'']) {
        bail!("`{plain}` would not be a plain string in YAML: quote it");
    }
    if plain.contains(": ") || plain.ends_with(':') {
        bail!("`{plain}` contains `: `, which YAML reads as a mapping: quote it");
    }
    Ok(plain.to_owned())
}

/// What may follow a closing quote: nothing, or a comment.
fn after_quote(rest: &str, value: String) -> anyhow::Result<String> {
    let rest = rest.trim();
    if rest.is_empty() || rest.starts_with('#') {
        Ok(value)
    } else {
        bail!("unexpected text after a quoted value: `{rest}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(scenario: &str, version: &str, side: Side, reason: &str) -> Expected {
        Expected {
            scenario: scenario.into(),
            version: version.into(),
            side,
            reason: reason.into(),
        }
    }

    #[test]
    fn entries_are_read_with_comments_quotes_and_any_key_order() {
        let text = "\
# Known failures.

- scenario: auth/metadata-default
  version: 2026-07-28
  side: client
  reason: OAuth is not implemented yet (issue 11) # the lead is on it
- side: server
  reason: \"prompts: none \\\"served\\\" # really\"
  scenario: prompts-list
  version: '2025-11-25'
-   scenario: ping
    version: 2025-11-25
    side: server
    reason: 'it''s fine'
";
        let entries = parse(text, "b.yml").expect("parses");
        assert_eq!(
            entries,
            [
                entry(
                    "auth/metadata-default",
                    "2026-07-28",
                    Side::Client,
                    "OAuth is not implemented yet (issue 11)"
                ),
                entry(
                    "prompts-list",
                    "2025-11-25",
                    Side::Server,
                    "prompts: none \"served\" # really"
                ),
                entry("ping", "2025-11-25", Side::Server, "it's fine"),
            ]
        );
    }

    #[test]
    fn an_empty_file_or_an_empty_list_means_no_known_failures() {
        assert_eq!(parse("", "b.yml").expect("parses"), []);
        assert_eq!(parse("# nothing\n[]\n", "b.yml").expect("parses"), []);
    }

    #[test]
    fn anything_outside_the_shape_is_refused_with_its_line() {
        let ok = "- scenario: s\n  version: v\n  side: client\n  reason: r\n";
        assert!(parse(ok, "b.yml").is_ok(), "the control case parses");
        let cases = [
            (
                "- scenario: s\n  version: v\n  side: client\n",
                "no reason",
                "no `reason`",
            ),
            (
                "- scenario: s\n  version: v\n  side: client\n  reason: \"\"\n",
                "an empty reason",
                "no `reason`",
            ),
            (
                "- scenario: s\n  version: v\n  side: both\n  reason: r\n",
                "a side that is neither",
                ":3:",
            ),
            (
                "- scenario: s\n  version: v\n  side: client\n  reason: r\n  why: x\n",
                "an unknown key",
                ":5:",
            ),
            (
                "- scenario: s\n  scenario: t\n  version: v\n  side: client\n  reason: r\n",
                "a repeated key",
                ":2:",
            ),
            (
                "- scenario: s\n  version: v\n  side: client\n  reason: >\n    folded\n",
                "a block scalar",
                ":4:",
            ),
            (
                "- scenario: s\n  version: v\n  side: client\n  reason: a: b\n",
                "an unquoted `: `",
                ":4:",
            ),
            ("- {scenario: s}\n", "a flow mapping", ":1:"),
            ("scenario: s\n", "a mapping, not a list", ":1:"),
            (
                "- scenario: s\n  version: v\n  side: client\n  reason: \"open\n",
                "an unclosed quote",
                ":4:",
            ),
            ("- scenario: s\n\tversion: v\n", "a tab", ":2:"),
        ];
        for (text, what, needle) in cases {
            let err = format!("{:#}", parse(text, "b.yml").expect_err(what));
            assert!(err.contains(needle), "{what}: {err}");
        }
    }

    #[test]
    fn the_same_scenario_version_and_side_may_be_listed_once() {
        let twice = "- scenario: s\n  version: v\n  side: client\n  reason: r\n\
                     - scenario: s\n  version: v\n  side: client\n  reason: again\n";
        let err = format!("{:#}", parse(twice, "b.yml").expect_err("a duplicate"));
        assert!(err.contains("listed twice"), "{err}");
        let other_side = "- scenario: s\n  version: v\n  side: client\n  reason: r\n\
                          - scenario: s\n  version: v\n  side: server\n  reason: r\n";
        assert_eq!(parse(other_side, "b.yml").expect("two sides").len(), 2);
    }
}
