//! What the card shows before the buttons: the flows that make it warn,
//! the tool as reviewed and its declared risk, where the call sends data
//! ("Sends to", "Via"), why it asks, the whole arguments, the characters
//! to check, and where each value came from.

use countersign_api::Destination;
use countersign_api::characters::visible;
use leptos::prelude::*;

use super::Card;
use super::long_value::{LongValueBox, run_view};
use crate::model::approval::{
    ArgPiece, FLOW_NOTE, character_lines, destination_text, instructions_note, origin_lines,
};

/// The "Sends to" items, or nothing when the arguments name no
/// destination.
fn sends_to(destinations: &[Destination]) -> Vec<String> {
    let mut items: Vec<String> = Vec::new();
    for text in destinations.iter().map(destination_text) {
        if !items.contains(&text) {
            items.push(text);
        }
    }
    items
}

#[component]
pub(super) fn Evidence(
    card: Card,
    /// The element's id (the fold toggle controls it).
    id: String,
    approval_id: String,
    /// Folded away (a decided card, until "Show the request").
    hidden: Signal<bool>,
) -> impl IntoView {
    let approval = card.approval;
    let risk = card.risk;
    let tool_title = move || approval.with(|a| a.as_ref().and_then(|a| a.tool_title.clone()));
    let tool_description =
        move || approval.with(|a| a.as_ref().and_then(|a| a.tool_description.clone()));
    // Where the arguments came from (issue 16): the flows that make it
    // ask, the results of this reply that held instructions, and each
    // argument's origin.
    let provenance = move || approval.with(|a| a.as_ref().and_then(|a| a.provenance.clone()));
    let flows = move || provenance().map(|p| p.flows).filter(|f| !f.is_empty());
    let instructions = move || provenance().and_then(|p| instructions_note(&p));
    let origins = move || provenance().map(|p| origin_lines(&p, crate::clock::minutes_east_at));
    // Where the call sends data (issue 45), as the server read it.
    let destinations = move || {
        approval.with(|a| {
            a.as_ref()
                .map(|a| sends_to(&a.destinations))
                .unwrap_or_default()
        })
    };
    // What the bytes are (issue 44): look-alike, invisible, bidi.
    let characters = move || {
        approval.with(|a| {
            a.as_ref()
                .map(|a| character_lines(&a.character_warnings))
                .unwrap_or_default()
        })
    };
    let args_id = format!("approval-{approval_id}-args");
    let unread = card.unread;

    view! {
        <div class="approval-evidence" id=id data-testid="approval-evidence" hidden=hidden>
            // Text from a tool's result leaving for elsewhere: first, in
            // the danger colours.
            {move || flows().map(|flows| view! {
                <div class="approval-flows" data-testid="approval-flows">
                    <p class="approval-flows-title">"This call sends text from a tool\u{2019}s result elsewhere"</p>
                    <ul>
                        {flows.into_iter().map(|flow| view! {
                            <li data-testid="approval-flow">{flow.text}</li>
                        }).collect_view()}
                    </ul>
                    <p class="approval-flows-note">{FLOW_NOTE}</p>
                </div>
            })}
            {move || instructions().map(|text| view! {
                <p class="approval-instructions" data-testid="approval-instructions">{text}</p>
            })}
            // The tool as the user reviewed it: its title and description
            // (text only, never markup), then its declared risk.
            <div class="approval-about" data-testid="approval-about">
                {move || tool_title().map(|t| view! {
                    <p class="approval-tool-title" data-testid="approval-tool-title">{t}</p>
                })}
                {move || tool_description().map(|d| view! {
                    <p class="approval-tool-description" data-testid="approval-tool-description">{d}</p>
                })}
            </div>
            <ul class="approval-risk" data-testid="approval-risk" aria-label="What this tool declares">
                {move || {
                    risk.get()
                        .lines
                        .into_iter()
                        .map(|line| view! {
                            <li class:concern=line.concern data-concern=line.concern.to_string()>
                                {line.text}
                            </li>
                        })
                        .collect_view()
                }}
            </ul>
            <dl class="approval-facts">
                <div class="approval-sends-to">
                    <dt>"Sends to"</dt>
                    <dd data-testid="approval-sends-to">
                        {move || {
                            let sends_to = destinations();
                            if sends_to.is_empty() {
                                view! { <span class="muted">"Nothing named in the arguments"</span> }.into_any()
                            } else {
                                view! {
                                    <ul class="approval-destinations">
                                        {sends_to.into_iter().map(|text| view! {
                                            <li><code data-testid="approval-sends-to-item">{text}</code></li>
                                        }).collect_view()}
                                    </ul>
                                }
                                .into_any()
                            }
                        }}
                    </dd>
                </div>
                <div>
                    <dt>"Via"</dt>
                    <dd>
                        <code data-testid="approval-destination">{card.field(|a| a.destination.clone())}</code>
                    </dd>
                </div>
                <div>
                    <dt>"Why it asks"</dt>
                    <dd data-testid="approval-reason">{card.field(|a| a.reason.clone())}</dd>
                </div>
            </dl>
            <p class="approval-args-label" id=args_id.clone()>
                "Arguments (exactly what would be sent)"
            </p>
            <div class="approval-args" role="group" aria-labelledby=args_id data-testid="approval-arguments">
                {move || {
                    card.pieces
                        .get()
                        .into_iter()
                        .enumerate()
                        .map(|(index, piece)| match piece {
                            ArgPiece::Code(code) => view! { <span>{visible(&code)}</span> }.into_any(),
                            ArgPiece::Long(value) => {
                                let on_read = Callback::new(move |()| {
                                    unread.update(|unread| {
                                        unread.remove(&index);
                                    });
                                });
                                view! { <LongValueBox value=value on_read=on_read /> }.into_any()
                            }
                            // Seen before: highlighted, named in the list below.
                            ArgPiece::Marked(runs) => runs
                                .into_iter()
                                .map(run_view)
                                .collect_view()
                                .into_any(),
                        })
                        .collect_view()
                }}
            </div>
            {move || {
                let lines = characters();
                (!lines.is_empty()).then(|| view! {
                    <ul class="approval-characters" data-testid="approval-characters"
                        aria-label="Characters to check before you decide">
                        {lines.into_iter().map(|line| view! {
                            <li data-testid="approval-character">
                                <strong>"Check this value: "</strong>
                                <code>{line.what}</code>" "{line.words}"."
                                {line.ascii.map(|ascii| view! {
                                    " In ASCII: "<code data-testid="approval-character-ascii">{ascii}</code>
                                })}
                            </li>
                        }).collect_view()}
                    </ul>
                })
            }}
            {move || origins().map(|lines| {
                let rest = if lines.is_empty() {
                    "Written by the model: nothing in these arguments was seen earlier in this chat."
                } else {
                    "Everything else was written by the model."
                };
                view! {
                <ul class="approval-origins" data-testid="approval-origins" aria-label="Where the arguments came from">
                    {lines.into_iter().map(|line| view! {
                        <li class:flow=line.flow data-testid="approval-origin">
                            <code>{line.what}</code>": "{line.words}
                        </li>
                    }).collect_view()}
                    <li class="approval-origins-rest">{rest}</li>
                </ul>
                }
            })}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use countersign_api::vocab::DestinationKind;

    #[test]
    fn sends_to_names_each_destination_once_in_ascii_with_its_written_form() {
        let d = |ascii: &str, unicode: Option<&str>, path: &str| Destination {
            kind: DestinationKind::Host,
            ascii: ascii.into(),
            unicode: unicode.map(str::to_owned),
            path: path.into(),
        };
        assert_eq!(sends_to(&[]), Vec::<String>::new());
        assert_eq!(
            sends_to(&[
                d("paste.example.net", None, "/url"),
                d("xn--frm-jhd.example", Some("f\u{0456}rm.example"), "/cc/0"),
                d("paste.example.net", None, "/backup_url"),
            ]),
            [
                "paste.example.net",
                "xn--frm-jhd.example (f\u{0456}rm.example)"
            ],
            "the same host named twice is listed once"
        );
    }
}
