//! `offline/demo`: a scripted stand-in for a model. Not AI, and labelled as
//! such in the UI. Deterministic, so the product runs out of the box and
//! tests of everything around the model are repeatable.
//!
//! - It streams a short reply word by word.
//! - When the latest user message says `use TOOL with {json}`, it proposes
//!   that call (matching `TOOL` against the offered tools, `.` and `_`
//!   alike).
//! - `use A with {…} then use B with {…}` proposes the calls one after
//!   another, each after the previous one's result; a string of B's that
//!   says `{{result}}` gets A's result in its place (a model copying what a
//!   tool returned).
//! - When it is handed tool results, it summarises them.

use super::{ChatRequest, LlmEvent, LlmStream, Message, StopReason, ToolCall};
use serde_json::Value;
use std::time::Duration;
use tokio::sync::mpsc;

/// What the demo will do for `request`.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Say these words.
    Say(String),
    /// Propose this call (after the words, if any).
    Call(String, ToolCall),
}

/// Decides the demo's answer from the conversation alone.
pub fn plan(request: &ChatRequest<'_>) -> Plan {
    // Tool results since the last user message: summarise them.
    let results: Vec<(&str, &str, bool)> = request
        .messages
        .iter()
        .rev()
        .take_while(|m| !matches!(m, Message::User { .. }))
        .filter_map(|m| match m {
            Message::ToolResult {
                name,
                content,
                is_error,
                ..
            } => Some((name.as_str(), content.as_str(), *is_error)),
            _ => None,
        })
        .collect();
    let last_user = request
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::User { text } => Some(text.as_str()),
            _ => None,
        })
        .unwrap_or_default();
    let requested = parse_tool_requests(last_user);
    if !results.is_empty() && results.len() < requested.len() {
        let (tool, mut arguments) = requested[results.len()].clone();
        // The latest result comes first.
        fill_result(&mut arguments, &strip_delimiters(results[0].1));
        let name = offered_name(request, &tool);
        return Plan::Call(
            format!("Next, I will call {}.", label_of(request, &name)),
            ToolCall {
                id: format!("demo_call_{}", request.messages.len()),
                name,
                arguments,
            },
        );
    }
    if !results.is_empty() {
        let parts: Vec<String> = results
            .iter()
            .rev()
            .map(|(name, content, is_error)| {
                let content = strip_delimiters(content);
                // A declined call's result is `{"ok":false,"error":…}` (DESIGN
                // §6.6): say its words, not its JSON.
                let content = serde_json::from_str::<serde_json::Value>(&content)
                    .ok()
                    .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
                    .unwrap_or(content);
                let text = shorten(&content, 240);
                let name = label_of(request, name);
                if *is_error {
                    format!("The call to {name} did not run: {text}")
                } else {
                    format!("{name} returned: {text}")
                }
            })
            .collect();
        return Plan::Say(parts.join(" "));
    }

    if let Some((tool, arguments)) = requested.into_iter().next() {
        let name = offered_name(request, &tool);
        let id = format!("demo_call_{}", request.messages.len());
        return Plan::Call(
            format!(
                "I will call {} with those arguments.",
                label_of(request, &name)
            ),
            ToolCall {
                id,
                name,
                arguments,
            },
        );
    }

    let echo = shorten(last_user, 80);
    Plan::Say(format!(
        "This is the offline demo model, not an AI. You wrote: \u{201c}{echo}\u{201d}. \
         It streams its replies word by word so you can see how Countersign shows a \
         response as it arrives. Name a tool to see the approval flow, for example: \
         use notes.search with {{\"query\":\"lease\"}}"
    ))
}

/// Puts the previous call's result wherever a string says `{{result}}`,
/// as a model that copies what a tool returned would (the demo of a flow on
/// the approval card, issue 16).
fn fill_result(arguments: &mut Value, result: &str) {
    match arguments {
        Value::String(s) if s.contains(RESULT_PLACEHOLDER) => {
            *s = s.replace(RESULT_PLACEHOLDER, result.trim());
        }
        Value::Array(items) => items.iter_mut().for_each(|v| fill_result(v, result)),
        Value::Object(map) => map.values_mut().for_each(|v| fill_result(v, result)),
        _ => {}
    }
}

/// What a later call's argument writes to copy the previous result.
pub const RESULT_PLACEHOLDER: &str = "{{result}}";

/// The offered tool `asked` means (`.` and `_` alike), or `asked` itself.
fn offered_name(request: &ChatRequest<'_>, asked: &str) -> String {
    request
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .find(|n| same_tool(n, asked))
        .map_or_else(|| asked.replace('.', "_"), str::to_owned)
}

/// What people call the offered tool `name` (its label: "Notes: search",
/// as the card names it, never the model's slug), or `name` itself.
fn label_of<'a>(request: &'a ChatRequest<'_>, name: &'a str) -> &'a str {
    request
        .tools
        .iter()
        .find(|t| t.name == name)
        .map_or(name, |t| t.label.as_str())
}

