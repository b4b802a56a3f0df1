//! One error type for every handler, answered as `{"detail": "…"}`.

use crate::auth::AuthError;
use axum::{
    Json,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use countersign_api::ErrorBody;

/// An error a handler returns. Internal errors are logged once here and
/// answered with a generic message.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the request is malformed.
    #[error("{0}")]
    BadRequest(String),
    /// 401: no valid session, or wrong credentials.
    #[error("{0}")]
    Unauthorized(String),
    /// 403 with a reason.
    #[error("{0}")]
    Forbidden(String),
    /// 404.
    #[error("{0}")]
    NotFound(String),
    /// 409 with a reason.
    #[error("{0}")]
    Conflict(String),
    /// 410: it existed, but its time is up.
    #[error("{0}")]
    Gone(String),
    /// 415: the body is not JSON.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 422: well-formed but refused by a rule (e.g. password policy).
    #[error("{0}")]
    Unprocessable(String),
    /// 429 with `Retry-After`.
    #[error("{message}")]
    TooManyRequests {
        /// Shown to the user.
        message: String,
        /// Seconds, for the `Retry-After` header.
        retry_after_secs: u64,
    },
    /// 502: a remote server (a connector) failed.
    #[error("{0}")]
    BadGateway(String),
    /// 503: a dependency is down.
    #[error("{0}")]
    Unavailable(String),
    /// 500: logged, never shown.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        Self::Internal(err.into())
    }
}

impl From<AuthError> for ApiError {
    fn from(err: AuthError) -> Self {
        let message = err.to_string();
        match err {
            AuthError::InvalidEmail
            | AuthError::InvalidDisplayName
            | AuthError::WeakPassword(_) => Self::Unprocessable(message),
            AuthError::EmailTaken => Self::Conflict(message),
            AuthError::SignupClosed | AuthError::Disabled => Self::Forbidden(message),
            AuthError::WrongCredentials
            | AuthError::MfaRequired
            | AuthError::WrongCode
            | AuthError::WrongPassword => Self::Unauthorized(message),
            AuthError::PasswordRequired => Self::BadRequest(message),
            AuthError::Throttled { retry_after_secs }
            | AuthError::SignupThrottled { retry_after_secs } => Self::TooManyRequests {
                message,
                retry_after_secs,
            },
            AuthError::Database(e) => Self::Internal(e.into()),
            AuthError::Hashing(e) => Self::Internal(anyhow::anyhow!(e)),
        }
    }
}

impl From<crate::turns::TurnError> for ApiError {
    fn from(err: crate::turns::TurnError) -> Self {
        use crate::turns::TurnError as E;
        let message = err.to_string();
        match err {
            E::ChatNotFound | E::TurnNotFound => Self::NotFound(message),
            E::Busy | E::AlreadyFinished => Self::Conflict(message),
            E::InvalidMessage(_) => Self::Unprocessable(message),
            E::SessionChanged => Self::Unavailable(message),
            E::Database(e) => Self::Internal(e.into()),
        }
    }
}

impl From<crate::models::KeyError> for ApiError {
    fn from(err: crate::models::KeyError) -> Self {
        use crate::models::KeyError as E;
        let message = err.to_string();
        match err {
            E::UnknownProvider(_) => Self::NotFound(message),
            E::InvalidKey => Self::Unprocessable(message),
            E::NoSecretKey => Self::Unavailable(message),
            E::Secret(e) => Self::Internal(e.into()),
            E::Database(e) => Self::Internal(e.into()),
        }
    }
}

/// The `detail` of every 403 the admin policy causes (DESIGN §5): a grant
/// or switch it forbids, a host it does not list.
pub const FORBIDDEN_BY_POLICY: &str = "forbidden_by_policy";

impl From<crate::policy::PolicyError> for ApiError {
    fn from(err: crate::policy::PolicyError) -> Self {
        use crate::policy::PolicyError as E;
        match err {
            E::Invalid(message) => Self::Unprocessable(message),
            E::Database(e) => Self::Internal(e.into()),
        }
    }
}

impl From<crate::connectors::ConnectorError> for ApiError {
    fn from(err: crate::connectors::ConnectorError) -> Self {
        use crate::connectors::ConnectorError as E;
        let message = err.to_string();
        match err {
            E::Invalid(_) | E::UnknownTool(_) | E::Refused(_) => Self::Unprocessable(message),
            E::Unreachable(_) => Self::BadGateway(message),
            E::NameTaken(_) | E::StaleReview(_) | E::Moved => Self::Conflict(message),
            E::NotFound => Self::NotFound(message),
            E::NoSecretKey => Self::Unavailable(message),
            // The word, like every policy refusal; the sentence is what a
            // failed Refresh stores as the connector's `last_error`.
            E::ForbiddenByPolicy(_) => Self::Forbidden(FORBIDDEN_BY_POLICY.into()),
            E::OAuth(e) => e.into(),
            E::Database(e) => Self::Internal(e.into()),
        }
    }
}

impl From<crate::connectors::oauth::OAuthError> for ApiError {
    fn from(err: crate::connectors::oauth::OAuthError) -> Self {
        use crate::connectors::oauth::OAuthError as E;
        let message = err.to_string();
        match err {
            E::NoSecretKey => Self::Unavailable(message),
            E::Setup(_) | E::Exchange(_) => Self::BadGateway(message),
            E::InsecureAuthorizationUrl(_) => Self::Unprocessable(message),
            E::UnknownState => Self::Gone(message),
            E::WrongUser => Self::Forbidden(message),
            E::ForbiddenByPolicy(_) => Self::Forbidden("forbidden_by_policy".into()),
            E::ConnectorChanged
            | E::IssuerChanged { .. }
            | E::NeedsSignIn
            | E::NeedsMoreAccess { .. }
            | E::StepUpRefused(_) => Self::Conflict(message),
            E::Database(e) => Self::Internal(e.into()),
            E::Store(_) => Self::Internal(anyhow::anyhow!(message)),
        }
    }
}

impl ApiError {
    /// 401 for a request without a valid session.
    pub fn sign_in_required() -> Self {
        Self::Unauthorized("Sign in to continue.".to_owned())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match &self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::Gone(_) => StatusCode::GONE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::BadGateway(_) => StatusCode::BAD_GATEWAY,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let detail = match &self {
            Self::Internal(err) => {
                tracing::error!(error = ?err, "request failed");
                "Something went wrong on the server. Try again; if it keeps happening, tell your administrator.".to_owned()
            }
            other => other.to_string(),
        };
        let mut response = (status, Json(ErrorBody { detail })).into_response();
        if let Self::TooManyRequests {
            retry_after_secs, ..
        } = self
        {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
        }
        response
    }
}

/// Unknown `/api` paths answer JSON, not the web app.
pub async fn api_not_found() -> ApiError {
    ApiError::NotFound("No such API endpoint.".to_owned())
}
