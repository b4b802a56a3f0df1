//! Test and Refresh: connects (through [`super::session::open_session`],
//! which runs the SSRF guard and the guarded client), lists the tools as the server sends them, digests each descriptor and
//! merges the listing into the stored tools. The outcome (ok, or the
//! error in words a user can act on) is recorded on the connector, with
//! the tools the listing dropped (`mcp::DroppedTool`). A listing past the
//! bounds on what a server sends (DESIGN §2) fails whole: the stored tools
//! stay exactly as they were.

use super::{
    ConnectorError, Listed, apply_listing,
    session::{open_session, refused},
};
use crate::{AppState, db, mcp};
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

/// Connects, lists and stores the tools of connector `id`.
#[tracing::instrument(skip(state), fields(user.id = %user_id, connector.id = %id))]
pub async fn refresh(
    state: &AppState,
    user_id: Uuid,
    id: Uuid,
) -> Result<Refreshed, ConnectorError> {
    let mut tx = db::user_tx(&state.db, user_id).await?;
    let row = sqlx::query!("select url, slug from connectors where id = $1", id)
        .map(|r| (r.url, r.slug))
        .fetch_optional(&mut *tx)
        .await?;
    tx.commit().await?;
    let (url, slug) = row.ok_or(ConnectorError::NotFound)?;

    let outcome = list(state, user_id, id, &url).await;
    let mut tx = db::user_tx(&state.db, user_id).await?;
    let result = match outcome {
        Ok((protocol_version, listing, dropped)) => {
            apply_listing(&mut tx, id, &slug, &listing).await?;
            sqlx::query!(
                "update connectors set status = 'ok', last_error = null, protocol_version = $2,
                        dropped_tools = $3, last_checked_at = now() where id = $1",
                id,
                &protocol_version,
                serde_json::to_value(&dropped).unwrap_or_else(|_| serde_json::json!([])),
            )
            .execute(&mut *tx)
            .await?;
            Ok(Refreshed {
                protocol_version,
                tools: listing.len(),
                dropped: dropped.len(),
            })
        }
        Err(err) => {
            sqlx::query!(
                "update connectors set status = 'error', last_error = $2, last_checked_at = now() where id = $1",
                id,
                err.to_string(),
            )
            .execute(&mut *tx)
            .await?;
            Err(err)
        }
    };
    tx.commit().await?;
    result
}

async fn list(
    state: &AppState,
    user_id: Uuid,
    id: Uuid,
    url: &str,
) -> Result<(String, Vec<Listed>, Vec<mcp::DroppedTool>), ConnectorError> {
    let session = open_session(state, user_id, id, url).await?;
    let protocol_version = session.protocol_version();
    let listed = session.list().await;
    session.close().await;
    let mcp::ToolListing { tools, dropped, .. } = match listed {
        Ok(listing) => listing,
        Err(err) => return Err(refused(state, user_id, id, url, err).await),
    };
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
