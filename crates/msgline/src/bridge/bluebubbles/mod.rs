//! The `bluebubbles` kind: a BlueBubbles Server on a Mac signed in to iMessage, reached over its
//! REST API (`/api/v1`, the server password as the `password` query parameter).
//!
//! Read from the server's source (packages/server/src/server/): `api/http/api/v1/httpRoutes.ts`
//! (routes), `middleware/authMiddleware.ts` (the password in the query), `responses/*.ts` (the
//! `{status, message, data, error}` envelope; a failed send is a 500 whose `data.error` is the
//! iMessage error code), `routers/messageRouter.ts` with `validators/messageValidator.ts` (a send
//! is synchronous and answers the sent message; a `tempGuid` still being sent is refused with 400;
//! the temp guid is not stored on the Mac, so a finished send repeated is sent twice),
//! `routers/chatRouter.ts` with `api/interfaces/chatInterface.ts` (a group is created with its
//! opening message, through the Private API; renamed with `PUT /chat/:guid {displayName}` and its
//! participants added and removed one `{address}` at a time, each waited for up to 30 s and a 500
//! when the Mac's database does not show it by then; `POST /chat/:guid/leave`, answered at once;
//! `GET /chat/:guid?with=participants`),
//! `databases/imessage/pollers/MessagePoller.ts` (a group change is a message row without text:
//! `itemType` 1 with `groupActionType` 0/1 added/removed, 2 renamed with `groupTitle`, 3 left,
//! posted as `participant-added`, `participant-removed`, `group-name-change`, `participant-left`), `routers/handleRouter.ts` (iMessage availability,
//! Private API only), `routers/webhookRouter.ts` and `services/webhookService` (registration,
//! unsigned `{type, data}` deliveries), `api/serializers/MessageSerializer.ts` (message fields).
//!
//! Because a repeated send is a second text, msgline never sends a message to the Mac twice:
//! before a send it records what it expects to see (`sent:<digest>:<msg id>`, the digest of the
//! chat and the text), and a message the Mac reports without msgline's id — a webhook ahead of the
//! send's answer, or a send whose answer never came — is matched to it. A message the Mac has no
//! record of once its own send wait is over is `failed`, not sent again.
//!
//! Replies, effects and subjects, and edits and unsends, go through the Private API (`actions`).

mod actions;
mod groups;
mod hooks;
mod media;
mod wire;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{
    ActionRequest, BridgeEvent, BridgeEventPayload, CapabilitiesAnswer, ConversationSignal, GroupChangeRequest,
    GroupRequest, ReachabilityAnswer, SendRequest, StatusAnswer,
    adapter::{FileError, Hook, HookError, LineAdapter},
    call::{CallResult, SendOutcome, StatusLookup, classify_error, describe, read_file},
};
use crate::{
    clock,
    db::{
        Db, bridge_refs,
        lines::{Capabilities, Line},
    },
};
use wire::{
    Envelope, MacMessage, direct_chat, edits_allowed, expectation, is_group_chat, path_segment, real_guid, target_guid,
};

/// The webhook events msgline registers for.
const EVENTS: [&str; 8] = [
    "new-message",
    "updated-message",
    "message-send-error",
    "participant-added",
    "participant-removed",
    "participant-left",
    "group-name-change",
    "typing-indicator",
];
/// How long the server itself waits for a sent message to appear in the Mac's database.
const SERVER_SEND_WAIT: Duration = Duration::from_secs(60);
/// How long a typing indicator msgline shows on the Mac stays up.
const TYPING_SHOWS: Duration = Duration::from_secs(5);
/// The chat part of the digest of a group's opening message, whose chat has no guid yet.
const NEW_CHAT: &str = "new";

#[derive(Clone)]
pub struct BlueBubbles {
    http: reqwest::Client,
    timeout: Duration,
    db: Db,
    /// `{public URL}/api/v1/messaging/bridge/hooks`.
    hooks: String,
    /// Held while a message the Mac reports is matched to what msgline expected, so that two
    /// webhooks about one message arriving together cannot both miss it (or both claim one).
    matching: Arc<tokio::sync::Mutex<()>>,
    /// Where the files of a media send are: the server takes their bytes, not a URL.
    media: crate::media::MediaStore,
}

