//! Markdown → a tree of plain blocks and inlines, for the assistant's
//! answers; [`crate::components::Markdown`] turns the tree into DOM nodes
//! (never `innerHTML`).
//!
//! The text comes from a language model, which repeats whatever a tool or a
//! web page told it: treat it as hostile. The tree can only hold what this
//! module builds, so:
//!
//! - raw HTML in the source (`<script>`, `<img onerror=…>`) is text, never
//!   parsed by the browser (and the DOM is built node by node, so no text
//!   is ever parsed as markup);
//! - a link is a link only when its destination is an absolute `http:`,
//!   `https:` or `mailto:` URL, and then opens in a new tab with
//!   `rel="noopener noreferrer"`; anything else (`javascript:`, `data:`,
//!   relative paths) keeps its text and loses the link;
//! - images are never loaded: an image becomes a link to it (same rule) or
//!   its description as text;
//! - no element gets a `style`, `id` or event attribute; table alignment is
//!   a class.
//!
//! Why our own parser rather than `pulldown-cmark` (which this replaced):
//! issue 13's budget for a chat page's first load (≤ 300,000 bytes of
//! brotli for wasm + JS + CSS). `pulldown-cmark` with its 2,125-entry
//! entity table and `unicase` was about 100 KiB of wasm in the main
//! module, ~40 KB on the wire, and the bundle was 8 KB over. This is the
//! CommonMark a model writes — paragraphs, ATX and setext headings, fenced
//! and indented code, block quotes (with GFM's `[!NOTE]` callouts), nested
//! bullet, numbered and task lists, GFM tables and strikethrough, thematic
//! breaks, emphasis, code spans, links (inline, reference, autolinks),
//! images, hard breaks, backslash escapes, the common named and every
//! numeric character reference — and it stays safe on any input,
//! unfinished input while streaming included. Where it is simpler than the
//! spec (no lazy continuation lines in block quotes, emphasis without the
//! "multiple of 3" rule, a short list of named entities) the result is
//! still readable text.
//!
//! It knows nothing about the DOM, so it is unit-tested on the host:
//! `cargo test -p countersign-web --lib`.

/// A block of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// A paragraph.
    Paragraph(Vec<Inline>),
    /// A heading, level 1 to 6.
    Heading(u8, Vec<Inline>),
    /// A code block; `language` is the fence's first word, only
    /// `[A-Za-z0-9_+.-]`, at most 32 characters (for a `language-` class).
    Code {
        /// The language, or empty.
        language: String,
        /// The code, every line ending in `\n`.
        text: String,
    },
    /// A block quote; `callout` is a GFM alert's class (`callout note`).
    Quote {
        /// The alert's classes, if it is one.
        callout: Option<&'static str>,
        /// What it quotes.
        blocks: Vec<Block>,
    },
    /// A list: numbered from `start`, or bulleted (`None`).
    List {
        /// The first number of a numbered list.
        start: Option<u64>,
        /// Tight: no blank line between items, whose paragraphs are then
        /// drawn without `<p>`.
        tight: bool,
        /// The items.
        items: Vec<Vec<Block>>,
    },
    /// A table.
    Table {
        /// Each column's alignment class (`align-left` …), if any.
        alignments: Vec<Option<&'static str>>,
        /// The header row.
        head: Vec<Vec<Inline>>,
        /// The body rows.
        rows: Vec<Vec<Vec<Inline>>>,
    },
    /// A thematic break.
    Rule,
    /// Raw HTML, as text (class `md-raw`, spacing kept).
    Raw(String),
}

/// A piece of a paragraph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inline {
    /// Text (a soft line break is a `\n` in it).
    Text(String),
    /// A code span.
    Code(String),
    /// `*…*`.
    Emphasis(Vec<Inline>),
    /// `**…**`.
    Strong(Vec<Inline>),
    /// `~~…~~`.
    Strikethrough(Vec<Inline>),
    /// A link to an allowed URL (see [`safe_href`]).
    Link {
        /// The destination: `http(s)://…` or `mailto:…`.
        href: String,
        /// Its title, or empty.
        title: String,
        /// Its text.
        children: Vec<Inline>,
    },
    /// A hard line break.
    Break,
}

/// Parses `source` (CommonMark plus tables, strikethrough, task lists and
/// GFM alerts).
pub fn parse_markdown(source: &str) -> Vec<Block> {
    let source = source.replace("\r\n", "\n").replace('\0', "\u{FFFD}");
    let lines: Vec<&str> = source.split('\n').collect();
    let mut links = Vec::new();
    collect_definitions(&lines, &mut links);
    let parser = Parser { links };
    parser.blocks(&lines)
}

/// A link reference definition: label (folded), destination, title.
type Definition = (String, String, String);

struct Parser {
    links: Vec<Definition>,
}

/// A line's indentation in columns (a tab counts to the next multiple of
/// four) and the rest.
fn indent(line: &str) -> (usize, &str) {
    let mut columns = 0;
    for (i, c) in line.char_indices() {
        match c {
            ' ' => columns += 1,
            '\t' => columns += 4 - columns % 4,
            _ => return (columns, &line[i..]),
        }
    }
    (columns, "")
}

