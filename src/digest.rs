//! `args_digest`: the fingerprint of a tool call's arguments in every
//! [`ChainCallRecord`](crate::ChainCallRecord): lowercase hex SHA-256 of the
//! arguments' RFC 8785 canonical JSON (keys sorted by UTF-16 code units,
//! ECMAScript number formatting, no insignificant whitespace), computed on the
//! arguments as the script passed them, positional ones mapped to names.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The canonical JSON (RFC 8785) of `value`.
pub fn canonical_json(value: &Value) -> String {
    // Serialising a `serde_json::Value` cannot fail: keys are strings and
    // numbers are finite by construction.
    serde_json_canonicalizer::to_string(value).unwrap_or_default()
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// `bytes` as lowercase hex, two digits a byte.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(2 * bytes.len());
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    out
}

/// The canonical JSON bytes of one call's arguments.
pub fn canonical_args(args: &Map<String, Value>) -> Vec<u8> {
    serde_json_canonicalizer::to_vec(args).unwrap_or_default()
}

/// The `args_digest` of one call's arguments.
pub fn args_digest(args: &Map<String, Value>) -> String {
    sha256_hex(&canonical_args(args))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_and_drops_whitespace() {
        let v = json!({"b": 1, "a": [true, null, "x"], "c": {"z": 1.5, "y": 1e21}});
        assert_eq!(
            canonical_json(&v),
            r#"{"a":[true,null,"x"],"b":1,"c":{"y":1e+21,"z":1.5}}"#
        );
    }

    #[test]
    fn args_digest_is_order_independent_lowercase_hex() {
        let a = json!({"city": "Paris", "days": 3});
        let b = json!({"days": 3, "city": "Paris"});
        let da = args_digest(a.as_object().unwrap());
        assert_eq!(da, args_digest(b.as_object().unwrap()));
        assert_eq!(da.len(), 64);
        assert!(da.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)));
        // sha256 of the canonical text, computed independently
        assert_eq!(da, sha256_hex(br#"{"city":"Paris","days":3}"#));
    }

    #[test]
    fn sha256_hex_matches_known_vector() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
