//! Connector sign-in (OAuth) in words, as plain Rust tested on the host:
//! an OAuth connector's sign-in state, the status line Settings shows when
//! the authorization server sends the browser back (`/settings?oauth=…`),
//! the scopes a form sends, and which sign-in pages the browser may be sent
//! to.
//!
//! What it deliberately does not do: decide whether a connector is signed
//! in, or check a sign-in. The server does both and says so in
//! `oauth_status` and in the query it redirects to; this module only puts
//! that into words. The one rule of its own, [`browser_may_open`], is a
//! second lock behind the server's (which already refuses to hand out a
//! sign-in page that is not https, except on an allow-listed test server).

use std::net::Ipv4Addr;

use countersign_api::OAuthStatus;

/// How long a sign-in error from the address bar may be when shown.
///
/// The query is anyone's to write (a link can carry any `oauth_error`), so
/// the message is shown as text, after fixed words, and cut at this length.
pub const MAX_RETURN_MESSAGE_CHARS: usize = 300;

/// Where the authorization server left the browser: what the callback put
/// into Settings' query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignInReturn {
    /// `?oauth=connected&connector=<id>`: the sign-in completed.
    Connected {
        /// The connector signed in to (empty when the query named none).
        connector_id: String,
    },
    /// `?oauth_error=<message>`: it did not; the server's words.
    Failed {
        /// Why, as the server wrote it (cut to [`MAX_RETURN_MESSAGE_CHARS`]).
        message: String,
    },
}

impl SignInReturn {
    /// Reads the three query parameters; `None` when the page was opened
    /// any other way. An error wins over a success in the same query.
    pub fn from_query(
        oauth: Option<&str>,
        connector: Option<&str>,
        oauth_error: Option<&str>,
    ) -> Option<Self> {
        if let Some(message) = oauth_error {
            let message = message.trim();
            let message = if message.is_empty() {
                "The sign-in did not complete.".to_owned()
            } else {
                cut(message, MAX_RETURN_MESSAGE_CHARS)
            };
            return Some(Self::Failed { message });
        }
        (oauth == Some("connected")).then(|| Self::Connected {
            connector_id: connector.unwrap_or_default().to_owned(),
        })
    }

    /// The status line: "Signed in to Demo notes." (the connector's name,
    /// once known), or the error after fixed words.
    pub fn text(&self, connector_name: Option<&str>) -> String {
        match self {
            Self::Connected { .. } => match connector_name {
                Some(name) => format!("Signed in to {name}."),
                None => "Signed in.".to_owned(),
            },
            Self::Failed { message } => format!("Connector sign-in failed. {message}"),
        }
    }
}

/// `text` cut to at most `max` characters, "…" marking a cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// An OAuth connector's sign-in in words: "Signed in with auth.example.com"
/// (the authorization server's host) or "Not signed in"; `None` for a
/// connector that does not use OAuth.
pub fn sign_in_state(status: OAuthStatus, issuer_host: Option<&str>) -> Option<String> {
    match status {
        OAuthStatus::NotApplicable => None,
        OAuthStatus::Connected => Some(match issuer_host.filter(|h| !h.is_empty()) {
            Some(host) => format!("Signed in with {host}"),
            None => "Signed in".to_owned(),
        }),
        OAuthStatus::NeedsSignIn | OAuthStatus::Unknown => Some("Not signed in".to_owned()),
    }
}