/// `line` without its first `columns` columns of indentation (as much as
/// it has).
fn dedent(line: &str, columns: usize) -> String {
    let mut seen = 0;
    for (i, c) in line.char_indices() {
        if seen >= columns {
            return line[i..].to_owned();
        }
        match c {
            ' ' => seen += 1,
            '\t' => {
                let width = 4 - seen % 4;
                if seen + width > columns {
                    // A tab wider than what is left: the rest as spaces.
                    let extra = seen + width - columns;
                    return " ".repeat(extra) + &line[i + 1..];
                }
                seen += width;
            }
            _ => return line[i..].to_owned(),
        }
    }
    String::new()
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// An opening code fence: its character, length and info string.
fn fence(line: &str) -> Option<(char, usize, &str)> {
    let (columns, rest) = indent(line);
    if columns > 3 {
        return None;
    }
    let c = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let length = rest.chars().take_while(|x| *x == c).count();
    let info = rest[length..].trim();
    (length >= 3 && !(c == '`' && info.contains('`'))).then_some((c, length, info))
}

fn is_rule(line: &str) -> bool {
    let (columns, rest) = indent(line);
    let Some(c) = rest.chars().next().filter(|c| matches!(c, '*' | '-' | '_')) else {
        return false;
    };
    columns <= 3
        && rest.chars().all(|x| x == c || x == ' ' || x == '\t')
        && rest.chars().filter(|x| *x == c).count() >= 3
}

/// An ATX heading: level and text.
fn atx_heading(line: &str) -> Option<(u8, &str)> {
    let (columns, rest) = indent(line);
    let level = rest.chars().take_while(|c| *c == '#').count();
    if columns > 3 || !(1..=6).contains(&level) {
        return None;
    }
    let text = &rest[level..];
    if !text.is_empty() && !text.starts_with([' ', '\t']) {
        return None;
    }
    let text = text.trim();
    // A closing sequence of `#`s, when it follows a space (or is all).
    let stripped = text.trim_end_matches('#');
    let text = if stripped.is_empty() || stripped.ends_with([' ', '\t']) {
        stripped.trim_end()
    } else {
        text
    };
    Some((level as u8, text))
}

/// A list item's marker: numbered (its number) or not, the marker's
/// character (`-`, `+`, `*`, `.` or `)`), and the columns its content
/// starts at.
fn list_marker(line: &str) -> Option<(Option<u64>, char, usize)> {
    let (columns, rest) = indent(line);
    if columns > 3 {
        return None;
    }
    let (number, marker, width) = match rest.chars().next()? {
        c @ ('-' | '+' | '*') => (None, c, 1),
        _ => {
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            let marker = rest[digits..].chars().next()?;
            if !(1..=9).contains(&digits) || !matches!(marker, '.' | ')') {
                return None;
            }
            (rest[..digits].parse().ok(), marker, digits + 1)
        }
    };
    let after = &rest[width..];
    if after.is_empty() || is_blank(after) {
        return Some((number, marker, columns + width + 1));
    }
    if !after.starts_with([' ', '\t']) {
        return None;
    }
    let (spaces, _) = indent(after);
    // Five or more spaces: the content is indented code, one space counts.
    let spaces = if spaces > 4 { 1 } else { spaces };
    Some((number, marker, columns + width + spaces))
}

/// A GFM table's delimiter row: each column's alignment class.
fn delimiter_row(line: &str) -> Option<Vec<Option<&'static str>>> {
    let cells = split_row(line);
    if cells.is_empty() || !line.contains('-') {
        return None;
    }
    cells
        .iter()
        .map(|cell| {
            let cell = cell.trim();
            let left = cell.starts_with(':');
            let right = cell.ends_with(':');
            let dashes = cell.trim_matches(':');
            if dashes.is_empty() || !dashes.chars().all(|c| c == '-') {
                return None;
            }
            Some(match (left, right) {
                (true, true) => Some("align-center"),
                (true, false) => Some("align-left"),
                (false, true) => Some("align-right"),
                (false, false) => None,
            })
        })
        .collect()
}

/// A table row's cells (outer pipes optional, `\|` is a pipe in a cell).
fn split_row(line: &str) -> Vec<String> {
    let line = line.trim();
    let line = line.strip_prefix('|').unwrap_or(line);
    let line = match line.strip_suffix('|') {
        Some(rest) if !rest.ends_with('\\') => rest,
        _ => line,
    };
    let mut cells = vec![String::new()];
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                cells.last_mut().expect("one cell at least").push('|');
            }
            '|' => cells.push(String::new()),
            c => cells.last_mut().expect("one cell at least").push(c),
        }
    }
    cells
}

/// The start of an HTML block (CommonMark's kinds, simplified: a `<`
/// followed by a tag name, `/`, `!` or `?`).
fn is_html_start(line: &str) -> bool {
    let (columns, rest) = indent(line);
    let Some(after) = rest.strip_prefix('<') else {
        return false;
    };
    if columns > 3 {
        return false;
    }
    if after.starts_with(['!', '?']) {
        return true;
    }
    // A tag name, then a space, `>`, `/` or the end (so `<https://…>` and
    // `<a@b.example>` are autolinks, not HTML).
    let name = after.strip_prefix('/').unwrap_or(after);
    let length = name
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .count();
    length > 0
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name[length..]
            .chars()
            .next()
            .is_none_or(|c| c.is_whitespace() || c == '>' || c == '/')
}

