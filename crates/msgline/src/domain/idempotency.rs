//! `Idempotency-Key`: up to 255 printable ASCII characters, quoted or bare; and the request
//! fingerprint stored beside it.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Parses a header (or body) value; `Err` explains what is wrong.
    pub fn parse(raw: &str) -> Result<Self, &'static str> {
        let trimmed = raw.trim();
        let unquoted = trimmed.strip_prefix('"').and_then(|rest| rest.strip_suffix('"')).unwrap_or(trimmed);
        if unquoted.is_empty() {
            return Err("the idempotency key is empty");
        }
        if unquoted.len() > 255 {
            return Err("the idempotency key is longer than 255 characters");
        }
        if !unquoted.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            return Err("the idempotency key must be printable ASCII");
        }
        Ok(Self(unquoted.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A fingerprint of what a request asks for: the same request in any key order hashes alike.
pub fn fingerprint(path: &str, request: &Value) -> String {
    // serde_json's map keeps keys sorted, so the text of a Value is canonical.
    let digest = Sha256::digest(format!("POST {path}\n{request}").as_bytes());
    crate::ids::hex(&digest)
}

/// The fingerprint of a typed request: the fields it was sent with, as sent, in canonical form
/// (keys sorted; a field left out or sent as `null` is not there). For a body with no `null` and
/// no field msgline does not read, that is the body as it came, so it equals [`fingerprint`] of
/// the body itself: keys stored before requests were typed (fingerprinted from the raw body) still
/// replay. A field msgline ignores no longer makes two requests differ.
pub fn fingerprint_of(path: &str, request: &impl Serialize) -> String {
    // A request type holds strings, numbers, lists and JSON values: nothing that fails to serialize.
    let value = serde_json::to_value(request).expect("a request's fields serialize");
    fingerprint(path, &value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_printable_ascii_up_to_255_and_may_be_quoted() {
        assert_eq!(IdempotencyKey::parse("\"abc\"").unwrap().as_str(), "abc");
        assert!(IdempotencyKey::parse(&"k".repeat(255)).is_ok());
        assert!(IdempotencyKey::parse(&"k".repeat(256)).is_err());
        assert!(IdempotencyKey::parse("").is_err());
        assert!(IdempotencyKey::parse("caf\u{e9}").is_err());
    }

    #[test]
    fn the_fingerprint_ignores_key_order_but_not_values() {
        let a = fingerprint("/messages", &json!({"to": "+1", "body": "hi"}));
        let b = fingerprint("/messages", &json!({"body": "hi", "to": "+1"}));
        let c = fingerprint("/messages", &json!({"body": "hey", "to": "+1"}));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
