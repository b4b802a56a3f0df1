//! Markdown → HTML for the assistant's answers, safe to put into `innerHTML`.
//!
//! The text comes from a language model, which repeats whatever a tool or a
//! web page told it: treat it as hostile. `pulldown-cmark` only parses (its
//! HTML writer is not compiled in); this module writes every tag itself and
//! escapes every piece of text, so:
//!
//! - raw HTML in the source (`<script>`, `<img onerror=…>`) is shown as text,
//!   never parsed by the browser;
//! - a link becomes an `<a>` only when its destination is an absolute
//!   `http:`, `https:` or `mailto:` URL, and then opens in a new tab with
//!   `rel="noopener noreferrer"`; anything else (`javascript:`, `data:`,
//!   relative paths) keeps its text and loses the link;
//! - images are never loaded: an image becomes a link to it (same rule) or
//!   its description as text;
//! - no element gets a `style`, `id` or event attribute (the CSP would block
//!   styles anyway); table alignment is a class.
//!
//! It deliberately knows nothing about the DOM, so it is unit-tested on the
//! host: `cargo test -p countersign-web --lib`.

use pulldown_cmark::{
    Alignment, BlockQuoteKind, CodeBlockKind, Event, HeadingLevel, LinkType, Options, Parser, Tag,
    TagEnd,
};

/// Renders `source` (CommonMark plus tables, strikethrough and task lists)
/// as HTML in which only the tags this module writes can appear.
pub fn render_markdown(source: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_GFM;
    let mut writer = Writer::default();
    for event in Parser::new_ext(source, options) {
        writer.event(event);
    }
    writer.out
}

/// What an open link or image turned into, so its end tag matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opened {
    /// An `<a>` was written.
    Anchor,
    /// The destination was refused: the content stays, as plain text.
    Nothing,
}

#[derive(Debug, Default)]
struct Writer {
    out: String,
    /// One entry per open link or image.
    links: Vec<Opened>,
    /// Column alignments of the table being written.
    alignments: Vec<Alignment>,
    /// Index of the next cell in the current row.
    cell: usize,
    in_table_head: bool,
}

