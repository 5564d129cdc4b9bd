//! The `android-gateway` kind with `--dial-in`: SMS Gateway for Android in its private-server
//! mode, on a phone msgline cannot reach (mobile data behind carrier NAT). The phone calls
//! msgline instead (`/api/mobile/v1`, `api::mobile`): a send is held in the line's queue until
//! the phone takes it, the phone's event stream is told at once, and its state reports and
//! webhooks move the message as the other Android kind's do.
//!
//! Read from the app's source (capcom6/android-sms-gateway: `modules/gateway/GatewayApi.kt`,
//! `GatewayService.kt`, `workers/PullMessagesWorker.kt`, `workers/SendStateWorker.kt`,
//! `helpers/SSEManager.kt`) and the server it normally calls (android-sms-gateway/server:
//! `internal/sms-gateway/handlers/mobile.go`, the client-go mobile types).

use std::time::Duration;

use serde_json::json;

use super::{
    BridgeEvent, CapabilitiesAnswer, ConversationSignal, GroupChangeRequest, GroupRequest, ReachabilityAnswer,
    SendRequest, StatusAnswer,
    adapter::{FileError, Hook, HookError, LineAdapter},
    android::{AndroidGateway, CAPABILITIES},
    call::{CallResult, SendOutcome, StatusLookup, nobody_on_imessage},
};
use crate::{
    clock,
    db::{self, Db, dial_in::Queued, feed::Signal, lines::Line},
};

/// How long a held message waits before msgline asks about it when its validity is not known.
const ASK_AFTER_MS: i64 = 3_600_000;

#[derive(Clone)]
pub struct AndroidDialIn {
    /// The local kind's webhook handling, which the phone's webhooks share.
    android: AndroidGateway,
    db: Db,
    /// A phone that has not called for this long is `offline`.
    seen_within: Duration,
    /// Tells this instance's phone streams that a line has something new to take.
    queued: Signal,
}

impl AndroidDialIn {
    pub fn new(android: AndroidGateway, db: Db, line_check: Duration) -> Self {
        // Twice the probe interval, and no less than two of the stream's own calls (every 5 s).
        let seen_within = (line_check * 2).max(Duration::from_secs(10));
        Self { android, db, seen_within, queued: Signal::default() }
    }

    /// What wakes the phones' event streams on this instance.
    pub fn queued(&self) -> &Signal {
        &self.queued
    }

    /// The webhook URL the phone is given (with the line's hook secret).
    pub fn hook_url(&self, line: &Line) -> String {
        self.android.hook_url(line)
    }

    /// The message as the app reads it from `GET /message` (`GatewayApi.Message`): its dates
    /// with three fraction digits and a zone (`clock::rfc3339`), which is what the app parses.
    fn request(message: &SendRequest, valid_until: Option<i64>) -> String {
        let text = message.plain_text(true);
        let mut request = json!({
            "id": message.id,
            "textMessage": {"text": text},
            "message": text,
            "phoneNumbers": message.to,
            "withDeliveryReport": true,
            "isEncrypted": false,
            "createdAt": clock::rfc3339(clock::now_ms()),
        });
        if let Some(until) = valid_until {
            request["validUntil"] = json!(clock::rfc3339(until));
        }
        request.to_string()
    }
}

impl LineAdapter for AndroidDialIn {
    /// A phone that called within [`AndroidDialIn::seen_within`] (its open event stream calls
    /// every few seconds) is up.
    async fn capabilities(&self, line: &Line) -> Result<CapabilitiesAnswer, String> {
        let device =
            db::dial_in::get(&self.db, &line.id).await.map_err(|e| format!("reading the line's phone: {e}"))?;
        let Some(seen) = device.and_then(|d| d.device_id.and(d.last_seen_at)) else {
            return Err("no phone has registered with the line's registration token yet".into());
        };
        let ago = clock::now_ms().saturating_sub(seen);
        if ago > self.seen_within.as_millis() as i64 {
            return Err(format!("the phone last called msgline {} s ago", ago / 1000));
        }
        Ok(CapabilitiesAnswer { e164: line.e164.clone(), capabilities: CAPABILITIES })
    }

    async fn reachability(&self, _line: &Line, handles: &[String]) -> Result<ReachabilityAnswer, String> {
        Ok(nobody_on_imessage(handles))
    }

