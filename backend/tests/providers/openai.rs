//! The OpenAI-compatible Chat Completions adapter on the wire.

use crate::fake::{
    FakeProvider, Reply, assert_reveals_none_of, assert_status_errors, client, collect,
    cut_mid_stream, first_events, fixture, one_message, settings, status_cases_of_every_provider,
    text_of,
};
use countersign::config::Secret;
use countersign::llm::{
    ChatRequest, LlmError, LlmEvent, LlmStream, Message, StopReason, ToolCall, ToolSpec, openai,
};
use serde_json::json;

const KEY: &str = "sk-proj-TEST-KEY-0a1b2c3d4e5f";

fn key() -> Secret {
    Secret::new(KEY)
}

fn hello() -> ChatRequest<'static> {
    one_message("gpt-4o", "Hello!")
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Get current temperature for a given location.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"location": {"type": "string", "description": "City and country e.g. Bogotá, Colombia"}},
            "required": ["location"],
            "additionalProperties": false,
        })
        .into(),
        label: "Weather: get_weather".into(),
    }
}

/// `hello()` to `fake`, with the key.
async fn stream_hello(fake: &FakeProvider) -> Result<LlmStream, LlmError> {
    openai::stream(
        &client(),
        &settings(),
        &fake.url("/v1"),
        Some(&key()),
        hello(),
    )
    .await
}

async fn start_and_collect(
    fake: &FakeProvider,
    key: Option<&Secret>,
    request: ChatRequest<'_>,
) -> Vec<Result<LlmEvent, LlmError>> {
    let stream = openai::stream(&client(), &settings(), &fake.url("/v1"), key, request)
        .await
        .expect("the request is accepted");
    collect(stream).await
}

#[tokio::test]
async fn streamed_text_arrives_as_deltas_then_stop_and_the_request_carries_bearer_and_body() {
    let fake = FakeProvider::start(vec![Reply::Sse(fixture("openai_text.sse"))]).await;

    let items = start_and_collect(&fake, Some(&key()), hello()).await;

    assert_eq!(text_of(&items), "Hello! How can I assist you today?");
    assert_eq!(
        items.len(),
        10,
        "nine non-empty deltas and Finished: {items:?}"
    );
    assert_eq!(
        items.last(),
        Some(&Ok(LlmEvent::Finished(StopReason::EndTurn)))
    );
    let request = fake.only_request();
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(
        request.body,
        json!({
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Hello!"},
            ],
            "stream": true,
            "max_tokens": 256,
        }),
        "no tools field when there are no tools"
    );
}

#[tokio::test]
async fn a_compatible_server_without_a_key_and_with_comments_usage_chunks_and_crlf_works() {
    let fake = FakeProvider::start(vec![Reply::Sse(fixture("openai_compatible_quirks.sse"))]).await;

    let stream = openai::stream(&client(), &settings(), &fake.url("/v1/"), None, hello())
        .await
        .expect("the request is accepted");
    let items = collect(stream).await;

    assert_eq!(
        items,
        vec![
            Ok(LlmEvent::TextDelta("Hi".into())),
            Ok(LlmEvent::TextDelta(" there.".into())),
            Ok(LlmEvent::Finished(StopReason::EndTurn)),
        ]
    );
    let request = fake.only_request();
    assert_eq!(
        request.path, "/v1/chat/completions",
        "a trailing slash on the base URL is ignored"
    );
    assert_eq!(
        request.header("authorization"),
        None,
        "no key, no Authorization header"
    );
}

