//! `POST /contact-cards`: a saveable contact card (vCard 3.0) by iMessage or SMS
//! (scope `messaging_send`).

use axum::{extract::State, http::HeaderMap, response::Response};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::ApiJson,
    messages::{IdempotencyKey, header_key, respond},
    openapi::schemas,
};
use crate::{
    caller::Principal,
    error::ApiResult,
    send::card::{SendCard, send_card_request},
    services::Services,
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new().routes(routes!(send_card))
}

/// Send a contact card.
///
/// A saveable card (vCard 3.0) by iMessage or SMS. The photo is fetched when the card is sent,
/// `https` only and never from private addresses; a photo that cannot be used is a 400 naming
/// `photo_url` or `photo_base64`, and nothing is sent.
#[utoipa::path(
    post,
    path = "/contact-cards",
    tag = "contact cards",
    security(("api_key" = ["messaging_send"])),
    params(IdempotencyKey),
    request_body = crate::send::card::SendCard,
    responses(
        (status = 202, description = "Accepted for delivery", body = schemas::Sent),
        (status = 404, description = "A recipient, line or `agent_id` that does not resolve (`not_found`, with `field`)", body = schemas::Error),
        (status = 409, description = "`line_mismatch`, `idempotency_key_reused` or `idempotency_key_in_progress`", body = schemas::Error),
    ),
)]
async fn send_card(
    State(state): State<Services>,
    caller: Principal,
    headers: HeaderMap,
    ApiJson(request): ApiJson<SendCard>,
) -> ApiResult<Response> {
    let sent = send_card_request(&state.sender, &caller, request, header_key(&headers)?.as_deref(), None).await?;
    Ok(respond(sent))
}