/// Every `use NAME with {…}`, in order, the requests separated by " then ".
fn parse_tool_requests(text: &str) -> Vec<(String, Value)> {
    let mut requests = Vec::new();
    for part in text.split(" then ") {
        match parse_tool_request(part) {
            Some(request) => requests.push(request),
            None => break,
        }
    }
    requests
}

/// `use NAME with {…}` anywhere in the text, NAME made of word characters,
/// dots and dashes, the JSON an object.
fn parse_tool_request(text: &str) -> Option<(String, Value)> {
    let lower = text.to_ascii_lowercase();
    let start = lower.find("use ")? + 4;
    let rest = &text[start..];
    let (name, after) = rest.split_once(char::is_whitespace)?;
    let after = after.trim_start();
    let json = after
        .strip_prefix("with")
        .or_else(|| after.strip_prefix("WITH"))?
        .trim_start();
    let mut stream = serde_json::Deserializer::from_str(json).into_iter::<Value>();
    let arguments = stream.next()?.ok()?;
    let valid_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    (valid_name && arguments.is_object()).then(|| (name.to_owned(), arguments))
}

fn same_tool(offered: &str, asked: &str) -> bool {
    // `.`, `-` and runs of `_` all count as one separator.
    let norm = |s: &str| {
        s.to_ascii_lowercase()
            .split(['.', '-', '_'])
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join("_")
    };
    let (offered, asked) = (norm(offered), norm(asked));
    offered == asked || offered.ends_with(&format!("_{asked}"))
}

fn strip_delimiters(content: &str) -> String {
    content
        .lines()
        .filter(|l| !(l.starts_with("<tool_result") || l.starts_with("</tool_result")))
        .collect::<Vec<_>>()
        .join(" ")
}

fn shorten(text: &str, max_chars: usize) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() <= max_chars {
        text
    } else {
        let cut: String = text.chars().take(max_chars).collect();
        format!("{cut}…")
    }
}

