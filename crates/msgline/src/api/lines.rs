//! `GET /lines`, `GET /lines/{id}`: the lines the caller may send from; `PATCH /lines/{id}`, its
//! pause and resume (scope `messaging_lines`).

use axum::{
    Json,
    extract::{Path, State},
};
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{ApiJson, NoFields, PageParams, PageQuery, list},
    openapi::schemas,
};
use crate::{
    caller::Principal,
    clock,
    domain::id::LineId,
    error::ApiResult,
    services::{
        Services,
        lines::{self, LineView},
    },
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new()
        .routes(routes!(list_lines))
        .routes(routes!(get_line, update_line))
        .routes(routes!(pause_line))
        .routes(routes!(resume_line))
}

/// The customer's view of a line: never its bridge address or credentials.
pub fn view(view: &LineView) -> Value {
    let (line, outlook) = (&view.line, &view.outlook);
    let usage = &outlook.usage;
    json!({
        "id": line.id,
        "e164": line.e164,
        "kind": line.kind.as_str(),
        "bridge_kind": line.bridge_kind.as_str(),
        "capabilities": line.capabilities,
        "status": line.status,
        "checked_at": clock::rfc3339_opt(line.checked_at),
        "created_at": clock::rfc3339(line.created_at),
        "policy": outlook.policy,
        "health": line.health.as_str(),
        "health_reason": line.health_reason,
        "dial_in": line.bridge_settings.dial_in,
        "device_last_seen_at": clock::rfc3339_opt(view.device_seen_at),
        "queue": {"waiting": outlook.waiting, "next_send_at": clock::rfc3339_opt(outlook.next_send_at)},
        "usage": {
            "minute": usage.minute,
            "hour": usage.hour,
            "day": usage.day,
            "new_contacts_hour": usage.new_contacts_hour,
            "new_contacts_day": usage.new_contacts_day,
            "new_contacts_month": usage.new_contacts_month,
        },
    })
}

/// The lines the caller may send from (a line-bound key: its own line), with each line's
/// policy in force, health, queue and usage.
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
    let paged = lines::list(&state, &caller, &page?).await?;
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
    Ok(Json(view(&lines::get(&state, &caller, &LineId::from(id)).await?)))
}

/// Change a line's sending policy.
///
/// Each field of `policy` given as a whole number sets that limit, `null` removes it, and a field
/// left out keeps its value; the line's view shows the policy in force (the kind's defaults
/// filled in). A send over the budget is still accepted: it waits for the line.
#[utoipa::path(
    patch,
    path = "/lines/{id}",
    tag = "lines",
    security(("api_key" = ["messaging_lines"])),
    params(("id" = String, Path, description = "The line's id (`line_…`)")),
    request_body = schemas::LineUpdate,
    responses(
        (status = 200, description = "The line", body = schemas::Line),
        (status = 400, description = "A bad limit (`invalid_request`, `field` such as `policy.max_per_day`)", body = schemas::Error),
        (status = 409, description = "`line_is_shared`: a shared line's policy is the platform operator's", body = schemas::Error),
    ),
)]
async fn update_line(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Json<Value>> {
    Ok(Json(view(&lines::update(&state, &caller, &LineId::from(id), &body).await?)))
}

/// Pause a line: it sends nothing until it is resumed; what waits for it keeps waiting (each
/// message until its `validity_seconds` end).
#[utoipa::path(
    post,
    path = "/lines/{id}/pause",
    tag = "lines",
    security(("api_key" = ["messaging_lines"])),
    params(("id" = String, Path, description = "The line's id (`line_…`)")),
    responses(
        (status = 200, description = "The line, `health: paused`", body = schemas::Line),
        (status = 409, description = "`line_is_shared`", body = schemas::Error),
    ),
)]
async fn pause_line(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<String>,
    _body: Option<ApiJson<NoFields>>,
) -> ApiResult<Json<Value>> {
    Ok(Json(view(&lines::pause(&state, &caller, &LineId::from(id)).await?)))
}

/// Resume a line that is paused, flagged or offline: it sends again.
#[utoipa::path(
    post,
    path = "/lines/{id}/resume",
    tag = "lines",
    security(("api_key" = ["messaging_lines"])),
    params(("id" = String, Path, description = "The line's id (`line_…`)")),
    responses(
        (status = 200, description = "The line, `health: active`", body = schemas::Line),
        (status = 409, description = "`line_is_shared`", body = schemas::Error),
    ),
)]
async fn resume_line(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<String>,
    _body: Option<ApiJson<NoFields>>,
) -> ApiResult<Json<Value>> {
    Ok(Json(view(&lines::resume(&state, &caller, &LineId::from(id)).await?)))
}
