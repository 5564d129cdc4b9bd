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
use crate::{
    api::AppState,
    caller::Principal,
    clock,
    db::{
        self,
        webhook_deliveries::{Attempt, ReplayError},
        webhooks::{NewWebhook, Webhook},
    },
    domain::{scope::Scope, webhook::Subscriptions},
    error::{ApiError, ApiResult},
    fields::bounded,
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_webhooks, create_webhook))
        .routes(routes!(get_webhook, update_webhook, delete_webhook))
        .routes(routes!(rotate_secret))
        .routes(routes!(list_deliveries))
        .routes(routes!(replay))
}

const ID: &str = "The endpoint's id (`wh_…`)";

const MAX_URL_CHARS: usize = 2048;
/// Most events one replay may queue; a longer window is refused rather than half done.
const MAX_REPLAY: usize = 50_000;
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

/// The caller's endpoint with this id, or 404 (also for one bound to a line the caller is not).
/// Needs `messaging_webhooks`, whoever asks.
pub async fn find(state: &AppState, caller: &Principal, id: &str) -> ApiResult<Webhook> {
    caller.require(Scope::Webhooks)?;
    db::webhooks::get(&state.db, &caller.org_id, id)
        .await?
        .filter(|w| caller.sees_binding(w.line_id.as_deref()))
        .ok_or_else(|| ApiError::not_found("webhook"))
}

/// `POST /webhooks`.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"url": "https://example.com/hooks/msgline", "events": ["messaging.message.delivered", "messaging.message.received"]}))]
pub struct CreateWebhook {
    /// Where events are posted: `https://` (or `http://`), never a private address; up to 2,048
    /// characters.
    #[schema(max_length = 2048)]
    pub url: String,
    /// Event types (`messaging.message.delivered`), or `*` for all.
    pub events: Vec<String>,
    #[schema(max_length = 200)]
    pub description: Option<String>,
    /// Only this line's events (a line-bound caller's endpoints are bound to its line).
    pub line_id: Option<String>,
}

/// Registers an endpoint with the API's rules (the egress check of its URL, known events, a line
/// of the organisation); the console registers through this too.
pub async fn create(state: &AppState, caller: &Principal, body: CreateWebhook) -> ApiResult<Webhook> {
    caller.require(Scope::Webhooks)?;
    let url = body.url.trim();
    if url.chars().count() > MAX_URL_CHARS {
        return Err(ApiError::invalid("url", format!("url is limited to {MAX_URL_CHARS} characters")));
    }
    state.egress.check_url(url).map_err(|e| ApiError::invalid("url", e.to_string()))?;
    let events = Subscriptions::parse(body.events.iter().map(String::as_str))
        .map_err(|e| ApiError::invalid("events", e.describe()))?;
    let description = bounded("description", body.description, 200)?.filter(|d| !d.is_empty());
    let line_id = caller.line_for(body.line_id)?;
    if let Some(line_id) = &line_id
        && db::lines::get_for_org(&state.db, &caller.org_id, line_id).await?.is_none()
    {
        return Err(ApiError::not_found("line").with("field", "line_id"));
    }
    Ok(db::webhooks::create(
        &state.db,
        NewWebhook {
            org_id: &caller.org_id,
            line_id: line_id.as_deref(),
            url,
            description: description.as_deref(),
            events: &events,
        },
    )
    .await?)
}

/// Rotates an endpoint's signing secret; the old one still signs for `grace_seconds`.
pub async fn rotate(state: &AppState, caller: &Principal, id: &str, grace_seconds: i64) -> ApiResult<Webhook> {
    caller.require(Scope::Webhooks)?;
    if !(0..=30 * 86_400).contains(&grace_seconds) {
        return Err(ApiError::invalid("grace_seconds", "grace_seconds must be from 0 to 2592000 (30 days)"));
    }
    let webhook = find(state, caller, id).await?;
    db::webhooks::rotate_secret(&state.db, &caller.org_id, &webhook.id, grace_seconds * 1000)
        .await?
        .ok_or_else(|| ApiError::not_found("webhook"))
}

/// Disables an endpoint by hand (its pending deliveries end as failed, as when msgline disables
/// it), or enables it again; the console's switch.
pub async fn set_enabled(state: &AppState, caller: &Principal, id: &str, enabled: bool) -> ApiResult<Webhook> {
    caller.require(Scope::Webhooks)?;
    let webhook = find(state, caller, id).await?;
    let mut conn = state.db.writer().acquire().await?;
    let now = clock::now_ms();
    if enabled {
        db::webhooks::enable(&mut conn, &webhook.id, now).await?;
    } else if webhook.enabled {
        db::webhooks::disable(&mut conn, &webhook.id, "manual", now).await?;
    }
    drop(conn);
    find(state, caller, id).await
}

/// Deletes an endpoint with its delivery history; needs `messaging_webhooks` (a console member
/// has it not), the API and the console alike.
pub async fn delete(state: &AppState, caller: &Principal, id: &str) -> ApiResult<Webhook> {
    caller.require(Scope::Webhooks)?;
    let webhook = find(state, caller, id).await?;
    if !db::webhooks::delete(&state.db, &caller.org_id, &webhook.id).await? {
        return Err(ApiError::not_found("webhook"));
    }
    Ok(webhook)
}

/// Delivers an endpoint's events since `since` again, and enables it; how many were queued.
pub async fn replay_since(state: &AppState, caller: &Principal, id: &str, since: i64) -> ApiResult<(Webhook, usize)> {
    caller.require(Scope::Webhooks)?;
    if since > clock::now_ms() {
        return Err(ApiError::invalid("since", "since is in the future"));
    }
    let webhook = find(state, caller, id).await?;
    match db::webhook_deliveries::replay(&state.db, &webhook, since, MAX_REPLAY).await {
        Ok(queued) => Ok((webhook, queued)),
        Err(ReplayError::TooMany(max)) => {
            Err(ApiError::invalid("since", format!("more than {max} events since then; replay a shorter span")))
        }
        Err(ReplayError::Db(error)) => Err(error.into()),
    }
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
    State(state): State<AppState>,
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
    State(state): State<AppState>,
    caller: Principal,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Webhooks)?;
    let page = page?;
    let paged = db::webhooks::list(&state.db, &caller.org_id, caller.bound_line(), &page).await?;
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
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
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
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
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
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
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
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
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
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<DeliveriesQuery>,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Webhooks)?;
    let page = page?;
    let webhook = find(&state, &caller, &id).await?;
    let event_id = query.event_id.filter(|e| !e.is_empty());
    let paged = db::webhook_deliveries::list_attempts(&state.db, &webhook.id, event_id.as_deref(), &page).await?;
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
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
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
