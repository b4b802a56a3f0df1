//! Step-up: which scopes the next sign-in asks for after a server said a
//! token is not enough (HTTP 403 with `error="insufficient_scope"`, RFC
//! 6750 §3.1; MCP authorization, "Scope challenge handling", SEP-2350).
//!
//! What it owns: reading a challenge ([`Challenge::parse`], rmcp's parser)
//! and the rule ([`step_up`]): the next request asks for the **union** of
//! what the last sign-in asked for (and was granted) and what the
//! challenge names, in that order; it refuses when the challenge is not
//! an `insufficient_scope` one, when it names nothing the last sign-in did
//! not already ask for (the authorization server already said no to
//! exactly that, and asking again would loop), and after
//! [`MAX_STEP_UPS`] rounds.
//!
//! What it deliberately does not do: sign in. The probe signs in again at
//! once (`probe::oauth`); the server records the union for the user's next
//! sign-in (`connectors::oauth::step_up`). Both count rounds with this
//! rule, so neither can be led into an endless re-authorization loop.

/// The most step-ups one chain of sign-ins makes (the MCP spec asks
/// clients to bound retries; the conformance suite's limit is 3
/// authorizations, and the first sign-in is one of them).
pub const MAX_STEP_UPS: u32 = 2;

/// What a `WWW-Authenticate: Bearer …` challenge says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `error`, e.g. `insufficient_scope` or `invalid_token`.
    pub error: Option<String>,
    /// `scope`, split at spaces.
    pub scopes: Vec<String>,
}

impl Challenge {
    /// Reads a challenge header (rmcp's parser; `resource_metadata` is
    /// resolved against `url`, and not kept here).
    pub fn parse(www_authenticate: &str, url: &reqwest::Url) -> Self {
        let params = rmcp::transport::auth::WWWAuthenticateParams::parse(www_authenticate, url);
        Self {
            error: params.error,
            scopes: params
                .scope
                .as_deref()
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
        }
    }

    /// Whether the server asks for more access (rather than refusing the
    /// token outright).
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Why no step-up is made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepUpRefused {
    /// A 403 that is not `insufficient_scope`: more scopes would not help.
    #[error("the server refused the token without asking for more access")]
    NotInsufficientScope,
    /// Every scope it asks for was asked for by the last sign-in already.
    #[error(
        "the server asks for access ({}) that the last sign-in already asked for and the \
         authorization server did not grant",
        scopes.join(" ")
    )]
    NothingNew {
        /// What it asked for.
        scopes: Vec<String>,
    },
    /// [`MAX_STEP_UPS`] step-ups were made already.
    #[error(
        "the server asked for more access again after {MAX_STEP_UPS} sign-ins that added \
         access; Countersign stopped asking"
    )]
    TooManyRounds,
}

/// The scopes of the next sign-in, after `rounds_done` step-ups: `asked`
/// (what the last sign-in asked for and was granted, in that order) with
/// the challenge's new scopes after them, no scope twice.
pub fn step_up(
    asked: &[String],
    challenge: &Challenge,
    rounds_done: u32,
) -> Result<Vec<String>, StepUpRefused> {
    if !challenge.is_insufficient_scope() {
        return Err(StepUpRefused::NotInsufficientScope);
    }
    let before = union(asked, &[]);
    let after = union(asked, &challenge.scopes);
    if after.len() == before.len() {
        return Err(StepUpRefused::NothingNew {
            scopes: challenge.scopes.clone(),
        });
    }
    if rounds_done >= MAX_STEP_UPS {
        return Err(StepUpRefused::TooManyRounds);
    }
    Ok(after)
}

/// `first` then `more`, in order, each scope once.
pub fn union(first: &[String], more: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for scope in first.iter().chain(more) {
        if !out.contains(scope) {
            out.push(scope.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scopes(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    fn insufficient(text: &str) -> Challenge {
        Challenge {
            error: Some("insufficient_scope".into()),
            scopes: scopes(text),
        }
    }

    #[test]
    fn a_challenge_is_read_with_its_error_and_scopes() {
        let url = "https://mcp.example.com/mcp".parse().expect("test URL");
        let challenge = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource""#,
            &url,
        );
        assert!(challenge.is_insufficient_scope());
        assert_eq!(challenge.scopes, scopes("files:read files:write"));
        let plain = Challenge::parse(r#"Bearer realm="x""#, &url);
        assert_eq!(plain, Challenge::default());
    }

    #[test]
    fn a_step_up_asks_for_the_union_of_the_last_request_and_the_challenge_in_order() {
        assert_eq!(
            step_up(&scopes("mcp:basic"), &insufficient("mcp:write"), 0),
            Ok(scopes("mcp:basic mcp:write")),
            "SEP-2350: what was granted is asked for again"
        );
        assert_eq!(
            step_up(&scopes("a b"), &insufficient("b c a"), 1),
            Ok(scopes("a b c")),
            "no scope twice"
        );
    }

    #[test]
    fn step_ups_stop_after_two_rounds() {
        let asked = scopes("a");
        assert!(step_up(&asked, &insufficient("b"), 0).is_ok());
        assert!(step_up(&asked, &insufficient("b"), 1).is_ok());
        assert_eq!(
            step_up(&asked, &insufficient("b"), MAX_STEP_UPS),
            Err(StepUpRefused::TooManyRounds)
        );
        assert_eq!(MAX_STEP_UPS, 2, "the bound the issue sets");
    }

    #[test]
    fn a_challenge_for_nothing_new_or_without_insufficient_scope_is_no_step_up() {
        assert_eq!(
            step_up(&scopes("mcp:admin"), &insufficient("mcp:admin"), 0),
            Err(StepUpRefused::NothingNew {
                scopes: scopes("mcp:admin")
            }),
            "the authorization server already declined exactly this"
        );
        assert_eq!(
            step_up(&scopes("a"), &insufficient(""), 0),
            Err(StepUpRefused::NothingNew { scopes: vec![] }),
            "a challenge that names no scope"
        );
        let invalid = Challenge {
            error: Some("invalid_token".into()),
            scopes: scopes("b"),
        };
        assert_eq!(
            step_up(&scopes("a"), &invalid, 0),
            Err(StepUpRefused::NotInsufficientScope)
        );
    }
}
