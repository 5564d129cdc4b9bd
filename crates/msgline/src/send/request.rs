//! Reading a send request: the fields every send shares (recipient, line, channel and
//! idempotency) and the text message of `POST /messages`. The HTTP handlers and the hosted agents
//! both start here, so a request means the same whoever makes it.

use serde::Deserialize;
use serde_json::Value;

use super::{Accepted, Idempotency, Recipient, SendInput};
use crate::{
    caller::Principal,
    clock,
    domain::{
        idempotency::{IdempotencyKey, fingerprint},
        lifecycle::MessageKind,
        payload::Payload,
        phone::E164,
        scope::Scope,
    },
    error::{ApiError, ApiResult},
    fields::{from_ref, phone_field, required_text},
    send::{Sender, media::Upload},
};

/// The longest message text, in characters.
pub const MAX_BODY_CHARS: usize = crate::domain::MAX_TEXT_CHARS;

/// The fields every send shares: recipient, line, channel. At least one of `to`, `contact_id`
/// and `conversation_id`; when several are given they must name the same recipient.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct SendFields {
    /// The recipient, E.164 (`+12015550123`); a national number needs `default_country`.
    pub to: Option<String>,
    /// An existing conversation (a direct thread, or a group).
    pub conversation_id: Option<String>,
    /// An existing contact.
    pub contact_id: Option<String>,
    /// The line to send from; else the key's line, else the organisation's only line.
    pub line_id: Option<String>,
    /// The line to send from, by its number.
    pub from: Option<String>,
    /// The same as `from`.
    pub line_e164: Option<String>,
    /// `sms` or `imessage`; omitted: iMessage where the recipient is reachable over it.
    #[schema(value_type = Option<crate::domain::lifecycle::Channel>)]
    pub channel: Option<String>,
    /// ISO 3166 code (`US`), only for a national-format number.
    pub default_country: Option<String>,
    /// The same as the `Idempotency-Key` header (both given and different: 400).
    #[schema(min_length = 1, max_length = 255)]
    pub idempotency_key: Option<String>,
    /// Send later: an RFC 3339 time at least `MSGLINE_SCHEDULE_MIN_SECONDS` (60) and at most 90
    /// days ahead. The message is `scheduled` until then, and can be canceled.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub send_at: Option<Value>,
}

impl SendFields {
    /// Validates the recipient's and the line's numbers off the worker thread, so that
    /// [`SendFields::into_input`] finds them remembered ([`E164::prepare`]).
    pub async fn prepare(&self) {
        if let Some(to) = self.to.as_deref() {
            E164::prepare(to, self.default_country.as_deref()).await;
        }
        if let Some(line) = self.from.as_deref().or(self.line_e164.as_deref()) {
            E164::prepare(line, None).await;
        }
    }

    /// Parses recipient, line and channel into a send with the given body and kind.
    pub fn into_input(self, body: String, kind: MessageKind) -> ApiResult<SendInput> {
        let to = match self.to.as_deref() {
            Some(to) => Some(phone_field("to", to, self.default_country.as_deref())?),
            None => None,
        };
        if to.is_none() && self.conversation_id.is_none() && self.contact_id.is_none() {
            return Err(ApiError::invalid("to", "give at least one of to, conversation_id and contact_id"));
        }
        let line_e164 = match (self.from.as_deref(), self.line_e164.as_deref()) {
            (Some(a), Some(b)) if a != b => {
                return Err(ApiError::invalid("from", "from and line_e164 name different lines"));
            }
            (Some(number), _) => Some(("from", number)),
            (None, Some(number)) => Some(("line_e164", number)),
            (None, None) => None,
        };
        let line_e164 = match line_e164 {
            Some((field, number)) => {
                Some(E164::parse(number, None).map_err(|e| ApiError::invalid(field, e.describe(number)))?.into_string())
            }
            None => None,
        };
        let channel = match self.channel.as_deref() {
            None | Some("") => None,
            Some("sms") | Some("imessage") => self.channel.clone(),
            Some(_) => return Err(ApiError::invalid("channel", "channel must be sms or imessage")),
        };
        // Read here rather than by serde, so that any wrong value is refused naming the field.
        let send_at = match self.send_at {
            None | Some(Value::Null) => None,
            Some(value) => Some(value.as_str().and_then(clock::parse_rfc3339).ok_or_else(|| {
                ApiError::invalid("send_at", "send_at is an RFC 3339 time, like 2026-12-01T09:00:00Z")
            })?),
        };
        Ok(SendInput {
            recipient: Recipient { to, conversation_id: self.conversation_id, contact_id: self.contact_id },
            line_id: self.line_id,
            line_e164,
            channel,
            body,
            kind,
            send_at,
            ..SendInput::default()
        })
    }
}

