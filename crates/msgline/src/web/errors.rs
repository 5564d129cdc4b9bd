//! The HTTP form of an error: the status of its kind, the contract's JSON body
//! (`{"error": code, "message": …, "field": …}`), `Retry-After` when it has a wait, and
//! `Idempotent-Replayed` when it repeats an earlier request's answer.

use axum::{
    Json,
    http::{HeaderName, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ErrorKind};

/// The one HTTP status of each kind of error.
pub fn status(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::Invalid => StatusCode::BAD_REQUEST,
        ErrorKind::Unauthorized => StatusCode::UNAUTHORIZED,
        ErrorKind::Forbidden => StatusCode::FORBIDDEN,
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::NotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        ErrorKind::Conflict => StatusCode::CONFLICT,
        ErrorKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorKind::UnsupportedMedia => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ErrorKind::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorKind::LineRejected => StatusCode::BAD_GATEWAY,
        ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
    }
}

/// The JSON body of an error, as sent.
pub fn body(error: &ApiError) -> Value {
    let mut body = Map::new();
    body.insert("error".into(), json!(error.code));
    if let Some(message) = &error.message {
        body.insert("message".into(), json!(message));
    }
    body.extend(error.extra.clone());
    Value::Object(body)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let Some(source) = &self.source {
            tracing::error!(error = format!("{source:#}"), "request failed");
        }
        let mut response = (status(self.kind), Json(body(&self))).into_response();
        if let Some(seconds) = self.retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        replayed(response, self.replayed)
    }
}

/// Marks an answer that repeats an earlier request's (`Idempotent-Replayed: true`): an error
/// here, an accepted send or group change in `messages.rs` and `groups.rs`.
pub fn replayed(mut response: Response, replayed: bool) -> Response {
    if replayed {
        response.headers_mut().insert(HeaderName::from_static("idempotent-replayed"), HeaderValue::from_static("true"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_answers_its_kinds_status_and_the_contracts_body() {
        let response = ApiError::invalid("to", "to is required").into_response();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let response = ApiError::rate_limited(3).into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "3");
        let replayed = ApiError::line_rejected("no such handle").replayed().into_response();
        assert_eq!(replayed.status(), StatusCode::BAD_GATEWAY);
        assert_eq!(replayed.headers()["idempotent-replayed"], "true");
        assert_eq!(
            body(&ApiError::invalid("to", "to is required")),
            json!({"error": "invalid_request", "message": "to is required", "field": "to"})
        );
    }
}