impl Writer {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => escape_into(&mut self.out, &text),
            Event::Code(code) => {
                self.out.push_str("<code>");
                escape_into(&mut self.out, &code);
                self.out.push_str("</code>");
            }
            // Math is not enabled; should it ever arrive, it is text.
            Event::InlineMath(text) | Event::DisplayMath(text) => {
                escape_into(&mut self.out, &text);
            }
            // Raw HTML is shown as what it is: text.
            Event::Html(html) | Event::InlineHtml(html) => escape_into(&mut self.out, &html),
            // Footnotes are not enabled; keep the reference readable.
            Event::FootnoteReference(label) => {
                self.out.push('[');
                escape_into(&mut self.out, &label);
                self.out.push(']');
            }
            Event::SoftBreak => self.out.push('\n'),
            Event::HardBreak => self.out.push_str("<br>\n"),
            Event::Rule => self.out.push_str("<hr>\n"),
            Event::TaskListMarker(done) => {
                self.out
                    .push_str(if done { "\u{2611} " } else { "\u{2610} " });
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.out.push_str("<p>"),
            // Heading ids, classes and attributes are not enabled, and would
            // be dropped anyway.
            Tag::Heading { level, .. } => {
                self.out.push('<');
                self.out.push_str(heading(level));
                self.out.push('>');
            }
            Tag::BlockQuote(kind) => match kind.map(quote_class) {
                Some(class) => {
                    self.out.push_str("<blockquote class=\"");
                    self.out.push_str(class);
                    self.out.push_str("\">\n");
                }
                None => self.out.push_str("<blockquote>\n"),
            },
            Tag::CodeBlock(kind) => {
                let language = match &kind {
                    CodeBlockKind::Fenced(info) => info.split_whitespace().next().unwrap_or(""),
                    CodeBlockKind::Indented => "",
                };
                // The class is only ever `language-` plus harmless characters.
                let language: String = language
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+' | '.'))
                    .take(32)
                    .collect();
                if language.is_empty() {
                    self.out.push_str("<pre><code>");
                } else {
                    self.out.push_str("<pre><code class=\"language-");
                    self.out.push_str(&language);
                    self.out.push_str("\">");
                }
            }
            // Its contents arrive as `Html` events, which are escaped; the
            // paragraph keeps them apart from what follows.
            Tag::HtmlBlock => self.out.push_str("<p class=\"md-raw\">"),
            Tag::List(Some(1)) => self.out.push_str("<ol>\n"),
            Tag::List(Some(start)) => {
                self.out.push_str("<ol start=\"");
                self.out.push_str(&start.to_string());
                self.out.push_str("\">\n");
            }
            Tag::List(None) => self.out.push_str("<ul>\n"),
            Tag::Item => self.out.push_str("<li>"),
            Tag::FootnoteDefinition(label) => {
                self.out.push_str("<div class=\"footnote\">[");
                escape_into(&mut self.out, &label);
                self.out.push_str("] ");
            }
            Tag::DefinitionList => self.out.push_str("<dl>\n"),
            Tag::DefinitionListTitle => self.out.push_str("<dt>"),
            Tag::DefinitionListDefinition => self.out.push_str("<dd>"),
            Tag::Table(alignments) => {
                self.alignments = alignments;
                self.out.push_str("<table>\n");
            }
            Tag::TableHead => {
                self.in_table_head = true;
                self.cell = 0;
                self.out.push_str("<thead>\n<tr>");
            }
            Tag::TableRow => {
                self.cell = 0;
                self.out.push_str("<tr>");
            }
            Tag::TableCell => {
                self.out
                    .push_str(if self.in_table_head { "<th" } else { "<td" });
                if let Some(class) = self.alignments.get(self.cell).and_then(|a| align_class(*a)) {
                    self.out.push_str(" class=\"");
                    self.out.push_str(class);
                    self.out.push('"');
                }
                self.out.push('>');
                self.cell += 1;
            }
            Tag::Emphasis => self.out.push_str("<em>"),
            Tag::Strong => self.out.push_str("<strong>"),
            Tag::Strikethrough => self.out.push_str("<del>"),
            Tag::Superscript => self.out.push_str("<sup>"),
            Tag::Subscript => self.out.push_str("<sub>"),
            Tag::Link {
                link_type,
                dest_url,
                title,
                ..
            } => {
                let opened = match safe_href(link_type, &dest_url) {
                    Some(href) => {
                        self.open_anchor(&href, &title);
                        Opened::Anchor
                    }
                    None => Opened::Nothing,
                };
                self.links.push(opened);
            }
            // Never load an image (tracking pixels, data: URLs): link to it,
            // showing its description, or just show the description.
            Tag::Image {
                link_type,
                dest_url,
                title,
                ..
            } => {
                let opened = match safe_href(link_type, &dest_url) {
                    Some(href) => {
                        self.open_anchor(&href, &title);
                        Opened::Anchor
                    }
                    None => Opened::Nothing,
                };
                self.out.push_str("[image: ");
                self.links.push(opened);
            }
            // Front matter is not enabled; if it were, it would be text.
            Tag::MetadataBlock(_) => self.out.push_str("<pre><code>"),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => self.out.push_str("</p>\n"),
            TagEnd::Heading(level) => {
                self.out.push_str("</");
                self.out.push_str(heading(level));
                self.out.push_str(">\n");
            }
            TagEnd::BlockQuote(_) => self.out.push_str("</blockquote>\n"),
            TagEnd::CodeBlock | TagEnd::MetadataBlock(_) => self.out.push_str("</code></pre>\n"),
            TagEnd::List(true) => self.out.push_str("</ol>\n"),
            TagEnd::List(false) => self.out.push_str("</ul>\n"),
            TagEnd::Item => self.out.push_str("</li>\n"),
            TagEnd::FootnoteDefinition => self.out.push_str("</div>\n"),
            TagEnd::DefinitionList => self.out.push_str("</dl>\n"),
            TagEnd::DefinitionListTitle => self.out.push_str("</dt>\n"),
            TagEnd::DefinitionListDefinition => self.out.push_str("</dd>\n"),
            TagEnd::Table => {
                self.out.push_str("</tbody>\n</table>\n");
                self.alignments.clear();
            }
            TagEnd::TableHead => {
                self.in_table_head = false;
                self.out.push_str("</tr>\n</thead>\n<tbody>\n");
            }
            TagEnd::TableRow => self.out.push_str("</tr>\n"),
            TagEnd::TableCell => {
                self.out
                    .push_str(if self.in_table_head { "</th>" } else { "</td>" });
            }
            TagEnd::Emphasis => self.out.push_str("</em>"),
            TagEnd::Strong => self.out.push_str("</strong>"),
            TagEnd::Strikethrough => self.out.push_str("</del>"),
            TagEnd::Superscript => self.out.push_str("</sup>"),
            TagEnd::Subscript => self.out.push_str("</sub>"),
            TagEnd::Link => self.close_link(),
            TagEnd::Image => {
                self.out.push(']');
                self.close_link();
            }
        }
    }

    fn open_anchor(&mut self, href: &str, title: &str) {
        self.out.push_str("<a href=\"");
        escape_into(&mut self.out, href);
        self.out.push('"');
        if !title.is_empty() {
            self.out.push_str(" title=\"");
            escape_into(&mut self.out, title);
            self.out.push('"');
        }
        self.out
            .push_str(" rel=\"noopener noreferrer\" target=\"_blank\">");
    }

    fn close_link(&mut self) {
        if self.links.pop() == Some(Opened::Anchor) {
            self.out.push_str("</a>");
        }
    }
}

