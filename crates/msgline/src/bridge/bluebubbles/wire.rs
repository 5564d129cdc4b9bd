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

    /// A date the server gives (ms since the epoch), when it is set.
    pub(super) fn date(&self, field: &str) -> Option<i64> {
        self.0.get(field).and_then(Value::as_i64).filter(|at| *at > 0)
    }

    /// The text as a person reads it: without the placeholders of attachments, trimmed. `None`
    /// when the Mac has no text for it (an unsent message).
    pub(super) fn shown_text(&self) -> Option<String> {
        Some(self.str("text")?.replace('\u{fffc}', "").trim().to_string())
    }

    /// Whether the message was unsent: the Mac keeps its row with no text (`text` null) and no
    /// parts (`partCount` 0, macOS 13 and later); `dateRetracted` where Apple sets it.
    pub(super) fn is_unsent(&self) -> bool {
        matches!(self.0.get("text"), Some(Value::Null))
            || self.0.get("partCount").and_then(Value::as_i64) == Some(0)
            || self.date("dateRetracted").is_some()
    }

    /// Whether the message now reads `body` (an edit to it shows).
    pub(super) fn reads(&self, body: &str) -> bool {
        !self.is_unsent() && self.shown_text().is_some_and(|text| text == body.replace('\u{fffc}', "").trim())
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

/// A guid as one segment of a path: `;` and `+` (and anything else but letters, digits and
/// `-._~`) percent-encoded.
pub(super) fn path_segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Whether the Mac's macOS (server info's `os_version`, such as `"14.4.1"`) can edit and unsend
/// messages: Messages does from macOS 13 (Ventura) on. An absent or unreadable version: no.
pub(super) fn edits_allowed(info: &Value) -> bool {
    info.get("os_version")
        .and_then(Value::as_str)
        .and_then(|version| version.split('.').next()?.trim().parse::<u32>().ok())
        .is_some_and(|major| major >= 13)
}
