//! The HTTP client of the app: the only module that builds `/api` URLs or
//! calls `fetch`.
//!
//! It owns two conventions of the server (`../shared/DESIGN.md` §4, §8):
//! every non-GET request of a signed-in session carries `X-CSRF-Token`, and
//! every error answer is `{"detail": "…"}`, which becomes [`ApiError::detail`]
//! verbatim so the pages can show what the server decided. It deliberately
//! holds no state: the CSRF token lives in [`crate::session`], and callers
//! pass it in.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use countersign_api::{
    ActivityEntry, AdminOverview, AdminUser, AdminUserUpdate, AuthOptions, CSRF_HEADER,
    ChangePasswordRequest, ChatDetail, ChatSummary, Connector, ConnectorAuth, ConnectorTool,
    CreateChatRequest, CreateConnectorRequest, DecideRequest, DecideResponse, ErrorBody, Grant,
    InputAnswer, InputAnswered, InputRequest, LoginRequest, MeResponse, MfaCodeRequest,
    MfaConfirmed, MfaEnrolRequest, MfaEnrolment, ModelsResponse, OAuthStart, PendingCall, Policy,
    PolicyUpdate, ProviderKeyStatus, ResultDecided, ResultDecision, ResultReview,
    ReviewToolsRequest, Rule, RuleRequest, SendMessageRequest, SessionInfo, SessionResponse,
    SetProviderKeyRequest, SignupRequest, SsoLinkRequest, TurnAccepted, UpdateChatRequest,
    UpdateConnectorRequest,
};
use gloo_net::http::{Request, RequestBuilder, Response};
use serde::Deserialize;

use crate::model::waiting::WaitingWire;
use serde::de::DeserializeOwned;

/// A request that did not succeed, in words a person can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status, or `None` when no answer arrived (offline, server down).
    pub status: Option<u16>,
    /// The server's `detail`, or a generic sentence when it sent none.
    pub detail: String,
}

impl ApiError {
    /// The session is missing or expired (HTTP 401).
    pub fn is_unauthorized(&self) -> bool {
        self.status == Some(401)
    }

    /// The request conflicts with the current state (HTTP 409), e.g. a reply
    /// is still being written, or the turn to stop already finished.
    pub fn is_conflict(&self) -> bool {
        self.status == Some(409)
    }

    /// The server wants a two-factor code first (`{"detail":"mfa_required"}`):
    /// at sign-in a 401 (ask for the code and sign in again), on a
    /// trust-changing action a 403 (step up, then retry; see
    /// [`crate::model::step_up`]).
    pub fn is_mfa_required(&self) -> bool {
        matches!(self.status, Some(401 | 403)) && self.detail == MFA_REQUIRED
    }

    fn network() -> Self {
        Self {
            status: None,
            detail: "Could not reach the server. Check your connection and try again.".into(),
        }
    }

    fn unreadable(status: u16) -> Self {
        Self {
            status: Some(status),
            detail: "The server sent an answer this page could not read. Try reloading.".into(),
        }
    }
}

/// The machine code of an answer that needs a two-factor code first.
pub const MFA_REQUIRED: &str = "mfa_required";

/// The machine code of a trust-widening action refused because the server
/// requires two-factor sign-in (`COUNTERSIGN_REQUIRE_MFA`) and the account
/// has not set it up.
pub const MFA_ENROLMENT_REQUIRED: &str = "mfa_enrolment_required";

/// What the person reads instead of [`MFA_ENROLMENT_REQUIRED`].
pub const MFA_ENROLMENT_REQUIRED_TEXT: &str = "This server requires two-factor sign-in before you can do this. Set it up under Settings → Security, then try again.";

