//! Input requests (DESIGN §6a): a running MCP call's server asks the user
//! for input, and the question becomes a card in the chat — never an
//! automatic answer.
//!
//! What it owns: **the only writer of `mcp_input_requests`**. A question
//! is checked ([`Question::from_request`]: form mode needs an object
//! schema, URL mode an http(s) URL whose host is shown; both bounded),
//! stored and announced ([`CardAsker`], the [`AskUser`] a call's MCP
//! session asks through: `mcp_input_required`), waited for ([`wait`]:
//! NOTIFY from any instance, a poll as fallback, Stop, expiry by
//! conditional UPDATE that honours an answer which landed first) and
//! answered ([`answer`]: one conditional UPDATE on id + user + pending +
//! unexpired, the content checked against the requested schema first by
//! [`content::check`]). The answer goes back to the server as MCP's
//! `accept` (with the content) / `decline` / `cancel`; expiry and Stop are
//! `cancel`. The call that asks is the same approved call: nothing here
//! proposes, approves or runs anything.
//!
//! What it deliberately does not do: render anything (the web app does,
//! never as HTML, never a password field), open a URL, or keep an
//! answer's content beyond the retention of the row.

pub mod content;
pub mod secret;

use crate::{
    AppState, db, events,
    ids::{ChatId, ConnectorId, ToolContext, TurnId, UserId},
    mcp::AskUser,
};
use countersign_api::{ChatEvent, InputAction, InputMode, InputRequest, InputRequestStatus};
use futures_util::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use time::{OffsetDateTime, format_description::well_known::Rfc3339};
use tokio::sync::watch;
use uuid::Uuid;

/// The longest message a server may ask with, in characters.
pub const MAX_MESSAGE_CHARS: usize = 4_000;
/// The largest requested schema, in bytes of JSON.
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// The longest URL a server may ask the user to open, in bytes.
pub const MAX_URL_BYTES: usize = 8 * 1024;

/// A question a server may put to the user, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// `form` or `url`.
    pub mode: InputMode,
    /// The server's words.
    pub message: String,
    /// Form mode: the requested schema, an object.
    pub requested_schema: Option<Value>,
    /// URL mode: the URL as sent, and its host (with an explicit port).
    pub url: Option<(String, String)>,
}

impl Question {
    /// The question in `request`, or why it is not put to the user (the
    /// server is then told "decline").
    pub fn from_request(request: &ElicitRequestParams) -> Result<Self, String> {
        let check_message = |message: &str| {
            if message.chars().count() > MAX_MESSAGE_CHARS {
                Err(format!(
                    "its message is longer than {MAX_MESSAGE_CHARS} characters"
                ))
            } else {
                Ok(message.to_owned())
            }
        };
        match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                let schema = serde_json::to_value(requested_schema)
                    .map_err(|_| "its form could not be read".to_owned())?;
                if !schema.is_object() {
                    return Err("its form is not a JSON object".to_owned());
                }
                if schema.to_string().len() > MAX_SCHEMA_BYTES {
                    return Err(format!("its form is larger than {MAX_SCHEMA_BYTES} bytes"));
                }
                Ok(Self {
                    mode: InputMode::Form,
                    message: check_message(message)?,
                    requested_schema: Some(schema),
                    url: None,
                })
            }
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                if url.len() > MAX_URL_BYTES {
                    return Err(format!("its URL is longer than {MAX_URL_BYTES} bytes"));
                }
                let parsed =
                    reqwest::Url::parse(url).map_err(|_| "its URL is not a URL".to_owned())?;
                if !matches!(parsed.scheme(), "https" | "http") {
                    return Err(format!(
                        "its URL is a {}: address, not a web page",
                        parsed.scheme()
                    ));
                }
                let host = url_host(&parsed).ok_or("its URL names no host")?;
                Ok(Self {
                    mode: InputMode::Url,
                    message: check_message(message)?,
                    requested_schema: None,
                    url: Some((url.clone(), host)),
                })
            }
            _ => Err("it asks in a mode Countersign does not know".to_owned()),
        }
    }
}

