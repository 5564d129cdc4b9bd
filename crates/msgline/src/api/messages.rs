//! `POST /messages` (scope `messaging_send`, the send rate policy, `Idempotency-Key`),
//! `GET /messages` and `GET /messages/{id}` (scope `messaging_read`).

use axum::{
    Json,
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use serde_json::Value;

use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{ApiJson, ApiQuery, PageParams, PageQuery, json_response, list_body},
    openapi::schemas,
};
use crate::{
    caller::Principal,
    db::{self, messages::MessageFilter},
    domain::{
        lifecycle::{Direction, MessageStatus},
        payload::Payload,
        scope::Scope,
    },
    error::{ApiError, ApiResult},
    send::{
        Accepted,
        reaction::{self, SendReaction},
        request::{SendMessage, send_text},
    },
    services::Services,
    web::errors::replayed,
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new()
        .routes(routes!(list_messages, send_message))
        .routes(routes!(get_message))
        .routes(routes!(cancel_message))
        .routes(routes!(add_reaction))
        .routes(routes!(remove_reaction))
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

/// The HTTP answer of an accepted send: 202 with `{message, duplicate, delivery_unknown}` and
/// the card or poll the message carries; a replay is 200 with `duplicate: true` and
/// `Idempotent-Replayed: true`.
pub fn respond(sent: Accepted) -> Response {
    let message = &sent.message;
    let body = Envelope {
        message: message.view(),
        duplicate: sent.replayed,
        delivery_unknown: message.delivery_unknown,
        extra: message.payload.as_ref().and_then(Payload::envelope_extra),
    };
    let status = if sent.replayed { StatusCode::OK } else { StatusCode::ACCEPTED };
    let mut response = replayed((status, Json(body)).into_response(), sent.replayed);
    // The send policy's allowance joins the global one in the `RateLimit` headers (see `authenticate`).
    if let Some(allowance) = sent.allowance {
        response.extensions_mut().insert(allowance);
    }
    response
}

/// A send's answer, written straight to the response (no JSON tree in between: it is built for
/// every send): the message, whether it was a replay, and the card or poll it carries.
struct Envelope<'a> {
    message: db::message_view::MessageView<'a>,
    duplicate: bool,
    delivery_unknown: bool,
    extra: Option<(&'static str, Value)>,
}

impl serde::Serialize for Envelope<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("message", &self.message)?;
        map.serialize_entry("duplicate", &self.duplicate)?;
        map.serialize_entry("delivery_unknown", &self.delivery_unknown)?;
        if let Some((name, value)) = &self.extra {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// Send a text.
///
/// `202` when accepted for delivery; `200` with `duplicate: true` and `Idempotent-Replayed: true`
/// when the same `Idempotency-Key` and request were seen before (nothing is sent again).
#[utoipa::path(
    post,
    path = "/messages",
    tag = "messages",
    security(("api_key" = ["messaging_send"])),
    params(IdempotencyKey),
    request_body = crate::send::request::SendMessage,
    responses(
        (status = 202, description = "Accepted for delivery", body = schemas::Sent),
        (status = 404, description = "A `contact_id`, `conversation_id` or `line_id` that does not resolve (`not_found`, with `field`)", body = schemas::Error),
        (status = 409, description = "`line_mismatch`, `idempotency_key_reused` or `idempotency_key_in_progress`", body = schemas::Error),
    ),
)]
async fn send_message(
    State(state): State<Services>,
    caller: Principal,
    headers: HeaderMap,
    ApiJson(request): ApiJson<SendMessage>,
) -> ApiResult<Response> {
    let sent = send_text(&state.sender, &caller, request, header_key(&headers)?.as_deref(), None).await?;
    Ok(respond(sent))
}

/// The `Idempotency-Key` header of the send routes.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
pub struct IdempotencyKey {
    /// 1 to 255 printable ASCII characters; the same request again with the same key answers the
    /// first answer instead of sending again (also as `idempotency_key` in the body).
    #[param(rename = "Idempotency-Key", min_length = 1, max_length = 255)]
    _key: Option<String>,
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    conversation_id: Option<String>,
    contact_id: Option<String>,
    #[param(value_type = Option<Direction>)]
    direction: Option<String>,
    #[param(value_type = Option<MessageStatus>)]
    status: Option<String>,
}

/// List messages, newest first.
#[utoipa::path(
    get,
    path = "/messages",
    tag = "messages",
    security(("api_key" = ["messaging_read"])),
    params(ListQuery, PageParams),
    responses((status = 200, description = "A page of messages", body = schemas::List<schemas::Message>)),
)]
async fn list_messages(
    State(state): State<Services>,
    caller: Principal,
    ApiQuery(query): ApiQuery<ListQuery>,
    PageQuery(page): PageQuery,
) -> ApiResult<axum::response::Response> {
    caller.require(Scope::Read)?;
    let page = page?;
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
    let paged = db::messages::list(&state.sender.db, &caller.org_id, &filter, &page).await?;
    let reacted: Vec<&str> = paged.rows.iter().filter(|l| l.reacted).map(|l| l.message.id.as_str()).collect();
    let reactions = db::reactions::standing(&state.sender.db, &caller.org_id, &reacted).await?;
    let none = Vec::new();
    Ok(json_response(&list_body(&paged, |l| {
        l.message.view().with_reactions(reactions.get(&l.message.id).unwrap_or(&none))
    })))
}