/// The server's detail as the person should read it: machine codes that
/// reach a form as they are become sentences; everything else is verbatim
/// (`mfa_required` stays a code: the step-up dialog answers it).
pub fn readable_detail(detail: String) -> String {
    let text = match detail.as_str() {
        MFA_ENROLMENT_REQUIRED => MFA_ENROLMENT_REQUIRED_TEXT,
        "forbidden_by_policy" => {
            "Your organisation's policy does not allow this. Ask your administrator if you need it."
        }
        "account_disabled" => "This account is disabled. Ask your administrator.",
        "password_change_required" => {
            "Choose a new password first: your administrator reset yours."
        }
        "last_admin" => {
            "This is the last active administrator. Make another account an administrator first."
        }
        "grant_not_offered" => "This card does not offer that choice.",
        _ => return detail,
    };
    text.to_owned()
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

/// `GET /api/auth/me`: the signed-in user and the session's CSRF token.
/// Fails with a 401 [`ApiError`] when nobody is signed in.
pub async fn me() -> Result<MeResponse, ApiError> {
    fetch_json(Request::get("/api/auth/me").build()).await
}

/// `POST /api/auth/signup`: creates the account and signs it in.
pub async fn signup(body: &SignupRequest) -> Result<SessionResponse, ApiError> {
    // No session yet, so no CSRF token: the server relies on the Origin check.
    fetch_json(Request::post("/api/auth/signup").json(body)).await
}

/// `POST /api/auth/login`.
pub async fn login(body: &LoginRequest) -> Result<SessionResponse, ApiError> {
    fetch_json(Request::post("/api/auth/login").json(body)).await
}

/// `GET /api/auth/options`: whether passwords sign in, and the single
/// sign-on button's words when the server has a provider.
pub async fn auth_options() -> Result<AuthOptions, ApiError> {
    fetch_json(Request::get("/api/auth/options").build()).await
}

/// `POST /api/auth/oidc/link`: the password (and code) of the account the
/// identity provider's e-mail names; linked and signed in on success.
pub async fn link_sso(body: &SsoLinkRequest) -> Result<SessionResponse, ApiError> {
    fetch_json(Request::post("/api/auth/oidc/link").json(body)).await
}

/// `POST /api/auth/logout`: revokes the current session (204).
pub async fn logout(csrf_token: &str) -> Result<(), ApiError> {
    fetch_empty(with_csrf(Request::post("/api/auth/logout"), csrf_token).build()).await
}

/// `POST /api/auth/mfa/enroll` `{password}`: a new TOTP secret, its
/// `otpauth://` URI and the URI as a QR code (SVG). Nothing is on until
/// [`mfa_confirm`]; 401 with a wrong current password (a message, not a
/// lost session), 409 while MFA is on, 503 when the server has no key to
/// seal secrets with.
pub async fn mfa_enroll(csrf_token: &str, password: &str) -> Result<MfaEnrolment, ApiError> {
    let body = MfaEnrolRequest {
        password: Some(password.to_owned()),
    };
    fetch_json(with_csrf(Request::post("/api/auth/mfa/enroll"), csrf_token).json(&body)).await
}

/// `POST /api/auth/password` (204): changes the password; the server signs
/// out every other session. A wrong current password is a 401 with a
/// message (not a lost session); a weak new one a 422 saying why.
pub async fn change_password(
    csrf_token: &str,
    current_password: &str,
    new_password: &str,
) -> Result<(), ApiError> {
    let body = ChangePasswordRequest {
        current_password: current_password.to_owned(),
        new_password: new_password.to_owned(),
    };
    fetch_empty(with_csrf(Request::post("/api/auth/password"), csrf_token).json(&body)).await
}

/// `POST /api/auth/mfa/confirm`: turns MFA on with a first code; answers
/// the recovery codes, which the server never shows again. A wrong code is
/// a 401 with a message (not a lost session).
pub async fn mfa_confirm(csrf_token: &str, code: &str) -> Result<MfaConfirmed, ApiError> {
    let body = MfaCodeRequest {
        code: code.to_owned(),
    };
    fetch_json(with_csrf(Request::post("/api/auth/mfa/confirm"), csrf_token).json(&body)).await
}

/// `POST /api/auth/mfa/disable` (204): turns MFA off; needs a code.
pub async fn mfa_disable(csrf_token: &str, code: &str) -> Result<(), ApiError> {
    let body = MfaCodeRequest {
        code: code.to_owned(),
    };
    fetch_empty(with_csrf(Request::post("/api/auth/mfa/disable"), csrf_token).json(&body)).await
}

/// `POST /api/auth/mfa/step-up` (204): a code that lets this session take
/// trust-changing actions for the next 10 minutes.
pub async fn mfa_step_up(csrf_token: &str, code: &str) -> Result<(), ApiError> {
    let body = MfaCodeRequest {
        code: code.to_owned(),
    };
    fetch_empty(with_csrf(Request::post("/api/auth/mfa/step-up"), csrf_token).json(&body)).await
}

/// `GET /api/auth/sessions`: the caller's live sessions, the one asking
/// marked `current`.
pub async fn list_sessions() -> Result<Vec<SessionInfo>, ApiError> {
    fetch_json(Request::get("/api/auth/sessions").build()).await
}

#[derive(Deserialize)]
struct Revoked {
    revoked: u64,
}

/// `POST /api/auth/sessions/revoke-others`: signs out every other session
/// of the caller; answers how many there were.
pub async fn revoke_other_sessions(csrf_token: &str) -> Result<u64, ApiError> {
    let request = with_csrf(
        Request::post("/api/auth/sessions/revoke-others"),
        csrf_token,
    )
    .json(&serde_json::json!({}));
    let body: Revoked = fetch_json(request).await?;
    Ok(body.revoked)
}

/// `GET /api/activity` (the caller's log) or, for an administrator's view,
/// `GET /api/admin/activity?user=…`, narrowed by `filter`: newest entry
/// first (digests of arguments, never the arguments); with `before`, the
/// page of entries older than that `seq`.
pub async fn activity(
    scope: &crate::model::activity::Scope,
    filter: &countersign_api::ActivityFilter,
    before: Option<i64>,
) -> Result<Vec<ActivityEntry>, ApiError> {
    let mut url = activity_url(scope, filter, None);
    if let Some(before) = before {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str(&format!("before={before}"));
    }
    fetch_json(Request::get(&url).build()).await
}

/// Where the activity log, as `scope` and `filter` narrow it, is read;
/// with `export` (`csv` or `json`), where it is downloaded.
pub fn activity_url(
    scope: &crate::model::activity::Scope,
    filter: &countersign_api::ActivityFilter,
    export: Option<&str>,
) -> String {
    use crate::model::activity::Scope;
    let mut params = Vec::new();
    match scope {
        Scope::Own | Scope::Everyone => {}
        Scope::Account(id) => params.push(format!("user={}", segment(id))),
    }
    if let Some(format) = export {
        params.push(format!("format={}", segment(format)));
    }
    let narrowed = filter.query_string();
    if !narrowed.is_empty() {
        params.push(narrowed);
    }
    let base = match scope {
        Scope::Own => "/api/activity",
        Scope::Everyone | Scope::Account(_) => "/api/admin/activity",
    };
    let path = if export.is_some() {
        format!("{base}/export")
    } else {
        base.to_owned()
    };
    if params.is_empty() {
        path
    } else {
        format!("{path}?{}", params.join("&"))
    }
}

/// `GET /api/admin/pending-calls?user=…`: the calls waiting for a
/// decision across accounts, for an administrator's view of Activity
/// (whose and which tool, never the arguments).
pub async fn admin_pending_calls(
    scope: &crate::model::activity::Scope,
) -> Result<Vec<countersign_api::AdminWaitingCall>, ApiError> {
    use crate::model::activity::Scope;
    let url = match scope {
        Scope::Account(id) => format!("/api/admin/pending-calls?user={}", segment(id)),
        Scope::Own | Scope::Everyone => "/api/admin/pending-calls".to_owned(),
    };
    fetch_json(Request::get(&url).build()).await
}

/// `GET /api/chats`: the caller's chats, most recently used first.
pub async fn list_chats() -> Result<Vec<ChatSummary>, ApiError> {
    fetch_json(Request::get("/api/chats").build()).await
}

/// `POST /api/chats`: a new, empty chat with `model`.
pub async fn create_chat(csrf_token: &str, model: &str) -> Result<ChatSummary, ApiError> {
    let body = CreateChatRequest {
        model: model.to_owned(),
        title: None,
    };
    fetch_json(with_csrf(Request::post("/api/chats"), csrf_token).json(&body)).await
}

/// `GET /api/chats/{id}`: finished messages and where the stream resumes.
pub async fn get_chat(chat_id: &str) -> Result<ChatDetail, ApiError> {
    let url = format!("/api/chats/{}", segment(chat_id));
    fetch_json(Request::get(&url).build()).await
}

/// `PATCH /api/chats/{id}`: rename, or change the model of later turns.
pub async fn update_chat(
    csrf_token: &str,
    chat_id: &str,
    body: &UpdateChatRequest,
) -> Result<ChatSummary, ApiError> {
    let url = format!("/api/chats/{}", segment(chat_id));
    fetch_json(with_csrf(Request::patch(&url), csrf_token).json(body)).await
}

/// `DELETE /api/chats/{id}` (204).
pub async fn delete_chat(csrf_token: &str, chat_id: &str) -> Result<(), ApiError> {
    let url = format!("/api/chats/{}", segment(chat_id));
    fetch_empty(with_csrf(Request::delete(&url), csrf_token).build()).await
}

/// `POST /api/chats/{id}/messages`: starts a turn (202). A 409 means a
/// reply is still being written.
pub async fn send_message(
    csrf_token: &str,
    chat_id: &str,
    content: &str,
) -> Result<TurnAccepted, ApiError> {
    let url = format!("/api/chats/{}/messages", segment(chat_id));
    let body = SendMessageRequest {
        content: content.to_owned(),
    };
    fetch_json(with_csrf(Request::post(&url), csrf_token).json(&body)).await
}

/// `POST /api/chats/{id}/turns/{turn_id}/cancel` (202). A 409 means the
/// turn already finished.
pub async fn cancel_turn(csrf_token: &str, chat_id: &str, turn_id: &str) -> Result<(), ApiError> {
    let url = format!(
        "/api/chats/{}/turns/{}/cancel",
        segment(chat_id),
        segment(turn_id)
    );
    fetch_empty(with_csrf(Request::post(&url), csrf_token).build()).await
}

/// The URL of `GET /api/chats/{id}/stream` (Server-Sent Events), replaying
/// every event with a sequence number above `after`. [`crate::sse`] opens
/// it; reconnects send `Last-Event-ID`, which the server prefers.
pub fn chat_stream_url(chat_id: &str, after: i64) -> String {
    format!("/api/chats/{}/stream?after={after}", segment(chat_id))
}

/// `GET /api/models`: the models the caller can use now.
pub async fn list_models() -> Result<ModelsResponse, ApiError> {
    fetch_json(Request::get("/api/models").build()).await
}

/// `GET /api/settings/provider-keys`: which keys are set (never the keys).
pub async fn provider_keys() -> Result<Vec<ProviderKeyStatus>, ApiError> {
    fetch_json(Request::get("/api/settings/provider-keys").build()).await
}

/// `PUT /api/settings/provider-keys/{provider}` (204).
pub async fn set_provider_key(
    csrf_token: &str,
    provider: &str,
    api_key: &str,
) -> Result<(), ApiError> {
    let url = format!("/api/settings/provider-keys/{}", segment(provider));
    let body = SetProviderKeyRequest {
        api_key: api_key.to_owned(),
    };
    fetch_empty(with_csrf(Request::put(&url), csrf_token).json(&body)).await
}

/// `DELETE /api/settings/provider-keys/{provider}` (204).
pub async fn delete_provider_key(csrf_token: &str, provider: &str) -> Result<(), ApiError> {
    let url = format!("/api/settings/provider-keys/{}", segment(provider));
    fetch_empty(with_csrf(Request::delete(&url), csrf_token).build()).await
}

/// `GET /api/connectors`: the caller's connectors (never a secret).
pub async fn list_connectors() -> Result<Vec<Connector>, ApiError> {
    fetch_json(Request::get("/api/connectors").build()).await
}

/// `POST /api/connectors` (201). A 422 carries the server's refusal (a bad
/// URL, a private address, bad headers), a 409 a name already in use.
pub async fn create_connector(
    csrf_token: &str,
    body: &CreateConnectorRequest,
) -> Result<Connector, ApiError> {
    fetch_json(with_csrf(Request::post("/api/connectors"), csrf_token).json(body)).await
}

/// `DELETE /api/connectors/{id}` (204): its tools and grants go with it.
pub async fn delete_connector(csrf_token: &str, connector_id: &str) -> Result<(), ApiError> {
    let url = format!("/api/connectors/{}", segment(connector_id));
    fetch_empty(with_csrf(Request::delete(&url), csrf_token).build()).await
}

/// `POST /api/connectors/{id}/test`: connects and lists the tools; answers
/// the connector with its new status. A failure's reason is also stored on
/// the connector as `last_error`.
pub async fn test_connector(csrf_token: &str, connector_id: &str) -> Result<Connector, ApiError> {
    let url = format!("/api/connectors/{}/test", segment(connector_id));
    fetch_json(with_csrf(Request::post(&url), csrf_token).build()).await
}

/// `POST /api/connectors/{id}/refresh`: lists the tools again, marking new
/// and changed ones.
pub async fn refresh_connector(
    csrf_token: &str,
    connector_id: &str,
) -> Result<Connector, ApiError> {
    let url = format!("/api/connectors/{}/refresh", segment(connector_id));
    fetch_json(with_csrf(Request::post(&url), csrf_token).build()).await
}

/// `GET /api/connectors/{id}/tools`: every tool the server listed, with its
/// review state and its annotations exactly as the server sent them.
pub async fn connector_tools(connector_id: &str) -> Result<Vec<ConnectorTool>, ApiError> {
    let url = format!("/api/connectors/{}/tools", segment(connector_id));
    fetch_json(Request::get(&url).build()).await
}

/// `PUT /api/connectors/{id}/tools/review` (204): keep some tools, decline
/// the others.
pub async fn review_tools(
    csrf_token: &str,
    connector_id: &str,
    body: &ReviewToolsRequest,
) -> Result<(), ApiError> {
    let url = format!("/api/connectors/{}/tools/review", segment(connector_id));
    fetch_empty(with_csrf(Request::put(&url), csrf_token).json(body)).await
}

/// `PATCH /api/connectors/{id}` with only `trust_annotations`: whether the
/// connector's own safety annotations may let its read-only, closed-world
/// tools run without asking (DESIGN §5 rule 3). Answers the connector.
pub async fn set_trust_annotations(
    csrf_token: &str,
    connector_id: &str,
    trust: bool,
) -> Result<Connector, ApiError> {
    let url = format!("/api/connectors/{}", segment(connector_id));
    let body = UpdateConnectorRequest {
        trust_annotations: Some(trust),
        ..UpdateConnectorRequest::default()
    };
    fetch_json(with_csrf(Request::patch(&url), csrf_token).json(&body)).await
}

/// `PATCH /api/connectors/{id}` with only `review_results`: whether what
/// the connector's tools return waits for the user's review first.
pub async fn set_review_results(
    csrf_token: &str,
    connector_id: &str,
    review: bool,
) -> Result<Connector, ApiError> {
    let url = format!("/api/connectors/{}", segment(connector_id));
    let body = UpdateConnectorRequest {
        review_results: Some(review),
        ..UpdateConnectorRequest::default()
    };
    fetch_json(with_csrf(Request::patch(&url), csrf_token).json(&body)).await
}

/// `PATCH /api/connectors/{id}` with only `auth`: replaces the connector's
/// credentials (write-only, like at creation). Answers the connector.
pub async fn set_connector_auth(
    csrf_token: &str,
    connector_id: &str,
    auth: &ConnectorAuth,
) -> Result<Connector, ApiError> {
    let url = format!("/api/connectors/{}", segment(connector_id));
    let body = UpdateConnectorRequest {
        auth: Some(auth.clone()),
        ..UpdateConnectorRequest::default()
    };
    fetch_json(with_csrf(Request::patch(&url), csrf_token).json(&body)).await
}

/// `POST /api/connectors/{id}/oauth/start`: where to send the browser to
/// sign in (the authorization server's page, with this request's `state`).
/// 409 when the connector does not use OAuth.
pub async fn start_connector_sign_in(
    csrf_token: &str,
    connector_id: &str,
) -> Result<OAuthStart, ApiError> {
    let url = format!("/api/connectors/{}/oauth/start", segment(connector_id));
    fetch_json(with_csrf(Request::post(&url), csrf_token).build()).await
}

/// `DELETE /api/connectors/{id}/oauth` (204): signs the connector out,
/// revoking its tokens where the authorization server offers it.
pub async fn sign_out_connector(csrf_token: &str, connector_id: &str) -> Result<(), ApiError> {
    let url = format!("/api/connectors/{}/oauth", segment(connector_id));
    fetch_empty(with_csrf(Request::delete(&url), csrf_token).build()).await
}

/// `GET /api/mcp-pending-calls`: the caller's calls waiting for a decision,
/// each with the seconds left by the server's clock.
pub async fn pending_calls() -> Result<Vec<PendingCall>, ApiError> {
    fetch_json(Request::get("/api/mcp-pending-calls").build()).await
}

/// `POST /api/mcp-pending-calls/{id}`: approve or decline one waiting call
/// (DESIGN §6). `arguments_digest` is the one the card showed: a mismatch
/// (409) decides nothing. 404 means it is not pending any more (decided
/// elsewhere), 410 that it expired.
pub async fn decide_pending_call(
    csrf_token: &str,
    pending_call_id: &str,
    body: &DecideRequest,
) -> Result<DecideResponse, ApiError> {
    let url = format!("/api/mcp-pending-calls/{}", segment(pending_call_id));
    fetch_json(with_csrf(Request::post(&url), csrf_token).json(body)).await
}

/// `GET /api/waiting`: what waits for the user across chats, soonest
/// first, one short row each ([`WaitingWire`]).
pub async fn waiting() -> Result<Vec<WaitingWire>, ApiError> {
    fetch_json(Request::get("/api/waiting").build()).await
}

/// `GET /api/mcp-input-requests`: the caller's input requests still
/// waiting for an answer (DESIGN §6a), each with the seconds left by the
/// server's clock.
pub async fn input_requests() -> Result<Vec<InputRequest>, ApiError> {
    fetch_json(Request::get("/api/mcp-input-requests").build()).await
}

/// `POST /api/mcp-input-requests/{id}`: accept (with the form's content),
/// decline or cancel one input request. 404 means it is not pending any
/// more (answered elsewhere), 410 that its time is over, 422 that the
/// content does not fit the schema (the detail names the field).
pub async fn answer_input_request(
    csrf_token: &str,
    input_request_id: &str,
    body: &InputAnswer,
) -> Result<InputAnswered, ApiError> {
    let url = format!("/api/mcp-input-requests/{}", segment(input_request_id));
    fetch_json(with_csrf(Request::post(&url), csrf_token).json(body)).await
}

/// `GET /api/mcp-pending-calls/{id}/result`: a result waiting for the
/// user's review, with its whole text (404 once decided).
pub async fn result_review(review_id: &str) -> Result<ResultReview, ApiError> {
    let url = format!("/api/mcp-pending-calls/{}/result", segment(review_id));
    fetch_json(Request::get(&url).build()).await
}

/// `POST /api/mcp-pending-calls/{id}/result`: pass, redact or withhold.
pub async fn decide_result(
    csrf_token: &str,
    review_id: &str,
    body: &ResultDecision,
) -> Result<ResultDecided, ApiError> {
    let url = format!("/api/mcp-pending-calls/{}/result", segment(review_id));
    fetch_json(with_csrf(Request::post(&url), csrf_token).json(body)).await
}

/// `GET /api/grants`: the caller's "always allow" rules.
pub async fn grants() -> Result<Vec<Grant>, ApiError> {
    fetch_json(Request::get("/api/grants").build()).await
}

/// `DELETE /api/grants/{id}` (204): revokes an "always allow" rule, so the
/// tool's next call asks again. 404: not the caller's, or already gone.
pub async fn revoke_grant(csrf_token: &str, grant_id: &str) -> Result<(), ApiError> {
    let url = format!("/api/grants/{}", segment(grant_id));
    fetch_empty(with_csrf(Request::delete(&url), csrf_token).build()).await
}

/// `GET /api/rules` (`admin: false`) or `GET /api/admin/rules`: the
/// caller's own rules, or the administrators' rules for everyone.
pub async fn rules(admin: bool) -> Result<Vec<Rule>, ApiError> {
    fetch_json(Request::get(rules_path(admin)).build()).await
}

/// `POST /api/rules` or `POST /api/admin/rules` (201). 422 says which part
/// is wrong; 403 `mfa_required` asks for a step-up first (an allow rule,
/// every admin rule); 403 `forbidden_by_policy` refuses an allow rule the
/// admin policy forbids.
pub async fn create_rule(
    csrf_token: &str,
    admin: bool,
    body: &RuleRequest,
) -> Result<Rule, ApiError> {
    fetch_json(with_csrf(Request::post(rules_path(admin)), csrf_token).json(body)).await
}

/// `DELETE /api/rules/{id}` or `DELETE /api/admin/rules/{id}` (204).
pub async fn delete_rule(csrf_token: &str, admin: bool, rule_id: &str) -> Result<(), ApiError> {
    let url = format!("{}/{}", rules_path(admin), segment(rule_id));
    fetch_empty(with_csrf(Request::delete(&url), csrf_token).build()).await
}

fn rules_path(admin: bool) -> &'static str {
    if admin {
        "/api/admin/rules"
    } else {
        "/api/rules"
    }
}

