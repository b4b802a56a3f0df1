//! `/api/chats…`: list, create, read, rename, delete; send a message (starts
//! a turn); stop a turn. The stream lives in `http::stream`.

use super::{
    error::ApiError,
    extract::{CurrentUser, Json, Path, StampedUser, refuse_before_new_password},
    session::session_from_headers,
};
use crate::{AppState, db, events, turns};
use axum::{
    extract::State,
    http::{HeaderMap, StatusCode, Uri},
    response::IntoResponse,
};
use countersign_api::{
    ChatDetail, ChatMessage, ChatSummary, CreateChatRequest, SendMessageRequest, TurnAccepted,
    TurnRecord, UpdateChatRequest,
};

use time::{OffsetDateTime, format_description::well_known::Rfc3339};
use uuid::Uuid;

/// Providers a chat may name.
const PROVIDERS: [&str; 3] = ["anthropic", "openai", "offline"];

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap_or_default()
}

/// Checks `provider/model` shape and provider; the model name itself is the
/// provider's business (a typo fails the turn with a clear message).
fn parse_model(model: &str) -> Result<String, ApiError> {
    let model = model.trim();
    let ok = model.split_once('/').is_some_and(|(p, m)| {
        PROVIDERS.contains(&p)
            && !m.is_empty()
            && m.len() <= 190
            && !m.chars().any(char::is_control)
    });
    if ok {
        Ok(model.to_owned())
    } else {
        Err(ApiError::Unprocessable(format!(
            "Unknown model \"{model}\": use provider/model, e.g. offline/demo."
        )))
    }
}

fn parse_title(title: &str) -> Result<String, ApiError> {
    let title = title.trim();
    if title.chars().count() > 200 || title.chars().any(char::is_control) {
        return Err(ApiError::Unprocessable(
            "A title is at most 200 characters, on one line.".into(),
        ));
    }
    Ok(title.to_owned())
}

