//! `GET /conversations` (filters `line_id`, `contact_id`) and `GET /conversations/{id}`
//! (scope `messaging_read`). A line-bound key sees the conversations of its line only.

use axum::{
    Json, Router,
    extract::{Path, State},
    routing::get,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::extract::{ApiQuery, list, page};
use crate::{
    clock,
    db::{
        self,
        conversations::{Conversation, ConversationFilter},
    },
    domain::scope::Scope,
    error::{ApiError, ApiResult},
    state::{AppState, Principal},
};

pub fn router() -> Router<AppState> {
    Router::new().route("/conversations", get(list_conversations)).route("/conversations/{id}", get(get_conversation))
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

#[derive(Deserialize)]
struct ListQuery {
    line_id: Option<String>,
    contact_id: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

async fn list_conversations(
    State(state): State<AppState>,
    caller: Principal,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let page = page(query.limit.as_deref(), query.cursor.as_deref())?;
    let line_id = caller.line_for(query.line_id.filter(|l| !l.is_empty()))?;
    let filter = ConversationFilter { line_id, contact_id: query.contact_id.filter(|c| !c.is_empty()) };
    let paged = db::conversations::list(&state.db, &caller.org_id, &filter, &page).await?;
    Ok(Json(list(paged, view)))
}

async fn get_conversation(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let conversation = db::conversations::get(&state.db, &caller.org_id, &id)
        .await?
        .filter(|c| caller.may_use_line(&c.line_id))
        .ok_or_else(|| ApiError::not_found("conversation"))?;
    Ok(Json(view(&conversation)))
}
