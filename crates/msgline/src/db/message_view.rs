//! A message as the API, its webhook events and the event feed show it.

use serde_json::Value;

use super::messages::Message;
use crate::{
    clock,
    domain::{
        lifecycle::{Channel, Direction, MessageKind, MessageStatus},
        payload::Payload,
    },
};

impl Message {
    /// The public representation, as the API and webhook events show it.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.view()).expect("a message view serialises")
    }

    /// The `data` of a `messaging.message.*` event, `{"message": …}`, written straight to a
    /// string (no JSON tree in between: it is built for every status a message passes).
    pub fn event_data(&self) -> String {
        #[derive(serde::Serialize)]
        struct Data<'a> {
            message: MessageView<'a>,
        }
        serde_json::to_string(&Data { message: self.view() }).expect("a message view serialises")
    }

    /// The public representation, written straight to a response.
    pub fn view(&self) -> MessageView<'_> {
        MessageView {
            id: &self.id,
            conversation_id: &self.conversation_id,
            contact_id: self.contact_id.as_deref(),
            line_id: &self.line_id,
            from: self.from.as_deref(),
            to: self.to.as_deref(),
            direction: self.direction,
            channel: self.channel,
            kind: self.kind,
            body: &self.body,
            reply_to: self.extras.reply_to.as_deref(),
            effect: self.extras.effect.as_deref(),
            subject: self.extras.subject.as_deref(),
            status: self.status,
            error: self.error.as_deref(),
            delivery_unknown: self.delivery_unknown,
            agent_id: self.agent_id.as_deref(),
            created_at: clock::rfc3339(self.created_at),
            updated_at: clock::rfc3339(self.updated_at),
            submitted_at: clock::rfc3339_opt(self.submitted_at),
            sent_at: clock::rfc3339_opt(self.sent_at),
            delivered_at: clock::rfc3339_opt(self.delivered_at),
            read_at: clock::rfc3339_opt(self.read_at),
            edited_at: clock::rfc3339_opt(self.edited_at),
            unsent_at: clock::rfc3339_opt(self.unsent_at),
            edits: stored_json(self.edits.as_deref()).unwrap_or_else(|| Value::Array(Vec::new())),
            action: stored_json(self.action.as_deref()),
            send_at: clock::rfc3339_opt(self.send_at),
            fallback_for: self.fallback_for.as_deref(),
            fallback_message_id: self.fallback_message_id.as_deref(),
            payload: self.payload.as_ref(),
            reactions: None,
        }
    }

    pub fn is_final(&self) -> bool {
        self.status.is_final()
    }

    /// The message as it was when accepted (what its send answered): queued (or scheduled),
    /// nothing since.
    pub fn as_accepted(&self) -> Message {
        Message {
            status: if self.send_at.is_some() { MessageStatus::Scheduled } else { MessageStatus::Queued },
            error: None,
            delivery_unknown: false,
            updated_at: self.created_at,
            submitted_at: None,
            sent_at: None,
            delivered_at: None,
            read_at: None,
            ..self.clone()
        }
    }
}

/// A message as the API shows it: its fields, and those its payload adds (`contact_card`,
/// `poll`, `poll_vote`).
#[derive(Debug, serde::Serialize)]
pub struct MessageView<'a> {
    id: &'a str,
    conversation_id: &'a str,
    contact_id: Option<&'a str>,
    line_id: &'a str,
    from: Option<&'a str>,
    to: Option<&'a str>,
    direction: Direction,
    channel: Channel,
    kind: MessageKind,
    body: &'a str,
    reply_to: Option<&'a str>,
    effect: Option<&'a str>,
    subject: Option<&'a str>,
    status: MessageStatus,
    error: Option<&'a str>,
    delivery_unknown: bool,
    agent_id: Option<&'a str>,
    created_at: String,
    updated_at: String,
    submitted_at: Option<String>,
    sent_at: Option<String>,
    delivered_at: Option<String>,
    read_at: Option<String>,
    edited_at: Option<String>,
    unsent_at: Option<String>,
    edits: Value,
    action: Option<Value>,
    send_at: Option<String>,
    fallback_for: Option<&'a str>,
    fallback_message_id: Option<&'a str>,
    #[serde(flatten)]
    payload: Option<&'a Payload>,
    /// The reactions standing on the message, on API reads (webhook events leave them out).
    #[serde(skip_serializing_if = "Option::is_none")]
    reactions: Option<&'a [super::reactions::Standing]>,
}

impl<'a> MessageView<'a> {
    /// The view with the reactions standing on the message.
    pub fn with_reactions(mut self, reactions: &'a [super::reactions::Standing]) -> Self {
        self.reactions = Some(reactions);
        self
    }
}

/// A JSON column written by msgline (`edits`, `action`), read back for the view. What does not
/// parse (never written so) shows as absent rather than failing the read.
fn stored_json(text: Option<&str>) -> Option<Value> {
    text.and_then(|text| serde_json::from_str(text).ok())
}
