//! `GET /events`: outbound delivery attempts (scope `messaging_read`), filter `message_id`.

use axum::{Json, Router, extract::State, routing::get};
use serde::Deserialize;
use serde_json::{Value, json};

use super::extract::{ApiQuery, list, page};
use crate::{
    clock,
    db::{self, attempts::Attempt},
    domain::scope::Scope,
    error::ApiResult,
    state::{AppState, Principal},
};

pub fn router() -> Router<AppState> {
    Router::new().route("/events", get(list_attempts))
}

fn view(attempt: &Attempt) -> Value {
    json!({
        "id": attempt.id,
        "message_id": attempt.message_id,
        "line_id": attempt.line_id,
        "attempt": attempt.attempt,
        "outcome": attempt.outcome,
        "http_status": attempt.http_status,
        "latency_ms": attempt.latency_ms,
        "error": attempt.error,
        "created_at": clock::rfc3339(attempt.created_at),
    })
}

#[derive(Deserialize)]
struct ListQuery {
    message_id: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

async fn list_attempts(
    State(state): State<AppState>,
    caller: Principal,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let page = page(query.limit.as_deref(), query.cursor.as_deref())?;
    let message_id = query.message_id.filter(|m| !m.is_empty());
    let paged = db::attempts::list(&state.db, &caller.org_id, message_id.as_deref(), &page).await?;
    Ok(Json(list(paged, view)))
}