/// `GET /api/admin/policy` (administrators only).
pub async fn admin_policy() -> Result<Policy, ApiError> {
    fetch_json(Request::get("/api/admin/policy").build()).await
}

/// `PUT /api/admin/policy`: the fields sent change, the others keep their
/// value. 422 names a malformed list entry.
pub async fn put_admin_policy(csrf_token: &str, update: &PolicyUpdate) -> Result<Policy, ApiError> {
    fetch_json(with_csrf(Request::put("/api/admin/policy"), csrf_token).json(update)).await
}

/// `GET /api/admin/users`.
pub async fn admin_users() -> Result<Vec<AdminUser>, ApiError> {
    fetch_json(Request::get("/api/admin/users").build()).await
}

/// `PATCH /api/admin/users/{id}`: disable, enable, make or unmake an
/// administrator (409 `last_admin` for the last active one).
pub async fn update_admin_user(
    csrf_token: &str,
    user_id: &str,
    update: &AdminUserUpdate,
) -> Result<AdminUser, ApiError> {
    let url = format!("/api/admin/users/{}", segment(user_id));
    fetch_json(with_csrf(Request::patch(&url), csrf_token).json(update)).await
}

/// `GET /api/admin/overview`.
pub async fn admin_overview() -> Result<AdminOverview, ApiError> {
    fetch_json(Request::get("/api/admin/overview").build()).await
}

