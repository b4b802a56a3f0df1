//! Single sign-on's routes (docs/design.md §4): `GET /auth/oidc/start`
//! and `GET /auth/oidc/callback` outside `/api` (the browser navigates to
//! them), `GET /api/auth/options` (what the sign-in page offers) and
//! `POST /api/auth/oidc/link` (a password account proves its password
//! once to be linked to the provider's identity).
//!
//! The `state` is bound to the browser that started the sign-in: `start`
//! sets it in a short-lived `HttpOnly` cookie, and `callback` signs in
//! only when the query's `state` is that cookie's. A callback link made
//! by someone else (their own code and state, sent to a victim) finds no
//! cookie and signs nobody in — the login CSRF of OAuth (RFC 6749
//! §10.12).

use super::{
    error::ApiError,
    extract::{Client, Json},
    security::{CarriesSecret, is_https},
    session::{cookie, session_cookie},
};
use crate::{
    AppState,
    auth::{
        self,
        oidc::{self, Account, Identity, OidcError, Purpose},
        session::{random_token, token_hash},
        throttle::Limits,
    },
    db,
};
use axum::{
    Extension,
    extract::{Query, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Redirect, Response},
};
use countersign_api::{AuthOptions, SessionResponse, SsoLinkRequest};
use serde::Deserialize;

/// The cookie that binds a sign-in's `state` to the browser.
const STATE_COOKIE: &str = "countersign_sso_state";

/// The cookie that holds a pending link between an identity and a
/// password account.
const LINK_COOKIE: &str = "countersign_sso_link";

/// How long either cookie lives (seconds): the provider's page, or the
/// password, must be done within it.
const COOKIE_SECS: u64 = 600;

fn short_cookie(name: &str, value: &str, max_age: u64, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    let cookie =
        format!("{name}={value}; HttpOnly; SameSite=Lax; Path=/; Max-Age={max_age}{secure}");
    #[expect(
        clippy::expect_used,
        reason = "the values are base64url, the rest ASCII"
    )]
    HeaderValue::from_str(&cookie).expect("cookie is a valid header value")
}

/// Where the provider sends the browser back: the public URL when set,
/// else this request's own `Host` (the provider accepts only the redirect
/// URIs registered with it, so a forged `Host` leads nowhere).
fn redirect_uri(state: &AppState, headers: &HeaderMap) -> Result<String, ApiError> {
    if let Some(origin) = state.config.public_origin() {
        return Ok(format!("{origin}/auth/oidc/callback"));
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .ok_or_else(|| ApiError::BadRequest("The request names no host.".into()))?;
    Ok(format!("http://{host}/auth/oidc/callback"))
}

/// A local path to go back to: `/…` but never `//…` or `/\…` (which a
/// browser reads as another host); anything else is `/`.
fn local_path(raw: Option<&str>) -> String {
    match raw {
        Some(path)
            if path.starts_with('/')
                && !path.starts_with("//")
                && !path.starts_with("/\\")
                && path.len() <= 512
                && !path.chars().any(char::is_control) =>
        {
            path.to_owned()
        }
        _ => "/".to_owned(),
    }
}

/// Back to the sign-in page, saying what went wrong.
fn back_to_sign_in(message: &str) -> Response {
    let query: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("sso_error", message)
        .finish();
    Redirect::to(&format!("/signin?{query}")).into_response()
}

/// `GET /api/auth/options`: what the sign-in page offers.
#[utoipa::path(
    get,
    path = "/auth/options",
    operation_id = "auth_options",
    tag = "auth",
    responses(
        (status = 200, description = "Whether passwords sign in, and the single sign-on button's words when it is set up", body = countersign_api::AuthOptions),
    ),
)]
pub async fn options(State(state): State<AppState>) -> axum::Json<AuthOptions> {
    axum::Json(AuthOptions {
        password_signin: state.config.password_signin,
        sso_label: state.oidc.as_ref().map(|p| p.button_label.clone()),
    })
}

/// `?return_to=` of `start`.
#[derive(Debug, Deserialize)]
pub struct StartQuery {
    return_to: Option<String>,
}

/// `GET /auth/oidc/start`: to the provider.
#[utoipa::path(
    get,
    path = "/auth/oidc/start",
    operation_id = "oidc_start",
    tag = "auth",
    params(
        ("return_to" = Option<String>, Query, description = "The local path to land on once signed in"),
    ),
    responses(
        (status = 303, description = "To the identity provider's sign-in page, with the state cookie set"),
        (status = 404, description = "Single sign-on is not set up", body = countersign_api::ErrorBody),
        (status = 502, description = "The provider's discovery document could not be read", body = countersign_api::ErrorBody),
    ),
)]
pub async fn start(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<StartQuery>,
) -> Result<Response, ApiError> {
    let provider = state
        .oidc
        .as_ref()
        .ok_or_else(|| ApiError::NotFound(OidcError::NotConfigured.to_string()))?;
    let redirect = redirect_uri(&state, &headers)?;
    let return_to = local_path(query.return_to.as_deref());
    let (url, state_token) = provider
        .start(&state.db, &redirect, Purpose::SignIn, &return_to)
        .await
        .map_err(|err| {
            tracing::warn!(error = ?err, "single sign-on could not start");
            ApiError::BadGateway(err.to_string())
        })?;
    let cookie = short_cookie(
        STATE_COOKIE,
        &state_token,
        COOKIE_SECS,
        is_https(&headers, &state),
    );
    Ok((
        StatusCode::SEE_OTHER,
        [
            (header::LOCATION, url),
            (
                header::SET_COOKIE,
                cookie.to_str().unwrap_or_default().to_owned(),
            ),
        ],
    )
        .into_response())
}

