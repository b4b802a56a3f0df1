//! What a connector's server may send (DESIGN §2, issue 9): at most 500
//! tools, 64 KiB per descriptor, 16 MiB per response, and no tool with an
//! invalid `x-mcp-header`. Each case runs against the real demo server in
//! one of its hostile modes (`countersign_demo_mcp::hostile`); a listing
//! past a bound fails whole, with a clear error on the connector, and the
//! stored tools stay exactly as they were.

use crate::helpers::{Setup, setup, trust};
use countersign_demo_mcp::HostileMode;
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Row as _;

/// Every stored tool of the test's database, as `name digest state removed`.
async fn stored_tools(s: &Setup) -> Vec<String> {
    let mut db = s.app.superuser().await;
    sqlx::query(
        "select name, descriptor_digest, review_state, removed, descriptor::text as descriptor
           from connector_tools order by name",
    )
    .fetch_all(&mut db)
    .await
    .expect("stored tools")
    .iter()
    .map(|row| {
        format!(
            "{} {} {} {} {}",
            row.get::<String, _>("name"),
            row.get::<String, _>("descriptor_digest"),
            row.get::<String, _>("review_state"),
            row.get::<bool, _>("removed"),
            row.get::<String, _>("descriptor"),
        )
    })
    .collect()
}

async fn refresh(s: &Setup) -> (StatusCode, Value) {
    let res = s
        .app
        .post(
            &format!("/api/connectors/{}/refresh", s.connector),
            &json!({}),
        )
        .await;
    let status = res.status();
    (status, res.json().await.expect("JSON"))
}

async fn connector(s: &Setup) -> Value {
    s.app
        .get_json(&format!("/api/connectors/{}", s.connector))
        .await
}

/// Switches `mode` on, refreshes, and checks that the refresh failed with
/// an error containing every one of `words`, shown on the connector, and
/// that no stored tool changed.
async fn assert_refused_whole(mode: HostileMode, words: &[&str]) {
    let s = setup(|_| {}).await;
    let before = stored_tools(&s).await;
    assert!(!before.is_empty(), "the demo tools are stored and kept");

    s.demo.state().make_hostile(mode);
    let (status, body) = refresh(&s).await;

    assert!(
        !status.is_success(),
        "{mode:?}: refresh answered {status}: {body}"
    );
    let detail = body["detail"].as_str().unwrap_or_default();
    let shown = connector(&s).await;
    let last_error = shown["last_error"].as_str().unwrap_or_default();
    for word in words {
        assert!(detail.contains(word), "{mode:?}: {detail:?} says {word:?}");
        assert!(
            last_error.contains(word),
            "{mode:?}: Settings shows {last_error:?}"
        );
    }
    assert_eq!(shown["status"], "error", "{mode:?}");
    assert_eq!(
        stored_tools(&s).await,
        before,
        "{mode:?}: nothing stored half-way"
    );
}

#[tokio::test]
async fn a_server_listing_more_than_500_tools_is_refused_whole_and_nothing_is_stored() {
    assert_refused_whole(
        HostileMode::ManyTools,
        &["The server listed 611 tools", "at most 500"],
    )
    .await;
}

#[tokio::test]
async fn a_descriptor_over_64_kib_is_refused_whole_and_nothing_is_stored() {
    assert_refused_whole(
        HostileMode::HugeDescriptor,
        &["huge_descriptor", "at most 64 KiB"],
    )
    .await;
}

#[tokio::test]
async fn a_tools_list_response_over_16_mib_is_refused_and_nothing_is_stored() {
    assert_refused_whole(
        HostileMode::HugeListing,
        &["larger than 16 MiB", "at most 16 MiB"],
    )
    .await;
}