fn is_quote(line: &str) -> bool {
    let (columns, rest) = indent(line);
    columns <= 3 && rest.starts_with('>')
}

/// `line` inside a block quote: without its `>` and one space.
fn unquote(line: &str) -> String {
    let (_, rest) = indent(line);
    let rest = &rest[1..];
    if let Some(after) = rest.strip_prefix(' ') {
        after.to_owned()
    } else if rest.starts_with('\t') {
        dedent(rest, 1)
    } else {
        rest.to_owned()
    }
}

/// Whether `line` starts a block that interrupts a paragraph.
fn interrupts_paragraph(line: &str) -> bool {
    fence(line).is_some()
        || atx_heading(line).is_some()
        || is_quote(line)
        || is_rule(line)
        || is_html_start(line)
        || list_marker(line).is_some_and(|(number, _, _)| {
            // A numbered item interrupts only from 1, and no empty item does.
            matches!(number, None | Some(1)) && !is_blank(&line[marker_end(line)..])
        })
}

/// Where a list marker ends in `line` (its byte offset).
fn marker_end(line: &str) -> usize {
    let start = line.len() - line.trim_start().len();
    let rest = &line[start..];
    let width = match rest.chars().next() {
        Some('-' | '+' | '*') => 1,
        _ => rest.chars().take_while(char::is_ascii_digit).count() + 1,
    };
    (start + width).min(line.len())
}

/// A link reference definition on `text`: label, destination, title.
fn definition(text: &str) -> Option<Definition> {
    let (columns, rest) = indent(text);
    if columns > 3 {
        return None;
    }
    let rest = rest.strip_prefix('[')?;
    let close = rest.find("]:")?;
    let label = &rest[..close];
    if label.trim().is_empty() || label.contains(['[', ']']) {
        return None;
    }
    let (dest, after) = link_destination(rest[close + 2..].trim_start())?;
    let after = after.trim();
    let title = if after.is_empty() {
        String::new()
    } else {
        let (title, tail) = link_title(after)?;
        if !tail.trim().is_empty() {
            return None;
        }
        title
    };
    Some((fold(label), dest, title))
}

/// Every definition in the document (a line of its own that is one),
/// first wins.
fn collect_definitions(lines: &[&str], links: &mut Vec<Definition>) {
    for line in lines {
        let line = line.trim_start_matches(['>', ' ']);
        if let Some(found) = definition(line)
            && !links.iter().any(|(label, ..)| *label == found.0)
        {
            links.push(found);
        }
    }
}

/// A label as it is matched: case and runs of spaces folded.
fn fold(label: &str) -> String {
    label
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// A link destination at the start of `text` (`<…>` or up to the first
/// space, with balanced parentheses), unescaped, and what follows.
fn link_destination(text: &str) -> Option<(String, &str)> {
    if let Some(rest) = text.strip_prefix('<') {
        let mut out = String::new();
        let mut chars = rest.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '>' => return Some((decode_entities(&out), &rest[i + 1..])),
                '<' | '\n' => return None,
                '\\' => match chars.next() {
                    Some((_, next)) if next.is_ascii_punctuation() => out.push(next),
                    Some((_, next)) => {
                        out.push('\\');
                        out.push(next);
                    }
                    None => out.push('\\'),
                },
                c => out.push(c),
            }
        }
        return None;
    }
    let mut depth = 0usize;
    let mut out = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        match c {
            c if c.is_ascii_whitespace() || c.is_ascii_control() => {
                return Some((decode_entities(&out), &text[i..]));
            }
            '(' => depth += 1,
            ')' if depth == 0 => return Some((decode_entities(&out), &text[i..])),
            ')' => depth -= 1,
            '\\' => {
                chars.next();
                match chars.peek() {
                    Some(&(_, next)) if next.is_ascii_punctuation() => {
                        out.push(next);
                        chars.next();
                    }
                    _ => out.push('\\'),
                }
                continue;
            }
            _ => {}
        }
        out.push(c);
        chars.next();
    }
    (depth == 0).then(|| (decode_entities(&out), ""))
}

/// A link title at the start of `text` (`"…"`, `'…'` or `(…)`), and what
/// follows.
fn link_title(text: &str) -> Option<(String, &str)> {
    let open = text.chars().next()?;
    let close = match open {
        '"' => '"',
        '\'' => '\'',
        '(' => ')',
        _ => return None,
    };
    let mut out = String::new();
    let mut chars = text.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some((_, next)) if next.is_ascii_punctuation() => out.push(next),
                Some((_, next)) => {
                    out.push('\\');
                    out.push(next);
                }
                None => out.push('\\'),
            }
        } else if c == close {
            return Some((decode_entities(&out), &text[i + 1..]));
        } else {
            out.push(c);
        }
    }
    None
}

