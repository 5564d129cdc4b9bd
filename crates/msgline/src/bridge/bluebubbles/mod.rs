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

mod wire;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{
    BridgeEvent, BridgeEventPayload, CapabilitiesAnswer, ConversationSignal, GroupChangeRequest, GroupRequest,
    ReachabilityAnswer, SendRequest, StatusAnswer,
    adapter::{FileError, Hook, HookError, LineAdapter},
    client::{CallResult, SendOutcome, StatusLookup, classify_error, describe, read_file},
};
use crate::{
    clock,
    db::{
        Db, bridge_refs,
        lines::{Capabilities, Line},
    },
};
use wire::{Envelope, MacMessage, direct_chat, expectation, is_group_chat, real_guid, target_guid};

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

    /// Sends one file into a chat through the server's attachment route, with `temp_guid`.
    async fn send_file(
        &self,
        line: &Line,
        chat: &str,
        temp_guid: &str,
        name: String,
        content_type: &str,
        bytes: Vec<u8>,
    ) -> Result<(StatusCode, Envelope), reqwest::Error> {
        let part = reqwest::multipart::Part::bytes(bytes)
            .file_name(name.clone())
            .mime_str(content_type)
            .unwrap_or_else(|_| reqwest::multipart::Part::bytes(Vec::new()));
        let form = reqwest::multipart::Form::new()
            .part("attachment", part)
            .text("name", name)
            .text("chatGuid", chat.to_string())
            .text("tempGuid", temp_guid.to_string())
            .text("method", "apple-script");
        self.call(self.request(reqwest::Method::POST, line, "/message/attachment").multipart(form)).await
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

    /// A group changed on the Mac: its name (`groupTitle`) or its participants as the event's
    /// chat lists them, for the group msgline knows by that chat.
    async fn group_changed(
        &self,
        line: &Line,
        kind: &str,
        message: &MacMessage<'_>,
        guid: &str,
    ) -> sqlx::Result<Vec<BridgeEvent>> {
        let Some(chat) = message.chat() else { return Ok(Vec::new()) };
        let Some(group_id) = bridge_refs::local_for(&self.db, &line.id, chat).await? else { return Ok(Vec::new()) };
        let (name, participants) = if kind == "group-name-change" {
            (Some(message.str("groupTitle").unwrap_or_default().to_string()), None)
        } else {
            let listed = message.0["chats"][0]["participants"].as_array();
            let phones: Vec<String> = listed
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("address").and_then(Value::as_str))
                .filter(|address| *address != line.e164)
                .map(str::to_string)
                .collect();
            if phones.is_empty() {
                return Ok(Vec::new());
            }
            (None, Some(phones))
        };
        Ok(vec![BridgeEvent {
            id: format!("bluebubbles:group:{guid}"),
            payload: BridgeEventPayload::GroupUpdated { group_id, name, participants },
        }])
    }

    /// The chat guid msgline knows for a group conversation.
    async fn group_chat(&self, line: &Line, conversation_id: &str) -> sqlx::Result<Option<String>> {
        let refs = bridge_refs::remotes_for(&self.db, &line.id, conversation_id).await?;
        Ok(real_guid(&refs).map(str::to_string))
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

    /// A media send: each file through the attachment route (the first with msgline's id as its
    /// temp guid, the next with `<id>-2`, ...), then the caption as a text of its own. The message
    /// stands or falls with its first file, which is what msgline matches and tracks; a later
    /// file or the caption that fails is logged.
    async fn send_media(&self, line: &Line, chat: &str, message: &SendRequest) -> CallResult<SendOutcome> {
        let failed = |outcome| CallResult { outcome, http_status: None, latency_ms: 0 };
        let mut files = Vec::with_capacity(message.attachments.len());
        for (n, file) in message.attachments.iter().enumerate() {
            let found = match crate::db::attachments::get_on_line(&self.db, &line.id, &file.id).await {
                Ok(found) => found,
                Err(error) => return failed(SendOutcome::Unreachable(error.to_string())),
            };
            let Some(found) = found else { return failed(SendOutcome::Rejected(format!("no file {}", file.id))) };
            let bytes = match self.media.get(&found.storage_key).await {
                Ok(Some(bytes)) => bytes,
                Ok(None) => return failed(SendOutcome::Rejected(format!("the file {} is no longer kept", file.id))),
                Err(error) => return failed(SendOutcome::Unreachable(error.to_string())),
            };
            // The name the Mac matches the sent message by: unique to this message.
            let name = match &file.filename {
                Some(name) => format!("{}-{n}-{name}", message.id),
                None => format!("{}-{n}", message.id),
            };
            files.push((name, file.content_type.clone(), bytes));
        }
        let Some((first_name, _, _)) = files.first() else { return failed(SendOutcome::Rejected("no files".into())) };
        let expected = expectation(chat, first_name);
        if let Err(error) =
            bridge_refs::record(&self.db, &line.id, &format!("{expected}{}", message.id), &message.id).await
        {
            return failed(SendOutcome::Unreachable(error.to_string()));
        }
        let started = Instant::now();
        let mut sent = None;
        for (n, (name, content_type, bytes)) in files.into_iter().enumerate() {
            let temp_guid = if n == 0 { message.id.clone() } else { format!("{}-{}", message.id, n + 1) };
            let result = self.send_file(line, chat, &temp_guid, name, &content_type, bytes).await;
            if n == 0 {
                let outcome = self.outcome(line, &message.id, started, result).await;
                if outcome.outcome != SendOutcome::Accepted {
                    return outcome;
                }
                sent = Some(outcome);
            } else if !matches!(&result, Ok((status, _)) if status.is_success()) {
                tracing::warn!(message = %message.id, file = n + 1, "a later file of the message did not go out");
            }
        }
        if !message.body.trim().is_empty() {
            let caption = self.send_text(line, chat, &format!("{}-caption", message.id), &message.body).await;
            if !matches!(&caption, Ok((status, _)) if status.is_success()) {
                tracing::warn!(message = %message.id, "the files went out but their caption did not");
            }
        }
        sent.unwrap_or_else(|| failed(SendOutcome::Rejected("no files".into())))
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

    /// Sends text into a chat with msgline's id as the temp guid.
    async fn send_text(
        &self,
        line: &Line,
        chat: &str,
        temp_guid: &str,
        text: &str,
    ) -> Result<(StatusCode, Envelope), reqwest::Error> {
        let body = json!({"chatGuid": chat, "tempGuid": temp_guid, "message": text, "method": "apple-script"});
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
        if !message.attachments.is_empty() {
            return self.send_media(line, &chat, message).await;
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
            let target = if reaction.target.starts_with("msg_") {
                match bridge_refs::remotes_for(&self.db, &line.id, &reaction.target).await {
                    Ok(refs) => real_guid(&refs).map(str::to_string),
                    Err(error) => {
                        let outcome = SendOutcome::Unreachable(error.to_string());
                        return CallResult { outcome, http_status: None, latency_ms: 0 };
                    }
                }
            } else {
                Some(reaction.target.clone())
            };
            let Some(target) = target else { return refused("the Mac has not named the message reacted to yet") };
            let tapback = if reaction.remove { format!("-{}", reaction.tapback) } else { reaction.tapback.clone() };
            let body = json!({"chatGuid": chat, "selectedMessageGuid": target, "reaction": tapback, "partIndex": 0});
            let result = self.call(self.request(reqwest::Method::POST, line, "/message/react").json(&body)).await;
            return self.outcome(line, &message.id, started, result).await;
        }
        let Some((file, vcard)) = card else {
            let result = self.send_text(line, &chat, &message.id, &text).await;
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
            let caption = self.send_text(line, &chat, &format!("{}-caption", message.id), &message.body).await;
            if !matches!(&caption, Ok((status, _)) if status.is_success()) {
                tracing::warn!(message = %message.id, "the card went out but its caption did not");
            }
        }
        sent
    }

    /// A new chat with its opening message, through the Private API (as the server requires).
    async fn create_group(&self, line: &Line, group: &GroupRequest) -> CallResult<SendOutcome> {
        let notes = [
            (format!("{}{}", expectation(NEW_CHAT, &group.body), group.message_id), group.message_id.as_str()),
            (format!("group:{}", group.message_id), group.id.as_str()),
        ];
        for (remote, local) in &notes {
            if let Err(error) = bridge_refs::record(&self.db, &line.id, remote, local).await {
                return CallResult {
                    outcome: SendOutcome::Unreachable(error.to_string()),
                    http_status: None,
                    latency_ms: 0,
                };
            }
        }
        let body = json!({
            "addresses": group.participants,
            "message": group.body,
            "method": "private-api",
            "service": "iMessage",
            "tempGuid": group.message_id,
        });
        let started = Instant::now();
        let result = self.call(self.request(reqwest::Method::POST, line, "/chat/new").json(&body)).await;
        if let Ok((status, envelope)) = &result
            && status.is_success()
            && let Some(chat) = envelope.data.get("guid").and_then(Value::as_str)
        {
            let opening = envelope.data.get("messages").and_then(Value::as_array).and_then(|m| m.first());
            let opening = opening.and_then(|m| MacMessage(m).guid().map(str::to_string));
            let recorded = async {
                bridge_refs::record(&self.db, &line.id, chat, &group.id).await?;
                if let Some(guid) = &opening {
                    bridge_refs::record(&self.db, &line.id, guid, &group.message_id).await?;
                }
                Ok::<(), sqlx::Error>(())
            };
            if let Err(error) = recorded.await {
                tracing::warn!(group = %group.id, error = %error, "could not record the group's chat guid");
            }
            return CallResult {
                outcome: SendOutcome::Accepted,
                http_status: Some(status.as_u16()),
                latency_ms: started.elapsed().as_millis() as i64,
            };
        }
        self.outcome(line, &group.message_id, started, result).await
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

    /// A group is created once its chat guid is known; its opening message tells.
    async fn group_status(&self, line: &Line, id: &str) -> StatusLookup {
        let refs = match bridge_refs::remotes_for(&self.db, &line.id, id).await {
            Ok(refs) => refs,
            Err(error) => return StatusLookup::Failed(error.to_string()),
        };
        if real_guid(&refs).is_some() {
            return StatusLookup::Known(StatusAnswer { id: id.to_string(), status: "created".into(), reason: None });
        }
        let Some(opening) = refs.iter().find_map(|(remote, _)| remote.strip_prefix("group:")) else {
            return StatusLookup::NotFound;
        };
        match self.lookup(line, opening).await {
            Ok(Some(answer)) if answer.status != "failed" => {
                StatusLookup::Known(StatusAnswer { id: id.to_string(), status: "created".into(), reason: None })
            }
            Ok(Some(answer)) => StatusLookup::Known(StatusAnswer { id: id.to_string(), ..answer }),
            Ok(None) => StatusLookup::NotFound,
            Err(error) => StatusLookup::Failed(error),
        }
    }

    /// Renames the group (`PUT /chat/:guid {displayName}`) and adds and removes participants
    /// (`POST /chat/:guid/participant/add|remove {address}`), one call each, through the Private
    /// API. The server waits up to 30 s for each step to show in the Mac's database and answers
    /// 500 if it has not: the step may still happen, so that is `unknown`, as is any failure after
    /// a step went through; the lookup then compares the chat with the change.
    async fn change_group(&self, line: &Line, change: &GroupChangeRequest) -> CallResult<SendOutcome> {
        let started = Instant::now();
        let done = |outcome: SendOutcome, http_status: Option<u16>| CallResult {
            outcome,
            http_status,
            latency_ms: started.elapsed().as_millis() as i64,
        };
        if change.name.as_deref() == Some("") {
            return done(
                SendOutcome::Rejected("a BlueBubbles line cannot remove a group's name, only change it".into()),
                None,
            );
        }
        let chat = match self.group_chat(line, &change.group_id).await {
            Ok(Some(chat)) => chat,
            Ok(None) => return done(SendOutcome::Rejected("the Mac has no chat for this group".into()), None),
            Err(error) => return done(SendOutcome::Unreachable(error.to_string()), None),
        };
        let segment = path_segment(&chat);
        let mut steps: Vec<(reqwest::Method, String, Value)> = Vec::new();
        if change.leave {
            steps.push((reqwest::Method::POST, format!("/chat/{segment}/leave"), json!({})));
        }
        if let Some(name) = &change.name {
            steps.push((reqwest::Method::PUT, format!("/chat/{segment}"), json!({"displayName": name})));
        }
        for (verb, phones) in [("add", &change.add), ("remove", &change.remove)] {
            for phone in phones {
                steps.push((
                    reqwest::Method::POST,
                    format!("/chat/{segment}/participant/{verb}"),
                    json!({"address": phone}),
                ));
            }
        }
        let mut applied = false;
        let mut last_status = None;
        for (method, path, body) in steps {
            let (status, envelope) = match self.call(self.request(method, line, &path).json(&body)).await {
                Ok(answer) => answer,
                Err(error) => {
                    let outcome = match classify_error(&error) {
                        SendOutcome::Unreachable(_) | SendOutcome::RetryLater if applied => SendOutcome::Unknown(
                            "part of the change went through before the Mac stopped answering".into(),
                        ),
                        outcome => outcome,
                    };
                    return done(outcome, last_status);
                }
            };
            last_status = Some(status.as_u16());
            if status.is_success() {
                applied = true;
                continue;
            }
            let reason = envelope.reason();
            let outcome = if (status.is_server_error() && !reason.contains("Private API")) || applied {
                SendOutcome::Unknown(format!("the BlueBubbles Server answered {status}: {reason}"))
            } else {
                SendOutcome::Rejected(format!("the BlueBubbles Server refused it: {reason}"))
            };
            return done(outcome, last_status);
        }
        done(SendOutcome::Accepted, last_status)
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
        let change = match crate::db::group_changes::get(&self.db, change_id).await {
            Ok(Some(change)) => change,
            Ok(None) => return StatusLookup::NotFound,
            Err(error) => return StatusLookup::Failed(error.to_string()),
        };
        let chat = match self.group_chat(line, group_id).await {
            Ok(Some(chat)) => chat,
            Ok(None) => return StatusLookup::NotFound,
            Err(error) => return StatusLookup::Failed(error.to_string()),
        };
        if change.leave {
            // The server answers a leave at once and keeps no trace of it that can be read back.
            if clock::now_ms() - change.created_at < self.grace() {
                return StatusLookup::Failed("a leave cannot be checked on the Mac yet".into());
            }
            let reason = "the Mac's answer was lost and a BlueBubbles Server cannot be asked whether the line left: \
                          leave again (leaving twice does no harm)";
            return StatusLookup::Known(StatusAnswer {
                id: change_id.to_string(),
                status: "failed".into(),
                reason: Some(reason.into()),
            });
        }
        let request = self
            .request(reqwest::Method::GET, line, &format!("/chat/{}", path_segment(&chat)))
            .query(&[("with", "participants")]);
        let (status, envelope) = match self.call(request).await {
            Ok(answer) => answer,
            Err(error) => return StatusLookup::Failed(describe(&error)),
        };
        if !status.is_success() {
            return StatusLookup::Failed(format!("the BlueBubbles Server answered {status}: {}", envelope.reason()));
        }
        let members: Vec<&str> = envelope.data["participants"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("address").and_then(Value::as_str))
            .collect();
        let named = change.name.as_deref().is_none_or(|name| envelope.data["displayName"].as_str() == Some(name));
        let shown = named
            && change.add.iter().all(|p| members.contains(&p.as_str()))
            && !change.remove.iter().any(|p| members.contains(&p.as_str()));
        let answer = |status: &str, reason: Option<String>| {
            StatusLookup::Known(StatusAnswer { id: change_id.to_string(), status: status.into(), reason })
        };
        if shown {
            answer("applied", None)
        } else if clock::now_ms() - change.created_at < self.grace() {
            StatusLookup::Failed("the Mac does not show the change yet".into())
        } else {
            answer("failed", Some("the Mac did not apply the change".into()))
        }
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
        let delivery: Value = serde_json::from_slice(hook.body)
            .map_err(|e| HookError::Malformed(format!("not a BlueBubbles webhook: {e}")))?;
        let kind = delivery.get("type").and_then(Value::as_str).unwrap_or_default();
        let data = delivery.get("data").cloned().unwrap_or(Value::Null);
        let message = MacMessage(&data);
        if kind == "typing-indicator" {
            // `{display, guid}`: the chat's guid; the server reports 1:1 chats only.
            let chat = data.get("guid").and_then(Value::as_str).unwrap_or_default();
            let Some((_, from)) = chat.split_once(";-;") else { return Ok(Vec::new()) };
            let typing = data.get("display").and_then(Value::as_bool).unwrap_or(false);
            return Ok(vec![BridgeEvent {
                id: format!("bluebubbles:typing:{chat}:{typing}:{}", clock::now_ms()),
                payload: BridgeEventPayload::Typing { from: from.to_string(), chat: None, typing },
            }]);
        }
        let Some(guid) = message.guid() else {
            // Read-state changes carry no message: nothing msgline shows.
            return Ok(Vec::new());
        };
        let storage = |e: sqlx::Error| HookError::Malformed(format!("could not read the line's records: {e}"));
        // A group's rename or membership change is a message row of its own (`itemType` 1, 2 or
        // 3, no text): reported as its own event, never as a text.
        let group_event = message.0.get("itemType").and_then(Value::as_i64).unwrap_or(0) != 0;
        if matches!(kind, "participant-added" | "participant-removed" | "participant-left" | "group-name-change") {
            return self.group_changed(line, kind, &message, guid).await.map_err(storage);
        }
        if group_event {
            return Ok(Vec::new());
        }
        match kind {
            "new-message" if !message.is_from_me() => {
                let Some(from) = message.0.get("handle").and_then(|h| h.get("address")).and_then(Value::as_str) else {
                    return Err(HookError::Malformed("new-message without handle.address".into()));
                };
                if let Some(associated) = message.str("associatedMessageGuid").filter(|g| !g.is_empty()) {
                    // A tapback: `associatedMessageType` names it (`love`, `-love` to take it back);
                    // other associated messages (stickers, edits) are not carried.
                    let kind = message.str("associatedMessageType").unwrap_or_default();
                    let (removed, tapback) = match kind.strip_prefix('-') {
                        Some(rest) => (true, rest),
                        None => (false, kind),
                    };
                    if tapback.parse::<crate::domain::lifecycle::Tapback>().is_err() {
                        return Ok(Vec::new());
                    }
                    let chat = match message.chat().filter(|c| is_group_chat(c)) {
                        Some(chat) => bridge_refs::local_for(&self.db, &line.id, chat).await.map_err(storage)?,
                        None => None,
                    };
                    return Ok(vec![BridgeEvent {
                        id: format!("bluebubbles:in:{guid}"),
                        payload: BridgeEventPayload::Reaction {
                            from: from.to_string(),
                            target: target_guid(associated).to_string(),
                            reaction: tapback.to_string(),
                            removed,
                            chat,
                            message_id: Some(guid.to_string()),
                        },
                    }]);
                }
                let chat_guid = message.chat();
                let chat = match chat_guid.filter(|c| is_group_chat(c)) {
                    Some(chat) => bridge_refs::local_for(&self.db, &line.id, chat).await.map_err(storage)?,
                    None => None,
                };
                let sms = message.0.get("handle").and_then(|h| h.get("service")).and_then(Value::as_str) == Some("SMS")
                    || chat_guid.is_some_and(|c| c.starts_with("SMS;"));
                let body = message.str("text").unwrap_or_default().replace('\u{fffc}', "").trim().to_string();
                // Its files, fetched by their guid from the server's download route.
                let attachments: Vec<crate::bridge::InboundFile> = message
                    .0
                    .get("attachments")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|a| {
                        let guid = a.get("guid").and_then(Value::as_str)?;
                        let filename = a.get("transferName").and_then(Value::as_str).map(str::to_string);
                        Some(crate::bridge::InboundFile { url: guid.to_string(), filename, stored: None })
                    })
                    .collect();
                Ok(vec![BridgeEvent {
                    id: format!("bluebubbles:in:{guid}"),
                    payload: BridgeEventPayload::Inbound {
                        from: from.to_string(),
                        body,
                        chat,
                        channel: if sms { "sms".into() } else { "imessage".into() },
                        message_id: Some(guid.to_string()),
                        attachments,
                    },
                }])
            }
            "new-message" | "updated-message" | "message-send-error" => {
                let Some(id) = self.our_id(line, &message).await.map_err(storage)? else {
                    // A message sent from the Mac itself, not through msgline.
                    return Ok(Vec::new());
                };
                let (status, reason) = message.status();
                Ok(vec![BridgeEvent {
                    id: format!("bluebubbles:{status}:{guid}"),
                    payload: BridgeEventPayload::MessageStatus { message_id: id, status: status.into(), reason },
                }])
            }
            _ => Ok(Vec::new()),
        }
    }
}

/// A chat guid as one segment of a path: `;` and `+` (and anything else but letters, digits
/// and `-._~`) percent-encoded.
fn path_segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
