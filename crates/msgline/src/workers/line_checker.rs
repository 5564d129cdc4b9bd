//! Asks every line's bridge what it can do, at start and every 30 seconds, so `GET /lines`
//! shows current capabilities and status.

use std::time::Duration;

use tokio::sync::watch;

use super::pause;
use crate::{api::AppState, db};

const EVERY: Duration = Duration::from_secs(30);

pub async fn run(state: AppState, mut shutdown: watch::Receiver<bool>) {
    loop {
        if let Err(error) = step(&state).await {
            tracing::error!(error = %error, "line check failed");
        }
        if !pause(&mut shutdown, EVERY).await {
            break;
        }
    }
}

pub async fn step(state: &AppState) -> sqlx::Result<usize> {
    let lines = db::lines::list_all(&state.db).await?;
    for line in &lines {
        state.lines.refresh(line).await?;
    }
    Ok(lines.len())
}