impl Parser {
    /// The blocks of `lines`.
    fn blocks<S: AsRef<str>>(&self, lines: &[S]) -> Vec<Block> {
        let lines: Vec<&str> = lines.iter().map(AsRef::as_ref).collect();
        let mut blocks = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            if is_blank(line) {
                i += 1;
            } else if let Some((c, length, info)) = fence(line) {
                let (fence_indent, _) = indent(line);
                let language: String = info
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+' | '.'))
                    .take(32)
                    .collect();
                let mut text = String::new();
                i += 1;
                while i < lines.len() {
                    let (columns, rest) = indent(lines[i]);
                    let closing = rest.chars().take_while(|x| *x == c).count();
                    if columns <= 3 && closing >= length && rest[closing..].trim().is_empty() {
                        i += 1;
                        break;
                    }
                    text.push_str(&dedent(lines[i], fence_indent));
                    text.push('\n');
                    i += 1;
                }
                blocks.push(Block::Code { language, text });
            } else if indent(line).0 >= 4 {
                let mut end = i;
                let mut text_lines = Vec::new();
                while end < lines.len() && (is_blank(lines[end]) || indent(lines[end]).0 >= 4) {
                    text_lines.push(dedent(lines[end], 4));
                    end += 1;
                }
                while text_lines.last().is_some_and(|l| is_blank(l)) {
                    text_lines.pop();
                }
                let mut text = text_lines.join("\n");
                text.push('\n');
                blocks.push(Block::Code {
                    language: String::new(),
                    text,
                });
                i = end;
            } else if let Some((level, text)) = atx_heading(line) {
                blocks.push(Block::Heading(level, self.inlines(text)));
                i += 1;
            } else if is_rule(line) {
                blocks.push(Block::Rule);
                i += 1;
            } else if is_quote(line) {
                let mut inner = Vec::new();
                while i < lines.len() && is_quote(lines[i]) {
                    inner.push(unquote(lines[i]));
                    i += 1;
                }
                let callout = inner.first().and_then(|first| callout(first.trim()));
                if callout.is_some() {
                    inner.remove(0);
                }
                blocks.push(Block::Quote {
                    callout,
                    blocks: self.blocks(&inner),
                });
            } else if let Some((number, marker, _)) = list_marker(line) {
                i = self.list(&lines, i, number, marker, &mut blocks);
            } else if is_html_start(line) {
                let mut raw = Vec::new();
                while i < lines.len() && !is_blank(lines[i]) {
                    raw.push(lines[i]);
                    i += 1;
                }
                blocks.push(Block::Raw(raw.join("\n")));
            } else {
                i = self.paragraph(&lines, i, &mut blocks);
            }
        }
        blocks
    }

    /// A paragraph (or setext heading, or table) from `lines[start]`;
    /// answers the next line.
    fn paragraph(&self, lines: &[&str], start: usize, blocks: &mut Vec<Block>) -> usize {
        // A table: a header row, then its delimiter row.
        if let Some(alignments) = lines.get(start + 1).and_then(|l| delimiter_row(l)) {
            let head = split_row(lines[start]);
            if head.len() == alignments.len() && lines[start].contains('|') {
                let columns = head.len();
                let cells = |row: Vec<String>| -> Vec<Vec<Inline>> {
                    let mut row: Vec<_> =
                        row.iter().map(|cell| self.inlines(cell.trim())).collect();
                    row.resize(columns, Vec::new());
                    row
                };
                let mut i = start + 2;
                let mut rows = Vec::new();
                while i < lines.len() && !is_blank(lines[i]) && !interrupts_paragraph(lines[i]) {
                    rows.push(cells(split_row(lines[i])));
                    i += 1;
                }
                blocks.push(Block::Table {
                    alignments,
                    head: cells(head),
                    rows,
                });
                return i;
            }
        }
        let mut text: Vec<&str> = Vec::new();
        let mut i = start;
        while i < lines.len() && !is_blank(lines[i]) {
            let line = lines[i];
            if !text.is_empty() {
                let (columns, rest) = indent(line);
                let underline = rest.trim_end();
                if columns <= 3 && !underline.is_empty() {
                    let level = if underline.chars().all(|c| c == '=') {
                        Some(1)
                    } else if underline.chars().all(|c| c == '-') {
                        Some(2)
                    } else {
                        None
                    };
                    if let Some(level) = level {
                        self.finish_paragraph(&text, blocks, Some(level));
                        return i + 1;
                    }
                }
                if interrupts_paragraph(line) {
                    break;
                }
            }
            text.push(line);
            i += 1;
        }
        self.finish_paragraph(&text, blocks, None);
        i
    }

    /// `text` as a paragraph (or a heading of `level`), without its
    /// leading link reference definitions.
    fn finish_paragraph(&self, text: &[&str], blocks: &mut Vec<Block>, level: Option<u8>) {
        let mut rest = text;
        while let Some(first) = rest.first() {
            if definition(first).is_none() {
                break;
            }
            rest = &rest[1..];
        }
        if rest.is_empty() {
            return;
        }
        let joined = rest
            .iter()
            .map(|line| line.trim_start())
            .collect::<Vec<_>>()
            .join("\n");
        let inlines = self.inlines(joined.trim_end());
        blocks.push(match level {
            Some(level) => Block::Heading(level, inlines),
            None => Block::Paragraph(inlines),
        });
    }

    /// A list from `lines[start]`, whose first marker is `number`/`marker`;
    /// answers the next line.
    fn list(
        &self,
        lines: &[&str],
        start: usize,
        number: Option<u64>,
        marker: char,
        blocks: &mut Vec<Block>,
    ) -> usize {
        let mut items = Vec::new();
        let mut tight = true;
        let mut i = start;
        while i < lines.len() {
            let Some((_, this_marker, content)) = list_marker(lines[i]) else {
                break;
            };
            if this_marker != marker {
                break;
            }
            // The marker as spaces, then the content's columns off.
            let end = marker_end(lines[i]);
            let first = " ".repeat(end) + &lines[i][end..];
            let mut item = vec![dedent(&first, content)];
            if is_blank(&item[0]) {
                item[0].clear();
            }
            i += 1;
            let mut blank_before = false;
            while i < lines.len() {
                let line = lines[i];
                if is_blank(line) {
                    item.push(String::new());
                    blank_before = true;
                    i += 1;
                    continue;
                }
                if indent(line).0 >= content {
                    item.push(dedent(line, content));
                } else if !blank_before
                    && !interrupts_paragraph(line)
                    && list_marker(line).is_none()
                    && item
                        .last()
                        .is_some_and(|last| !is_blank(last) && fence(last).is_none())
                {
                    // A lazy continuation of the item's paragraph.
                    item.push(line.trim_start().to_owned());
                } else {
                    break;
                }
                blank_before = false;
                i += 1;
            }
            // Blank lines at the end belong between items (or after the
            // list): loose only if another item follows.
            let mut trailing_blank = false;
            while item.last().is_some_and(|l| is_blank(l)) {
                item.pop();
                trailing_blank = true;
            }
            let next_is_item =
                i < lines.len() && list_marker(lines[i]).is_some_and(|(_, m, _)| m == marker);
            if trailing_blank && next_is_item {
                tight = false;
            }
            let task = match item.first().and_then(|first| task_marker(first)) {
                Some((done, rest)) => {
                    item[0] = rest;
                    Some(done)
                }
                None => None,
            };
            let inner_blank = item.iter().skip(1).any(|l| is_blank(l));
            let mut parsed = self.blocks(&item);
            if inner_blank && parsed.len() > 1 {
                tight = false;
            }
            if let Some(done) = task {
                let mark = Inline::Text(if done { "\u{2611} " } else { "\u{2610} " }.to_owned());
                match parsed.first_mut() {
                    Some(Block::Paragraph(inlines)) => inlines.insert(0, mark),
                    _ => parsed.insert(0, Block::Paragraph(vec![mark])),
                }
            }
            items.push(parsed);
            if !next_is_item {
                break;
            }
        }
        blocks.push(Block::List {
            start: number,
            tight,
            items,
        });
        i
    }

    /// The inlines of `text`.
    fn inlines(&self, text: &str) -> Vec<Inline> {
        Inlines::new(self, text).parse()
    }
}

