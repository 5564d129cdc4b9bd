//! The `android-gateway` kind: SMS Gateway for Android (capcom6/android-sms-gateway) in its
//! local-server mode, on a phone msgline reaches over HTTP with basic auth.
//!
//! Read from the app's source: `modules/localserver/WebService.kt` (routes, basic auth, the
//! unauthenticated `/health`), `routes/MessagesRoutes.kt` (`POST /message` answers 202, an id
//! that exists already answers 409; `GET /message/{id}` answers the message or 404),
//! `localserver/domain/messages/{PostMessageRequest,Message}.kt`, `domain/ProcessingState.kt`,
//! `routes/WebhooksRoutes.kt` and `modules/webhooks/WebHooksService.kt` (one event per webhook, a
//! POST with an id replaces that webhook), `routes/SettingsRoutes.kt` with
//! `modules/webhooks/WebhooksSettings.kt` (`PATCH /settings {"webhooks": {"signing_key"}}`),
//! `modules/webhooks/plugins/PayloadSingingPlugin.kt` (`X-Signature`: hex HMAC-SHA256 of the
//! body followed by `X-Timestamp`) and `modules/webhooks/payload/*.kt`.
//!
//! msgline's message id is the gateway's message id, so a repeated send is refused by the phone
//! (409, which msgline reads as "it has it") and a lookup by msgline's id finds it.

use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::Sha256;

use super::{
    BridgeEvent, BridgeEventPayload, CapabilitiesAnswer, ConversationSignal, GroupChangeRequest, GroupRequest,
    ReachabilityAnswer, SendRequest, StatusAnswer,
    adapter::{FileError, Hook, HookError, LineAdapter},
    call::{CallResult, SendOutcome, StatusLookup, answers, classify_error, describe, nobody_on_imessage},
};
use crate::{
    clock,
    db::{
        self, Db,
        lines::{Capabilities, Line},
    },
    domain::apikey,
};

/// What the gateway can do: SMS only (the dial-in phone's app is the same).
pub(super) const CAPABILITIES: Capabilities = Capabilities {
    imessage: false,
    sms: true,
    groups: false,
    polls: false,
    reactions: false,
    typing: false,
    read_receipts: false,
    // The gateway's API sends text and data SMS only, no MMS.
    media: false,
    mms: false,
    replies: false,
    edits: false,
    unsend: false,
    effects: false,
    batch: 0,
};
/// The events msgline registers a webhook for.
const EVENTS: [&str; 5] = ["sms:received", "sms:sent", "sms:delivered", "sms:failed", "mms:downloaded"];
/// How far a webhook's `X-Timestamp` may be from msgline's clock.
const MAX_SKEW_SECONDS: i64 = 300;

#[derive(Clone)]
pub struct AndroidGateway {
    http: reqwest::Client,
    timeout: Duration,
    /// `{public URL}/api/v1/messaging/bridge/hooks`.
    hooks: String,
    /// Where a line from before signing keys gets its own.
    db: Db,
}

impl AndroidGateway {
    pub fn new(http: reqwest::Client, timeout: Duration, hooks: String, db: Db) -> Self {
        Self { http, timeout, hooks, db }
    }

    fn request(&self, method: reqwest::Method, line: &Line, path: &str) -> reqwest::RequestBuilder {
        let settings = &line.bridge_settings;
        self.http
            .request(method, format!("{}{path}", line.bridge_url))
            .timeout(self.timeout)
            .basic_auth(settings.username.as_deref().unwrap_or_default(), settings.password.as_deref())
    }

    /// The webhook URL the phone is given: the hook route with the line's secret.
    pub fn hook_url(&self, line: &Line) -> String {
        format!("{}/{}?secret={}", self.hooks, line.id, line.bridge_settings.hook_secret)
    }

    /// `PATCH /settings`: the key the phone signs every webhook with.
    async fn set_signing_key(&self, line: &Line, key: &str) -> Result<(), String> {
        let settings = json!({"webhooks": {"signing_key": key}});
        check(self.request(reqwest::Method::PATCH, line, "/settings").json(&settings).send().await, "PATCH /settings")
    }

    /// Gives a line from before signing keys (its phone signs with the URL's secret) a key of its
    /// own: set on the phone first, then stored, so that webhooks signed the old way count until
    /// the phone has the new key. When another instance stored a key first, that one is set.
    async fn give_signing_key(&self, line: &Line) -> Result<(), String> {
        let fresh = apikey::random_secret("mls_");
        self.set_signing_key(line, &fresh).await?;
        let stored = db::lines::adopt_signing_key(&self.db, &line.id, &fresh)
            .await
            .map_err(|e| format!("storing the line's signing key: {e}"))?;
        if stored != fresh {
            return self.set_signing_key(line, &stored).await;
        }
        tracing::info!(line = %line.id, "gave the line a webhook signing key of its own");
        Ok(())
    }

