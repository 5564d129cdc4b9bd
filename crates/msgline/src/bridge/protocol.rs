//! The `msgline` kind: msgline's own HTTP bridge protocol (docs/bridge-protocol.md), spoken to
//! `msgline sim` and to bridges others write.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use reqwest::StatusCode;
use serde::{Serialize, de::DeserializeOwned};

use super::{
    ActionRequest, BatchAnswer, BridgeEvent, CapabilitiesAnswer, ConversationSignal, GroupChangeRequest, GroupRequest,
    ReachabilityAnswer, ReachabilityRequest, SendAnswer, SendBatch, SendRequest, StatusAnswer,
    adapter::{FileError, Hook, HookError, LineAdapter},
    batch::{Lanes, Waiting, split_due},
    call::{CallResult, SendOutcome, StatusLookup, by_status, classify_error, describe, read_file},
};
use crate::db::lines::Line;

/// Reachability questions to a line and their answers, as its lane carries them.
type AskLanes = Lanes<(Line, Vec<String>), Result<ReachabilityAnswer, String>>;

#[derive(Clone)]
pub struct MsglineBridge {
    http: reqwest::Client,
    timeout: Duration,
    /// Sends waiting for a call to their line, for lines that take batches.
    lanes: Arc<Lanes<(Line, SendRequest), CallResult<SendOutcome>>>,
    /// Reachability questions waiting for a call to their line.
    asks: Arc<AskLanes>,
}

/// A send waiting for a call, with the line as its sender last read it: a call goes with the
/// newest of its sends' readings, so that a changed bridge URL or token is taken up while the
/// line is kept busy (the line directory reads a line again every 10 s).
type WaitingSend = Waiting<(Line, SendRequest), CallResult<SendOutcome>>;

/// Most numbers one reachability call asks about.
const HANDLES_PER_ASK: usize = 100;

impl MsglineBridge {
    pub fn new(http: reqwest::Client, timeout: Duration) -> Self {
        Self { http, timeout, lanes: Arc::default(), asks: Arc::default() }
    }

    fn request(&self, method: reqwest::Method, line: &Line, path: &str) -> reqwest::RequestBuilder {
        self.request_within(method, line, path, self.timeout)
    }

