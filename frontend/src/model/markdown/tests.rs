//! The parser's tests, on HTML written from its tree the way the DOM
//! builder (`components/markdown.rs`) draws it: the same tags, attributes
//! and text, so the checks read like the page. (The HTML is for the tests
//! only; the page never parses any.)

use super::{Block, Inline, parse_markdown};

/// The tree as the HTML a browser would have built the same DOM from.
fn render_markdown(source: &str) -> String {
    let mut out = String::new();
    blocks(&mut out, &parse_markdown(source), false);
    out
}

fn blocks(out: &mut String, list: &[Block], tight: bool) {
    for block in list {
        match block {
            Block::Paragraph(inlines) if tight => inline_all(out, inlines),
            Block::Paragraph(inlines) => {
                out.push_str("<p>");
                inline_all(out, inlines);
                out.push_str("</p>\n");
            }
            Block::Heading(level, inlines) => {
                out.push_str(&format!("<h{level}>"));
                inline_all(out, inlines);
                out.push_str(&format!("</h{level}>\n"));
            }
            Block::Code { language, text } => {
                if language.is_empty() {
                    out.push_str("<pre><code>");
                } else {
                    out.push_str(&format!("<pre><code class=\"language-{language}\">"));
                }
                escape_into(out, text);
                out.push_str("</code></pre>\n");
            }
            Block::Quote {
                callout,
                blocks: inner,
            } => {
                match callout {
                    Some(class) => out.push_str(&format!("<blockquote class=\"{class}\">\n")),
                    None => out.push_str("<blockquote>\n"),
                }
                blocks(out, inner, false);
                out.push_str("</blockquote>\n");
            }
            Block::List {
                start,
                tight,
                items,
            } => {
                match start {
                    Some(1) => out.push_str("<ol>\n"),
                    Some(n) => out.push_str(&format!("<ol start=\"{n}\">\n")),
                    None => out.push_str("<ul>\n"),
                }
                for item in items {
                    out.push_str("<li>");
                    blocks(out, item, *tight);
                    out.push_str("</li>\n");
                }
                out.push_str(if start.is_some() {
                    "</ol>\n"
                } else {
                    "</ul>\n"
                });
            }
            Block::Table {
                alignments,
                head,
                rows,
            } => {
                out.push_str("<table>\n<thead>\n<tr>");
                cells(out, "th", alignments, head);
                out.push_str("</tr>\n</thead>\n<tbody>\n");
                for row in rows {
                    out.push_str("<tr>");
                    cells(out, "td", alignments, row);
                    out.push_str("</tr>\n");
                }
                out.push_str("</tbody>\n</table>\n");
            }
            Block::Rule => out.push_str("<hr>\n"),
            Block::Raw(text) => {
                out.push_str("<p class=\"md-raw\">");
                escape_into(out, text);
                out.push_str("</p>\n");
            }
        }
    }
}

fn cells(out: &mut String, tag: &str, alignments: &[Option<&str>], row: &[Vec<Inline>]) {
    for (cell, alignment) in row.iter().zip(alignments) {
        match alignment {
            Some(class) => out.push_str(&format!("<{tag} class=\"{class}\">")),
            None => out.push_str(&format!("<{tag}>")),
        }
        inline_all(out, cell);
        out.push_str(&format!("</{tag}>"));
    }
}

fn inline_all(out: &mut String, inlines: &[Inline]) {
    for inline in inlines {
        match inline {
            Inline::Text(text) => escape_into(out, text),
            Inline::Code(code) => {
                out.push_str("<code>");
                escape_into(out, code);
                out.push_str("</code>");
            }
            Inline::Emphasis(inner) => wrap(out, "em", inner),
            Inline::Strong(inner) => wrap(out, "strong", inner),
            Inline::Strikethrough(inner) => wrap(out, "del", inner),
            Inline::Link {
                href,
                title,
                children,
            } => {
                out.push_str("<a href=\"");
                escape_into(out, href);
                out.push('"');
                if !title.is_empty() {
                    out.push_str(" title=\"");
                    escape_into(out, title);
                    out.push('"');
                }
                out.push_str(" rel=\"noopener noreferrer\" target=\"_blank\">");
                inline_all(out, children);
                out.push_str("</a>");
            }
            Inline::Break => out.push_str("<br>\n"),
        }
    }
}

