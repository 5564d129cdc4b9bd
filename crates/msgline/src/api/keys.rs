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
use crate::{
    api::AppState,
    caller::Principal,
    clock,
    db::{
        self,
        keys::{KeyRecord, NewKey},
    },
    domain::scope::{Scope, Scopes},
    error::{ApiError, ApiResult},
    fields::bounded,
};

pub fn router() -> OpenApiRouter<AppState> {
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

/// Whether `caller` may see and manage `key`; `Err` names a scope the caller lacks.
fn may_manage(caller: &Principal, key: &KeyRecord) -> ApiResult<bool> {
    if !caller.sees_binding(key.line_id.as_deref()) {
        return Ok(false);
    }
    if let Some(scope) = key.scopes.iter().find(|s| !caller.scopes.contains(*s)) {
        return Err(ApiError::missing_scope(scope));
    }
    Ok(true)
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
    State(state): State<AppState>,
    caller: Principal,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Keys)?;
    let page = page?;
    let paged = db::keys::list_active(&state.db, &caller.org_id, caller.bound_line(), &page).await?;
    Ok(Json(list(paged, |k| view(k, None))))
}

/// `POST /keys`.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"name": "reporting", "scopes": ["messaging_read"]}))]
pub struct CreateKey {
    /// Up to 100 characters.
    #[schema(max_length = 100)]
    pub name: Option<String>,
    /// At least one, each within the caller's own: `messaging_send`, `messaging_read`,
    /// `messaging_contacts`, `messaging_webhooks`, `messaging_keys`, `messaging_agents`.
    pub scopes: Vec<String>,
    /// Bind the key to one line (a line-bound caller's keys are bound to its line).
    pub line_id: Option<String>,
}

/// Creates a key with the API's rules (scopes within the caller's, a line of its organisation);
/// the secret, once. The console creates keys through this too.
pub async fn create(state: &AppState, caller: &Principal, body: CreateKey) -> ApiResult<(KeyRecord, String)> {
    caller.require(Scope::Keys)?;
    let name = bounded("name", body.name, 100)?.unwrap_or_else(|| "unnamed".into());
    let scopes = Scopes::parse(body.scopes.iter().map(String::as_str))
        .map_err(|bad| ApiError::invalid("scopes", format!("unknown scope {bad:?}")))?;
    if scopes.is_empty() {
        return Err(ApiError::invalid("scopes", "a key needs at least one scope"));
    }
    if let Some(scope) = scopes.iter().find(|s| !caller.scopes.contains(*s)) {
        return Err(ApiError::missing_scope(scope));
    }
    let line_id = caller.line_for(body.line_id)?;
    if let Some(line_id) = &line_id
        && db::lines::get_for_org(&state.db, &caller.org_id, line_id).await?.is_none()
    {
        return Err(ApiError::not_found("line").with("field", "line_id"));
    }
    Ok(db::keys::create(
        state.db.writer(),
        NewKey { org_id: &caller.org_id, name: &name, scopes: &scopes, line_id: line_id.as_deref() },
    )
    .await?)
}

/// Rotates a key the caller may manage: the new key and its secret, and when the old one stops.
pub async fn rotate(
    state: &AppState,
    caller: &Principal,
    id: &str,
    grace_seconds: i64,
) -> ApiResult<(KeyRecord, String, i64)> {
    caller.require(Scope::Keys)?;
    if !(0..=30 * 86_400).contains(&grace_seconds) {
        return Err(ApiError::invalid("grace_seconds", "grace_seconds must be from 0 to 2592000 (30 days)"));
    }
    let key = db::keys::get_active(&state.db, &caller.org_id, id).await?.ok_or_else(|| ApiError::not_found("key"))?;
    if !may_manage(caller, &key)? {
        return Err(ApiError::not_found("key"));
    }
    let rotated = db::keys::rotate(&state.db, &caller.org_id, id, grace_seconds * 1000)
        .await?
        .ok_or_else(|| ApiError::not_found("key"))?;
    state.auth().changed(&state.db, id).await;
    Ok(rotated)
}

/// Revokes a key the caller may manage, at once, on every instance.
pub async fn revoke(state: &AppState, caller: &Principal, id: &str) -> ApiResult<KeyRecord> {
    caller.require(Scope::Keys)?;
    let key = db::keys::get_active(&state.db, &caller.org_id, id).await?.ok_or_else(|| ApiError::not_found("key"))?;
    if !may_manage(caller, &key)? {
        return Err(ApiError::not_found("key"));
    }
    let revoked = db::keys::revoke(&state.db, &caller.org_id, id).await?.ok_or_else(|| ApiError::not_found("key"))?;
    state.auth().changed(&state.db, id).await;
    Ok(revoked)
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
    State(state): State<AppState>,
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
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
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
async fn revoke_key(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    Ok(Json(view(&revoke(&state, &caller, &id).await?, None)))
}
