//! Liveness, readiness and metrics: no API key (metrics take a token of their own if one is
//! configured).

use axum::{
    Json,
    extract::State,
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::openapi::schemas;

use crate::{
    domain::apikey::hash_secret,
    error::{ApiError, ErrorKind},
    services::Services,
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new().routes(routes!(healthz)).routes(routes!(readyz)).routes(routes!(metrics))
}

/// Liveness: the process serves.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    responses((status = 200, description = "`{\"status\": \"ok\"}`", body = schemas::Health)),
)]
async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// Readiness: ready when the database answers.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    responses(
        (status = 200, description = "`{\"status\": \"ready\"}`", body = schemas::Health),
        (status = 503, description = "The database does not answer", body = schemas::Health),
    ),
)]
async fn readyz(State(state): State<Services>) -> (StatusCode, Json<Value>) {
    if state.sender.db.ping().await {
        (StatusCode::OK, Json(json!({"status": "ready"})))
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "unavailable", "error": "database_unreachable"})))
    }
}

/// Prometheus metrics, in Prometheus's text format.
///
/// With `MSGLINE_METRICS_TOKEN` set, only for `Authorization: Bearer <token>`.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    responses(
        (status = 200, description = "The metrics", content_type = "text/plain", body = String),
        (status = 401, description = "A metrics token is configured and was not given (`unauthorized`)", body = schemas::Error),
        (status = 503, description = "The metrics could not be read (`metrics_unavailable`)", body = schemas::Error),
    ),
)]
async fn metrics(State(state): State<Services>, headers: HeaderMap) -> Response {
    if let Some(token) = &state.sender.config.metrics_token {
        let given = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(super::auth::bearer);
        // Compared as digests, as the bridges' secrets are.
        let matches = given.is_some_and(|given| hash_secret(given) == hash_secret(token));
        if !matches {
            return ApiError::unauthorized()
                .with_message("the metrics endpoint needs the configured metrics token")
                .into_response();
        }
    }
    let backlog = crate::db::stats::snapshot(&state.sender.db).await.map(|snapshot| crate::metrics::Backlog {
        outbox: snapshot.outbox,
        oldest_outbox_at: snapshot.oldest_outbox_at,
        webhook_deliveries: snapshot.webhook_backlog,
        events_unfanned: snapshot.events_unfanned,
        oldest_webhook_at: snapshot.oldest_webhook_at,
        lines: snapshot.lines,
    });
    match backlog.map_err(anyhow::Error::from).and_then(|backlog| crate::metrics::render(&backlog)) {
        Ok(text) => ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response(),
        Err(error) => {
            tracing::error!(error = %error, "could not read the metrics");
            ApiError::new(ErrorKind::Unavailable, "metrics_unavailable")
                .with_message("the metrics could not be read")
                .into_response()
        }
    }
}
