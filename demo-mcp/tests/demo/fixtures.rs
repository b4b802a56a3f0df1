//! The conformance fixtures other than tools (`--conformance-fixtures`):
//! prompts, resources, the resource template, completion and logging — and
//! the normal mode, which declares and serves none of them.

use serde_json::{Value, json};

use crate::helpers::{messages_with_method, spawn_fixtures_server, spawn_server};

const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const RESOURCE_NOT_FOUND: i64 = -32002;

fn error_code(message: &Value) -> i64 {
    message["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("a JSON-RPC error: {message}"))
}

#[tokio::test]
async fn the_normal_mode_declares_tools_only_and_serves_no_prompts_resources_completion_or_logging()
{
    let server = spawn_server().await;

    let discovered = server.rpc_2026("server/discover", json!({})).await;

    assert_eq!(
        discovered["result"]["capabilities"],
        json!({"tools": {"listChanged": true}}),
        "{discovered}"
    );
    for (method, params) in [
        ("prompts/list", json!({})),
        ("prompts/get", json!({"name": "test_simple_prompt"})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({"uri": "test://static-text"})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                   "argument": {"name": "arg1", "value": "p"}}),
        ),
        ("logging/setLevel", json!({"level": "info"})),
    ] {
        let (_, message) = server.rpc_2026_with_status(method, params).await;
        assert_eq!(
            error_code(&message),
            METHOD_NOT_FOUND,
            "{method}: {message}"
        );
    }
}

#[tokio::test]
async fn the_fixtures_declare_prompts_resources_completion_and_logging_but_not_2025_subscriptions_in_discover()
 {
    let server = spawn_fixtures_server().await;

    let discovered = server.rpc_2026("server/discover", json!({})).await;

    assert_eq!(
        discovered["result"]["capabilities"],
        json!({
            "tools": {"listChanged": true},
            "prompts": {},
            "resources": {},
            "completions": {},
            "logging": {}
        }),
        "resources/subscribe is gone in 2026-07-28: {discovered}"
    );
}

#[tokio::test]
async fn the_fixture_prompts_substitute_their_arguments_and_refuse_a_missing_one() {
    let server = spawn_fixtures_server().await;

    let listed = server.rpc_2026("prompts/list", json!({})).await;
    let with_arguments = server
        .rpc_2026(
            "prompts/get",
            json!({"name": "test_prompt_with_arguments",
                   "arguments": {"arg1": "hello", "arg2": "world"}}),
        )
        .await;
    let embedded = server
        .rpc_2026(
            "prompts/get",
            json!({"name": "test_prompt_with_embedded_resource",
                   "arguments": {"resourceUri": "test://example-resource"}}),
        )
        .await;
    let (_, missing) = server
        .rpc_2026_with_status(
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "hello"}}),
        )
        .await;

    let names: Vec<&str> = listed["result"]["prompts"]
        .as_array()
        .unwrap_or_else(|| panic!("a prompts list: {listed}"))
        .iter()
        .filter_map(|prompt| prompt["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "test_simple_prompt",
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image",
            "test_input_required_result_prompt"
        ]
    );
    assert_eq!(listed["result"]["ttlMs"], 0, "caching hints: {listed}");
    assert_eq!(
        with_arguments["result"]["messages"],
        json!([{"role": "user", "content": {
            "type": "text", "text": "Prompt with arguments: arg1='hello', arg2='world'"
        }}])
    );
    assert_eq!(
        embedded["result"]["messages"][0]["content"]["resource"]["uri"], "test://example-resource",
        "{embedded}"
    );
    assert_eq!(error_code(&missing), INVALID_PARAMS, "{missing}");
}

#[tokio::test]
async fn the_input_required_prompt_asks_for_context_then_uses_the_answer() {
    let server = spawn_fixtures_server().await;

    let asked = server
        .rpc_2026(
            "prompts/get",
            json!({"name": "test_input_required_result_prompt"}),
        )
        .await;
    let answered = server
        .rpc_2026(
            "prompts/get",
            json!({"name": "test_input_required_result_prompt",
            "inputResponses": {"user_context": {
                "action": "accept", "content": {"context": "leases"}
            }}}),
        )
        .await;

    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    assert_eq!(
        asked["result"]["inputRequests"]["user_context"]["method"], "elicitation/create",
        "{asked}"
    );
    assert_eq!(answered["result"]["resultType"], "complete", "{answered}");
    assert_eq!(
        answered["result"]["messages"][0]["content"]["text"],
        "Write a prompt that uses this context: leases"
    );
}

