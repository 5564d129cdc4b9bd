//! Liveness, readiness and metrics: no API key (metrics take a token of their own if one is
//! configured).

use axum::{
    Json, Router,
    extract::State,
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use serde_json::{Value, json};

use crate::{domain::apikey::hash_secret, error::ApiError, state::AppState};

pub fn router() -> Router<AppState> {
    Router::new().route("/healthz", get(healthz)).route("/readyz", get(readyz)).route("/metrics", get(metrics))
}

async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// Ready when the database answers.
async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    if state.db.ping().await {
        (StatusCode::OK, Json(json!({"status": "ready"})))
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "unavailable", "error": "database_unreachable"})))
    }
}

/// Prometheus's text format. With `MSGLINE_METRICS_TOKEN` set, only for `Authorization: Bearer
/// <token>`.
async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(token) = &state.config.metrics_token {
        let given = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(super::auth::bearer);
        // Compared as digests, as the bridges' secrets are.
        let matches = given.is_some_and(|given| hash_secret(given) == hash_secret(token));
        if !matches {
            return ApiError::unauthorized()
                .with_message("the metrics endpoint needs the configured metrics token")
                .into_response();
        }
    }
    match crate::metrics::render(&state).await {
        Ok(text) => ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response(),
        Err(error) => {
            tracing::error!(error = %error, "could not read the metrics");
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "metrics_unavailable")
                .with_message("the metrics could not be read")
                .into_response()
        }
    }
}