#[tokio::test]
async fn a_tool_with_an_invalid_x_mcp_header_is_not_offered_not_callable_and_shown_with_its_reason()
{
    let s = setup(|_| {}).await;
    s.demo.state().make_hostile(HostileMode::BadHeader);

    let (status, body) = refresh(&s).await;

    assert_eq!(status, StatusCode::OK, "{body}");
    let dropped = body["dropped_tools"].as_array().expect("dropped_tools");
    assert_eq!(dropped.len(), 1, "{body}");
    assert_eq!(dropped[0]["name"], "bad_header_tool");
    let reason = dropped[0]["reason"].as_str().expect("reason");
    assert!(
        reason.contains("x-mcp-header") && reason.contains("Bad Header"),
        "{reason}"
    );
    assert_eq!(connector(&s).await["dropped_tools"], body["dropped_tools"]);
    let tools = s
        .app
        .get_json(&format!("/api/connectors/{}/tools", s.connector))
        .await;
    assert!(
        !tools
            .as_array()
            .expect("tools")
            .iter()
            .any(|t| t["name"] == "bad_header_tool"),
        "not listed for review: {tools}"
    );
    assert!(
        !stored_tools(&s)
            .await
            .iter()
            .any(|t| t.starts_with("bad_header_tool ")),
        "not stored"
    );

    // Even named outright, with trust on, it is not a tool the model has.
    trust(&s).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    s.app
        .send(&s.chat, r#"use demo__bad_header_tool with {"region":"eu"}"#)
        .await;
    let events = stream.until("turn_finished").await;
    assert!(
        events
            .iter()
            .any(|(_, e)| e["type"] == "tool_result" && e["status"] == "error"),
        "{events:?}"
    );
    assert_eq!(s.demo.calls().count("bad_header_tool"), 0, "it never ran");
}

#[tokio::test]
async fn a_kept_tool_that_turns_invalid_is_removed_and_no_longer_callable() {
    let s = setup(|_| {}).await;
    s.demo.state().make_hostile(HostileMode::BadHeader);
    // The user kept the tool while it still passed (simulated: an earlier
    // listing stored it kept).
    let mut db = s.app.superuser().await;
    sqlx::query(
        "insert into connector_tools (id, user_id, connector_id, name, model_name, descriptor,
                                      descriptor_digest, review_state, reviewed_digest)
         select gen_random_uuid(), c.user_id, c.id, 'bad_header_tool', 'demo__bad_header_tool',
                '{\"name\":\"bad_header_tool\",\"inputSchema\":{\"type\":\"object\"}}',
                repeat('d', 64), 'kept', repeat('d', 64)
           from connectors c where c.id = $1::uuid",
    )
    .bind(&s.connector)
    .execute(&mut db)
    .await
    .expect("a kept tool");

    let (status, body) = refresh(&s).await;

    assert_eq!(status, StatusCode::OK, "{body}");
    let removed: bool =
        sqlx::query_scalar("select removed from connector_tools where name = 'bad_header_tool'")
            .fetch_one(&mut db)
            .await
            .expect("row");
    assert!(removed, "a dropped tool is no longer offered");
    trust(&s).await;
    let mut stream = s.app.stream(&s.chat, None).await;
    s.app
        .send(&s.chat, r#"use demo__bad_header_tool with {"region":"eu"}"#)
        .await;
    stream.until("turn_finished").await;
    assert_eq!(s.demo.calls().count("bad_header_tool"), 0, "it never ran");
}

#[tokio::test]
async fn a_tool_result_over_16_mib_reaches_the_model_as_a_clear_error() {
    let s = setup(|_| {}).await;
    s.demo.state().make_hostile(HostileMode::HugeResult);
    let (status, body) = refresh(&s).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    crate::helpers::keep_as_seen(&s, &["huge_result"]).await;
    trust(&s).await;

    let mut stream = s.app.stream(&s.chat, None).await;
    s.app.send(&s.chat, "use demo__huge_result with {}").await;
    let events = stream.until("turn_finished").await;

    let result = events
        .iter()
        .find(|(_, e)| e["type"] == "mcp_tool_call")
        .map(|(_, e)| e.clone())
        .expect("the call's outcome");
    assert_eq!(result["status"], "error", "{result}");
    let error = result["error"].as_str().unwrap_or_default();
    assert!(error.contains("larger than 16 MiB"), "{error}");
    assert_eq!(
        s.demo.calls().count("huge_result"),
        1,
        "it ran once, never retried"
    );
}
