//! `/api/auth/*`: sign-up, sign-in, sign-out, who am I, password change.

use super::{
    error::ApiError,
    extract::{Client, CurrentUser, Json},
    security::{CarriesSecret, is_https},
    session::{clear_session_cookie, session_cookie},
};
use crate::{
    AppState,
    auth::{self, Email, NewSession, UserProfile, throttle::Limits},
};
use axum::{
    Extension,
    extract::State,
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
};
use countersign_api::{
    ChangePasswordRequest, LoginRequest, MeResponse, SessionResponse, SignupRequest,
};
use std::sync::LazyLock;

/// One hasher (and its concurrency limit) for the whole process.
pub(crate) static HASHER: LazyLock<auth::PasswordHasher> =
    LazyLock::new(auth::PasswordHasher::default);

fn session_response(
    status: StatusCode,
    state: &AppState,
    headers: &HeaderMap,
    user: UserProfile,
    session: NewSession,
    mfa_enabled: bool,
) -> Response {
    let cookie = session_cookie(
        &session.token,
        state.config.session_absolute_secs,
        is_https(headers, state),
    );
    let body = SessionResponse {
        user: user.into(),
        csrf_token: session.csrf_token,
        mfa_enabled,
    };
    (
        status,
        [(header::SET_COOKIE, cookie)],
        Extension(CarriesSecret),
        axum::Json(body),
    )
        .into_response()
}

/// 403 `password_signin_disabled` when `COUNTERSIGN_PASSWORD_SIGNIN=false`
/// leaves single sign-on as the only way in.
fn passwords_sign_in(state: &AppState) -> Result<(), ApiError> {
    if state.config.password_signin {
        Ok(())
    } else {
        Err(ApiError::Forbidden("password_signin_disabled".into()))
    }
}

/// `POST /api/auth/signup` → 201 with the user, the CSRF token and the
/// session cookie.
#[utoipa::path(
    post,
    path = "/auth/signup",
    tag = "auth",
    request_body = countersign_api::SignupRequest,
    responses(
        (status = 201, description = "The account, signed in: the session cookie (`HttpOnly`) and the CSRF token to send as `X-CSRF-Token`", body = countersign_api::SessionResponse),
        (status = 403, description = "Sign-up is closed on this server (an administrator creates accounts); `password_signin_disabled`: accounts come from single sign-on only; also a cross-origin `Origin`", body = countersign_api::ErrorBody),
        (status = 409, description = "An account with this email exists", body = countersign_api::ErrorBody),
        (status = 422, description = "A malformed email, display name or a password that breaks the policy (the detail says which)", body = countersign_api::ErrorBody),
        (status = 429, description = "Too many sign-ups from this address", body = countersign_api::ErrorBody),
    ),
)]
pub async fn signup(
    State(state): State<AppState>,
    Client(client): Client,
    headers: HeaderMap,
    Json(req): Json<SignupRequest>,
) -> Result<Response, ApiError> {
    passwords_sign_in(&state)?;
    let email = Email::parse(&req.email)?;
    let display_name = auth::display_name_or_default(req.display_name.as_deref(), &email)?;
    let (user, session) = auth::sign_up(
        &state.db,
        &HASHER,
        (
            state.config.allow_signup,
            &Limits::from(state.config.as_ref()),
        ),
        auth::NewAccount {
            email: &email,
            password: &req.password,
            display_name: &display_name,
        },
        &client,
        state.config.session_absolute(),
    )
    .await?;
    Ok(session_response(
        StatusCode::CREATED,
        &state,
        &headers,
        user,
        session,
        false,
    ))
}

