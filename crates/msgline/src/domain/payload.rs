//! What a message carries beside its text, typed from the request that made it to the call that
//! hands it to the line. It is serialised only at the database (the messages' `payload` column),
//! and its one member shows in the message's public JSON under its name: `contact_card`, `poll`,
//! `reaction`, `attachments` or `poll_vote`. A text message carries none.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::lifecycle::Tapback;

/// A message's payload. Serialised as a one-member object named by the variant
/// (`{"poll": {…}}`), the form the column has always held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Payload {
    /// A contact card: who it introduces (the vCard itself is the message's attachment).
    ContactCard(CardSummary),
    /// A native iMessage poll.
    Poll(PollSummary),
    /// A tapback on another message.
    Reaction(ReactionSummary),
    /// The files of a media message, in their order.
    #[serde(rename = "attachments")]
    Media(Vec<AttachmentSummary>),
    /// A vote on a poll, as it arrived.
    PollVote(VoteSummary),
    /// A payload this build does not know (written by a later version): kept and shown as it is.
    #[serde(untagged)]
    Other(Map<String, Value>),
}

/// `contact_card`: the name and number of the person a card introduces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CardSummary {
    pub name: String,
    pub phone: String,
}

/// `poll`: a poll as its send answered it and its events show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PollSummary {
    pub id: String,
    pub question: String,
    pub options: Vec<String>,
}

/// `reaction`: which tapback, on which message (`None` when the line named a message msgline
/// does not know), and whether it was taken back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReactionSummary {
    #[serde(rename = "type")]
    pub tapback: Tapback,
    pub target_message_id: Option<String>,
    pub removed: bool,
}

/// One of `attachments`: a file in the media store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttachmentSummary {
    pub id: String,
    pub content_type: String,
    pub size: i64,
    pub filename: Option<String>,
}

/// `poll_vote`: the option a vote chose, and the text it came as.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoteSummary {
    pub poll_id: String,
    pub option: String,
    pub option_index: usize,
    pub reply: Option<String>,
}

impl Payload {
    /// The stored form.
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).expect("a payload serialises")
    }

    /// Reads the stored form; text that is no object of ours is kept as [`Payload::Other`], and
    /// anything else is no payload.
    pub fn from_text(text: &str) -> Option<Payload> {
        serde_json::from_str(text).ok()
    }

    /// The objects a send's answer carries beside the message: the card it introduced or the
    /// poll it asked (the same as the message's own JSON shows).
    pub fn envelope_extra(&self) -> Option<(&'static str, Value)> {
        match self {
            Payload::ContactCard(card) => Some(("contact_card", serde_json::to_value(card).ok()?)),
            Payload::Poll(poll) => Some(("poll", serde_json::to_value(poll).ok()?)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn payloads_keep_the_stored_form() {
        let cases = [
            json!({"contact_card": {"name": "Ada", "phone": "+12015550123"}}),
            json!({"poll": {"id": "pol_1", "question": "Lunch?", "options": ["Pizza", "Tacos"]}}),
            json!({"reaction": {"type": "love", "target_message_id": "msg_1", "removed": false}}),
            json!({"reaction": {"type": "like", "target_message_id": null, "removed": true}}),
            json!({"attachments": [{"id": "att_1", "content_type": "image/png", "size": 3, "filename": null}]}),
            json!({"poll_vote": {"poll_id": "pol_1", "option": "Pizza", "option_index": 0, "reply": "1"}}),
        ];
        for stored in cases {
            let payload = Payload::from_text(&stored.to_string()).expect("reads");
            assert!(!matches!(payload, Payload::Other(_)), "{stored} is typed");
            assert_eq!(serde_json::from_str::<Value>(&payload.to_text()).unwrap(), stored);
        }
    }

    #[test]
    fn an_unknown_payload_is_kept_as_it_is() {
        let stored = json!({"sticker": {"id": 7}});
        let payload = Payload::from_text(&stored.to_string()).expect("reads");
        assert!(matches!(payload, Payload::Other(_)));
        assert_eq!(serde_json::from_str::<Value>(&payload.to_text()).unwrap(), stored);
        assert_eq!(Payload::from_text("[1]"), None);
    }
}
