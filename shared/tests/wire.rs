//! The wire stays byte-identical: JSON exactly as the server sent it while
//! these fields were strings reads into the typed shapes and writes back
//! the same bytes.

use countersign_api::{
    ActivityEntry, ChatDetail, ChatEvent, Connector, ConnectorTool, DecideRequest, DecideResponse,
    PendingCall, WaitingItem,
};
use serde::{Serialize, de::DeserializeOwned};

fn same_bytes<T: Serialize + DeserializeOwned>(json: &str) -> T {
    let value: T = serde_json::from_str(json).expect("reads");
    assert_eq!(serde_json::to_string(&value).expect("writes"), json);
    value
}

#[test]
fn stream_events_with_state_words_write_back_the_same_bytes() {
    for json in [
        r#"{"type":"tool_result","turn_id":"t1","id":"c1","tool_name":"x","status":"error","error":"boom"}"#,
        r#"{"type":"mcp_confirmation_required","turn_id":"t1","id":"p1","call_id":"c1","connector_id":"k1","connector_name":"Notes","tool_name":"search","arguments":{},"arguments_json":"{}","arguments_digest":"ab","destination":"mcp.example","reason":"why","expires_at":"2026-12-01T10:00:00Z","decide_by":"2026-12-01T09:59:30Z","offered_grants":["once","turn","always"]}"#,
        r#"{"type":"mcp_confirmation_required","turn_id":"t1","id":"p1","call_id":"c1","connector_id":"k1","connector_name":"Notes","tool_name":"search","arguments":{},"arguments_json":"{}","arguments_digest":"ab","destination":"mcp.example","reason":"why","expires_at":"2026-12-01T10:00:00Z","decide_by":"2026-12-01T09:59:30Z","offered_grants":["once"],"tool_title":"Search notes","tool_description":"Finds notes.","risk":{"risky":true,"flags":["declares_nothing","reaches_outside"]}}"#,
        r#"{"type":"mcp_confirmation_resolved","turn_id":"t1","id":"p1","decision":"approved"}"#,
        r#"{"type":"mcp_confirmation_resolved","turn_id":"t1","id":"p1","decision":"approved","grant":"always"}"#,
        r#"{"type":"mcp_confirmation_resolved","turn_id":"t1","id":"p1","decision":"approved","grant":"turn"}"#,
        r#"{"type":"mcp_confirmation_resolved","turn_id":"t1","id":"p1","decision":"denied"}"#,
        r#"{"type":"mcp_confirmation_resolved","turn_id":"t1","id":"p1","decision":"expired"}"#,
        r#"{"type":"mcp_tool_call","turn_id":"t1","id":"p1","call_id":"c1","connector_name":"Notes","tool_name":"search","status":"ok","duration_ms":4,"origin":"approved","approved_at":"2026-12-01T10:00:00Z"}"#,
        r#"{"type":"mcp_tool_call","turn_id":"t1","id":"c2","call_id":"c2","connector_name":"Notes","tool_name":"search","status":"error","error":"no","duration_ms":0,"origin":"trusted_annotations"}"#,
        r#"{"type":"turn_finished","turn_id":"t1","status":"done","no_prose_reason":"declined"}"#,
        r#"{"type":"turn_finished","turn_id":"t1","status":"cancelled","message_id":"m1"}"#,
    ] {
        same_bytes::<ChatEvent>(json);
    }
}

#[test]
fn an_older_client_reads_a_newer_servers_words_as_unknown() {
    let event: ChatEvent = serde_json::from_str(
        r#"{"type":"mcp_tool_call","turn_id":"t1","id":"p1","connector_name":"N","tool_name":"s","status":"partial","duration_ms":1,"origin":"oauth_consent"}"#,
    )
    .expect("a newer word does not fail the event");
    let ChatEvent::McpToolCall { status, origin, .. } = event else {
        panic!("not an mcp_tool_call: {event:?}");
    };
    assert_eq!(status, countersign_api::ToolCallStatus::Unknown);
    assert_eq!(origin, Some(countersign_api::CallOrigin::Unknown));
    let call: PendingCall = serde_json::from_str(
        r#"{"id":"p","chat_id":"c","turn_id":"t","call_id":"x","connector_id":"k","connector_name":"N","tool_name":"s","arguments":{},"arguments_json":"{}","arguments_digest":"ab","destination":"h","reason":"r","expires_at":"e","expires_in_secs":1.5,"decide_by":"d","decide_in_secs":0.5,"offered_grants":["once","for_a_week"]}"#,
    )
    .expect("reads");
    assert_eq!(
        call.offered_grants,
        [
            countersign_api::GrantKind::Once,
            countersign_api::GrantKind::Unknown
        ]
    );
}