#[tokio::test]
async fn resources_read_by_uri_and_by_template_and_an_unknown_uri_is_an_error_naming_it() {
    let server = spawn_fixtures_server().await;

    let text = server
        .rpc_2026("resources/read", json!({"uri": "test://static-text"}))
        .await;
    let binary = server
        .rpc_2026("resources/read", json!({"uri": "test://static-binary"}))
        .await;
    let templated = server
        .rpc_2026("resources/read", json!({"uri": "test://template/123/data"}))
        .await;
    let (_, unknown) = server
        .rpc_2026_with_status("resources/read", json!({"uri": "test://nothing-here"}))
        .await;

    assert_eq!(
        text["result"]["contents"],
        json!([{"uri": "test://static-text", "mimeType": "text/plain",
                "text": "This is the content of the static text resource."}])
    );
    assert_eq!(
        binary["result"]["contents"][0]["mimeType"], "image/png",
        "{binary}"
    );
    assert!(
        binary["result"]["contents"][0]["blob"].is_string(),
        "{binary}"
    );
    let data: Value = serde_json::from_str(
        templated["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("a text content: {templated}")),
    )
    .expect("the template's text is JSON");
    assert_eq!(
        data,
        json!({"id": "123", "templateTest": true, "data": "Data for ID: 123"})
    );
    assert_eq!(
        error_code(&unknown),
        INVALID_PARAMS,
        "SEP-2164 on 2026-07-28: {unknown}"
    );
    assert_eq!(unknown["error"]["data"]["uri"], "test://nothing-here");
}

#[tokio::test]
async fn a_2025_11_25_session_subscribes_only_to_resources_the_server_serves() {
    let server = spawn_fixtures_server().await;
    let session = server.legacy_session().await;

    let subscribed = session
        .rpc(
            2,
            "resources/subscribe",
            json!({"uri": "test://watched-resource"}),
        )
        .await;
    let unsubscribed = session
        .rpc(
            3,
            "resources/unsubscribe",
            json!({"uri": "test://watched-resource"}),
        )
        .await;
    let refused = session
        .rpc(
            4,
            "resources/subscribe",
            json!({"uri": "test://nothing-here"}),
        )
        .await;

    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    assert_eq!(unsubscribed["result"], json!({}), "{unsubscribed}");
    assert_eq!(error_code(&refused), RESOURCE_NOT_FOUND, "{refused}");
}

#[tokio::test]
async fn completion_offers_the_values_that_start_with_what_was_typed() {
    let server = spawn_fixtures_server().await;
    let complete = |reference: Value, name: &str, value: &str| json!({"ref": reference, "argument": {"name": name, "value": value}});
    let prompt = json!({"type": "ref/prompt", "name": "test_prompt_with_arguments"});
    let template = json!({"type": "ref/resource", "uri": "test://template/{id}/data"});

    let words = server
        .rpc_2026(
            "completion/complete",
            complete(prompt.clone(), "arg1", "par"),
        )
        .await;
    let ids = server
        .rpc_2026("completion/complete", complete(template, "id", "4"))
        .await;
    let (_, unknown) = server
        .rpc_2026_with_status("completion/complete", complete(prompt, "arg3", ""))
        .await;

    assert_eq!(
        words["result"]["completion"],
        json!({"values": ["paris", "park", "party"], "total": 3, "hasMore": false})
    );
    assert_eq!(ids["result"]["completion"]["values"], json!(["456"]));
    assert_eq!(error_code(&unknown), INVALID_PARAMS, "{unknown}");
}

#[tokio::test]
async fn test_tool_with_logging_logs_on_the_session_stream_only_once_a_level_is_set() {
    let server = spawn_fixtures_server().await;
    let session = server.legacy_session().await;
    let mut stream = session.open_stream().await;
    let call = json!({"name": "test_tool_with_logging", "arguments": {}});

    let before = session.rpc(2, "tools/call", call.clone()).await;
    let set = session
        .rpc(3, "logging/setLevel", json!({"level": "info"}))
        .await;
    let after = session.rpc(4, "tools/call", call).await;

    assert_eq!(
        before["result"]["content"][0]["text"],
        "Done; nothing was logged (no log level lets info through).",
        "no level, no logs: {before}"
    );
    assert_eq!(set["result"], json!({}), "{set}");
    assert_eq!(
        after["result"]["content"][0]["text"], "Logged three info messages.",
        "{after}"
    );
    let logged = messages_with_method(&mut stream, "notifications/message", 3).await;
    let logged: Vec<(&Value, &Value)> = logged
        .iter()
        .map(|message| (&message["params"]["level"], &message["params"]["data"]))
        .collect();
    assert_eq!(
        logged,
        [
            (&json!("info"), &json!("Tool execution started")),
            (&json!("info"), &json!("Tool processing data")),
            (&json!("info"), &json!("Tool execution completed")),
        ],
        "only the second call logged, in order"
    );
}
