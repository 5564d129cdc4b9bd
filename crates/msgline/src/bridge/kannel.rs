//! The `kannel` kind: carrier SMS through Kannel's smsbox (SMPP, EMI/UCP, CIMD or a GSM modem
//! behind it).
//!
//! Read from Kannel's source and user guide: smsbox's `sendsms` (`gw/smsbox.c`: `username`,
//! `password`, `from`, `to`, `text`, `charset`, `coding` (0 GSM 7-bit, 2 UCS-2), `dlr-mask`,
//! `dlr-url`, `smsc`; 202 "Accepted for delivery" or "Queued for later delivery", 403 on wrong
//! credentials, 503 when its queue is full), the escape codes of `dlr-url` and of an
//! `sms-service`'s `get-url` (`%d` the report's type, `%A` the SMSC's reply, `%p` the sender,
//! `%P` the receiver, `%b` the message's bytes, `%C` their charset, `%I` Kannel's id of the
//! message), the report types of `gw/dlr.h` (1 delivered to the phone, 2 not delivered to the
//! phone, 4 queued on the SMSC, 8 delivered to the SMSC, 16 not delivered to the SMSC) and the
//! fake SMSC of `gw/smsc/smsc_fake.c` (it reports 8, then 1, for every message it takes).
//!
//! Kannel has no lookup of a message by msgline's id: what a lost `sendsms` answer did is known
//! only from the report that names msgline's id (the `dlr-url` carries it). A message whose
//! outcome stays unknown for [`UNKNOWN_WINDOW_MS`] is `failed` with a reason that says so: a
//! possible loss is preferred to a possible double send.

use std::time::{Duration, Instant};

use reqwest::StatusCode;

use super::{
    BridgeEvent, BridgeEventPayload, CapabilitiesAnswer, ConversationSignal, GroupChangeRequest, GroupRequest,
    ReachabilityAnswer, SendRequest, StatusAnswer,
    adapter::{FileError, Hook, HookError, LineAdapter},
    call::{CallResult, SendOutcome, StatusLookup, answers, classify_error, nobody_on_imessage},
};
use crate::{
    clock,
    db::{
        self, Db,
        lines::{Capabilities, Line},
    },
    domain::lifecycle::MessageStatus,
};

/// SMS only.
const CAPABILITIES: Capabilities = Capabilities {
    imessage: false,
    sms: true,
    groups: false,
    polls: false,
    reactions: false,
    typing: false,
    read_receipts: false,
    media: false,
    mms: false,
    replies: false,
    edits: false,
    unsend: false,
    effects: false,
    batch: 0,
};

/// The reports msgline asks Kannel for: delivered (1), not delivered (2), queued on the SMSC (4),
/// taken by the SMSC (8), refused by the SMSC (16).
const DLR_MASK: u32 = 31;

/// How long a message whose `sendsms` answer was lost (`unknown`) may wait for a report naming
/// it, from when it became unknown, before it is `failed` as never known.
pub const UNKNOWN_WINDOW_MS: i64 = 10 * 60_000;

#[derive(Clone)]
pub struct Kannel {
    http: reqwest::Client,
    timeout: Duration,
    /// `{public URL}/api/v1/messaging/bridge/hooks`.
    hooks: String,
    /// Where a lookup reads how long a message has waited for its report.
    db: Db,
}

/// One of `gw/dlr.h`'s report types as msgline's status, with the reason of a failure.
pub fn report_status(kind: u32, smsc_reply: Option<&str>) -> Option<(&'static str, Option<String>)> {
    let said = smsc_reply.map(str::trim).filter(|r| !r.is_empty());
    match kind {
        1 => Some(("delivered", None)),
        2 => Some((
            "failed",
            Some(said.map_or("the phone did not receive it".into(), |r| format!("not delivered: {r}"))),
        )),
        // Queued on the SMSC (the phone is off, say): it left msgline's hands and Kannel's.
        4 | 8 => Some(("sent", None)),
        16 => {
            Some(("failed", Some(said.map_or("the SMSC refused it".into(), |r| format!("the SMSC refused it: {r}")))))
        }
        _ => None,
    }
}

