//! The OpenAPI 3.1 document (DESIGN §8), generated from the code: each
//! handler's `#[utoipa::path]` (which is also how it is routed, see
//! [`super::api_routes`]), the wire types' `ToSchema` (the `openapi`
//! feature of `countersign-api`), and the conventions every endpoint shares,
//! added here once rather than on fifty handlers ([`conventions`]): the
//! session cookie and CSRF header, and the answers of the extractors and
//! middleware in front of every handler (401 without a session, 403 for a
//! cross-origin or CSRF-less change and for `password_change_required`,
//! 415/400/422 for a body that is not the JSON asked for, 400 for a query
//! string that is not what is asked for, 404 for a malformed id, 500).
//!
//! Served at `/api/openapi.json`; `docs/openapi.json` is a copy that
//! `cargo xtask openapi` writes and `cargo xtask test` compares.

use crate::AppState;
use axum::{extract::State, http::header, response::IntoResponse};
use std::sync::LazyLock;
use utoipa::{
    OpenApi as _,
    openapi::{
        HttpMethod, OpenApi, RefOr, ResponseBuilder,
        content::ContentBuilder,
        path::Operation,
        security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme},
    },
};
use utoipa_axum::router::OpenApiRouter;

/// The session cookie's security scheme.
const SESSION: &str = "session";
/// The CSRF header's.
const CSRF: &str = "csrf";

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Countersign",
        description = "A self-hosted chat whose tool calls wait for your approval. All JSON; every \
                       error is `{\"detail\": \"…\"}` — a sentence, or a machine word where this \
                       document names one. Sign in with `POST /api/auth/login`: the session is an \
                       `HttpOnly` cookie, and every request that changes something also sends \
                       `X-CSRF-Token` (the token sign-in and `GET /api/auth/me` answer) from this \
                       origin. Field names are a public contract: fields are added, never renamed.",
        license(name = "AGPL-3.0-or-later"),
    ),
    tags(
        (name = "auth", description = "Accounts, sessions, two-factor sign-in"),
        (name = "chats", description = "Chats, messages, turns and their event stream"),
        (name = "connectors", description = "The user's MCP servers, their tools and the review"),
        (name = "approvals", description = "Calls waiting for a decision, questions from servers, always-allow rules"),
        (name = "activity", description = "The activity log as an audit trail: filters and CSV/JSON export"),
        (name = "models", description = "Models and provider keys"),
        (name = "admin", description = "The instance's policy and accounts (administrators only)"),
        (name = "rules", description = "The caller's own allow / ask / deny rules with conditions"),
        (name = "health", description = "Probes"),
        (name = "meta", description = "This document"),
    ),
    // `ActivityOutcome` is named by `ActivityEntry.outcome`'s own schema
    // (`schema_with`), which does not register it.
    components(schemas(
        countersign_api::ChatEvent,
        countersign_api::ChatEventMessage,
        countersign_api::ActivityOutcome
    )),
)]
struct Base;

/// `GET /api/openapi.json`.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "meta",
    responses((status = 200, description = "This document (OpenAPI 3.1)")),
)]
pub async fn openapi_json(State(_): State<AppState>) -> impl IntoResponse {
    static JSON: LazyLock<String> = LazyLock::new(|| {
        #[expect(clippy::expect_used, reason = "serialising our own document")]
        document().to_pretty_json().expect("the document is JSON")
    });
    ([(header::CONTENT_TYPE, "application/json")], JSON.as_str())
}

/// The whole document.
pub fn document() -> OpenApi {
    let (_, paths) = OpenApiRouter::<AppState>::new()
        .nest("/api", super::api_routes())
        .merge(super::outer_routes())
        .split_for_parts();
    let mut doc = Base::openapi();
    doc.merge(paths);
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    conventions(&mut doc);
    doc
}

