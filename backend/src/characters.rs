//! What the bytes of a call's arguments are (issue 44; DESIGN §6.2): the
//! values that hold letters of another script imitating ASCII ones,
//! characters that show nothing, or bidirectional controls, found here
//! from the signed arguments and carried on the card's event
//! (`character_warnings`). The card flags each value and draws the
//! invisible characters (`countersign_api::characters::visible`); an
//! e-mail address or URL is also shown in ASCII (punycode for its
//! domain).
//!
//! A look-alike is a non-ASCII letter whose Unicode TR39 skeleton is
//! ASCII (`і` → `i`), in a word that also holds ASCII letters or in an
//! address: `fіrm` and `partner@fіrm.example` are flagged, a name written
//! wholly in Cyrillic is not.
//!
//! What it deliberately does not do: decide anything. A flag changes
//! words on the card, never whether the call asks (provenance and the gate
//! do that).

use countersign_api::{
    CharacterWarning, UnusualCharacter,
    characters::{code_point, is_bidi_control, is_invisible, visible},
    vocab::CharacterKind,
};
use serde_json::Value;

/// Every string value and key of `arguments` that holds a flagged
/// character, in document order.
pub fn warnings(arguments: &Value) -> Vec<CharacterWarning> {
    let mut out = Vec::new();
    walk(arguments, &mut String::new(), &mut out);
    out
}

fn walk(value: &Value, path: &mut String, out: &mut Vec<CharacterWarning>) {
    match value {
        Value::String(text) => out.extend(warning(path, false, text)),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                walk(item, path, out);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let len = path.len();
                path.push('/');
                path.push_str(&key.replace('~', "~0").replace('/', "~1"));
                out.extend(warning(path, true, key));
                walk(item, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

fn warning(path: &str, key: bool, text: &str) -> Option<CharacterWarning> {
    let address = is_address(text);
    let mut characters: Vec<UnusualCharacter> = Vec::new();
    for word in text.split(char::is_whitespace) {
        let mixed = address || word.chars().any(|c| c.is_ascii_alphabetic());
        for c in word.chars() {
            let found = if is_bidi_control(c) {
                Some((CharacterKind::Bidi, None))
            } else if is_invisible(c) {
                Some((CharacterKind::Invisible, None))
            } else if mixed && !c.is_ascii() && c.is_alphanumeric() {
                look_alike_of(c).map(|ascii| (CharacterKind::LookAlike, Some(ascii)))
            } else {
                None
            };
            if let Some((kind, looks_like)) = found {
                let code = code_point(c);
                if !characters.iter().any(|u| u.code == code) {
                    characters.push(UnusualCharacter {
                        code,
                        kind,
                        looks_like,
                    });
                }
            }
        }
    }
    if characters.is_empty() {
        return None;
    }
    Some(CharacterWarning {
        path: path.to_owned(),
        key,
        characters,
        ascii: address.then(|| ascii_form(text)).flatten(),
    })
}

/// The ASCII `c` imitates, when its TR39 skeleton is ASCII and not `c`.
fn look_alike_of(c: char) -> Option<String> {
    let mut buf = [0u8; 4];
    let skeleton: String = unicode_security::skeleton(c.encode_utf8(&mut buf)).collect();
    (!skeleton.is_empty() && skeleton.is_ascii()).then_some(skeleton)
}

/// An e-mail address or an http(s) URL (no spaces).
fn is_address(text: &str) -> bool {
    let text = text.trim();
    if text.is_empty() || text.contains(char::is_whitespace) {
        return false;
    }
    if let Some((local, domain)) = text.split_once('@')
        && !local.is_empty()
        && domain.contains('.')
        && !domain.contains('@')
        && !text.contains("://")
    {
        return true;
    }
    reqwest::Url::parse(text).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
}

/// `text` (an address) in ASCII: the domain in punycode, invisible
/// characters drawn; `None` when that is `text` itself.
fn ascii_form(text: &str) -> Option<String> {
    let text = text.trim();
    let ascii = if !text.contains("://")
        && let Some((local, domain)) = text.split_once('@')
    {
        let clean: String = domain.chars().filter(|c| !is_invisible(*c)).collect();
        let host = reqwest::Url::parse(&format!("https://{clean}/"))
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or(clean);
        format!("{}@{}", visible(local), visible(&host))
    } else {
        let url = reqwest::Url::parse(text).ok()?;
        visible(url.as_str())
    };
    (ascii != text).then_some(ascii)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds(w: &CharacterWarning) -> Vec<(String, CharacterKind)> {
        w.characters
            .iter()
            .map(|c| (c.code.clone(), c.kind))
            .collect()
    }

    /// Issue 44, item 8: each of these reached the card as plain text.
    #[test]
    fn look_alike_invisible_and_bidi_characters_are_flagged_with_the_address_in_ascii() {
        let args = json!({
            "to": "partner@f\u{0456}rm.example",
            "note": "pay\u{200B}ment",
            "subject": "invoice \u{202E}fdp.exe",
            "url": "https://\u{0440}aypal.example/login",
            "plain": "partner@firm.example",
            "name": "\u{0418}\u{0432}\u{0430}\u{043D}",
            "caf\u{00E9}": "r\u{00E9}sum\u{00E9}"
        });
        let found = warnings(&args);
        let at = |path: &str| {
            found
                .iter()
                .find(|w| w.path == path)
                .unwrap_or_else(|| panic!("no warning at {path}: {found:?}"))
        };
        let to = at("/to");
        assert_eq!(kinds(to), [("U+0456".into(), CharacterKind::LookAlike)]);
        assert_eq!(to.characters[0].looks_like.as_deref(), Some("i"));
        assert_eq!(to.ascii.as_deref(), Some("partner@xn--frm-jhd.example"));
        assert_eq!(
            kinds(at("/note")),
            [("U+200B".into(), CharacterKind::Invisible)]
        );
        assert_eq!(
            kinds(at("/subject")),
            [("U+202E".into(), CharacterKind::Bidi)]
        );
        let url = at("/url");
        assert_eq!(kinds(url), [("U+0440".into(), CharacterKind::LookAlike)]);
        assert!(
            url.ascii
                .as_deref()
                .is_some_and(|a| a.starts_with("https://xn--")),
            "{url:?}"
        );
        for clean in ["/plain", "/name", "/caf\u{00E9}"] {
            assert!(!found.iter().any(|w| w.path == clean), "{clean}: {found:?}");
        }
        // A key is flagged as a key.
        let keyed = warnings(&json!({"t\u{200B}o": "x"}));
        assert_eq!(keyed.len(), 1);
        assert!(keyed[0].key);
    }
}
