//! `POST /bridge/events`: callbacks from a line's bridge, authenticated with the line's
//! bridge secret. The body is one event or an array of events.

use axum::{
    Json, Router,
    extract::State,
    http::{HeaderMap, header},
    routing::post,
};
use serde_json::{Value, json};

use super::{
    AppState,
    extract::{ApiJson, from_value},
};
use crate::{
    bridge::BridgeEvent,
    db,
    error::{ApiError, ApiResult},
    inbound::{self, Handled},
};

pub fn router() -> Router<AppState> {
    Router::new().route("/bridge/events", post(receive))
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