impl BlueBubbles {
    pub fn new(
        http: reqwest::Client,
        timeout: Duration,
        db: Db,
        hooks: String,
        media: crate::media::MediaStore,
    ) -> Self {
        Self { http, timeout, db, hooks, matching: Arc::default(), media }
    }

    fn request(&self, method: reqwest::Method, line: &Line, path: &str) -> reqwest::RequestBuilder {
        let password = line.bridge_settings.password.as_deref().unwrap_or_default();
        self.http
            .request(method, format!("{}/api/v1{path}", line.bridge_url))
            .query(&[("password", password)])
            .timeout(self.timeout)
    }

    fn hook_url(&self, line: &Line) -> String {
        format!("{}/{}?secret={}", self.hooks, line.id, line.bridge_settings.hook_secret)
    }

    /// A call and its envelope; `Err` when it never got an answer.
    async fn call(&self, request: reqwest::RequestBuilder) -> Result<(StatusCode, Envelope), reqwest::Error> {
        let response = request.send().await?;
        let status = response.status();
        let envelope = response.json::<Envelope>().await.unwrap_or_default();
        Ok((status, envelope))
    }

    /// How long after the expectation was recorded the Mac may still be sending.
    fn grace(&self) -> i64 {
        (SERVER_SEND_WAIT + self.timeout * 2).as_millis() as i64
    }