    /// The key a webhook for `line` must be signed with. A line from before signing keys is read
    /// again (its cached copy may predate the key it was just given); until it has one, its
    /// phone still signs with the URL's secret.
    async fn signing_key(&self, line: &Line) -> String {
        if !line.bridge_settings.signing_key.is_empty() {
            return line.bridge_settings.signing_key.clone();
        }
        let stored = db::lines::get(&self.db, &line.id).await.ok().flatten().map(|l| l.bridge_settings);
        match stored {
            Some(settings) if !settings.signing_key.is_empty() => settings.signing_key,
            _ => line.bridge_settings.hook_secret.clone(),
        }
    }
}

fn check(response: Result<reqwest::Response, reqwest::Error>, what: &str) -> Result<(), String> {
    match response {
        Ok(r) if r.status().is_success() => Ok(()),
        Ok(r) => Err(format!("the gateway answered {} to {what}", r.status())),
        Err(e) => Err(format!("{what}: {}", describe(&e))),
    }
}

/// `GET /message/{id}`: the parts msgline reads.
#[derive(Deserialize)]
struct GatewayMessage {
    state: String,
    #[serde(default)]
    recipients: Vec<Recipient>,
}

#[derive(Deserialize)]
struct Recipient {
    #[serde(default)]
    error: Option<String>,
}

/// The gateway's processing state as msgline's status.
fn status_of(message: &GatewayMessage) -> StatusAnswer {
    let reason = message.recipients.iter().find_map(|r| r.error.clone());
    let (status, reason) = match message.state.as_str() {
        "Pending" | "Processed" => ("submitted", None),
        "Sent" => ("sent", None),
        "Delivered" => ("delivered", None),
        "Cancelling" | "Cancelled" => ("failed", Some("the message was cancelled on the phone".to_string())),
        _ => ("failed", Some(reason.unwrap_or_else(|| "the phone could not send the SMS".into()))),
    };
    StatusAnswer { id: String::new(), status: status.into(), reason }
}

/// A webhook delivery (`WebHookEventDTO`).
#[derive(Deserialize)]
struct Delivery {
    id: String,
    event: String,
    #[serde(default)]
    payload: Value,
}

fn text(payload: &Value, field: &str) -> Option<String> {
    payload.get(field).and_then(Value::as_str).map(str::to_string)
}

