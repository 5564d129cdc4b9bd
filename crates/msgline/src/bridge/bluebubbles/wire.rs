//! The BlueBubbles Server's side of the wire: its answer envelope, the fields of a message as
//! it serializes them, its chat guids, and the expectation msgline records before a send.

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The server's answer envelope.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Envelope {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    pub(super) data: Value,
    #[serde(default)]
    error: Option<Value>,
}

impl Envelope {
    /// What went wrong, in the server's words.
    pub(super) fn reason(&self) -> String {
        let error = self.error.as_ref();
        error
            .and_then(|e| e.get("message").or_else(|| e.get("error")).and_then(Value::as_str).map(str::to_string))
            .or_else(|| error.and_then(Value::as_str).map(str::to_string))
            .or_else(|| self.message.clone())
            .unwrap_or_else(|| "no reason given".into())
    }
}

/// A sent or received message as the server serializes it: the parts msgline reads.
pub(super) struct MacMessage<'a>(pub(super) &'a Value);

impl MacMessage<'_> {
    pub(super) fn str(&self, field: &str) -> Option<&str> {
        self.0.get(field).and_then(Value::as_str)
    }

    pub(super) fn guid(&self) -> Option<&str> {
        self.str("guid")
    }

    pub(super) fn is_from_me(&self) -> bool {
        self.0.get("isFromMe").and_then(Value::as_bool).unwrap_or(false)
    }

    pub(super) fn chat(&self) -> Option<&str> {
        self.0.get("chats")?.as_array()?.first()?.get("guid")?.as_str()
    }

    pub(super) fn error_code(&self) -> i64 {
        self.0.get("error").and_then(Value::as_i64).unwrap_or(0)
    }

    fn has_date(&self, field: &str) -> bool {
        self.0.get(field).and_then(Value::as_i64).is_some_and(|at| at > 0)
    }

    pub(super) fn attachment_names(&self) -> Vec<&str> {
        let list = self.0.get("attachments").and_then(Value::as_array);
        list.into_iter().flatten().filter_map(|a| a.get("transferName").and_then(Value::as_str)).collect()
    }

    /// What the message says; an attachment message is matched by its file name.
    pub(super) fn match_text(&self) -> String {
        let text = self.str("text").unwrap_or_default().replace('\u{fffc}', "");
        match self.attachment_names().first() {
            Some(name) if text.trim().is_empty() => (*name).to_string(),
            _ => text,
        }
    }

    /// Where the message stands, as msgline's status.
    pub(super) fn status(&self) -> (&'static str, Option<String>) {
        match self.error_code() {
            0 if self.has_date("dateRead") => ("read", None),
            0 if self.has_date("dateDelivered") => ("delivered", None),
            0 => ("sent", None),
            code => ("failed", Some(format!("iMessage could not send it (error {code})"))),
        }
    }
}

/// The 1:1 chat guid for a handle: `iMessage;-;+1…` or `SMS;-;+1…`.
pub(super) fn direct_chat(channel: &str, handle: &str) -> String {
    let service = if channel == "sms" { "SMS" } else { "iMessage" };
    format!("{service};-;{handle}")
}

pub(super) fn is_group_chat(chat: &str) -> bool {
    chat.contains(";+;")
}

/// The prefix of the expectation recorded before a send of `text` into `chat`.
pub(super) fn expectation(chat: &str, text: &str) -> String {
    let digest = Sha256::digest(format!("{chat}\n{text}").as_bytes());
    let hex = crate::ids::hex(&digest[..16]);
    format!("sent:{hex}:")
}

/// The remote id that is a real guid (not an expectation or a group note).
pub(super) fn real_guid(refs: &[(String, i64)]) -> Option<&str> {
    refs.iter().map(|(id, _)| id.as_str()).find(|id| !id.starts_with("sent:") && !id.starts_with("group:"))
}

/// The guid a tapback's `associatedMessageGuid` points at: Apple writes `p:<part>/<guid>` (or
/// `bp:<guid>`) for a part of a message.
pub(super) fn target_guid(associated: &str) -> &str {
    if let Some(rest) = associated.strip_prefix("bp:") {
        return rest;
    }
    match associated.strip_prefix("p:").and_then(|rest| rest.split_once('/')) {
        Some((_, guid)) => guid,
        None => associated,
    }
}
