//! The Anthropic Messages adapter on the wire.

use crate::fake::{
    FakeProvider, Reply, assert_reveals_none_of, assert_status_errors, client, collect,
    cut_mid_stream, first_events, fixture, one_message, settings, status_cases_of_every_provider,
    text_of,
};
use countersign::config::Secret;
use countersign::llm::{
    ChatRequest, HttpSettings, LlmError, LlmEvent, LlmStream, Message, StopReason, ToolCall,
    ToolSpec, anthropic,
};
use serde_json::json;
use std::time::Duration;
use tokio::sync::oneshot;

const KEY: &str = "sk-ant-api03-TEST-KEY-9f8e7d6c5b4a";

fn key() -> Secret {
    Secret::new(KEY)
}

fn hello() -> ChatRequest<'static> {
    one_message("claude-opus-4-1-20250805", "Hello")
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Get the current weather in a given location".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"}},
            "required": ["location"],
        })
        .into(),
        label: "Weather: get_weather".into(),
    }
}

/// `hello()` to `fake`, with the key.
async fn stream_hello(fake: &FakeProvider) -> Result<LlmStream, LlmError> {
    anthropic::stream(&client(), &settings(), &fake.url(""), &key(), hello()).await
}

async fn start_and_collect(
    fake: &FakeProvider,
    request: ChatRequest<'_>,
) -> Vec<Result<LlmEvent, LlmError>> {
    let stream = anthropic::stream(&client(), &settings(), &fake.url(""), &key(), request)
        .await
        .expect("the request is accepted");
    collect(stream).await
}

#[tokio::test]
async fn streamed_text_arrives_as_deltas_then_end_turn_and_the_request_carries_key_version_and_body()
 {
    let fake = FakeProvider::start(vec![Reply::Sse(fixture("anthropic_text.sse"))]).await;

    let items = start_and_collect(&fake, hello()).await;

    assert_eq!(
        items,
        vec![
            Ok(LlmEvent::TextDelta("Hello".into())),
            Ok(LlmEvent::TextDelta("!".into())),
            Ok(LlmEvent::Finished(StopReason::EndTurn)),
        ]
    );
    let request = fake.only_request();
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(
        request.header("authorization"),
        None,
        "the key goes in x-api-key only"
    );
    assert_eq!(
        request.body,
        json!({
            "model": "claude-opus-4-1-20250805",
            "max_tokens": 256,
            "system": "You are terse.",
            "messages": [{"role": "user", "content": "Hello"}],
            "stream": true,
        }),
        "no tools field when there are no tools"
    );
}

#[tokio::test]
async fn a_tool_call_round_trip_parses_split_input_and_sends_back_tool_use_and_tool_result_blocks()
{
    let fake = FakeProvider::start(vec![
        Reply::Sse(fixture("anthropic_tool_use.sse")),
        Reply::Sse(fixture("anthropic_tool_answer.sse")),
    ])
    .await;
    let question = Message::User {
        text: "What is the weather like in San Francisco?".into(),
    };
    let mut request = ChatRequest {
        messages: vec![question.clone()].into(),
        tools: vec![weather_tool()],
        ..hello()
    };

    let first = start_and_collect(&fake, request.clone()).await;

    let call = ToolCall {
        id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
        name: "get_weather".into(),
        arguments: json!({"location": "San Francisco, CA", "unit": "fahrenheit"}),
    };
    assert_eq!(
        text_of(&first),
        "Okay, let's check the weather for San Francisco, CA:"
    );
    assert_eq!(
        first[first.len() - 2..],
        [
            Ok(LlmEvent::ToolCall(call.clone())),
            Ok(LlmEvent::Finished(StopReason::ToolUse)),
        ]
    );
    assert_eq!(
        fake.only_request().body["tools"],
        json!([{
            "name": "get_weather",
            "description": "Get the current weather in a given location",
            "input_schema": weather_tool().input_schema,
        }])
    );

    request.messages.to_mut().extend([
        Message::Assistant {
            text: text_of(&first),
            tool_calls: vec![call],
        },
        Message::ToolResult {
            call_id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
            name: "get_weather".into(),
            content: "59°F, sunny".into(),
            is_error: false,
        },
    ]);
    let second = start_and_collect(&fake, request).await;

    assert_eq!(text_of(&second), "It's 59°F and sunny in San Francisco.");
    assert_eq!(
        second.last(),
        Some(&Ok(LlmEvent::Finished(StopReason::EndTurn)))
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].body["messages"],
        json!([
            {"role": "user", "content": "What is the weather like in San Francisco?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Okay, let's check the weather for San Francisco, CA:"},
                {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather",
                 "input": {"location": "San Francisco, CA", "unit": "fahrenheit"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "content": "59°F, sunny", "is_error": false},
            ]},
        ])
    );
}

