//! What `msgline serve` runs for the bench alone (with `bench_routes`): the floor route, one
//! durable single-row insert, and a pass of the retention started now. Their table and the
//! seeders of the read and scheduled scenarios are `db::bench`'s. Nothing here is part of the
//! product's serving path.

use std::time::Instant;

use axum::{Json, Router, extract::State, http::StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{db, error::ApiError, services::Services, workers::retention};

/// `POST /bench/floor`, `POST /bench/retention`.
pub fn routes() -> Router<Services> {
    Router::new()
        .route("/bench/floor", axum::routing::post(floor))
        .route("/bench/retention", axum::routing::post(retention_now))
}

/// The storage ceiling `msgline bench` compares with: one durable single-row insert.
async fn floor(State(state): State<Services>) -> Result<StatusCode, ApiError> {
    db::bench::insert_floor(&state.sender.db).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
struct RetentionNow {
    days: u64,
}

/// The janitor's retention pass for `days`, run now rather than at the janitor's next turn (the
/// `retention` scenario measures sends while it runs); answers when it is done.
async fn retention_now(
    State(state): State<Services>,
    Json(request): Json<RetentionNow>,
) -> Result<Json<Value>, ApiError> {
    let started = Instant::now();
    let purged = retention::keep_days(&state.sender, request.days).await?;
    Ok(Json(json!({
        "messages": purged.messages,
        "events": purged.events,
        "rows": purged.rows,
        "files": purged.files,
        "seconds": started.elapsed().as_secs_f64(),
    })))
}