    fn request_within(
        &self,
        method: reqwest::Method,
        line: &Line,
        path: &str,
        timeout: Duration,
    ) -> reqwest::RequestBuilder {
        let mut request = self.http.request(method, format!("{}{path}", line.bridge_url)).timeout(timeout);
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

    async fn post_send<B: Serialize>(&self, line: &Line, path: &str, body: &B) -> CallResult<SendOutcome> {
        self.post_send_within(line, path, body, self.timeout).await
    }

    async fn post_send_within<B: Serialize>(
        &self,
        line: &Line,
        path: &str,
        body: &B,
        timeout: Duration,
    ) -> CallResult<SendOutcome> {
        let started = Instant::now();
        let result = self.request_within(reqwest::Method::POST, line, path, timeout).json(body).send().await;
        let (outcome, http_status) = match result {
            Err(error) => (classify_error(&error), None),
            Ok(response) => {
                let status = response.status();
                let answer = response.json::<SendAnswer>().await;
                let outcome = match (status, answer) {
                    (_, Err(error)) if error.is_timeout() => SendOutcome::Timeout,
                    (status, Ok(answer)) if status.is_success() && answer.status == "accepted" => SendOutcome::Accepted,
                    (_, Ok(answer)) if answer.error.as_deref() == Some(super::LINE_BLOCKED) => {
                        SendOutcome::Blocked(answer.reason.unwrap_or_else(|| "the line's account is blocked".into()))
                    }
                    (status, Ok(answer)) if status.is_client_error() || answer.status == "rejected" => {
                        SendOutcome::Rejected(answer.reason.unwrap_or_else(|| format!("line answered {status}")))
                    }
                    (status, _) => by_status(status),
                };
                (outcome, Some(status.as_u16()))
            }
        };
        CallResult { outcome, http_status, latency_ms: started.elapsed().as_millis() as i64 }
    }

    async fn lookup(&self, line: &Line, path: &str) -> StatusLookup {
        match self.get_json::<StatusAnswer>(line, path).await {
            Ok((StatusCode::NOT_FOUND, _)) => StatusLookup::NotFound,
            Ok((status, Some(answer))) if status.is_success() => StatusLookup::Known(answer),
            Ok((status, _)) => StatusLookup::Failed(format!("bridge answered {status}")),
            Err(error) => StatusLookup::Failed(error),
        }
    }

    /// A call loop of a line's lane: takes what queued, calls the line with it, hands each send
    /// its outcome, and goes on until the queue is empty.
    async fn drain(self, line_id: String, mut most: usize) {
        while let Some(sends) = self.lanes.take(&line_id, most) {
            let Some(line) = sends.last().map(|send| send.request.0.clone()) else { continue };
            self.call_with(&line, sends).await;
            most = line.capabilities.map_or(0, |c| c.batch as usize).max(1);
        }
    }

    /// One call carrying `sends` (alone, or as a batch), each within its own deadline.
    async fn call_with(&self, line: &Line, sends: Vec<WaitingSend>) {
        let (sends, late, within) = split_due(sends, Instant::now());
        for send in late {
            // Never sent: as safe to try again as a call the line never received.
            let busy = "the line's calls were busy until the bridge timeout; not sent".to_string();
            send.answer(CallResult { outcome: SendOutcome::Unreachable(busy), http_status: None, latency_ms: 0 });
        }
        let Some(within) = within else { return };
        if let [send] = &sends[..] {
            let result = self.post_send_within(line, "/v1/messages", &send.request.1, within).await;
            sends.into_iter().for_each(|send| send.answer(result.clone()));
            return;
        }
        match self.post_batch(line, &sends, within).await {
            Some(result) => {
                crate::metrics::bridge_batch(&line.id, sends.len());
                for (send, outcome) in sends.into_iter().zip(result.outcome) {
                    send.answer(CallResult { outcome, http_status: result.http_status, latency_ms: result.latency_ms });
                }
            }
            None => {
                // The bridge does not take batches (any more): none was sent; each goes alone.
                let calls = sends.iter().map(|send| {
                    self.post_send_within(line, "/v1/messages", &send.request.1, send.time_left(Instant::now()))
                });
                let results = futures_util::future::join_all(calls).await;
                sends.into_iter().zip(results).for_each(|(send, result)| send.answer(result));
            }
        }
    }

    /// `POST /v1/messages/batch`: one outcome per send, in order. A whole-call answer (no
    /// answer in time, a 503, a cut connection) is each send's. `None` when the bridge says it
    /// has no such call (404, 405) or the batch is larger than it takes (413): nothing was sent.
    async fn post_batch(
        &self,
        line: &Line,
        sends: &[WaitingSend],
        within: Duration,
    ) -> Option<CallResult<Vec<SendOutcome>>> {
        let started = Instant::now();
        let ids: Vec<&str> = sends.iter().map(|send| send.request.1.id.as_str()).collect();
        let body = SendBatch { messages: sends.iter().map(|send| send.request.1.clone()).collect() };
        let result =
            self.request_within(reqwest::Method::POST, line, "/v1/messages/batch", within).json(&body).send().await;
        let each = |outcome: SendOutcome| vec![outcome; ids.len()];
        let (outcome, http_status) = match result {
            Err(error) => (each(classify_error(&error)), None),
            Ok(response) => {
                let status = response.status();
                if matches!(
                    status,
                    StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED | StatusCode::PAYLOAD_TOO_LARGE
                ) {
                    tracing::warn!(line = %line.id, %status, "the bridge says batch but refused one; sending alone");
                    return None;
                }
                let answer = response.json::<BatchAnswer>().await;
                let outcome = match (status, answer) {
                    (_, Err(error)) if error.is_timeout() => each(SendOutcome::Timeout),
                    (status, Ok(answer)) if status.is_success() => super::batch::outcomes(&ids, answer),
                    (status, _) => each(by_status(status)),
                };
                (outcome, Some(status.as_u16()))
            }
        };
        Some(CallResult { outcome, http_status, latency_ms: started.elapsed().as_millis() as i64 })
    }

    /// A call loop of a line's reachability questions: each call asks every number that
    /// queued (up to [`HANDLES_PER_ASK`] questions), and each question gets the whole answer.
    async fn drain_asks(self, line_id: String) {
        while let Some(asks) = self.asks.take(&line_id, HANDLES_PER_ASK) {
            let Some(line) = asks.last().map(|ask| ask.request.0.clone()) else { continue };
            let (asks, late, within) = split_due(asks, Instant::now());
            late.into_iter()
                .for_each(|ask| ask.answer(Err("the line's calls were busy until the bridge timeout".into())));
            let Some(within) = within else { continue };
            let mut handles: Vec<String> = asks.iter().flat_map(|ask| ask.request.1.iter().cloned()).collect();
            handles.sort_unstable();
            handles.dedup();
            let answer = self.ask(&line, handles, within).await;
            asks.into_iter().for_each(|ask| ask.answer(answer.clone()));
        }
    }

    async fn ask(&self, line: &Line, handles: Vec<String>, within: Duration) -> Result<ReachabilityAnswer, String> {
        let body = ReachabilityRequest { handles };
        let response = self
            .request_within(reqwest::Method::POST, line, "/v1/reachability", within)
            .json(&body)
            .send()
            .await
            .map_err(|e| describe(&e))?;
        if !response.status().is_success() {
            return Err(format!("bridge answered {}", response.status()));
        }
        response.json().await.map_err(|e| describe(&e))
    }
}

impl LineAdapter for MsglineBridge {
    /// Asks what the line can do.
    async fn capabilities(&self, line: &Line) -> Result<CapabilitiesAnswer, String> {
        match self.get_json::<CapabilitiesAnswer>(line, "/v1/capabilities").await? {
            (status, Some(answer)) if status.is_success() => Ok(answer),
            (status, _) => Err(format!("bridge answered {status}")),
        }
    }

