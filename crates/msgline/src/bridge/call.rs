//! What a call to a line can come to ([`SendOutcome`], [`StatusLookup`], [`FileError`]), and the
//! HTTP helpers every kind's adapter shares to get there.

use super::StatusAnswer;

/// How a send (or group creation) call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendOutcome {
    /// The line took it: the message is `submitted`.
    Accepted,
    /// The line refused it: the message is `failed` with this reason.
    Rejected(String),
    /// The device refused it because its account is blocked (bridge error `line_blocked`):
    /// nothing was sent; the line is flagged and the message waits for it (or its pool).
    Blocked(String),
    /// No answer within the bridge timeout: the line may have it. Never resent blindly.
    Timeout,
    /// The call never reached the bridge (connection refused, DNS): safe to try again.
    Unreachable(String),
    /// The bridge said it did not send and asks to be tried later (503).
    RetryLater,
    /// The call reached the bridge but the answer says nothing certain.
    Unknown(String),
    /// The line holds it for its device, which takes it when it next calls (a phone that dials
    /// in): the message stays `queued`, and msgline asks the line about it from `ask_at` on.
    Held { ask_at: i64 },
}

impl SendOutcome {
    /// The outcome name recorded on a delivery attempt.
    pub fn attempt_outcome(&self) -> &'static str {
        match self {
            SendOutcome::Accepted => "accepted",
            SendOutcome::Held { .. } => "held",
            SendOutcome::Rejected(_) | SendOutcome::Blocked(_) => "rejected",
            SendOutcome::Timeout => "timeout",
            SendOutcome::Unreachable(_) | SendOutcome::RetryLater | SendOutcome::Unknown(_) => "error",
        }
    }
}

/// One call to the bridge and what it took.
#[derive(Debug, Clone)]
pub struct CallResult<T> {
    pub outcome: T,
    pub http_status: Option<u16>,
    pub latency_ms: i64,
}

/// What the line knows about one message.
#[derive(Debug, Clone)]
pub enum StatusLookup {
    Known(StatusAnswer),
    /// The bridge never received it.
    NotFound,
    /// The bridge could not be asked right now.
    Failed(String),
}

/// Why a file could not be fetched from a line's device.
#[derive(Debug)]
pub enum FileError {
    /// Larger than allowed: the message is kept without it.
    TooLarge,
    /// The device did not give it now (it may later): the callback is refused, to be retried.
    Unavailable(String),
    /// msgline will not fetch it (a URL off the bridge's origin): the message is kept without it.
    Refused(String),
}

/// What a send call's HTTP status says where its answer says nothing certain: a 503 asks to be
/// tried later, another 4xx refuses, anything else leaves the outcome unknown. For one message
/// or for every message of a batch.
pub fn by_status(status: reqwest::StatusCode) -> SendOutcome {
    if status == reqwest::StatusCode::SERVICE_UNAVAILABLE {
        SendOutcome::RetryLater
    } else if status.is_client_error() {
        SendOutcome::Rejected(format!("line answered {status}"))
    } else {
        SendOutcome::Unknown(format!("line answered {status}"))
    }
}

pub fn classify_error(error: &reqwest::Error) -> SendOutcome {
    if error.is_connect() {
        SendOutcome::Unreachable(describe(error))
    } else if error.is_timeout() {
        SendOutcome::Timeout
    } else {
        SendOutcome::Unknown(describe(error))
    }
}

/// A short description without the URL, which may carry credentials.
pub fn describe(error: &reqwest::Error) -> String {
    let kind = if error.is_connect() {
        "cannot connect to the bridge"
    } else if error.is_timeout() {
        "the bridge did not answer in time"
    } else if error.is_decode() {
        "the bridge's answer is not readable"
    } else {
        "the call to the bridge failed"
    };
    match std::error::Error::source(error) {
        Some(source) => format!("{kind}: {source}"),
        None => kind.to_string(),
    }
}

/// A line whose device answers `request` at all is up; one that answers a server error is not,
/// in the words `unhealthy` gives its status. For kinds whose only health check is that a URL
/// answers (the Android gateway's `/health`, smsbox's `sendsms`).
pub async fn answers(
    request: reqwest::RequestBuilder,
    unhealthy: impl FnOnce(reqwest::StatusCode) -> String,
) -> Result<(), String> {
    let response = request.send().await.map_err(|e| describe(&e))?;
    if response.status().is_server_error() {
        return Err(unhealthy(response.status()));
    }
    Ok(())
}

/// An SMS-only line's reachability: nobody is reachable over iMessage from it.
pub fn nobody_on_imessage(handles: &[String]) -> super::ReachabilityAnswer {
    super::ReachabilityAnswer { imessage: handles.iter().map(|h| (h.clone(), false)).collect() }
}

/// A file from a line's device: the answer to `request`, read up to `max_bytes` (`TooLarge`
/// past that, by its announced length or as it streams). A call that fails is `Unavailable`, and
/// so is an answer that is not a success, in the words `refused` gives its status.
pub async fn read_file(
    request: reqwest::RequestBuilder,
    max_bytes: usize,
    refused: impl FnOnce(reqwest::StatusCode) -> String,
) -> Result<Vec<u8>, FileError> {
    let mut response = request.send().await.map_err(|e| FileError::Unavailable(describe(&e)))?;
    if !response.status().is_success() {
        return Err(FileError::Unavailable(refused(response.status())));
    }
    if response.content_length().is_some_and(|len| len as usize > max_bytes) {
        return Err(FileError::TooLarge);
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| FileError::Unavailable(describe(&e)))? {
        if bytes.len() + chunk.len() > max_bytes {
            return Err(FileError::TooLarge);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}