/// The provider's answer.
#[derive(Debug, Deserialize)]
pub struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /auth/oidc/callback`: signs in, or says why not on the sign-in
/// page.
#[utoipa::path(
    get,
    path = "/auth/oidc/callback",
    operation_id = "oidc_callback",
    tag = "auth",
    params(
        ("code" = Option<String>, Query, description = "The authorization code"),
        ("state" = Option<String>, Query, description = "The single-use state the sign-in started with"),
        ("error" = Option<String>, Query, description = "The provider's error"),
        ("error_description" = Option<String>, Query, description = "Its description"),
    ),
    responses(
        (status = 303, description = "Signed in: to the page the sign-in started from, with the session cookie; a password account with this e-mail: to `/signin?link=1`; otherwise to `/signin?sso_error=…`"),
    ),
)]
pub async fn callback(
    State(state): State<AppState>,
    Client(client): Client,
    headers: HeaderMap,
    Query(answer): Query<Callback>,
) -> Response {
    let Some(provider) = state.oidc.clone() else {
        return back_to_sign_in(&OidcError::NotConfigured.to_string());
    };
    let secure = is_https(&headers, &state);
    let clear_state = short_cookie(STATE_COOKIE, "", 0, secure);
    let failed = |err: OidcError| {
        tracing::warn!(error = ?err, "single sign-on refused");
        state
            .metrics
            .sign_in_refused(&auth::AuthError::WrongCredentials);
        let mut response = back_to_sign_in(&match err {
            OidcError::Disabled => "This account is disabled. Ask your administrator.".to_owned(),
            other => other.to_string(),
        });
        response
            .headers_mut()
            .append(header::SET_COOKIE, clear_state.clone());
        response
    };
    let Some(state_param) = answer.state else {
        return failed(OidcError::UnknownState);
    };
    // The browser that started this sign-in holds its state; another one
    // (a link someone sent) does not.
    if cookie(&headers, STATE_COOKIE).as_deref() != Some(state_param.as_str()) {
        return failed(OidcError::UnknownState);
    }
    let redirect = match redirect_uri(&state, &headers) {
        Ok(redirect) => redirect,
        Err(_) => return failed(OidcError::UnknownState),
    };
    if let Some(error) = answer.error {
        // Spend the state, so that the link cannot be replayed.
        let _ = provider
            .finish(&state.db, &redirect, &state_param, "")
            .await;
        return failed(OidcError::Refused(
            answer.error_description.unwrap_or(error),
        ));
    }
    let Some(code) = answer.code else {
        return failed(OidcError::Refused("no code".into()));
    };
    let finished = match provider
        .finish(&state.db, &redirect, &state_param, &code)
        .await
    {
        Ok(finished) => finished,
        Err(err) => return failed(err),
    };
    let mut response = match sign_in(&state, &provider, &finished.identity, &client).await {
        Ok(Signed::In(session_token)) => {
            let mut response = Redirect::to(&finished.return_to).into_response();
            response.headers_mut().append(
                header::SET_COOKIE,
                session_cookie(&session_token, state.config.session_absolute_secs, secure),
            );
            response
        }
        Ok(Signed::NeedsPassword(link_token)) => {
            let mut response = Redirect::to("/signin?link=1").into_response();
            response.headers_mut().append(
                header::SET_COOKIE,
                short_cookie(LINK_COOKIE, &link_token, COOKIE_SECS, secure),
            );
            response
        }
        Err(err) => return failed(err),
    };
    response
        .headers_mut()
        .append(header::SET_COOKIE, clear_state);
    response
}

/// What a checked identity came to.
enum Signed {
    /// A session's token.
    In(String),
    /// A pending link's token: the password account must prove its
    /// password.
    NeedsPassword(String),
}

async fn sign_in(
    state: &AppState,
    provider: &oidc::Provider,
    identity: &Identity,
    client: &auth::session::ClientInfo,
) -> Result<Signed, OidcError> {
    let mut tx = db::service_tx(&state.db).await?;
    let signed = match oidc::account_for(&mut tx, provider, identity, &super::auth::HASHER).await? {
        Account::User(user_id) => {
            let session =
                auth::session::create(&mut tx, user_id, client, state.config.session_absolute())
                    .await?;
            tracing::info!(user.id = %user_id, "signed in by single sign-on");
            Signed::In(session.token)
        }
        Account::NeedsPassword { user_id, .. } => {
            let token = random_token();
            sqlx::query!(
                "insert into oidc_links (token_hash, user_id, issuer, subject, email, groups, expires_at)
                 values ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))",
                token_hash(&token),
                user_id,
                identity.issuer,
                identity.subject,
                identity.email,
                &identity.groups,
                COOKIE_SECS as f64,
            )
            .execute(&mut *tx)
            .await?;
            Signed::NeedsPassword(token)
        }
    };
    tx.commit().await?;
    Ok(signed)
}

/// `POST /api/auth/oidc/link` `{password, code?}`: the account whose
/// e-mail the provider named proves its password (and two-factor code,
/// when it has one) once; the identity is linked and the browser signed
/// in. Throttled and answered exactly like sign-in.
#[utoipa::path(
    post,
    path = "/auth/oidc/link",
    operation_id = "oidc_link",
    tag = "auth",
    request_body = countersign_api::SsoLinkRequest,
    responses(
        (status = 200, description = "Linked and signed in: the session cookie and the CSRF token", body = countersign_api::SessionResponse),
        (status = 401, description = "`Wrong email or password.`, `mfa_required` (send `code` too) or a wrong code", body = countersign_api::ErrorBody),
        (status = 404, description = "No link waits in this browser (none started, used or older than ten minutes)", body = countersign_api::ErrorBody),
        (status = 429, description = "Too many attempts: try again after `Retry-After` seconds", body = countersign_api::ErrorBody),
    ),
)]
pub async fn link(
    State(state): State<AppState>,
    Client(client): Client,
    headers: HeaderMap,
    Json(req): Json<SsoLinkRequest>,
) -> Result<Response, ApiError> {
    let not_found =
        || ApiError::NotFound("No sign-in waits to be linked here. Start again.".into());
    let token = cookie(&headers, LINK_COOKIE).ok_or_else(not_found)?;
    let row = sqlx::query!(
        "select l.user_id, l.issuer, l.subject, l.email, l.groups, u.email as account_email
           from oidc_links l join users u on u.id = l.user_id
          where l.token_hash = $1 and l.expires_at > now()",
        token_hash(&token),
    )
    .fetch_optional(&mut *db::service_tx(&state.db).await?)
    .await?
    .ok_or_else(not_found)?;
    let provider = state.oidc.as_ref().ok_or_else(not_found)?;
    let (user, session) = auth::sign_in(
        &state.db,
        &super::auth::HASHER,
        &Limits::from(state.config.as_ref()),
        auth::SignInAttempt {
            email: &row.account_email,
            password: &req.password,
            code: req.code.as_deref(),
        },
        &client,
        state.config.session_absolute(),
        state.secrets.as_ref(),
    )
    .await
    .inspect_err(|err| state.metrics.sign_in_refused(err))?;
    let identity = Identity {
        issuer: row.issuer,
        subject: row.subject,
        email: row.email,
        email_verified: true,
        name: None,
        groups: row.groups,
        amr: Vec::new(),
    };
    let mut tx = db::service_tx(&state.db).await?;
    let spent = sqlx::query!(
        "delete from oidc_links where token_hash = $1 and user_id = $2",
        token_hash(&token),
        user.id,
    )
    .execute(&mut *tx)
    .await?;
    if spent.rows_affected() == 0 {
        return Err(not_found());
    }
    oidc::link(&mut tx, &identity, user.id).await?;
    // The same role mapping as every sign-in.
    oidc::account_for(&mut tx, provider, &identity, &super::auth::HASHER)
        .await
        .map_err(|err| ApiError::BadRequest(err.to_string()))?;
    tx.commit().await?;
    tracing::info!(user.id = %user.id, "linked a single sign-on identity");
    let mfa_enabled = auth::mfa::enabled(&state.db, user.id).await?;
    let secure = is_https(&headers, &state);
    let body = SessionResponse {
        user: user.into(),
        csrf_token: session.csrf_token,
        mfa_enabled,
    };
    let mut response = (StatusCode::OK, Extension(CarriesSecret), axum::Json(body)).into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        session_cookie(&session.token, state.config.session_absolute_secs, secure),
    );
    response
        .headers_mut()
        .append(header::SET_COOKIE, short_cookie(LINK_COOKIE, "", 0, secure));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_path_of_this_server_is_gone_back_to() {
        assert_eq!(local_path(Some("/chats/1")), "/chats/1");
        assert_eq!(local_path(Some("//evil.example/x")), "/");
        assert_eq!(local_path(Some("/\\evil.example")), "/");
        assert_eq!(local_path(Some("https://evil.example")), "/");
        assert_eq!(local_path(Some("/a\nb")), "/");
        assert_eq!(local_path(None), "/");
    }
}
