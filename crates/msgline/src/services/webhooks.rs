//! Webhook endpoints: registering one (its URL through the egress check), rotating its secret,
//! disabling, enabling, replaying and deleting it, all with `messaging_webhooks`. An endpoint
//! registered by a line-bound caller is bound to that line, and only callers of that line (or
//! unbound ones) see it.

use serde::Deserialize;

use crate::{
    caller::Principal,
    clock,
    db::{
        self,
        webhook_fan_out::ReplayError,
        webhooks::{NewWebhook, Webhook},
    },
    domain::{id::WebhookId, scope::Scope, webhook::Subscriptions},
    error::{ApiError, ApiResult},
    fields::bounded,
    services::Services,
};

const MAX_URL_CHARS: usize = 2048;

/// Most events one replay may queue; a longer window is refused rather than half done.
const MAX_REPLAY: usize = 50_000;

/// The caller's endpoint with this id, or 404 (also for one bound to a line the caller is not).
/// Needs `messaging_webhooks`, whoever asks.
pub async fn find(state: &Services, caller: &Principal, id: &WebhookId) -> ApiResult<Webhook> {
    caller.require(Scope::Webhooks)?;
    db::webhooks::get(&state.sender.db, &caller.org_id, id)
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
pub async fn create(state: &Services, caller: &Principal, body: CreateWebhook) -> ApiResult<Webhook> {
    caller.require(Scope::Webhooks)?;
    let url = body.url.trim();
    if url.chars().count() > MAX_URL_CHARS {
        return Err(ApiError::invalid("url", format!("url is limited to {MAX_URL_CHARS} characters")));
    }
    state.sender.egress.check_url(url).map_err(|e| ApiError::invalid("url", e.to_string()))?;
    let events = Subscriptions::parse(body.events.iter().map(String::as_str))
        .map_err(|e| ApiError::invalid("events", e.describe()))?;
    let description = bounded("description", body.description, 200)?.filter(|d| !d.is_empty());
    let line_id = caller.line_for(body.line_id)?;
    if let Some(line_id) = &line_id
        && db::lines::get_for_org(&state.sender.db, &caller.org_id, line_id).await?.is_none()
    {
        return Err(ApiError::not_found("line").with("field", "line_id"));
    }
    Ok(db::webhooks::create(
        &state.sender.db,
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
pub async fn rotate(state: &Services, caller: &Principal, id: &WebhookId, grace_seconds: i64) -> ApiResult<Webhook> {
    caller.require(Scope::Webhooks)?;
    if !(0..=30 * 86_400).contains(&grace_seconds) {
        return Err(ApiError::invalid("grace_seconds", "grace_seconds must be from 0 to 2592000 (30 days)"));
    }
    let webhook = find(state, caller, id).await?;
    db::webhooks::rotate_secret(&state.sender.db, &caller.org_id, &webhook.id, grace_seconds * 1000)
        .await?
        .ok_or_else(|| ApiError::not_found("webhook"))
}

/// Disables an endpoint by hand (its pending deliveries end as failed, as when msgline disables
/// it), or enables it again; the console's switch.
pub async fn set_enabled(state: &Services, caller: &Principal, id: &WebhookId, enabled: bool) -> ApiResult<Webhook> {
    caller.require(Scope::Webhooks)?;
    let webhook = find(state, caller, id).await?;
    let now = clock::now_ms();
    state
        .sender
        .db
        .write(async |conn| {
            if enabled {
                db::webhooks::enable(conn, &webhook.id, now).await
            } else if webhook.enabled {
                db::webhooks::disable(conn, &webhook.id, "manual", now).await
            } else {
                Ok(())
            }
        })
        .await?;
    find(state, caller, id).await
}

/// Deletes an endpoint with its delivery history; needs `messaging_webhooks` (a console member
/// has it not), the API and the console alike.
pub async fn delete(state: &Services, caller: &Principal, id: &WebhookId) -> ApiResult<Webhook> {
    caller.require(Scope::Webhooks)?;
    let webhook = find(state, caller, id).await?;
    if !db::webhooks::delete(&state.sender.db, &caller.org_id, &webhook.id).await? {
        return Err(ApiError::not_found("webhook"));
    }
    Ok(webhook)
}

/// Delivers an endpoint's events since `since` again, and enables it; how many were queued.
pub async fn replay_since(
    state: &Services,
    caller: &Principal,
    id: &WebhookId,
    since: i64,
) -> ApiResult<(Webhook, usize)> {
    caller.require(Scope::Webhooks)?;
    if since > clock::now_ms() {
        return Err(ApiError::invalid("since", "since is in the future"));
    }
    let webhook = find(state, caller, id).await?;
    match db::webhook_fan_out::replay(&state.sender.db, &webhook, since, MAX_REPLAY).await {
        Ok(queued) => Ok((webhook, queued)),
        Err(ReplayError::TooMany(max)) => {
            Err(ApiError::invalid("since", format!("more than {max} events since then; replay a shorter span")))
        }
        Err(ReplayError::Db(error)) => Err(error.into()),
    }
}
