//! `GET/POST /webhooks`, `GET/DELETE /webhooks/{id}`, `POST /webhooks/{id}/rotate-secret`,
//! `GET /webhooks/{id}/deliveries` and `POST /webhooks/{id}/replay` (scope `messaging_webhooks`).
//!
//! The signing secret is in the answer only at creation and rotation. An endpoint registered
//! with a line-bound key is bound to that line: it receives only that line's events, and only
//! keys of that line (or unbound keys) see it.

use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{ApiJson, ApiQuery, PageParams, PageQuery, list},
    openapi::schemas,
};
use crate::services::webhooks::{CreateWebhook, create, delete, find, replay_since, rotate, set_enabled};
use crate::{
    caller::Principal,
    clock,
    db::{self, webhook_deliveries::Attempt, webhooks::Webhook},
    domain::{id::WebhookId, scope::Scope},
    error::{ApiError, ApiResult},
    services::Services,
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new()
        .routes(routes!(list_webhooks, create_webhook))
        .routes(routes!(get_webhook, update_webhook, delete_webhook))
        .routes(routes!(rotate_secret))
        .routes(routes!(list_deliveries))
        .routes(routes!(replay))
}

const ID: &str = "The endpoint's id (`wh_…`)";

const DEFAULT_GRACE_SECONDS: i64 = 86_400;

/// The public view of an endpoint; the secret only at creation or rotation.
fn view(webhook: &Webhook, secret: Option<&str>) -> Value {
    let now = clock::now_ms();
    let mut value = json!({
        "id": webhook.id,
        "url": webhook.url,
        "description": webhook.description,
        "events": webhook.events.names(),
        "line_id": webhook.line_id,
        "enabled": webhook.enabled,
        "disabled_reason": webhook.disabled_reason,
        "disabled_at": clock::rfc3339_opt(webhook.disabled_at),
        "previous_secret_expires_at": clock::rfc3339_opt(webhook.previous_secret_expires_at.filter(|at| *at > now)),
        "created_at": clock::rfc3339(webhook.created_at),
        "updated_at": clock::rfc3339(webhook.updated_at),
    });
    if let Some(secret) = secret {
        value["secret"] = json!(secret);
    }
    value
}

fn attempt_view(attempt: &Attempt) -> Value {
    json!({
        "id": attempt.id,
        "webhook_id": attempt.webhook_id,
        "event_id": attempt.event_id,
        "event_type": attempt.event_type,
        "attempt": attempt.attempt,
        "status_code": attempt.status_code,
        "succeeded": attempt.succeeded,
        "latency_ms": attempt.latency_ms,
        "response_body": attempt.response_body,
        "error": attempt.error,
        "next_attempt_at": clock::rfc3339_opt(attempt.next_attempt_at),
        "created_at": clock::rfc3339(attempt.created_at),
    })
}

/// Register a webhook endpoint; the answer carries its signing secret, once.
#[utoipa::path(
    post,
    path = "/webhooks",
    tag = "webhooks",
    security(("api_key" = ["messaging_webhooks"])),
    request_body = CreateWebhook,
    responses(
        (status = 201, description = "The endpoint, with `secret`", body = schemas::Webhook),
        (status = 404, description = "A `line_id` that does not resolve (`not_found`, with `field`)", body = schemas::Error),
        (status = 409, description = "A line-bound key naming another line (`line_mismatch`)", body = schemas::Error),
    ),
)]
async fn create_webhook(
    State(state): State<Services>,
    caller: Principal,
    ApiJson(body): ApiJson<CreateWebhook>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let webhook = create(&state, &caller, body).await?;
    Ok((StatusCode::CREATED, Json(view(&webhook, Some(&webhook.secret)))))
}

/// The caller's webhook endpoints.
#[utoipa::path(
    get,
    path = "/webhooks",
    tag = "webhooks",
    security(("api_key" = ["messaging_webhooks"])),
    params(PageParams),
    responses((status = 200, description = "A page of endpoints", body = schemas::List<schemas::Webhook>)),
)]
async fn list_webhooks(
    State(state): State<Services>,
    caller: Principal,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Webhooks)?;
    let page = page?;
    let paged = db::webhooks::list(&state.sender.db, &caller.org_id, caller.bound_line(), &page).await?;
    Ok(Json(list(paged, |w| view(w, None))))
}

/// A webhook endpoint.
#[utoipa::path(
    get,
    path = "/webhooks/{id}",
    tag = "webhooks",
    security(("api_key" = ["messaging_webhooks"])),
    params(("id" = String, Path, description = ID)),
    responses((status = 200, description = "The endpoint", body = schemas::Webhook)),
)]
async fn get_webhook(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<WebhookId>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Webhooks)?;
    Ok(Json(view(&find(&state, &caller, &id).await?, None)))
}

/// `PATCH /webhooks/{id}`.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct UpdateWebhook {
    /// `false` stops deliveries to the endpoint (`disabled_reason: manual`; its waiting
    /// deliveries are given up); `true` starts them again from the next event. Events of the time
    /// it was disabled reach it only through a replay. Required.
    enabled: Option<bool>,
}

