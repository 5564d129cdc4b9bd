//! `POST /groups`: an iMessage group chat and its opening message (scope `messaging_send`);
//! `GET /groups/{id}` (scope `messaging_read`).

use std::collections::BTreeSet;

use axum::{
    Json, Router,
    extract::{Path, State},
    http::HeaderMap,
    response::Response,
    routing::{get, post},
};
use serde::Deserialize;
use serde_json::Value;

use super::{
    extract::ApiJson,
    messages::{header_key, respond},
};
use crate::{
    db,
    domain::{lifecycle::ConversationKind, phone::E164, scope::Scope},
    error::{ApiError, ApiResult},
    fields::{bounded, from_value, phone_field, required_text},
    send::{
        groups::{self, GroupInput, MAX_PARTICIPANTS},
        request::{MAX_BODY_CHARS, idempotency},
    },
    state::{AppState, Principal},
};

pub fn router() -> Router<AppState> {
    Router::new().route("/groups", post(create_group)).route("/groups/{id}", get(get_group))
}

#[derive(Deserialize)]
struct CreateGroup {
    participants: Option<Vec<String>>,
    body: Option<String>,
    name: Option<String>,
    line_id: Option<String>,
    from: Option<String>,
    line_e164: Option<String>,
    default_country: Option<String>,
    idempotency_key: Option<String>,
}

/// Normalises participants to E.164 and drops duplicates; 2 to 31 distinct numbers.
fn participants(raw: Vec<String>, default_country: Option<&str>) -> ApiResult<Vec<E164>> {
    let mut distinct = BTreeSet::new();
    for (i, number) in raw.iter().enumerate() {
        let phone = phone_field("participants", number, default_country)
            .map_err(|e| e.with_message(format!("participant {} ({number:?}) is not a valid phone number", i + 1)))?;
        distinct.insert(phone);
    }
    if distinct.len() < 2 || distinct.len() > MAX_PARTICIPANTS {
        return Err(ApiError::invalid(
            "participants",
            format!("a group has 2 to {MAX_PARTICIPANTS} distinct participants, not {}", distinct.len()),
        ));
    }
    Ok(distinct.into_iter().collect())
}

async fn create_group(
    State(state): State<AppState>,
    caller: Principal,
    headers: HeaderMap,
    ApiJson(raw): ApiJson<Value>,
) -> ApiResult<Response> {
    caller.require(Scope::Send)?;
    let request: CreateGroup = from_value(raw.clone())?;
    let raw_participants =
        request.participants.ok_or_else(|| ApiError::invalid("participants", "participants is required"))?;
    let participants = participants(raw_participants, request.default_country.as_deref())?;
    let body = required_text("body", request.body, MAX_BODY_CHARS)?;
    let name = bounded("name", request.name, 100)?.filter(|n| !n.is_empty());
    let line_e164 = match (request.from.as_deref(), request.line_e164.as_deref()) {
        (Some(a), Some(b)) if a != b => {
            return Err(ApiError::invalid("from", "from and line_e164 name different lines"));
        }
        (Some(number), _) => Some(("from", number)),
        (None, Some(number)) => Some(("line_e164", number)),
        (None, None) => None,
    }
    .map(|(field, number)| E164::parse(number, None).map_err(|e| ApiError::invalid(field, e.describe(number))))
    .transpose()?
    .map(E164::into_string);
    // The fingerprint is made from the normalised request once the line is known.
    let key = idempotency(header_key(&headers)?.as_deref(), request.idempotency_key.as_deref(), "/groups", &raw)?;
    let input = GroupInput { participants, body, name, line_id: request.line_id, line_e164 };
    let sent = groups::create(&state, &caller, input, key).await?;
    Ok(respond(sent))
}

async fn get_group(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let group = db::conversations::get(&state.db, &caller.org_id, &id)
        .await?
        .filter(|c| c.kind == ConversationKind::Group)
        .filter(|c| caller.may_use_line(&c.line_id))
        .ok_or_else(|| ApiError::not_found("group"))?;
    Ok(Json(group.group_json()))
}
