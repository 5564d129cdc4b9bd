//! The one API error type. Known kinds keep their status and code; everything else is logged
//! with its cause chain and answered with an opaque `internal_error`.

use std::borrow::Cow;

use axum::{
    Json,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::{Map, Value, json};

use crate::domain::scope::Scope;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: Cow<'static, str>,
    pub message: Option<String>,
    /// Extra top-level members of the error body, such as `field` or `participants`.
    pub extra: Map<String, Value>,
    pub retry_after: Option<u64>,
    /// The cause of an internal error: logged, never sent.
    source: Option<anyhow::Error>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(status: StatusCode, code: impl Into<Cow<'static, str>>) -> Self {
        Self { status, code: code.into(), message: None, extra: Map::new(), retry_after: None, source: None }
    }

    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_string(), value.into());
        self
    }

    pub fn unauthorized() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized").with_message("a valid API key is required")
    }

    pub fn missing_scope(scope: Scope) -> Self {
        Self::new(StatusCode::FORBIDDEN, format!("missing {} scope", scope.as_str()))
    }

    /// 400 `invalid_request` with the field at fault.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request").with_message(message).with("field", field.into())
    }

    /// 400 `invalid_request` where no single field is at fault.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request").with_message(message)
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found").with_message(format!("no such {what}"))
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code).with_message(message)
    }

    pub fn payload_too_large() -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")
            .with_message("request bodies are limited to 1 MiB")
    }

    pub fn rate_limited(retry_after: u64) -> Self {
        let retry_after = retry_after.max(1);
        let mut error = Self::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited")
            .with_message("too many requests; retry after the given number of seconds")
            .with("retry_after", retry_after);
        error.retry_after = Some(retry_after);
        error
    }

    pub fn internal(source: impl Into<anyhow::Error>) -> Self {
        let mut error = Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal_error")
            .with_message("something went wrong on our side; retry with backoff");
        error.source = Some(source.into());
        error
    }

    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// The JSON body as sent; also what idempotent replays store.
    pub fn body(&self) -> Value {
        let mut body = Map::new();
        body.insert("error".into(), json!(self.code));
        if let Some(message) = &self.message {
            body.insert("message".into(), json!(message));
        }
        body.extend(self.extra.clone());
        Value::Object(body)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.code)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let Some(source) = &self.source {
            tracing::error!(error = format!("{source:#}"), "request failed");
        }
        let mut response = (self.status, Json(self.body())).into_response();
        if let Some(seconds) = self.retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(error: sqlx::Error) -> Self {
        ApiError::internal(error)
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(error: anyhow::Error) -> Self {
        ApiError::internal(error)
    }
}
