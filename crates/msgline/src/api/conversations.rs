//! `GET /conversations` (filters `line_id`, `contact_id`) and `GET /conversations/{id}`
//! (scope `messaging_read`). A line-bound key sees the conversations of its line only.

use axum::{
    Json,
    extract::{Path, State},
};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{ApiQuery, PageParams, PageQuery, list},
    openapi::schemas,
};
use crate::{
    caller::Principal,
    clock,
    db::{
        self,
        conversations::{Conversation, ConversationFilter},
    },
    domain::scope::Scope,
    error::{ApiError, ApiResult},
    services::Services,
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new()
        .routes(routes!(list_conversations))
        .routes(routes!(get_conversation))
        .routes(routes!(start_typing))
        .routes(routes!(mark_read))
}

/// Show the line typing.
///
/// The indicator hides by itself after a few seconds, or when the next message goes out.
/// iMessage conversations of dedicated lines whose device has typing indicators only.
#[utoipa::path(
    post,
    path = "/conversations/{id}/typing",
    tag = "conversations",
    security(("api_key" = ["messaging_send"])),
    params(("id" = String, Path, description = "The conversation's id (`conv_…`)")),
    responses(
        (status = 204, description = "The line shows the indicator"),
        (status = 400, description = "`typing_requires_imessage`: the conversation is over SMS", body = schemas::Error),
        (status = 404, description = "No such conversation in the organisation", body = schemas::Error),
        (status = 409, description = "`typing_requires_dedicated_line` or `typing_unsupported`", body = schemas::Error),
        (status = 502, description = "`line_rejected`: the line refused", body = schemas::Error),
        (status = 503, description = "`line_unavailable`: the line could not be reached; try again", body = schemas::Error),
    ),
)]
async fn start_typing(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<String>,
    _body: Option<super::extract::ApiJson<super::extract::NoFields>>,
) -> ApiResult<axum::http::StatusCode> {
    crate::send::signals::typing(&state.sender, &caller, &id).await?;
    Ok(axum::http::StatusCode::NO_CONTENT)
}

/// Mark a conversation read.
///
/// Its inbound messages get `read_at`; where the line has read receipts (an iMessage conversation
/// on a dedicated line), the other side sees the conversation read. If the receipt cannot be sent
/// the marks stay, and calling again sends it.
#[utoipa::path(
    post,
    path = "/conversations/{id}/read",
    tag = "conversations",
    security(("api_key" = ["messaging_send"])),
    params(("id" = String, Path, description = "The conversation's id (`conv_…`)")),
    responses(
        (status = 204, description = "Marked read (and the receipt sent where the line has them)"),
        (status = 404, description = "No such conversation in the organisation", body = schemas::Error),
        (status = 502, description = "`line_rejected`: the line refused the receipt", body = schemas::Error),
        (status = 503, description = "`line_unavailable`: the receipt could not be sent; try again", body = schemas::Error),
    ),
)]
async fn mark_read(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<String>,
    _body: Option<super::extract::ApiJson<super::extract::NoFields>>,
) -> ApiResult<axum::http::StatusCode> {
    crate::send::signals::read(&state.sender, &caller, &id).await?;
    Ok(axum::http::StatusCode::NO_CONTENT)
}

pub fn view(conversation: &Conversation) -> Value {
    json!({
        "id": conversation.id,
        "kind": conversation.kind,
        "line_id": conversation.line_id,
        "contact_id": conversation.contact_id,
        "participants": conversation.participants,
        "name": conversation.name,
        "group_state": conversation.group_state,
        "created_at": clock::rfc3339(conversation.created_at),
        "last_message_at": clock::rfc3339_opt(conversation.last_message_at),
    })
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    line_id: Option<String>,
    contact_id: Option<String>,
}

/// List conversations, most recent first.
#[utoipa::path(
    get,
    path = "/conversations",
    tag = "conversations",
    security(("api_key" = ["messaging_read"])),
    params(ListQuery, PageParams),
    responses(
        (status = 200, description = "A page of conversations", body = schemas::List<schemas::Conversation>),
        (status = 409, description = "A line-bound key naming another line (`line_mismatch`)", body = schemas::Error),
    ),
)]
async fn list_conversations(
    State(state): State<Services>,
    caller: Principal,
    ApiQuery(query): ApiQuery<ListQuery>,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let page = page?;
    let line_id = caller.line_for(query.line_id.filter(|l| !l.is_empty()))?;
    let filter = ConversationFilter { line_id, contact_id: query.contact_id.filter(|c| !c.is_empty()) };
    let paged = db::conversations::list(&state.sender.db, &caller.org_id, &filter, &page).await?;
    Ok(Json(list(paged, view)))
}

/// A conversation.
#[utoipa::path(
    get,
    path = "/conversations/{id}",
    tag = "conversations",
    security(("api_key" = ["messaging_read"])),
    params(("id" = String, Path, description = "The conversation's id (`conv_…`)")),
    responses((status = 200, description = "The conversation", body = schemas::Conversation)),
)]
async fn get_conversation(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let conversation = db::conversations::get(&state.sender.db, &caller.org_id, &id)
        .await?
        .filter(|c| caller.may_use_line(&c.line_id))
        .ok_or_else(|| ApiError::not_found("conversation"))?;
    Ok(Json(view(&conversation)))
}
