//! `POST /contact-cards`: a saveable contact card (vCard 3.0) by iMessage or SMS
//! (scope `messaging_send`).

use axum::{Router, extract::State, http::HeaderMap, response::Response, routing::post};
use serde_json::Value;

use super::{
    extract::ApiJson,
    messages::{header_key, respond},
};
use crate::{
    error::ApiResult,
    send::card::send_card_request,
    state::{AppState, Principal},
};

pub fn router() -> Router<AppState> {
    Router::new().route("/contact-cards", post(send_card))
}

async fn send_card(
    State(state): State<AppState>,
    caller: Principal,
    headers: HeaderMap,
    ApiJson(raw): ApiJson<Value>,
) -> ApiResult<Response> {
    let sent = send_card_request(&state, &caller, raw, header_key(&headers)?.as_deref(), None).await?;
    Ok(respond(sent))
}