/// Whether the browser may be sent to a sign-in page whose URL the browser
/// parsed into `protocol` (`"https:"`) and `hostname` (as `URL.hostname`
/// gives it: lower case, IPv4 in dotted decimal, IPv6 in brackets).
///
/// https, or plain http to this machine only (`localhost`, `127.0.0.0/8`,
/// `[::1]`: local test servers). Anything else — `javascript:`, `data:`,
/// http elsewhere — is refused.
pub fn browser_may_open(protocol: &str, hostname: &str) -> bool {
    match protocol {
        "https:" => !hostname.is_empty(),
        "http:" => {
            hostname == "localhost"
                || hostname == "[::1]"
                || hostname
                    .parse::<Ipv4Addr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        _ => false,
    }
}

/// The "Scopes" field as sent: its space-separated words, or `None` when
/// it is empty (ask for what the server suggests).
pub fn scope_list(text: &str) -> Option<Vec<String>> {
    let scopes: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
    (!scopes.is_empty()).then_some(scopes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_the_callback_writes_becomes_a_status_line() {
        let connected = SignInReturn::from_query(Some("connected"), Some("c-1"), None);
        assert_eq!(
            connected,
            Some(SignInReturn::Connected {
                connector_id: "c-1".into()
            })
        );
        let connected = connected.expect("connected");
        assert_eq!(
            connected.text(Some("Demo notes")),
            "Signed in to Demo notes."
        );
        assert_eq!(
            connected.text(None),
            "Signed in.",
            "a connector not in the list"
        );

        let failed = SignInReturn::from_query(
            None,
            None,
            Some("The authorization server said: access_denied"),
        )
        .expect("failed");
        assert_eq!(
            failed.text(None),
            "Connector sign-in failed. The authorization server said: access_denied"
        );
    }

    #[test]
    fn an_ordinary_visit_or_an_odd_query_shows_no_status_line() {
        for (oauth, connector, error, why) in [
            (None, None, None, "no query"),
            (Some("maybe"), Some("c-1"), None, "an unknown oauth word"),
            (None, Some("c-1"), None, "a connector alone"),
        ] {
            assert_eq!(
                SignInReturn::from_query(oauth, connector, error),
                None,
                "{why}"
            );
        }
    }

    #[test]
    fn an_error_in_the_query_wins_is_never_blank_and_is_cut_when_long() {
        let both = SignInReturn::from_query(Some("connected"), Some("c-1"), Some("refused"));
        assert_eq!(
            both,
            Some(SignInReturn::Failed {
                message: "refused".into()
            }),
            "an error wins over a success"
        );
        let blank = SignInReturn::from_query(None, None, Some("  ")).expect("failed");
        assert_eq!(
            blank.text(None),
            "Connector sign-in failed. The sign-in did not complete."
        );
        let long = "x".repeat(5_000);
        let Some(SignInReturn::Failed { message }) =
            SignInReturn::from_query(None, None, Some(&long))
        else {
            panic!("a long error is still an error");
        };
        assert_eq!(message.chars().count(), MAX_RETURN_MESSAGE_CHARS);
        assert!(message.ends_with('…'), "the cut is marked");
    }

    #[test]
    fn the_sign_in_state_names_the_authorization_servers_host_or_says_not_signed_in() {
        for (status, host, want, why) in [
            (
                OAuthStatus::Connected,
                Some("auth.example.com"),
                Some("Signed in with auth.example.com"),
                "connected",
            ),
            (
                OAuthStatus::Connected,
                None,
                Some("Signed in"),
                "no issuer reported",
            ),
            (
                OAuthStatus::Connected,
                Some(""),
                Some("Signed in"),
                "an issuer without a host",
            ),
            (
                OAuthStatus::NeedsSignIn,
                Some("auth.example.com"),
                Some("Not signed in"),
                "signed out: the old issuer is not a sign-in",
            ),
            (
                OAuthStatus::Unknown,
                None,
                Some("Not signed in"),
                "a newer server's word",
            ),
            (
                OAuthStatus::NotApplicable,
                None,
                None,
                "not an OAuth connector",
            ),
        ] {
            assert_eq!(sign_in_state(status, host).as_deref(), want, "{why}");
        }
    }

    #[test]
    fn only_https_or_plain_http_to_this_machine_may_be_opened() {
        for (protocol, hostname, want, why) in [
            ("https:", "auth.example.com", true, "https"),
            ("https:", "10.0.0.5", true, "https anywhere"),
            ("http:", "127.0.0.1", true, "a local test server"),
            ("http:", "127.8.9.10", true, "all of 127/8"),
            ("http:", "localhost", true, "localhost"),
            ("http:", "[::1]", true, "IPv6 loopback"),
            ("http:", "auth.example.com", false, "plain http elsewhere"),
            (
                "http:",
                "10.0.0.5",
                false,
                "plain http on a private network",
            ),
            (
                "http:",
                "127.0.0.1.evil.example",
                false,
                "a name that starts like loopback",
            ),
            ("javascript:", "", false, "script"),
            ("data:", "", false, "data"),
            ("https:", "", false, "no host"),
            ("ftp:", "127.0.0.1", false, "another scheme"),
        ] {
            assert_eq!(browser_may_open(protocol, hostname), want, "{why}");
        }
    }

    #[test]
    fn scopes_are_the_fields_words_or_nothing() {
        assert_eq!(
            scope_list("  notes.read\tnotes.write \n"),
            Some(vec!["notes.read".to_owned(), "notes.write".to_owned()])
        );
        assert_eq!(scope_list("   "), None, "empty: the server's suggestion");
    }
}