struct SummaryRow {
    id: Uuid,
    title: String,
    model: String,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

fn summary(row: SummaryRow) -> ChatSummary {
    ChatSummary {
        id: row.id.to_string(),
        title: row.title,
        model: row.model,
        created_at: rfc3339(row.created_at),
        updated_at: rfc3339(row.updated_at),
    }
}

/// `GET /api/chats`: the caller's chats, most recently used first.
#[utoipa::path(
    get,
    path = "/chats",
    tag = "chats",
    responses(
        (status = 200, description = "The caller's chats, most recently used first", body = Vec<countersign_api::ChatSummary>),
    ),
)]
pub async fn list_chats(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<axum::Json<Vec<ChatSummary>>, ApiError> {
    let mut tx = db::user_tx(&state.db, user.user_id).await?;
    // No `where user_id`: row-level security scopes it.
    let rows = sqlx::query_as!(
        SummaryRow,
        "select id, title, model, created_at, updated_at from chats order by updated_at desc, id",
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(axum::Json(rows.into_iter().map(summary).collect()))
}

/// `POST /api/chats` → 201 with the chat.
#[utoipa::path(
    post,
    path = "/chats",
    tag = "chats",
    request_body = countersign_api::CreateChatRequest,
    responses(
        (status = 201, description = "The new chat", body = countersign_api::ChatSummary),
        (status = 422, description = "An unknown or unusable model, or a title out of bounds", body = countersign_api::ErrorBody),
    ),
)]
pub async fn create_chat(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Json(req): Json<CreateChatRequest>,
) -> Result<impl IntoResponse, ApiError> {
    let model = parse_model(&req.model)?;
    let title = parse_title(req.title.as_deref().unwrap_or_default())?;
    let mut tx = db::user_tx(&state.db, user.user_id).await?;
    let row = sqlx::query_as!(
        SummaryRow,
        "insert into chats (id, title, model) values ($1, $2, $3)
         returning id, title, model, created_at, updated_at",
        Uuid::new_v4(),
        title,
        model,
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok((StatusCode::CREATED, axum::Json(summary(row))))
}

/// `GET /api/chats/{id}`: the chat, its finished messages, and where its
/// stream should resume (just before the running turn, if any). One
/// statement, so one snapshot: nothing falls between messages and events.
#[utoipa::path(
    get,
    path = "/chats/{id}",
    tag = "chats",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    responses(
        (status = 200, description = "The chat, its finished messages and turns, and where its stream resumes", body = countersign_api::ChatDetail),
        (status = 404, description = "No such chat of the caller", body = countersign_api::ErrorBody),
    ),
)]
pub async fn get_chat(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(chat_id): Path<Uuid>,
) -> Result<axum::Json<ChatDetail>, ApiError> {
    let mut tx = db::user_tx(&state.db, user.user_id).await?;
    let row = sqlx::query!(
        r#"select c.id, c.title, c.model, c.created_at, c.updated_at, c.last_seq,
                r.id as "running?", r.started_seq as "running_seq?",
                coalesce((select json_agg(json_build_object(
                             'id', m.id, 'turn_id', m.turn_id, 'role', m.role,
                             'content', m.content, 'status', m.status,
                             'created_at', m.created_at)
                           order by m.created_at, m.role = 'assistant')
                            from messages m join turns t on t.id = m.turn_id
                           where m.chat_id = c.id and t.status <> 'running'), '[]'::json)
                  as "messages!",
                coalesce((select json_agg(json_build_object(
                             'turn_id', t.id, 'status', t.status,
                             'events', coalesce(h.events, '[]'::json),
                             'text_before', coalesce(h.text_before, '[]'::json))
                           order by t.started_at)
                            from turns t
                            left join lateral (
                              -- Each event, with the characters of answer
                              -- text streamed before it (the deltas
                              -- themselves stay out: the message has them).
                              select json_agg(x.data order by x.seq) as events,
                                     json_agg(x.before order by x.seq) as text_before
                                from (select e.seq, e.type, e.data,
                                             coalesce(sum(length(e.data->>'text'))
                                                        filter (where e.type = 'text_delta')
                                                        over (order by e.seq), 0) as before
                                        from chat_events e
                                       where e.chat_id = c.id and e.turn_id = t.id
                                         and e.type in ('text_delta', 'tool_call', 'tool_result', 'error',
                                                        'mcp_confirmation_required', 'mcp_confirmation_resolved',
                                                        'mcp_tool_call', 'mcp_input_required',
                                                        'mcp_input_resolved')) x
                               where x.type <> 'text_delta') h on true
                           where t.chat_id = c.id and t.status <> 'running'), '[]'::json)
                  as "turn_records!"
           from chats c
           left join turns r on r.chat_id = c.id and r.status = 'running'
          where c.id = $1"#,
        chat_id,
    )
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    let Some(row) = row else {
        return Err(ApiError::NotFound("No such chat.".into()));
    };
    let (last_seq, running, running_seq) = (row.last_seq, row.running, row.running_seq);
    let messages: Vec<ChatMessage> =
        serde_json::from_value(row.messages).map_err(|e| ApiError::Internal(e.into()))?;
    let turn_records: Vec<TurnRecord> =
        serde_json::from_value(row.turn_records).map_err(|e| ApiError::Internal(e.into()))?;
    let s = summary(SummaryRow {
        id: row.id,
        title: row.title,
        model: row.model,
        created_at: row.created_at,
        updated_at: row.updated_at,
    });
    Ok(axum::Json(ChatDetail {
        id: s.id,
        title: s.title,
        model: s.model,
        created_at: s.created_at,
        updated_at: s.updated_at,
        messages,
        running_turn_id: running.map(|id| id.to_string()),
        resume_after: running_seq.map_or(last_seq, |seq| seq - 1),
        turns: turn_records,
    }))
}

/// `PATCH /api/chats/{id}`: rename, or switch the model for later turns.
#[utoipa::path(
    patch,
    path = "/chats/{id}",
    tag = "chats",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    request_body = countersign_api::UpdateChatRequest,
    responses(
        (status = 200, description = "The chat as changed", body = countersign_api::ChatSummary),
        (status = 404, description = "No such chat of the caller", body = countersign_api::ErrorBody),
        (status = 422, description = "An unknown model or a title out of bounds", body = countersign_api::ErrorBody),
    ),
)]
pub async fn update_chat(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(chat_id): Path<Uuid>,
    Json(req): Json<UpdateChatRequest>,
) -> Result<axum::Json<ChatSummary>, ApiError> {
    let title = req.title.as_deref().map(parse_title).transpose()?;
    let model = req.model.as_deref().map(parse_model).transpose()?;
    let mut tx = db::user_tx(&state.db, user.user_id).await?;
    let row = sqlx::query_as!(
        SummaryRow,
        "update chats set title = coalesce($2, title), model = coalesce($3, model), updated_at = now()
          where id = $1
          returning id, title, model, created_at, updated_at",
        chat_id,
        title,
        model,
    )
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    row.map(|r| axum::Json(summary(r)))
        .ok_or_else(|| ApiError::NotFound("No such chat.".into()))
}

