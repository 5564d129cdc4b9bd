//! Reading a send request: the fields every send shares (recipient, line, channel and
//! idempotency) and the text message of `POST /messages`. The HTTP handlers and the hosted agents
//! both start here, so a request means the same whoever makes it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Accepted, Idempotency, Recipient, SendInput};
use crate::{
    caller::Principal,
    clock,
    domain::{
        id::{AgentId, ContactId, ConversationId, LineId, PoolId},
        idempotency::{IdempotencyKey, fingerprint_of},
        lifecycle::{Channel, MessageKind},
        payload::Payload,
        phone::E164,
        scope::Scope,
    },
    error::{ApiError, ApiResult},
    fields::{phone_field, required_text},
    send::{Sender, media::Upload},
};

/// The longest message text, in characters.
pub const MAX_BODY_CHARS: usize = crate::domain::MAX_TEXT_CHARS;

/// The fields every send shares: recipient, line, channel. At least one of `to`, `contact_id`
/// and `conversation_id`; when several are given they must name the same recipient.
///
/// Read once from the request's body into these types; what was sent is kept as sent (numbers
/// and `send_at` unparsed) so that the idempotency fingerprint is the request's own canonical form
/// ([`fingerprint_of`]). The body's `idempotency_key` is not part of it.
#[derive(Debug, Default, Deserialize, Serialize, utoipa::ToSchema)]
pub struct SendFields {
    /// The recipient, E.164 (`+12015550123`); a national number needs `default_country`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// An existing conversation (a direct thread, or a group).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub conversation_id: Option<ConversationId>,
    /// An existing contact.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub contact_id: Option<ContactId>,
    /// The line to send from; else the key's line, else the organisation's only line.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub line_id: Option<LineId>,
    /// The line to send from, by its number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The same as `from`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_e164: Option<String>,
    /// A sender pool of the organisation's lines, instead of a line: the contact's line in the
    /// pool (its latest conversation's), else the pool line with the most of today's budget left.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub pool_id: Option<PoolId>,
    /// `sms` or `imessage`; omitted: iMessage where the recipient is reachable over it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::domain::lifecycle::Channel>)]
    pub channel: Option<String>,
    /// ISO 3166 code (`US`), only for a national-format number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_country: Option<String>,
    /// The same as the `Idempotency-Key` header (both given and different: 400).
    #[serde(skip_serializing)]
    #[schema(min_length = 1, max_length = 255)]
    pub idempotency_key: Option<String>,
    /// Send later: an RFC 3339 time at least `MSGLINE_SCHEDULE_MIN_SECONDS` (60) and at most 90
    /// days ahead. The message is `scheduled` until then, and can be canceled.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub send_at: Option<Value>,
    /// How long the message may wait for its line (its budget, a pause, an offline device), in
    /// seconds from when it is due: 5 to 259,200 (3 days), default 36,000 (10 hours). A message
    /// still waiting then is `failed` with error `expired` and never sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<i64>, minimum = 5, maximum = 259200)]
    pub validity_seconds: Option<Value>,
    /// A message of the same conversation (`msg_…`) that this one answers: an inline reply over
    /// iMessage; over SMS the message goes as a plain one. Another conversation's: 400.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "msg_01HZX3K9J8Q2W5E7R4T6Y8U0IP")]
    pub reply_to: Option<Value>,
}

