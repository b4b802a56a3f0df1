//! The HTTP surface: every route in one place, middleware, static files.
//!
//! Architecture invariant: this module tree is the only one that knows
//! status codes. Domain modules return their own error enums and
//! [`error::ApiError`] maps them.

pub mod admin;
pub mod approvals;
pub mod auth;
pub mod chats;
pub mod connectors;
pub mod error;
pub mod extract;
pub mod health;
pub mod inputs;
pub mod mfa;
pub mod models;
pub mod oauth;
pub mod request_id;
pub mod security;
pub mod session;
pub mod stream;
pub mod web_app;

use crate::AppState;
use axum::{
    Router, middleware,
    routing::{delete, get, patch, post, put},
};
use std::{future::Future, net::SocketAddr};
use tower::util::MapRequestLayer;
use tower_http::{
    compression::CompressionLayer,
    request_id::{MakeRequestUuid, PropagateRequestIdLayer, RequestId, SetRequestIdLayer},
    trace::{DefaultOnResponse, TraceLayer},
};

/// The whole app: `/api`, health checks, and the web app with an
/// `index.html` fallback for client-side routes.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/auth/signup", post(auth::signup))
        .route("/auth/login", post(auth::login))
        .route("/auth/logout", post(auth::logout))
        .route("/auth/me", get(auth::me))
        .route("/auth/password", post(auth::change_password))
        .route("/auth/mfa/enroll", post(mfa::enroll))
        .route("/auth/mfa/confirm", post(mfa::confirm))
        .route("/auth/mfa/step-up", post(mfa::step_up))
        .route("/auth/mfa/disable", post(mfa::disable))
        .route("/auth/sessions", get(mfa::list_sessions))
        .route(
            "/auth/sessions/revoke-others",
            post(mfa::revoke_other_sessions),
        )
        .route("/chats", get(chats::list_chats).post(chats::create_chat))
        .route(
            "/chats/{id}",
            get(chats::get_chat)
                .patch(chats::update_chat)
                .delete(chats::delete_chat),
        )
        .route("/chats/{id}/messages", post(chats::send_message))
        .route("/chats/{id}/stream", get(stream::chat_stream))
        .route(
            "/chats/{id}/turns/{turn_id}/cancel",
            post(chats::cancel_turn),
        )
        .route(
            "/connectors",
            get(connectors::list_connectors).post(connectors::create_connector),
        )
        .route(
            "/connectors/{id}",
            get(connectors::get_connector)
                .patch(connectors::update_connector)
                .delete(connectors::delete_connector),
        )
        .route(
            "/connectors/available",
            get(connectors::available_connectors),
        )
        .route("/connectors/{id}/test", post(connectors::refresh_connector))
        .route(
            "/connectors/{id}/refresh",
            post(connectors::refresh_connector),
        )
        .route("/connectors/{id}/tools", get(connectors::list_tools))
        .route(
            "/connectors/{id}/tools/review",
            put(connectors::review_tools),
        )
        .route("/connectors/{id}/oauth/start", post(oauth::start))
        .route("/connectors/{id}/oauth", delete(oauth::disconnect))
        .route("/mcp-pending-calls", get(approvals::list_pending))
        .route("/mcp-pending-calls/{id}", post(approvals::decide))
        .route("/mcp-input-requests", get(inputs::list))
        .route("/mcp-input-requests/{id}", post(inputs::answer))
        .route("/grants", get(approvals::list_grants))
        .route("/activity", get(approvals::list_activity))
        .route("/grants/{id}", delete(approvals::delete_grant))
        .route(
            "/admin/policy",
            get(admin::get_policy).put(admin::put_policy),
        )
        .route("/admin/users", get(admin::list_users))
        .route("/admin/users/{id}", patch(admin::update_user))
        .route("/admin/overview", get(admin::overview))
        .route("/models", get(models::list_models))
        .route("/settings/provider-keys", get(models::list_provider_keys))
        .route(
            "/settings/provider-keys/{provider}",
            put(models::set_provider_key).delete(models::delete_provider_key),
        )
        .fallback(error::api_not_found)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            security::origin_and_csrf,
        ))
        // JSON answers compressed when the client asks (DESIGN §9a); never
        // an event stream, never the CSRF token (`security::compressible`).
        .layer(CompressionLayer::new().compress_when(security::compressible()));

    Router::new()
        .nest("/api", api)
        .route("/oauth/callback", get(oauth::callback))
        .route("/oauth/client-metadata.json", get(oauth::client_metadata))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
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

/// Serves `router(state)` on `listener` until `shutdown` resolves, then
/// ends open event streams and finishes in-flight requests.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Start-up recovery of the approval ledger, then again every minute:
    // calls of turns that no longer run anywhere are closed, never re-run.
    let recovery = tokio::spawn({
        let state = state.clone();
        async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
            loop {
                tick.tick().await;
                if let Err(err) =
                    crate::approvals::recover(&state, crate::turns::STALE_AFTER_SECS).await
                {
                    tracing::warn!(error = %err, "approval ledger recovery failed");
                }
                if let Err(err) =
                    crate::inputs::recover(&state, crate::turns::STALE_AFTER_SECS).await
                {
                    tracing::warn!(error = %err, "input request recovery failed");
                }
            }
        }
    });
    let hub = state.hub.clone();
    let shutdown = async move {
        shutdown.await;
        hub.close();
        recovery.abort();
    };
    use axum::serve::ListenerExt as _;
    // Stream events are small writes: without TCP_NODELAY, Nagle's
    // algorithm and delayed ACKs hold each one back ~40 ms.
    let listener = listener.tap_io(|tcp| {
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::warn!(error = %err, "cannot set TCP_NODELAY");
        }
    });
    axum::serve(
        listener,
        router(state).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}