/// Whether GSM 03.38's default alphabet (with its extension table) can carry the text; else it
/// goes as UCS-2.
pub fn fits_gsm7(text: &str) -> bool {
    const BASIC: &str = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
    const EXTENSION: &str = "^{}\\[~]|€\u{c}";
    text.chars().all(|c| BASIC.contains(c) || EXTENSION.contains(c))
}

/// The text of an inbound message from its bytes (`%b`) and Kannel's name of their charset (`%C`).
/// Bytes said to be UTF-8 that are not are refused, rather than read as something else.
pub fn decode_text(bytes: &[u8], charset: &str) -> Result<String, HookError> {
    let charset = charset.to_ascii_uppercase();
    if charset.contains("UTF-16") || charset.contains("UCS-2") || charset.contains("UCS2") {
        let units: Vec<u16> = bytes.chunks(2).map(|p| u16::from_be_bytes([p[0], *p.get(1).unwrap_or(&0)])).collect();
        return Ok(String::from_utf16_lossy(&units));
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text.to_string()),
        Err(_) if charset.replace('-', "") == "UTF8" => {
            Err(HookError::Malformed("the text is not UTF-8, which its charset says it is".into()))
        }
        // ISO-8859-1 (what Kannel recodes a 7-bit message to): each byte is its code point.
        Err(_) => Ok(bytes.iter().map(|b| char::from(*b)).collect()),
    }
}

impl Kannel {
    pub fn new(http: reqwest::Client, timeout: Duration, hooks: String, db: Db) -> Self {
        Self { http, timeout, hooks, db }
    }

    /// The URL Kannel calls for this line: its reports (with `kind=dlr`) and, pasted into an
    /// `sms-service`, its arriving messages (`kind=mo`).
    pub fn hook_url(hooks: &str, line: &Line) -> String {
        format!("{hooks}/{}?secret={}", line.id, line.bridge_settings.hook_secret)
    }

    fn rejected(reason: &str) -> CallResult<SendOutcome> {
        CallResult { outcome: SendOutcome::Rejected(reason.into()), http_status: None, latency_ms: 0 }
    }
}

/// What the first line of smsbox's answer says, for a refusal's reason.
fn answer_text(body: &str) -> String {
    body.lines().next().unwrap_or_default().trim().chars().take(200).collect()
}

impl LineAdapter for Kannel {
    /// smsbox answers `sendsms` without credentials with 403: any answer means it is up.
    async fn capabilities(&self, line: &Line) -> Result<CapabilitiesAnswer, String> {
        let request = self.http.get(format!("{}/cgi-bin/sendsms", line.bridge_url)).timeout(self.timeout);
        answers(request, |status| format!("smsbox answered {status}")).await?;
        Ok(CapabilitiesAnswer { e164: line.e164.clone(), capabilities: CAPABILITIES })
    }

    async fn reachability(&self, _line: &Line, handles: &[String]) -> Result<ReachabilityAnswer, String> {
        Ok(nobody_on_imessage(handles))
    }

