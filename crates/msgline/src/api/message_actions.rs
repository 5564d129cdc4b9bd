//! `POST /messages/{id}/edit` and `POST /messages/{id}/unsend` (scope `messaging_send`,
//! `Idempotency-Key`): msgline asks the line to edit or unsend an iMessage it sent.

use axum::{
    Json,
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{ApiJson, NoFields},
    messages::{IdempotencyKey, header_key},
    openapi::schemas,
};
use crate::{
    caller::Principal,
    domain::message_action::ActionKind,
    error::ApiResult,
    fields::required_text,
    send::{
        actions::{self, Acted},
        request::{MAX_BODY_CHARS, idempotency},
    },
    services::Services,
    web::errors::replayed,
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new().routes(routes!(edit_message)).routes(routes!(unsend_message))
}

/// `POST /messages/{id}/edit`.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"body": "See you at 7 instead"}))]
struct EditMessage {
    /// The new text, 1 to 10,000 characters.
    #[schema(required = true, min_length = 1, max_length = 10000)]
    body: Option<String>,
}

/// `200` with the message once the line applied the action (or for a replay), `202` with the
/// message while its outcome is unknown (`action.status`).
fn respond(acted: Acted) -> Response {
    let status = if acted.applied { StatusCode::OK } else { StatusCode::ACCEPTED };
    replayed((status, Json(acted.message.to_json())).into_response(), acted.replayed)
}

/// Edit an iMessage msgline sent.
///
/// Apple's limits: within 15 minutes of `sent_at`, at most 5 times. msgline asks the line and
/// answers `200` with the message edited (`body`, `edited_at`, the earlier text in `edits`) and
/// the event `messaging.message.edited`. Without an answer from the line in time it answers
/// `202`: `action.status` is `unknown` until msgline has asked the line, which it never asks
/// to edit again. Retry with the same `Idempotency-Key` to be safe.
#[utoipa::path(
    post,
    path = "/messages/{id}/edit",
    tag = "messages",
    security(("api_key" = ["messaging_send"])),
    params(("id" = String, Path, description = "The message (`msg_…`), an iMessage msgline sent"), IdempotencyKey),
    request_body = EditMessage,
    responses(
        (status = 200, description = "The line edited it (or a replay)", body = schemas::Message),
        (status = 202, description = "No answer from the line in time: `action.status` is `unknown`", body = schemas::Message),
        (status = 400, description = "No `body`, or a body too long", body = schemas::Error),
        (status = 404, description = "No such message in the organisation", body = schemas::Error),
        (status = 409, description = "`edit_window_closed`, `edit_limit_reached`, `message_not_editable`, `line_lacks_capability` (`capability: edits`) or an idempotency conflict", body = schemas::Error),
        (status = 502, description = "The line refused the edit (`line_rejected`)", body = schemas::Error),
    ),
)]
async fn edit_message(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<String>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<EditMessage>,
) -> ApiResult<Response> {
    let body = required_text("body", request.body, MAX_BODY_CHARS)?;
    let key = idempotency(header_key(&headers)?.as_deref(), None, "/messages/edit", String::new)?;
    Ok(respond(actions::act(&state.sender, &caller, &id, ActionKind::Edit, Some(body), key).await?))
}

/// Unsend an iMessage msgline sent.
///
/// Apple's limit: within 2 minutes of `sent_at`. The message keeps its text (the organisation's
/// record) and gains `unsent_at`, with the event `messaging.message.unsent`; answered as an edit.
#[utoipa::path(
    post,
    path = "/messages/{id}/unsend",
    tag = "messages",
    security(("api_key" = ["messaging_send"])),
    params(("id" = String, Path, description = "The message (`msg_…`), an iMessage msgline sent"), IdempotencyKey),
    responses(
        (status = 200, description = "The line unsent it (or a replay)", body = schemas::Message),
        (status = 202, description = "No answer from the line in time: `action.status` is `unknown`", body = schemas::Message),
        (status = 404, description = "No such message in the organisation", body = schemas::Error),
        (status = 409, description = "`unsend_window_closed`, `message_not_editable`, `line_lacks_capability` (`capability: unsend`) or an idempotency conflict", body = schemas::Error),
        (status = 502, description = "The line refused the unsend (`line_rejected`)", body = schemas::Error),
    ),
)]
async fn unsend_message(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<String>,
    headers: HeaderMap,
    _body: Option<ApiJson<NoFields>>,
) -> ApiResult<Response> {
    let key = idempotency(header_key(&headers)?.as_deref(), None, "/messages/unsend", String::new)?;
    Ok(respond(actions::act(&state.sender, &caller, &id, ActionKind::Unsend, None, key).await?))
}
