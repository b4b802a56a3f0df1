//! `/api/connectors…`: add, list, read, change and delete connectors; their
//! tools and the user's review of them. Credentials are write-only: the API
//! answers header names and "is set" flags.

use super::{
    error::ApiError,
    extract::{CurrentUser, Json, Path},
};
use crate::{
    AppState,
    connectors::{self, Auth, refresh, session},
    db,
};
use axum::{extract::State, http::StatusCode, response::IntoResponse};
use countersign_api::{
    AuthType, Connector, ConnectorStatus, ConnectorTool, CreateConnectorRequest, ReviewState,
    ReviewToolsRequest, UpdateConnectorRequest,
};
use std::collections::BTreeMap;
use time::{OffsetDateTime, format_description::well_known::Rfc3339};
use uuid::Uuid;

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap_or_default()
}

type ConnectorRow = (
    Uuid,
    String,
    String,
    String,
    String,
    Vec<String>,
    bool,
    String,
    Option<String>,
    Option<String>,
    Option<OffsetDateTime>,
    OffsetDateTime,
    bool,
    serde_json::Value,
    i64,
    serde_json::Value,
);

const CONNECTOR_COLUMNS: &str = "c.id, c.name, c.slug, c.url, c.auth_type, c.header_names,
    c.trust_annotations, c.status, c.last_error, c.protocol_version, c.last_checked_at,
    c.created_at, c.auth_type = 'bearer',
    coalesce((select json_object_agg(s.review_state, s.n)
                from (select review_state, count(*) as n from connector_tools t
                       where t.connector_id = c.id and not t.removed group by review_state) s),
             '{}'::json),
    (select count(*) from tool_grants g where g.connector_id = c.id),
    c.dropped_tools";

fn connector(row: ConnectorRow) -> Connector {
    let (
        id,
        name,
        slug,
        url,
        auth_type,
        header_names,
        trust,
        status,
        last_error,
        protocol,
        checked,
        created,
        token_set,
        counts,
        grant_count,
        dropped_tools,
    ) = row;
    let host = reqwest::Url::parse(&url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    let tool_counts: BTreeMap<String, i64> = serde_json::from_value(counts).unwrap_or_default();
    Connector {
        id: id.to_string(),
        name,
        slug,
        url,
        host,
        auth_type: AuthType::from_wire(&auth_type),
        token_set,
        header_names,
        trust_annotations: trust,
        status: ConnectorStatus::from_wire(&status),
        last_error,
        protocol_version: protocol,
        last_checked_at: checked.map(rfc3339),
        tool_counts,
        created_at: rfc3339(created),
        grant_count,
        dropped_tools: serde_json::from_value(dropped_tools).unwrap_or_default(),
    }
}

async fn load(state: &AppState, user_id: Uuid, id: Uuid) -> Result<Connector, ApiError> {
    let mut tx = db::user_tx(&state.db, user_id).await?;
    let row: Option<ConnectorRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "select {CONNECTOR_COLUMNS} from connectors c where c.id = $1"
    )))
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    row.map(connector)
        .ok_or_else(|| ApiError::NotFound("No such connector.".into()))
}

/// `GET /api/connectors`.
pub async fn list_connectors(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<axum::Json<Vec<Connector>>, ApiError> {
    let mut tx = db::user_tx(&state.db, user.user_id).await?;
    let rows: Vec<ConnectorRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "select {CONNECTOR_COLUMNS} from connectors c order by lower(c.name)"
    )))
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(axum::Json(rows.into_iter().map(connector).collect()))
}

/// `POST /api/connectors` → 201 with the connector.
pub async fn create_connector(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Json(req): Json<CreateConnectorRequest>,
) -> Result<impl IntoResponse, ApiError> {
    let name = connectors::parse_name(&req.name)?;
    let url = connectors::parse_url(&req.url)?;
    let auth = Auth::parse(req.auth.as_ref())?;
    // Credentials are a trust decision: a recent step-up (DESIGN §4).
    if auth != Auth::None {
        super::mfa::require_step_up(&state, &user).await?;
    }
    // Refused here, with the reason, and again on every connection.
    session::check_url(&state, req.url.trim()).await?;
    let id = connectors::create(
        &state.db,
        state.secrets.as_ref(),
        user.user_id,
        &name,
        &url,
        &auth,
    )
    .await?;
    tracing::info!(user.id = %user.user_id, connector.id = %id, "connector added");
    Ok((
        StatusCode::CREATED,
        axum::Json(load(&state, user.user_id, id).await?),
    ))
}

