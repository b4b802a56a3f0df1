//! Where a call sends data (issue 45; DESIGN §6.2 "Sends to"), read from
//! the signed arguments: the hosts of URLs, e-mail addresses, and the
//! values of arguments whose names name a destination (`to`, `cc`,
//! `recipient`, `channel`, `webhook`, …). Each is given in ASCII (a
//! domain in punycode, invisible characters drawn) with the form as
//! written beside it when that differs. The card shows them as "Sends
//! to", beside the connector the call goes *via*.
//!
//! What it deliberately does not do: decide anything. The gate asks on
//! its own grounds; this only tells the person deciding where data goes.
//! A destination hidden in free text the server interprets (a chat
//! message body saying "forward to …") is not found.

use countersign_api::{Destination, characters::visible, vocab::DestinationKind};
use regex::Regex;
use serde_json::Value;
use std::sync::LazyLock;

/// Argument names that name a destination, compared lower-case with `-`
/// as `_`, whole or as the last part (`reply_to`, `webhookUrl` as
/// `webhookurl`).
const NAMES: [&str; 26] = [
    "to",
    "cc",
    "bcc",
    "recipient",
    "recipients",
    "reply_to",
    "url",
    "urls",
    "uri",
    "link",
    "endpoint",
    "webhook",
    "webhook_url",
    "webhookurl",
    "callback",
    "callback_url",
    "channel",
    "channels",
    "host",
    "hostname",
    "domain",
    "address",
    "email",
    "emails",
    "destination",
    "target",
];

/// A named value longer than this is no destination but text.
const MAX_NAMED_CHARS: usize = 200;

static URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(?:https?|wss?|ftp)://[^\s<>"'`]+"#).expect("the URL pattern compiles")
});

static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"[^\s@<>()\[\],;:"'`]+@[^\s@<>()\[\],;:"'`]+\.[^\s@<>()\[\],;:"'`.]+"#)
        .expect("the e-mail pattern compiles")
});

/// The destinations of `arguments`, each once, in document order.
pub fn destinations(arguments: &Value) -> Vec<Destination> {
    let mut out = Vec::new();
    walk(arguments, None, &mut String::new(), &mut out);
    out
}

fn walk(value: &Value, key: Option<&str>, path: &mut String, out: &mut Vec<Destination>) {
    match value {
        Value::String(text) => read(text, key, path, out),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                walk(item, key, path, out);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                let len = path.len();
                path.push('/');
                path.push_str(&k.replace('~', "~0").replace('/', "~1"));
                walk(item, Some(k), path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

fn read(text: &str, key: Option<&str>, path: &str, out: &mut Vec<Destination>) {
    let mut found = false;
    for m in URL.find_iter(text) {
        let raw = m.as_str().trim_end_matches(['.', ',', ')', ';', '!', '?']);
        if let Some(host) = url_host(raw) {
            push(out, DestinationKind::Host, host, path);
            found = true;
        }
    }
    let without_urls = URL.replace_all(text, " ");
    for m in EMAIL.find_iter(&without_urls) {
        if let Some(address) = email(m.as_str()) {
            push(out, DestinationKind::Email, address, path);
            found = true;
        }
    }
    if found || !key.is_some_and(names_a_destination) {
        return;
    }
    let value = text.trim();
    if value.is_empty() || value.chars().count() > MAX_NAMED_CHARS {
        return;
    }
    match crate::policy::normal_host(value).filter(|_| value.contains('.')) {
        Some(ascii) => push(out, DestinationKind::Host, (ascii, value.to_owned()), path),
        None => push(
            out,
            DestinationKind::Named,
            (visible(value), value.to_owned()),
            path,
        ),
    }
}

fn names_a_destination(key: &str) -> bool {
    let key = key.to_lowercase().replace('-', "_");
    NAMES.iter().any(|name| {
        key == *name
            || key
                .strip_suffix(name)
                .is_some_and(|rest| rest.ends_with('_'))
    })
}

/// A URL's host: in ASCII, and as written.
fn url_host(raw: &str) -> Option<(String, String)> {
    let url = reqwest::Url::parse(raw).ok()?;
    let ascii = crate::policy::host_of(url.as_str())?;
    let after = raw.split_once("://")?.1;
    let authority = after.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let written = if host.starts_with('[') {
        host.split_inclusive(']').next().unwrap_or(host)
    } else {
        host.split(':').next().unwrap_or(host)
    };
    Some((ascii, written.to_lowercase()))
}

/// An e-mail address: local part and punycode domain, and as written.
fn email(raw: &str) -> Option<(String, String)> {
    let (local, domain) = raw.rsplit_once('@')?;
    let domain = domain.trim_end_matches('.');
    let ascii_domain = crate::policy::normal_host(domain)?;
    Some((
        format!("{}@{ascii_domain}", visible(local)),
        format!("{local}@{}", domain.to_lowercase()),
    ))
}

fn push(
    out: &mut Vec<Destination>,
    kind: DestinationKind,
    (ascii, written): (String, String),
    path: &str,
) {
    if out.iter().any(|d| d.kind == kind && d.ascii == ascii) {
        return;
    }
    out.push(Destination {
        kind,
        unicode: (written != ascii).then_some(written),
        ascii,
        path: path.to_owned(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn seen(arguments: Value) -> Vec<(DestinationKind, String, Option<String>, String)> {
        destinations(&arguments)
            .into_iter()
            .map(|d| (d.kind, d.ascii, d.unicode, d.path))
            .collect()
    }

    #[test]
    fn hosts_of_urls_addresses_and_named_destinations_are_read_from_the_arguments() {
        use DestinationKind::*;
        assert_eq!(
            seen(json!({
                "url": "https://Paste.Example.net/new?x=1",
                "body": "Notes: see http://10.0.0.7:8080/a, then mail partner@firm.example.",
                "to": ["a@firm.example", "partner@firm.example"],
                "channel": "#deals",
                "subject": "Hello"
            })),
            [
                (Host, "10.0.0.7".into(), None, "/body".into()),
                (Email, "partner@firm.example".into(), None, "/body".into()),
                (Named, "#deals".into(), None, "/channel".into()),
                (Email, "a@firm.example".into(), None, "/to/0".into()),
                (Host, "paste.example.net".into(), None, "/url".into()),
            ]
        );
    }

    #[test]
    fn nested_and_international_destinations_are_given_in_punycode_beside_their_written_form() {
        use DestinationKind::*;
        assert_eq!(
            seen(json!({
                "message": {"recipients": [{"email": "partner@f\u{0456}rm.example"}]},
                "options": {"webhookUrl": "https://b\u{00FC}cher.example/hook"},
                "reply-to": "desk.firm.example"
            })),
            [
                (
                    Email,
                    "partner@xn--frm-jhd.example".into(),
                    Some("partner@f\u{0456}rm.example".into()),
                    "/message/recipients/0/email".into()
                ),
                (
                    Host,
                    "xn--bcher-kva.example".into(),
                    Some("b\u{00FC}cher.example".into()),
                    "/options/webhookUrl".into()
                ),
                (Host, "desk.firm.example".into(), None, "/reply-to".into()),
            ]
        );
    }

    #[test]
    fn ordinary_text_and_long_named_values_name_no_destination() {
        assert_eq!(
            seen(json!({"subject": "Lease renewal", "query": "lease"})),
            []
        );
        let long = "x".repeat(MAX_NAMED_CHARS + 1);
        assert_eq!(seen(json!({"to": long})), []);
        assert_eq!(
            seen(json!({"photo": "x", "total": "5"})),
            [],
            "`to` inside a word"
        );
    }
}
