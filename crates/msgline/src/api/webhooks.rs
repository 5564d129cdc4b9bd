//! `GET/POST /webhooks`, `GET/DELETE /webhooks/{id}`, `POST /webhooks/{id}/rotate-secret`,
//! `GET /webhooks/{id}/deliveries` and `POST /webhooks/{id}/replay` (scope `messaging_webhooks`).
//!
//! The signing secret is in the answer only at creation and rotation. An endpoint registered
//! with a line-bound key is bound to that line: it receives only that line's events, and only
//! keys of that line (or unbound keys) see it.

use axum::{
    Json, Router,
    extract::{Path, State},
    http::StatusCode,
    routing::{get, post},
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::extract::{ApiJson, ApiQuery, PageQuery, list, page};
use crate::{
    clock,
    db::{
        self,
        webhook_deliveries::{Attempt, ReplayError},
        webhooks::{NewWebhook, Webhook},
    },
    domain::{scope::Scope, webhook::Subscriptions},
    error::{ApiError, ApiResult},
    fields::bounded,
    state::{AppState, Principal},
};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/webhooks", get(list_webhooks).post(create_webhook))
        .route("/webhooks/{id}", get(get_webhook).delete(delete_webhook))
        .route("/webhooks/{id}/rotate-secret", post(rotate_secret))
        .route("/webhooks/{id}/deliveries", get(list_deliveries))
        .route("/webhooks/{id}/replay", post(replay))
}

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
async fn find(state: &AppState, caller: &Principal, id: &str) -> ApiResult<Webhook> {
    db::webhooks::get(&state.db, &caller.org_id, id)
        .await?
        .filter(|w| caller.sees_binding(w.line_id.as_deref()))
        .ok_or_else(|| ApiError::not_found("webhook"))
}

#[derive(Deserialize)]
struct CreateWebhook {
    url: String,
    events: Vec<String>,
    description: Option<String>,
    line_id: Option<String>,
}

async fn create_webhook(
    State(state): State<AppState>,
    caller: Principal,
    ApiJson(body): ApiJson<CreateWebhook>,
) -> ApiResult<(StatusCode, Json<Value>)> {
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
    let webhook = db::webhooks::create(
        &state.db,
        NewWebhook {
            org_id: &caller.org_id,
            line_id: line_id.as_deref(),
            url,
            description: description.as_deref(),
            events: &events,
        },
    )
    .await?;
    Ok((StatusCode::CREATED, Json(view(&webhook, Some(&webhook.secret)))))
}

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

async fn get_webhook(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Webhooks)?;
    Ok(Json(view(&find(&state, &caller, &id).await?, None)))
}

async fn delete_webhook(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Webhooks)?;
    let webhook = find(&state, &caller, &id).await?;
    if !db::webhooks::delete(&state.db, &caller.org_id, &webhook.id).await? {
        return Err(ApiError::not_found("webhook"));
    }
    Ok(Json(json!({"id": webhook.id, "deleted": true})))
}

#[derive(Deserialize)]
struct RotateSecret {
    grace_seconds: Option<i64>,
}

async fn rotate_secret(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
    body: Option<ApiJson<RotateSecret>>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Webhooks)?;
    let grace_seconds = body.and_then(|ApiJson(b)| b.grace_seconds).unwrap_or(DEFAULT_GRACE_SECONDS);
    if !(0..=30 * 86_400).contains(&grace_seconds) {
        return Err(ApiError::invalid("grace_seconds", "grace_seconds must be from 0 to 2592000 (30 days)"));
    }
    let webhook = find(&state, &caller, &id).await?;
    let rotated = db::webhooks::rotate_secret(&state.db, &caller.org_id, &webhook.id, grace_seconds * 1000)
        .await?
        .ok_or_else(|| ApiError::not_found("webhook"))?;
    Ok(Json(view(&rotated, Some(&rotated.secret))))
}

#[derive(Deserialize)]
struct DeliveriesQuery {
    event_id: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

async fn list_deliveries(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<DeliveriesQuery>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Webhooks)?;
    let page = page(query.limit.as_deref(), query.cursor.as_deref())?;
    let webhook = find(&state, &caller, &id).await?;
    let event_id = query.event_id.filter(|e| !e.is_empty());
    let paged = db::webhook_deliveries::list_attempts(&state.db, &webhook.id, event_id.as_deref(), &page).await?;
    Ok(Json(list(paged, attempt_view)))
}

#[derive(Deserialize)]
struct Replay {
    since: String,
}

async fn replay(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<Replay>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    caller.require(Scope::Webhooks)?;
    let since = clock::parse_rfc3339(body.since.trim())
        .ok_or_else(|| ApiError::invalid("since", "since must be an RFC 3339 time such as 2025-01-31T12:00:00Z"))?;
    if since > clock::now_ms() {
        return Err(ApiError::invalid("since", "since is in the future"));
    }
    let webhook = find(&state, &caller, &id).await?;
    let queued = match db::webhook_deliveries::replay(&state.db, &webhook, since, MAX_REPLAY).await {
        Ok(queued) => queued,
        Err(ReplayError::TooMany(max)) => {
            return Err(ApiError::invalid(
                "since",
                format!("more than {max} events since then; replay a shorter span"),
            ));
        }
        Err(ReplayError::Db(error)) => return Err(error.into()),
    };
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"webhook_id": webhook.id, "since": clock::rfc3339(since), "queued": queued, "enabled": true})),
    ))
}
