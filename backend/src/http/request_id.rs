//! `X-Request-Id`: every response carries one, and so does the `request`
//! span of every log line of that request.
//!
//! A client (or the reverse proxy in front) may name the request itself;
//! its id is kept when it is sane — 1 to 128 characters of
//! `[A-Za-z0-9._-]`, sent once — and replaced by a fresh UUID otherwise,
//! so a log line never carries a newline, a quote or a megabyte someone
//! else chose. Setting and echoing the header is tower-http's
//! (`SetRequestIdLayer` with `MakeRequestUuid`, `PropagateRequestIdLayer`);
//! this module owns only the sanity rule, applied before them.

use axum::{extract::Request, http::HeaderName};

/// The header.
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest id a client may choose.
pub const MAX_LEN: usize = 128;

/// Whether a client-chosen id may be reused as it is.
pub fn is_sane(id: &[u8]) -> bool {
    (1..=MAX_LEN).contains(&id.len())
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Removes the request's `X-Request-Id` unless it is sent once and sane,
/// so that `SetRequestIdLayer` (which keeps any id present) makes a new one.
pub fn drop_unless_sane(mut request: Request) -> Request {
    let mut sent = request.headers().get_all(&X_REQUEST_ID).iter();
    let keep = matches!((sent.next(), sent.next()), (Some(id), None) if is_sane(id.as_bytes()));
    if !keep {
        request.headers_mut().remove(&X_REQUEST_ID);
    }
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_ids_of_safe_characters_are_sane() {
        let long = "a".repeat(MAX_LEN);
        let too_long = "a".repeat(MAX_LEN + 1);
        let cases: &[(&[u8], bool, &str)] = &[
            (
                b"abc-123_X.y",
                true,
                "letters, digits, dot, dash, underscore",
            ),
            (long.as_bytes(), true, "exactly the limit"),
            (b"", false, "empty"),
            (too_long.as_bytes(), false, "one past the limit"),
            (b"a b", false, "a space"),
            (b"a\nb", false, "a newline"),
            (b"a\"b", false, "a quote"),
            (b"a/b", false, "a slash"),
            ("\u{e9}t\u{e9}".as_bytes(), false, "non-ASCII"),
        ];
        for (id, sane, why) in cases {
            assert_eq!(is_sane(id), *sane, "{why}");
        }
    }

    #[test]
    fn an_id_sent_twice_is_dropped_even_when_each_is_sane() {
        let request = Request::builder()
            .header(&X_REQUEST_ID, "one")
            .header(&X_REQUEST_ID, "two")
            .body(axum::body::Body::empty())
            .expect("request");
        assert!(
            drop_unless_sane(request)
                .headers()
                .get(&X_REQUEST_ID)
                .is_none()
        );
        let request = Request::builder()
            .header(&X_REQUEST_ID, "one")
            .body(axum::body::Body::empty())
            .expect("request");
        assert_eq!(drop_unless_sane(request).headers()[&X_REQUEST_ID], "one");
    }
}
