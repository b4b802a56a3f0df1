//! `/admin/drift`, `/admin/add-tool`, `/admin/hostile`, `/admin/reset`:
//! each changes exactly what it says, as seen through `tools/list`.

use serde_json::{Map, Value, json};

use crate::helpers::{names, spawn_server, tool};

/// Every tool but `drifting_tool`, and `drifting_tool`'s fields.
fn split(tools: &[Value]) -> (Vec<Value>, Map<String, Value>) {
    let others = tools
        .iter()
        .filter(|t| t["name"] != "drifting_tool")
        .cloned()
        .collect();
    let drifting = tool(tools, "drifting_tool")
        .as_object()
        .expect("an object")
        .clone();
    (others, drifting)
}

#[tokio::test]
async fn drifting_one_field_changes_exactly_that_field_of_drifting_tool() {
    let cases = [
        ("description", "description"),
        ("schema", "inputSchema"),
        ("annotations", "annotations"),
    ];
    for (field, member) in cases {
        let server = spawn_server().await;
        let (others_before, before) = split(&server.tools_2026().await);

        let response = server
            .admin_post("/admin/drift", Some(json!({ "field": field })))
            .await;

        assert_eq!(response.status(), 200, "{field}");
        let listed: Value = response.json().await.expect("JSON");
        let after_list = server.tools_2026().await;
        assert_eq!(
            listed["tools"],
            json!(after_list),
            "{field}: the answer is the new list"
        );
        let (others_after, after) = split(&after_list);
        assert_eq!(
            others_after, others_before,
            "{field}: other tools untouched"
        );
        let mut expected = before.clone();
        match field {
            "description" => {
                let drifted = format!(
                    "{} (updated)",
                    before["description"].as_str().expect("text")
                );
                expected.insert(member.into(), json!(drifted));
            }
            "schema" => {
                expected["inputSchema"]["properties"]["limit"] = json!({
                    "type": "integer",
                    "description": "At most this many status entries.",
                    "minimum": 1
                });
            }
            _ => {
                expected.insert(
                    member.into(),
                    json!({"readOnlyHint": false, "destructiveHint": true, "openWorldHint": false}),
                );
            }
        }
        assert_eq!(
            after, expected,
            "{field}: only {member} changed, as specified"
        );
    }
}

#[tokio::test]
async fn drifting_the_same_field_twice_changes_it_once() {
    let server = spawn_server().await;
    server
        .admin_post("/admin/drift", Some(json!({"field": "description"})))
        .await;
    let once = server.tools_2026().await;

    server
        .admin_post("/admin/drift", Some(json!({"field": "description"})))
        .await;

    assert_eq!(server.tools_2026().await, once);
}

#[tokio::test]
async fn drifting_an_unknown_field_is_a_400_and_changes_nothing() {
    let server = spawn_server().await;
    let before = server.tools_2026().await;

    let response = server
        .admin_post("/admin/drift", Some(json!({"field": "name"})))
        .await;

    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.expect("JSON");
    assert!(
        body["detail"]
            .as_str()
            .is_some_and(|d| d.contains("description")),
        "{body}"
    );
    assert_eq!(server.tools_2026().await, before);
}

#[tokio::test]
async fn add_tool_lists_a_read_only_late_arrival_that_can_be_called() {
    let server = spawn_server().await;
    let before = server.tools_2026().await;

    let response = server.admin_post("/admin/add-tool", None).await;

    assert_eq!(response.status(), 200);
    let after = server.tools_2026().await;
    assert_eq!(after.len(), before.len() + 1);
    assert!(names(&after).contains(&"late_arrival"));
    assert_eq!(
        tool(&after, "late_arrival")["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "openWorldHint": false})
    );
    let call = server.call_2026("late_arrival", json!({})).await;
    assert_eq!(call["result"]["isError"], false, "{call}");
    assert_eq!(server.calls().await["by_tool"], json!({"late_arrival": 1}));
}

#[tokio::test]
async fn reset_restores_the_original_tool_list_and_notebook() {
    let server = spawn_server().await;
    let original = server.tools_2026().await;
    for field in ["description", "schema", "annotations"] {
        server
            .admin_post("/admin/drift", Some(json!({ "field": field })))
            .await;
    }
    server.admin_post("/admin/add-tool", None).await;
    server
        .call_2026("delete_note", json!({"id": "note-1"}))
        .await;
    assert_ne!(
        server.tools_2026().await,
        original,
        "arranged a changed list"
    );

    let response = server.admin_post("/admin/reset", None).await;

    assert_eq!(response.status(), 200);
    assert_eq!(server.tools_2026().await, original);
    let search = server
        .call_2026("search_notes", json!({"query": "Harbour"}))
        .await;
    assert!(
        crate::helpers::text_of(&search).contains("note-1"),
        "{search}"
    );
}

#[tokio::test]
async fn a_hostile_mode_lists_its_tools_until_reset_and_an_unknown_mode_is_a_400() {
    let server = spawn_server().await;
    let listed = |tools: Vec<Value>| -> Vec<String> {
        names(&tools).into_iter().map(str::to_owned).collect()
    };
    let before = listed(server.tools_2026().await);

    let unknown = server
        .admin_post("/admin/hostile", Some(json!({ "mode": "everything" })))
        .await;
    assert_eq!(unknown.status(), 400);
    assert_eq!(listed(server.tools_2026().await), before, "nothing changed");

    let response = server
        .admin_post("/admin/hostile", Some(json!({ "mode": "bad_header" })))
        .await;
    assert_eq!(response.status(), 204);
    let tools = server.tools_2026().await;
    assert_eq!(
        tool(&tools, "bad_header_tool")["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Bad Header"
    );
    assert_eq!(names(&tools).len(), before.len() + 1);

    server.admin_post("/admin/reset", None).await;
    assert_eq!(
        listed(server.tools_2026().await),
        before,
        "reset ends the mode"
    );
}
