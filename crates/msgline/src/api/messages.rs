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
use serde_json::Value;

use super::extract::{ApiJson, ApiQuery, json_response, list_body, page};
use crate::{
    db::{self, messages::MessageFilter},
    domain::{
        lifecycle::{Direction, MessageStatus},
        scope::Scope,
    },
    error::{ApiError, ApiResult},
    send::{Sent, request::send_text},
    state::{AppState, Principal},
};

pub fn router() -> Router<AppState> {
    Router::new().route("/messages", get(list_messages).post(send_message)).route("/messages/{id}", get(get_message))
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

/// The HTTP answer of a send: its status and body, and `Idempotent-Replayed` on a replay.
pub fn respond(sent: Sent) -> Response {
    let mut response = (sent.status, Json(sent.body)).into_response();
    if sent.replayed {
        response.headers_mut().insert(HeaderName::from_static("idempotent-replayed"), HeaderValue::from_static("true"));
    }
    response
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
        line_id: caller.bound_line().map(str::to_string),
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
        .filter(|m| caller.may_use_line(&m.line_id))
        .ok_or_else(|| ApiError::not_found("message"))?;
    Ok(Json(message.to_json()))
}
