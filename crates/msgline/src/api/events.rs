//! `GET /events`: outbound delivery attempts (scope `messaging_read`), filter `message_id`; a
//! line-bound key sees those of its own line only.

use axum::{Json, extract::State};
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
    db::{self, attempts::Attempt},
    domain::scope::Scope,
    error::ApiResult,
    services::Services,
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new().routes(routes!(list_attempts))
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

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// Only this message's attempts.
    message_id: Option<String>,
}

/// Delivery attempts of outbound messages to their lines, newest first.
#[utoipa::path(
    get,
    path = "/events",
    tag = "messages",
    security(("api_key" = ["messaging_read"])),
    params(ListQuery, PageParams),
    responses((status = 200, description = "A page of delivery attempts", body = schemas::List<schemas::DeliveryAttempt>)),
)]
async fn list_attempts(
    State(state): State<Services>,
    caller: Principal,
    ApiQuery(query): ApiQuery<ListQuery>,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let page = page?;
    let message_id = query.message_id.filter(|m| !m.is_empty());
    // A line-bound key sees its own line's attempts only.
    let paged =
        db::attempts::list(&state.sender.db, &caller.org_id, caller.bound_line(), message_id.as_deref(), &page).await?;
    Ok(Json(list(paged, view)))
}