/// What a request needs and may be answered before its handler runs.
fn conventions(doc: &mut OpenApi) {
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        SESSION,
        SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
            super::session::SESSION_COOKIE,
            "The session, set by sign-up and sign-in (`HttpOnly`, `SameSite=Lax`).",
        ))),
    );
    components.add_security_scheme(
        CSRF,
        SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
            countersign_api::CSRF_HEADER,
            "The session's CSRF token, on every request that changes something.",
        ))),
    );
    for (path, item) in doc.paths.paths.iter_mut() {
        let in_api = path.starts_with("/api/");
        let anonymous = !in_api
            || matches!(
                path.as_str(),
                "/api/auth/signup"
                    | "/api/auth/login"
                    | "/api/auth/oidc/link"
                    | "/api/auth/options"
                    | "/api/openapi.json"
            );
        let has_id = path.contains('{');
        for (method, operation) in [
            (HttpMethod::Get, item.get.as_mut()),
            (HttpMethod::Post, item.post.as_mut()),
            (HttpMethod::Put, item.put.as_mut()),
            (HttpMethod::Patch, item.patch.as_mut()),
            (HttpMethod::Delete, item.delete.as_mut()),
        ] {
            let Some(operation) = operation else { continue };
            let changes = method != HttpMethod::Get;
            if anonymous {
                operation.security = Some(vec![SecurityRequirement::default()]);
            } else {
                let mut schemes = vec![SESSION];
                if changes {
                    schemes.push(CSRF);
                }
                let requirement = schemes
                    .into_iter()
                    .fold(SecurityRequirement::default(), |r, s| {
                        r.add::<&str, [&str; 0], &str>(s, [])
                    });
                operation.security = Some(vec![requirement]);
                answer(
                    operation,
                    "401",
                    "`Sign in to continue.`: no session, or it expired or was revoked",
                );
                answer(
                    operation,
                    "403",
                    "`password_change_required`: an administrator reset the password; until a new one is chosen only `GET /api/auth/me`, `POST /api/auth/logout` and `POST /api/auth/password` are answered",
                );
            }
            if in_api && changes {
                answer(
                    operation,
                    "403",
                    "`Cross-origin requests are not allowed.` (an `Origin` other than this server's) or `Missing or wrong CSRF token. Reload the page and try again.`",
                );
            }
            if operation.request_body.is_some() {
                answer(operation, "400", "The request body is not valid JSON");
                answer(
                    operation,
                    "415",
                    "`Send the request body as application/json.`",
                );
                answer(
                    operation,
                    "422",
                    "The request body has the wrong shape (the detail says where)",
                );
            }
            if in_api && has_query(operation) {
                answer(
                    operation,
                    "400",
                    "`Bad query string: …`: a query parameter is not what is asked for (a number out of range, a word it does not take)",
                );
            }
            if has_id {
                answer(operation, "404", "An id that is not a UUID names nothing");
            }
            if in_api {
                answer(
                    operation,
                    "500",
                    "An unexpected failure; logged on the server, the detail says nothing more",
                );
            }
        }
    }
}

/// Whether the operation takes query parameters (read by the `Query`
/// extractor, whose refusal is a 400).
fn has_query(operation: &Operation) -> bool {
    operation.parameters.iter().flatten().any(
        |p| matches!(p, RefOr::T(p) if p.parameter_in == utoipa::openapi::path::ParameterIn::Query),
    )
}

/// Adds `description` to the operation's `status` answer (an `ErrorBody`),
/// after what the handler already says there.
fn answer(operation: &mut Operation, status: &str, description: &str) {
    let responses = &mut operation.responses.responses;
    match responses.get_mut(status) {
        Some(RefOr::T(response)) => {
            if !response.description.contains(description) {
                response.description = format!("{}; {description}", response.description);
            }
        }
        Some(RefOr::Ref(_)) => {}
        None => {
            let body = ContentBuilder::new()
                .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                    "ErrorBody",
                ))))
                .build();
            responses.insert(
                status.to_owned(),
                RefOr::T(
                    ResponseBuilder::new()
                        .description(description)
                        .content("application/json", body)
                        .build(),
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_openapi_3_1_and_every_api_answer_is_described() {
        let doc = document();
        let json = serde_json::to_value(&doc).expect("JSON");
        assert_eq!(json["openapi"], "3.1.0");
        let paths = json["paths"].as_object().expect("paths");
        assert!(paths.contains_key("/api/mcp-pending-calls/{id}"));
        assert!(paths.contains_key("/api/admin/policy"));
        assert!(paths.contains_key("/healthz"));
        for (path, item) in paths {
            for (method, op) in item.as_object().expect("item") {
                let responses = op["responses"].as_object().expect("responses");
                assert!(
                    responses
                        .keys()
                        .any(|s| s.starts_with('2') || s.starts_with('3')),
                    "{method} {path}: no success"
                );
                for (status, response) in responses {
                    let text = response["description"].as_str().unwrap_or_default();
                    assert!(!text.is_empty(), "{method} {path} {status}: no description");
                }
                if path.starts_with("/api/") && path != "/api/openapi.json" {
                    assert!(responses.contains_key("500"), "{method} {path}");
                }
                // The `Query` extractor refuses a malformed query string
                // with 400 (schemathesis found it undocumented on the stream).
                let takes_query = op["parameters"]
                    .as_array()
                    .is_some_and(|ps| ps.iter().any(|p| p["in"] == "query"));
                if path.starts_with("/api/") && takes_query {
                    assert!(responses.contains_key("400"), "{method} {path}: no 400");
                }
            }
        }
        // The decision names every refusal word.
        let decide = &json["paths"]["/api/mcp-pending-calls/{id}"]["post"]["responses"]["403"]["description"];
        for word in [
            "grant_not_offered",
            "forbidden_by_policy",
            "mfa_required",
            "password_change_required",
            "CSRF",
        ] {
            assert!(
                decide.as_str().unwrap_or_default().contains(word),
                "{word}: {decide}"
            );
        }
        // Sign-in needs no session; a change needs the session and the CSRF header.
        assert_eq!(
            json["paths"]["/api/auth/login"]["post"]["security"],
            serde_json::json!([{}])
        );
        assert_eq!(
            json["paths"]["/api/chats"]["post"]["security"],
            serde_json::json!([{"session": [], "csrf": []}])
        );
        assert_eq!(
            json["paths"]["/api/chats"]["get"]["security"],
            serde_json::json!([{"session": []}])
        );
    }
}