/// The host of `url` as a browser's address bar shows it: punycode stays
/// punycode (the URL parser writes IDNs so), an explicit port is kept.
fn url_host(url: &reqwest::Url) -> Option<String> {
    let host = url.host_str().filter(|h| !h.is_empty())?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

/// A stored input request.
#[derive(Debug, Clone)]
pub struct Row {
    /// What the answer is posted to.
    pub id: Uuid,
    /// The only user who may answer.
    pub user_id: UserId,
    pub chat_id: ChatId,
    pub turn_id: TurnId,
    /// The model's id for the call that asks.
    pub call_id: String,
    pub connector_name: String,
    pub tool_name: String,
    pub mode: InputMode,
    pub message: String,
    pub requested_schema: Option<Value>,
    pub url: Option<String>,
    pub url_host: Option<String>,
    /// Where it stands.
    pub status: InputRequestStatus,
    /// The turn stops waiting then (`decide_by`).
    pub expires_at: OffsetDateTime,
}

impl Row {
    fn decide_by(&self) -> String {
        self.expires_at.format(&Rfc3339).unwrap_or_default()
    }

    /// The `mcp_input_required` event.
    pub fn required_event(&self) -> ChatEvent {
        ChatEvent::McpInputRequired {
            turn_id: self.turn_id.to_string(),
            id: self.id.to_string(),
            call_id: self.call_id.clone(),
            connector_name: self.connector_name.clone(),
            tool_name: self.tool_name.clone(),
            mode: self.mode,
            message: self.message.clone(),
            requested_schema: self.requested_schema.clone(),
            url: self.url.clone(),
            url_host: self.url_host.clone(),
            decide_by: self.decide_by(),
            secret_fields: self.secret_fields(),
        }
    }

    /// The form's fields that ask for a secret ([`secret::secret_fields`]).
    fn secret_fields(&self) -> Vec<String> {
        self.requested_schema
            .as_ref()
            .map(secret::secret_fields)
            .unwrap_or_default()
    }

    /// The row as `GET /api/mcp-input-requests` shows it.
    pub fn to_api(&self, decide_in_secs: f64) -> InputRequest {
        InputRequest {
            id: self.id.to_string(),
            chat_id: self.chat_id.to_string(),
            turn_id: self.turn_id.to_string(),
            call_id: self.call_id.clone(),
            connector_name: self.connector_name.clone(),
            tool_name: self.tool_name.clone(),
            mode: self.mode,
            message: self.message.clone(),
            requested_schema: self.requested_schema.clone(),
            url: self.url.clone(),
            url_host: self.url_host.clone(),
            decide_by: self.decide_by(),
            decide_in_secs,
            secret_fields: self.secret_fields(),
        }
    }
}

/// Who asks, for [`open`].
#[derive(Debug, Clone)]
pub struct Asking<'a> {
    pub ctx: ToolContext,
    pub call_id: &'a str,
    pub connector_id: ConnectorId,
    pub connector_name: &'a str,
    pub tool_name: &'a str,
}

/// Writes a `pending` row for `question`, answerable for
/// `COUNTERSIGN_APPROVAL_WAIT_SECS` from the database's now. Sweeps aged
/// answered rows first (best effort).
pub async fn open(
    state: &AppState,
    asking: &Asking<'_>,
    question: &Question,
    request_state: Option<&str>,
) -> Result<Row, sqlx::Error> {
    if let Err(err) = sweep(state).await {
        tracing::warn!(error = %err, "input request sweep failed");
    }
    let (url, url_host) = match &question.url {
        Some((url, host)) => (Some(url.as_str()), Some(host.as_str())),
        None => (None, None),
    };
    let mut tx = db::service_tx(&state.db).await?;
    let row = sqlx::query_as!(
        Row,
        r#"insert into mcp_input_requests (id, user_id, chat_id, turn_id, call_id, connector_id,
             connector_name, tool_name, mode, message, requested_schema, url, url_host,
             request_state, expires_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
                 date_trunc('microseconds', now() + make_interval(secs => $15::float8)))
         returning id, user_id as "user_id: _", chat_id as "chat_id: _",
                   turn_id as "turn_id: _", call_id, connector_name, tool_name,
                   mode as "mode: _", message, requested_schema, url, url_host,
                   status as "status: _", expires_at"#,
        Uuid::new_v4(),
        asking.ctx.user_id as UserId,
        asking.ctx.chat_id as ChatId,
        asking.ctx.turn_id as TurnId,
        asking.call_id,
        asking.connector_id as ConnectorId,
        asking.connector_name,
        asking.tool_name,
        question.mode.as_str(),
        &question.message,
        question.requested_schema.as_ref(),
        url,
        url_host,
        request_state,
        state.config.approval_wait_secs as f64,
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(row)
}

