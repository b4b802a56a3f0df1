//! Connector sign-in (DESIGN §8, "Connector OAuth"): `POST
//! /api/connectors/{id}/oauth/start` → `{authorization_url}`; the browser
//! comes back to `GET /oauth/callback` (outside `/api`: a top-level
//! navigation from the authorization server, so no CSRF header — the
//! single-use `state`, bound to the signed-in user, is what authenticates
//! it); `DELETE /api/connectors/{id}/oauth` forgets the tokens; `GET
//! /oauth/client-metadata.json` is the Client ID Metadata Document.

use super::{
    connectors::load,
    error::ApiError,
    extract::{CurrentUser, Path},
};
use crate::{
    AppState,
    connectors::{self, Auth, oauth},
};
use axum::{
    extract::{Query, State},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Redirect, Response},
};
use countersign_api::{AuthType, OAuthStart};
use serde::Deserialize;
use uuid::Uuid;

/// Where the authorization server sends the browser back: the public URL
/// when set, else this request's own `Host`, unvetted (the Host check runs
/// only with a public URL) but harmless: the request carries the session's
/// CSRF token, so only the signed-in user's own browser names it, and the
/// callback's state is bound to that user. Without a public URL the
/// redirect is plain http (a local or development deployment).
fn redirect_uri(state: &AppState, headers: &HeaderMap) -> Result<String, ApiError> {
    if let Some(origin) = state.config.public_origin() {
        return Ok(format!("{origin}/oauth/callback"));
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .ok_or_else(|| ApiError::BadRequest("The request names no host.".into()))?;
    Ok(format!("http://{host}/oauth/callback"))
}

/// `POST /api/connectors/{id}/oauth/start`.
#[utoipa::path(
    post,
    path = "/connectors/{id}/oauth/start",
    tag = "connectors",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    responses(
        (status = 200, description = "Where to send the browser to sign in", body = countersign_api::OAuthStart),
        (status = 403, description = "`mfa_required`: this session needs a recent two-factor step-up (`POST /api/auth/mfa/step-up`), then the same request again (a sign-in changes the account the connector acts as: a credential change); `mfa_enrolment_required`: the deployment or the admin policy requires two-factor sign-in and the account has none; `forbidden_by_policy`: the admin policy forbids it", body = countersign_api::ErrorBody),
        (status = 404, description = "No such connector of the caller", body = countersign_api::ErrorBody),
        (status = 409, description = "Not an OAuth connector, or the sign-in cannot ask for more", body = countersign_api::ErrorBody),
        (status = 422, description = "The authorization server is not https", body = countersign_api::ErrorBody),
        (status = 502, description = "Discovery or registration failed", body = countersign_api::ErrorBody),
        (status = 503, description = "The server has no secret key to seal tokens with", body = countersign_api::ErrorBody),
    ),
)]
pub async fn start(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
    headers: HeaderMap,
) -> Result<axum::Json<OAuthStart>, ApiError> {
    let connector = load(&state, user.user_id, id).await?;
    // Which account the connector acts as is a credential: a stolen
    // session without the second factor must not move it.
    super::mfa::require_step_up(&state, &user).await?;
    if connector.auth_type != AuthType::OAuth {
        return Err(ApiError::Conflict(
            "This connector does not use OAuth: choose OAuth as its authentication first.".into(),
        ));
    }
    let Auth::OAuth(settings) =
        connectors::load_auth(&state.db, state.secrets.as_ref(), user.user_id, id).await?
    else {
        return Err(ApiError::Conflict(
            "This connector does not use OAuth.".into(),
        ));
    };
    let authorization_url = oauth::start(
        &state,
        (user.user_id.into(), id.into()),
        &connector.url,
        &settings,
        &redirect_uri(&state, &headers)?,
    )
    .await?;
    tracing::info!(user.id = %user.user_id, connector.id = %id, "connector sign-in started");
    Ok(axum::Json(OAuthStart { authorization_url }))
}