/// Checks `X-Signature` (hex HMAC-SHA256 keyed with `key` over the body and then `X-Timestamp`)
/// and that the timestamp is recent.
fn verify(key: &str, hook: &Hook<'_>) -> Result<(), HookError> {
    let unauthorized = |why: &str| Err(HookError::Unauthorized(why.to_string()));
    let (Some(signature), Some(timestamp)) = (hook.header("x-signature"), hook.header("x-timestamp")) else {
        return unauthorized("the webhook is not signed (X-Signature and X-Timestamp)");
    };
    let Ok(seconds) = timestamp.trim().parse::<i64>() else { return unauthorized("X-Timestamp is not a number") };
    // abs_diff: a timestamp near i64::MIN must not overflow the subtraction (found by fuzzing).
    if (clock::now_ms() / 1000).abs_diff(seconds) > MAX_SKEW_SECONDS.unsigned_abs() {
        return unauthorized("X-Timestamp is more than five minutes from now");
    }
    let Some(signature) = decode_hex(signature.trim()) else { return unauthorized("X-Signature is not hex") };
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("any key length");
    mac.update(hook.body);
    mac.update(timestamp.as_bytes());
    mac.verify_slice(&signature).or_else(|_| unauthorized("X-Signature does not match"))
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

impl LineAdapter for AndroidGateway {
    /// `/health` answers without credentials; a phone that answers is online.
    async fn capabilities(&self, line: &Line) -> Result<CapabilitiesAnswer, String> {
        let request = self.http.get(format!("{}/health", line.bridge_url)).timeout(self.timeout);
        answers(request, |status| format!("the gateway reports itself unhealthy ({status})")).await?;
        Ok(CapabilitiesAnswer { e164: line.e164.clone(), capabilities: CAPABILITIES })
    }

    /// SMS only: nobody is reachable over iMessage from this line.
    async fn reachability(&self, _line: &Line, handles: &[String]) -> Result<ReachabilityAnswer, String> {
        Ok(nobody_on_imessage(handles))
    }

    async fn send(&self, line: &Line, message: &SendRequest) -> CallResult<SendOutcome> {
        if message.chat.is_some() || message.to.len() != 1 {
            let reason = "an SMS Gateway for Android line sends to one number at a time; it has no group chats";
            return CallResult { outcome: SendOutcome::Rejected(reason.into()), http_status: None, latency_ms: 0 };
        }
        if message.reaction.is_some() {
            let reason = "an SMS Gateway for Android line sends SMS, which has no tapbacks";
            return CallResult { outcome: SendOutcome::Rejected(reason.into()), http_status: None, latency_ms: 0 };
        }
        let body = json!({
            "id": message.id,
            "textMessage": {"text": message.plain_text(true)},
            "phoneNumbers": message.to,
            "withDeliveryReport": true,
        });
        let started = Instant::now();
        // msgline checked the number already; the phone's own check is stricter about formats.
        let result =
            self.request(reqwest::Method::POST, line, "/message?skipPhoneValidation=true").json(&body).send().await;
        let (outcome, http_status) = match result {
            Err(error) => (classify_error(&error), None),
            Ok(response) => {
                let status = response.status();
                let answer: Option<Value> = response.json().await.ok();
                let said = answer.as_ref().and_then(|a| text(a, "message"));
                let outcome = match status {
                    // 409: a message with this id exists: the phone has it from an earlier call.
                    s if s.is_success() || s == StatusCode::CONFLICT => SendOutcome::Accepted,
                    StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                        SendOutcome::Rejected(format!("the gateway refused msgline's credentials ({status})"))
                    }
                    s if s.is_client_error() => SendOutcome::Rejected(
                        said.map(|m| format!("the gateway refused the message: {m}"))
                            .unwrap_or_else(|| format!("the gateway answered {status}")),
                    ),
                    s => SendOutcome::Unknown(format!("the gateway answered {s}")),
                };
                (outcome, Some(status.as_u16()))
            }
        };
        CallResult { outcome, http_status, latency_ms: started.elapsed().as_millis() as i64 }
    }

    async fn create_group(&self, _line: &Line, _group: &GroupRequest) -> CallResult<SendOutcome> {
        let reason = "an SMS Gateway for Android line cannot create group chats";
        CallResult { outcome: SendOutcome::Rejected(reason.into()), http_status: None, latency_ms: 0 }
    }

    async fn message_status(&self, line: &Line, id: &str) -> StatusLookup {
        let response = match self.request(reqwest::Method::GET, line, &format!("/message/{id}")).send().await {
            Ok(response) => response,
            Err(error) => return StatusLookup::Failed(describe(&error)),
        };
        match response.status() {
            StatusCode::NOT_FOUND => StatusLookup::NotFound,
            status if status.is_success() => match response.json::<GatewayMessage>().await {
                Ok(message) => StatusLookup::Known(StatusAnswer { id: id.to_string(), ..status_of(&message) }),
                Err(error) => StatusLookup::Failed(describe(&error)),
            },
            status => StatusLookup::Failed(format!("the gateway answered {status}")),
        }
    }

    async fn group_status(&self, _line: &Line, _id: &str) -> StatusLookup {
        StatusLookup::NotFound
    }

    async fn change_group(&self, _line: &Line, _change: &GroupChangeRequest) -> CallResult<SendOutcome> {
        let reason = "an SMS Gateway for Android line has no group chats";
        CallResult { outcome: SendOutcome::Rejected(reason.into()), http_status: None, latency_ms: 0 }
    }

    /// The phone sends an MMS's files inline in `mms:downloaded` (base64); `receive` hands each on
    /// as a `data:` URL, read back here. Nothing is fetched over the network: any other URL is
    /// refused.
    async fn fetch_file(&self, _line: &Line, url: &str, max_bytes: usize) -> Result<Vec<u8>, FileError> {
        use base64::Engine;
        let Some((_, data)) = url.strip_prefix("data:").and_then(|rest| rest.split_once(";base64,")) else {
            return Err(FileError::Refused("the gateway gives files inline only".into()));
        };
        if data.len() / 4 * 3 > max_bytes + 3 {
            return Err(FileError::TooLarge);
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| FileError::Unavailable(format!("the gateway's file is not base64: {e}")))?;
        if bytes.len() > max_bytes {
            return Err(FileError::TooLarge);
        }
        Ok(bytes)
    }

    async fn group_change_status(&self, _line: &Line, _group_id: &str, _change_id: &str) -> StatusLookup {
        StatusLookup::NotFound
    }

    /// The gateway sends SMS, which has no typing indicators (the API refuses before asking).
    async fn typing(&self, _line: &Line, _signal: &ConversationSignal) -> CallResult<SendOutcome> {
        let reason = "an SMS Gateway for Android line has no typing indicators";
        CallResult { outcome: SendOutcome::Rejected(reason.into()), http_status: None, latency_ms: 0 }
    }

    /// Nor read receipts.
    async fn mark_read(&self, _line: &Line, _signal: &ConversationSignal) -> CallResult<SendOutcome> {
        let reason = "an SMS Gateway for Android line has no read receipts";
        CallResult { outcome: SendOutcome::Rejected(reason.into()), http_status: None, latency_ms: 0 }
    }

    /// Sets the key the phone signs webhooks with, then registers one webhook per event (a
    /// webhook id of msgline's own, so registering again replaces rather than adds).
    async fn connect(&self, line: &Line) -> Result<(), String> {
        match line.bridge_settings.signing_key.as_str() {
            "" => self.give_signing_key(line).await?,
            key => self.set_signing_key(line, key).await?,
        }
        let url = self.hook_url(line);
        for event in EVENTS {
            let id = format!("msgline-{}-{}", line.id, event.replace(':', "-"));
            let body = json!({"id": id, "url": url, "event": event});
            check(self.request(reqwest::Method::POST, line, "/webhooks").json(&body).send().await, "POST /webhooks")?;
        }
        Ok(())
    }

    /// The phone retries a webhook a few times (its `retry_count` setting), then drops it.
    fn reports_may_be_lost(&self) -> bool {
        true
    }

    async fn receive(&self, line: &Line, hook: &Hook<'_>) -> Result<Vec<BridgeEvent>, HookError> {
        verify(&self.signing_key(line).await, hook)?;
        let delivery: Delivery = serde_json::from_slice(hook.body)
            .map_err(|e| HookError::Malformed(format!("not a gateway webhook: {e}")))?;
        let payload = &delivery.payload;
        let field = |name: &str| {
            text(payload, name).ok_or_else(|| HookError::Malformed(format!("{} has no payload.{name}", delivery.event)))
        };
        let status = |status: &str, reason: Option<String>| -> Result<Vec<BridgeEvent>, HookError> {
            let message_id = field("messageId")?;
            Ok(vec![BridgeEvent {
                id: format!("android:{}:{message_id}", delivery.event),
                payload: BridgeEventPayload::MessageStatus { message_id, status: status.into(), reason },
            }])
        };
        match delivery.event.as_str() {
            "sms:received" => Ok(vec![BridgeEvent {
                id: format!("android:{}", delivery.id),
                payload: BridgeEventPayload::Inbound {
                    // `sender` since the payload's `phoneNumber` was deprecated; older apps send only that.
                    from: text(payload, "sender").map_or_else(|| field("phoneNumber"), Ok)?,
                    body: field("message")?,
                    chat: None,
                    channel: "sms".into(),
                    message_id: None,
                    attachments: Vec::new(),
                    reply_to: None,
                    effect: None,
                    subject: None,
                },
            }]),
            // An MMS once the phone has downloaded it: its text parts joined as `body`, the other
            // parts as `attachments[]` (`contentType`, `name`, `data` in base64).
            "mms:downloaded" => {
                let files = payload.get("attachments").and_then(Value::as_array).into_iter().flatten();
                let attachments = files
                    .filter_map(|part| {
                        let data = text(part, "data")?;
                        let kind = text(part, "contentType").unwrap_or_else(|| "application/octet-stream".into());
                        Some(crate::bridge::InboundFile {
                            url: format!("data:{kind};base64,{data}"),
                            filename: text(part, "name"),
                            stored: None,
                        })
                    })
                    .collect();
                Ok(vec![BridgeEvent {
                    id: format!("android:{}", delivery.id),
                    payload: BridgeEventPayload::Inbound {
                        from: text(payload, "sender").map_or_else(|| field("phoneNumber"), Ok)?,
                        body: text(payload, "body").unwrap_or_default(),
                        chat: None,
                        channel: "sms".into(),
                        message_id: None,
                        attachments,
                        reply_to: None,
                        effect: None,
                        subject: None,
                    },
                }])
            }
            "sms:sent" => status("sent", None),
            "sms:delivered" => status("delivered", None),
            "sms:failed" => status(
                "failed",
                Some(text(payload, "reason").unwrap_or_else(|| "the phone could not send the SMS".into())),
            ),
            // system:ping, data SMS, an MMS not yet downloaded: nothing msgline shows.
            _ => Ok(Vec::new()),
        }
    }
}
