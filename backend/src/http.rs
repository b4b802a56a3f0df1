//! The HTTP surface: every route in one place, middleware, static files.
//!
//! Architecture invariant: this module tree is the only one that knows
//! status codes. Domain modules return their own error enums and
//! [`error::ApiError`] maps them.

pub mod activity;
pub mod admin;
pub mod approvals;
pub mod auth;
pub mod chats;
pub mod conn;
pub mod connectors;
pub mod error;
pub mod extract;
pub mod health;
pub mod inputs;
pub mod metrics;
pub mod mfa;
pub mod models;
pub mod oauth;
pub mod oidc;
pub mod openapi;
pub mod request_id;
pub mod results;
pub mod rules;
pub mod security;
pub mod session;
pub mod stream;
pub mod stream_sessions;
pub mod waiting;
pub mod web_app;

use crate::AppState;
use axum::{Router, middleware};
use std::future::Future;
use tower::util::MapRequestLayer;
use tower_http::{
    compression::CompressionLayer,
    request_id::{MakeRequestUuid, PropagateRequestIdLayer, RequestId, SetRequestIdLayer},
    trace::{DefaultOnResponse, TraceLayer},
};
use utoipa_axum::{router::OpenApiRouter, routes};

/// `/api`'s routes. Each is registered through `utoipa_axum::routes!`,
/// which takes the path and method from the handler's `#[utoipa::path]`:
/// the served routes and the OpenAPI document ([`openapi::document`]) are
/// one list and cannot drift apart.
pub(crate) fn api_routes() -> OpenApiRouter<AppState> {
    answer_routes().merge(event_stream_routes())
}

/// The event stream, served outside the compression layer: it is never
/// compressed, and tower-http's response body (sized for its encoders)
/// would add ~5.9 KiB to every open stream (`docs/operations.md`, "Where
/// the memory goes").
fn event_stream_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(stream::chat_stream))
}

/// Every `/api` route but the event stream.
fn answer_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(auth::signup))
        .routes(routes!(auth::login))
        .routes(routes!(auth::logout))
        .routes(routes!(auth::me))
        .routes(routes!(auth::change_password))
        .routes(routes!(oidc::options))
        .routes(routes!(oidc::link))
        .routes(routes!(mfa::enroll))
        .routes(routes!(mfa::confirm))
        .routes(routes!(mfa::step_up))
        .routes(routes!(mfa::disable))
        .routes(routes!(mfa::list_sessions))
        .routes(routes!(mfa::revoke_other_sessions))
        .routes(routes!(chats::list_chats, chats::create_chat))
        .routes(routes!(
            chats::get_chat,
            chats::update_chat,
            chats::delete_chat
        ))
        .routes(routes!(chats::send_message))
        .routes(routes!(chats::cancel_turn))
        .routes(routes!(
            connectors::list_connectors,
            connectors::create_connector
        ))
        .routes(routes!(
            connectors::get_connector,
            connectors::update_connector,
            connectors::delete_connector
        ))
        .routes(routes!(connectors::available_connectors))
        .routes(routes!(connectors::test_connector))
        .routes(routes!(connectors::refresh_connector))
        .routes(routes!(connectors::list_tools))
        .routes(routes!(connectors::review_tools))
        .routes(routes!(oauth::start))
        .routes(routes!(oauth::disconnect))
        .routes(routes!(approvals::list_pending))
        .routes(routes!(approvals::decide))
        .routes(routes!(approvals::list_inbox))
        .routes(routes!(approvals::decide_second))
        .routes(routes!(inputs::list))
        .routes(routes!(inputs::answer))
        .routes(routes!(results::list_result_reviews))
        .routes(routes!(results::show_result, results::decide_result))
        .routes(routes!(waiting::list_waiting))
        .routes(routes!(approvals::list_grants))
        .routes(routes!(approvals::delete_grant))
        .routes(routes!(rules::list_rules, rules::create_rule))
        .routes(routes!(rules::delete_rule))
        .routes(routes!(rules::admin_list_rules, rules::admin_create_rule))
        .routes(routes!(rules::admin_delete_rule))
        .routes(routes!(activity::list_activity))
        .routes(routes!(activity::export_activity))
        .routes(routes!(activity::admin_list_activity))
        .routes(routes!(activity::admin_pending_calls))
        .routes(routes!(activity::admin_export_activity))
        .routes(routes!(admin::get_policy, admin::put_policy))
        .routes(routes!(admin::list_users))
        .routes(routes!(admin::update_user))
        .routes(routes!(admin::overview))
        .routes(routes!(models::list_models))
        .routes(routes!(models::list_provider_keys))
        .routes(routes!(
            models::set_provider_key,
            models::delete_provider_key
        ))
        .routes(routes!(openapi::openapi_json))
}

