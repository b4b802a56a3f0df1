//! An answer's Markdown as DOM nodes: the tree [`parse_markdown`] builds,
//! element by element (text is always a text node, never parsed as
//! markup; a link's URL is one `parse_markdown` allowed).

use leptos::prelude::*;

use crate::model::markdown::{Block, Inline, parse_markdown};

/// `source`, rendered: redrawn whenever it changes (a streaming answer).
#[component]
pub fn Markdown(
    /// The Markdown.
    #[prop(into)]
    source: Signal<String>,
) -> impl IntoView {
    view! { <div class="markdown">{move || source.with(|text| blocks(parse_markdown(text), false))}</div> }
}

/// Blocks; in a tight list item a paragraph is its inlines only.
fn blocks(list: Vec<Block>, tight: bool) -> Vec<AnyView> {
    list.into_iter()
        .map(|block| block_view(block, tight))
        .collect()
}

fn block_view(block: Block, tight: bool) -> AnyView {
    match block {
        Block::Paragraph(content) if tight => inlines(content).into_any(),
        Block::Paragraph(content) => view! { <p>{inlines(content)}</p> }.into_any(),
        Block::Heading(level, content) => {
            let content = inlines(content);
            match level {
                1 => view! { <h1>{content}</h1> }.into_any(),
                2 => view! { <h2>{content}</h2> }.into_any(),
                3 => view! { <h3>{content}</h3> }.into_any(),
                4 => view! { <h4>{content}</h4> }.into_any(),
                5 => view! { <h5>{content}</h5> }.into_any(),
                _ => view! { <h6>{content}</h6> }.into_any(),
            }
        }
        Block::Code { language, text } => {
            let class = (!language.is_empty()).then(|| format!("language-{language}"));
            view! { <pre><code class=class>{text}</code></pre> }.into_any()
        }
        Block::Quote {
            callout,
            blocks: inner,
        } => view! { <blockquote class=callout>{blocks(inner, false)}</blockquote> }.into_any(),
        Block::List {
            start,
            tight,
            items,
        } => {
            let items: Vec<_> = items
                .into_iter()
                .map(|item| view! { <li>{blocks(item, tight)}</li> })
                .collect();
            match start {
                Some(start) => {
                    let start = (start != 1).then(|| start.to_string());
                    view! { <ol start=start>{items}</ol> }.into_any()
                }
                None => view! { <ul>{items}</ul> }.into_any(),
            }
        }
        Block::Table {
            alignments,
            head,
            rows,
        } => {
            let head: Vec<_> = head
                .into_iter()
                .zip(alignments.clone())
                .map(|(cell, class)| view! { <th class=class>{inlines(cell)}</th> })
                .collect();
            let rows: Vec<_> = rows
                .into_iter()
                .map(|row| {
                    let cells: Vec<_> = row
                        .into_iter()
                        .zip(alignments.clone())
                        .map(|(cell, class)| view! { <td class=class>{inlines(cell)}</td> })
                        .collect();
                    view! { <tr>{cells}</tr> }
                })
                .collect();
            view! {
                <table>
                    <thead><tr>{head}</tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            }
            .into_any()
        }
        Block::Rule => view! { <hr /> }.into_any(),
        Block::Raw(text) => view! { <p class="md-raw">{text}</p> }.into_any(),
    }
}

fn inlines(list: Vec<Inline>) -> Vec<AnyView> {
    list.into_iter().map(inline_view).collect()
}

fn inline_view(inline: Inline) -> AnyView {
    match inline {
        Inline::Text(text) => text.into_any(),
        Inline::Code(code) => view! { <code>{code}</code> }.into_any(),
        Inline::Emphasis(inner) => view! { <em>{inlines(inner)}</em> }.into_any(),
        Inline::Strong(inner) => view! { <strong>{inlines(inner)}</strong> }.into_any(),
        Inline::Strikethrough(inner) => view! { <del>{inlines(inner)}</del> }.into_any(),
        Inline::Link {
            href,
            title,
            children,
        } => {
            let title = (!title.is_empty()).then_some(title);
            view! {
                <a href=href title=title rel="noopener noreferrer" target="_blank">
                    {inlines(children)}
                </a>
            }
            .into_any()
        }
        Inline::Break => view! { <br /> }.into_any(),
    }
}
