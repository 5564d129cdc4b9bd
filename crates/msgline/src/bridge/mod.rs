//! The line bridge protocol, both ways (docs/bridge-protocol.md is its reference):
//! msgline calls the bridge with [`client::BridgeClient`]; the bridge calls back at
//! `POST /api/v1/messaging/bridge/events` with [`BridgeEvent`]s. The simulator, a complete bridge
//! for one simulated phone line, is a crate of its own (crates/msgline-sim); it speaks these types
//! through [`crate::bridge_protocol`].
//!
//! A line's *bridge kind* says how msgline reaches its device: this protocol ([`protocol`]), a
//! BlueBubbles Server ([`bluebubbles`]) or SMS Gateway for Android ([`android`]); each is a
//! [`adapter::LineAdapter`], and [`client::BridgeClient`] picks the line's.

pub mod adapter;
pub mod android;
pub mod batch;
pub mod bluebubbles;
pub mod call;
pub mod client;
pub mod dial_in;
pub mod directory;
pub mod kannel;
pub mod protocol;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    db::lines::Capabilities,
    domain::{MAX_HANDLE_CHARS, MAX_TEXT_CHARS},
};

/// `GET /v1/capabilities` answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CapabilitiesAnswer {
    pub e164: String,
    pub capabilities: Capabilities,
}

/// `POST /v1/messages` body: one outbound message. `id` is msgline's message id; a bridge
/// that receives an id it has seen before must not send again and answers as it did the first time.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SendRequest {
    pub id: String,
    /// Recipients of a direct message (one number).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to: Vec<String>,
    /// The group conversation a group message goes to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<String>,
    pub channel: String,
    pub kind: String,
    pub body: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vcard: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll: Option<crate::domain::payload::PollSummary>,
    /// For `reaction`: the tapback and the message it reacts to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reaction: Option<ReactionRequest>,
    /// For `media`: the files, each fetched from msgline by the bridge.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachmentRef>,
    /// The message this one answers (an inline reply, iMessage only), by the line's name for it:
    /// msgline's `msg_` id for a message msgline sent, else the `message_id` the bridge gave the
    /// inbound message. Only sent to a line whose capabilities say `replies`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    /// The bubble or screen effect (msgline's name: `slam`, `invisible_ink`, `confetti`, …).
    /// Only sent to a line whose capabilities say `effects`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    /// The iMessage subject line, shown in bold above the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

/// `POST /v1/messages/{message_id}/edit` and `POST /v1/messages/{message_id}/unsend` body: an
/// edit (with `body`) or an unsend of a message msgline sent. `id` is msgline's `mac_` id of the
/// action: a bridge that receives an id it has seen before does not apply it again and answers
/// as it did the first time. `GET /v1/messages/{message_id}/actions/{id}` asks what became of it
/// (`applied` or `failed`; 404: never received).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActionRequest {
    pub id: String,
    /// msgline's `msg_` id of the message acted on.
    pub message_id: String,
    /// The new text, for an edit; absent for an unsend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// When msgline asked for it (ms since the epoch); not part of the call.
    #[serde(skip)]
    pub requested_at: i64,
}

impl ActionRequest {
    /// `edit` or `unsend`: the path segment of the call.
    pub fn verb(&self) -> &'static str {
        if self.body.is_some() { "edit" } else { "unsend" }
    }
}

/// A file that arrived with a message: where msgline fetches it from the bridge (with the
/// line's bridge token), and what the bridge says of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InboundFile {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Filled by msgline once it has fetched and stored the file, before the event is applied.
    #[serde(skip)]
    pub stored: Option<crate::db::attachments::Attachment>,
}

/// A file of a `media` send. The bridge fetches its bytes with `GET url` and its bridge secret as
/// the bearer token.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AttachmentRef {
    pub id: String,
    pub content_type: String,
    pub size: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    pub url: String,
}

/// The tapback of a `reaction` send.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReactionRequest {
    /// `love`, `like`, `dislike`, `laugh`, `emphasize` or `question`.
    #[serde(rename = "type")]
    pub tapback: String,
    /// The message reacted to, by the line's name for it: msgline's `msg_` id for a message
    /// msgline sent, else the `message_id` the bridge gave the inbound message.
    pub target: String,
    /// msgline's `msg_` id of the message reacted to.
    pub target_message_id: String,
    /// Takes back an earlier tapback of this type.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remove: bool,
}

/// `POST /v1/typing` and `POST /v1/read` bodies: a conversation on the line (a number for a
/// conversation with one person, or a group's `conv_` id), and for typing whether to show the
/// indicator.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConversationSignal {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typing: Option<bool>,
}

/// `POST /v1/groups` body: create a group (`id` is msgline's `conv_` id) with its opening
/// message (`message_id`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupRequest {
    pub id: String,
    pub message_id: String,
    pub participants: Vec<String>,
    #[serde(default)]
    pub name: Option<String>,
    pub body: String,
}