/// The routes outside `/api` that the OpenAPI document describes too.
pub(crate) fn outer_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(oidc::start))
        .routes(routes!(oidc::callback))
        .routes(routes!(oauth::callback))
        .routes(routes!(oauth::callback_for))
        .routes(routes!(oauth::client_metadata))
        .routes(routes!(health::healthz))
        .routes(routes!(health::readyz))
        // Loopback peers only, unless `COUNTERSIGN_METRICS_BIND` gives it
        // a listener of its own (`metrics::serve`).
        .routes(routes!(metrics::get_metrics))
}

/// The whole app: `/api`, health checks, and the web app with an
/// `index.html` fallback for client-side routes.
pub fn router(state: AppState) -> Router {
    let origin_and_csrf = middleware::from_fn_with_state(state.clone(), security::origin_and_csrf);
    let (answers, _) = answer_routes().split_for_parts();
    let (streams, _) = event_stream_routes().split_for_parts();
    let api = answers
        .fallback(error::api_not_found)
        .layer(origin_and_csrf.clone())
        // JSON answers compressed when the client asks (DESIGN §9a); never
        // an event stream (outside this layer, and refused by the
        // predicate too), never the CSRF token (`security::compressible`).
        .layer(CompressionLayer::new().compress_when(security::compressible()))
        .merge(streams.layer(origin_and_csrf));
    let (outer, _) = outer_routes().split_for_parts();

    Router::new()
        .nest("/api", api)
        .merge(outer)
        .merge(web_app::router(&state.config.static_dir))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            security::host_check,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            security::security_headers,
        ))
        // Layers run bottom-up: the id is made sane, set, read by the span,
        // and copied onto every response (404s and refusals included).
        .layer(PropagateRequestIdLayer::new(request_id::X_REQUEST_ID))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with({
                    // The span names the client as throttling sees it (the
                    // trusted proxy's X-Forwarded-For, else the peer).
                    let trusted = state.config.trusted_proxies.clone();
                    move |request: &axum::extract::Request| {
                        let client = extract::client_ip(
                            extract::peer_ip(request.extensions()),
                            request.headers(),
                            &trusted,
                        );
                        let request_id = request
                            .extensions()
                            .get::<RequestId>()
                            .and_then(|id| id.header_value().to_str().ok());
                        // The path, never the query: the OAuth callback's
                        // carries a code and a state.
                        tracing::info_span!(
                            "request",
                            method = %request.method(),
                            path = request.uri().path(),
                            version = ?request.version(),
                            client.ip = client.map(tracing::field::display),
                            request_id,
                            // Recorded once the session is resolved
                            // (`session::session_from_headers`).
                            user_id = tracing::field::Empty,
                        )
                    }
                })
                // One line per request, with its status and latency.
                .on_response(DefaultOnResponse::new().level(tracing::Level::INFO)),
        )
        .layer(SetRequestIdLayer::new(
            request_id::X_REQUEST_ID,
            MakeRequestUuid,
        ))
        .layer(MapRequestLayer::new(request_id::drop_unless_sane))
        .with_state(state)
}

/// Recovery (DESIGN §6.9), at start-up and then every
/// `COUNTERSIGN_RECOVERY_INTERVAL_SECS`, of whatever a process that died
/// left open, on any instance: ledger rows (closed, never re-run), input
/// requests, and the turns themselves, each chat told, so every card and
/// every turn ends truthfully within the heartbeat window without the user
/// doing anything. This instance's own turns beat first, so after a
/// database outage longer than the window they do not look dead to it.
async fn recovery(state: AppState) {
    let stale_secs = state.config.turn_stale_secs as f64;
    let every = std::time::Duration::from_secs(state.config.recovery_interval_secs.max(1));
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(err) = crate::turns::beat(&state).await {
            tracing::warn!(error = %err, "heartbeat before recovery failed; recovery skipped");
            continue;
        }
        if let Err(err) = crate::approvals::recover(&state, stale_secs).await {
            tracing::warn!(error = %err, "approval ledger recovery failed");
        }
        if let Err(err) = crate::inputs::recover(&state, stale_secs).await {
            tracing::warn!(error = %err, "input request recovery failed");
        }
        if let Err(err) = crate::results::recover(&state, stale_secs).await {
            tracing::warn!(error = %err, "result review recovery failed");
        }
        if let Err(err) = crate::turns::reap_all_stale(&state).await {
            tracing::warn!(error = %err, "turn recovery failed");
        }
    }
}

/// Serves `router(state)` on `listener` until `shutdown` resolves, then
/// ends open event streams and finishes in-flight requests.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Start-up recovery, then again every COUNTERSIGN_RECOVERY_INTERVAL_SECS.
    let recovery = tokio::spawn(recovery(state.clone()));
    let hub = state.hub.clone();
    let shutdown = async move {
        shutdown.await;
        hub.close();
        recovery.abort();
    };
    conn::serve(listener, router(state), shutdown).await
}
