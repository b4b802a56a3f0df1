//! The demo tools that ask the user for input while they run (MCP
//! elicitation, DESIGN §6a), so Countersign's input card can be tried and
//! tested against a real server:
//!
//! | tool               | asks                              | annotations on the wire              |
//! |--------------------|-----------------------------------|--------------------------------------|
//! | `file_note`        | a form: matter, confidentiality, notify (and a portal API key when the title names a portal) | readOnly false, destructive false, openWorld false |
//! | `confirm_identity` | a URL: this server's `/confirm-identity` page | readOnly true, destructive false, openWorld true |
//!
//! Each asks the way the session's protocol era allows: a 2025-11-25
//! session gets an `elicitation/create` request on the call's stream; a
//! 2026-07-28 request gets an `InputRequiredResult` (SEP-2322) carrying a
//! sealed `requestState`, and the retry must echo it intact. A client that
//! declared no elicitation capability is told so in the result, and
//! nothing is filed or shared.
//!
//! A call is recorded in the call log when it finishes (answered, declined
//! or cancelled), with the arguments it was called with.

use std::sync::OnceLock;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientResult, ContentBlock,
    ElicitRequest, InputRequests, InputRequiredResult, ServerRequest, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};

use super::object;
use crate::state::{DemoState, Sealer};

/// Files a note under a matter the user names in a form.
pub const FILE_NOTE: &str = "file_note";
/// Shares a document once the user confirms their identity on a page.
pub const CONFIRM_IDENTITY: &str = "confirm_identity";

/// The input key of the one request each tool makes.
const KEY: &str = "ask";

/// The seal of these tools' `requestState`, made once per process.
fn sealer() -> &'static Sealer {
    static SEALER: OnceLock<Sealer> = OnceLock::new();
    SEALER.get_or_init(Sealer::new)
}

pub(crate) fn descriptors() -> Vec<Tool> {
    vec![
        Tool::new(
            FILE_NOTE,
            "Files a note about a document under one of the firm's matters. It asks you \
             which matter, how confidential the note is and whether to tell the matter team, \
             in a form, before it files anything.",
            object(json!({
                "type": "object",
                "properties": {
                    "title": { "type": "string", "description": "The note's title.", "minLength": 1 }
                },
                "required": ["title"]
            })),
        )
        .with_title("File note")
        .with_annotations(
            ToolAnnotations::new()
                .read_only(false)
                .destructive(false)
                .open_world(false),
        ),
        Tool::new(
            CONFIRM_IDENTITY,
            "Shares a (made-up) document with you after you confirm your identity on the \
             demo server's confirmation page, which it asks you to open.",
            object(json!({
                "type": "object",
                "properties": {
                    "document": { "type": "string", "description": "The document's name.", "minLength": 1 }
                },
                "required": ["document"]
            })),
        )
        .with_title("Confirm identity")
        .with_annotations(
            ToolAnnotations::new()
                .read_only(true)
                .destructive(false)
                .open_world(true),
        ),
    ]
}

/// The form `file_note` asks for.
pub fn file_note_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "matter": {
                "type": "string",
                "title": "Matter number",
                "description": "As on the file, e.g. 2024-0117",
                "minLength": 1
            },
            "confidentiality": {
                "type": "string",
                "title": "Confidentiality",
                "oneOf": [
                    {"const": "public", "title": "Public"},
                    {"const": "internal", "title": "Internal"},
                    {"const": "privileged", "title": "Privileged"}
                ],
                "default": "privileged"
            },
            "notify_team": {
                "type": "boolean",
                "title": "Tell the matter team",
                "default": false
            }
        },
        "required": ["matter"]
    })
}

/// The form `file_note` asks with for a note titled `title`: a title
/// that names a portal ("Docketing portal filing") also asks for the
/// portal's API key — a form that asks for a secret, for the card's
/// warning (issue 44). Nothing is done with the key.
pub fn file_note_schema_for(title: &str) -> Value {
    let mut schema = file_note_schema();
    if title.to_lowercase().contains("portal") {
        schema["properties"]["portal_key"] = json!({
            "type": "string",
            "title": "Docketing portal API key",
            "description": "Only if the note is filed with the court's portal"
        });
    }
    schema
}

/// What the user answered.
enum Answer {
    Accept(Value),
    Decline,
    Cancel,
}

