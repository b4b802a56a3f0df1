//! The one error shape every `/api` endpoint answers with.

use serde::{Deserialize, Serialize};

/// `{"detail": "…"}`: a message a person can act on. Never carries secrets,
/// stack traces or upstream bodies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    /// Human-readable explanation, or a machine code such as `mfa_required`
    /// where DESIGN.md names one.
    pub detail: String,
}