/// Streams the plan: one word per `word_delay`, then the call, then
/// `Finished`. Stops when the receiver is dropped.
pub fn stream(word_delay: Duration, request: ChatRequest<'_>) -> LlmStream {
    let (tx, rx) = mpsc::channel(32);
    let plan = plan(&request);
    tokio::spawn(async move {
        let (text, call) = match plan {
            Plan::Say(text) => (text, None),
            Plan::Call(text, call) => (text, Some(call)),
        };
        let mut first = true;
        for word in text.split(' ') {
            if !first && !word_delay.is_zero() {
                tokio::time::sleep(word_delay).await;
            }
            let piece = if first {
                word.to_owned()
            } else {
                format!(" {word}")
            };
            first = false;
            if tx.send(Ok(LlmEvent::TextDelta(piece))).await.is_err() {
                return;
            }
        }
        let stop = match call {
            Some(call) => {
                if tx.send(Ok(LlmEvent::ToolCall(call))).await.is_err() {
                    return;
                }
                StopReason::ToolUse
            }
            None => StopReason::EndTurn,
        };
        let _ = tx.send(Ok(LlmEvent::Finished(stop))).await;
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;
    use serde_json::json;

    fn request(messages: Vec<Message>, tools: &[&str]) -> ChatRequest<'static> {
        ChatRequest {
            model: "demo".into(),
            system: String::new(),
            messages: messages.into(),
            tools: tools
                .iter()
                .map(|n| ToolSpec {
                    name: (*n).to_owned(),
                    description: String::new(),
                    input_schema: json!({"type": "object"}).into(),
                    label: (*n).to_owned(),
                })
                .collect(),
            max_tokens: 1000,
        }
    }

    fn user(text: &str) -> Message {
        Message::User { text: text.into() }
    }

    #[test]
    fn a_plain_message_gets_a_labelled_reply_that_echoes_it() {
        let Plan::Say(text) = plan(&request(vec![user("hello there")], &[])) else {
            panic!("expected words");
        };
        assert!(text.contains("offline demo model, not an AI"));
        assert!(text.contains("hello there"));
    }

    #[test]
    fn naming_a_tool_proposes_that_call_with_the_offered_name() {
        for (asked, offered, why) in [
            (
                "notes.search",
                "notes__search",
                "dot matches the connector separator",
            ),
            ("notes_search", "notes_search", "exact"),
            ("search", "notes__search", "bare tool name"),
        ] {
            let text = format!("please use {asked} with {{\"query\":\"lease\"}} thanks");
            let Plan::Call(_, call) = plan(&request(vec![user(&text)], &[offered])) else {
                panic!("{why}: expected a call");
            };
            assert_eq!(call.name, offered, "{why}");
            assert_eq!(call.arguments, json!({"query": "lease"}), "{why}");
        }
    }

    #[test]
    fn the_words_name_the_tool_by_its_label_and_the_call_by_its_slug() {
        let mut labelled = request(vec![user("use notes.search with {}")], &["notes__search"]);
        labelled.tools[0].label = "Matter notes: search".into();
        let Plan::Call(words, call) = plan(&labelled) else {
            panic!("expected a call");
        };
        assert_eq!(
            words,
            "I will call Matter notes: search with those arguments."
        );
        assert_eq!(call.name, "notes__search");
        labelled.messages.to_mut().push(Message::ToolResult {
            call_id: call.id,
            name: call.name,
            content: "<tool_result>\n1 note\n</tool_result>".into(),
            is_error: false,
        });
        assert_eq!(
            plan(&labelled),
            Plan::Say("Matter notes: search returned: 1 note".into())
        );
    }

    #[test]
    fn an_unknown_tool_is_still_proposed_so_the_loop_can_refuse_it() {
        let Plan::Call(_, call) = plan(&request(
            vec![user("use ghost.tool with {}")],
            &["notes__search"],
        )) else {
            panic!("expected a call");
        };
        assert_eq!(call.name, "ghost_tool");
    }

    #[test]
    fn chained_requests_are_proposed_one_after_another_then_summarised() {
        let ask = user(r#"use a with {"n":1} then use b with {"n":2}"#);
        let Plan::Call(_, first) = plan(&request(vec![ask.clone()], &["x__a", "x__b"])) else {
            panic!("expected the first call");
        };
        assert_eq!(
            (first.name.as_str(), &first.arguments),
            ("x__a", &json!({"n": 1}))
        );
        let result = |name: &str| Message::ToolResult {
            call_id: "c".into(),
            name: name.into(),
            content: "done".into(),
            is_error: false,
        };
        let after_first = vec![ask.clone(), result("x__a")];
        let Plan::Call(_, second) = plan(&request(after_first, &["x__a", "x__b"])) else {
            panic!("expected the second call");
        };
        assert_eq!(
            (second.name.as_str(), &second.arguments),
            ("x__b", &json!({"n": 2}))
        );
        let after_both = vec![ask, result("x__a"), result("x__b")];
        assert!(matches!(
            plan(&request(after_both, &["x__a", "x__b"])),
            Plan::Say(_)
        ));
    }

    #[test]
    fn a_later_call_can_copy_the_previous_result() {
        let ask = user(
            r#"use a with {"q":"x"} then use b with {"body":"FYI: {{result}}","n":[ "{{result}}" ]}"#,
        );
        let result = Message::ToolResult {
            call_id: "c".into(),
            name: "x__a".into(),
            content: "<tool_result-ab tool=\"x__a\" trust=\"untrusted\">\nThe memo says 42.\n</tool_result-ab>".into(),
            is_error: false,
        };
        let Plan::Call(_, second) = plan(&request(vec![ask, result], &["x__a", "x__b"])) else {
            panic!("expected the second call");
        };
        assert_eq!(
            second.arguments,
            json!({"body": "FYI: The memo says 42.", "n": ["The memo says 42."]})
        );
    }

    #[test]
    fn non_object_arguments_are_not_a_tool_request() {
        assert!(matches!(
            plan(&request(vec![user("use notes.search with [1,2]")], &[])),
            Plan::Say(_)
        ));
    }

    #[test]
    fn tool_results_are_summarised() {
        let messages = vec![
            user("use notes.search with {\"query\":\"lease\"}"),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![],
            },
            Message::ToolResult {
                call_id: "1".into(),
                name: "notes__search".into(),
                content: "<tool_result>\n3 notes mention the lease\n</tool_result>".into(),
                is_error: false,
            },
        ];
        let Plan::Say(text) = plan(&request(messages, &[])) else {
            panic!("expected words");
        };
        assert_eq!(text, "notes__search returned: 3 notes mention the lease");
    }

    #[test]
    fn a_declined_call_is_summarised_in_words_not_json() {
        let messages = vec![
            user("use notes.delete with {\"id\":\"n1\"}"),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![],
            },
            Message::ToolResult {
                call_id: "1".into(),
                name: "notes__delete".into(),
                content: format!(
                    "<tool_result>\n{}\n</tool_result>",
                    crate::approvals::DECLINED
                ),
                is_error: true,
            },
        ];
        let Plan::Say(text) = plan(&request(messages, &[])) else {
            panic!("expected words");
        };
        assert_eq!(
            text,
            "The call to notes__delete did not run: The user declined this tool call."
        );
    }

    #[tokio::test]
    async fn the_stream_sends_words_then_finishes() {
        let mut rx = stream(Duration::ZERO, request(vec![user("hi")], &[]));
        let mut text = String::new();
        let mut finished = None;
        while let Some(item) = rx.recv().await {
            match item.expect("no error") {
                LlmEvent::TextDelta(t) => text.push_str(&t),
                LlmEvent::Finished(stop) => finished = Some(stop),
                LlmEvent::ToolCall(_) => panic!("no call expected"),
            }
        }
        assert!(text.starts_with("This is the offline demo model"));
        assert_eq!(finished, Some(StopReason::EndTurn));
    }
}