/// A GFM alert's first line (`[!NOTE]`): its classes.
fn callout(first: &str) -> Option<&'static str> {
    Some(match first.to_ascii_uppercase().as_str() {
        "[!NOTE]" => "callout note",
        "[!TIP]" => "callout tip",
        "[!IMPORTANT]" => "callout important",
        "[!WARNING]" => "callout warning",
        "[!CAUTION]" => "callout caution",
        _ => return None,
    })
}

/// A task list item's `[ ] ` or `[x] `: done, and the rest of the line.
fn task_marker(first: &str) -> Option<(bool, String)> {
    let rest = first.strip_prefix('[')?;
    let done = match rest.chars().next()? {
        ' ' => false,
        'x' | 'X' => true,
        _ => return None,
    };
    let rest = rest[1..].strip_prefix(']')?;
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    Some((done, rest.trim_start().to_owned()))
}

/// The named character references decoded (the ones people and models
/// write; any other `&name;` stays as typed), every numeric one too.
const ENTITIES: [(&str, &str); 32] = [
    ("amp", "&"),
    ("lt", "<"),
    ("gt", ">"),
    ("quot", "\""),
    ("apos", "'"),
    ("nbsp", "\u{a0}"),
    ("copy", "©"),
    ("reg", "®"),
    ("trade", "™"),
    ("hellip", "…"),
    ("mdash", "—"),
    ("ndash", "–"),
    ("lsquo", "‘"),
    ("rsquo", "’"),
    ("ldquo", "“"),
    ("rdquo", "”"),
    ("laquo", "«"),
    ("raquo", "»"),
    ("times", "×"),
    ("divide", "÷"),
    ("plusmn", "±"),
    ("deg", "°"),
    ("middot", "·"),
    ("bull", "•"),
    ("larr", "←"),
    ("rarr", "→"),
    ("uarr", "↑"),
    ("darr", "↓"),
    ("euro", "€"),
    ("pound", "£"),
    ("sect", "§"),
    ("para", "¶"),
];

