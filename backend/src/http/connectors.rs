//! `/api/connectors…`: add, list, read, change and delete connectors; their
//! tools and the user's review of them. Credentials are write-only: the API
//! answers header names and "is set" flags.

use super::{
    error::{ApiError, FORBIDDEN_BY_POLICY},
    extract::{CurrentUser, Json, Path},
};
use crate::{
    AppState,
    connectors::{self, Auth, refresh, session},
    db,
};
use axum::{extract::State, http::StatusCode, response::IntoResponse};
use countersign_api::{
    AuthType, Connector, ConnectorStatus, ConnectorTool, CreateConnectorRequest, OAuthStatus,
    ReviewState, ReviewToolsRequest, UpdateConnectorRequest,
};
use std::collections::BTreeMap;
use time::{OffsetDateTime, format_description::well_known::Rfc3339};
use uuid::Uuid;

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap_or_default()
}

/// A connector as its owner sees it, read by [`connectors_of`].
struct ConnectorRow {
    id: Uuid,
    name: String,
    slug: String,
    url: String,
    auth_type: AuthType,
    header_names: Vec<String>,
    trust_annotations: bool,
    review_results: bool,
    status: ConnectorStatus,
    last_error: Option<String>,
    protocol_version: Option<String>,
    last_checked_at: Option<OffsetDateTime>,
    created_at: OffsetDateTime,
    token_set: bool,
    tool_counts: serde_json::Value,
    grant_count: i64,
    dropped_tools: serde_json::Value,
}

/// A connector's OAuth sign-in as the list shows it: `(status, issuer)`.
type OAuthView = (OAuthStatus, Option<String>);