/// The default `validity_seconds`: 10 hours, as long as a carrier's queue keeps an SMS.
pub const VALIDITY_DEFAULT_SECONDS: i64 = 36_000;
/// The shortest and longest `validity_seconds`.
const VALIDITY_SECONDS: std::ops::RangeInclusive<i64> = 5..=259_200;

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
        if self.pool_id.is_some() && (self.line_id.is_some() || self.from.is_some() || self.line_e164.is_some()) {
            return Err(ApiError::invalid("pool_id", "name a pool or a line to send from, not both"));
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
                Some(E164::parse(number, None).map_err(|e| ApiError::invalid(field, e.describe(number)))?)
            }
            None => None,
        };
        let channel = match self.channel.as_deref() {
            None | Some("") => None,
            Some(name) => Some(
                name.parse::<Channel>().map_err(|_| ApiError::invalid("channel", "channel must be sms or imessage"))?,
            ),
        };
        // Read here rather than by serde, so that any wrong value is refused naming the field.
        let send_at = match self.send_at {
            None | Some(Value::Null) => None,
            Some(value) => Some(value.as_str().and_then(clock::parse_rfc3339).ok_or_else(|| {
                ApiError::invalid("send_at", "send_at is an RFC 3339 time, like 2026-12-01T09:00:00Z")
            })?),
        };
        let validity_ms = match self.validity_seconds {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                value.as_i64().filter(|s| VALIDITY_SECONDS.contains(s)).ok_or_else(|| {
                    ApiError::invalid("validity_seconds", "validity_seconds is a whole number from 5 to 259200")
                })? * 1_000,
            ),
        };
        let reply_to = match self.reply_to {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) if id.starts_with("msg_") && id.len() <= 64 => Some(id),
            Some(_) => {
                return Err(ApiError::invalid(
                    "reply_to",
                    "reply_to is the id (msg_…) of a message of the conversation",
                ));
            }
        };
        Ok(SendInput {
            extras: crate::db::messages::Extras { reply_to, ..Default::default() },
            validity_ms,
            recipient: Recipient { to, conversation_id: self.conversation_id, contact_id: self.contact_id },
            line_id: self.line_id,
            pool_id: self.pool_id,
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
/// (both given and different: 400), with the request's `fingerprint` (made only when there is a
/// key: [`fingerprint_of`] for a typed request).
pub fn idempotency(
    header: Option<&str>,
    body_key: Option<&str>,
    path: &'static str,
    fingerprint: impl FnOnce() -> String,
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
    Ok(Some(Idempotency { key, path, fingerprint: fingerprint() }))
}

/// `POST /messages`: read once at the edge, handed to [`send_text`] as it is.
#[derive(Debug, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[schema(example = json!({"to": "+12015550123", "body": "Your order has shipped"}))]
pub struct SendMessage {
    /// The text, 1 to 10,000 characters; with `media_urls`, an optional caption.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 10000)]
    pub body: Option<String>,
    /// Up to 10 https URLs of files to send (each at most `MSGLINE_MEDIA_MAX_BYTES`, 25 MB by
    /// default); the message is then `kind: media`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_items = 10)]
    pub media_urls: Option<Vec<String>>,
    /// `sms`: if the message goes over iMessage and fails, send its text as SMS from the same
    /// line; `none`: never, whatever the organisation's default (`GET /settings`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "sms")]
    pub fallback: Option<Value>,
    /// With SMS fallback: also fall back if the iMessage is still not delivered after this
    /// many seconds (1 to 86,400). It may then still arrive too.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 86400)]
    pub fallback_after_seconds: Option<Value>,
    /// An iMessage bubble or screen effect: `slam`, `loud`, `gentle`, `invisible_ink`, `echo`,
    /// `spotlight`, `balloons`, `confetti`, `love`, `lasers`, `fireworks` or `celebration`.
    /// iMessage only (over SMS: 409 `effect_requires_imessage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "confetti")]
    pub effect: Option<Value>,
    /// An iMessage subject line, shown in bold above the text: up to 200 characters. iMessage
    /// only (over SMS: 409 `subject_requires_imessage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, max_length = 200)]
    pub subject: Option<Value>,
    #[serde(flatten)]
    pub fields: SendFields,
}

/// A send's `effect` and `subject`, read and checked (the channel is checked once it is known).
fn look(effect: Option<&Value>, subject: Option<&Value>) -> ApiResult<(Option<String>, Option<String>)> {
    use crate::domain::message_action::{Effect, MAX_SUBJECT_CHARS};
    let effect = match effect {
        None | Some(Value::Null) => None,
        Some(value) => {
            Some(value.as_str().and_then(Effect::parse).map(|e| e.as_str().to_string()).ok_or_else(|| {
                let names: Vec<&str> = Effect::ALL.iter().map(|e| e.as_str()).collect();
                ApiError::invalid("effect", format!("effect is one of {}", names.join(", ")))
            })?)
        }
    };
    let subject = match subject {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if text.trim().is_empty() => None,
        Some(Value::String(text))
            if text.chars().count() <= MAX_SUBJECT_CHARS && !text.chars().any(|c| c.is_control()) =>
        {
            Some(text.clone())
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "subject",
                format!("subject is a text of up to {MAX_SUBJECT_CHARS} characters on one line"),
            ));
        }
    };
    Ok((effect, subject))
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

/// `POST /messages` after the edge (the API, the console, a hosted agent): counted against the
/// caller's send rate policy, then accepted for delivery.
pub async fn send_text(
    state: &Sender,
    caller: &Principal,
    request: SendMessage,
    header_key: Option<&str>,
    agent_id: Option<&AgentId>,
) -> ApiResult<Accepted> {
    caller.require(Scope::Send)?;
    let allowance = super::rates::charge_send(state, caller).await?;
    let idempotency = idempotency(header_key, request.fields.idempotency_key.as_deref(), "/messages", || {
        fingerprint_of("/messages", &request)
    })?;
    let media_urls = request.media_urls.unwrap_or_default();
    let body = match (&request.body, media_urls.is_empty()) {
        (None, false) => String::new(),
        _ => required_text("body", request.body, MAX_BODY_CHARS)?,
    };
    let kind = if media_urls.is_empty() { MessageKind::Text } else { MessageKind::Media };
    let (fallback, fallback_after_ms) = fallback_request(request.fallback, request.fallback_after_seconds)?;
    if fallback == Some(true) && kind == MessageKind::Media {
        return Err(ApiError::invalid("fallback", "SMS fallback is for text messages, not files"));
    }
    let (effect, subject) = look(request.effect.as_ref(), request.subject.as_ref())?;
    request.fields.prepare().await;
    let mut input = request.fields.into_input(body, kind)?;
    input.extras.effect = effect;
    input.extras.subject = subject;
    input.fallback = fallback;
    input.fallback_after_ms = fallback_after_ms;
    input.agent_id = agent_id.cloned();
    if !media_urls.is_empty() {
        // A replay answers what the first request got, without fetching anything again.
        if let Some(sent) = super::prior(state, caller, idempotency.as_ref()).await? {
            return Ok(sent.counted(allowance));
        }
        input.attachments = super::media::fetch_all(state, &caller.org_id, &media_urls).await?;
        input.payload = Some(Payload::Media(input.attachments.iter().map(|a| a.summary()).collect()));
    }
    super::submit(state, caller, input, idempotency).await.map(|sent| sent.counted(allowance))
}

/// A text with uploaded files (the console's compose box) instead of `media_urls`: the same send,
/// `kind: media`, the text an optional caption. The idempotency fingerprint covers the files'
/// digests, so a key reused with other files is a conflict. Without files it is [`send_text`].
pub async fn send_uploads(
    state: &Sender,
    caller: &Principal,
    request: SendMessage,
    header_key: Option<&str>,
    uploads: Vec<Upload>,
) -> ApiResult<Accepted> {
    if uploads.is_empty() {
        return send_text(state, caller, request, header_key, None).await;
    }
    caller.require(Scope::Send)?;
    let allowance = super::rates::charge_send(state, caller).await?;
    if request.media_urls.is_some() {
        return Err(ApiError::invalid("media_urls", "send files as uploads or as media_urls, not both"));
    }
    let idempotency = idempotency(header_key, request.fields.idempotency_key.as_deref(), "/messages", || {
        let files: Vec<String> = uploads
            .iter()
            .map(|u| {
                use sha2::Digest;
                crate::ids::hex(&sha2::Sha256::digest(&u.bytes))
            })
            .collect();
        fingerprint_of("/messages", &WithFiles { request: &request, files })
    })?;
    let body = match request.body.filter(|b| !b.trim().is_empty()) {
        Some(body) => required_text("body", Some(body), MAX_BODY_CHARS)?,
        None => String::new(),
    };
    let (effect, subject) = look(request.effect.as_ref(), request.subject.as_ref())?;
    request.fields.prepare().await;
    let mut input = request.fields.into_input(body, MessageKind::Media)?;
    input.extras.effect = effect;
    input.extras.subject = subject;
    if let Some(sent) = super::prior(state, caller, idempotency.as_ref()).await? {
        return Ok(sent.counted(allowance));
    }
    input.attachments = super::media::store_uploads(state, &caller.org_id, uploads).await?;
    input.payload = Some(Payload::Media(input.attachments.iter().map(|a| a.summary()).collect()));
    super::submit(state, caller, input, idempotency).await.map(|sent| sent.counted(allowance))
}

/// What a send with uploaded files is fingerprinted from: its fields and the files' digests.
#[derive(Serialize)]
struct WithFiles<'a> {
    #[serde(flatten)]
    request: &'a SendMessage,
    files: Vec<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{SendMessage, WithFiles};
    use crate::{
        domain::idempotency::{fingerprint, fingerprint_of},
        fields::parse_json,
        send::{card::SendCard, poll::SendPoll},
    };

    /// The fingerprint keys were stored with before requests were typed: the body as it came,
    /// without its `idempotency_key`.
    fn stored_before(path: &str, body: &Value) -> String {
        let mut body = body.clone();
        body.as_object_mut().unwrap().remove("idempotency_key");
        fingerprint(path, &body)
    }

    fn typed<T: serde::de::DeserializeOwned>(body: &Value) -> T {
        parse_json(body.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn a_key_stored_before_requests_were_typed_still_matches_its_request() {
        let texts = [
            json!({"to": "+12015550123", "body": "Your order has shipped"}),
            json!({"body": "hi", "conversation_id": "conv_1", "line_id": "line_1", "channel": "sms",
                   "idempotency_key": "k-1", "send_at": "2026-12-01T09:00:00Z", "fallback": "sms",
                   "fallback_after_seconds": 30, "default_country": "US", "to": "2015550123"}),
            json!({"media_urls": ["https://example.com/a.png"], "contact_id": "ct_1", "from": "+12015550100",
                   "line_e164": "+12015550100", "body": "caption \u{e9} \"quoted\" \\ /"}),
        ];
        for body in &texts {
            let request: SendMessage = typed(body);
            assert_eq!(fingerprint_of("/messages", &request), stored_before("/messages", body), "{body}");
        }
        let poll =
            json!({"to": "+12015550123", "question": "Lunch?", "options": ["Pizza", "Tacos"], "channel": "imessage"});
        let parsed: SendPoll = typed(&poll);
        assert_eq!(fingerprint_of("/polls", &parsed), stored_before("/polls", &poll));
        let card = json!({"to": "+12015550123", "agent_id": "agt_1", "name": "Ann", "phone": "+12015550177",
                          "email": "a@example.com", "organization": "Acme", "note": "n", "photo_url": "https://x/y.png",
                          "caption": "Ann's card", "idempotency_key": "c-1"});
        let parsed: SendCard = typed(&card);
        assert_eq!(fingerprint_of("/contact-cards", &parsed), stored_before("/contact-cards", &card));
        // With uploaded files, the files' digests were added to the body.
        let body = json!({"conversation_id": "conv_1", "body": "look"});
        let request: SendMessage = typed(&body);
        let mut before = body.clone();
        before["files"] = json!(["ab12"]);
        let with_files = WithFiles { request: &request, files: vec!["ab12".into()] };
        assert_eq!(fingerprint_of("/messages", &with_files), fingerprint("/messages", &before));
    }

    #[test]
    fn the_fingerprint_leaves_out_nulls_and_fields_msgline_does_not_read_but_keeps_every_value() {
        let plain: SendMessage = typed(&json!({"to": "+12015550123", "body": "hi"}));
        let noisy: SendMessage = typed(&json!({"body": "hi", "channel": null, "to": "+12015550123", "extra": 1}));
        assert_eq!(fingerprint_of("/messages", &plain), fingerprint_of("/messages", &noisy));
        let other: SendMessage = typed(&json!({"to": "+12015550123", "body": "hi!"}));
        assert_ne!(fingerprint_of("/messages", &plain), fingerprint_of("/messages", &other));
        // The same fields on another route are another request.
        assert_ne!(fingerprint_of("/messages", &plain), fingerprint_of("/polls", &plain));
    }
}