/// The `href` for a link, or `None` when it must not be a link.
///
/// Allowed: absolute `http://`, `https://` and `mailto:` URLs, checked on the
/// very characters the browser will parse (after the parser decoded entities
/// and before we escape them again). Any control character or whitespace is
/// refused outright, because browsers drop tabs and newlines inside a URL,
/// which could turn `java\tscript:` into a scheme. Email autolinks
/// (`<a@b.example>`) get their `mailto:`.
fn safe_href(link_type: LinkType, dest: &str) -> Option<String> {
    let dest = dest.trim_matches(|c: char| c == ' ' || c.is_ascii_control());
    if dest.is_empty() || dest.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return None;
    }
    if link_type == LinkType::Email {
        let href = format!("mailto:{dest}");
        return href.contains('@').then_some(href);
    }
    let lower = dest.to_ascii_lowercase();
    let allowed = ["http://", "https://", "mailto:"]
        .iter()
        .any(|scheme| lower.starts_with(scheme) && lower.len() > scheme.len());
    allowed.then(|| dest.to_owned())
}

fn heading(level: HeadingLevel) -> &'static str {
    match level {
        HeadingLevel::H1 => "h1",
        HeadingLevel::H2 => "h2",
        HeadingLevel::H3 => "h3",
        HeadingLevel::H4 => "h4",
        HeadingLevel::H5 => "h5",
        HeadingLevel::H6 => "h6",
    }
}

fn quote_class(kind: BlockQuoteKind) -> &'static str {
    match kind {
        BlockQuoteKind::Note => "callout note",
        BlockQuoteKind::Tip => "callout tip",
        BlockQuoteKind::Important => "callout important",
        BlockQuoteKind::Warning => "callout warning",
        BlockQuoteKind::Caution => "callout caution",
    }
}

fn align_class(alignment: Alignment) -> Option<&'static str> {
    match alignment {
        Alignment::None => None,
        Alignment::Left => Some("align-left"),
        Alignment::Center => Some("align-center"),
        Alignment::Right => Some("align-right"),
    }
}

