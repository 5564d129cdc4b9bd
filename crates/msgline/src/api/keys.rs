//! `GET/POST /keys`, `POST /keys/{id}/rotate`, `DELETE /keys/{id}` (scope `messaging_keys`).
//!
//! A caller manages only keys it could have made itself: scopes within its own, and, for a
//! line-bound caller, keys bound to the same line. Other keys are invisible to it (404).

use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{ApiJson, PageParams, PageQuery, list},
    openapi::schemas,
};
use crate::services::keys::{CreateKey, create, revoke, rotate};
use crate::{
    caller::Principal,
    clock,
    db::{self, keys::KeyRecord},
    domain::{id::KeyId, scope::Scope},
    error::ApiResult,
    services::Services,
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new().routes(routes!(list_keys, create_key)).routes(routes!(rotate_key)).routes(routes!(revoke_key))
}

/// The public view of a key; the secret only at creation or rotation.
pub fn view(key: &KeyRecord, secret: Option<&str>) -> Value {
    let mut value = json!({
        "id": key.id,
        "name": key.name,
        "scopes": key.scopes.names(),
        "line_id": key.line_id,
        "key_hint": format!("…{}", key.key_hint),
        "created_at": clock::rfc3339(key.created_at),
        "expires_at": clock::rfc3339_opt(key.expires_at),
        "revoked_at": clock::rfc3339_opt(key.revoked_at),
    });
    if let Some(secret) = secret {
        value["key"] = json!(secret);
    }
    value
}

/// The active keys the caller may manage (never their secrets).
#[utoipa::path(
    get,
    path = "/keys",
    tag = "keys",
    security(("api_key" = ["messaging_keys"])),
    params(PageParams),
    responses((status = 200, description = "A page of keys", body = schemas::List<schemas::Key>)),
)]
async fn list_keys(
    State(state): State<Services>,
    caller: Principal,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Keys)?;
    let page = page?;
    let paged = db::keys::list_active(&state.sender.db, &caller.org_id, caller.bound_line(), &page).await?;
    Ok(Json(list(paged, |k| view(k, None))))
}

/// Create an API key; the answer carries its secret, once.
#[utoipa::path(
    post,
    path = "/keys",
    tag = "keys",
    security(("api_key" = ["messaging_keys"])),
    request_body = CreateKey,
    responses(
        (status = 201, description = "The key, with `key`", body = schemas::Key),
        (status = 404, description = "A `line_id` that does not resolve (`not_found`, with `field`)", body = schemas::Error),
        (status = 409, description = "A line-bound key naming another line (`line_mismatch`)", body = schemas::Error),
    ),
)]
async fn create_key(
    State(state): State<Services>,
    caller: Principal,
    ApiJson(body): ApiJson<CreateKey>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let (key, secret) = create(&state, &caller, body).await?;
    Ok((StatusCode::CREATED, Json(view(&key, Some(&secret)))))
}

/// `POST /keys/{id}/rotate` (the body is optional).
#[derive(Deserialize, Default, utoipa::ToSchema)]
struct RotateKey {
    /// How long the old key keeps working: 0 to 2,592,000 seconds (default 86,400).
    #[schema(minimum = 0, maximum = 2592000)]
    grace_seconds: Option<i64>,
}

/// Rotate a key: a new key with the same name, scopes and line; the old one keeps working for
/// the grace period.
#[utoipa::path(
    post,
    path = "/keys/{id}/rotate",
    tag = "keys",
    security(("api_key" = ["messaging_keys"])),
    params(("id" = String, Path, description = "The key's id (`key_…`)")),
    request_body(content = Option<RotateKey>, description = "Optional"),
    responses((status = 201, description = "The new key, with `key`, `previous_key_id` and `previous_key_expires_at`", body = schemas::Key)),
)]
async fn rotate_key(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<KeyId>,
    body: Option<ApiJson<RotateKey>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let grace_seconds = body.and_then(|ApiJson(b)| b.grace_seconds).unwrap_or(86_400);
    let (new, secret, ends) = rotate(&state, &caller, &id, grace_seconds).await?;
    let mut body = view(&new, Some(&secret));
    body["previous_key_id"] = json!(id);
    body["previous_key_expires_at"] = json!(clock::rfc3339(ends));
    Ok((StatusCode::CREATED, Json(body)))
}

/// Revoke a key at once.
#[utoipa::path(
    delete,
    path = "/keys/{id}",
    tag = "keys",
    security(("api_key" = ["messaging_keys"])),
    params(("id" = String, Path, description = "The key's id (`key_…`)")),
    responses((status = 200, description = "The revoked key", body = schemas::Key)),
)]
async fn revoke_key(State(state): State<Services>, caller: Principal, Path(id): Path<KeyId>) -> ApiResult<Json<Value>> {
    Ok(Json(view(&revoke(&state, &caller, &id).await?, None)))
}
