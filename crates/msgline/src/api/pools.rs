//! Sender pools (scope `messaging_lines`): `GET/POST /pools`, `GET/PATCH/DELETE /pools/{id}`.

use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
};
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{ApiJson, PageParams, PageQuery, list},
    openapi::schemas,
};
use crate::{
    caller::Principal,
    clock,
    db::pools::Pool,
    domain::id::PoolId,
    error::ApiResult,
    services::{
        Services,
        pools::{self, PoolFields},
    },
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new().routes(routes!(list_pools, create_pool)).routes(routes!(get_pool, update_pool, delete_pool))
}

const ID: &str = "The pool's id (`pool_…`)";

fn view(pool: &Pool) -> Value {
    json!({
        "id": pool.id,
        "name": pool.name,
        "line_ids": pool.line_ids,
        "failover_after_seconds": pool.failover_after_seconds,
        "created_at": clock::rfc3339(pool.created_at),
    })
}

/// Create a sender pool.
///
/// A send that names `pool_id` goes out on the contact's line in the pool (its latest
/// conversation's), or for a new contact on the pool's line with the most of today's budget
/// left. A message waiting on a pool line that has been paused, flagged or offline for
/// `failover_after_seconds` moves to another active line of the pool, if no line has been handed it.
#[utoipa::path(
    post,
    path = "/pools",
    tag = "lines",
    security(("api_key" = ["messaging_lines"])),
    request_body = PoolFields,
    responses(
        (status = 201, description = "The pool", body = schemas::Pool),
        (status = 400, description = "A bad field (`invalid_request` with `field`)", body = schemas::Error),
        (status = 404, description = "A line in `line_ids` the organisation does not have", body = schemas::Error),
    ),
)]
async fn create_pool(
    State(state): State<Services>,
    caller: Principal,
    ApiJson(fields): ApiJson<PoolFields>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    Ok((StatusCode::CREATED, Json(view(&pools::create(&state, &caller, fields).await?))))
}

/// The organisation's pools, newest first.
#[utoipa::path(
    get,
    path = "/pools",
    tag = "lines",
    security(("api_key" = ["messaging_lines"])),
    params(PageParams),
    responses((status = 200, description = "A page of pools", body = schemas::List<schemas::Pool>)),
)]
async fn list_pools(
    State(state): State<Services>,
    caller: Principal,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    Ok(Json(list(pools::list(&state, &caller, &page?).await?, view)))
}

/// A pool.
#[utoipa::path(
    get,
    path = "/pools/{id}",
    tag = "lines",
    security(("api_key" = ["messaging_lines"])),
    params(("id" = String, Path, description = ID)),
    responses((status = 200, description = "The pool", body = schemas::Pool)),
)]
async fn get_pool(State(state): State<Services>, caller: Principal, Path(id): Path<PoolId>) -> ApiResult<Json<Value>> {
    Ok(Json(view(&pools::get(&state, &caller, &id).await?)))
}

/// Change a pool: a field left out keeps its value; `line_ids` replaces the lines.
#[utoipa::path(
    patch,
    path = "/pools/{id}",
    tag = "lines",
    security(("api_key" = ["messaging_lines"])),
    params(("id" = String, Path, description = ID)),
    request_body = PoolFields,
    responses(
        (status = 200, description = "The pool", body = schemas::Pool),
        (status = 400, description = "A bad field (`invalid_request` with `field`)", body = schemas::Error),
    ),
)]
async fn update_pool(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<PoolId>,
    ApiJson(fields): ApiJson<PoolFields>,
) -> ApiResult<Json<Value>> {
    Ok(Json(view(&pools::update(&state, &caller, &id, fields).await?)))
}

/// Delete a pool; what was sent through it stays on the line it waits on.
#[utoipa::path(
    delete,
    path = "/pools/{id}",
    tag = "lines",
    security(("api_key" = ["messaging_lines"])),
    params(("id" = String, Path, description = ID)),
    responses((status = 204, description = "Deleted")),
)]
async fn delete_pool(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<PoolId>,
) -> ApiResult<StatusCode> {
    pools::delete(&state, &caller, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