    /// Holds the message for the phone, and tells its stream.
    async fn send(&self, line: &Line, message: &SendRequest) -> CallResult<SendOutcome> {
        let refused = |reason: &str| CallResult {
            outcome: SendOutcome::Rejected(reason.into()),
            http_status: None,
            latency_ms: 0,
        };
        if message.chat.is_some() || message.to.len() != 1 {
            return refused("an SMS Gateway for Android line sends to one number at a time; it has no group chats");
        }
        if message.reaction.is_some() {
            return refused("an SMS Gateway for Android line sends SMS, which has no tapbacks");
        }
        let valid_until = db::messages::expires_at(&self.db, &message.id).await.ok().flatten();
        let request = Self::request(message, valid_until);
        let outcome = match db::dial_in::enqueue(&self.db, &line.id, &message.id, &request).await {
            Ok(()) => {
                self.queued.bump();
                SendOutcome::Held { ask_at: valid_until.unwrap_or_else(|| clock::now_ms() + ASK_AFTER_MS) }
            }
            Err(error) => SendOutcome::Unreachable(format!("could not hold the message for the phone: {error}")),
        };
        CallResult { outcome, http_status: None, latency_ms: 0 }
    }

    async fn create_group(&self, line: &Line, group: &GroupRequest) -> CallResult<SendOutcome> {
        self.android.create_group(line, group).await
    }

    /// What the phone reported; a message it took and said nothing of cannot be settled (it is
    /// `unknown` until the phone reports).
    async fn message_status(&self, line: &Line, id: &str) -> StatusLookup {
        let known = |status: &str, reason: Option<String>| {
            StatusLookup::Known(StatusAnswer { id: id.to_string(), status: status.into(), reason })
        };
        match db::dial_in::queued(&self.db, &line.id, id).await {
            Err(error) => StatusLookup::Failed(format!("reading the phone's queue: {error}")),
            Ok(Queued::Absent) => StatusLookup::NotFound,
            // Still waiting at the end of its validity: taken back, so the phone never gets it.
            Ok(Queued::Waiting) => match db::messages::expires_at(&self.db, id).await {
                Ok(Some(until)) if until <= clock::now_ms() => match db::dial_in::withdraw(&self.db, id).await {
                    Ok(true) => known("failed", Some("expired".into())),
                    Ok(false) => StatusLookup::Failed("the phone took the message as its validity ended".into()),
                    Err(error) => StatusLookup::Failed(format!("taking the message back: {error}")),
                },
                _ => known("queued", None),
            },
            Ok(Queued::Taken { reported: Some(status), reason }) => known(&status, reason),
            Ok(Queued::Taken { reported: None, .. }) => {
                StatusLookup::Failed("the phone took the message and has not said what became of it".into())
            }
        }
    }

    async fn group_status(&self, line: &Line, id: &str) -> StatusLookup {
        self.android.group_status(line, id).await
    }

    async fn change_group(&self, line: &Line, change: &GroupChangeRequest) -> CallResult<SendOutcome> {
        self.android.change_group(line, change).await
    }

    async fn typing(&self, line: &Line, signal: &ConversationSignal) -> CallResult<SendOutcome> {
        self.android.typing(line, signal).await
    }

    async fn mark_read(&self, line: &Line, signal: &ConversationSignal) -> CallResult<SendOutcome> {
        self.android.mark_read(line, signal).await
    }

    async fn fetch_file(&self, line: &Line, url: &str, max_bytes: usize) -> Result<Vec<u8>, FileError> {
        self.android.fetch_file(line, url, max_bytes).await
    }

    async fn group_change_status(&self, line: &Line, group_id: &str, change_id: &str) -> StatusLookup {
        self.android.group_change_status(line, group_id, change_id).await
    }

    /// Nothing to call: the phone registers itself, and learns the webhook from msgline.
    async fn connect(&self, _line: &Line) -> Result<(), String> {
        Ok(())
    }

    /// The phone drops a webhook after its retries, and a state report after 11 attempts.
    fn reports_may_be_lost(&self) -> bool {
        true
    }

    /// The phone's webhooks, as the local kind reads them; each says the phone is up.
    async fn receive(&self, line: &Line, hook: &Hook<'_>) -> Result<Vec<BridgeEvent>, HookError> {
        let events = self.android.receive(line, hook).await?;
        if let Err(error) = db::dial_in::seen_line(&self.db, &line.id).await {
            tracing::warn!(line = %line.id, error = %error, "could not record the phone's call");
        }
        Ok(events)
    }
}