fn wrap(out: &mut String, tag: &str, inner: &[Inline]) {
    out.push_str(&format!("<{tag}>"));
    inline_all(out, inner);
    out.push_str(&format!("</{tag}>"));
}

/// The five characters that matter in HTML text and quoted attributes.
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

#[test]
fn the_blocks_a_model_writes_come_out_as_before() {
    let cases = [
        (
            "Title\n=====\n\nSub\n---",
            "<h1>Title</h1>\n<h2>Sub</h2>\n",
            "setext headings",
        ),
        ("## Closed ##", "<h2>Closed</h2>\n", "closing hashes"),
        (
            "#5 not a heading",
            "<p>#5 not a heading</p>\n",
            "no space after #",
        ),
        ("a\n\n---\n\nb", "<p>a</p>\n<hr>\n<p>b</p>\n", "rule"),
        (
            "    let x;\n    y",
            "<pre><code>let x;\ny\n</code></pre>\n",
            "indented code",
        ),
        (
            "~~~\n```\n~~~",
            "<pre><code>```\n</code></pre>\n",
            "tilde fence keeps backticks",
        ),
        (
            "```\nunclosed",
            "<pre><code>unclosed\n</code></pre>\n",
            "unclosed fence runs to the end",
        ),
        (
            "- a\n  - b\n  - c\n- d",
            "<ul>\n<li>a<ul>\n<li>b</li>\n<li>c</li>\n</ul>\n</li>\n<li>d</li>\n</ul>\n",
            "nested list",
        ),
        (
            "1. a\n\n2. b",
            "<ol>\n<li><p>a</p>\n</li>\n<li><p>b</p>\n</li>\n</ol>\n",
            "loose list",
        ),
        (
            "1) a\n2) b",
            "<ol>\n<li>a</li>\n<li>b</li>\n</ol>\n",
            "parenthesis markers",
        ),
        (
            "- [ ] todo\n- [X] done",
            "<ul>\n<li>\u{2610} todo</li>\n<li>\u{2611} done</li>\n</ul>\n",
            "task list",
        ),
        (
            "- one\nlazy",
            "<ul>\n<li>one\nlazy</li>\n</ul>\n",
            "lazy continuation",
        ),
        (
            "para\n- item",
            "<p>para</p>\n<ul>\n<li>item</li>\n</ul>\n",
            "a bullet interrupts a paragraph",
        ),
        (
            "para\n2. two",
            "<p>para\n2. two</p>\n",
            "only 1. interrupts a paragraph",
        ),
        (
            "> [!WARNING]\n> Careful",
            "<blockquote class=\"callout warning\">\n<p>Careful</p>\n</blockquote>\n",
            "GFM alert",
        ),
        (
            "> a\n>\n> b",
            "<blockquote>\n<p>a</p>\n<p>b</p>\n</blockquote>\n",
            "quote paragraphs",
        ),
        (
            "> - x",
            "<blockquote>\n<ul>\n<li>x</li>\n</ul>\n</blockquote>\n",
            "list in a quote",
        ),
        (
            "a | b\n--- | :-:\n`x` | \\|",
            "<table>\n<thead>\n<tr><th>a</th><th class=\"align-center\">b</th></tr>\n</thead>\n<tbody>\n<tr><td><code>x</code></td><td class=\"align-center\">|</td></tr>\n</tbody>\n</table>\n",
            "table without outer pipes",
        ),
        (
            "| a |\n|---|\n| 1 | 2 |\n\nafter",
            "<table>\n<thead>\n<tr><th>a</th></tr>\n</thead>\n<tbody>\n<tr><td>1</td></tr>\n</tbody>\n</table>\n<p>after</p>\n",
            "extra cells dropped",
        ),
    ];
    for (source, expected, what) in cases {
        assert_eq!(assert_safe(source), expected, "{what}");
    }
}