/// `GET /api/connectors/{id}`.
pub async fn get_connector(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
) -> Result<axum::Json<Connector>, ApiError> {
    Ok(axum::Json(load(&state, user.user_id, id).await?))
}

/// `PATCH /api/connectors/{id}`: name, URL, credentials, trust. A new URL
/// is a new trust decision (DESIGN §5): step-up, the SSRF guard now, and
/// credentials, grants, trust and every review cleared, waiting calls
/// denied ([`connectors::repoint`]), before anything else in the request
/// (new credentials, a name) is applied.
pub async fn update_connector(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
    Json(req): Json<UpdateConnectorRequest>,
) -> Result<axum::Json<Connector>, ApiError> {
    let name = req
        .name
        .as_deref()
        .map(connectors::parse_name)
        .transpose()?;
    let url = req.url.as_deref().map(connectors::parse_url).transpose()?;
    let auth = req
        .auth
        .as_ref()
        .map(|a| Auth::parse(Some(a)))
        .transpose()?;
    let current = load(&state, user.user_id, id).await?;
    let new_url = url.filter(|u| u.as_str() != current.url);
    // Turning trust on, changing credentials and re-pointing the connector
    // need a recent step-up.
    if req.trust_annotations == Some(true) || auth.is_some() || new_url.is_some() {
        super::mfa::require_step_up(&state, &user).await?;
    }
    if let Some(new_url) = &new_url {
        // Refused here, with the reason, and again on every connection.
        session::check_url(&state, new_url.as_str()).await?;
        connectors::repoint(&state.db, user.user_id, id, new_url).await?;
        tracing::info!(user.id = %user.user_id, connector.id = %id, "connector re-pointed");
    }
    let mut tx = db::user_tx(&state.db, user.user_id).await?;
    let updated = sqlx::query(
        "update connectors set name = coalesce($2, name),
                trust_annotations = coalesce($3, trust_annotations), updated_at = now()
          where id = $1",
    )
    .bind(id)
    .bind(&name)
    .bind(req.trust_annotations)
    .execute(&mut *tx)
    .await;
    match updated {
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
            return Err(connectors::ConnectorError::NameTaken(name.unwrap_or_default()).into());
        }
        other => other?,
    };
    tx.commit().await?;
    if let Some(auth) = auth {
        if auth != Auth::None && state.secrets.is_none() {
            return Err(connectors::ConnectorError::NoSecretKey.into());
        }
        let mut tx = db::user_tx(&state.db, user.user_id).await?;
        sqlx::query("update connectors set auth_type = $2, header_names = $3 where id = $1")
            .bind(id)
            .bind(auth.kind().as_str())
            .bind(match &auth {
                Auth::Headers(h) => h.keys().cloned().collect::<Vec<_>>(),
                _ => Vec::new(),
            })
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        let mut tx = db::service_tx(&state.db).await?;
        connectors::store_auth(&mut tx, state.secrets.as_ref(), user.user_id, id, &auth).await?;
        tx.commit().await?;
    }
    Ok(axum::Json(load(&state, user.user_id, id).await?))
}

/// `DELETE /api/connectors/{id}` → 204. Its tools (and, with the gate, its
/// grants) go with it: a connector added again inherits nothing.
pub async fn delete_connector(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    let mut tx = db::user_tx(&state.db, user.user_id).await?;
    let deleted = sqlx::query("delete from connectors where id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    if deleted.rows_affected() == 0 {
        return Err(ApiError::NotFound("No such connector.".into()));
    }
    tracing::info!(user.id = %user.user_id, connector.id = %id, "connector deleted");
    Ok(StatusCode::NO_CONTENT)
}