/// The character reference at the start of `text` (after its `&`): what
/// it stands for and its length (with `&` and `;`).
fn entity(text: &str) -> Option<(String, usize)> {
    let end = text.get(1..)?.find(';')? + 1;
    let name = &text[1..end];
    if name.is_empty() || name.len() > 32 {
        return None;
    }
    let decoded = if let Some(number) = name.strip_prefix('#') {
        let value = match number.strip_prefix(['x', 'X']) {
            Some(hex) if !hex.is_empty() && hex.len() <= 6 => u32::from_str_radix(hex, 16).ok()?,
            Some(_) => return None,
            None if !number.is_empty() && number.len() <= 7 => number.parse().ok()?,
            None => return None,
        };
        let c = match value {
            0 => '\u{FFFD}',
            v => char::from_u32(v).unwrap_or('\u{FFFD}'),
        };
        c.to_string()
    } else {
        ENTITIES
            .iter()
            .find(|(entity, _)| *entity == name)?
            .1
            .to_owned()
    };
    Some((decoded, end + 1))
}

/// `text` with its character references decoded (for destinations and
/// titles).
fn decode_entities(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        match entity(&rest[at..]) {
            Some((decoded, length)) => {
                out.push_str(&decoded);
                rest = &rest[at + length..];
            }
            None => {
                out.push('&');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The `href` for a link, or `None` when it must not be a link.
///
/// Allowed: absolute `http://`, `https://` and `mailto:` URLs, checked on the
/// very characters the browser will read (after character references are
/// decoded). Any control character or whitespace is refused outright,
/// because browsers drop tabs and newlines inside a URL, which could turn
/// `java\tscript:` into a scheme. Email autolinks (`<a@b.example>`) get
/// their `mailto:` (`email`).
fn safe_href(dest: &str, email: bool) -> Option<String> {
    let dest = dest.trim_matches(|c: char| c == ' ' || c.is_ascii_control());
    if dest.is_empty() || dest.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return None;
    }
    if email {
        let href = format!("mailto:{dest}");
        return href.contains('@').then_some(href);
    }
    let lower = dest.to_ascii_lowercase();
    let allowed = ["http://", "https://", "mailto:"]
        .iter()
        .any(|scheme| lower.starts_with(scheme) && lower.len() > scheme.len());
    allowed.then(|| dest.to_owned())
}

/// A run of `*`, `_` or `~` that may open or close emphasis.
struct Delimiter {
    /// Where its text node is in `Inlines::out`.
    node: usize,
    c: char,
    /// Characters left in the run.
    count: usize,
    can_open: bool,
    can_close: bool,
}

/// The inline parser of one paragraph (or heading, or cell).
struct Inlines<'p, 't> {
    parser: &'p Parser,
    text: &'t str,
    out: Vec<Inline>,
    delimiters: Vec<Delimiter>,
    /// Open `[` or `![`: node index, delimiter stack depth, image.
    brackets: Vec<(usize, usize, bool)>,
}

impl<'p, 't> Inlines<'p, 't> {
    fn new(parser: &'p Parser, text: &'t str) -> Self {
        Self {
            parser,
            text,
            out: Vec::new(),
            delimiters: Vec::new(),
            brackets: Vec::new(),
        }
    }

    fn push_text(&mut self, text: &str) {
        // Onto the last text node, unless that is a delimiter run or a
        // bracket, which must stay nodes of their own.
        let last = self.out.len().wrapping_sub(1);
        let own = self.delimiters.iter().any(|d| d.node == last)
            || self.brackets.iter().any(|b| b.0 == last);
        match self.out.last_mut() {
            Some(Inline::Text(text_node)) if !own => text_node.push_str(text),
            _ => self.out.push(Inline::Text(text.to_owned())),
        }
    }

    fn parse(mut self) -> Vec<Inline> {
        let text = self.text;
        let mut i = 0;
        while i < text.len() {
            let rest = &text[i..];
            let c = rest.chars().next().expect("not at the end");
            match c {
                '\\' => {
                    let next = rest[1..].chars().next();
                    match next {
                        Some('\n') => {
                            self.out.push(Inline::Break);
                            i += 2;
                        }
                        Some(n) if n.is_ascii_punctuation() => {
                            self.push_text(&rest[1..2]);
                            i += 2;
                        }
                        _ => {
                            self.push_text("\\");
                            i += 1;
                        }
                    }
                }
                '`' => {
                    let run = rest.chars().take_while(|x| *x == '`').count();
                    match code_span(&rest[run..], run) {
                        Some((code, length)) => {
                            self.out.push(Inline::Code(code));
                            i += run + length;
                        }
                        None => {
                            self.push_text(&rest[..run]);
                            i += run;
                        }
                    }
                }
                '<' => match autolink(rest) {
                    Some((inline, length)) => {
                        self.out.push(inline);
                        i += length;
                    }
                    None => {
                        self.push_text("<");
                        i += 1;
                    }
                },
                '&' => match entity(rest) {
                    Some((decoded, length)) => {
                        self.push_text(&decoded);
                        i += length;
                    }
                    None => {
                        self.push_text("&");
                        i += 1;
                    }
                },
                '\n' => {
                    // Two spaces (or more) before it: a hard break.
                    let hard = text[..i].ends_with("  ");
                    if let Some(Inline::Text(last)) = self.out.last_mut() {
                        let kept = last.trim_end_matches(' ').len();
                        last.truncate(kept);
                    }
                    if hard {
                        self.out.push(Inline::Break);
                    } else {
                        self.push_text("\n");
                    }
                    i += 1;
                    i += text[i..].len() - text[i..].trim_start_matches(' ').len();
                }
                '*' | '_' | '~' => {
                    let run = rest.chars().take_while(|x| *x == c).count();
                    let before = text[..i].chars().next_back();
                    let after = rest[run..].chars().next();
                    let (can_open, can_close) = flanking(c, before, after);
                    // `~` strikes through with one or two, like GFM.
                    if c == '~' && run > 2 {
                        self.push_text(&rest[..run]);
                    } else {
                        self.out.push(Inline::Text(rest[..run].to_owned()));
                        self.delimiters.push(Delimiter {
                            node: self.out.len() - 1,
                            c,
                            count: run,
                            can_open,
                            can_close,
                        });
                    }
                    i += run;
                }
                '!' if rest[1..].starts_with('[') => {
                    self.out.push(Inline::Text("![".to_owned()));
                    self.brackets
                        .push((self.out.len() - 1, self.delimiters.len(), true));
                    i += 2;
                }
                '[' => {
                    self.out.push(Inline::Text("[".to_owned()));
                    self.brackets
                        .push((self.out.len() - 1, self.delimiters.len(), false));
                    i += 1;
                }
                ']' => {
                    i += 1 + self.close_bracket(i + 1);
                }
                _ => {
                    let end = rest
                        .find(['\\', '`', '<', '&', '\n', '*', '_', '~', '!', '[', ']'])
                        .filter(|end| *end > 0)
                        .unwrap_or(c.len_utf8());
                    self.push_text(&rest[..end]);
                    i += end;
                }
            }
        }
        let mut out = std::mem::take(&mut self.out);
        self.emphasis(&mut out, 0);
        merge_text(out)
    }

    /// A `]` at `after - 1`: a link or image if a destination or reference
    /// follows an open bracket; answers how many bytes after the `]` it
    /// used.
    fn close_bracket(&mut self, after: usize) -> usize {
        let Some((node, depth, image)) = self.brackets.pop() else {
            self.push_text("]");
            return 0;
        };
        let rest = &self.text[after..];
        let label_text = {
            let start = self.text[..after - 1]
                .rfind(if image { "![" } else { "[" })
                .map_or(0, |at| at + if image { 2 } else { 1 });
            &self.text[start.min(after - 1)..after - 1]
        };
        // `(dest "title")`, `[ref]`, `[]` or nothing (a shortcut reference).
        let mut target = None;
        let mut used = 0;
        if let Some(inner) = rest.strip_prefix('(')
            && let Some((dest, tail)) = link_destination(inner.trim_start())
        {
            let tail = tail.trim_start();
            let (title, tail) = link_title(tail).unwrap_or((String::new(), tail));
            if let Some(end) = tail.trim_start().strip_prefix(')') {
                used = rest.len() - end.len();
                target = Some((dest, title));
            }
        }
        if target.is_none() {
            let (label, length) = match rest.strip_prefix('[') {
                Some(inner) => match inner.find(']') {
                    Some(0) => (label_text.to_owned(), 2),
                    Some(end) => (inner[..end].to_owned(), end + 2),
                    None => (label_text.to_owned(), 0),
                },
                None => (label_text.to_owned(), 0),
            };
            let folded = fold(&label);
            if let Some((_, dest, title)) = self
                .parser
                .links
                .iter()
                .find(|(label, ..)| *label == folded)
            {
                target = Some((dest.clone(), title.clone()));
                used = length;
            }
        }
        let Some((dest, title)) = target else {
            self.push_text("]");
            return 0;
        };
        // Everything after the bracket's node becomes the link's text.
        let mut children: Vec<Inline> = self.out.split_off(node + 1);
        self.out.pop();
        let inner_delimiters: Vec<Delimiter> = self
            .delimiters
            .split_off(depth)
            .into_iter()
            .map(|mut d| {
                d.node -= node + 1;
                d
            })
            .collect();
        let saved = std::mem::replace(&mut self.delimiters, inner_delimiters);
        self.emphasis(&mut children, 0);
        self.delimiters = saved;
        if !image {
            // No links inside links: the outer `[`s are plain text now.
            self.brackets.retain(|b| b.2);
        }
        let href = safe_href(&dest, false);
        let children = if image {
            let mut described = vec![Inline::Text("[image: ".to_owned())];
            described.extend(children);
            described.push(Inline::Text("]".to_owned()));
            described
        } else {
            children
        };
        match href {
            Some(href) => self.out.push(Inline::Link {
                href,
                title,
                children: merge_text(children),
            }),
            None => self.out.extend(children),
        }
        used
    }

    /// Resolves the delimiter runs from `bottom` up into emphasis, strong
    /// and strikethrough nodes within `out` (CommonMark's "process
    /// emphasis", without the multiple-of-3 rule).
    fn emphasis(&mut self, out: &mut Vec<Inline>, bottom: usize) {
        let mut closer = bottom;
        while closer < self.delimiters.len() {
            if !self.delimiters[closer].can_close {
                closer += 1;
                continue;
            }
            let c = self.delimiters[closer].c;
            let opener = (bottom..closer)
                .rev()
                .find(|&o| self.delimiters[o].c == c && self.delimiters[o].can_open);
            let Some(opener) = opener else {
                closer += 1;
                continue;
            };
            let strong = c != '~'
                && self.delimiters[opener].count >= 2
                && self.delimiters[closer].count >= 2;
            let used = if c == '~' {
                if self.delimiters[opener].count != self.delimiters[closer].count {
                    closer += 1;
                    continue;
                }
                self.delimiters[opener].count
            } else if strong {
                2
            } else {
                1
            };
            let (open_node, close_node) =
                (self.delimiters[opener].node, self.delimiters[closer].node);
            // The nodes between become the new node's children.
            let children: Vec<Inline> = out.drain(open_node + 1..close_node).collect();
            let removed = children.len();
            let node = match (c, strong) {
                ('~', _) => Inline::Strikethrough(merge_text(children)),
                (_, true) => Inline::Strong(merge_text(children)),
                _ => Inline::Emphasis(merge_text(children)),
            };
            out.insert(open_node + 1, node);
            let shift = removed as isize - 1;
            // Delimiters between opener and closer are gone.
            self.delimiters.drain(opener + 1..closer);
            let closer_at = opener + 1;
            for d in &mut self.delimiters[closer_at..] {
                d.node = (d.node as isize - shift) as usize;
            }
            for (index, at) in [(opener, open_node), (closer_at, open_node + 2)] {
                let d = &mut self.delimiters[index];
                d.count -= used;
                if let Some(Inline::Text(run)) = out.get_mut(at) {
                    run.truncate(d.count);
                }
            }
            let mut next = closer_at;
            if self.delimiters[closer_at].count == 0 {
                self.delimiters.remove(closer_at);
            } else {
                next = closer_at;
            }
            if self.delimiters[opener].count == 0 {
                self.delimiters.remove(opener);
                next -= 1;
            }
            closer = next;
        }
        self.delimiters.truncate(bottom);
        out.retain(|inline| !matches!(inline, Inline::Text(t) if t.is_empty()));
    }
}

/// Whether a run of `c` between `before` and `after` may open and close.
fn flanking(c: char, before: Option<char>, after: Option<char>) -> (bool, bool) {
    let space = |x: Option<char>| x.is_none_or(char::is_whitespace);
    let punct = |x: Option<char>| {
        x.is_some_and(|x| x.is_ascii_punctuation() || (!x.is_alphanumeric() && !x.is_whitespace()))
    };
    let left = !space(after) && (!punct(after) || space(before) || punct(before));
    let right = !space(before) && (!punct(before) || space(after) || punct(after));
    if c == '_' {
        (
            left && (!right || punct(before)),
            right && (!left || punct(after)),
        )
    } else {
        (left, right)
    }
}

/// A code span after a run of `run` backticks: its content and the bytes
/// up to and including the closing run.
fn code_span(text: &str, run: usize) -> Option<(String, usize)> {
    let mut i = 0;
    while let Some(at) = text[i..].find('`') {
        let start = i + at;
        let length = text[start..].chars().take_while(|c| *c == '`').count();
        if length == run {
            let code = text[..start].replace('\n', " ");
            let code = if code.len() > 1
                && code.starts_with(' ')
                && code.ends_with(' ')
                && !code.trim().is_empty()
            {
                code[1..code.len() - 1].to_owned()
            } else {
                code
            };
            return Some((code, start + length));
        }
        i = start + length;
    }
    None
}

/// An autolink at the start of `text` (`<scheme:…>` or `<email>`), as a
/// link when allowed, else its text; and its length.
fn autolink(text: &str) -> Option<(Inline, usize)> {
    let end = text.find('>')?;
    let inner = &text[1..end];
    if inner.is_empty() || inner.contains(['<', ' ', '\n']) {
        return None;
    }
    let scheme = inner.split_once(':').map(|(scheme, _)| scheme);
    let is_uri = scheme.is_some_and(|scheme| {
        (2..=32).contains(&scheme.len())
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
    });
    let is_email = !is_uri
        && inner.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && !domain.is_empty()
                && !local.contains('\\')
                && domain
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
        });
    if !is_uri && !is_email {
        return None;
    }
    let text_node = vec![Inline::Text(inner.to_owned())];
    let inline = match safe_href(inner, is_email) {
        Some(href) => Inline::Link {
            href,
            title: String::new(),
            children: text_node,
        },
        None => Inline::Text(inner.to_owned()),
    };
    Some((inline, end + 1))
}

/// Adjacent text nodes as one.
fn merge_text(inlines: Vec<Inline>) -> Vec<Inline> {
    let mut out: Vec<Inline> = Vec::with_capacity(inlines.len());
    for inline in inlines {
        match (out.last_mut(), inline) {
            (_, Inline::Text(t)) if t.is_empty() => {}
            (Some(Inline::Text(last)), Inline::Text(t)) => last.push_str(&t),
            (_, inline) => out.push(inline),
        }
    }
    out
}

#[cfg(test)]
mod tests;