#[tokio::test]
async fn a_tool_call_round_trip_assembles_fragments_in_index_order_and_sends_back_tool_messages() {
    let fake = FakeProvider::start(vec![
        Reply::Sse(fixture("openai_tool_calls.sse")),
        Reply::Sse(fixture("openai_tool_answer.sse")),
    ])
    .await;
    let mut request = ChatRequest {
        messages: vec![Message::User {
            text: "What is the weather like in Paris and Bogotá today?".into(),
        }]
        .into(),
        tools: vec![weather_tool()],
        ..hello()
    };

    let first = start_and_collect(&fake, Some(&key()), request.clone()).await;

    let paris = ToolCall {
        id: "call_DdmO9pD3xa9XTPNJ32zg2hcA".into(),
        name: "get_weather".into(),
        arguments: json!({"location": "Paris, France"}),
    };
    let bogota = ToolCall {
        id: "call_ABSnFUcN0SyScqQRlVIr5pSh".into(),
        name: "get_weather".into(),
        arguments: json!({"location": "Bogotá, Colombia"}),
    };
    assert_eq!(
        first,
        vec![
            Ok(LlmEvent::ToolCall(paris.clone())),
            Ok(LlmEvent::ToolCall(bogota.clone())),
            Ok(LlmEvent::Finished(StopReason::ToolUse)),
        ]
    );
    assert_eq!(
        fake.only_request().body["tools"],
        json!([{
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Get current temperature for a given location.",
                "parameters": weather_tool().input_schema,
            },
        }])
    );

    request.messages.to_mut().extend([
        Message::Assistant {
            text: String::new(),
            tool_calls: vec![paris, bogota],
        },
        Message::ToolResult {
            call_id: "call_DdmO9pD3xa9XTPNJ32zg2hcA".into(),
            name: "get_weather".into(),
            content: "14°C, cloudy".into(),
            is_error: false,
        },
        Message::ToolResult {
            call_id: "call_ABSnFUcN0SyScqQRlVIr5pSh".into(),
            name: "get_weather".into(),
            content: "18°C".into(),
            is_error: false,
        },
    ]);
    let second = start_and_collect(&fake, Some(&key()), request).await;

    assert_eq!(
        text_of(&second),
        "Paris is 14°C and cloudy; Bogotá is 18°C."
    );
    assert_eq!(
        second.last(),
        Some(&Ok(LlmEvent::Finished(StopReason::EndTurn)))
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let messages = &requests[1].body["messages"];
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_DdmO9pD3xa9XTPNJ32zg2hcA", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris, France\"}"}},
            {"id": "call_ABSnFUcN0SyScqQRlVIr5pSh", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"location\":\"Bogotá, Colombia\"}"}},
        ]})
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "call_DdmO9pD3xa9XTPNJ32zg2hcA", "content": "14°C, cloudy"})
    );
    assert_eq!(
        messages[4],
        json!({"role": "tool", "tool_call_id": "call_ABSnFUcN0SyScqQRlVIr5pSh", "content": "18°C"})
    );
    assert_eq!(
        messages.as_array().map(Vec::len),
        Some(5),
        "nothing after the tool results"
    );
}

#[tokio::test]
async fn error_statuses_map_to_errors_that_reveal_no_key_url_or_body() {
    const BODY_SECRET: &str = "UPSTREAM-BODY-SECRET-e5f6a7";
    let body = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY} {BODY_SECRET}","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}}}"#
    );
    let mut cases = status_cases_of_every_provider("OpenAI", "7", 7);
    cases.extend([
        (
            "429 without retry-after has no seconds",
            429,
            None,
            LlmError::RateLimited {
                provider: "OpenAI".into(),
                retry_after: None,
            },
        ),
        (
            "404 (unknown model on a local server) is an upstream error",
            404,
            None,
            LlmError::Upstream {
                provider: "OpenAI".into(),
                status: 404,
            },
        ),
    ]);
    assert_status_errors(
        cases,
        &body,
        &[KEY, BODY_SECRET, "127.0.0.1", "http", "Incorrect API key"],
        stream_hello,
    )
    .await;
}

#[tokio::test]
async fn a_connection_cut_mid_stream_ends_in_one_network_error_after_the_text_so_far() {
    cut_mid_stream(
        "openai_text.sse",
        5,
        "Hello! How can",
        &[KEY, "127.0.0.1"],
        stream_hello,
    )
    .await;
}

#[tokio::test]
async fn a_stream_that_ends_without_done_or_finish_reason_is_a_network_error() {
    let fake = FakeProvider::start(vec![Reply::Sse(first_events(
        &fixture("openai_text.sse"),
        5,
    ))])
    .await;

    let items = start_and_collect(&fake, Some(&key()), hello()).await;

    assert_eq!(
        items.last(),
        Some(&Err(LlmError::Network {
            provider: "OpenAI".into(),
            detail: "the stream ended before the answer was complete".into(),
        }))
    );
}

#[tokio::test]
async fn a_stream_that_ends_after_finish_reason_without_done_still_finishes() {
    // Eleven events: everything but `data: [DONE]`.
    let fake = FakeProvider::start(vec![Reply::Sse(first_events(
        &fixture("openai_text.sse"),
        11,
    ))])
    .await;

    let items = start_and_collect(&fake, Some(&key()), hello()).await;

    assert_eq!(text_of(&items), "Hello! How can I assist you today?");
    assert_eq!(
        items.last(),
        Some(&Ok(LlmEvent::Finished(StopReason::EndTurn)))
    );
}

