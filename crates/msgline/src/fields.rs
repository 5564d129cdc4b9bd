//! Readers of request fields, shared by the HTTP handlers and the send path: a bad value is a
//! 400 `invalid_request` naming the field at fault.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{
    domain::phone::{E164, PhoneError},
    error::{ApiError, ApiResult},
};

/// Parses a body, naming the field at fault when there is one.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("the request body must be a JSON object"));
    }
    // JSON is UTF-8; serde_json checks that only in the strings it keeps, not in those of fields
    // it ignores.
    if std::str::from_utf8(bytes).is_err() {
        return Err(ApiError::bad_request("the request body is not valid UTF-8"));
    }
    // JSON can carry NUL only escaped; PostgreSQL cannot store it in text at all.
    if bytes.windows(6).any(|w| w == b"\\u0000")
        && let Ok(value) = serde_json::from_slice::<Value>(bytes)
        && let Some(field) = nul_field(&value, String::new())
    {
        return Err(ApiError::invalid(field, "text may not contain NUL characters (\\u0000)"));
    }
    let deserializer = &mut serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut *deserializer).map_err(describe)?;
    // One JSON value, and nothing after it but whitespace.
    deserializer
        .end()
        .map_err(|_| ApiError::bad_request("the request body has more after its JSON value; send one JSON value"))?;
    Ok(value)
}

/// The path of the first string (or key) in `value` that holds a NUL character.
fn nul_field(value: &Value, path: String) -> Option<String> {
    let here = || if path.is_empty() { ".".to_string() } else { path.clone() };
    match value {
        Value::String(text) => text.contains('\0').then(here),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| nul_field(item, format!("{path}[{i}]"))),
        Value::Object(map) => map.iter().find_map(|(key, item)| match key.contains('\0') {
            true => Some(here()),
            false => nul_field(item, if path.is_empty() { key.clone() } else { format!("{path}.{key}") }),
        }),
        _ => None,
    }
}

/// Reads a parsed JSON value into a type, naming the field at fault when there is one.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(describe)
}

/// [`from_value`] without taking the value: a request whose body is also fingerprinted is read
/// in place instead of copied.
pub fn from_ref<T: DeserializeOwned>(value: &Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(describe)
}

fn describe(error: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = error.path().to_string();
    let inner = error.into_inner();
    if inner.is_syntax() || inner.is_eof() {
        return ApiError::bad_request(format!("the request body is not valid JSON: {inner}"));
    }
    let text = inner.to_string();
    let text = text.split(" at line ").next().unwrap_or(&text).to_string();
    // serde reports a missing field at its parent's path, with the name in the message.
    let field = match text.strip_prefix("missing field `") {
        Some(rest) => {
            let name = rest.trim_end_matches('`');
            if path == "." { name.to_string() } else { format!("{path}.{name}") }
        }
        None => path,
    };
    if field == "." {
        ApiError::bad_request(format!("the request body is not the expected JSON object: {text}"))
    } else {
        ApiError::invalid(field, text)
    }
}

/// A text field that must have 1 to `max` characters.
pub fn required_text(field: &str, value: Option<String>, max: usize) -> ApiResult<String> {
    match value {
        None => Err(ApiError::invalid(field, format!("{field} is required"))),
        Some(text) if text.trim().is_empty() => Err(ApiError::invalid(field, format!("{field} must not be empty"))),
        Some(text) if text.chars().count() > max => {
            Err(ApiError::invalid(field, format!("{field} is limited to {max} characters")))
        }
        Some(text) => Ok(text),
    }
}

/// Parses a phone field, naming it in the error.
pub fn phone_field(field: &str, value: &str, default_country: Option<&str>) -> ApiResult<E164> {
    E164::parse(value, default_country).map_err(|e| {
        let field = if e == PhoneError::UnknownCountry { "default_country" } else { field };
        ApiError::invalid(field, e.describe(value))
    })
}

/// An optional email address of at most 254 characters; an empty one is kept as it is.
pub fn email_field(value: Option<String>) -> ApiResult<Option<String>> {
    let Some(email) = bounded("email", value, 254)? else { return Ok(None) };
    let valid = email.is_empty()
        || email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty() && domain.contains('.') && !domain.contains('@') && !email.contains(char::is_whitespace)
        });
    if valid { Ok(Some(email)) } else { Err(ApiError::invalid("email", "email is not an email address")) }
}

/// Trims a text field; an over-long one is a 400 naming it.
pub fn bounded(field: &str, value: Option<String>, max_chars: usize) -> Result<Option<String>, ApiError> {
    match value {
        Some(text) if text.chars().count() > max_chars => {
            Err(ApiError::invalid(field, format!("{field} is limited to {max_chars} characters")))
        }
        Some(text) => Ok(Some(text.trim().to_string())),
        None => Ok(None),
    }
}
