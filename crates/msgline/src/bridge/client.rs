//! msgline's side of the bridge protocol: calls to a line's bridge, with the bridge timeout.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde::{Serialize, de::DeserializeOwned};

use super::{CapabilitiesAnswer, ReachabilityAnswer, ReachabilityRequest, SendAnswer, SendRequest, StatusAnswer};
use crate::db::lines::Line;

/// How a send (or group creation) call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendOutcome {
    /// The line took it: the message is `submitted`.
    Accepted,
    /// The line refused it: the message is `failed` with this reason.
    Rejected(String),
    /// No answer within the bridge timeout: the line may have it. Never resent blindly.
    Timeout,
    /// The call never reached the bridge (connection refused, DNS): safe to try again.
    Unreachable(String),
    /// The bridge said it did not send and asks to be tried later (503).
    RetryLater,
    /// The call reached the bridge but the answer says nothing certain.
    Unknown(String),
}

impl SendOutcome {
    /// The outcome name recorded on a delivery attempt.
    pub fn attempt_outcome(&self) -> &'static str {
        match self {
            SendOutcome::Accepted => "accepted",
            SendOutcome::Rejected(_) => "rejected",
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

#[derive(Clone)]
pub struct BridgeClient {
    http: reqwest::Client,
    timeout: Duration,
}

impl BridgeClient {
    pub fn new(timeout: Duration) -> Self {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .pool_max_idle_per_host(64)
            .build()
            .expect("HTTP client builds");
        Self { http, timeout }
    }

    fn request(&self, method: reqwest::Method, line: &Line, path: &str) -> reqwest::RequestBuilder {
        let mut request = self.http.request(method, format!("{}{path}", line.bridge_url)).timeout(self.timeout);
        if let Some(token) = &line.bridge_token {
            request = request.bearer_auth(token);
        }
        request
    }

    async fn get_json<T: DeserializeOwned>(&self, line: &Line, path: &str) -> Result<(StatusCode, Option<T>), String> {
        let response = self.request(reqwest::Method::GET, line, path).send().await.map_err(|e| describe(&e))?;
        let status = response.status();
        let body = response.json::<T>().await.ok();
        Ok((status, body))
    }

    /// Asks what the line can do.
    pub async fn capabilities(&self, line: &Line) -> Result<CapabilitiesAnswer, String> {
        match self.get_json::<CapabilitiesAnswer>(line, "/v1/capabilities").await? {
            (status, Some(answer)) if status.is_success() => Ok(answer),
            (status, _) => Err(format!("bridge answered {status}")),
        }
    }

    /// Asks which handles are reachable over iMessage.
    pub async fn reachability(&self, line: &Line, handles: &[String]) -> Result<ReachabilityAnswer, String> {
        let body = ReachabilityRequest { handles: handles.to_vec() };
        let response = self
            .request(reqwest::Method::POST, line, "/v1/reachability")
            .json(&body)
            .send()
            .await
            .map_err(|e| describe(&e))?;
        if !response.status().is_success() {
            return Err(format!("bridge answered {}", response.status()));
        }
        response.json().await.map_err(|e| describe(&e))
    }

    /// Hands a message to the line.
    pub async fn send(&self, line: &Line, message: &SendRequest) -> CallResult<SendOutcome> {
        self.post_send(line, "/v1/messages", message).await
    }

    /// Asks the line to create a group with its opening message.
    pub async fn create_group<B: Serialize>(&self, line: &Line, body: &B) -> CallResult<SendOutcome> {
        self.post_send(line, "/v1/groups", body).await
    }

    async fn post_send<B: Serialize>(&self, line: &Line, path: &str, body: &B) -> CallResult<SendOutcome> {
        let started = Instant::now();
        let result = self.request(reqwest::Method::POST, line, path).json(body).send().await;
        let (outcome, http_status) = match result {
            Err(error) => (classify_error(&error), None),
            Ok(response) => {
                let status = response.status();
                let answer = response.json::<SendAnswer>().await;
                let outcome = match (status, answer) {
                    (_, Err(error)) if error.is_timeout() => SendOutcome::Timeout,
                    (status, Ok(answer)) if status.is_success() && answer.status == "accepted" => SendOutcome::Accepted,
                    (status, Ok(answer)) if status.is_client_error() || answer.status == "rejected" => {
                        SendOutcome::Rejected(answer.reason.unwrap_or_else(|| format!("line answered {status}")))
                    }
                    (StatusCode::SERVICE_UNAVAILABLE, _) => SendOutcome::RetryLater,
                    (status, Err(_)) if status.is_client_error() => {
                        SendOutcome::Rejected(format!("line answered {status}"))
                    }
                    (status, _) => SendOutcome::Unknown(format!("line answered {status}")),
                };
                (outcome, Some(status.as_u16()))
            }
        };
        CallResult { outcome, http_status, latency_ms: started.elapsed().as_millis() as i64 }
    }

    /// Asks the line what became of a message.
    pub async fn message_status(&self, line: &Line, id: &str) -> StatusLookup {
        self.lookup(line, &format!("/v1/messages/{id}")).await
    }

    /// Asks the line what became of a group.
    pub async fn group_status(&self, line: &Line, id: &str) -> StatusLookup {
        self.lookup(line, &format!("/v1/groups/{id}")).await
    }

    async fn lookup(&self, line: &Line, path: &str) -> StatusLookup {
        match self.get_json::<StatusAnswer>(line, path).await {
            Ok((StatusCode::NOT_FOUND, _)) => StatusLookup::NotFound,
            Ok((status, Some(answer))) if status.is_success() => StatusLookup::Known(answer),
            Ok((status, _)) => StatusLookup::Failed(format!("bridge answered {status}")),
            Err(error) => StatusLookup::Failed(error),
        }
    }
}

fn classify_error(error: &reqwest::Error) -> SendOutcome {
    if error.is_connect() {
        SendOutcome::Unreachable(describe(error))
    } else if error.is_timeout() {
        SendOutcome::Timeout
    } else {
        SendOutcome::Unknown(describe(error))
    }
}

/// A short description without the URL, which may carry credentials.
fn describe(error: &reqwest::Error) -> String {
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