    /// Reads a send's answer, recording the guid the Mac gave the message.
    async fn outcome(
        &self,
        line: &Line,
        id: &str,
        started: Instant,
        result: Result<(StatusCode, Envelope), reqwest::Error>,
    ) -> CallResult<SendOutcome> {
        let (outcome, http_status) = match result {
            Err(error) => (classify_error(&error), None),
            Ok((status, envelope)) => {
                let message = MacMessage(&envelope.data);
                if let Some(guid) = message.guid()
                    && let Err(error) = bridge_refs::record(&self.db, &line.id, guid, id).await
                {
                    tracing::warn!(message = id, error = %error, "could not record the Mac's guid; a lookup will find it");
                }
                let outcome = match status {
                    s if s.is_success() => SendOutcome::Accepted,
                    StatusCode::BAD_REQUEST if envelope.reason().contains("already queued") => {
                        SendOutcome::Unknown("the Mac is still sending an earlier call of this message".into())
                    }
                    StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                        SendOutcome::Rejected("the BlueBubbles Server refused msgline's password".into())
                    }
                    s if s.is_client_error() => {
                        SendOutcome::Rejected(format!("the BlueBubbles Server refused it: {}", envelope.reason()))
                    }
                    _ if message.error_code() != 0 => SendOutcome::Rejected(message.status().1.unwrap_or_default()),
                    s => SendOutcome::Unknown(format!("the BlueBubbles Server answered {s}: {}", envelope.reason())),
                };
                (outcome, Some(status.as_u16()))
            }
        };
        CallResult { outcome, http_status, latency_ms: started.elapsed().as_millis() as i64 }
    }

    /// Looks on the Mac for the message msgline expected under `prefix` (recorded at `since`):
    /// the first message from the line since then whose digest matches and that no other msgline
    /// message has claimed.
    async fn find_expected(
        &self,
        line: &Line,
        prefix: &str,
        chat: Option<&str>,
        since: i64,
    ) -> Result<Option<Value>, String> {
        let mut query = json!({
            "after": since - 60_000,
            "sort": "ASC",
            "limit": 1000,
            "with": ["chats", "attachments", "attributedBody"],
        });
        if let Some(chat) = chat {
            query["chatGuid"] = json!(chat);
        }
        let (status, envelope) = self
            .call(self.request(reqwest::Method::POST, line, "/message/query").json(&query))
            .await
            .map_err(|e| describe(&e))?;
        if !status.is_success() {
            return Err(format!("the BlueBubbles Server answered {status} to a message query"));
        }
        for candidate in envelope.data.as_array().into_iter().flatten() {
            let message = MacMessage(candidate);
            let (Some(guid), Some(chat)) = (message.guid(), message.chat()) else { continue };
            if !message.is_from_me() {
                continue;
            }
            let text = message.match_text();
            if expectation(chat, &text) != prefix && expectation(NEW_CHAT, &text) != prefix {
                continue;
            }
            let claimed = bridge_refs::local_for(&self.db, &line.id, guid).await.map_err(|e| e.to_string())?;
            if claimed.is_none() {
                return Ok(Some(candidate.clone()));
            }
        }
        Ok(None)
    }

    /// Records the guids of a message the Mac reports: the message's, and for a group's opening
    /// message the new chat's.
    async fn name(&self, line: &Line, id: &str, message: &MacMessage<'_>) -> sqlx::Result<()> {
        if let Some(guid) = message.guid() {
            bridge_refs::record(&self.db, &line.id, guid, id).await?;
        }
        if let Some(chat) = message.chat().filter(|chat| is_group_chat(chat))
            && let Some(group) = bridge_refs::local_for(&self.db, &line.id, &format!("group:{id}")).await?
        {
            bridge_refs::record(&self.db, &line.id, chat, &group).await?;
        }
        Ok(())
    }

    /// msgline's id of a message the Mac sent: by its guid, else by what msgline expected.
    async fn our_id(&self, line: &Line, message: &MacMessage<'_>) -> sqlx::Result<Option<String>> {
        let Some(guid) = message.guid() else { return Ok(None) };
        if let Some(id) = bridge_refs::local_for(&self.db, &line.id, guid).await? {
            return Ok(Some(id));
        }
        let Some(chat) = message.chat() else { return Ok(None) };
        let _matching = self.matching.lock().await;
        // Another webhook about the same message may have named it while this one waited.
        if let Some(id) = bridge_refs::local_for(&self.db, &line.id, guid).await? {
            return Ok(Some(id));
        }
        let text = message.match_text();
        let known_chat = !is_group_chat(chat) || bridge_refs::local_for(&self.db, &line.id, chat).await?.is_some();
        let prefix = if known_chat { expectation(chat, &text) } else { expectation(NEW_CHAT, &text) };
        let Some((id, _)) = bridge_refs::first_unnamed(&self.db, &line.id, &prefix).await? else { return Ok(None) };
        self.name(line, &id, message).await?;
        Ok(Some(id))
    }

    /// Where a message msgline handed to the Mac stands, looked up by guid or by expectation.
    async fn lookup(&self, line: &Line, id: &str) -> Result<Option<StatusAnswer>, String> {
        let refs = bridge_refs::remotes_for(&self.db, &line.id, id).await.map_err(|e| e.to_string())?;
        let known = |message: &MacMessage<'_>| {
            let (status, reason) = message.status();
            StatusAnswer { id: id.to_string(), status: status.into(), reason }
        };
        if let Some(guid) = real_guid(&refs) {
            let (status, envelope) = self
                .call(self.request(reqwest::Method::GET, line, &format!("/message/{guid}")))
                .await
                .map_err(|e| describe(&e))?;
            return match status {
                s if s.is_success() => Ok(Some(known(&MacMessage(&envelope.data)))),
                s => Err(format!("the BlueBubbles Server answered {s} for message {guid}")),
            };
        }
        let Some((prefix, since)) = refs.iter().find_map(|(remote, at)| {
            remote
                .strip_prefix("sent:")
                .and_then(|rest| rest.split_once(':'))
                .map(|(hex, _)| (format!("sent:{hex}:"), *at))
        }) else {
            return Ok(None);
        };
        let _matching = self.matching.lock().await;
        match self.find_expected(line, &prefix, None, since).await? {
            Some(found) => {
                let message = MacMessage(&found);
                self.name(line, id, &message).await.map_err(|e| e.to_string())?;
                Ok(Some(known(&message)))
            }
            None if clock::now_ms() - since > self.grace() => Ok(Some(StatusAnswer {
                id: id.to_string(),
                status: "failed".into(),
                reason: Some("the Mac has no record of sending it; msgline does not send it again".into()),
            })),
            None => Err("the Mac has not reported the message yet".into()),
        }
    }

    /// A call about a whole chat (`/chat/:guid/<what>`), answered like a send.
    async fn chat_call(
        &self,
        line: &Line,
        signal: &ConversationSignal,
        method: reqwest::Method,
        what: &str,
    ) -> CallResult<SendOutcome> {
        let failed = |outcome| CallResult { outcome, http_status: None, latency_ms: 0 };
        let chat = match (&signal.chat, signal.to.as_slice()) {
            (Some(group), _) => match self.group_chat(line, group).await {
                Ok(Some(chat)) => chat,
                Ok(None) => {
                    return failed(SendOutcome::Rejected("msgline knows no BlueBubbles chat for this group".into()));
                }
                Err(error) => return failed(SendOutcome::Unreachable(error.to_string())),
            },
            (None, [handle]) => direct_chat("imessage", handle),
            (None, _) => return failed(SendOutcome::Rejected("name one handle or a group".into())),
        };
        let started = Instant::now();
        let path = format!("/chat/{}/{what}", path_segment(&chat));
        let (outcome, http_status) = match self.call(self.request(method, line, &path)).await {
            Err(error) => (classify_error(&error), None),
            Ok((status, envelope)) => {
                let outcome = if status.is_success() {
                    SendOutcome::Accepted
                } else if status.is_client_error() {
                    SendOutcome::Rejected(format!("the BlueBubbles Server refused it: {}", envelope.reason()))
                } else {
                    // The Private API not connected answers 500 with the reason.
                    SendOutcome::Rejected(format!("the BlueBubbles Server answered {status}: {}", envelope.reason()))
                };
                (outcome, Some(status.as_u16()))
            }
        };
        CallResult { outcome, http_status, latency_ms: started.elapsed().as_millis() as i64 }
    }

    /// Sends text into a chat with msgline's id as the temp guid: through AppleScript, or with
    /// `private_api` fields (a reply, an effect, a subject) through the Private API.
    async fn send_text(
        &self,
        line: &Line,
        chat: &str,
        temp_guid: &str,
        text: &str,
        private_api: Option<&Value>,
    ) -> Result<(StatusCode, Envelope), reqwest::Error> {
        let mut body = json!({"chatGuid": chat, "tempGuid": temp_guid, "message": text, "method": "apple-script"});
        if let (Some(body), Some(Value::Object(fields))) = (body.as_object_mut(), private_api) {
            body.extend(fields.clone());
            body.insert("method".into(), json!("private-api"));
        }
        self.call(self.request(reqwest::Method::POST, line, "/message/text").json(&body)).await
    }
}