/// The request's idempotency: the `Idempotency-Key` header or the body's `idempotency_key`
/// (both given and different: 400), with a fingerprint of the request.
pub fn idempotency(
    header: Option<&str>,
    body_key: Option<&str>,
    path: &'static str,
    raw: &Value,
) -> ApiResult<Option<Idempotency>> {
    let header = match header {
        Some(value) => Some(IdempotencyKey::parse(value).map_err(|e| ApiError::invalid("Idempotency-Key", e))?),
        None => None,
    };
    let body = match body_key {
        Some(key) => Some(IdempotencyKey::parse(key).map_err(|e| ApiError::invalid("idempotency_key", e))?),
        None => None,
    };
    let key = match (header, body) {
        (Some(h), Some(b)) if h != b => {
            return Err(ApiError::invalid("idempotency_key", "the Idempotency-Key header and idempotency_key differ"));
        }
        (Some(key), _) | (None, Some(key)) => key,
        (None, None) => return Ok(None),
    };
    // The body's key is not part of what the request asks (a copy only when it is there).
    let fingerprint = match raw.as_object().filter(|object| object.contains_key("idempotency_key")) {
        Some(object) => {
            let mut object = object.clone();
            object.remove("idempotency_key");
            fingerprint(path, &Value::Object(object))
        }
        None => fingerprint(path, raw),
    };
    Ok(Some(Idempotency { key, path, fingerprint }))
}

/// `POST /messages`.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"to": "+12015550123", "body": "Your order has shipped"}))]
pub struct SendMessage {
    /// The text, 1 to 10,000 characters; with `media_urls`, an optional caption.
    #[schema(min_length = 1, max_length = 10000)]
    body: Option<String>,
    /// Up to 10 https URLs of files to send (each at most `MSGLINE_MEDIA_MAX_BYTES`, 25 MB by
    /// default); the message is then `kind: media`.
    #[schema(max_items = 10)]
    media_urls: Option<Vec<String>>,
    /// `sms`: if the message goes over iMessage and fails, send its text as SMS from the same
    /// line; `none`: never, whatever the organisation's default (`GET /settings`).
    #[schema(value_type = Option<String>, example = "sms")]
    fallback: Option<Value>,
    /// With SMS fallback: also fall back if the iMessage is still not delivered after this
    /// many seconds (1 to 86,400). It may then still arrive too.
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 86400)]
    fallback_after_seconds: Option<Value>,
    #[serde(flatten)]
    fields: SendFields,
}

/// The longest `fallback_after_seconds`: a day.
const FALLBACK_AFTER_MAX: i64 = 86_400;

/// What a send asked of SMS fallback: `fallback` (`Some(true)`: `sms`, `Some(false)`: `none`,
/// `None`: the organisation's default) and `fallback_after_seconds` in milliseconds.
fn fallback_request(fallback: Option<Value>, after: Option<Value>) -> ApiResult<(Option<bool>, Option<i64>)> {
    let wanted = match fallback {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if text == "sms" => Some(true),
        Some(Value::String(text)) if text == "none" => Some(false),
        Some(_) => return Err(ApiError::invalid("fallback", "fallback is \"sms\" or \"none\"")),
    };
    let after_ms = match after {
        None | Some(Value::Null) => None,
        Some(value) => match value.as_i64() {
            Some(seconds) if (1..=FALLBACK_AFTER_MAX).contains(&seconds) => Some(seconds * 1_000),
            _ => {
                return Err(ApiError::invalid(
                    "fallback_after_seconds",
                    format!("fallback_after_seconds is a whole number from 1 to {FALLBACK_AFTER_MAX}"),
                ));
            }
        },
    };
    if after_ms.is_some() && wanted == Some(false) {
        return Err(ApiError::invalid("fallback_after_seconds", "fallback_after_seconds needs SMS fallback"));
    }
    Ok((wanted, after_ms))
}

