//! The web app's files (DESIGN §9a), as `cargo xtask web` lays them out:
//!
//! - `/assets/…`: content-hashed names, so a name never changes content —
//!   `Cache-Control: public, max-age=31536000, immutable`; a name that is
//!   not there is a 404 (never `index.html`, which a browser would then keep
//!   for a year under a script's name);
//! - everything else, `index.html` for any client-side route included:
//!   `no-cache` (the browser revalidates, so a new build is seen at once).
//!
//! Both serve the `.br` / `.gz` twins the build made when the browser asks
//! for them (`Vary: accept-encoding`): nothing is compressed per request.

use axum::{Router, http::HeaderValue, http::Response, http::header::CACHE_CONTROL};
use std::path::Path;
use tower_http::{
    services::{ServeDir, ServeFile},
    set_header::SetResponseHeaderLayer,
};

/// For names that carry their content's hash.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// For `index.html` and the other unhashed files.
pub const NO_CACHE: &str = "no-cache";

/// The routes of the web app served from `dir`.
pub fn router<S: Clone + Send + Sync + 'static>(dir: &Path) -> Router<S> {
    let assets = ServeDir::new(dir.join("assets"))
        .precompressed_br()
        .precompressed_gzip();
    let index = ServeFile::new(dir.join("index.html"))
        .precompressed_br()
        .precompressed_gzip();
    let pages = ServeDir::new(dir)
        .precompressed_br()
        .precompressed_gzip()
        .fallback(index);
    Router::new()
        .nest_service(
            "/assets",
            tower::ServiceBuilder::new()
                .layer(SetResponseHeaderLayer::overriding(
                    CACHE_CONTROL,
                    // Only what was found is kept: a 404 is asked again.
                    |response: &Response<_>| {
                        Some(HeaderValue::from_static(
                            if response.status().is_success() {
                                IMMUTABLE
                            } else {
                                NO_CACHE
                            },
                        ))
                    },
                ))
                .service(assets),
        )
        .fallback_service(
            tower::ServiceBuilder::new()
                .layer(SetResponseHeaderLayer::overriding(
                    CACHE_CONTROL,
                    HeaderValue::from_static(NO_CACHE),
                ))
                .service(pages),
        )
}
