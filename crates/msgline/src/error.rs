//! The one error type of a request: the contract's error code, a message, the field at fault
//! and what else the body names, and the kind of refusal it is. Known kinds keep their code;
//! everything else is logged with its cause chain and answered with an opaque `internal_error`.
//! The layers below `api` speak only of kinds; `api` turns a kind into an HTTP status and the
//! error into its JSON body (`api::errors`).

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::domain::scope::Scope;

/// What kind of refusal an error is. Each kind has one HTTP status, chosen in `api`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request is malformed or breaks a rule (400).
    Invalid,
    /// No valid credentials (401).
    Unauthorized,
    /// The caller may not do this (403).
    Forbidden,
    /// What the request names does not exist for this caller (404).
    NotFound,
    /// The route has no such method (405).
    NotAllowed,
    /// The request conflicts with the state of what it names (409).
    Conflict,
    /// The request or a file it names is too large (413).
    TooLarge,
    /// The body is not JSON (415).
    UnsupportedMedia,
    /// Too many requests for now (429).
    RateLimited,
    /// Something went wrong on our side (500).
    Internal,
    /// The line refused (502).
    LineRejected,
    /// The line or a dependency cannot be reached now (503).
    Unavailable,
}

#[derive(Debug)]
pub struct ApiError {
    pub kind: ErrorKind,
    pub code: Cow<'static, str>,
    pub message: Option<String>,
    /// Extra top-level members of the error body, such as `field` or `participants`.
    pub extra: Map<String, Value>,
    pub retry_after: Option<u64>,
    /// The answer repeats an earlier request's (same idempotency key): nothing was done again.
    pub replayed: bool,
    /// The cause of an internal error: logged, never sent.
    pub(crate) source: Option<anyhow::Error>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(kind: ErrorKind, code: impl Into<Cow<'static, str>>) -> Self {
        Self {
            kind,
            code: code.into(),
            message: None,
            extra: Map::new(),
            retry_after: None,
            replayed: false,
            source: None,
        }
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
        Self::new(ErrorKind::Unauthorized, "unauthorized").with_message("a valid API key is required")
    }

    pub fn missing_scope(scope: Scope) -> Self {
        Self::new(ErrorKind::Forbidden, format!("missing {} scope", scope.as_str()))
    }

    /// `invalid_request` with the field at fault.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid, "invalid_request").with_message(message).with("field", field.into())
    }

    /// `invalid_request` where no single field is at fault.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid, "invalid_request").with_message(message)
    }

    /// A rule of the request's own broken, with its own code (`poll_requires_imessage`, …).
    pub fn refused(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid, code).with_message(message)
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(ErrorKind::NotFound, "not_found").with_message(format!("no such {what}"))
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, code).with_message(message)
    }

    pub fn payload_too_large() -> Self {
        Self::new(ErrorKind::TooLarge, "payload_too_large").with_message("request bodies are limited to 1 MiB")
    }

    pub fn rate_limited(retry_after: u64) -> Self {
        let retry_after = retry_after.max(1);
        let mut error = Self::new(ErrorKind::RateLimited, "rate_limited")
            .with_message("too many requests; retry after the given number of seconds")
            .with("retry_after", retry_after);
        error.retry_after = Some(retry_after);
        error
    }

    /// The line could not be reached (or asked to be tried later): `line_unavailable`.
    pub fn line_unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unavailable, "line_unavailable").with_message(message)
    }

    /// The line refused: `line_rejected` with its reason.
    pub fn line_rejected(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::LineRejected, "line_rejected").with_message(message)
    }

    pub fn internal(source: impl Into<anyhow::Error>) -> Self {
        let mut error = Self::new(ErrorKind::Internal, "internal_error")
            .with_message("something went wrong on our side; retry with backoff");
        error.source = Some(source.into());
        error
    }

    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// The same error, as the answer to a repeated request.
    pub fn replayed(mut self) -> Self {
        self.replayed = true;
        self
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} {}", self.kind, self.code)
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
