//! Webhooks (owners): the endpoints; registering one with an event picker (its signing secret
//! shown once); an endpoint's delivery log with each attempt's response; replay, secret
//! rotation, disable and enable, delete. Through the API's own functions (`api::webhooks`).

use axum::{
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Redirect, Response},
};
use minijinja::context;

use super::{
    pages::render,
    session::{SignedIn, csrf_ok, csrf_refused},
    shared::{describe, form_pairs, line_choices, page_context, refused, unavailable},
};
use crate::{
    clock,
    db::{self, Page},
    domain::{id::WebhookId, scope::Scope, webhook::EVENT_TYPES},
    services::{Services, webhooks::CreateWebhook},
};

/// `GET /console/webhooks`.
pub async fn list(State(state): State<Services>, signed_in: SignedIn) -> Response {
    list_page(&state, &signed_in, StatusCode::OK, context! {}).await
}

async fn list_page(state: &Services, signed_in: &SignedIn, status: StatusCode, extra: minijinja::Value) -> Response {
    let caller = &signed_in.principal;
    if let Err(error) = caller.require(Scope::Webhooks) {
        return refused(&error);
    }
    let all = Page { limit: 100, before: None };
    let hooks = match db::webhooks::list(&state.sender.db, &caller.org_id, caller.bound_line(), &all).await {
        Ok(found) => found.rows,
        Err(error) => return unavailable(error),
    };
    let lines = match line_choices(state, &caller.org_id).await {
        Ok(lines) => lines,
        Err(error) => return unavailable(error),
    };
    let hooks: Vec<_> = hooks
        .iter()
        .map(|h| {
            context! { id => h.id, url => h.url, description => h.description, events => h.events.names(),
            line_id => h.line_id, enabled => h.enabled, failing_since => clock::rfc3339_opt(h.failing_since),
            disabled_reason => h.disabled_reason }
        })
        .collect();
    let context = context! { hooks, lines, event_types => EVENT_TYPES.to_vec(), ..extra };
    render(status, "webhooks.html", page_context(signed_in, "webhooks", context))
}

/// `POST /console/webhooks`: `event` once per ticked box.
pub async fn create(State(state): State<Services>, signed_in: SignedIn, body: axum::body::Bytes) -> Response {
    let form = form_pairs(&body);
    if !csrf_ok(&signed_in, &form.one("csrf")) {
        return csrf_refused();
    }
    let request = CreateWebhook {
        url: form.one("url"),
        events: form.all("event"),
        description: Some(form.one("description")),
        line_id: Some(form.one("line_id")).filter(|l| !l.is_empty()),
    };
    match crate::services::webhooks::create(&state, &signed_in.principal, request).await {
        Ok(hook) => {
            let created = context! { id => hook.id, url => hook.url, secret => hook.secret };
            list_page(&state, &signed_in, StatusCode::CREATED, context! { created }).await
        }
        Err(error) => {
            let status = crate::web::errors::status(error.kind);
            list_page(&state, &signed_in, status, context! { error => describe(&error) }).await
        }
    }
}

/// `GET /console/webhooks/{id}`: the endpoint and its latest delivery attempts.
pub async fn endpoint(State(state): State<Services>, signed_in: SignedIn, Path(id): Path<String>) -> Response {
    endpoint_page(&state, &signed_in, &id, StatusCode::OK, context! {}).await
}

async fn endpoint_page(
    state: &Services,
    signed_in: &SignedIn,
    id: &str,
    status: StatusCode,
    extra: minijinja::Value,
) -> Response {
    if let Err(error) = signed_in.principal.require(Scope::Webhooks) {
        return refused(&error);
    }
    let hook = match crate::services::webhooks::find(state, &signed_in.principal, &WebhookId::from(id)).await {
        Ok(hook) => hook,
        Err(error) => return refused(&error),
    };
    let page = Page { limit: 50, before: None };
    let attempts = match db::webhook_deliveries::list_attempts(&state.sender.db, &hook.id, None, &page).await {
        Ok(found) => found.rows,
        Err(error) => return unavailable(error),
    };
    let attempts: Vec<_> = attempts
        .iter()
        .map(|a| {
            context! { event_id => a.event_id, event_type => a.event_type, attempt => a.attempt,
            status_code => a.status_code, succeeded => a.succeeded, latency_ms => a.latency_ms,
            response_body => a.response_body.as_deref().map(|b| b.chars().take(300).collect::<String>()),
            error => a.error, next_attempt_at => clock::rfc3339_opt(a.next_attempt_at),
            created_at => clock::rfc3339(a.created_at) }
        })
        .collect();
    let context = context! {
        hook => context! { id => hook.id, url => hook.url, description => hook.description,
            events => hook.events.names(), line_id => hook.line_id, enabled => hook.enabled,
            disabled_reason => hook.disabled_reason, failing_since => clock::rfc3339_opt(hook.failing_since),
            previous_secret_expires_at => clock::rfc3339_opt(hook.previous_secret_expires_at) },
        attempts,
        ..extra
    };
    render(status, "webhook.html", page_context(signed_in, "webhooks", context))
}

/// `POST /console/webhooks/{id}/{action}`: `replay` (`hours` back), `rotate`, `disable`,
/// `enable` or `delete`.
pub async fn act(
    State(state): State<Services>,
    signed_in: SignedIn,
    Path((id, action)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    let form = form_pairs(&body);
    if !csrf_ok(&signed_in, &form.one("csrf")) {
        return csrf_refused();
    }
    let caller = &signed_in.principal;
    let id = WebhookId::from(id);
    let done = match action.as_str() {
        "replay" => {
            let hours: i64 = form.one("hours").parse().unwrap_or(1).clamp(1, 24 * 30);
            let since = clock::now_ms() - hours * 3_600_000;
            crate::services::webhooks::replay_since(&state, caller, &id, since)
                .await
                .map(|(_, queued)| context! { notice => format!("{queued} events of the last {hours} hours queued again; the endpoint is enabled.") })
        }
        "rotate" => crate::services::webhooks::rotate(&state, caller, &id, 86_400)
            .await
            .map(|hook| context! { secret => hook.secret }),
        "disable" | "enable" => crate::services::webhooks::set_enabled(&state, caller, &id, action == "enable")
            .await
            .map(|hook| context! { notice => if hook.enabled { "Enabled." } else { "Disabled: nothing is delivered until it is enabled or replayed." } }),
        "delete" => {
            return match crate::services::webhooks::delete(&state, caller, &id).await {
                Ok(_) => Redirect::to("/console/webhooks").into_response(),
                // The database failing is not a refusal: the page says so, as before the move.
                Err(error) if error.kind == crate::error::ErrorKind::Internal => unavailable(error),
                Err(error) => refused(&error),
            };
        }
        _ => return super::pages::notice(StatusCode::NOT_FOUND, "Not found", "There is no such action."),
    };
    match done {
        Ok(extra) => endpoint_page(&state, &signed_in, &id, StatusCode::OK, extra).await,
        Err(error) if error.kind == crate::error::ErrorKind::NotFound => refused(&error),
        Err(error) => {
            let status = crate::web::errors::status(error.kind);
            endpoint_page(&state, &signed_in, &id, status, context! { error => describe(&error) }).await
        }
    }
}
