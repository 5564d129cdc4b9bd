//! `POST /polls`: a native iMessage poll (scope `messaging_send`); `GET /polls/{id}` with its
//! tally (scope `messaging_read`).

use axum::{
    Json,
    extract::{Path, State},
    http::HeaderMap,
    response::Response,
};
use serde_json::Value;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::ApiJson,
    messages::{IdempotencyKey, header_key, respond},
    openapi::schemas,
};
use crate::{
    caller::Principal,
    db,
    domain::scope::Scope,
    error::{ApiError, ApiResult},
    send::poll::{SendPoll, send_poll_request},
    services::Services,
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new().routes(routes!(send_poll)).routes(routes!(get_poll))
}

/// Send a native iMessage poll.
///
/// iMessage only: `"channel": "sms"`, a recipient the line reports as not reachable over
/// iMessage, or a line without iMessage is `400 poll_requires_imessage`.
#[utoipa::path(
    post,
    path = "/polls",
    tag = "polls",
    security(("api_key" = ["messaging_send"])),
    params(IdempotencyKey),
    request_body = crate::send::poll::SendPoll,
    responses(
        (status = 202, description = "Accepted for delivery", body = schemas::Sent),
        (status = 404, description = "A recipient or line that does not resolve (`not_found`, with `field`)", body = schemas::Error),
        (status = 409, description = "`line_mismatch`, `idempotency_key_reused` or `idempotency_key_in_progress`", body = schemas::Error),
    ),
)]
async fn send_poll(
    State(state): State<Services>,
    caller: Principal,
    headers: HeaderMap,
    ApiJson(request): ApiJson<SendPoll>,
) -> ApiResult<Response> {
    let sent = send_poll_request(&state.sender, &caller, request, header_key(&headers)?.as_deref(), None).await?;
    Ok(respond(sent))
}

/// A poll with its tally.
#[utoipa::path(
    get,
    path = "/polls/{id}",
    tag = "polls",
    security(("api_key" = ["messaging_read"])),
    params(("id" = String, Path, description = "The poll's id (`poll_…`)")),
    responses((status = 200, description = "The poll", body = schemas::Poll)),
)]
async fn get_poll(State(state): State<Services>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let poll = db::polls::get(&state.sender.db, &caller.org_id, &id)
        .await?
        .filter(|p| caller.may_use_line(&p.line_id))
        .ok_or_else(|| ApiError::not_found("poll"))?;
    let open_ms = crate::inbound::Rules::of(&state.sender.config).poll_open_ms;
    let (tally, closed_at) = state
        .sender
        .db
        .read(async |conn| {
            let tally = db::polls::tally(&mut *conn, &poll).await?;
            let closed_at = db::polls::closed_at(conn, &poll, open_ms, crate::clock::now_ms()).await?;
            Ok::<_, sqlx::Error>((tally, closed_at))
        })
        .await?;
    Ok(Json(poll.to_json(&tally, closed_at)))
}