#[test]
fn the_inlines_a_model_writes_come_out_as_before() {
    let cases = [
        (
            "***both***",
            "<p><em><strong>both</strong></em></p>\n",
            "strong emphasis",
        ),
        (
            "**a *b* c**",
            "<p><strong>a <em>b</em> c</strong></p>\n",
            "nested",
        ),
        (
            "_a_ __b__",
            "<p><em>a</em> <strong>b</strong></p>\n",
            "underscores",
        ),
        (
            "snake_case_name",
            "<p>snake_case_name</p>\n",
            "intraword underscore",
        ),
        ("2 * 3 * 4", "<p>2 * 3 * 4</p>\n", "spaced stars"),
        ("**unclosed", "<p>**unclosed</p>\n", "unclosed"),
        (
            "~one~ ~~two~~ ~~~three~~~",
            "<p><del>one</del> <del>two</del> ~~~three~~~</p>\n",
            "tildes",
        ),
        (
            "`` a ` b ``",
            "<p><code>a ` b</code></p>\n",
            "code span with a backtick",
        ),
        (
            "`*not em*`",
            "<p><code>*not em*</code></p>\n",
            "no emphasis in code",
        ),
        ("\\*lit\\* \\\\", "<p>*lit* \\</p>\n", "backslash escapes"),
        ("a\\\nb", "<p>a<br>\nb</p>\n", "backslash hard break"),
        (
            "&amp; &copy; &#65; &#x42; &bogus;",
            "<p>&amp; © A B &amp;bogus;</p>\n",
            "character references",
        ),
        (
            "[a *b*](https://x.example \"T\")",
            "<p><a href=\"https://x.example\" title=\"T\" rel=\"noopener noreferrer\" target=\"_blank\">a <em>b</em></a></p>\n",
            "link with emphasis and title",
        ),
        (
            "[ref] and [text][Ref]\n\n[ref]: https://r.example",
            "<p><a href=\"https://r.example\" rel=\"noopener noreferrer\" target=\"_blank\">ref</a> and <a href=\"https://r.example\" rel=\"noopener noreferrer\" target=\"_blank\">text</a></p>\n",
            "reference links",
        ),
        ("[not a link]", "<p>[not a link]</p>\n", "brackets"),
        (
            "[x](https://a.example/(b))",
            "<p><a href=\"https://a.example/(b)\" rel=\"noopener noreferrer\" target=\"_blank\">x</a></p>\n",
            "balanced parentheses",
        ),
        (
            "a <b>c</b>",
            "<p>a &lt;b&gt;c&lt;/b&gt;</p>\n",
            "inline HTML is text",
        ),
        (
            "héllo *wörld* 😀",
            "<p>héllo <em>wörld</em> 😀</p>\n",
            "non-ASCII",
        ),
    ];
    for (source, expected, what) in cases {
        assert_eq!(assert_safe(source), expected, "{what}");
    }
}

/// Every string of a few hundred thousand made of Markdown's special
/// characters (and some multi-byte ones) parses without a panic, and what
/// it draws passes the same checks.
#[test]
fn any_input_parses_and_stays_safe() {
    const ALPHABET: [&str; 32] = [
        "*",
        "_",
        "~",
        "`",
        "[",
        "]",
        "(",
        ")",
        "<",
        ">",
        "!",
        "&",
        ";",
        "#",
        "\\",
        "|",
        "-",
        ":",
        "\n",
        "\n\n",
        " ",
        "  ",
        "\t",
        "1.",
        "a",
        "é",
        "😀",
        "\"",
        "'",
        "javascript:",
        "https://x",
        "&#",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..40_000 {
        let length = (next() % 24) as usize;
        let source: String = (0..length)
            .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
            .collect();
        assert_safe(&source);
    }
}
