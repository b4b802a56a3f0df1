//! Settings → Security in words, as plain Rust tested on the host: the QR
//! code of an MFA enrolment as an image URL, a session's browser in a few
//! words, what "Sign out other sessions" did, and whether the change-password
//! form is complete.
//!
//! Nothing here judges a code, a password or a session: the server does.

/// The server's QR code (an SVG document) as a `data:image/svg+xml;base64,…`
/// URL for an `<img>`: the Content-Security-Policy allows `data:` images,
/// and an image cannot run script or touch the page, whatever the SVG says.
pub fn svg_data_url(svg: &str) -> String {
    format!("data:image/svg+xml;base64,{}", base64(svg.as_bytes()))
}

/// Standard base64 (RFC 4648 §4), padded.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18_u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// "Chrome on Linux": a session's browser and system from its user agent,
/// for the sessions list (the whole string goes in a tooltip).
pub fn device_text(user_agent: Option<&str>) -> String {
    let Some(agent) = user_agent.map(str::trim).filter(|a| !a.is_empty()) else {
        return "Unknown browser".into();
    };
    // Order matters: Edge and Opera say "Chrome", Chrome says "Safari".
    let browser = [
        ("Edg/", "Edge"),
        ("OPR/", "Opera"),
        ("Firefox/", "Firefox"),
        ("HeadlessChrome/", "Headless Chrome"),
        ("Chromium/", "Chromium"),
        ("Chrome/", "Chrome"),
        ("Safari/", "Safari"),
        ("curl/", "curl"),
    ]
    .into_iter()
    .find(|(token, _)| agent.contains(token))
    .map(|(_, name)| name);
    let system = [
        ("Android", "Android"),
        ("iPhone", "iOS"),
        ("iPad", "iPadOS"),
        ("Windows", "Windows"),
        ("Mac OS X", "macOS"),
        ("CrOS", "ChromeOS"),
        ("Linux", "Linux"),
    ]
    .into_iter()
    .find(|(token, _)| agent.contains(token))
    .map(|(_, name)| name);
    match (browser, system) {
        (Some(browser), Some(system)) => format!("{browser} on {system}"),
        (Some(browser), None) => browser.to_owned(),
        (None, Some(system)) => format!("A browser on {system}"),
        (None, None) => "Unknown browser".into(),
    }
}

/// What "Sign out other sessions" did.
pub fn revoked_text(revoked: u64) -> String {
    match revoked {
        0 => "There were no other sessions.".into(),
        1 => "Signed out 1 other session.".into(),
        n => format!("Signed out {n} other sessions."),
    }
}

/// What "Change password" shows after the server said yes.
pub const PASSWORD_CHANGED: &str = "Password changed. Other sessions were signed out.";

/// Why the change-password form cannot be sent yet, if it cannot: a typo
/// in the repeated password is caught here; whether the new password is
/// good enough is the server's call.
pub fn password_form_problem(current: &str, new: &str, confirm: &str) -> Option<&'static str> {
    if current.is_empty() {
        Some("Enter your current password.")
    } else if new.is_empty() {
        Some("Enter a new password.")
    } else if new != confirm {
        Some("The new password and its confirmation do not match.")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_form_catches_a_missing_field_or_a_mismatched_confirmation() {
        for (current, new, confirm, want, why) in [
            (
                "",
                "a",
                "a",
                Some("Enter your current password."),
                "no current password",
            ),
            (
                "old",
                "",
                "",
                Some("Enter a new password."),
                "no new password",
            ),
            (
                "old",
                "new one",
                "new onf",
                Some("The new password and its confirmation do not match."),
                "a typo",
            ),
            ("old", "short", "short", None, "the policy is the server's"),
        ] {
            assert_eq!(password_form_problem(current, new, confirm), want, "{why}");
        }
    }

    #[test]
    fn base64_matches_the_rfc_4648_test_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (input, want) in cases {
            assert_eq!(base64(input.as_bytes()), want, "{input:?}");
        }
        assert_eq!(base64(&[0xfb, 0xff, 0xbf]), "+/+/", "the last two symbols");
    }

    #[test]
    fn the_qr_code_becomes_an_image_url_with_nothing_of_the_svg_left_raw() {
        let svg = r#"<svg xmlns="http://www.w3.org/2000/svg"><path d="M0 0h1"/></svg>"#;
        let url = svg_data_url(svg);
        assert!(url.starts_with("data:image/svg+xml;base64,"));
        assert!(
            !url.contains('<') && !url.contains('"'),
            "safe in an attribute"
        );
        assert_eq!(
            url.trim_start_matches("data:image/svg+xml;base64,"),
            base64(svg.as_bytes())
        );
    }

    #[test]
    fn a_session_is_named_by_its_browser_and_system() {
        let cases = [
            (
                Some(
                    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
                ),
                "Chrome on Linux",
            ),
            (
                Some(
                    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36",
                ),
                "Headless Chrome on Linux",
            ),
            (
                Some(
                    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
                ),
                "Edge on Windows",
            ),
            (
                Some(
                    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14.5; rv:132.0) Gecko/20100101 Firefox/132.0",
                ),
                "Firefox on macOS",
            ),
            (
                Some(
                    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
                ),
                "Safari on iOS",
            ),
            (
                Some(
                    "Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Mobile Safari/537.36",
                ),
                "Chrome on Android",
            ),
            (Some("curl/8.5.0"), "curl"),
            (
                Some("SomethingElse (Windows NT 10.0)"),
                "A browser on Windows",
            ),
            (Some("   "), "Unknown browser"),
            (None, "Unknown browser"),
        ];
        for (agent, want) in cases {
            assert_eq!(device_text(agent), want, "{agent:?}");
        }
    }

    #[test]
    fn the_sign_out_notice_counts_the_sessions() {
        assert_eq!(revoked_text(0), "There were no other sessions.");
        assert_eq!(revoked_text(1), "Signed out 1 other session.");
        assert_eq!(revoked_text(3), "Signed out 3 other sessions.");
    }
}