    /// Asks which handles are reachable over iMessage. Questions to one line that arrive while
    /// its calls are busy are asked together, in one call (see [`super::batch`]).
    async fn reachability(&self, line: &Line, handles: &[String]) -> Result<ReachabilityAnswer, String> {
        let (waiting, answer) = Waiting::new((line.clone(), handles.to_vec()), self.timeout);
        if self.asks.enqueue(&line.id, waiting) {
            tokio::spawn(self.clone().drain_asks(line.id.clone()));
        }
        answer.await.unwrap_or_else(|_| Err("the call to the line ended without an answer".into()))
    }

    /// Hands a message to the line: in a call of its own, or, to a line that takes batches,
    /// through the line's lane (see [`super::batch`]).
    async fn send(&self, line: &Line, message: &SendRequest) -> CallResult<SendOutcome> {
        let most = line.capabilities.map_or(0, |c| c.batch) as usize;
        if most < 2 {
            return self.post_send(line, "/v1/messages", message).await;
        }
        let (waiting, outcome) = Waiting::new((line.clone(), message.clone()), self.timeout);
        if self.lanes.enqueue(&line.id, waiting) {
            tokio::spawn(self.clone().drain(line.id.clone(), most));
        }
        outcome.await.unwrap_or_else(|_| CallResult {
            outcome: SendOutcome::Unknown("the call to the line ended without an outcome".into()),
            http_status: None,
            latency_ms: 0,
        })
    }

    /// Asks the line to create a group with its opening message.
    async fn create_group(&self, line: &Line, body: &GroupRequest) -> CallResult<SendOutcome> {
        self.post_send(line, "/v1/groups", body).await
    }

    /// Asks the line what became of a message.
    async fn message_status(&self, line: &Line, id: &str) -> StatusLookup {
        self.lookup(line, &format!("/v1/messages/{id}")).await
    }

    /// Asks the line what became of a group.
    async fn group_status(&self, line: &Line, id: &str) -> StatusLookup {
        self.lookup(line, &format!("/v1/groups/{id}")).await
    }