impl LineAdapter for BlueBubbles {
    /// iMessage and SMS (through the Mac's iPhone); groups, tapbacks, typing indicators and read
    /// receipts only while the Private API helper is connected; never native polls.
    async fn capabilities(&self, line: &Line) -> Result<CapabilitiesAnswer, String> {
        let (status, envelope) =
            self.call(self.request(reqwest::Method::GET, line, "/server/info")).await.map_err(|e| describe(&e))?;
        if !status.is_success() {
            return Err(format!("the BlueBubbles Server answered {status}: {}", envelope.reason()));
        }
        let flag = |name: &str| envelope.data.get(name).and_then(Value::as_bool).unwrap_or(false);
        let private_api = flag("private_api") && flag("helper_connected");
        Ok(CapabilitiesAnswer {
            e164: line.e164.clone(),
            capabilities: Capabilities {
                imessage: true,
                sms: true,
                groups: private_api,
                polls: false,
                reactions: private_api,
                typing: private_api,
                read_receipts: private_api,
                // Files go through the server's attachment route (AppleScript, no helper needed), over
                // iMessage and, through the Mac's iPhone, SMS.
                media: true,
                mms: true,
                // Replies, effects and subjects go through the Private API's send; edits and
                // unsends too, on macOS 13 (Ventura) or later only.
                replies: private_api,
                effects: private_api,
                edits: private_api && edits_allowed(&envelope.data),
                unsend: private_api && edits_allowed(&envelope.data),
                batch: 0,
            },
        })
    }

    /// Asks the server (its Private API) whether each handle has iMessage.
    async fn reachability(&self, line: &Line, handles: &[String]) -> Result<ReachabilityAnswer, String> {
        let mut answer = ReachabilityAnswer { imessage: Default::default() };
        for handle in handles {
            let request =
                self.request(reqwest::Method::GET, line, "/handle/availability/imessage").query(&[("address", handle)]);
            let (status, envelope) = self.call(request).await.map_err(|e| describe(&e))?;
            let available = envelope.data.get("available").and_then(Value::as_bool);
            match available {
                Some(available) if status.is_success() => answer.imessage.insert(handle.clone(), available),
                _ => return Err(format!("the BlueBubbles Server could not say ({status}): {}", envelope.reason())),
            };
        }
        Ok(answer)
    }