#[test]
fn api_bodies_with_state_words_write_back_the_same_bytes() {
    same_bytes::<DecideRequest>(
        r#"{"decision":"approve","grant":"always","arguments_digest":"ab"}"#,
    );
    same_bytes::<DecideRequest>(r#"{"decision":"deny","arguments_digest":"ab"}"#);
    same_bytes::<DecideResponse>(r#"{"status":"approved"}"#);
    same_bytes::<DecideResponse>(r#"{"status":"denied"}"#);
    same_bytes::<PendingCall>(
        r#"{"id":"p","chat_id":"c","turn_id":"t","call_id":"x","connector_id":"k","connector_name":"N","tool_name":"s","arguments":{},"arguments_json":"{}","arguments_digest":"ab","destination":"h","reason":"r","expires_at":"e","expires_in_secs":1.5,"decide_by":"d","decide_in_secs":0.5,"offered_grants":["once"]}"#,
    );
    // What the web app's main module reads of `GET /api/waiting`.
    same_bytes::<WaitingItem>(
        r#"{"kind":"review","id":"r","chat_id":"c","connector_name":"N","tool_name":"s","decide_by":"d","decide_in_secs":0.5}"#,
    );
    same_bytes::<ActivityEntry>(
        r#"{"seq":2,"hash":"h","at":"a","call_ref":"p","kind":"decided","chat_id":"c","connector_id":"k","connector_name":"N","tool_name":"s","arguments_digest":"ab","decision":"approved","grant":"turn","outcome":"running","error":null,"duration_ms":null}"#,
    );
    same_bytes::<ActivityEntry>(
        r#"{"seq":3,"hash":"h","at":"a","call_ref":"p","kind":"outcome","chat_id":"c","connector_id":"k","connector_name":"N","tool_name":"s","arguments_digest":"ab","decision":null,"grant":null,"outcome":"not_run","error":"x","duration_ms":7}"#,
    );
    same_bytes::<Connector>(
        r#"{"id":"k","name":"N","slug":"n","url":"https://h/mcp","host":"h","auth_type":"bearer","token_set":true,"header_names":[],"trust_annotations":false,"trust_forbidden_by_policy":false,"review_results":false,"status":"untested","last_error":null,"protocol_version":null,"last_checked_at":null,"tool_counts":{"changed":0,"declined":1,"kept":2,"new":3},"created_at":"c","grant_count":0,"dropped_tools":[],"oauth_status":"not_applicable","oauth_issuer":null}"#,
    );
    same_bytes::<ConnectorTool>(
        r#"{"name":"s","model_name":"n__s","title":null,"description":null,"input_schema":{},"annotations":null,"descriptor_digest":"d","review_state":"changed","removed":false,"reviewed_descriptor":null,"first_seen_at":"f","last_seen_at":"l","changed_at":null,"grant_id":null,"grant_suspended":false}"#,
    );
    same_bytes::<ChatDetail>(
        r#"{"id":"c","title":"T","model":"offline/demo","created_at":"a","updated_at":"b","messages":[{"id":"m","turn_id":"t","role":"assistant","content":"hi","status":"stopped","created_at":"a"}],"running_turn_id":null,"resume_after":3,"turns":[{"turn_id":"t","status":"failed","events":[]}]}"#,
    );
    same_bytes::<ChatDetail>(
        r#"{"id":"c","title":"T","model":"offline/demo","created_at":"a","updated_at":"b","messages":[],"running_turn_id":null,"resume_after":3,"turns":[{"turn_id":"t","status":"done","events":[{"type":"error","turn_id":"t","message":"x"}],"text_before":[12]}]}"#,
    );
}

#[test]
fn malformed_words_fail_with_the_errors_the_string_fields_gave() {
    // The messages the 422 carries, as measured before the fields were typed.
    for (body, error) in [
        (
            r#"{"decision":5,"arguments_digest":"a"}"#,
            "invalid type: integer `5`, expected a string at line 1 column 13",
        ),
        (
            r#"{"decision":"approve","grant":7,"arguments_digest":"a"}"#,
            "invalid type: integer `7`, expected a string at line 1 column 31",
        ),
        (
            r#"{"decision":{"approve":null},"arguments_digest":"a"}"#,
            "invalid type: map, expected a string at line 1 column 12",
        ),
        (
            r#"{"decision":null,"arguments_digest":"a"}"#,
            "invalid type: null, expected a string at line 1 column 16",
        ),
    ] {
        let err = serde_json::from_str::<DecideRequest>(body).expect_err(body);
        assert_eq!(err.to_string(), error, "{body}");
    }
    // An unknown word reads (the handler answers its own 422).
    let req: DecideRequest =
        serde_json::from_str(r#"{"decision":"maybe","grant":"forever","arguments_digest":"a"}"#)
            .expect("reads");
    assert_eq!(req.decision, countersign_api::Decision::Unknown);
    assert_eq!(req.grant, Some(countersign_api::GrantKind::Unknown));
}
