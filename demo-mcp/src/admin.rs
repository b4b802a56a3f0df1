//! The admin endpoints tests and demos use to inspect and steer the server:
//!
//! - `GET  /admin/calls` — the call log, `{"total", "by_tool", "calls"}`;
//! - `POST /admin/calls/reset` — forget it (204);
//! - `POST /admin/drift {"field": "description"|"schema"|"annotations"|"disguise"}` —
//!   change that one field of `drifting_tool` (`disguise`: `delete_note` now
//!   claims to be read-only and closed-world, and still deletes);
//! - `POST /admin/add-tool` — list `late_arrival`;
//! - `POST /admin/hostile {"mode": "many_tools"|"huge_descriptor"|
//!   "huge_listing"|"huge_result"|"bad_header"}` — list what that mode lists
//!   (see `crate::tools::hostile`); answers 204, as its lists can be huge;
//! - `POST /admin/reset` — original tool list and notebook again.
//!
//! Drift, add-tool and reset answer `{"tools": [...]}`, the list exactly as `tools/list`
//! now serves it. They sit behind the same `Host`/`Origin` guard as `/mcp`
//! and have no other authentication: the server is loopback-only and holds
//! nothing but demo data.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::state::HostileMode;
use crate::state::{CallLog, DemoState, DriftField};
use crate::stringly;

/// The `/admin` routes.
pub(crate) fn routes() -> Router<DemoState> {
    Router::new()
        .route("/admin/calls", get(get_calls))
        .route("/admin/calls/reset", post(reset_calls))
        .route("/admin/drift", post(drift_tool))
        .route("/admin/add-tool", post(add_tool))
        .route("/admin/hostile", post(make_hostile))
        .route("/admin/reset", post(reset_tools))
}

async fn get_calls(State(state): State<DemoState>) -> Json<CallLog> {
    Json(state.calls())
}

async fn reset_calls(State(state): State<DemoState>) -> StatusCode {
    state.reset_calls();
    StatusCode::NO_CONTENT
}

#[derive(Deserialize)]
struct DriftRequest {
    field: String,
}

async fn drift_tool(State(state): State<DemoState>, Json(request): Json<DriftRequest>) -> Response {
    let Some(field) = DriftField::parse(&request.field) else {
        let detail =
            "field must be one of \"description\", \"schema\", \"annotations\", \"disguise\"";
        return (StatusCode::BAD_REQUEST, Json(json!({ "detail": detail }))).into_response();
    };
    state.drift(field);
    Json(tool_list(&state)).into_response()
}

async fn add_tool(State(state): State<DemoState>) -> Json<Value> {
    state.add_late_arrival();
    Json(tool_list(&state))
}

#[derive(Deserialize)]
struct HostileRequest {
    mode: String,
}

async fn make_hostile(
    State(state): State<DemoState>,
    Json(request): Json<HostileRequest>,
) -> Response {
    let Some(mode) = HostileMode::parse(&request.mode) else {
        let detail = "mode must be one of \"many_tools\", \"huge_descriptor\", \"huge_listing\", \"huge_result\", \"bad_header\", \"search_as_tool_error\", \"search_as_rpc_error\"";
        return (StatusCode::BAD_REQUEST, Json(json!({ "detail": detail }))).into_response();
    };
    state.make_hostile(mode);
    StatusCode::NO_CONTENT.into_response()
}

async fn reset_tools(State(state): State<DemoState>) -> Json<Value> {
    state.reset();
    Json(tool_list(&state))
}

/// `{"tools": [...]}` as `tools/list` serves it, string annotations included.
fn tool_list(state: &DemoState) -> Value {
    let mut listing = json!({ "result": { "tools": state.tools() } });
    stringly::patch(&mut listing);
    json!({ "tools": listing["result"]["tools"].take() })
}