    async fn send(&self, line: &Line, message: &SendRequest) -> CallResult<SendOutcome> {
        let refused = |reason: &str| CallResult {
            outcome: SendOutcome::Rejected(reason.into()),
            http_status: None,
            latency_ms: 0,
        };
        let chat = match (&message.chat, message.to.as_slice()) {
            (Some(group), _) => match self.group_chat(line, group).await {
                Ok(Some(chat)) => chat,
                Ok(None) => return refused("msgline knows no BlueBubbles chat for this group"),
                Err(error) => {
                    return CallResult {
                        outcome: SendOutcome::Unreachable(error.to_string()),
                        http_status: None,
                        latency_ms: 0,
                    };
                }
            },
            (None, [handle]) => direct_chat(&message.channel, handle),
            (None, _) => return refused("a direct message goes to exactly one handle"),
        };
        let private_api = match self.private_api_fields(line, message).await {
            Ok(fields) => fields,
            Err(outcome) => return CallResult { outcome, http_status: None, latency_ms: 0 },
        };
        if !message.attachments.is_empty() {
            return self.send_media(line, &chat, message, private_api.as_ref()).await;
        }
        let card = match (message.kind.as_str(), &message.vcard) {
            ("contact_card", Some(vcard)) => Some((format!("{}.vcf", message.id), vcard.clone())),
            _ => None,
        };
        let text = message.plain_text(false);
        let expected = match &card {
            Some((file, _)) => expectation(&chat, file),
            None => expectation(&chat, &text),
        };
        // Recorded before the call: whatever the Mac reports can be matched to this message.
        if let Err(error) =
            bridge_refs::record(&self.db, &line.id, &format!("{expected}{}", message.id), &message.id).await
        {
            return CallResult {
                outcome: SendOutcome::Unreachable(error.to_string()),
                http_status: None,
                latency_ms: 0,
            };
        }
        let started = Instant::now();
        if let Some(reaction) = &message.reaction {
            // The tapback names its target by the Mac's guid: one msgline recorded for a message it
            // sent, or the guid an inbound message arrived with.
            let target = match self.mac_guid(line, &reaction.target).await {
                Ok(target) => target,
                Err(error) => {
                    let outcome = SendOutcome::Unreachable(error.to_string());
                    return CallResult { outcome, http_status: None, latency_ms: 0 };
                }
            };
            let Some(target) = target else { return refused("the Mac has not named the message reacted to yet") };
            let tapback = if reaction.remove { format!("-{}", reaction.tapback) } else { reaction.tapback.clone() };
            let body = json!({"chatGuid": chat, "selectedMessageGuid": target, "reaction": tapback, "partIndex": 0});
            let result = self.call(self.request(reqwest::Method::POST, line, "/message/react").json(&body)).await;
            return self.outcome(line, &message.id, started, result).await;
        }
        let Some((file, vcard)) = card else {
            let result = self.send_text(line, &chat, &message.id, &text, private_api.as_ref()).await;
            return self.outcome(line, &message.id, started, result).await;
        };
        let part = reqwest::multipart::Part::bytes(vcard.into_bytes())
            .file_name(file.clone())
            .mime_str("text/vcard")
            .expect("a valid mime type");
        let form = reqwest::multipart::Form::new()
            .part("attachment", part)
            .text("name", file)
            .text("chatGuid", chat.clone())
            .text("tempGuid", message.id.clone())
            .text("method", "apple-script");
        let result = self.call(self.request(reqwest::Method::POST, line, "/message/attachment").multipart(form)).await;
        let sent = self.outcome(line, &message.id, started, result).await;
        // The caption follows the card as its own text; its fate does not change the card's.
        if sent.outcome == SendOutcome::Accepted && !message.body.trim().is_empty() {
            let caption_id = format!("{}-caption", message.id);
            let caption = self.send_text(line, &chat, &caption_id, &message.body, private_api.as_ref()).await;
            if !matches!(&caption, Ok((status, _)) if status.is_success()) {
                tracing::warn!(message = %message.id, "the card went out but its caption did not");
            }
        }
        sent
    }

    async fn create_group(&self, line: &Line, group: &GroupRequest) -> CallResult<SendOutcome> {
        self.create_group_chat(line, group).await
    }