fn connector(row: ConnectorRow, oauth: Option<&OAuthView>) -> Connector {
    let host = reqwest::Url::parse(&row.url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    let tool_counts: BTreeMap<String, i64> =
        serde_json::from_value(row.tool_counts).unwrap_or_default();
    Connector {
        id: row.id.to_string(),
        name: row.name,
        slug: row.slug,
        url: row.url,
        host,
        auth_type: row.auth_type,
        token_set: row.token_set,
        header_names: row.header_names,
        trust_annotations: row.trust_annotations,
        review_results: row.review_results,
        status: row.status,
        last_error: row.last_error,
        protocol_version: row.protocol_version,
        last_checked_at: row.last_checked_at.map(rfc3339),
        tool_counts,
        created_at: rfc3339(row.created_at),
        grant_count: row.grant_count,
        dropped_tools: serde_json::from_value(row.dropped_tools).unwrap_or_default(),
        oauth_status: match (row.auth_type, oauth) {
            (AuthType::OAuth, Some((status, _))) => *status,
            (AuthType::OAuth, None) => OAuthStatus::NeedsSignIn,
            _ => OAuthStatus::NotApplicable,
        },
        oauth_issuer: oauth.and_then(|(_, issuer)| issuer.clone()),
        trust_forbidden_by_policy: false,
    }
}

/// The user's connectors by name, or only `id` (one query for both, so
/// the columns are written once).
async fn connectors_of(
    state: &AppState,
    user_id: Uuid,
    id: Option<Uuid>,
) -> Result<Vec<Connector>, ApiError> {
    let mut tx = db::user_tx(&state.db, user_id).await?;
    let rows = sqlx::query_as!(
        ConnectorRow,
        r#"select c.id, c.name, c.slug, c.url, c.auth_type as "auth_type: _", c.header_names,
                  c.trust_annotations, c.review_results, c.status as "status: _", c.last_error, c.protocol_version,
                  c.last_checked_at, c.created_at, c.auth_type = 'bearer' as "token_set!",
                  coalesce((select json_object_agg(s.review_state, s.n)
                              from (select review_state, count(*) as n from connector_tools t
                                     where t.connector_id = c.id and not t.removed
                                     group by review_state) s),
                           '{}'::json) as "tool_counts!",
                  (select count(*) from tool_grants g where g.connector_id = c.id)
                    as "grant_count!",
                  c.dropped_tools
             from connectors c
            where $1::uuid is null or c.id = $1
            order by lower(c.name)"#,
        id,
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    // Sign-ins are service-only (sealed tokens sit beside them): read as
    // the service, for this user, and only for each connector's own URL.
    let mut tx = db::service_tx(&state.db).await?;
    let signed_in = sqlx::query!(
        r#"select o.connector_id, o.issuer,
                  case when o.status = 'connected' and o.tokens_key_id is not null
                       then 'connected' else 'needs_sign_in' end as "status!: OAuthStatus"
             from connector_oauth o join connectors c on c.id = o.connector_id
            where o.user_id = $1 and c.user_id = $1 and o.resource = c.url"#,
        user_id,
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    let oauth: BTreeMap<Uuid, OAuthView> = signed_in
        .into_iter()
        .map(|r| (r.connector_id, (r.status, r.issuer)))
        .collect();
    let trust_forbidden = crate::policy::current(&state.db)
        .await?
        .forbid_trust_annotations;
    Ok(rows
        .into_iter()
        .map(|row| {
            let view = oauth.get(&row.id);
            Connector {
                trust_forbidden_by_policy: trust_forbidden,
                ..connector(row, view)
            }
        })
        .collect())
}

pub(super) async fn load(state: &AppState, user_id: Uuid, id: Uuid) -> Result<Connector, ApiError> {
    connectors_of(state, user_id, Some(id))
        .await?
        .pop()
        .ok_or_else(|| ApiError::NotFound("No such connector.".into()))
}

/// `GET /api/connectors`.
#[utoipa::path(
    get,
    path = "/connectors",
    tag = "connectors",
    responses(
        (status = 200, description = "The caller's connectors (never a secret: header names and is-set flags only)", body = Vec<countersign_api::Connector>),
    ),
)]
pub async fn list_connectors(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<axum::Json<Vec<Connector>>, ApiError> {
    Ok(axum::Json(connectors_of(&state, user.user_id, None).await?))
}

/// `POST /api/connectors` → 201 with the connector.
#[utoipa::path(
    post,
    path = "/connectors",
    tag = "connectors",
    request_body = countersign_api::CreateConnectorRequest,
    responses(
        (status = 201, description = "The new connector (untested: `POST …/refresh` lists its tools)", body = countersign_api::Connector),
        (status = 403, description = "`mfa_required`: this session needs a recent two-factor step-up (`POST /api/auth/mfa/step-up`), then the same request again; `mfa_enrolment_required`: the deployment or the admin policy requires two-factor sign-in and the account has none (credentials need a step-up); `forbidden_by_policy`: the admin policy forbids it (the host is not on the allowed list)", body = countersign_api::ErrorBody),
        (status = 409, description = "The caller has a connector of this name", body = countersign_api::ErrorBody),
        (status = 422, description = "A malformed name, URL or credentials, or a URL the SSRF guard refuses (the detail says why)", body = countersign_api::ErrorBody),
        (status = 503, description = "Credentials need the server's secret key, which is not set", body = countersign_api::ErrorBody),
    ),
)]
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
#[utoipa::path(
    get,
    path = "/connectors/{id}",
    tag = "connectors",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    responses(
        (status = 200, description = "The connector", body = countersign_api::Connector),
        (status = 404, description = "No such connector of the caller", body = countersign_api::ErrorBody),
    ),
)]
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
#[utoipa::path(
    patch,
    path = "/connectors/{id}",
    tag = "connectors",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    request_body = countersign_api::UpdateConnectorRequest,
    responses(
        (status = 200, description = "The connector as changed (a new URL clears its credentials, grants, trust and reviews, and denies its waiting calls)", body = countersign_api::Connector),
        (status = 403, description = "`mfa_required`: this session needs a recent two-factor step-up (`POST /api/auth/mfa/step-up`), then the same request again; `mfa_enrolment_required`: the deployment or the admin policy requires two-factor sign-in and the account has none (trust on, credentials or a new URL need a step-up); `forbidden_by_policy`: the admin policy forbids it (trust, or a host not on the list)", body = countersign_api::ErrorBody),
        (status = 404, description = "No such connector of the caller", body = countersign_api::ErrorBody),
        (status = 409, description = "The caller has a connector of this name", body = countersign_api::ErrorBody),
        (status = 422, description = "A malformed field or a URL the SSRF guard refuses", body = countersign_api::ErrorBody),
        (status = 503, description = "Credentials need the server's secret key, which is not set", body = countersign_api::ErrorBody),
    ),
)]
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
    if req.trust_annotations == Some(true)
        && crate::policy::current(&state.db)
            .await?
            .forbid_trust_annotations
    {
        return Err(ApiError::Forbidden(FORBIDDEN_BY_POLICY.into()));
    }
    // Turning trust on, changing credentials and re-pointing the connector
    // need a recent step-up.
    if req.trust_annotations == Some(true) || auth.is_some() || new_url.is_some() {
        super::mfa::require_step_up(&state, &user).await?;
    }
    if let Some(new_url) = &new_url {
        // Refused here, with the reason, and again on every connection;
        // the URL as typed, as on add: the parsed form has already turned
        // `0x7f.1` into `127.0.0.1` and decoded `%`-escapes, spellings the
        // guard refuses as such.
        let typed = req.url.as_deref().unwrap_or_default().trim();
        session::check_url(&state, typed).await?;
        connectors::repoint(&state.db, user.user_id, id, new_url).await?;
        tracing::info!(user.id = %user.user_id, connector.id = %id, "connector re-pointed");
    }
    let mut tx = db::user_tx(&state.db, user.user_id).await?;
    let updated = sqlx::query!(
        "update connectors set name = coalesce($2, name),
                trust_annotations = coalesce($3, trust_annotations),
                review_results = coalesce($4, review_results), updated_at = now()
          where id = $1",
        id,
        name.as_deref(),
        req.trust_annotations,
        req.review_results,
    )
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
        sqlx::query!(
            "update connectors set auth_type = $2, header_names = $3 where id = $1",
            id,
            auth.kind().as_str(),
            &match &auth {
                Auth::Headers(h) => h.keys().cloned().collect::<Vec<_>>(),
                _ => Vec::new(),
            },
        )
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        let mut tx = db::service_tx(&state.db).await?;
        connectors::store_auth(&mut tx, state.secrets.as_ref(), user.user_id, id, &auth).await?;
        // New credentials are a new trust decision: the OAuth client they
        // replace, the issuer an entered client was bound to, and its
        // tokens go (sign in again).
        sqlx::query!(
            "delete from connector_oauth where connector_id = $1 and user_id = $2",
            id,
            user.user_id,
        )
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
    }
    Ok(axum::Json(load(&state, user.user_id, id).await?))
}

