//! `POST /polls`: a native iMessage poll (scope `messaging_send`); `GET /polls/{id}` with its
//! tally (scope `messaging_read`).

use axum::{
    Json, Router,
    extract::{Path, State},
    http::HeaderMap,
    response::Response,
    routing::{get, post},
};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{
    extract::{ApiJson, from_value},
    messages::{SendFields, header_key, idempotency, respond},
};
use crate::{
    db,
    domain::{lifecycle::MessageKind, poll, scope::Scope},
    error::{ApiError, ApiResult},
    send::{self, PollSpec, Sent},
    state::{AppState, Principal},
};

pub fn router() -> Router<AppState> {
    Router::new().route("/polls", post(send_poll)).route("/polls/{id}", get(get_poll))
}

#[derive(Deserialize)]
struct SendPoll {
    question: Option<String>,
    options: Option<Vec<String>>,
    #[serde(flatten)]
    fields: SendFields,
}

async fn send_poll(
    State(state): State<AppState>,
    caller: Principal,
    headers: HeaderMap,
    ApiJson(raw): ApiJson<Value>,
) -> ApiResult<Response> {
    let sent = send_poll_request(&state, &caller, raw, header_key(&headers)?.as_deref(), None).await?;
    Ok(respond(sent))
}

/// `POST /polls` after the HTTP layer; hosted agents send through it too.
pub async fn send_poll_request(
    state: &AppState,
    caller: &Principal,
    raw: Value,
    header_key: Option<&str>,
    agent_id: Option<&str>,
) -> ApiResult<Sent> {
    caller.require(Scope::Send)?;
    let request: SendPoll = from_value(raw.clone())?;
    let question = request.question.ok_or_else(|| ApiError::invalid("question", "question is required"))?;
    let question = poll::parse_question(&question).map_err(|e| ApiError::invalid("question", e))?;
    let options = request.options.ok_or_else(|| ApiError::invalid("options", "options is required"))?;
    let options = poll::parse_options(&options).map_err(|e| ApiError::invalid("options", e))?;
    let idempotency = idempotency(header_key, request.fields.idempotency_key.as_deref(), "/polls", &raw)?;
    let mut input = request.fields.into_input(question.clone(), MessageKind::Poll)?;
    let spec = PollSpec { id: db::polls::new_id(), question, options };
    let summary = serde_json::json!({"id": spec.id, "question": spec.question, "options": spec.options});
    input.imessage_only = true;
    input.agent_id = agent_id.map(str::to_string);
    input.payload = Some(serde_json::json!({"poll": summary}));
    input.poll = Some(spec);
    let mut extra = Map::new();
    extra.insert("poll".into(), summary);
    send::submit(state, caller, input, idempotency, extra).await
}

async fn get_poll(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let poll = db::polls::get(&state.db, &caller.org_id, &id)
        .await?
        .filter(|p| caller.line_id.as_ref().is_none_or(|bound| bound == &p.line_id))
        .ok_or_else(|| ApiError::not_found("poll"))?;
    let tally = db::polls::tally(state.db.reader(), &poll).await?;
    Ok(Json(poll.to_json(&tally)))
}