/// Disable or enable a webhook endpoint.
#[utoipa::path(
    patch,
    path = "/webhooks/{id}",
    tag = "webhooks",
    security(("api_key" = ["messaging_webhooks"])),
    params(("id" = String, Path, description = ID)),
    request_body = UpdateWebhook,
    responses((status = 200, description = "The endpoint", body = schemas::Webhook)),
)]
async fn update_webhook(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<WebhookId>,
    ApiJson(update): ApiJson<UpdateWebhook>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Webhooks)?;
    // Another organisation's endpoint is not found, whatever the body says.
    find(&state, &caller, &id).await?;
    let enabled = update.enabled.ok_or_else(|| ApiError::invalid("enabled", "enabled is required"))?;
    Ok(Json(view(&set_enabled(&state, &caller, &id, enabled).await?, None)))
}

/// Delete a webhook endpoint.
#[utoipa::path(
    delete,
    path = "/webhooks/{id}",
    tag = "webhooks",
    security(("api_key" = ["messaging_webhooks"])),
    params(("id" = String, Path, description = ID)),
    responses((status = 200, description = "Deleted", body = schemas::Deleted)),
)]
async fn delete_webhook(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<WebhookId>,
) -> ApiResult<Json<Value>> {
    let webhook = delete(&state, &caller, &id).await?;
    Ok(Json(json!({"id": webhook.id, "deleted": true})))
}

/// `POST /webhooks/{id}/rotate-secret` (the body is optional).
#[derive(Deserialize, utoipa::ToSchema)]
struct RotateSecret {
    /// How long the old secret still signs too: 0 to 2,592,000 seconds (default 86,400).
    #[schema(minimum = 0, maximum = 2592000)]
    grace_seconds: Option<i64>,
}

/// Rotate an endpoint's signing secret.
#[utoipa::path(
    post,
    path = "/webhooks/{id}/rotate-secret",
    tag = "webhooks",
    security(("api_key" = ["messaging_webhooks"])),
    params(("id" = String, Path, description = ID)),
    request_body(content = Option<RotateSecret>, description = "Optional"),
    responses((status = 200, description = "The endpoint, with its new `secret`", body = schemas::Webhook)),
)]
async fn rotate_secret(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<WebhookId>,
    body: Option<ApiJson<RotateSecret>>,
) -> ApiResult<Json<Value>> {
    let grace_seconds = body.and_then(|ApiJson(b)| b.grace_seconds).unwrap_or(DEFAULT_GRACE_SECONDS);
    let rotated = rotate(&state, &caller, &id, grace_seconds).await?;
    Ok(Json(view(&rotated, Some(&rotated.secret))))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct DeliveriesQuery {
    /// Only this event's attempts.
    event_id: Option<String>,
}

/// An endpoint's delivery attempts, newest first.
#[utoipa::path(
    get,
    path = "/webhooks/{id}/deliveries",
    tag = "webhooks",
    security(("api_key" = ["messaging_webhooks"])),
    params(("id" = String, Path, description = ID), DeliveriesQuery, PageParams),
    responses((status = 200, description = "A page of attempts", body = schemas::List<schemas::WebhookAttempt>)),
)]
async fn list_deliveries(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<WebhookId>,
    ApiQuery(query): ApiQuery<DeliveriesQuery>,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Webhooks)?;
    let page = page?;
    let webhook = find(&state, &caller, &id).await?;
    let event_id = query.event_id.filter(|e| !e.is_empty());
    let paged =
        db::webhook_deliveries::list_attempts(&state.sender.db, &webhook.id, event_id.as_deref(), &page).await?;
    Ok(Json(list(paged, attempt_view)))
}

/// `POST /webhooks/{id}/replay`.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"since": "2026-01-01T00:00:00Z"}))]
struct Replay {
    /// Every event since this time (RFC 3339) is delivered again; at most 50,000.
    #[schema(format = DateTime)]
    since: String,
}

/// Deliver an endpoint's events since a time again (and enable it).
#[utoipa::path(
    post,
    path = "/webhooks/{id}/replay",
    tag = "webhooks",
    security(("api_key" = ["messaging_webhooks"])),
    params(("id" = String, Path, description = ID)),
    request_body = Replay,
    responses((status = 202, description = "The events were queued", body = schemas::Replayed)),
)]
async fn replay(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<WebhookId>,
    ApiJson(body): ApiJson<Replay>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    caller.require(Scope::Webhooks)?;
    let since = clock::parse_rfc3339(body.since.trim())
        .ok_or_else(|| ApiError::invalid("since", "since must be an RFC 3339 time such as 2025-01-31T12:00:00Z"))?;
    let (webhook, queued) = replay_since(&state, &caller, &id, since).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"webhook_id": webhook.id, "since": clock::rfc3339(since), "queued": queued, "enabled": true})),
    ))
}
