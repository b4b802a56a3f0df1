//! Test and Refresh: the one place that connects to a connector. It runs
//! the SSRF guard (`ssrf::check`), connects through the guarded client,
//! lists the tools as the server sends them, digests each descriptor and
//! merges the listing into the stored tools. The outcome (ok, or the
//! error in words a user can act on) is recorded on the connector, with
//! the tools the listing dropped (`mcp::DroppedTool`). A listing past the
//! bounds on what a server sends (DESIGN §2) fails whole: the stored tools
//! stay exactly as they were.

use super::{Auth, ConnectorError, Listed, apply_listing, load_auth};
use crate::{
    AppState, db,
    mcp::{self, McpSettings, McpTarget},
    ssrf,
};
use std::time::Duration;
use uuid::Uuid;

/// What a successful refresh found.
#[derive(Debug, Clone)]
pub struct Refreshed {
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// How many tools the listing kept.
    pub tools: usize,
    /// How many it dropped.
    pub dropped: usize,
}

/// Checks `url` against the SSRF guard, for the add and edit forms.
pub async fn check_url(state: &AppState, url: &str) -> Result<ssrf::GuardedTarget, ConnectorError> {
    ssrf::check(
        url,
        state.resolver.as_ref(),
        &state.config.allow_private_connectors,
    )
    .await
    .map_err(|e| ConnectorError::Refused(e.to_string()))
}

/// Connects, lists and stores the tools of connector `id`.
#[tracing::instrument(skip(state), fields(user.id = %user_id, connector.id = %id))]
pub async fn refresh(
    state: &AppState,
    user_id: Uuid,
    id: Uuid,
) -> Result<Refreshed, ConnectorError> {
    let mut tx = db::user_tx(&state.db, user_id).await?;
    let row: Option<(String, String)> =
        sqlx::query_as("select url, slug from connectors where id = $1")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
    tx.commit().await?;
    let (url, slug) = row.ok_or(ConnectorError::NotFound)?;

    let outcome = list(state, user_id, id, &url).await;
    let mut tx = db::user_tx(&state.db, user_id).await?;
    let result = match outcome {
        Ok((protocol_version, listing, dropped)) => {
            apply_listing(&mut tx, id, &slug, &listing).await?;
            sqlx::query(
                "update connectors set status = 'ok', last_error = null, protocol_version = $2,
                        dropped_tools = $3, last_checked_at = now() where id = $1",
            )
            .bind(id)
            .bind(&protocol_version)
            .bind(serde_json::to_value(&dropped).unwrap_or_else(|_| serde_json::json!([])))
            .execute(&mut *tx)
            .await?;
            Ok(Refreshed {
                protocol_version,
                tools: listing.len(),
                dropped: dropped.len(),
            })
        }
        Err(err) => {
            sqlx::query(
                "update connectors set status = 'error', last_error = $2, last_checked_at = now() where id = $1",
            )
            .bind(id)
            .bind(err.to_string())
            .execute(&mut *tx)
            .await?;
            Err(err)
        }
    };
    tx.commit().await?;
    result
}

/// Opens an MCP session to connector `id` of `user_id` at `url`: the SSRF
/// guard, the user's credentials, the guarded client. The one way in, for
/// listing and for calls.
pub async fn open_session(
    state: &AppState,
    user_id: Uuid,
    id: Uuid,
    url: &str,
) -> Result<mcp::McpSession, ConnectorError> {
    let guarded = check_url(state, url).await?;
    let auth = load_auth(&state.db, state.secrets.as_ref(), user_id, id).await?;
    let mut target = McpTarget::new(guarded.url().clone());
    match auth {
        Auth::None => {}
        Auth::Bearer(token) => target.bearer = Some(crate::config::Secret::new(token)),
        Auth::Headers(headers) => {
            target.headers = headers
                .into_iter()
                .map(|(k, v)| (k, crate::config::Secret::new(v)))
                .collect();
        }
    }
    let settings = McpSettings {
        call_timeout: Duration::from_secs(state.config.mcp_timeout_secs),
        ..McpSettings::default()
    };
    mcp::connect(state.connector_http.clone(), &target, &settings)
        .await
        .map_err(|e| ConnectorError::Unreachable(e.to_string()))
}

async fn list(
    state: &AppState,
    user_id: Uuid,
    id: Uuid,
    url: &str,
) -> Result<(String, Vec<Listed>, Vec<mcp::DroppedTool>), ConnectorError> {
    let unreachable = |e: mcp::McpError| ConnectorError::Unreachable(e.to_string());
    let session = open_session(state, user_id, id, url).await?;
    let protocol_version = session.protocol_version();
    let listed = session.list().await;
    session.close().await;
    let mcp::ToolListing { tools, dropped } = listed.map_err(unreachable)?;
    let listing = tools
        .iter()
        .map(|tool| {
            Ok(Listed {
                name: tool.name.clone(),
                descriptor: serde_json::to_value(tool)
                    .map_err(|e| ConnectorError::Unreachable(e.to_string()))?,
                digest: mcp::descriptor_digest(tool),
            })
        })
        .collect::<Result<Vec<_>, ConnectorError>>()?;
    Ok((protocol_version, listing, dropped))
}