/// The authorization server's answer (RFC 6749 §4.1.2, RFC 9207).
#[derive(Debug, Deserialize)]
pub struct Callback {
    code: Option<String>,
    state: Option<String>,
    iss: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// Back to Settings with the outcome in the query (the page reads it).
fn back(outcome: &[(&str, &str)]) -> Response {
    let query: String = url_query(outcome);
    Redirect::to(&format!("/settings?{query}")).into_response()
}

fn url_query(pairs: &[(&str, &str)]) -> String {
    let mut url = reqwest::Url::parse("http://x/").expect("a fixed URL");
    url.query_pairs_mut().extend_pairs(pairs);
    url.query().unwrap_or_default().to_owned()
}

/// `GET /oauth/callback/{connector}`: a sign-in's own callback (a client
/// registered dynamically is registered with it); as [`callback`].
#[utoipa::path(
    get,
    path = "/oauth/callback/{connector}",
    tag = "connectors",
    params(
        ("connector" = Uuid, Path, description = "The connector whose sign-in this is"),
        ("code" = Option<String>, Query, description = "The authorization code"),
        ("state" = Option<String>, Query, description = "The single-use state the sign-in started with"),
        ("iss" = Option<String>, Query, description = "The issuer (RFC 9207)"),
        ("error" = Option<String>, Query, description = "The authorization server's error"),
        ("error_description" = Option<String>, Query, description = "Its description"),
    ),
    responses(
        (status = 303, description = "Back to `/settings`, with `oauth=connected&connector=ID` or `oauth_error=…` in the query"),
    ),
)]
pub async fn callback_for(
    State(state): State<AppState>,
    user: Result<CurrentUser, ApiError>,
    axum::extract::Path(connector): axum::extract::Path<Uuid>,
    Query(answer): Query<Callback>,
) -> Response {
    complete(
        &state,
        user,
        answer,
        &format!("/oauth/callback/{connector}"),
    )
    .await
}

/// `GET /oauth/callback`: completes the sign-in, then lands on Settings.
#[utoipa::path(
    get,
    path = "/oauth/callback",
    tag = "connectors",
    params(
        ("code" = Option<String>, Query, description = "The authorization code"),
        ("state" = Option<String>, Query, description = "The single-use state the sign-in started with"),
        ("iss" = Option<String>, Query, description = "The issuer (RFC 9207)"),
        ("error" = Option<String>, Query, description = "The authorization server's error"),
        ("error_description" = Option<String>, Query, description = "Its description"),
    ),
    responses(
        (status = 303, description = "Back to `/settings`, with `oauth=connected&connector=ID` or `oauth_error=…` in the query"),
    ),
)]
pub async fn callback(
    State(state): State<AppState>,
    user: Result<CurrentUser, ApiError>,
    Query(answer): Query<Callback>,
) -> Response {
    complete(&state, user, answer, "/oauth/callback").await
}

