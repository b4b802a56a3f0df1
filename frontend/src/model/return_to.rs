//! Where sign-in returns to: a visitor sent from `/settings` to `/signin`
//! comes back to `/settings`, not to `/` (issue 12 item 6).
//!
//! What it owns: [`return_to`], which accepts the `next` query value only
//! when it is a path of this app — one leading `/`, not `//` or `/\` (a
//! link to another host), no scheme, no control characters — so a crafted
//! link cannot make sign-in an open redirect; and [`encode`], the query
//! value for a path.

/// Where to go after signing in, from the sign-in page's `next` value:
/// that path when it is one of this app's, else `/`.
pub fn return_to(next: Option<&str>) -> &str {
    match next {
        Some(path) if is_local_path(path) => path,
        _ => "/",
    }
}

/// A path of this app: `/` then no second `/` or `\`, nothing a browser
/// would read as another origin or as a control character, and not the
/// sign-in pages themselves.
fn is_local_path(path: &str) -> bool {
    let mut chars = path.chars();
    if chars.next() != Some('/') {
        return false;
    }
    if matches!(chars.next(), Some('/' | '\\')) {
        return false;
    }
    if path.chars().any(|c| c.is_control() || c == '\\') {
        return false;
    }
    let page = path.split(['?', '#']).next().unwrap_or(path);
    !matches!(page, "/signin" | "/signup")
}

/// `path` as a query value: everything but unreserved characters and `/`
/// percent-encoded (UTF-8).
pub fn encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(char::from(byte));
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_apps_paths_are_returned_to() {
        assert_eq!(return_to(Some("/settings")), "/settings");
        assert_eq!(return_to(Some("/chats/abc?x=1")), "/chats/abc?x=1");
        assert_eq!(return_to(None), "/");
        for hostile in [
            "//evil.example/",
            "/\\evil.example",
            "https://evil.example/",
            "javascript:alert(1)",
            "settings",
            "",
            "/\tsettings",
            "/a\\b",
            "/signin",
            "/signup?next=/x",
        ] {
            assert_eq!(return_to(Some(hostile)), "/", "{hostile:?}");
        }
    }

    #[test]
    fn a_path_is_encoded_as_a_query_value() {
        assert_eq!(encode("/settings"), "/settings");
        assert_eq!(encode("/chats/a?b=c&d"), "/chats/a%3Fb%3Dc%26d");
        assert_eq!(encode("/é"), "/%C3%A9");
    }
}