/// Runs `request` if it names one of these tools (`None` otherwise).
pub(crate) async fn call(
    state: &DemoState,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResponse, ErrorData>> {
    let name = request.name.as_ref();
    if name != FILE_NOTE && name != CONFIRM_IDENTITY {
        return None;
    }
    let arguments = request.arguments.clone().unwrap_or_default();
    let subject = |key: &str| {
        arguments
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let ask = if name == FILE_NOTE {
        let title = subject("title");
        json!({
            "mode": "form",
            "message": format!("Which matter should \"{title}\" be filed under?"),
            "requestedSchema": file_note_schema_for(&title)
        })
    } else {
        let document = subject("document");
        json!({
            "mode": "url",
            "message": format!("Confirm it is you before \"{document}\" is shared."),
            "url": format!("{}/confirm-identity?request={:016x}", origin(context), rand::random::<u64>()),
            "elicitationId": format!("{:016x}", rand::random::<u64>())
        })
    };
    let declared = context
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some();
    if !declared {
        return Some(text(
            "Nothing was done: this client cannot ask its user for input.".to_owned(),
        ));
    }
    // Only 2026-07-28 requests carry their protocol version in `_meta`.
    let answer = if context.meta.protocol_version().is_some() {
        // 2026-07-28: ask through the result; the retry carries the answer.
        match retried_answer(name, request) {
            Ok(Some(answer)) => answer,
            Ok(None) => return Some(input_required(name, ask)),
            Err(refused) => return Some(Err(refused)),
        }
    } else {
        match legacy_answer(context, ask).await {
            Ok(answer) => answer,
            Err(error) => return Some(Err(error)),
        }
    };
    state.record_call(name, &arguments);
    Some(text(if name == FILE_NOTE {
        filed(&subject("title"), answer)
    } else {
        shared(&subject("document"), answer)
    }))
}

fn filed(title: &str, answer: Answer) -> String {
    match answer {
        Answer::Accept(content) => {
            let matter = content["matter"].as_str().unwrap_or("?");
            let confidentiality = content["confidentiality"].as_str().unwrap_or("privileged");
            let told = if content["notify_team"].as_bool() == Some(true) {
                "the team was told"
            } else {
                "nobody was told"
            };
            format!("Filed \"{title}\" under matter {matter} as {confidentiality}; {told}.")
        }
        Answer::Decline => "Not filed: the user declined to say which matter.".to_owned(),
        Answer::Cancel => "Not filed: the user cancelled.".to_owned(),
    }
}

fn shared(document: &str, answer: Answer) -> String {
    match answer {
        Answer::Accept(_) => format!("Identity confirmed; \"{document}\" is shared with you."),
        Answer::Decline => "Not shared: the user declined to confirm their identity.".to_owned(),
        Answer::Cancel => "Not shared: cancelled.".to_owned(),
    }
}

/// `http://<Host>` of the request, where `/confirm-identity` is served.
fn origin(context: &RequestContext<RoleServer>) -> String {
    let host = context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.headers.get(axum::http::header::HOST))
        .and_then(|host| host.to_str().ok())
        .unwrap_or("127.0.0.1");
    format!("http://{host}")
}

/// The answer a 2026-07-28 retry carries: `None` on the first round (no
/// `requestState` yet), an error when the state was tampered with.
fn retried_answer(
    name: &str,
    request: &CallToolRequestParams,
) -> Result<Option<Answer>, ErrorData> {
    let Some(state) = &request.request_state else {
        return Ok(None);
    };
    if sealer().open(name, state) != Some(1) {
        return Err(ErrorData::invalid_params(
            "requestState failed its integrity check",
            None,
        ));
    }
    let responses = request.input_responses.clone().unwrap_or_default();
    Ok(responses.get(KEY).map(answer_of))
}

fn input_required(name: &str, ask: Value) -> Result<CallToolResponse, ErrorData> {
    let requests: InputRequests = serde_json::from_value(json!({
        KEY: {"method": "elicitation/create", "params": ask}
    }))
    .map_err(|e| ErrorData::internal_error(format!("input request: {e}"), None))?;
    Ok(CallToolResponse::from(InputRequiredResult::new(
        Some(requests),
        sealer().seal(name, 1),
    )))
}

async fn legacy_answer(
    context: &RequestContext<RoleServer>,
    ask: Value,
) -> Result<Answer, ErrorData> {
    let request: ElicitRequest =
        serde_json::from_value(json!({"method": "elicitation/create", "params": ask}))
            .map_err(|e| ErrorData::internal_error(format!("elicitation: {e}"), None))?;
    match context
        .peer
        .send_request(ServerRequest::ElicitRequest(request))
        .await
    {
        Ok(ClientResult::ElicitResult(result)) => Ok(answer_of(
            &serde_json::to_value(result).unwrap_or(Value::Null),
        )),
        Ok(_) => Err(ErrorData::internal_error(
            "the client answered something else",
            None,
        )),
        Err(error) => Err(ErrorData::internal_error(
            format!("elicitation failed: {error}"),
            None,
        )),
    }
}

/// An `ElicitResult`'s JSON as an [`Answer`].
fn answer_of(result: &Value) -> Answer {
    match result["action"].as_str() {
        Some("accept") => Answer::Accept(result.get("content").cloned().unwrap_or(json!({}))),
        Some("decline") => Answer::Decline,
        _ => Answer::Cancel,
    }
}

fn text(text: String) -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResponse::from(CallToolResult::success(vec![
        ContentBlock::text(text),
    ])))
}

/// `GET /confirm-identity`: the page `confirm_identity` asks the user to
/// open (it confirms nothing; the demo's answer is the user's "accept").
pub(crate) async fn confirmation_page() -> axum::response::Html<&'static str> {
    axum::response::Html(
        "<!doctype html><meta charset=utf-8><title>Identity confirmed</title>\
         <p>Identity confirmed (demo). You can close this tab and go back to Countersign.</p>",
    )
}