/// `POST /v1/groups/{group_id}/changes` body: a change to a group the line created. `id` is
/// msgline's `gch_` id: a bridge that receives an id it has seen before does not apply the change
/// again and answers as it did the first time.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupChangeRequest {
    pub id: String,
    pub group_id: String,
    /// The new display name; `""` removes it. Absent: the name is left as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove: Vec<String>,
    /// The line leaves the group (nothing else is asked with it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub leave: bool,
}

/// The bridge's answer to a send or a group creation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SendAnswer {
    /// `accepted` or `rejected`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// With `rejected`, what kind of refusal, when the bridge knows it: `line_blocked` (the
    /// device's account is blocked: msgline flags the line and the message waits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The bridge error of a device whose account is blocked (an Apple ID, a SIM): nothing was sent.
pub const LINE_BLOCKED: &str = "line_blocked";

/// `POST /v1/messages/batch` body: several sends in one call, to a bridge whose capabilities
/// say `batch` (at most that many). Each message means what it means in `POST /v1/messages`, and
/// the bridge deduplicates each on its `id` as it does there.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SendBatch {
    pub messages: Vec<SendRequest>,
}

/// The answer to a batch: one result per message it carried, by id.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BatchAnswer {
    pub results: Vec<BatchResult>,
}

/// What the bridge did with one message of a batch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BatchResult {
    pub id: String,
    /// `accepted`, `rejected` (with `reason`), or `retry` (not taken now: ask again later, as
    /// a `503` to a single send asks).
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// As [`SendAnswer::error`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `GET /v1/messages/{id}` answer: what the line knows of one message.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StatusAnswer {
    pub id: String,
    /// `submitted`, `sent`, `delivered`, `read` or `failed`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `POST /v1/reachability` body and answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReachabilityRequest {
    pub handles: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReachabilityAnswer {
    /// Handle → reachable over iMessage.
    pub imessage: std::collections::BTreeMap<String, bool>,
}

/// A callback from a bridge. `id` is unique per bridge: a repeated callback changes nothing.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BridgeEvent {
    pub id: String,
    #[serde(flatten)]
    pub payload: BridgeEventPayload,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", content = "data")]