/// A message.
#[utoipa::path(
    get,
    path = "/messages/{id}",
    tag = "messages",
    security(("api_key" = ["messaging_read"])),
    params(("id" = String, Path, description = "The message's id (`msg_…`)")),
    responses((status = 200, description = "The message", body = schemas::Message)),
)]
async fn get_message(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let message = db::messages::get(&state.sender.db, &caller.org_id, &id)
        .await?
        .filter(|m| caller.may_use_line(&m.line_id))
        .ok_or_else(|| ApiError::not_found("message"))?;
    let reactions = db::reactions::standing(&state.sender.db, &caller.org_id, &[&message.id]).await?;
    let standing = reactions.get(&message.id).map_or(&[][..], Vec::as_slice);
    Ok(Json(serde_json::to_value(message.view().with_reactions(standing)).map_err(ApiError::internal)?))
}

/// Cancel a scheduled message.
///
/// Only before its time, while the dispatcher does not have it: the message becomes `canceled`
/// (final) with the event `messaging.message.canceled`. A cancel that races the dispatcher has
/// one winner: `200` and `canceled`, or `409 message_not_cancelable` and the message as it
/// stands (`queued` or later). Canceling a canceled message answers `200` again.
#[utoipa::path(
    post,
    path = "/messages/{id}/cancel",
    tag = "messages",
    security(("api_key" = ["messaging_send"])),
    params(("id" = String, Path, description = "The scheduled message (`msg_…`)")),
    responses(
        (status = 200, description = "The message, `canceled`", body = schemas::Message),
        (status = 404, description = "No such message in the organisation", body = schemas::Error),
        (status = 409, description = "`message_not_cancelable`: it is not scheduled (any more); `status` says where it stands", body = schemas::Error),
    ),
)]
async fn cancel_message(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<String>,
    _body: Option<super::extract::ApiJson<super::extract::NoFields>>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Send)?;
    let canceled = crate::send::cancel(&state.sender, &caller, &id).await?;
    Ok(Json(canceled.to_json()))
}

/// React to a message with a tapback.
///
/// iMessage only. The tapback is sent as a message of `kind: reaction` that follows the lifecycle
/// like any message (`202`, then `sent`, `delivered`...); the target shows it under `reactions`.
#[utoipa::path(
    post,
    path = "/messages/{id}/reactions",
    tag = "messages",
    security(("api_key" = ["messaging_send"])),
    params(("id" = String, Path, description = "The message reacted to (`msg_…`)"), IdempotencyKey),
    request_body = crate::send::reaction::SendReaction,
    responses(
        (status = 202, description = "Accepted for delivery", body = schemas::Sent),
        (status = 400, description = "An unknown `reaction`, a message that cannot be reacted to, or `reaction_requires_imessage` (the message went over SMS)", body = schemas::Error),
        (status = 404, description = "No such message in the organisation", body = schemas::Error),
        (status = 409, description = "`reactions_unsupported` (the line's device has no tapbacks), `reaction_target_unknown`, `idempotency_key_reused` or `idempotency_key_in_progress`", body = schemas::Error),
    ),
)]
async fn add_reaction(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<String>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<SendReaction>,
) -> ApiResult<Response> {
    let sent = reaction::add(&state.sender, &caller, &id, request, header_key(&headers)?.as_deref()).await?;
    Ok(respond(sent))
}

/// Take a tapback back.
///
/// Sends the removal as a message of `kind: reaction` with `removed: true`; answered like
/// `POST /messages/{id}/reactions`.
#[utoipa::path(
    delete,
    path = "/messages/{id}/reactions/{reaction}",
    tag = "messages",
    security(("api_key" = ["messaging_send"])),
    params(
        ("id" = String, Path, description = "The message reacted to (`msg_…`)"),
        ("reaction" = crate::domain::lifecycle::Tapback, Path, description = "The tapback to take back"),
        IdempotencyKey,
    ),
    responses(
        (status = 202, description = "Accepted for delivery", body = schemas::Sent),
        (status = 400, description = "An unknown `reaction`, or `reaction_requires_imessage`", body = schemas::Error),
        (status = 404, description = "No such message in the organisation", body = schemas::Error),
        (status = 409, description = "`reactions_unsupported`, `reaction_target_unknown`, `idempotency_key_reused` or `idempotency_key_in_progress`", body = schemas::Error),
    ),
)]
async fn remove_reaction(
    State(state): State<Services>,
    caller: Principal,
    Path((id, reaction)): Path<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let sent =
        crate::send::reaction::remove(&state.sender, &caller, &id, &reaction, header_key(&headers)?.as_deref()).await?;
    Ok(respond(sent))
}
