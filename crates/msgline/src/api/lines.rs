//! `GET /lines`, `GET /lines/{id}`: the lines the caller may send from.

use axum::{
    Json,
    extract::{Path, State},
};
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{PageParams, PageQuery, list},
    openapi::schemas,
};
use crate::{
    caller::Principal,
    clock,
    db::{self, Paged, lines::Line},
    domain::scope::Scope,
    error::{ApiError, ApiResult},
    services::Services,
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new().routes(routes!(list_lines)).routes(routes!(get_line))
}

/// The customer's view of a line: never its bridge address or credentials.
pub fn view(line: &Line) -> Value {
    json!({
        "id": line.id,
        "e164": line.e164,
        "kind": line.kind.as_str(),
        "bridge_kind": line.bridge_kind.as_str(),
        "capabilities": line.capabilities,
        "status": line.status,
        "checked_at": clock::rfc3339_opt(line.checked_at),
        "created_at": clock::rfc3339(line.created_at),
    })
}

/// The lines the caller may send from (a line-bound key: its own line).
#[utoipa::path(
    get,
    path = "/lines",
    tag = "lines",
    security(("api_key" = ["messaging_read"])),
    params(PageParams),
    responses((status = 200, description = "A page of lines", body = schemas::List<schemas::Line>)),
)]
async fn list_lines(
    State(state): State<Services>,
    caller: Principal,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let page = page?;
    // A line-bound key sees its own line only.
    let paged = match caller.bound_line() {
        Some(bound) => {
            let rows = db::lines::get_for_org(&state.sender.db, &caller.org_id, bound).await?.into_iter().collect();
            Paged { rows, next: None }
        }
        None => db::lines::list_for_org(&state.sender.db, &caller.org_id, &page).await?,
    };
    Ok(Json(list(paged, view)))
}

/// A line.
#[utoipa::path(
    get,
    path = "/lines/{id}",
    tag = "lines",
    security(("api_key" = ["messaging_read"])),
    params(("id" = String, Path, description = "The line's id (`line_…`)")),
    responses((status = 200, description = "The line", body = schemas::Line)),
)]
async fn get_line(State(state): State<Services>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    if !caller.may_use_line(&id) {
        return Err(ApiError::not_found("line"));
    }
    let line = db::lines::get_for_org(&state.sender.db, &caller.org_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("line"))?;
    Ok(Json(view(&line)))
}