    async fn send(&self, line: &Line, message: &SendRequest) -> CallResult<SendOutcome> {
        if message.chat.is_some() || message.to.len() != 1 {
            return Self::rejected("a Kannel line sends to one number at a time; it has no group chats");
        }
        if message.reaction.is_some() {
            return Self::rejected("a Kannel line sends SMS, which has no tapbacks");
        }
        if !message.attachments.is_empty() {
            return Self::rejected("a Kannel line sends text SMS only, no files");
        }
        let text = message.plain_text(true);
        let coding = if fits_gsm7(&text) { "0" } else { "2" };
        let dlr_url = format!("{}&kind=dlr&id={}&type=%d&reply=%A", Self::hook_url(&self.hooks, line), message.id);
        let settings = &line.bridge_settings;
        let mut query = vec![
            ("username", settings.username.clone().unwrap_or_default()),
            ("password", settings.password.clone().unwrap_or_default()),
            ("from", line.e164.clone()),
            ("to", message.to[0].clone()),
            ("text", text),
            ("charset", "UTF-8".into()),
            ("coding", coding.into()),
            ("dlr-mask", DLR_MASK.to_string()),
            ("dlr-url", dlr_url),
        ];
        if let Some(smsc) = settings.kannel_smsc.clone() {
            query.push(("smsc", smsc));
        }
        let started = Instant::now();
        let result = self
            .http
            .get(format!("{}/cgi-bin/sendsms", line.bridge_url))
            .query(&query)
            .timeout(self.timeout)
            .send()
            .await;
        let (outcome, http_status) = match result {
            Err(error) => (classify_error(&error), None),
            Ok(response) => {
                let status = response.status();
                let said = answer_text(&response.text().await.unwrap_or_default());
                let outcome = match status {
                    s if s.is_success() => SendOutcome::Accepted,
                    StatusCode::SERVICE_UNAVAILABLE => SendOutcome::RetryLater,
                    StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED => {
                        SendOutcome::Rejected(format!("smsbox refused msgline's credentials: {said}"))
                    }
                    s if s.is_client_error() => SendOutcome::Rejected(format!("smsbox refused the message: {said}")),
                    s => SendOutcome::Unknown(format!("smsbox answered {s}: {said}")),
                };
                (outcome, Some(status.as_u16()))
            }
        };
        CallResult { outcome, http_status, latency_ms: started.elapsed().as_millis() as i64 }
    }

    async fn create_group(&self, _line: &Line, _group: &GroupRequest) -> CallResult<SendOutcome> {
        Self::rejected("a Kannel line cannot create group chats")
    }

    /// No lookup. A message left `unknown` (its `sendsms` answer was lost) is asked about again
    /// until the window since it became unknown ends; then it is `failed` as never known. Any
    /// other message waits for its report as long as it takes: Kannel keeps what it accepted in
    /// its store until the SMSC takes it, and an SMSC may never send a final report.
    async fn message_status(&self, _line: &Line, id: &str) -> StatusLookup {
        let message = self.db.read(async |conn| db::messages::get_any(conn, id).await).await;
        match message {
            Ok(Some(message))
                if message.status == MessageStatus::Unknown
                    && clock::now_ms() - message.updated_at > UNKNOWN_WINDOW_MS =>
            {
                StatusLookup::Known(StatusAnswer {
                    id: id.to_string(),
                    status: "failed".into(),
                    reason: Some(
                        "Kannel never reported on this message (its answer to the send was lost, and Kannel cannot be \
                         asked); it may or may not have gone out, and it is not sent again"
                            .into(),
                    ),
                })
            }
            Ok(_) => StatusLookup::Failed("Kannel cannot be asked; waiting for its report".into()),
            Err(error) => StatusLookup::Failed(error.to_string()),
        }
    }

    async fn group_status(&self, _line: &Line, _id: &str) -> StatusLookup {
        StatusLookup::NotFound
    }

    async fn change_group(&self, _line: &Line, _change: &GroupChangeRequest) -> CallResult<SendOutcome> {
        Self::rejected("a Kannel line has no group chats")
    }

    async fn typing(&self, _line: &Line, _signal: &ConversationSignal) -> CallResult<SendOutcome> {
        Self::rejected("a Kannel line has no typing indicators")
    }

    async fn mark_read(&self, _line: &Line, _signal: &ConversationSignal) -> CallResult<SendOutcome> {
        Self::rejected("a Kannel line has no read receipts")
    }

    async fn fetch_file(&self, _line: &Line, _url: &str, _max_bytes: usize) -> Result<Vec<u8>, FileError> {
        Err(FileError::Refused("a Kannel line receives no files".into()))
    }

    async fn group_change_status(&self, _line: &Line, _group_id: &str, _change_id: &str) -> StatusLookup {
        StatusLookup::NotFound
    }

    /// Kannel takes no registration: its operator pastes the hook URL into kannel.conf.
    async fn connect(&self, _line: &Line) -> Result<(), String> {
        Ok(())
    }

    /// smsbox retries a report or an arriving message only as `http-request-retry` says, then
    /// drops it.
    fn reports_may_be_lost(&self) -> bool {
        true
    }

