//! `POST /bridge/events`: callbacks from a line's bridge, authenticated with the line's
//! bridge secret. The body is one event or an array of events.
//!
//! `POST /bridge/hooks/{line_id}?secret=…`: webhooks from a device of another kind (a BlueBubbles
//! Server, an Android gateway), registered there by msgline; the line's adapter turns each into
//! bridge events, which are then applied exactly like callbacks.

use std::collections::HashMap;

use axum::{
    Json, Router,
    body::Bytes,
    extract::{Path, Query, State},
    http::{HeaderMap, header},
    routing::post,
};
use serde_json::{Value, json};

use super::extract::ApiJson;
use crate::{
    bridge::{
        BridgeEvent,
        adapter::{Hook, HookError},
    },
    db,
    error::{ApiError, ApiResult},
    fields::from_value,
    inbound::{self, Handled},
    state::AppState,
};

pub fn router() -> Router<AppState> {
    Router::new().route("/bridge/events", post(receive)).route("/bridge/hooks/{line_id}", post(receive_hook))
}

async fn receive_hook(
    State(state): State<AppState>,
    Path(line_id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<Value>> {
    // An unknown line answers as a wrong secret does.
    let line = state.lines.get(&line_id).await?.ok_or_else(ApiError::unauthorized)?;
    let hook = Hook { headers: &headers, query: &query, body: &body };
    let events = state.lines.client().receive(&line, &hook).await.map_err(|error| match error {
        HookError::Unauthorized(why) => {
            tracing::info!(line = %line.id, why, "refused a device webhook");
            ApiError::unauthorized()
        }
        HookError::Malformed(why) => ApiError::bad_request(why),
        HookError::NotHere => ApiError::not_found("route"),
    })?;
    let handled = inbound::handle_all(&state.db, &line, &events, state.config.agent_runs_per_minute).await?;
    let applied = handled.iter().filter(|h| **h == Handled::Applied).count();
    Ok(Json(json!({"applied": applied, "duplicates": handled.len() - applied})))
}

async fn receive(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Json<Value>> {
    let secret = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(super::auth::bearer)
        .ok_or_else(ApiError::unauthorized)?;
    let line = db::lines::find_by_bridge_secret(&state.db, secret.trim()).await?.ok_or_else(ApiError::unauthorized)?;
    let events: Vec<BridgeEvent> = match body {
        Value::Array(_) => from_value(body)?,
        other => vec![from_value(other)?],
    };
    let handled = inbound::handle_all(&state.db, &line, &events, state.config.agent_runs_per_minute).await?;
    let applied = handled.iter().filter(|h| **h == Handled::Applied).count();
    let duplicates = handled.len() - applied;
    Ok(Json(json!({"applied": applied, "duplicates": duplicates})))
}
