//! Deletes what is past keeping, in small batches: expired idempotency records and old bridge
//! callback ids.

use std::time::Duration;

use tokio::sync::watch;

use super::pause;
use crate::{clock, db, state::AppState};

const EVERY: Duration = Duration::from_secs(300);
/// Bridge callback ids are kept a week: longer than any bridge retries a callback.
const BRIDGE_EVENT_RETENTION_MS: i64 = 7 * 86_400_000;

pub async fn run(state: AppState, mut shutdown: watch::Receiver<bool>) {
    while pause(&mut shutdown, EVERY).await {
        if let Err(error) = step(&state).await {
            tracing::error!(error = %error, "clean-up failed");
        }
    }
}

pub async fn step(state: &AppState) -> sqlx::Result<u64> {
    let now = clock::now_ms();
    let mut removed = 0;
    loop {
        let n = db::idempotency::delete_expired(&state.db, now, 500).await?;
        removed += n;
        if n < 500 {
            break;
        }
    }
    removed += sqlx::query("DELETE FROM bridge_events WHERE received_at < $1")
        .bind(now - BRIDGE_EVENT_RETENTION_MS)
        .execute(state.db.writer())
        .await?
        .rows_affected();
    Ok(removed)
}
