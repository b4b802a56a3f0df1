//! What the bytes of an argument are (DESIGN §6.2, issue 44): the card
//! flags look-alike letters, invisible characters and bidirectional
//! controls in a value, and draws the invisible ones as `⟨U+200B⟩`. The
//! server finds them ([`CharacterWarning`], on `mcp_confirmation_required`
//! as `character_warnings`); the two rules both sides apply — which
//! characters are invisible, and how one is drawn — live here, once.

use crate::vocab::CharacterKind;
use serde::{Deserialize, Serialize};

/// One argument value (or key) with characters the card must point out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CharacterWarning {
    /// RFC 6901 pointer into the arguments (`/to`, `/cc/0`).
    pub path: String,
    /// The flagged text is the object key at `path`, not its value.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub key: bool,
    /// Each distinct flagged character, in the order first met.
    pub characters: Vec<UnusualCharacter>,
    /// For an e-mail address or URL: the same in ASCII (punycode for the
    /// domain, invisible characters drawn), when that differs from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ascii: Option<String>,
}

/// One flagged character.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UnusualCharacter {
    /// `U+0456`.
    pub code: String,
    /// Why it is flagged.
    pub kind: CharacterKind,
    /// For a look-alike: the ASCII it imitates (`i`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub looks_like: Option<String>,
}

/// Whether `c` is a bidirectional control: the embeddings, overrides and
/// isolates (U+202A–U+202E, U+2066–U+2069), the marks (U+200E, U+200F,
/// U+061C).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// Whether `c` shows nothing: Unicode's Default_Ignorable_Code_Point
/// (DerivedCoreProperties 16.0), bidi controls included.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// `U+200B`.
pub fn code_point(c: char) -> String {
    format!("U+{:04X}", u32::from(c))
}

/// `text` with every invisible character, bidi control and control
/// character other than a newline or tab drawn as `⟨U+XXXX⟩`, so what
/// the card shows is what the bytes are.
pub fn visible(text: &str) -> String {
    if !text.chars().any(hidden) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hidden(c) {
            out.push('\u{27E8}');
            out.push_str(&code_point(c));
            out.push('\u{27E9}');
        } else {
            out.push(c);
        }
    }
    out
}

fn hidden(c: char) -> bool {
    is_invisible(c) || (c.is_control() && c != '\n' && c != '\t')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_and_bidi_characters_are_drawn_as_their_code_points() {
        assert_eq!(
            visible("a\u{200B}b\u{202E}c\u{00AD}d\u{7}e\nf"),
            "a\u{27E8}U+200B\u{27E9}b\u{27E8}U+202E\u{27E9}c\u{27E8}U+00AD\u{27E9}d\u{27E8}U+0007\u{27E9}e\nf"
        );
        assert_eq!(visible("plain f\u{0456}rm"), "plain f\u{0456}rm");
        assert!(is_bidi_control('\u{2067}') && is_invisible('\u{2067}'));
        assert!(!is_invisible('a') && !is_invisible('\u{0456}'));
    }
}

/// Where a call sends data, as the server read it from the signed
/// arguments (DESIGN §6.2 "Sends to"; `destinations` on
/// `mcp_confirmation_required`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Destination {
    /// A URL's host, an e-mail address, or a named argument's value.
    pub kind: crate::vocab::DestinationKind,
    /// In ASCII: a domain in punycode, invisible characters drawn.
    pub ascii: String,
    /// The same as written, when that differs (an IDN domain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unicode: Option<String>,
    /// Where in the arguments it was first found (RFC 6901).
    pub path: String,
}