/// The user's live (pending, unexpired) input requests, oldest first, with
/// the seconds each has left.
pub async fn live_for_user(
    state: &AppState,
    user_id: UserId,
) -> Result<Vec<(Row, f64)>, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let rows = sqlx::query!(
        r#"select id, user_id as "user_id: UserId", chat_id as "chat_id: ChatId",
                  turn_id as "turn_id: TurnId", call_id, connector_name, tool_name,
                  mode as "mode: InputMode", message, requested_schema, url, url_host,
                  status as "status: InputRequestStatus", expires_at,
                  extract(epoch from expires_at - now())::float8 as "left!"
             from mcp_input_requests
            where user_id = $1 and status = 'pending' and expires_at > now()
            order by created_at"#,
        user_id as UserId,
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let row = Row {
                id: r.id,
                user_id: r.user_id,
                chat_id: r.chat_id,
                turn_id: r.turn_id,
                call_id: r.call_id,
                connector_name: r.connector_name,
                tool_name: r.tool_name,
                mode: r.mode,
                message: r.message,
                requested_schema: r.requested_schema,
                url: r.url,
                url_host: r.url_host,
                status: r.status,
                expires_at: r.expires_at,
            };
            (row, r.left)
        })
        .collect())
}

/// Why an answer was not taken.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// Unknown, another user's, or already answered.
    #[error("No such input request.")]
    NotFound,
    /// The owner answered too late.
    #[error("This input request has expired.")]
    Expired,
    /// The content does not fit the requested schema (names the field).
    #[error("{0}")]
    Invalid(String),
    /// Database failure.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Answers input request `id` of `user_id`: an `accept` in form mode is
/// checked against the stored schema first (nothing is answered when it
/// does not fit); then one conditional UPDATE (id + user + pending +
/// unexpired) and `NOTIFY`. When it changes no row, a read says why.
pub async fn answer(
    state: &AppState,
    user_id: UserId,
    id: Uuid,
    action: InputAction,
    content: Option<Map<String, Value>>,
) -> Result<InputRequestStatus, AnswerError> {
    let status = InputRequestStatus::of(action);
    if status == InputRequestStatus::Unknown {
        return Err(AnswerError::Invalid(
            "action must be \"accept\", \"decline\" or \"cancel\".".into(),
        ));
    }
    let mut tx = db::service_tx(&state.db).await?;
    let found = sqlx::query!(
        r#"select mode as "mode: InputMode", requested_schema,
                  status as "status: InputRequestStatus", expires_at <= now() as "late!"
             from mcp_input_requests where id = $1 and user_id = $2"#,
        id,
        user_id as UserId,
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(found) = found else {
        return Err(AnswerError::NotFound);
    };
    match (found.status, found.late) {
        (InputRequestStatus::Pending, false) => {}
        (InputRequestStatus::Pending, true) | (InputRequestStatus::Expired, _) => {
            return Err(AnswerError::Expired);
        }
        _ => return Err(AnswerError::NotFound),
    }
    // Only an accepted form carries content; anything else sends none.
    let content = match (action, found.mode) {
        (InputAction::Accept, InputMode::Form) => {
            let content = content.unwrap_or_default();
            content::check(found.requested_schema.as_ref(), &content)
                .map_err(AnswerError::Invalid)?;
            Some(Value::Object(content))
        }
        _ => None,
    };
    let answered = sqlx::query!(
        "update mcp_input_requests set status = $3, content = $4, answered_at = now()
          where id = $1 and user_id = $2 and status = 'pending' and expires_at > now()",
        id,
        user_id as UserId,
        status.as_str(),
        content,
    )
    .execute(&mut *tx)
    .await?;
    if answered.rows_affected() != 1 {
        // The row was read in this transaction a moment ago: it expired in
        // between (the clock) — another answer would have waited on the lock.
        return Err(AnswerError::Expired);
    }
    events::notify_answered(&mut tx, id).await?;
    tx.commit().await?;
    Ok(status)
}

/// What a secret field's answer shows as on the answered card.
pub const MASKED: &str = "\u{2022}\u{2022}\u{2022}\u{2022}\u{2022}\u{2022}";

/// `content` with the value of every field in `secret_fields` replaced by
/// [`MASKED`] (the event is kept in the chat: a secret never is).
pub fn masked(content: &Value, secret_fields: &[String]) -> Value {
    match content {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(name, value)| {
                    let shown = if secret_fields.contains(name) {
                        Value::String(MASKED.to_owned())
                    } else {
                        value.clone()
                    };
                    (name.clone(), shown)
                })
                .collect(),
        ),
        // A form's content is an object; anything else is not shown.
        _ => Value::Object(Map::new()),
    }
}