    /// `POST /chat/:guid/typing` to show the indicator, `DELETE` to hide it (Private API). The
    /// Mac keeps showing it until told, so msgline hides it after a few seconds.
    async fn typing(&self, line: &Line, signal: &ConversationSignal) -> CallResult<SendOutcome> {
        if signal.typing == Some(false) {
            return self.chat_call(line, signal, reqwest::Method::DELETE, "typing").await;
        }
        let shown = self.chat_call(line, signal, reqwest::Method::POST, "typing").await;
        if shown.outcome == SendOutcome::Accepted {
            let (adapter, line, signal) = (self.clone(), line.clone(), signal.clone());
            tokio::spawn(async move {
                tokio::time::sleep(TYPING_SHOWS).await;
                let hide = ConversationSignal { typing: Some(false), ..signal };
                adapter.chat_call(&line, &hide, reqwest::Method::DELETE, "typing").await;
            });
        }
        shown
    }

    /// `POST /chat/:guid/read` (Private API).
    async fn mark_read(&self, line: &Line, signal: &ConversationSignal) -> CallResult<SendOutcome> {
        self.chat_call(line, signal, reqwest::Method::POST, "read").await
    }

    async fn message_status(&self, line: &Line, id: &str) -> StatusLookup {
        match self.lookup(line, id).await {
            Ok(Some(answer)) => StatusLookup::Known(answer),
            Ok(None) => StatusLookup::NotFound,
            Err(error) => StatusLookup::Failed(error),
        }
    }

    async fn group_status(&self, line: &Line, id: &str) -> StatusLookup {
        self.group_created(line, id).await
    }

    async fn change_group(&self, line: &Line, change: &GroupChangeRequest) -> CallResult<SendOutcome> {
        self.apply_group_change(line, change).await
    }

    /// Whether the chat now shows the change (`GET /chat/:guid?with=participants`). A change not
    /// shown yet is asked about again while the Mac may still be applying it, then is `failed`.
    /// A file of a message that arrived, by its attachment guid: `GET /attachment/:guid/download`.
    async fn fetch_file(&self, line: &Line, guid: &str, max_bytes: usize) -> Result<Vec<u8>, FileError> {
        let path = format!("/attachment/{}/download", path_segment(guid));
        let request = self.request(reqwest::Method::GET, line, &path).timeout(self.timeout * 6);
        read_file(request, max_bytes, |status| format!("the BlueBubbles Server answered {status}")).await
    }

    async fn group_change_status(&self, line: &Line, group_id: &str, change_id: &str) -> StatusLookup {
        self.group_change_shown(line, group_id, change_id).await
    }

    /// `POST /message/:guid/edit` or `/unsend` (Private API, macOS 13 and later).
    async fn act(&self, line: &Line, action: &ActionRequest) -> CallResult<SendOutcome> {
        self.edit_or_unsend(line, action).await
    }

    /// Whether the Mac's message shows the edit or unsend (`GET /message/:guid`).
    async fn action_status(&self, line: &Line, action: &ActionRequest) -> StatusLookup {
        self.action_shown(line, action).await
    }

    /// Registers msgline's webhook unless the server has it already.
    async fn connect(&self, line: &Line) -> Result<(), String> {
        let url = self.hook_url(line);
        let listed = self.request(reqwest::Method::GET, line, "/webhook").query(&[("url", &url)]);
        let (status, envelope) = self.call(listed).await.map_err(|e| describe(&e))?;
        if !status.is_success() {
            return Err(format!("the BlueBubbles Server answered {status} listing webhooks: {}", envelope.reason()));
        }
        let registered = envelope.data.as_array().into_iter().flatten().any(|hook| {
            hook.get("url").and_then(Value::as_str) == Some(url.as_str())
                && EVENTS.iter().all(|event| {
                    hook.get("events").and_then(Value::as_array).is_some_and(|e| e.iter().any(|v| v == event))
                })
        });
        if registered {
            return Ok(());
        }
        let body = json!({"url": url, "events": EVENTS});
        let (status, envelope) = self
            .call(self.request(reqwest::Method::POST, line, "/webhook").json(&body))
            .await
            .map_err(|e| describe(&e))?;
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("the BlueBubbles Server answered {status} registering a webhook: {}", envelope.reason()))
        }
    }

    /// The server posts each webhook once and forgets it (`services/webhookService`).
    fn reports_may_be_lost(&self) -> bool {
        true
    }

    async fn receive(&self, line: &Line, hook: &Hook<'_>) -> Result<Vec<BridgeEvent>, HookError> {
        self.read_webhook(line, hook).await
    }
}