    /// Asks the line to rename a group or change its participants.
    async fn change_group(&self, line: &Line, change: &GroupChangeRequest) -> CallResult<SendOutcome> {
        self.post_send(line, &format!("/v1/groups/{}/changes", change.group_id), change).await
    }

    /// Shows or hides a typing indicator.
    async fn typing(&self, line: &Line, signal: &ConversationSignal) -> CallResult<SendOutcome> {
        self.post_send(line, "/v1/typing", signal).await
    }

    /// Sends a read receipt.
    async fn mark_read(&self, line: &Line, signal: &ConversationSignal) -> CallResult<SendOutcome> {
        self.post_send(line, "/v1/read", signal).await
    }

    /// Fetches a file the bridge reported with an inbound message, with the bridge token, from
    /// the bridge's own origin only: whoever can call back with the bridge secret must not be
    /// able to point msgline, and its token, at any other host.
    async fn fetch_file(&self, line: &Line, url: &str, max_bytes: usize) -> Result<Vec<u8>, FileError> {
        if !same_origin(&line.bridge_url, url) {
            return Err(FileError::Refused("the URL is not on the bridge's own origin (scheme, host and port)".into()));
        }
        let mut request = self.http.get(url).timeout(self.timeout * 3);
        if let Some(token) = &line.bridge_token {
            request = request.bearer_auth(token);
        }
        read_file(request, max_bytes, |status| format!("the bridge answered {status} for {url}")).await
    }

    /// Asks the line what became of a group change.
    async fn group_change_status(&self, line: &Line, group_id: &str, change_id: &str) -> StatusLookup {
        self.lookup(line, &format!("/v1/groups/{group_id}/changes/{change_id}")).await
    }

    /// Edits or unsends a message msgline sent.
    async fn act(&self, line: &Line, action: &ActionRequest) -> CallResult<SendOutcome> {
        self.post_send(line, &format!("/v1/messages/{}/{}", action.message_id, action.verb()), action).await
    }

    /// Asks what became of an edit or unsend.
    async fn action_status(&self, line: &Line, action: &ActionRequest) -> StatusLookup {
        self.lookup(line, &format!("/v1/messages/{}/actions/{}", action.message_id, action.id)).await
    }

    /// A bridge of this kind is told its callback URL and secret when it is set up.
    async fn connect(&self, _line: &Line) -> Result<(), String> {
        Ok(())
    }

    /// Its callbacks come to `POST /bridge/events`, never to the hook route.
    async fn receive(&self, _line: &Line, _hook: &Hook<'_>) -> Result<Vec<BridgeEvent>, HookError> {
        Err(HookError::NotHere)
    }
}

/// Whether `url` is an absolute URL with the scheme, host and port of `base`.
fn same_origin(base: &str, url: &str) -> bool {
    match (reqwest::Url::parse(base), reqwest::Url::parse(url)) {
        (Ok(base), Ok(url)) => base.origin().is_tuple() && base.origin() == url.origin(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::same_origin;

    #[test]
    fn a_file_url_must_have_the_bridges_scheme_host_and_port() {
        let bridge = "http://10.0.0.5:9090/bridge";
        for same in ["http://10.0.0.5:9090/v1/media/1", "http://10.0.0.5:9090/bridge/x?y=1", "HTTP://10.0.0.5:9090/"] {
            assert!(same_origin(bridge, same), "{same}");
        }
        for other in [
            "http://10.0.0.5:9091/v1/media/1",
            "https://10.0.0.5:9090/v1/media/1",
            "http://10.0.0.6:9090/v1/media/1",
            "http://attacker.example/v1/media/1",
            "/v1/media/1",
            "//10.0.0.5:9090/v1/media/1",
            "data:text/plain;base64,aGk=",
            "file:///etc/passwd",
            "",
        ] {
            assert!(!same_origin(bridge, other), "{other}");
        }
        // The default port written out or left out is the same origin.
        assert!(same_origin("https://bridge.example", "https://bridge.example:443/f"));
    }
}