#[tokio::test]
async fn a_chunk_with_invalid_json_is_malformed_and_ends_the_stream() {
    let body = first_events(&fixture("openai_text.sse"), 2)
        + "data: {\"id\":\"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"wor\n\n"
        + "data: [DONE]\n\n";
    let fake = FakeProvider::start(vec![Reply::Sse(body)]).await;

    let items = start_and_collect(&fake, Some(&key()), hello()).await;

    assert_eq!(
        items,
        vec![
            Ok(LlmEvent::TextDelta("Hello".into())),
            Err(LlmError::Malformed {
                provider: "OpenAI".into(),
                detail: "a chunk that is not valid JSON".into(),
            }),
        ]
    );
}

#[tokio::test]
async fn an_in_stream_error_object_is_reported_with_its_message_and_type_only() {
    let fake = FakeProvider::start(vec![Reply::Sse(fixture("openai_error.sse"))]).await;

    let items = start_and_collect(&fake, Some(&key()), hello()).await;

    assert_eq!(
        items,
        vec![
            Ok(LlmEvent::TextDelta("The".into())),
            Err(LlmError::Reported {
                provider: "OpenAI".into(),
                detail: "The server had an error while processing your request. Sorry about that! (server_error)".into(),
            }),
        ]
    );
    let Some(Err(error)) = items.last() else {
        unreachable!("checked above")
    };
    let shown = error.to_string();
    assert!(
        !shown.contains('{') && !shown.contains("param"),
        "no raw JSON: {shown}"
    );
}

#[tokio::test]
async fn a_json_answer_to_a_streaming_request_is_malformed() {
    let fake = FakeProvider::start(vec![Reply::Json(json!({
        "id": "chatcmpl-1", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}],
    }))])
    .await;

    let error = openai::stream(&client(), &settings(), &fake.url("/v1"), None, hello())
        .await
        .expect_err("a JSON body is not a stream");

    assert_eq!(
        error,
        LlmError::Malformed {
            provider: "OpenAI".into(),
            detail: "a JSON document instead of an event stream".into(),
        }
    );
}

#[tokio::test]
async fn listing_models_returns_the_ids_sorted_and_sends_the_key() {
    let fake = FakeProvider::start(vec![Reply::Json(json!({
        "object": "list",
        "data": [
            {"id": "gpt-4o", "object": "model", "created": 1715367049, "owned_by": "system"},
            {"id": "dall-e-3", "object": "model", "created": 1698785189, "owned_by": "system"},
            {"id": "gpt-4.1", "object": "model", "created": 1744316542, "owned_by": "system"},
        ],
    }))])
    .await;

    let models = openai::list_models(&client(), &fake.url("/v1"), Some(&key()))
        .await
        .expect("the list is read");

    assert_eq!(models, ["dall-e-3", "gpt-4.1", "gpt-4o"]);
    let request = fake.only_request();
    assert_eq!(request.method, "GET");
    assert_eq!(request.path, "/v1/models");
    assert_eq!(
        request.header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
}

#[tokio::test]
async fn listing_models_on_a_keyless_local_server_sends_no_authorization() {
    let fake = FakeProvider::start(vec![Reply::Json(json!({
        "object": "list",
        "data": [{"id": "llama3.2:latest", "object": "model", "created": 1730000000, "owned_by": "library"}],
    }))])
    .await;

    let models = openai::list_models(&client(), &fake.url("/v1/"), None)
        .await
        .expect("the list is read");

    assert_eq!(models, ["llama3.2:latest"]);
    let request = fake.only_request();
    assert_eq!(request.path, "/v1/models");
    assert_eq!(request.header("authorization"), None);
}

#[tokio::test]
async fn listing_models_with_a_refused_key_is_unauthorized_and_reveals_nothing() {
    const BODY_SECRET: &str = "UPSTREAM-BODY-SECRET-c9d8";
    let fake = FakeProvider::start(vec![Reply::Status {
        status: 401,
        headers: vec![],
        body: format!(r#"{{"error":{{"message":"Incorrect API key provided: {KEY} {BODY_SECRET}","type":"invalid_request_error"}}}}"#),
    }])
    .await;

    let error = openai::list_models(&client(), &fake.url("/v1"), Some(&key()))
        .await
        .expect_err("the key is refused");

    assert_eq!(
        error,
        LlmError::Unauthorized {
            provider: "OpenAI".into(),
            status: 401
        }
    );
    assert_reveals_none_of(&error, &[KEY, BODY_SECRET, "127.0.0.1"]);
}

#[tokio::test]
async fn a_model_list_of_the_wrong_shape_is_malformed() {
    let fake = FakeProvider::start(vec![Reply::Json(json!({"models": ["a", "b"]}))]).await;

    let error = openai::list_models(&client(), &fake.url("/v1"), None)
        .await
        .expect_err("no data array");

    assert!(matches!(error, LlmError::Malformed { .. }), "{error:?}");
}