/// Either callback, arrived at path `arrived_at`.
async fn complete(
    state: &AppState,
    user: Result<CurrentUser, ApiError>,
    answer: Callback,
    arrived_at: &str,
) -> Response {
    // Signed out (or another browser): nothing is consumed; sign in first.
    let Ok(CurrentUser(user)) = user else {
        return Redirect::to("/signin").into_response();
    };
    if let Some(error) = answer.error {
        // The state is still spent, so the link cannot be replayed.
        if let Some(s) = &answer.state
            && let Err(err) = oauth::store::discard_state(&state.db, s).await
        {
            tracing::warn!(error = %err, "cannot discard a refused sign-in's state");
        }
        let said = answer.error_description.unwrap_or(error);
        return back(&[(
            "oauth_error",
            &format!("The authorization server said: {said}"),
        )]);
    }
    let (Some(code), Some(state_param)) = (answer.code, answer.state) else {
        return back(&[("oauth_error", "The sign-in came back without a code.")]);
    };
    // The step-up that let the sign-in start must still hold when its
    // code is spent (it lasts ten minutes): the state is spent either way.
    if let Err(err) = super::mfa::require_step_up(state, &user).await {
        if let Err(e) = oauth::store::discard_state(&state.db, &state_param).await {
            tracing::warn!(error = %e, "cannot discard a sign-in's state");
        }
        tracing::warn!(user.id = %user.user_id, error = %err, "connector sign-in refused: no recent step-up");
        return back(&[(
            "oauth_error",
            "Confirm it is you with your second factor, then sign in to the connector again.",
        )]);
    }
    match oauth::finish(
        state,
        user.user_id.into(),
        (&code, &state_param, answer.iss.as_deref()),
        arrived_at,
    )
    .await
    {
        Ok((connector_id, change)) => {
            tracing::info!(user.id = %user.user_id, connector.id = %connector_id, "connector signed in");
            if let Err(err) = oauth::record_account_change(
                state,
                (user.user_id.into(), connector_id),
                &change.connector_name,
                &change.before,
                &change.after,
            )
            .await
            {
                tracing::error!(error = %err, "cannot enter a connector sign-in in the activity log");
            }
            back(&[
                ("oauth", "connected"),
                ("connector", &connector_id.to_string()),
            ])
        }
        Err(err) => {
            tracing::warn!(user.id = %user.user_id, error = %err, "connector sign-in failed");
            back(&[("oauth_error", &err.to_string())])
        }
    }
}

/// `DELETE /api/connectors/{id}/oauth` → 204: revokes the tokens where
/// the authorization server offers it, and forgets them (the client
/// registration stays, keyed by its issuer).
#[utoipa::path(
    delete,
    path = "/connectors/{id}/oauth",
    tag = "connectors",
    params(
        ("id" = Uuid, Path, description = "Its id (a UUID)."),
    ),
    responses(
        (status = 204, description = "Signed out of the connector (tokens revoked where the server offers it)"),
        (status = 403, description = "`mfa_required`: this session needs a recent two-factor step-up (`POST /api/auth/mfa/step-up`), then the same request again; `mfa_enrolment_required`: the deployment or the admin policy requires two-factor sign-in and the account has none", body = countersign_api::ErrorBody),
        (status = 404, description = "No such connector of the caller", body = countersign_api::ErrorBody),
    ),
)]
pub async fn disconnect(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    let connector = load(&state, user.user_id, id).await?;
    super::mfa::require_step_up(&state, &user).await?;
    let ids = (user.user_id.into(), id.into());
    let had_tokens = oauth::has_tokens(&state, ids, &connector.url).await?;
    oauth::disconnect(&state, ids, &connector.url).await?;
    if had_tokens {
        oauth::record_account_change(&state, ids, &connector.name, "signed in", "signed out")
            .await?;
    }
    tracing::info!(user.id = %user.user_id, connector.id = %id, "connector signed out");
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /oauth/client-metadata.json`: who Countersign is to an
/// authorization server that takes URL client ids (SEP-991). Only with an
/// https `COUNTERSIGN_PUBLIC_URL` (404 otherwise).
#[utoipa::path(
    get,
    path = "/oauth/client-metadata.json",
    tag = "connectors",
    responses(
        (status = 200, description = "The Client ID Metadata Document (only with an https `COUNTERSIGN_PUBLIC_URL`)"),
        (status = 404, description = "No https public URL is set", body = countersign_api::ErrorBody),
    ),
)]
pub async fn client_metadata(State(state): State<AppState>) -> Response {
    let (Some(client_id), Some(origin)) = (
        oauth::client_metadata_url(&state),
        state.config.public_origin(),
    ) else {
        return ApiError::NotFound(
            "This server publishes no client metadata: it has no https public URL.".to_owned(),
        )
        .into_response();
    };
    axum::Json(serde_json::json!({
        "client_id": client_id,
        "client_name": oauth::CLIENT_NAME,
        "client_uri": origin,
        "redirect_uris": [format!("{origin}/oauth/callback")],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "web",
    }))
    .into_response()
}