/// `POST /api/auth/login` → 200 like sign-up; 401 "Wrong email or
/// password." for an unknown email and a wrong password alike; 429 with
/// `Retry-After` when throttled.
#[utoipa::path(
    post,
    path = "/auth/login",
    tag = "auth",
    request_body = countersign_api::LoginRequest,
    responses(
        (status = 200, description = "Signed in: the session cookie and the CSRF token", body = countersign_api::SessionResponse),
        (status = 401, description = "`Wrong email or password.` (one answer for both); `mfa_required`: the password was right, send the two-factor `code` too; or a wrong code", body = countersign_api::ErrorBody),
        (status = 403, description = "`account_disabled`: an administrator disabled the account (said only after the right password); `password_signin_disabled`: only single sign-on signs in here; also a cross-origin `Origin`", body = countersign_api::ErrorBody),
        (status = 429, description = "Too many attempts for this account or address: try again after `Retry-After` seconds", body = countersign_api::ErrorBody),
    ),
)]
pub async fn login(
    State(state): State<AppState>,
    Client(client): Client,
    headers: HeaderMap,
    Json(req): Json<LoginRequest>,
) -> Result<Response, ApiError> {
    passwords_sign_in(&state)?;
    let (user, session) = auth::sign_in(
        &state.db,
        &HASHER,
        &Limits::from(state.config.as_ref()),
        auth::SignInAttempt {
            email: &req.email,
            password: &req.password,
            code: req.code.as_deref(),
        },
        &client,
        state.config.session_absolute(),
        state.secrets.as_ref(),
    )
    .await
    .inspect_err(|err| state.metrics.sign_in_refused(err))?;
    let mfa_enabled = req.code.is_some() && auth::mfa::enabled(&state.db, user.id).await?;
    Ok(session_response(
        StatusCode::OK,
        &state,
        &headers,
        user,
        session,
        mfa_enabled,
    ))
}

/// `POST /api/auth/logout` → 204; the session is revoked server-side and the
/// cookie cleared.
#[utoipa::path(
    post,
    path = "/auth/logout",
    tag = "auth",
    responses(
        (status = 204, description = "Signed out: the session is revoked and the cookie cleared"),
    ),
)]
pub async fn logout(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    auth::session::revoke(&state.db, user.session_id).await?;
    tracing::info!(user.id = %user.user_id, "signed out");
    let cookie = clear_session_cookie(is_https(&headers, &state));
    Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, cookie)]).into_response())
}

/// `GET /api/auth/me` → the user and the session's CSRF token; 401 when not
/// signed in.
#[utoipa::path(
    get,
    path = "/auth/me",
    tag = "auth",
    responses(
        (status = 200, description = "The signed-in user and the session's CSRF token", body = countersign_api::SessionResponse),
    ),
)]
pub async fn me(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
) -> Result<(Extension<CarriesSecret>, axum::Json<MeResponse>), ApiError> {
    let profile = auth::profile(&state.db, &user).await?;
    Ok((
        Extension(CarriesSecret),
        axum::Json(MeResponse {
            user: profile.into(),
            csrf_token: user.csrf_token,
            mfa_enabled: auth::mfa::enabled(&state.db, user.user_id).await?,
        }),
    ))
}

/// `POST /api/auth/password` `{current_password, new_password}` → 204: the
/// password is changed and every other session of the user signed out
/// (this one stays). 401 `Wrong password.` (throttled like sign-in), 422
/// when the new one breaks the sign-up policy.
#[utoipa::path(
    post,
    path = "/auth/password",
    tag = "auth",
    request_body = countersign_api::ChangePasswordRequest,
    responses(
        (status = 204, description = "Changed; every other session of the user is signed out"),
        (status = 401, description = "`Wrong password.` (the current one)", body = countersign_api::ErrorBody),
        (status = 422, description = "The new password breaks the policy", body = countersign_api::ErrorBody),
        (status = 429, description = "Too many attempts for this account or address: try again after `Retry-After` seconds", body = countersign_api::ErrorBody),
    ),
)]
pub async fn change_password(
    State(state): State<AppState>,
    CurrentUser(user): CurrentUser,
    Client(client): Client,
    Json(req): Json<ChangePasswordRequest>,
) -> Result<StatusCode, ApiError> {
    auth::change_password(
        &state.db,
        &HASHER,
        &Limits::from(state.config.as_ref()),
        &user,
        (&req.current_password, &req.new_password),
        &client,
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}
