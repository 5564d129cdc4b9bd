//! What `msgline serve` runs for the bench alone (with `bench_routes`): the floor route, one
//! durable single-row insert and nothing else. Its table and the seeders of the read and
//! scheduled scenarios are `db::bench`'s. Nothing here is part of the product's serving path.

use axum::{Router, extract::State, http::StatusCode};

use crate::{db, error::ApiError, services::Services};

/// `POST /bench/floor`.
pub fn routes() -> Router<Services> {
    Router::new().route("/bench/floor", axum::routing::post(floor))
}

/// The storage ceiling `msgline bench` compares with: one durable single-row insert.
async fn floor(State(state): State<Services>) -> Result<StatusCode, ApiError> {
    db::bench::insert_floor(&state.sender.db).await?;
    Ok(StatusCode::NO_CONTENT)
}