/// `POST /messages` after the HTTP layer; hosted agents send through it too.
pub async fn send_text(
    state: &Sender,
    caller: &Principal,
    raw: Value,
    header_key: Option<&str>,
    agent_id: Option<&str>,
) -> ApiResult<Accepted> {
    caller.require(Scope::Send)?;
    let request: SendMessage = from_ref(&raw)?;
    let media_urls = request.media_urls.unwrap_or_default();
    let body = match (&request.body, media_urls.is_empty()) {
        (None, false) => String::new(),
        _ => required_text("body", request.body, MAX_BODY_CHARS)?,
    };
    let idempotency = idempotency(header_key, request.fields.idempotency_key.as_deref(), "/messages", &raw)?;
    let kind = if media_urls.is_empty() { MessageKind::Text } else { MessageKind::Media };
    let (fallback, fallback_after_ms) = fallback_request(request.fallback, request.fallback_after_seconds)?;
    if fallback == Some(true) && kind == MessageKind::Media {
        return Err(ApiError::invalid("fallback", "SMS fallback is for text messages, not files"));
    }
    request.fields.prepare().await;
    let mut input = request.fields.into_input(body, kind)?;
    input.fallback = fallback;
    input.fallback_after_ms = fallback_after_ms;
    input.agent_id = agent_id.map(str::to_string);
    if !media_urls.is_empty() {
        // A replay answers what the first request got, without fetching anything again.
        if let Some(sent) = super::prior(state, caller, idempotency.as_ref()).await? {
            return Ok(sent);
        }
        input.attachments = super::media::fetch_all(state, &caller.org_id, &media_urls).await?;
        input.payload = Some(Payload::Media(input.attachments.iter().map(|a| a.summary()).collect()));
    }
    super::submit(state, caller, input, idempotency).await
}

/// `POST /messages` with uploaded files instead of `media_urls`: the same send, `kind: media`,
/// the text an optional caption. The idempotency fingerprint covers the files' digests, so a key
/// reused with other files is a conflict. Without files it is [`send_text`].
pub async fn send_uploads(
    state: &Sender,
    caller: &Principal,
    raw: Value,
    header_key: Option<&str>,
    uploads: Vec<Upload>,
) -> ApiResult<Accepted> {
    if uploads.is_empty() {
        return send_text(state, caller, raw, header_key, None).await;
    }
    caller.require(Scope::Send)?;
    let request: SendMessage = from_ref(&raw)?;
    if request.media_urls.is_some() {
        return Err(ApiError::invalid("media_urls", "send files as uploads or as media_urls, not both"));
    }
    let body = match request.body.filter(|b| !b.trim().is_empty()) {
        Some(body) => required_text("body", Some(body), MAX_BODY_CHARS)?,
        None => String::new(),
    };
    let mut fingerprinted = raw.clone();
    fingerprinted["files"] = uploads
        .iter()
        .map(|u| {
            use sha2::Digest;
            Value::from(crate::ids::hex(&sha2::Sha256::digest(&u.bytes)))
        })
        .collect();
    let idempotency = idempotency(header_key, request.fields.idempotency_key.as_deref(), "/messages", &fingerprinted)?;
    request.fields.prepare().await;
    let mut input = request.fields.into_input(body, MessageKind::Media)?;
    if let Some(sent) = super::prior(state, caller, idempotency.as_ref()).await? {
        return Ok(sent);
    }
    input.attachments = super::media::store_uploads(state, &caller.org_id, uploads).await?;
    input.payload = Some(Payload::Media(input.attachments.iter().map(|a| a.summary()).collect()));
    super::submit(state, caller, input, idempotency).await
}