/// `DELETE /api/chats/{id}` → 204. A running turn is stopped first.
#[utoipa::path(
    delete,
    path = "/chats/{id}",
    tag = "chats",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    responses(
        (status = 204, description = "Deleted (a running turn is stopped first)"),
        (status = 404, description = "No such chat of the caller", body = countersign_api::ErrorBody),
    ),
)]
pub async fn delete_chat(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(chat_id): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    let mut tx = db::user_tx(&state.db, user.user_id).await?;
    let running: Vec<Uuid> = sqlx::query_scalar!(
        "select id from turns where chat_id = $1 and status = 'running'",
        chat_id,
    )
    .fetch_all(&mut *tx)
    .await?;
    for turn_id in &running {
        events::request_cancel(&mut tx, *turn_id).await?;
    }
    let deleted = sqlx::query!("delete from chats where id = $1", chat_id,)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    for turn_id in running {
        state.hub.cancel_local(turn_id);
    }
    if deleted.rows_affected() == 0 {
        return Err(ApiError::NotFound("No such chat.".into()));
    }
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/chats/{id}/messages` → 202 `{turn_id}`; 409 while a turn of
/// the chat runs.
#[utoipa::path(
    post,
    path = "/chats/{id}/messages",
    tag = "chats",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    request_body = countersign_api::SendMessageRequest,
    responses(
        (status = 202, description = "A turn started; follow it on the chat's stream", body = countersign_api::TurnAccepted),
        (status = 404, description = "No such chat of the caller", body = countersign_api::ErrorBody),
        (status = 409, description = "A turn of this chat is running", body = countersign_api::ErrorBody),
        (status = 422, description = "An empty or too long message, or a model the caller cannot use", body = countersign_api::ErrorBody),
        (status = 503, description = "The session changed twice while the message was sent; nothing was stored, send it again", body = countersign_api::ErrorBody),
    ),
)]
pub async fn send_message(
    State(state): State<AppState>,
    StampedUser { user, known }: StampedUser,
    headers: HeaderMap,
    uri: Uri,
    Path(chat_id): Path<Uuid>,
    Json(req): Json<SendMessageRequest>,
) -> Result<impl IntoResponse, ApiError> {
    let started = turns::start(&state, user.user_id, user.stamp, chat_id, &req.content).await;
    let turn_id = match started {
        // The session was known here from an earlier request, and its
        // stamp no longer holds (a sign-out, a revocation, a change to the
        // user, here or elsewhere): nothing was stored. The session is
        // looked up now, and the turn started on that, or refused as any
        // request with that session would be.
        Err(turns::TurnError::SessionChanged) if known => {
            let user = session_from_headers(&headers, &state)
                .await?
                .filter(|found| found.session_id == user.session_id)
                .ok_or_else(ApiError::sign_in_required)?;
            refuse_before_new_password(&user, uri.path())?;
            turns::start(&state, user.user_id, user.stamp, chat_id, &req.content).await?
        }
        started => started?,
    };
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(TurnAccepted {
            turn_id: turn_id.to_string(),
        }),
    ))
}

/// `POST /api/chats/{id}/turns/{turn_id}/cancel` → 202; 409 when the turn
/// already finished.
#[utoipa::path(
    post,
    path = "/chats/{id}/turns/{turn_id}/cancel",
    tag = "chats",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
        ("turn_id" = Uuid, Path, description = "The turn (a UUID)."),
    ),
    responses(
        (status = 202, description = "The Stop is on its way to whichever instance runs the turn", body = countersign_api::CancelAccepted),
        (status = 404, description = "No such chat or turn of the caller", body = countersign_api::ErrorBody),
        (status = 409, description = "The turn already finished", body = countersign_api::ErrorBody),
    ),
)]
pub async fn cancel_turn(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path((chat_id, turn_id)): Path<(Uuid, Uuid)>,
) -> Result<impl IntoResponse, ApiError> {
    turns::cancel(&state, user.user_id, chat_id, turn_id).await?;
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(countersign_api::CancelAccepted {
            status: "cancelling".into(),
        }),
    ))
}
