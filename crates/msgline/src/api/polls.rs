//! `POST /polls`: a native iMessage poll (scope `messaging_send`); `GET /polls/{id}` with its
//! tally (scope `messaging_read`).

use axum::{
    Json, Router,
    extract::{Path, State},
    http::HeaderMap,
    response::Response,
    routing::{get, post},
};
use serde_json::Value;

use super::{
    extract::ApiJson,
    messages::{header_key, respond},
};
use crate::{
    db,
    domain::scope::Scope,
    error::{ApiError, ApiResult},
    send::poll::send_poll_request,
    state::{AppState, Principal},
};

pub fn router() -> Router<AppState> {
    Router::new().route("/polls", post(send_poll)).route("/polls/{id}", get(get_poll))
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

async fn get_poll(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let poll = db::polls::get(&state.db, &caller.org_id, &id)
        .await?
        .filter(|p| caller.may_use_line(&p.line_id))
        .ok_or_else(|| ApiError::not_found("poll"))?;
    let tally = db::polls::tally(state.db.reader(), &poll).await?;
    Ok(Json(poll.to_json(&tally)))
}
