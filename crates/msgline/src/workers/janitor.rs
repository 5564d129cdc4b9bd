//! Deletes what is past keeping, in small batches: expired idempotency records, old bridge
//! callback ids, messages and events past `MSGLINE_RETENTION_DAYS` (see [`super::retention`]),
//! and files in the media store that no attachment row holds.

use std::time::Duration;

use tokio::sync::watch;

use super::pause;
use crate::{clock, db, send::Sender};

const EVERY: Duration = Duration::from_secs(300);
/// Bridge callback ids are kept a week: longer than any bridge retries a callback.
const BRIDGE_EVENT_RETENTION_MS: i64 = 7 * 86_400_000;

/// A file no attachment row holds this long after it was written was fetched for a request that
/// was then refused (or for a callback that turned out to be a repeat): it is removed. An hour is
/// far longer than any request or callback takes to commit its rows.
pub const ORPHAN_FILE_AFTER_MS: i64 = 3_600_000;

pub async fn run(state: Sender, mut shutdown: watch::Receiver<bool>) {
    while pause(&mut shutdown, EVERY).await {
        if let Err(error) = step(&state).await {
            tracing::error!(error = %error, "clean-up failed");
        }
        if let Err(error) = super::retention::run_once(&state).await {
            tracing::error!(error = %error, "deleting what is past the retention failed");
        }
        if let Err(error) = orphaned_files(&state).await {
            tracing::error!(error = %error, "removing files no message holds failed");
        }
    }
}

/// Removes the media store's files that no attachment row holds and that are older than
/// [`ORPHAN_FILE_AFTER_MS`]; returns how many. A file's key ends with its attachment's id.
pub async fn orphaned_files(state: &Sender) -> anyhow::Result<u64> {
    let keys = state.media.keys_written_before(clock::now_ms() - ORPHAN_FILE_AFTER_MS).await?;
    let mut removed = 0;
    for chunk in keys.chunks(200) {
        let ids: Vec<&str> = chunk.iter().map(|k| k.rsplit('/').next().unwrap_or(k)).collect();
        let held = db::attachments::existing(&state.db, &ids).await?;
        for (key, id) in chunk.iter().zip(&ids) {
            if !held.contains(*id) {
                state.media.delete(key).await?;
                removed += 1;
            }
        }
    }
    if removed > 0 {
        tracing::info!(removed, "removed files no message holds");
    }
    Ok(removed)
}

/// Rows one statement of the janitor deletes at most: a short hold of SQLite's write lock.
const BATCH: i64 = 500;

/// Deletes expired idempotency records and callback ids older than a week; returns how many.
pub async fn step(state: &Sender) -> sqlx::Result<u64> {
    let now = clock::now_ms();
    let expired = in_batches(|| db::idempotency::delete_expired(&state.db, now, BATCH)).await?;
    let old_callbacks =
        in_batches(|| db::reports::delete_callbacks_before(&state.db, now - BRIDGE_EVENT_RETENTION_MS, BATCH)).await?;
    // Sign-in failures older than a day count for nothing (the throttle looks back 15 minutes),
    // nor do sessions past their absolute end.
    let staff = db::staff::prune(&state.db, now - 24 * 3_600_000, now).await?;
    // Lines' budgets look back a calendar month at most.
    let sends = db::line_sends::prune(&state.db, now).await?;
    Ok(expired + old_callbacks + staff + sends)
}

/// Runs `delete` (which deletes at most [`BATCH`] rows) until it deletes fewer; returns how many
/// rows went in all.
async fn in_batches<F: std::future::Future<Output = sqlx::Result<u64>>>(
    mut delete: impl FnMut() -> F,
) -> sqlx::Result<u64> {
    let mut removed = 0;
    loop {
        let n = delete().await?;
        removed += n;
        if n < BATCH as u64 {
            return Ok(removed);
        }
    }
}
