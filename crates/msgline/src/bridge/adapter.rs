//! The seam between msgline and a line's device. Every bridge kind implements [`LineAdapter`];
//! the dispatcher, the reconciler, the group path, reachability, the line checker and the hook
//! route reach it through [`super::client::BridgeClient`], which picks the line's kind.
//!
//! Adding a kind: implement this trait in a module of `bridge/`, add the kind to
//! [`crate::db::lines::BridgeKind`] and a field and an arm to `BridgeClient`. Nothing in `send/`,
//! `workers/` or `api/` changes (docs/lines.md walks through it).

use std::collections::HashMap;

use axum::http::HeaderMap;

pub use super::call::FileError;
use super::{
    ActionRequest, BridgeEvent, CapabilitiesAnswer, ConversationSignal, GroupChangeRequest, GroupRequest,
    ReachabilityAnswer, SendRequest,
    call::{CallResult, SendOutcome, StatusLookup},
};
use crate::db::lines::Line;

/// What a bridge kind does for msgline. Outcomes follow the bridge protocol's rules: a send that
/// may have reached the device is never reported as safe to retry, and a lookup answers
/// `NotFound` only when the device certainly never had the message (msgline then sends it again).
#[allow(async_fn_in_trait)]
pub trait LineAdapter {
    /// What the line can do; an error means it did not answer (the line is `offline`).
    async fn capabilities(&self, line: &Line) -> Result<CapabilitiesAnswer, String>;
    /// Which handles are reachable over iMessage.
    async fn reachability(&self, line: &Line, handles: &[String]) -> Result<ReachabilityAnswer, String>;
    /// Hands one message to the device.
    async fn send(&self, line: &Line, message: &SendRequest) -> CallResult<SendOutcome>;
    /// Creates a group with its opening message.
    async fn create_group(&self, line: &Line, group: &GroupRequest) -> CallResult<SendOutcome>;
    /// What became of a message (msgline's `msg_` id).
    async fn message_status(&self, line: &Line, id: &str) -> StatusLookup;
    /// What became of a group creation (msgline's `conv_` id).
    async fn group_status(&self, line: &Line, id: &str) -> StatusLookup;
    /// Renames a group the line created, or adds and removes participants.
    async fn change_group(&self, line: &Line, change: &GroupChangeRequest) -> CallResult<SendOutcome>;
    /// Shows a typing indicator in a conversation (`typing: Some(true)`; it hides by itself after
    /// a few seconds or when a message is sent), or hides it. Only asked of a line whose
    /// capabilities say `typing`.
    async fn typing(&self, line: &Line, signal: &ConversationSignal) -> CallResult<SendOutcome>;
    /// Sends a read receipt for a conversation. Only asked of a line whose capabilities say
    /// `read_receipts`.
    async fn mark_read(&self, line: &Line, signal: &ConversationSignal) -> CallResult<SendOutcome>;
    /// The bytes of a file that arrived on the line (`message.inbound`'s `attachments[].url`), at
    /// most `max_bytes` of them.
    async fn fetch_file(&self, line: &Line, url: &str, max_bytes: usize) -> Result<Vec<u8>, FileError>;
    /// What became of a group change (msgline's `gch_` id): `applied` or `failed`.
    async fn group_change_status(&self, line: &Line, group_id: &str, change_id: &str) -> StatusLookup;
    /// Edits (`action.body`) or unsends a message msgline sent. Only asked of a line whose
    /// capabilities say `edits` or `unsend`; a kind without either refuses.
    async fn act(&self, _line: &Line, action: &ActionRequest) -> CallResult<SendOutcome> {
        CallResult {
            outcome: SendOutcome::Rejected(format!("this line's device cannot {} messages", action.verb())),
            http_status: None,
            latency_ms: 0,
        }
    }
    /// What became of an edit or unsend: `applied` or `failed`, or `NotFound` when the device
    /// certainly never received it (it is then failed, never asked again).
    async fn action_status(&self, _line: &Line, _action: &ActionRequest) -> StatusLookup {
        StatusLookup::NotFound
    }
    /// Makes sure the device reports to msgline: registers msgline's webhook where the device
    /// takes registrations. Called when the line is created and by the line checker.
    async fn connect(&self, line: &Line) -> Result<(), String>;
    /// Whether the device's reports can be lost while msgline is down (a webhook it does not
    /// retry for long). msgline then asks it about recent unfinished messages after each start
    /// and every few minutes, so a lost receipt never leaves a message at `sent` for good.
    fn reports_may_be_lost(&self) -> bool {
        false
    }
    /// Turns one webhook call from the device (already checked to carry the line's hook secret)
    /// into bridge events; an event id repeats when the device repeats a webhook.
    async fn receive(&self, line: &Line, hook: &Hook<'_>) -> Result<Vec<BridgeEvent>, HookError>;
}

/// One webhook call from a device, as it arrived.
pub struct Hook<'a> {
    pub headers: &'a HeaderMap,
    pub query: &'a HashMap<String, String>,
    /// The query as it came (a value's bytes may not be UTF-8: Kannel's UCS-2 text).
    pub raw_query: &'a str,
    pub body: &'a [u8],
}

impl Hook<'_> {
    pub fn query_value(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }

    /// A query value's bytes, percent-decoded (`+` is a space), whatever they are.
    pub fn raw_query_bytes(&self, name: &str) -> Option<Vec<u8>> {
        self.raw_query.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (key == name).then(|| percent_encoding::percent_decode(value.replace('+', " ").as_bytes()).collect())
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Why a webhook was refused.
#[derive(Debug)]
pub enum HookError {
    /// The secret or the signature is missing or wrong (401).
    Unauthorized(String),
    /// The body is not what the device sends (400).
    Malformed(String),
    /// This kind does not take webhooks on the hook route (404).
    NotHere,
}