/// `GET /api/connectors/available`: the deployment's one-click offers.
pub async fn available_connectors() -> Result<Vec<countersign_api::AvailableConnector>, ApiError> {
    let body: countersign_api::AvailableConnectors =
        fetch_json(Request::get("/api/connectors/available").build()).await?;
    Ok(body.available)
}

/// `GET /api/approvals/inbox`: calls of other accounts waiting for the
/// caller's second approval (403 `not_an_approver` for anyone else).
pub async fn approvals_inbox() -> Result<Vec<countersign_api::SecondApproval>, ApiError> {
    fetch_json(Request::get("/api/approvals/inbox").build()).await
}

/// `POST /api/approvals/inbox/{id}`: an approver's decision.
pub async fn decide_second(
    csrf_token: &str,
    id: &str,
    body: &countersign_api::SecondDecideRequest,
) -> Result<countersign_api::DecideResponse, ApiError> {
    let url = format!("/api/approvals/inbox/{}", segment(id));
    fetch_json(with_csrf(Request::post(&url), csrf_token).json(body)).await
}

/// Percent-encodes one path segment. Ids come from the address bar too, so
/// a crafted `/chats/..%2Fsettings` must stay one segment of a chat URL.
fn segment(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    // "." and ".." are dot-segments even when not encoded elsewhere.
    match out.as_str() {
        "." => "%2E".into(),
        ".." => "%2E%2E".into(),
        _ => out,
    }
}