#[tokio::test]
async fn error_statuses_map_to_errors_that_reveal_no_key_url_or_body() {
    const BODY_SECRET: &str = "UPSTREAM-BODY-SECRET-b1c2d3";
    let body = format!(
        r#"{{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key {KEY} {BODY_SECRET}"}}}}"#
    );
    let mut cases = status_cases_of_every_provider("Anthropic", "30", 30);
    cases.extend([
        (
            "429 with an HTTP-date retry-after has no seconds",
            429,
            Some("Wed, 21 Oct 2015 07:28:00 GMT"),
            LlmError::RateLimited {
                provider: "Anthropic".into(),
                retry_after: None,
            },
        ),
        (
            "529 (overloaded) is an upstream error",
            529,
            None,
            LlmError::Upstream {
                provider: "Anthropic".into(),
                status: 529,
            },
        ),
    ]);
    assert_status_errors(
        cases,
        &body,
        &[KEY, BODY_SECRET, "127.0.0.1", "http", "invalid x-api-key"],
        stream_hello,
    )
    .await;
    let shown = LlmError::RateLimited {
        provider: "Anthropic".into(),
        retry_after: Some(30),
    }
    .to_string();
    assert!(shown.contains("retry in 30 s"), "{shown}");
}

#[tokio::test]
async fn a_connection_cut_mid_stream_ends_in_one_network_error_after_the_text_so_far() {
    let items = cut_mid_stream(
        "anthropic_tool_use.sse",
        7,
        "Okay, let's",
        &[KEY, "127.0.0.1"],
        stream_hello,
    )
    .await;

    assert!(
        !items
            .iter()
            .any(|item| matches!(item, Ok(LlmEvent::Finished(_)))),
        "a broken stream does not finish"
    );
}

#[tokio::test]
async fn a_stream_that_closes_cleanly_before_message_stop_is_a_network_error() {
    let body = fixture("anthropic_text.sse");
    // Everything up to and including message_delta, but no message_stop.
    let fake = FakeProvider::start(vec![Reply::Sse(first_events(&body, 7))]).await;

    let items = start_and_collect(&fake, hello()).await;

    assert_eq!(text_of(&items), "Hello!");
    assert!(
        matches!(items.last(), Some(Err(LlmError::Network { .. }))),
        "{items:?}"
    );
}

#[tokio::test]
async fn an_event_with_invalid_json_is_malformed_and_ends_the_stream() {
    let body = first_events(&fixture("anthropic_text.sse"), 4)
        + "event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"text_de\n\n"
        + "event: message_stop\ndata: {\"type\": \"message_stop\"}\n\n";
    let fake = FakeProvider::start(vec![Reply::Sse(body)]).await;

    let items = start_and_collect(&fake, hello()).await;

    assert_eq!(
        items,
        vec![
            Ok(LlmEvent::TextDelta("Hello".into())),
            Err(LlmError::Malformed {
                provider: "Anthropic".into(),
                detail: "an event that is not valid JSON".into(),
            }),
        ]
    );
}

#[tokio::test]
async fn an_in_stream_error_event_is_reported_with_its_type_and_message_only() {
    let fake = FakeProvider::start(vec![Reply::Sse(fixture("anthropic_overloaded.sse"))]).await;

    let items = start_and_collect(&fake, hello()).await;

    assert_eq!(
        items,
        vec![
            Ok(LlmEvent::TextDelta("Let me".into())),
            Err(LlmError::Reported {
                provider: "Anthropic".into(),
                detail: "Overloaded (overloaded_error)".into(),
            }),
        ]
    );
    let Some(Err(error)) = items.last() else {
        unreachable!("checked above")
    };
    assert_eq!(
        error.to_string(),
        "Anthropic reported an error: Overloaded (overloaded_error)"
    );
}

#[tokio::test]
async fn dropping_the_receiver_closes_the_connection() {
    let (closed_tx, closed_rx) = oneshot::channel();
    let fake = FakeProvider::start(vec![Reply::Stall {
        prefix: first_events(&fixture("anthropic_text.sse"), 4),
        closed: closed_tx,
    }])
    .await;
    // An idle timeout far beyond the wait below: only the drop may end it.
    let settings = HttpSettings {
        connect_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(3600),
    };
    let mut stream = anthropic::stream(&client(), &settings, &fake.url(""), &key(), hello())
        .await
        .expect("the request is accepted");
    assert_eq!(
        stream.recv().await,
        Some(Ok(LlmEvent::TextDelta("Hello".into())))
    );

    drop(stream);

    tokio::time::timeout(Duration::from_secs(10), closed_rx)
        .await
        .expect("the server sees the connection close")
        .expect("the signal is sent on drop");
}

#[tokio::test]
async fn a_silent_stream_fails_after_the_idle_timeout() {
    let (closed_tx, _closed_rx) = oneshot::channel();
    let fake = FakeProvider::start(vec![Reply::Stall {
        prefix: first_events(&fixture("anthropic_text.sse"), 4),
        closed: closed_tx,
    }])
    .await;
    let settings = HttpSettings {
        connect_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_millis(200),
    };

    let stream = anthropic::stream(&client(), &settings, &fake.url(""), &key(), hello())
        .await
        .expect("the request is accepted");
    let items = collect(stream).await;

    assert_eq!(
        items,
        vec![
            Ok(LlmEvent::TextDelta("Hello".into())),
            Err(LlmError::Network {
                provider: "Anthropic".into(),
                detail: "no data for 0.2 s".into(),
            }),
        ]
    );
}

#[tokio::test]
async fn an_unreachable_server_is_a_network_error_without_the_url() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    drop(listener);

    let error = anthropic::stream(&client(), &settings(), &url, &key(), hello())
        .await
        .expect_err("nothing listens there");

    assert_eq!(
        error,
        LlmError::Network {
            provider: "Anthropic".into(),
            detail: "could not connect".into(),
        }
    );
    assert_reveals_none_of(&error, &[KEY, "127.0.0.1"]);
}