/// How a wait ended: the status, and with `accepted` the content.
pub type Answered = (InputRequestStatus, Option<Value>);

/// Waits for the answer to `id`, at most `COUNTERSIGN_APPROVAL_WAIT_SECS`,
/// holding no database connection between reads, waking on any
/// instance's NOTIFY or the poll interval. A Stop cancels the request. At
/// the end, expiry by conditional UPDATE; if it changes no row, an answer
/// won the race and is honoured.
pub async fn wait(
    state: &AppState,
    id: Uuid,
    cancel: &mut watch::Receiver<bool>,
) -> Result<Answered, sqlx::Error> {
    let deadline =
        tokio::time::Instant::now() + Duration::from_secs(state.config.approval_wait_secs);
    let poll = Duration::from_millis(state.config.approval_poll_ms.max(10));
    let mut wake = state.hub.subscribe_approvals();
    loop {
        if *cancel.borrow_and_update() {
            return close(state, id, InputRequestStatus::Cancelled).await;
        }
        if let Some(answered) = answered(state, id).await? {
            return Ok(answered);
        }
        tokio::select! {
            woken = wake.recv() => {
                if matches!(woken, Err(tokio::sync::broadcast::error::RecvError::Closed)) {
                    return close(state, id, InputRequestStatus::Expired).await;
                }
            }
            () = tokio::time::sleep(poll) => {}
            () = tokio::time::sleep_until(deadline) => {
                return close(state, id, InputRequestStatus::Expired).await;
            }
            changed = cancel.changed() => {
                if changed.is_err() {
                    // The turn's sender is gone: nobody can stop it now.
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}

/// The answer to `id`, once it is no longer pending.
async fn answered(state: &AppState, id: Uuid) -> Result<Option<Answered>, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let row = sqlx::query!(
        r#"select status as "status: InputRequestStatus", content
             from mcp_input_requests where id = $1"#,
        id,
    )
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(match row {
        None => Some((InputRequestStatus::Expired, None)),
        Some(r) if r.status == InputRequestStatus::Pending => None,
        Some(r) => Some((r.status, r.content)),
    })
}

/// `pending → to` (expired, or cancelled by a Stop); when no row changes,
/// an answer landed first: honour it.
async fn close(
    state: &AppState,
    id: Uuid,
    to: InputRequestStatus,
) -> Result<Answered, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let closed = sqlx::query!(
        "update mcp_input_requests set status = $2, answered_at = now()
          where id = $1 and status = 'pending'",
        id,
        to.as_str(),
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    if closed.rows_affected() == 1 {
        return Ok((to, None));
    }
    Ok(answered(state, id)
        .await?
        .unwrap_or((InputRequestStatus::Expired, None)))
}

/// Deletes answered rows (and their content) older than the approval
/// retention, at most 500 at a time.
pub async fn sweep(state: &AppState) -> Result<u64, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let deleted = sqlx::query!(
        "delete from mcp_input_requests where id in (
             select id from mcp_input_requests
              where status <> 'pending'
                and created_at < now() - make_interval(secs => $1::float8)
              limit 500)",
        state.config.approval_retention_secs as f64,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(deleted.rows_affected())
}

/// Start-up (and periodic) recovery: pending requests whose turn no longer
/// runs anywhere expire, and their chats hear of it, so no card stays
/// open. Returns how many.
pub async fn recover(state: &AppState, stale_secs: f64) -> Result<u64, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let closed = sqlx::query!(
        r#"update mcp_input_requests r set status = 'expired', answered_at = now()
             from mcp_input_requests o left join turns t on t.id = o.turn_id
            where r.id = o.id and o.status = 'pending'
              and (t.id is null or t.status <> 'running'
                   or t.heartbeat_at < now() - make_interval(secs => $1::float8))
        returning r.id, r.user_id as "user_id: UserId", r.chat_id as "chat_id: ChatId",
                  r.turn_id as "turn_id: TurnId""#,
        stale_secs,
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    for row in &closed {
        let event = ChatEvent::McpInputResolved {
            turn_id: row.turn_id.to_string(),
            id: row.id.to_string(),
            status: InputRequestStatus::Expired,
            answers: None,
            answered_at: None,
        };
        emit(state, row.user_id, row.chat_id, row.turn_id, &event).await;
    }
    if !closed.is_empty() {
        tracing::warn!(
            count = closed.len(),
            "input requests: expired those of turns that stopped running"
        );
    }
    Ok(closed.len() as u64)
}

/// Appends `event` to the chat (best effort, logged); also the result
/// review's (`crate::results`), whose cards live in the same chats.
pub(crate) async fn emit(
    state: &AppState,
    user_id: UserId,
    chat_id: ChatId,
    turn_id: TurnId,
    event: &ChatEvent,
) {
    let result = async {
        let mut tx = db::user_tx(&state.db, user_id).await?;
        events::append(&mut tx, chat_id, Some(turn_id), event).await?;
        tx.commit().await
    }
    .await;
    if let Err(err) = result {
        tracing::error!(error = %err, turn.id = %turn_id, "cannot write a card's event");
    }
}

/// The person behind one call: each request for input the call's server
/// makes becomes a card in the call's chat, and waits for the user.
pub struct CardAsker {
    state: AppState,
    ctx: ToolContext,
    call_id: String,
    connector_id: ConnectorId,
    connector_name: String,
    tool_name: String,
    cancel: watch::Receiver<bool>,
    /// Milliseconds this call's questions waited for the user, added up:
    /// the call's own run time leaves them out.
    waited: Arc<AtomicU64>,
}

impl std::fmt::Debug for CardAsker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CardAsker")
            .field("ctx", &self.ctx)
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

impl CardAsker {
    /// Asks in `ctx`'s chat for call `call_id` of `tool_name` on the
    /// connector; `cancel` is the turn's Stop. The time each question waits
    /// for the user is added to `waited`.
    pub fn new(
        state: AppState,
        asking: &Asking<'_>,
        cancel: watch::Receiver<bool>,
        waited: Arc<AtomicU64>,
    ) -> Self {
        Self {
            state,
            ctx: asking.ctx,
            call_id: asking.call_id.to_owned(),
            connector_id: asking.connector_id,
            connector_name: asking.connector_name.to_owned(),
            tool_name: asking.tool_name.to_owned(),
            cancel,
            waited,
        }
    }

    async fn ask_user(
        &self,
        request: &ElicitRequestParams,
        request_state: Option<&str>,
    ) -> ElicitResult {
        let question = match Question::from_request(request) {
            Ok(question) => question,
            Err(why) => {
                tracing::warn!(connector = %self.connector_name, %why, "input request refused unasked");
                return ElicitResult::new(ElicitationAction::Decline);
            }
        };
        let asking = Asking {
            ctx: self.ctx,
            call_id: &self.call_id,
            connector_id: self.connector_id,
            connector_name: &self.connector_name,
            tool_name: &self.tool_name,
        };
        let row = match open(&self.state, &asking, &question, request_state).await {
            Ok(row) => row,
            Err(err) => {
                tracing::error!(error = %err, "cannot store an input request; cancelling it");
                return ElicitResult::new(ElicitationAction::Cancel);
            }
        };
        emit(
            &self.state,
            self.ctx.user_id,
            self.ctx.chat_id,
            self.ctx.turn_id,
            &row.required_event(),
        )
        .await;
        let mut cancel = self.cancel.clone();
        let asked = std::time::Instant::now();
        let (status, content) = match wait(&self.state, row.id, &mut cancel).await {
            Ok(answered) => answered,
            Err(err) => {
                tracing::error!(error = %err, "cannot read an input request; cancelling it");
                (InputRequestStatus::Cancelled, None)
            }
        };
        let waited_ms = u64::try_from(asked.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.waited.fetch_add(waited_ms, Ordering::Relaxed);
        // What the user sent, for the answered card's story: secrets masked.
        let answers = (status == InputRequestStatus::Accepted)
            .then(|| content.as_ref().map(|c| masked(c, &row.secret_fields())))
            .flatten();
        let answered_at = (status == InputRequestStatus::Accepted)
            .then(|| OffsetDateTime::now_utc().format(&Rfc3339).ok())
            .flatten();
        emit(
            &self.state,
            self.ctx.user_id,
            self.ctx.chat_id,
            self.ctx.turn_id,
            &ChatEvent::McpInputResolved {
                turn_id: self.ctx.turn_id.to_string(),
                id: row.id.to_string(),
                status,
                answers,
                answered_at,
            },
        )
        .await;
        match status {
            InputRequestStatus::Accepted => {
                let result = ElicitResult::new(ElicitationAction::Accept);
                match (question.mode, content) {
                    (InputMode::Form, Some(content)) => result.with_content(content),
                    _ => result,
                }
            }
            InputRequestStatus::Declined => ElicitResult::new(ElicitationAction::Decline),
            // Dismissed, stopped or unanswered in time.
            _ => ElicitResult::new(ElicitationAction::Cancel),
        }
    }
}

impl AskUser for CardAsker {
    fn ask<'a>(
        &'a self,
        request: &'a ElicitRequestParams,
        request_state: Option<&'a str>,
    ) -> BoxFuture<'a, ElicitResult> {
        Box::pin(self.ask_user(request, request_state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(value: Value) -> ElicitRequestParams {
        serde_json::from_value(value).expect("an elicitation request")
    }

    fn url(url: &str) -> Result<Question, String> {
        Question::from_request(&request(json!({
            "mode": "url", "message": "Open this.", "url": url, "elicitationId": "e1"
        })))
    }

    #[test]
    fn a_url_question_carries_its_host_as_the_address_bar_shows_it() {
        let q = url("https://sign.example.com/confirm?x=1").expect("asked");
        assert_eq!(q.mode, InputMode::Url);
        assert_eq!(
            q.url,
            Some((
                "https://sign.example.com/confirm?x=1".to_owned(),
                "sign.example.com".to_owned()
            ))
        );
        // The URL as sent, the host as the browser will show it: an IDN
        // is punycode, an explicit port is kept.
        let idn = url("https://exämple.com:8443/a").expect("asked");
        assert_eq!(
            idn.url.map(|(_, host)| host).as_deref(),
            Some("xn--exmple-cua.com:8443")
        );
    }

    #[test]
    fn a_url_that_is_not_a_web_page_is_never_put_to_the_user() {
        for bad in [
            "javascript:alert(document.cookie)",
            "data:text/html,<script>alert(1)</script>",
            "file:///etc/passwd",
            "not a url",
            "https://",
        ] {
            assert!(url(bad).is_err(), "{bad}");
        }
        let long = format!("https://a.example/{}", "x".repeat(MAX_URL_BYTES));
        assert!(url(&long).is_err());
    }

    #[test]
    fn form_questions_are_bounded() {
        let form = |message: String, schema: Value| {
            Question::from_request(&request(json!({
                "mode": "form", "message": message, "requestedSchema": schema
            })))
        };
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let q = form("Which matter?".into(), schema.clone()).expect("asked");
        assert_eq!(q.requested_schema, Some(schema.clone()));
        assert!(form("x".repeat(MAX_MESSAGE_CHARS + 1), schema).is_err());
        let huge = json!({"type": "object", "properties": {
            "a": {"type": "string", "description": "x".repeat(MAX_SCHEMA_BYTES)}
        }});
        assert!(form("Which?".into(), huge).is_err());
    }
}