/// Adds the session's CSRF token; every non-GET request of a signed-in
/// session goes through here.
fn with_csrf(request: RequestBuilder, csrf_token: &str) -> RequestBuilder {
    request.header(CSRF_HEADER, csrf_token)
}

/// Sends a request built by one of the functions above. Building only fails
/// when a body cannot be serialized, which for our wire types means a bug; it
/// is reported like a network failure rather than a panic.
async fn send(request: Result<Request, gloo_net::Error>) -> Result<Response, ApiError> {
    let request = request.map_err(|_| ApiError::network())?;
    request.send().await.map_err(|_| ApiError::network())
}

/// Sends `request` and reads the answer as JSON. The sending and reading
/// is one boxed, non-generic future shared by every call; only the decode
/// is generic.
async fn fetch_json<T: DeserializeOwned>(
    request: Result<Request, gloo_net::Error>,
) -> Result<T, ApiError> {
    let (status, text) = fetch_text(request).await?;
    serde_json::from_str(&text).map_err(|_| ApiError::unreadable(status))
}

/// A successful answer's status and body text, or why there is none.
type TextFuture = Pin<Box<dyn Future<Output = Result<(u16, String), ApiError>>>>;

/// Sends `request` and answers its status and body text, or the error.
/// Boxed so that its state machine is compiled once, not inlined into
/// every `fetch_json::<T>` (measured: 14 KB less wasm, 3.4 KB less brotli).
fn fetch_text(request: Result<Request, gloo_net::Error>) -> TextFuture {
    Box::pin(async move {
        let response = send(request).await?;
        if !response.ok() {
            return Err(error_from(response).await);
        }
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|_| ApiError::unreadable(status))?;
        Ok((status, text))
    })
}