    /// A report (`kind=dlr`) or an arriving message (`kind=mo`); the hook route has checked the
    /// URL's secret.
    async fn receive(&self, _line: &Line, hook: &Hook<'_>) -> Result<Vec<BridgeEvent>, HookError> {
        let field = |name: &str| {
            hook.query_value(name)
                .map(str::to_string)
                .ok_or_else(|| HookError::Malformed(format!("Kannel's call has no {name} (see docs/lines.md)")))
        };
        match hook.query_value("kind") {
            Some("dlr") => {
                let message_id = field("id")?;
                let kind: u32 = field("type")?
                    .trim()
                    .parse()
                    .map_err(|_| HookError::Malformed("the report's type is not a number".into()))?;
                let Some((status, reason)) = report_status(kind, hook.query_value("reply")) else {
                    return Ok(Vec::new());
                };
                Ok(vec![BridgeEvent {
                    id: format!("kannel:dlr:{message_id}:{kind}"),
                    payload: BridgeEventPayload::MessageStatus { message_id, status: status.into(), reason },
                }])
            }
            Some("mo") => {
                let from = field("from")?;
                let bytes = hook.raw_query_bytes("text").unwrap_or_default();
                let body = decode_text(&bytes, hook.query_value("charset").unwrap_or_default())?;
                // Kannel's id of the message makes a repeated call one message; without it, the
                // sender, the time and the text do.
                let id = match hook.query_value("id").filter(|i| !i.is_empty() && !i.starts_with('%')) {
                    Some(id) => format!("kannel:mo:{id}"),
                    None => {
                        let at = hook.query_value("time").unwrap_or_default();
                        format!(
                            "kannel:mo:{from}:{at}:{}",
                            crate::domain::idempotency::fingerprint("mo", &body.clone().into())
                        )
                    }
                };
                Ok(vec![BridgeEvent {
                    id,
                    payload: BridgeEventPayload::Inbound {
                        from,
                        body,
                        chat: None,
                        channel: "sms".into(),
                        message_id: None,
                        attachments: Vec::new(),
                        reply_to: None,
                        effect: None,
                        subject: None,
                    },
                }])
            }
            _ => Err(HookError::Malformed("Kannel's call names no kind=dlr or kind=mo".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_report_type_maps_to_a_status_and_failures_keep_the_smscs_words() {
        assert_eq!(report_status(1, None), Some(("delivered", None)));
        assert_eq!(report_status(8, Some("ACK")), Some(("sent", None)));
        assert_eq!(report_status(4, None), Some(("sent", None)), "buffered on the SMSC keeps sent");
        assert_eq!(report_status(2, Some(" ")), Some(("failed", Some("the phone did not receive it".into()))));
        assert_eq!(report_status(16, Some("NACK/0x0000000b/Invalid Destination Address")).unwrap().0, "failed");
        assert!(report_status(16, Some("NACK/0x0b")).unwrap().1.unwrap().contains("NACK/0x0b"));
        assert_eq!(report_status(32, None), None);
    }

    #[test]
    fn text_outside_gsm7_goes_as_ucs2_and_arriving_bytes_decode_by_their_charset() {
        assert!(fits_gsm7("Hello {world} €5 @ 10:00"));
        assert!(!fits_gsm7("Ticket 🎫"));
        assert!(!fits_gsm7("Привет"));
        let ucs2: Vec<u8> = "Привет 🎫".encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(decode_text(&ucs2, "UTF-16BE").unwrap(), "Привет 🎫");
        assert_eq!(decode_text("café".as_bytes(), "UTF-8").unwrap(), "café");
        assert_eq!(decode_text(&[0x63, 0x61, 0x66, 0xe9], "ISO-8859-1").unwrap(), "café");
        assert_eq!(decode_text(&[0x63, 0x61, 0x66, 0xe9], "").unwrap(), "café");
        assert!(decode_text(&[0x63, 0x61, 0x66, 0xe9], "utf-8").is_err(), "said to be UTF-8 and not");
    }
}
