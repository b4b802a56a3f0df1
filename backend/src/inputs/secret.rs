//! Which fields of a server's form ask for a secret (DESIGN §6a): the card
//! says so next to them, never a password field. Decided here, on the
//! server, and carried on the event (`secret_fields`): the web app shows
//! what the server decided.
//!
//! A field asks for a secret when its `format` is `password`, or its name,
//! title or description names one: a password or passphrase, a secret or
//! token, an API, access or private key, a PIN, a verification or one-time
//! code (OTP, 2FA), a card's number or CVV, an IBAN, a social security
//! number. Each text is folded first (`provenance::folded`: invisible
//! characters dropped, look-alike letters of other scripts folded to the
//! letters they imitate, lower case), then split into words at anything
//! not a letter or digit and where a lower-case letter meets an upper-case
//! one (`apiKey`), so `Аpi_Key` with a Cyrillic `А` is still an API key.
//!
//! A miss costs a warning, never safety: nothing is blocked on it.

use serde_json::Value;

/// Parts of a word that make it a secret's name (`newpassword`).
const INSIDE_A_WORD: [&str; 7] = [
    "password",
    "passphrase",
    "passwd",
    "passcode",
    "secret",
    "token",
    "apikey",
];

/// Whole words that name a secret.
const WORDS: [&str; 12] = [
    "pin", "pins", "otp", "totp", "hotp", "2fa", "mfa", "cvv", "cvv2", "cvc", "iban", "ssn",
];

/// Runs of words that name one.
const PHRASES: [&[&str]; 13] = [
    &["api", "key"],
    &["access", "key"],
    &["private", "key"],
    &["secret", "key"],
    &["verification", "code"],
    &["one", "time", "code"],
    &["one", "time", "password"],
    &["security", "code"],
    &["auth", "code"],
    &["card", "number"],
    &["credit", "card"],
    &["social", "security", "number"],
    &["sort", "code"],
];

/// The names of the properties of `schema` (a requested schema) that ask
/// for a secret, in the schema's order.
pub fn secret_fields(schema: &Value) -> Vec<String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .filter(|(name, field)| looks_secret(name, field))
        .map(|(name, _)| name.clone())
        .collect()
}

/// Whether one field, `name` with schema `field`, asks for a secret.
pub fn looks_secret(name: &str, field: &Value) -> bool {
    let text = |key: &str| field.get(key).and_then(Value::as_str).unwrap_or_default();
    if crate::provenance::folded(text("format")) == "password" {
        return true;
    }
    [name, text("title"), text("description")]
        .iter()
        .any(|t| names_a_secret(t))
}

fn names_a_secret(text: &str) -> bool {
    // Folded with case first (a small Cyrillic `і` is `i`) and with case
    // last (a capital Cyrillic `К` is `K`; its small `к` is no `k`).
    let spaced = camel_spaced(text);
    let lower_first = crate::provenance::folded(&spaced);
    let mut case_last = String::with_capacity(spaced.len());
    for c in spaced.chars() {
        crate::provenance::fold(c, |d| case_last.extend(d.to_lowercase()));
    }
    names_one(&words(&lower_first)) || names_one(&words(&case_last))
}

fn names_one(words: &[String]) -> bool {
    words
        .iter()
        .any(|w| WORDS.contains(&w.as_str()) || INSIDE_A_WORD.iter().any(|part| w.contains(part)))
        || PHRASES.iter().any(|phrase| {
            words
                .windows(phrase.len())
                .any(|run| run.iter().zip(phrase.iter()).all(|(w, p)| w == p))
        })
}

/// `text` with a space where a lower-case letter meets an upper-case one
/// (`apiKey`): camel case is read before folding lower-cases it.
fn camel_spaced(text: &str) -> String {
    let mut spaced = String::with_capacity(text.len() + 8);
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_uppercase() && previous_lower {
            spaced.push(' ');
        }
        previous_lower = c.is_lowercase();
        spaced.push(c);
    }
    spaced
}

/// Folded text in words: split at anything not a letter or digit.
fn words(folded: &str) -> Vec<String> {
    folded
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Issue 44, item 11: each of these was shown without the warning
    /// (the web app's old rule knew password, passphrase, secret, token
    /// and PIN by name or title only).
    #[test]
    fn a_form_that_asks_for_a_secret_is_recognised_by_name_title_description_or_format() {
        for (name, field, why) in [
            ("api_key", json!({}), "API key by name"),
            ("apiKey", json!({}), "camel case"),
            ("key", json!({"title": "API key"}), "API key by title"),
            (
                "k",
                json!({"description": "Paste your API key here"}),
                "by description",
            ),
            (
                "code",
                json!({"title": "Verification code"}),
                "verification code",
            ),
            ("otp", json!({}), "OTP"),
            (
                "c",
                json!({"title": "One-time code (2FA)"}),
                "one-time code",
            ),
            ("cvv", json!({}), "CVV"),
            ("c", json!({"title": "Card number"}), "card number"),
            ("c", json!({"title": "CVC"}), "CVC"),
            ("iban", json!({}), "IBAN"),
            ("n", json!({"title": "Social security number"}), "SSN"),
            ("ssn", json!({}), "ssn"),
            ("p", json!({"format": "password"}), "format"),
            ("password", json!({}), "password"),
            ("new_password", json!({}), "password inside"),
            ("x", json!({"title": "Client secret"}), "secret"),
            ("userPin", json!({}), "PIN"),
            ("\u{0410}pi_\u{041A}ey", json!({}), "Cyrillic А and К"),
            ("p\u{200B}assword", json!({}), "a zero-width space inside"),
            ("x", json!({"title": "\u{0422}OKEN"}), "Cyrillic Т"),
            (
                "c",
                json!({"format": "p\u{0430}ssword"}),
                "format with a Cyrillic а",
            ),
        ] {
            assert!(looks_secret(name, &field), "{why}: {name} {field}");
        }
        for (name, field) in [
            ("shipping", json!({"title": "Shipping address"})),
            ("opinion", json!({"title": "Your opinion"})),
            ("matter", json!({"title": "Matter number"})),
            ("keywords", json!({"title": "Keywords"})),
            (
                "notify_team",
                json!({"description": "Tell the team by e-mail"}),
            ),
            ("card_holder", json!({"title": "Name on the card"})),
        ] {
            assert!(!looks_secret(name, &field), "{name} {field}");
        }
        assert_eq!(
            secret_fields(&json!({"type": "object", "properties": {
                "matter": {"type": "string"},
                "apiKey": {"type": "string"},
                "pin": {"type": "string"}
            }})),
            ["matter", "apiKey", "pin"]
                .iter()
                .filter(|n| **n != "matter")
                .map(|n| (*n).to_owned())
                .collect::<Vec<_>>()
        );
    }
}
