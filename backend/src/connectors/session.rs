//! Connecting to a connector: the one way in, for Test/Refresh and for
//! every tool call. [`check_url`] runs the SSRF guard (also on add and URL
//! change, to refuse early with the reason); [`open_session`] runs it
//! again, loads the user's credentials and opens an MCP session through the
//! guarded client; [`open_session_asking`] also lets the server ask the
//! user for input (a call's session: the chat's input card, DESIGN §6a).
//!
//! [`refused`] says what a server's refusal means: for an OAuth connector,
//! a 403 `insufficient_scope` is a step-up (`oauth::step_up`) and a 401 a
//! new sign-in (`oauth::token_refused`).
//!
//! What it deliberately does not do: list or store tools (`refresh`), or
//! decide whether a call may run (`gate`, `approvals`).

use super::{Auth, ConnectorError, auth_at, credentials, load_auth};
use crate::{
    AppState, db,
    mcp::{self, McpSettings, McpTarget},
    policy::Policy,
    ssrf,
};
use std::time::Duration;
use uuid::Uuid;

/// Checks `url` against the admin policy's allowed hosts and the SSRF
/// guard: on add, on a URL change, and before every connection.
pub async fn check_url(state: &AppState, url: &str) -> Result<ssrf::GuardedTarget, ConnectorError> {
    let policy = crate::policy::current(&state.db).await?;
    guard(state, &policy, url).await
}

/// [`check_url`] under `policy`.
async fn guard(
    state: &AppState,
    policy: &Policy,
    url: &str,
) -> Result<ssrf::GuardedTarget, ConnectorError> {
    if !policy.allows_host(url) {
        return Err(ConnectorError::ForbiddenByPolicy(
            crate::policy::host_of(url).unwrap_or_default(),
        ));
    }
    ssrf::check(
        url,
        state.resolver.as_ref(),
        &state.config.allow_private_connectors,
    )
    .await
    .map_err(|e| ConnectorError::Refused(e.to_string()))
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
    open_session_asking(state, user_id, id, url, None).await
}

/// [`open_session`] whose server may ask the user for input through
/// `elicitation` (declared to the server only when given).
pub async fn open_session_asking(
    state: &AppState,
    user_id: Uuid,
    id: Uuid,
    url: &str,
    elicitation: Option<mcp::Elicitation>,
) -> Result<mcp::McpSession, ConnectorError> {
    // The policy and the credentials in one round trip (reading them sends
    // nothing anywhere); the credentials only while the connector still
    // points at `url`. Nothing is sent unless the URL passed.
    let mut rows = db::trip::run_parts(
        &state.db,
        vec![crate::policy::now(), credentials(user_id, id)],
    )
    .await?;
    let (credentials, policy) = (
        rows.pop().unwrap_or_default(),
        rows.pop().unwrap_or_default(),
    );
    let guarded = guard(state, &crate::policy::policy_in(&policy)?, url).await?;
    let auth = auth_at(&credentials, state.secrets.as_ref(), user_id, id, url)?;
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
        // Only a token issued for this very URL (`oauth::store`).
        Auth::OAuth(_) => {
            let token = super::oauth::access_token(state, (user_id.into(), id.into()), url).await?;
            target.bearer = Some(crate::config::Secret::new(token));
        }
    }
    let settings = McpSettings {
        call_timeout: Duration::from_secs(state.config.mcp_timeout_secs),
        elicitation,
        ..McpSettings::default()
    };
    match mcp::connect(state.connector_http.clone(), &target, &settings).await {
        Ok(session) => Ok(session),
        Err(err) => Err(refused(state, user_id, id, url, err).await),
    }
}

/// What a failure of connector `id` of `user_id` at `url` tells the user.
/// For an OAuth connector, a 403 with a challenge is a step-up: the next
/// sign-in asks for the scopes it names ([`super::oauth::step_up`], which
/// bounds the rounds); a 401 means the token is no longer accepted: the
/// connector needs a new sign-in ([`super::oauth::token_refused`]).
/// Anything else is [`ConnectorError::Unreachable`] with the error's words.
pub async fn refused(
    state: &AppState,
    user_id: Uuid,
    id: Uuid,
    url: &str,
    err: mcp::McpError,
) -> ConnectorError {
    state.metrics.mcp_error(&err);
    // The reason is the user's words (no secrets); never the URL, whose
    // query may hold a key.
    tracing::warn!(connector.id = %id, mcp.error = err.kind(), error = %err, "connector request failed");
    let status = match &err {
        mcp::McpError::Unauthorized { status, .. } => *status,
        _ => return ConnectorError::Unreachable(err.to_string()),
    };
    let oauth = matches!(
        load_auth(&state.db, state.secrets.as_ref(), user_id, id).await,
        Ok(Auth::OAuth(_))
    );
    let ids = (user_id.into(), id.into());
    match (oauth, status, err.auth_challenge()) {
        (true, 403, Some(challenge)) => super::oauth::step_up(state, ids, url, challenge)
            .await
            .into(),
        (true, 401, _) => super::oauth::token_refused(state, ids, url).await.into(),
        _ => ConnectorError::Unreachable(err.to_string()),
    }
}
