//! `POST /messages` (scope `messaging_send`, the send rate policy, `Idempotency-Key`),
//! `GET /messages` and `GET /messages/{id}` (scope `messaging_read`).

use axum::{
    Json, Router,
    extract::{Path, State},
    http::{HeaderMap, HeaderName, HeaderValue},
    response::{IntoResponse, Response},
    routing::get,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::extract::{ApiJson, ApiQuery, from_value, json_response, list_body, page};
use crate::{
    db::{self, messages::MessageFilter},
    domain::{
        idempotency::{IdempotencyKey, fingerprint},
        lifecycle::{Direction, MessageKind, MessageStatus},
        phone::E164,
        scope::Scope,
    },
    error::{ApiError, ApiResult},
    send::{self, Idempotency, Recipient, SendInput, Sent},
    state::{AppState, Principal},
};

pub fn router() -> Router<AppState> {
    Router::new().route("/messages", get(list_messages).post(send_message)).route("/messages/{id}", get(get_message))
}

pub const MAX_BODY_CHARS: usize = 10_000;

/// The fields every send shares: recipient, line, channel.
#[derive(Debug, Deserialize)]
pub struct SendFields {
    pub to: Option<String>,
    pub conversation_id: Option<String>,
    pub contact_id: Option<String>,
    pub line_id: Option<String>,
    pub from: Option<String>,
    pub line_e164: Option<String>,
    pub channel: Option<String>,
    pub default_country: Option<String>,
    pub idempotency_key: Option<String>,
}

impl SendFields {
    /// Parses recipient, line and channel into a send with the given body and kind.
    pub fn into_input(self, body: String, kind: MessageKind) -> ApiResult<SendInput> {
        let to = match self.to.as_deref() {
            Some(to) => Some(super::contacts::phone_field("to", to, self.default_country.as_deref())?),
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
        Ok(SendInput {
            recipient: Recipient { to, conversation_id: self.conversation_id, contact_id: self.contact_id },
            line_id: self.line_id,
            line_e164,
            channel,
            body,
            kind,
            ..SendInput::default()
        })
    }
}

/// The `Idempotency-Key` header, if sent.
pub fn header_key(headers: &HeaderMap) -> ApiResult<Option<String>> {
    headers
        .get("idempotency-key")
        .map(|value| {
            value
                .to_str()
                .map(str::to_string)
                .map_err(|_| ApiError::invalid("Idempotency-Key", "the idempotency key must be printable ASCII"))
        })
        .transpose()
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
    let mut request = raw.clone();
    if let Some(object) = request.as_object_mut() {
        object.remove("idempotency_key");
    }
    Ok(Some(Idempotency { key, path, fingerprint: fingerprint(path, &request) }))
}

/// The HTTP answer of a send: its status and body, and `Idempotent-Replayed` on a replay.
pub fn respond(sent: Sent) -> Response {
    let mut response = (sent.status, Json(sent.body)).into_response();
    if sent.replayed {
        response.headers_mut().insert(HeaderName::from_static("idempotent-replayed"), HeaderValue::from_static("true"));
    }
    response
}

/// A text field that must have 1 to `max` characters.
pub fn required_text(field: &str, value: Option<String>, max: usize) -> ApiResult<String> {
    match value {
        None => Err(ApiError::invalid(field, format!("{field} is required"))),
        Some(text) if text.trim().is_empty() => Err(ApiError::invalid(field, format!("{field} must not be empty"))),
        Some(text) if text.chars().count() > max => {
            Err(ApiError::invalid(field, format!("{field} is limited to {max} characters")))
        }
        Some(text) => Ok(text),
    }
}

#[derive(Deserialize)]
struct SendMessage {
    body: Option<String>,
    #[serde(flatten)]
    fields: SendFields,
}

async fn send_message(
    State(state): State<AppState>,
    caller: Principal,
    headers: HeaderMap,
    ApiJson(raw): ApiJson<Value>,
) -> ApiResult<Response> {
    let sent = send_text(&state, &caller, raw, header_key(&headers)?.as_deref(), None).await?;
    Ok(respond(sent))
}

/// `POST /messages` after the HTTP layer; hosted agents send through it too.
pub async fn send_text(
    state: &AppState,
    caller: &Principal,
    raw: Value,
    header_key: Option<&str>,
    agent_id: Option<&str>,
) -> ApiResult<Sent> {
    caller.require(Scope::Send)?;
    let request: SendMessage = from_value(raw.clone())?;
    let body = required_text("body", request.body, MAX_BODY_CHARS)?;
    let idempotency = idempotency(header_key, request.fields.idempotency_key.as_deref(), "/messages", &raw)?;
    let mut input = request.fields.into_input(body, MessageKind::Text)?;
    input.agent_id = agent_id.map(str::to_string);
    send::submit(state, caller, input, idempotency, Map::new()).await
}

#[derive(Deserialize)]
struct ListQuery {
    conversation_id: Option<String>,
    contact_id: Option<String>,
    direction: Option<String>,
    status: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

async fn list_messages(
    State(state): State<AppState>,
    caller: Principal,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<axum::response::Response> {
    caller.require(Scope::Read)?;
    let page = page(query.limit.as_deref(), query.cursor.as_deref())?;
    let direction = match query.direction.as_deref().filter(|d| !d.is_empty()) {
        Some(d) => Some(
            d.parse::<Direction>()
                .map_err(|_| ApiError::invalid("direction", "direction must be inbound or outbound"))?,
        ),
        None => None,
    };
    let status =
        match query.status.as_deref().filter(|s| !s.is_empty()) {
            Some(s) => Some(s.parse::<MessageStatus>().map_err(|_| {
                ApiError::invalid("status", format!("status must be one of {}", MessageStatus::names()))
            })?),
            None => None,
        };
    let filter = MessageFilter {
        conversation_id: query.conversation_id.filter(|c| !c.is_empty()),
        contact_id: query.contact_id.filter(|c| !c.is_empty()),
        direction,
        status,
        line_id: caller.line_id.clone(),
    };
    let paged = db::messages::list(&state.db, &caller.org_id, &filter, &page).await?;
    Ok(json_response(&list_body(&paged, db::messages::Message::view)))
}

async fn get_message(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let message = db::messages::get(&state.db, &caller.org_id, &id)
        .await?
        .filter(|m| caller.line_id.as_ref().is_none_or(|bound| bound == &m.line_id))
        .ok_or_else(|| ApiError::not_found("message"))?;
    Ok(Json(message.to_json()))
}