/// Appends `text` with the five characters that matter in HTML text and in
/// quoted attribute values escaped.
fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::render_markdown;

    const TAGS: [&str; 31] = [
        "p",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "blockquote",
        "pre",
        "code",
        "ol",
        "ul",
        "li",
        "div",
        "dl",
        "dt",
        "dd",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "em",
        "strong",
        "del",
        "sup",
        "sub",
        "a",
        "br",
        "hr",
    ];
    const ATTRIBUTES: [&str; 6] = ["href", "title", "rel", "target", "class", "start"];

    /// Reads the output as a browser would and checks it: only known tags,
    /// only known attributes (so no `on…` handler, `style` or `src`), every
    /// `href` an http(s)/mailto URL, and text free of raw `<`, `>` or `"`.
    fn check(html: &str) -> Result<(), String> {
        let mut rest = html;
        while let Some(open) = rest.find('<') {
            let text = &rest[..open];
            if text.contains('>') || text.contains('"') {
                return Err(format!("raw markup character in text {text:?}"));
            }
            let close = rest[open..]
                .find('>')
                .ok_or_else(|| format!("unclosed tag in {rest:?}"))?;
            let tag = &rest[open + 1..open + close];
            rest = &rest[open + close + 1..];

            let tag = tag.strip_prefix('/').unwrap_or(tag);
            let (name, mut attributes) = tag.split_once(' ').unwrap_or((tag, ""));
            if !TAGS.contains(&name) {
                return Err(format!("unexpected tag <{name}>"));
            }
            while !attributes.is_empty() {
                let (attribute, after) = attributes
                    .split_once("=\"")
                    .ok_or_else(|| format!("attribute without a quoted value in <{tag}>"))?;
                let (value, after) = after
                    .split_once('"')
                    .ok_or_else(|| format!("unterminated value in <{tag}>"))?;
                if !ATTRIBUTES.contains(&attribute) {
                    return Err(format!("unexpected attribute {attribute:?} in <{tag}>"));
                }
                if attribute == "href" {
                    let lower = value.to_ascii_lowercase();
                    if !["http://", "https://", "mailto:"]
                        .iter()
                        .any(|s| lower.starts_with(s))
                    {
                        return Err(format!("unsafe href {value:?}"));
                    }
                }
                attributes = after.strip_prefix(' ').unwrap_or(after);
            }
        }
        if rest.contains('>') || rest.contains('"') {
            return Err(format!("raw markup character in text {rest:?}"));
        }
        Ok(())
    }

    fn assert_safe(source: &str) -> String {
        let html = render_markdown(source);
        if let Err(problem) = check(&html) {
            panic!("{problem}: {html:?} (source {source:?})");
        }
        html
    }

    #[test]
    fn ordinary_markdown_becomes_the_expected_html() {
        let cases = [
            (
                "Hello **world**",
                "<p>Hello <strong>world</strong></p>\n",
                "strong",
            ),
            (
                "*a* and `b<c`",
                "<p><em>a</em> and <code>b&lt;c</code></p>\n",
                "emphasis and code",
            ),
            ("# Title", "<h1>Title</h1>\n", "heading"),
            (
                "- one\n- two",
                "<ul>\n<li>one</li>\n<li>two</li>\n</ul>\n",
                "bullet list",
            ),
            (
                "3. three",
                "<ol start=\"3\">\n<li>three</li>\n</ol>\n",
                "numbered list from 3",
            ),
            (
                "```rust\nlet x = 1 < 2;\n```",
                "<pre><code class=\"language-rust\">let x = 1 &lt; 2;\n</code></pre>\n",
                "fenced code",
            ),
            ("~~gone~~", "<p><del>gone</del></p>\n", "strikethrough"),
            ("a  \nb", "<p>a<br>\nb</p>\n", "hard break"),
            (
                "> quoted",
                "<blockquote>\n<p>quoted</p>\n</blockquote>\n",
                "block quote",
            ),
            (
                "- [x] done",
                "<ul>\n<li>\u{2611} done</li>\n</ul>\n",
                "task list",
            ),
        ];
        for (source, expected, what) in cases {
            assert_eq!(assert_safe(source), expected, "{what}");
        }
    }

    #[test]
    fn tables_get_alignment_classes_not_styles() {
        let html = assert_safe("| a | b |\n|:--|--:|\n| 1 | 2 |");
        assert!(html.contains("<th class=\"align-left\">a</th>"), "{html}");
        assert!(html.contains("<td class=\"align-right\">2</td>"), "{html}");
        assert!(html.contains("<tbody>"), "{html}");
    }

    #[test]
    fn raw_html_is_shown_as_text() {
        let cases = [
            (
                "<script>alert(1)</script>",
                "&lt;script&gt;alert(1)&lt;/script&gt;",
                "script block",
            ),
            (
                "Hi <script>alert(1)</script> there",
                "&lt;script&gt;",
                "inline script",
            ),
            (
                "<img src=x onerror=alert(1)>",
                "&lt;img src=x onerror=alert(1)&gt;",
                "img onerror block",
            ),
            (
                "text <img src=x onerror=alert(1)>",
                "&lt;img src=x onerror=alert(1)&gt;",
                "img onerror inline",
            ),
            (
                "<iframe src=\"https://evil.example\"></iframe>",
                "&lt;iframe",
                "iframe",
            ),
            (
                "<a href=\"javascript:alert(1)\">x</a>",
                "&lt;a href=&quot;javascript:alert(1)&quot;&gt;",
                "raw anchor",
            ),
            (
                "<style>body{display:none}</style>",
                "&lt;style&gt;",
                "style",
            ),
            (
                "<svg onload=alert(1)>",
                "&lt;svg onload=alert(1)&gt;",
                "svg",
            ),
            ("<!-- comment -->", "&lt;!-- comment --&gt;", "comment"),
        ];
        for (source, expected, what) in cases {
            let html = assert_safe(source);
            assert!(html.contains(expected), "{what}: {html:?}");
        }
    }

    #[test]
    fn only_http_https_and_mailto_links_become_links() {
        let cases = [
            (
                "[x](https://example.com/a?b=1&c=2)",
                Some("https://example.com/a?b=1&amp;c=2"),
                "https",
            ),
            (
                "[x](http://example.com)",
                Some("http://example.com"),
                "http",
            ),
            (
                "[x](HTTPS://EXAMPLE.COM)",
                Some("HTTPS://EXAMPLE.COM"),
                "upper-case scheme",
            ),
            (
                "[x](mailto:a@example.com)",
                Some("mailto:a@example.com"),
                "mailto",
            ),
            (
                "<https://example.com>",
                Some("https://example.com"),
                "URL autolink",
            ),
            (
                "<a@example.com>",
                Some("mailto:a@example.com"),
                "email autolink",
            ),
            ("[x](javascript:alert(1))", None, "javascript"),
            ("[x](JaVaScRiPt:alert(1))", None, "mixed-case javascript"),
            ("[x]( javascript:alert(1))", None, "leading space"),
            (
                "[x](<java\tscript:alert(1)>)",
                None,
                "tab inside the scheme",
            ),
            (
                "[x](&#106;avascript:alert(1))",
                None,
                "entity-encoded javascript",
            ),
            ("[x](java&#x09;script:alert(1))", None, "entity-encoded tab"),
            ("[x](vbscript:msgbox(1))", None, "vbscript"),
            (
                "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
                None,
                "data URL",
            ),
            (
                "[x](DATA:text/html,<script>alert(1)</script>)",
                None,
                "upper-case data URL",
            ),
            ("[x](file:///etc/passwd)", None, "file"),
            ("[x](/relative/path)", None, "relative path"),
            ("[x](//evil.example)", None, "protocol-relative"),
            ("[x](#fragment)", None, "fragment"),
            ("[x](https:)", None, "scheme only"),
            ("<javascript:alert(1)>", None, "javascript autolink"),
            (
                "<JAVASCRIPT:alert(1)>",
                None,
                "upper-case javascript autolink",
            ),
            ("[x][r]\n\n[r]: javascript:alert(1)", None, "reference link"),
        ];
        for (source, href, what) in cases {
            let html = assert_safe(source);
            match href {
                Some(href) => assert!(
                    html.contains(&format!(
                        "<a href=\"{href}\" rel=\"noopener noreferrer\" target=\"_blank\">"
                    )),
                    "{what}: {html:?}"
                ),
                None => assert!(!html.contains("<a "), "{what} must not be a link: {html:?}"),
            }
        }
    }

    #[test]
    fn a_refused_link_keeps_its_text() {
        let html = assert_safe("see [the docs](javascript:alert(1)) now");
        assert_eq!(html, "<p>see the docs now</p>\n");
    }

    #[test]
    fn link_titles_and_urls_cannot_break_out_of_the_attribute() {
        let html = assert_safe("[x](https://example.com/\"onmouseover=alert(1) \"t\\\"itle\")");
        assert!(!html.contains("\" onmouseover"), "{html}");
        let html = assert_safe("[x](<https://example.com/\"><script>alert(1)</script>>)");
        assert!(!html.contains("<script"), "{html}");
        let html = assert_safe("[x](https://example.com \"a\\\" onclick=\\\"alert(1)\")");
        assert!(
            html.contains("title=\"a&quot; onclick=&quot;alert(1)\""),
            "{html}"
        );
    }

    #[test]
    fn images_are_never_loaded() {
        let html = assert_safe("![logo](https://example.com/logo.png)");
        assert_eq!(
            html,
            "<p><a href=\"https://example.com/logo.png\" rel=\"noopener noreferrer\" target=\"_blank\">[image: logo]</a></p>\n"
        );
        let html = assert_safe("![x](data:image/svg+xml;base64,PHN2Zz4=)");
        assert_eq!(html, "<p>[image: x]</p>\n");
        let html = assert_safe("![x](javascript:alert(1))");
        assert_eq!(html, "<p>[image: x]</p>\n");
    }

    #[test]
    fn code_block_languages_cannot_inject_attributes() {
        let html = assert_safe("```\"><script>alert(1)</script>\n code\n```");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("\"><"), "{html}");
    }

    #[test]
    fn unfinished_markdown_while_streaming_is_still_safe() {
        for source in [
            "[x](javascript:al",
            "<scr",
            "<img src=x one",
            "```\n<script>",
            "**bold",
            "| a |\n|--",
            "[x](https://exa",
        ] {
            assert_safe(source);
        }
    }

    #[test]
    fn quotes_and_ampersands_in_text_are_escaped() {
        assert_eq!(
            render_markdown("Tom & \"Jerry\" <3 'x'"),
            "<p>Tom &amp; &quot;Jerry&quot; &lt;3 &#39;x&#39;</p>\n"
        );
    }
}