type ToolRow = (
    String,
    String,
    serde_json::Value,
    String,
    String,
    bool,
    Option<serde_json::Value>,
    OffsetDateTime,
    OffsetDateTime,
    Option<OffsetDateTime>,
);

/// `GET /api/connectors/{id}/tools`: every tool the server listed, with the
/// annotations exactly as it sent them and the review state.
pub async fn list_tools(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
) -> Result<axum::Json<Vec<ConnectorTool>>, ApiError> {
    load(&state, user.user_id, id).await?;
    let mut tx = db::user_tx(&state.db, user.user_id).await?;
    let rows: Vec<ToolRow> = sqlx::query_as(
        "select name, model_name, descriptor, descriptor_digest, review_state, removed,
                case when review_state = 'changed' then reviewed_descriptor end,
                first_seen_at, last_seen_at, changed_at
           from connector_tools where connector_id = $1 order by name",
    )
    .bind(id)
    .fetch_all(&mut *tx)
    .await?;
    let grants: Vec<(String, Uuid, String)> = sqlx::query_as(
        "select tool_name, id, descriptor_digest from tool_grants where connector_id = $1",
    )
    .bind(id)
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    let grant_of = |name: &str, digest: &str| {
        grants
            .iter()
            .find(|(tool, _, _)| tool == name)
            .map(|(_, id, pinned)| (id.to_string(), pinned != digest))
    };
    let tools = rows
        .into_iter()
        .map(
            |(
                name,
                model_name,
                d,
                digest,
                review_state,
                removed,
                reviewed,
                first,
                last,
                changed,
            )| {
                let text = |k: &str| d.get(k).and_then(|v| v.as_str()).map(str::to_owned);
                let grant = grant_of(&name, &digest);
                ConnectorTool {
                    name,
                    model_name,
                    title: text("title"),
                    description: text("description"),
                    input_schema: d
                        .get("inputSchema")
                        .cloned()
                        .unwrap_or(serde_json::Value::Null),
                    annotations: d.get("annotations").cloned(),
                    descriptor_digest: digest,
                    review_state: ReviewState::from_wire(&review_state),
                    removed,
                    reviewed_descriptor: reviewed,
                    first_seen_at: rfc3339(first),
                    last_seen_at: rfc3339(last),
                    changed_at: changed.map(rfc3339),
                    grant_id: grant.as_ref().map(|(id, _)| id.clone()),
                    grant_suspended: grant.is_some_and(|(_, suspended)| suspended),
                }
            },
        )
        .collect();
    Ok(axum::Json(tools))
}

/// `PUT /api/connectors/{id}/tools/review` → 204.
pub async fn review_tools(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
    Json(req): Json<ReviewToolsRequest>,
) -> Result<StatusCode, ApiError> {
    connectors::review(&state.db, user.user_id, id, &req.keep, &req.decline).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/connectors/{id}/test` and `…/refresh`: connect (through the
/// SSRF guard), list the tools, store them; answers the connector with its
/// status. A failure answers 502 (or 422 for a refused URL) with the reason,
/// which is also stored on the connector.
pub async fn refresh_connector(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
) -> Result<axum::Json<Connector>, ApiError> {
    let refreshed = refresh::refresh(&state, user.user_id, id).await?;
    tracing::info!(
        connector.id = %id,
        mcp.protocol = %refreshed.protocol_version,
        tools = refreshed.tools,
        dropped = refreshed.dropped,
        "connector refreshed"
    );
    Ok(axum::Json(load(&state, user.user_id, id).await?))
}

/// `GET /api/connectors/available`: connectors the deployment offers in
/// one click (the demo server, where enabled).
pub async fn available_connectors(
    State(state): State<AppState>,
    CurrentUser(_): CurrentUser,
) -> axum::Json<serde_json::Value> {
    let offers: Vec<serde_json::Value> = state
        .config
        .demo_connector_url
        .iter()
        .map(|url| serde_json::json!({"name": "Countersign demo", "url": url, "description": "A demo MCP server with a tool for every safety case: read-only, destructive, changing, slow, failing."}))
        .collect();
    axum::Json(serde_json::json!({ "available": offers }))
}