/// `DELETE /api/connectors/{id}` → 204. Its tools (and, with the gate, its
/// grants) go with it: a connector added again inherits nothing.
#[utoipa::path(
    delete,
    path = "/connectors/{id}",
    tag = "connectors",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    responses(
        (status = 204, description = "Deleted, with its tools and grants"),
        (status = 404, description = "No such connector of the caller", body = countersign_api::ErrorBody),
    ),
)]
pub async fn delete_connector(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    let mut tx = db::user_tx(&state.db, user.user_id).await?;
    let deleted = sqlx::query!("delete from connectors where id = $1", id,)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    if deleted.rows_affected() == 0 {
        return Err(ApiError::NotFound("No such connector.".into()));
    }
    tracing::info!(user.id = %user.user_id, connector.id = %id, "connector deleted");
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/connectors/{id}/tools`: every tool the server listed, with the
/// annotations exactly as it sent them and the review state.
#[utoipa::path(
    get,
    path = "/connectors/{id}/tools",
    tag = "connectors",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    responses(
        (status = 200, description = "Every tool the server listed, annotations as sent, with its digest and review state", body = Vec<countersign_api::ConnectorTool>),
        (status = 404, description = "No such connector of the caller", body = countersign_api::ErrorBody),
    ),
)]
pub async fn list_tools(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
) -> Result<axum::Json<Vec<ConnectorTool>>, ApiError> {
    load(&state, user.user_id, id).await?;
    let mut tx = db::user_tx(&state.db, user.user_id).await?;
    let rows = sqlx::query!(
        r#"select name, model_name, descriptor, descriptor_digest,
                  review_state as "review_state: ReviewState", removed,
                  case when review_state = 'changed' then reviewed_descriptor end
                    as reviewed_descriptor,
                  first_seen_at, last_seen_at, changed_at
             from connector_tools where connector_id = $1 order by name"#,
        id,
    )
    .fetch_all(&mut *tx)
    .await?;
    let grants = sqlx::query!(
        "select tool_name, id, descriptor_digest from tool_grants where connector_id = $1",
        id,
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    let grant_of = |name: &str, digest: &str| {
        grants
            .iter()
            .find(|g| g.tool_name == name)
            .map(|g| (g.id.to_string(), g.descriptor_digest != digest))
    };
    let tools = rows
        .into_iter()
        .map(|row| {
            let d = &row.descriptor;
            let text = |k: &str| d.get(k).and_then(|v| v.as_str()).map(str::to_owned);
            let grant = grant_of(&row.name, &row.descriptor_digest);
            ConnectorTool {
                title: text("title"),
                description: text("description"),
                input_schema: d
                    .get("inputSchema")
                    .cloned()
                    .unwrap_or(serde_json::Value::Null),
                annotations: d.get("annotations").cloned(),
                name: row.name,
                model_name: row.model_name,
                descriptor_digest: row.descriptor_digest,
                review_state: row.review_state,
                removed: row.removed,
                reviewed_descriptor: row.reviewed_descriptor,
                first_seen_at: rfc3339(row.first_seen_at),
                last_seen_at: rfc3339(row.last_seen_at),
                changed_at: row.changed_at.map(rfc3339),
                grant_id: grant.as_ref().map(|(id, _)| id.clone()),
                grant_suspended: grant.is_some_and(|(_, suspended)| suspended),
            }
        })
        .collect();
    Ok(axum::Json(tools))
}

/// `PUT /api/connectors/{id}/tools/review` → 204.
#[utoipa::path(
    put,
    path = "/connectors/{id}/tools/review",
    tag = "connectors",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    request_body = countersign_api::ReviewToolsRequest,
    responses(
        (status = 204, description = "Saved: the kept tools are offered to models"),
        (status = 404, description = "No such connector of the caller", body = countersign_api::ErrorBody),
        (status = 409, description = "A tool changed since the caller looked (its digest is not the one sent); nothing was saved", body = countersign_api::ErrorBody),
        (status = 422, description = "A tool the connector does not have", body = countersign_api::ErrorBody),
    ),
)]
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
#[utoipa::path(
    post,
    path = "/connectors/{id}/refresh",
    tag = "connectors",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    responses(
        (status = 200, description = "Connected and listed: the connector with its status; its tools are under `…/tools`", body = countersign_api::Connector),
        (status = 403, description = "`forbidden_by_policy`: the admin policy forbids it (the host is no longer on the list)", body = countersign_api::ErrorBody),
        (status = 404, description = "No such connector of the caller", body = countersign_api::ErrorBody),
        (status = 409, description = "An OAuth connector needs a (new) sign-in", body = countersign_api::ErrorBody),
        (status = 422, description = "The SSRF guard refuses the URL", body = countersign_api::ErrorBody),
        (status = 502, description = "The server could not be reached or answered wrongly (the detail says how; also stored as `last_error`)", body = countersign_api::ErrorBody),
    ),
)]
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

/// `POST /api/connectors/{id}/test`: [`refresh_connector`] under its
/// other name.
#[utoipa::path(
    post,
    path = "/connectors/{id}/test",
    tag = "connectors",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    responses(
        (status = 200, description = "The same as `…/refresh`", body = countersign_api::Connector),
        (status = 403, description = "`forbidden_by_policy`: the admin policy forbids it", body = countersign_api::ErrorBody),
        (status = 404, description = "No such connector of the caller", body = countersign_api::ErrorBody),
        (status = 409, description = "An OAuth connector needs a (new) sign-in", body = countersign_api::ErrorBody),
        (status = 422, description = "The SSRF guard refuses the URL", body = countersign_api::ErrorBody),
        (status = 502, description = "The server could not be reached or answered wrongly", body = countersign_api::ErrorBody),
    ),
)]
pub async fn test_connector(
    state: State<AppState>,
    user: CurrentUser,
    id: Path<Uuid>,
) -> Result<axum::Json<Connector>, ApiError> {
    refresh_connector(state, user, id).await
}

/// `GET /api/connectors/available`: connectors the deployment offers in
/// one click (the demo server, where enabled).
#[utoipa::path(
    get,
    path = "/connectors/available",
    tag = "connectors",
    responses(
        (status = 200, description = "What the deployment offers in one click", body = countersign_api::AvailableConnectors),
    ),
)]
pub async fn available_connectors(
    State(state): State<AppState>,
    CurrentUser(_): CurrentUser,
) -> axum::Json<countersign_api::AvailableConnectors> {
    let available = state
        .config
        .demo_connector_url
        .iter()
        .map(|url| countersign_api::AvailableConnector {
            name: "Countersign demo".into(),
            url: url.clone(),
            description: "A demo MCP server with a tool for every safety case: read-only, \
                          destructive, changing, slow, failing."
                .into(),
        })
        .collect();
    axum::Json(countersign_api::AvailableConnectors { available })
}
