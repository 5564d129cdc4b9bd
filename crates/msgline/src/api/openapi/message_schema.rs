//! The message's shape, for the OpenAPI document (see [`super::schemas`]).

#![allow(dead_code)]

use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::lifecycle::{Channel, Direction, MessageKind, MessageStatus};

/// A message, outbound or inbound. A contact card, a poll and a poll vote add their object.
#[derive(ToSchema)]
pub struct Message {
    /// `msg_…`
    id: String,
    conversation_id: String,
    contact_id: Option<String>,
    line_id: String,
    /// The sender: the line's number on an outbound message, the contact's (E.164, or the handle
    /// as the line reported it) on an inbound one.
    from: Option<String>,
    /// The recipient: the contact's number on an outbound message, the line's on an inbound one;
    /// `null` in a group (the conversation names the group).
    to: Option<String>,
    direction: Direction,
    channel: Channel,
    kind: MessageKind,
    /// The text (as last edited; an unsent message keeps it as the organisation's record).
    body: String,
    /// The message of the conversation this one answers (an inline reply), `msg_…`.
    reply_to: Option<String>,
    /// The iMessage effect it was sent with (`slam`, `confetti`, …).
    effect: Option<String>,
    /// The iMessage subject it was sent with.
    subject: Option<String>,
    status: MessageStatus,
    /// Why the message failed, or what is known of an uncertain send.
    error: Option<String>,
    /// The line may or may not have the message; msgline asks until it knows.
    delivery_unknown: bool,
    /// The hosted agent that sent it.
    agent_id: Option<String>,
    #[schema(format = DateTime)]
    created_at: String,
    #[schema(format = DateTime)]
    updated_at: String,
    #[schema(format = DateTime)]
    submitted_at: Option<String>,
    #[schema(format = DateTime)]
    sent_at: Option<String>,
    #[schema(format = DateTime)]
    delivered_at: Option<String>,
    #[schema(format = DateTime)]
    read_at: Option<String>,
    /// When it was last edited (by msgline, or by its sender on their device).
    #[schema(format = DateTime)]
    edited_at: Option<String>,
    /// When it was unsent.
    #[schema(format = DateTime)]
    unsent_at: Option<String>,
    /// Its earlier texts, oldest first.
    edits: Vec<Edit>,
    /// Its latest edit or unsend that is not applied: `pending` while the line is called,
    /// `unknown` until msgline has asked the line, or `failed`; `null` otherwise.
    action: Option<MessageAction>,
    /// A scheduled send's time (`null` for a message sent at once).
    #[schema(format = DateTime)]
    send_at: Option<String>,
    /// On an SMS sent in a failed iMessage's place: that iMessage (`msg_…`).
    fallback_for: Option<String>,
    /// On an iMessage that fell back to SMS: the SMS (`msg_…`).
    fallback_message_id: Option<String>,
    /// On `kind: contact_card`: the card's name and phone.
    #[schema(required = false, value_type = Object)]
    contact_card: Value,
    /// On `kind: poll`: the poll's id, question and options.
    #[schema(required = false, value_type = Object)]
    poll: Value,
    /// On `kind: poll_vote`: the poll, the option chosen and its index, and a text reply.
    #[schema(required = false, value_type = Object)]
    poll_vote: Value,
}

/// An earlier text of an edited message.
#[derive(ToSchema)]
pub struct Edit {
    body: String,
    /// When this text was sent (or became the text, for an earlier edit).
    #[schema(format = DateTime)]
    at: String,
}

/// An edit or unsend msgline asked a line for.
#[derive(ToSchema)]
pub struct MessageAction {
    /// `mac_…`
    id: String,
    /// `edit` or `unsend`.
    kind: String,
    /// `pending`, `unknown` or `failed`.
    status: String,
    /// The new text of an edit.
    body: Option<String>,
    /// Why it failed, or what is known of an uncertain one.
    error: Option<String>,
    #[schema(format = DateTime)]
    requested_at: String,
}
