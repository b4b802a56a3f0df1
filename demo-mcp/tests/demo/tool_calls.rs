//! `tools/call`: what the tools answer, and that `/admin/calls` counts
//! exactly the calls that executed.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::{TestServer, spawn_server, text_of};

#[tokio::test]
async fn search_notes_and_failing_tool_calls_are_counted_exactly_in_both_eras() {
    let server = spawn_server().await;
    let session = server.legacy_session().await;

    let search = server
        .call_2026("search_notes", json!({"query": "lease"}))
        .await;
    let failure = server.call_2026("failing_tool", json!({})).await;
    let legacy_search = session
        .rpc(
            2,
            "tools/call",
            json!({"name": "search_notes", "arguments": {"query": "NDA"}}),
        )
        .await;

    assert_eq!(search["result"]["isError"], false, "{search}");
    assert!(
        text_of(&search).starts_with("3 notes match \"lease\""),
        "{search}"
    );
    assert!(text_of(&search).contains("note-1"), "{search}");
    assert_eq!(failure["result"]["isError"], true, "{failure}");
    assert!(text_of(&failure).contains("always fails"), "{failure}");
    assert!(
        text_of(&legacy_search).contains("Northwind NDA"),
        "{legacy_search}"
    );

    let calls = server.calls().await;
    assert_eq!(calls["total"], 3, "{calls}");
    assert_eq!(
        calls["by_tool"],
        json!({"search_notes": 2, "failing_tool": 1}),
        "{calls}"
    );
    let logged: Vec<_> = calls["calls"]
        .as_array()
        .expect("a list of calls")
        .iter()
        .map(|call| (call["tool"].clone(), call["arguments"].clone()))
        .collect();
    assert_eq!(
        logged,
        vec![
            (json!("search_notes"), json!({"query": "lease"})),
            (json!("failing_tool"), json!({})),
            (json!("search_notes"), json!({"query": "NDA"})),
        ]
    );
    assert!(
        calls["calls"][0]["at"]
            .as_str()
            .is_some_and(|at| at.ends_with('Z')),
        "{calls}"
    );
    assert_eq!(
        calls,
        json!(server.server.calls()),
        "HTTP and in-process views agree"
    );
}

#[tokio::test]
async fn resetting_the_call_log_forgets_every_call() {
    let server = spawn_server().await;
    server.call_2026("echo", json!({"text": "hi"})).await;

    let response = server.admin_post("/admin/calls/reset", None).await;

    assert_eq!(response.status(), 204);
    assert_eq!(
        server.calls().await,
        json!({"total": 0, "by_tool": {}, "calls": []})
    );
}

#[tokio::test]
async fn calls_that_never_execute_are_not_counted() {
    let server = spawn_server().await;

    let unknown = server.call_2026("no_such_tool", json!({})).await;
    let not_yet_listed = server.call_2026("late_arrival", json!({})).await;
    let missing_argument = server.call_2026("echo", json!({"txt": "typo"})).await;
    let too_slow = server.call_2026("slow_tool", json!({"seconds": 121})).await;

    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(not_yet_listed["error"]["code"], -32602, "{not_yet_listed}");
    assert_eq!(
        missing_argument["result"]["isError"], true,
        "{missing_argument}"
    );
    assert!(
        text_of(&missing_argument).contains("missing field `text`"),
        "{missing_argument}"
    );
    assert_eq!(too_slow["result"]["isError"], true, "{too_slow}");
    assert_eq!(server.calls().await["total"], 0);
}

/// What a call's answer must be.
#[derive(Debug)]
enum Answer {
    /// A text result, exactly this.
    Is(&'static str),
    /// A text result that begins with this.
    StartsWith(&'static str),
    /// A text result that contains this.
    Contains(&'static str),
    /// A tool error (`isError`).
    ToolError,
}

/// Makes each call over 2026-07-28, in order, and checks its answer.
async fn assert_answers(server: &TestServer, calls: Vec<(&str, Value, Answer)>) {
    for (tool, arguments, answer) in calls {
        let call = format!("{tool} {arguments}");
        let message = server.call_2026(tool, arguments).await;
        match answer {
            Answer::Is(text) => assert_eq!(text_of(&message), text, "{call}"),
            Answer::StartsWith(start) => {
                assert!(text_of(&message).starts_with(start), "{call}: {message}");
            }
            Answer::Contains(part) => {
                assert!(text_of(&message).contains(part), "{call}: {message}");
            }
            Answer::ToolError => {
                assert_eq!(message["result"]["isError"], true, "{call}: {message}");
            }
        }
    }
}

#[tokio::test]
async fn the_note_tools_add_and_delete_notes_in_memory() {
    let server = spawn_server().await;

    assert_answers(
        &server,
        vec![
            (
                "add_note",
                json!({"title": "Lease novation", "body": "Novate the lease to the buyer."}),
                Answer::Is("Added note-6 (Lease novation)."),
            ),
            (
                "search_notes",
                json!({"query": "novat"}),
                Answer::Contains("note-6 · Lease novation"),
            ),
            (
                "delete_note",
                json!({"id": "note-6"}),
                Answer::Is("Deleted note-6 (Lease novation)."),
            ),
            (
                "search_notes",
                json!({"query": "novat"}),
                Answer::Is("No notes match \"novat\"."),
            ),
            ("delete_note", json!({"id": "note-6"}), Answer::ToolError),
        ],
    )
    .await;

    assert_eq!(
        server.calls().await["by_tool"],
        json!({"add_note": 1, "search_notes": 2, "delete_note": 2})
    );
}

#[tokio::test]
async fn the_other_tools_answer_without_touching_anything_outside() {
    let server = spawn_server().await;

    assert_answers(
        &server,
        vec![
            (
                "echo",
                json!({"text": "same text"}),
                Answer::Is("same text"),
            ),
            (
                "fetch_url_preview",
                json!({"url": "https://example.com/"}),
                Answer::Contains("nothing was fetched"),
            ),
            (
                "stringly_annotated",
                json!({"term": "indemnity"}),
                Answer::StartsWith("indemnity: "),
            ),
            (
                "drifting_tool",
                json!({"matter": "M-1"}),
                Answer::StartsWith("Matter M-1: open"),
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn slow_tool_waits_the_requested_seconds_and_is_counted_when_it_starts() {
    let server = spawn_server().await;
    let started = Instant::now();

    let slow = server.call_2026("slow_tool", json!({"seconds": 1})).await;

    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(text_of(&slow), "Waited 1 s.");
    assert_eq!(server.calls().await["by_tool"], json!({"slow_tool": 1}));
}