pub enum BridgeEventPayload {
    /// An outbound message moved: `sent`, `delivered`, `read` or `failed`.
    #[serde(rename = "message.status")]
    MessageStatus {
        message_id: String,
        status: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A message arrived on the line.
    #[serde(rename = "message.inbound")]
    Inbound {
        from: String,
        body: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chat: Option<String>,
        #[serde(default = "default_channel")]
        channel: String,
        /// The bridge's own id of the message, if it has one: what a reaction to it names.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        /// Files that came with the message; msgline fetches each from the bridge.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<InboundFile>,
        /// The message it answers (an inline reply), named as a reaction's `target` is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply_to: Option<String>,
        /// The effect it was sent with, by msgline's name (`slam`, `confetti`, …); a name
        /// msgline does not know is left out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        effect: Option<String>,
        /// Its iMessage subject.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subject: Option<String>,
    },
    /// A message was edited on the device (by the person who sent it, or on the line's own
    /// device): `message_id` names it as a reaction's `target` is; `body` is its text now.
    #[serde(rename = "message.edited")]
    MessageEdited { message_id: String, body: String },
    /// A message was unsent on the device: it no longer shows in the conversation.
    #[serde(rename = "message.unsent")]
    MessageUnsent { message_id: String },
    /// A tapback arrived. `target` names the message reacted to as a reaction send does (msgline's
    /// `msg_` id, or the `message_id` of an inbound message); `removed` takes an earlier one back.
    #[serde(rename = "message.reaction")]
    Reaction {
        from: String,
        target: String,
        reaction: String,
        #[serde(default)]
        removed: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chat: Option<String>,
        /// The bridge's own id of the reaction.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
    },
    /// Someone started (or stopped) typing in a conversation on the line.
    #[serde(rename = "typing")]
    Typing {
        from: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chat: Option<String>,
        #[serde(default = "typing_default")]
        typing: bool,
    },
    /// A native poll tap.
    #[serde(rename = "poll.vote")]
    PollVote { from: String, poll_message_id: String, option_index: i64 },
    /// A group the line was asked to create is now `created` or `failed`.
    #[serde(rename = "group.state")]
    GroupState {
        group_id: String,
        state: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A group was changed on the device itself (someone renamed it, added or removed someone,
    /// or left): its name and participants as they now are. An absent field did not change.
    #[serde(rename = "group.updated")]
    GroupUpdated {
        group_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        participants: Option<Vec<String>>,
    },
}

/// What a bridge may say in a `message.status`: the statuses a line can report.
const REPORTED_STATUSES: [&str; 5] = ["submitted", "sent", "delivered", "read", "failed"];

impl BridgeEvent {
    /// An event msgline can use, or the field at fault and why (a `400` for the bridge: sending
    /// it again will not help). What needs the database (a vote's option against its poll) is
    /// checked where the event is received.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        self.check_payload()?;
        if self.id.trim().is_empty() || self.id.len() > 200 {
            return Err(("id", "every event needs an id of 1 to 200 characters, unique on the bridge".into()));
        }
        Ok(())
    }

    /// What [`BridgeEvent::check`] asks of the event's data.
    fn check_payload(&self) -> Result<(), (&'static str, String)> {
        match &self.payload {
            BridgeEventPayload::MessageStatus { status, .. } if !REPORTED_STATUSES.contains(&status.as_str()) => Err((
                "data.status",
                format!("{status:?} is not a status a line reports ({})", REPORTED_STATUSES.join(", ")),
            )),
            BridgeEventPayload::Inbound { channel, .. } if !matches!(channel.as_str(), "imessage" | "sms") => {
                Err(("data.channel", format!("{channel:?} is not a channel (imessage or sms)")))
            }
            BridgeEventPayload::Inbound { from, .. }
            | BridgeEventPayload::Reaction { from, .. }
            | BridgeEventPayload::Typing { from, .. }
            | BridgeEventPayload::PollVote { from, .. }
                if from.trim().is_empty() =>
            {
                Err(("data.from", "the sender is empty".into()))
            }
            BridgeEventPayload::Inbound { from, .. }
            | BridgeEventPayload::Reaction { from, .. }
            | BridgeEventPayload::Typing { from, .. }
            | BridgeEventPayload::PollVote { from, .. }
                if from.trim().chars().count() > MAX_HANDLE_CHARS || from.trim().chars().any(char::is_control) =>
            {
                Err((
                    "data.from",
                    format!("the sender is a handle of 1 to {MAX_HANDLE_CHARS} characters without control characters"),
                ))
            }
            BridgeEventPayload::Inbound { body, .. } | BridgeEventPayload::MessageEdited { body, .. }
                if body.chars().count() > MAX_TEXT_CHARS =>
            {
                Err((
                    "data.body",
                    format!("a message's text is at most {MAX_TEXT_CHARS} characters; send a longer one as several"),
                ))
            }
            BridgeEventPayload::MessageEdited { message_id, .. } | BridgeEventPayload::MessageUnsent { message_id }
                if message_id.trim().is_empty() || message_id.len() > 200 =>
            {
                Err(("data.message_id", "the message is named by 1 to 200 characters".into()))
            }
            BridgeEventPayload::PollVote { option_index, .. } if *option_index < 0 => {
                Err(("data.option_index", format!("option_index {option_index} counts from 0")))
            }
            BridgeEventPayload::GroupState { state, .. } if !matches!(state.as_str(), "created" | "failed") => {
                Err(("data.state", format!("{state:?} is not a group state (created or failed)")))
            }
            _ => Ok(()),
        }
    }

    /// The event with an arriving message's text cut to [`MAX_TEXT_CHARS`], and how long it was
    /// if it was cut: a device's webhook, which is never sent again, keeps its message this way
    /// (a msgline bridge is refused instead, and splits it).
    pub fn capped(mut self) -> (BridgeEvent, Option<usize>) {
        let mut cut = None;
        if let BridgeEventPayload::Inbound { body, .. } | BridgeEventPayload::MessageEdited { body, .. } =
            &mut self.payload
            && let Some((at, _)) = body.char_indices().nth(MAX_TEXT_CHARS)
        {
            cut = Some(body.chars().count());
            body.truncate(at);
        }
        (self, cut)
    }

    /// The event with every NUL character taken out of its texts. A device's webhook (which is
    /// never sent again) keeps its message this way; PostgreSQL cannot store a NUL in text, and
    /// in a text message it means nothing.
    pub fn without_nul(self) -> BridgeEvent {
        /// Whether it took any out.
        fn strip(value: &mut Value) -> bool {
            match value {
                Value::String(text) if text.contains('\0') => {
                    text.retain(|c| c != '\0');
                    true
                }
                Value::Array(items) => items.iter_mut().fold(false, |any, item| strip(item) | any),
                Value::Object(map) => map.values_mut().fold(false, |any, item| strip(item) | any),
                _ => false,
            }
        }
        let Ok(mut value) = serde_json::to_value(&self) else { return self };
        if !strip(&mut value) {
            return self;
        }
        serde_json::from_value(value).unwrap_or(self)
    }
}

fn default_channel() -> String {
    "imessage".into()
}

fn typing_default() -> bool {
    true
}

impl SendRequest {
    /// The message as plain text, for a device without native polls (the documented fallback
    /// text) or, with `card_as_text`, without attachments (the card's name and number after the
    /// caption).
    pub fn plain_text(&self, card_as_text: bool) -> String {
        match (self.kind.as_str(), &self.poll, &self.vcard) {
            ("poll", Some(poll), _) => crate::domain::poll::fallback_text(&poll.question, &poll.options),
            ("contact_card", _, Some(vcard)) if card_as_text => {
                let card = crate::domain::vcard::text_summary(vcard);
                if self.body.trim().is_empty() { card } else { format!("{}\n{card}", self.body) }
            }
            _ => self.body.clone(),
        }
    }
}