/// Sends `request` and expects a success with nothing to read (204).
async fn fetch_empty(request: Result<Request, gloo_net::Error>) -> Result<(), ApiError> {
    expect_success(send(request).await?).await
}

async fn expect_success(response: Response) -> Result<(), ApiError> {
    if response.ok() {
        Ok(())
    } else {
        Err(error_from(response).await)
    }
}

/// Turns an error answer into an [`ApiError`], preferring the server's own
/// `{"detail": "…"}`; a proxy's HTML error page gets a generic sentence.
async fn error_from(response: Response) -> ApiError {
    let status = response.status();
    let detail = match response.json::<ErrorBody>().await {
        Ok(body) if !body.detail.trim().is_empty() => readable_detail(body.detail),
        _ => fallback_detail(status),
    };
    ApiError {
        status: Some(status),
        detail,
    }
}

fn fallback_detail(status: u16) -> String {
    match status {
        401 => "Please sign in again.".into(),
        403 => "You are not allowed to do that.".into(),
        429 => "Too many attempts. Wait a moment and try again.".into(),
        500.. => format!("The server had a problem (HTTP {status}). Try again in a moment."),
        _ => format!("The request failed (HTTP {status})."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_enrolment_code_reads_as_a_sentence_and_other_details_are_verbatim() {
        assert!(readable_detail(MFA_ENROLMENT_REQUIRED.into()).contains("Settings → Security"));
        assert_eq!(
            readable_detail(MFA_REQUIRED.into()),
            MFA_REQUIRED,
            "the step-up still sees its code"
        );
        assert_eq!(readable_detail("Wrong password.".into()), "Wrong password.");
        for code in [
            "forbidden_by_policy",
            "account_disabled",
            "password_change_required",
            "last_admin",
        ] {
            let text = readable_detail(code.into());
            assert!(text.ends_with('.') && !text.contains('_'), "{code}: {text}");
        }
    }
}
