//! Digests: SHA-256 over RFC 8785 (JCS) canonical JSON — the one home of
//! "the bytes that are shown, stored, signed and sent". The approval ledger
//! digests arguments with it, the MCP client digests tool descriptors, the
//! activity log chains its entries.
//!
//! What it deliberately does not do: keys or HMACs (`approvals` signs), or
//! deciding what a descriptor is made of (`mcp::descriptor_digest` picks
//! the fields).

use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// SHA-256 (hex) of `bytes` (canonical JSON, as text or bytes).
pub fn sha256_hex(bytes: impl AsRef<[u8]>) -> String {
    hex::encode(Sha256::digest(bytes.as_ref()))
}

/// RFC 8785 canonical JSON of `value`: the bytes that are shown, digested,
/// signed and sent.
pub fn canonical(value: &Value) -> String {
    #[expect(clippy::expect_used, reason = "a serde_json::Value has string keys")]
    serde_json_canonicalizer::to_string(value).expect("JCS of a serde_json::Value")
}

/// Beyond ±2^53 not every integer is a double, and JCS writes IEEE 754
/// doubles: 2^53 + 1 would go out as 2^53.
const MAX_EXACT_INTEGER: u64 = 1 << 53;

/// The first number in `value` that RFC 8785 canonical JSON would not
/// carry exactly, as (JSON path, the number as shown): integers beyond
/// ±2^53, which JCS writes as the nearest double, and −0, which it
/// writes as 0. Such arguments are refused before any card (DESIGN §6.1):
/// what is shown, signed and sent must be the same value. Other numbers
/// are doubles already (serde_json parses them so) and round-trip.
pub fn inexact_number(value: &Value) -> Option<(String, String)> {
    fn walk(value: &Value, path: &mut String) -> Option<(String, String)> {
        match value {
            Value::Number(n) => {
                let exact = if let Some(i) = n.as_i64() {
                    i.unsigned_abs() <= MAX_EXACT_INTEGER
                } else if let Some(u) = n.as_u64() {
                    u <= MAX_EXACT_INTEGER
                } else {
                    n.as_f64().is_some_and(|f| f != 0.0 || f.is_sign_positive())
                };
                (!exact).then(|| (path.clone(), n.to_string()))
            }
            Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let found = walk(item, path);
                path.truncate(len);
                found
            }),
            Value::Object(map) => map.iter().find_map(|(key, item)| {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                let found = walk(item, path);
                path.truncate(len);
                found
            }),
            _ => None,
        }
    }
    walk(value, &mut String::new())
}

/// RFC 8785 canonical JSON of `value`, as bytes.
pub fn canonical_bytes(value: &Value) -> Vec<u8> {
    canonical(value).into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_jcs_cannot_carry_exactly_are_found_with_their_path() {
        let parse = |s: &str| serde_json::from_str::<Value>(s).expect("json");
        for (json, expected) in [
            (r#"{"n": 9007199254740991}"#, None),
            (r#"{"n": -9007199254740991}"#, None),
            (r#"{"n": 1.5, "m": 1e300, "z": 0.0}"#, None),
            (r#"{"n": 9007199254740992}"#, None),
            (
                r#"{"n": 9007199254740993}"#,
                Some(("n", "9007199254740993")),
            ),
            (
                r#"{"n": -9007199254740993}"#,
                Some(("n", "-9007199254740993")),
            ),
            (
                r#"{"a": {"b": [1, 18446744073709551615]}}"#,
                Some(("a.b[1]", "18446744073709551615")),
            ),
            (r#"{"z": -0.0}"#, Some(("z", "-0.0"))),
        ] {
            let found = inexact_number(&parse(json));
            assert_eq!(
                found,
                expected.map(|(p, n)| (p.to_owned(), n.to_owned())),
                "{json}"
            );
        }
        // The reason: JCS would send another value than the one shown.
        assert_eq!(canonical(&parse("9007199254740993")), "9007199254740992");
        assert_eq!(canonical(&parse("-0.0")), "0");
    }

    #[test]
    fn the_arguments_digest_ignores_key_order_and_whitespace() {
        let a: Value = serde_json::from_str(r#"{"b": 1, "a": "x"}"#).expect("json");
        let b = json!({"a": "x", "b": 1});
        assert_eq!(canonical(&a), r#"{"a":"x","b":1}"#);
        assert_eq!(sha256_hex(canonical(&a)), sha256_hex(canonical(&b)));
        assert_ne!(
            sha256_hex(canonical(&b)),
            sha256_hex(canonical(&json!({"a": "x", "b": 2})))
        );
    }
}
