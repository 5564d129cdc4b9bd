//! Retention (`MSGLINE_RETENTION_DAYS`): the janitor deletes messages older than the retention
//! that nothing is left to happen to, with everything that hangs from them, then events older
//! than it whose message is gone, with their webhook deliveries. Contacts, conversations,
//! opt-outs and everything configured stay. Unset, nothing is deleted.

use std::time::{Duration, Instant};

use crate::{
    clock,
    db::{self, Backend},
    send::Sender,
};

/// Messages (or events) one transaction deletes at most, with their rows, and the pause after
/// each batch, so that sends take the write lock between two. On SQLite every write waits for the
/// one lock while a batch runs: a batch of 200 holds it for about 8 ms. On PostgreSQL a batch
/// locks only the rows it deletes, and sends did not notice batches of 500.
fn batch_and_pause(backend: Backend) -> (i64, Duration) {
    match backend {
        Backend::Sqlite => (200, Duration::from_millis(50)),
        Backend::Postgres => (500, Duration::from_millis(10)),
    }
}

/// What a pass deleted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Purged {
    pub messages: u64,
    pub events: u64,
    /// Every row deleted, the messages and events included.
    pub rows: u64,
    /// Attachment files removed from the media store.
    pub files: u64,
}

/// One pass of the configured retention, as the janitor runs it; nothing when it is unset.
pub async fn run_once(state: &Sender) -> anyhow::Result<Purged> {
    match state.config.retention_days {
        Some(days) => keep_days(state, days).await,
        None => Ok(Purged::default()),
    }
}

/// A pass that keeps `days` days: deletes what was created before now less that.
pub async fn keep_days(state: &Sender, days: u64) -> anyhow::Result<Purged> {
    let now = clock::now_ms();
    let keep_ms = i64::try_from(days).unwrap_or(i64::MAX).saturating_mul(86_400_000);
    purge(state, now.saturating_sub(keep_ms), now).await
}

/// Deletes what was created before `before` (ms): settled messages with their rows and files,
/// then events whose message is gone. Events stay at least as long as the event feed gives them
/// (`MSGLINE_FEED_RETENTION_HOURS`), so a feed reader never finds a hole in its window.
pub async fn purge(state: &Sender, before: i64, now: i64) -> anyhow::Result<Purged> {
    let started = Instant::now();
    let (batch, pause) = batch_and_pause(state.db.backend());
    let mut purged = Purged::default();
    let mut after = String::new();
    loop {
        let (deleted, last, keys) = db::retention::delete_messages(&state.db, &after, before, now, batch).await?;
        purged.messages += deleted.count;
        purged.rows += deleted.rows;
        // After the commit: a file removed before it would leave a kept row without its bytes
        // if the transaction failed. A removal that fails leaves an orphan, which the janitor's
        // sweep of files no row holds removes later.
        for key in keys {
            state.media.delete(&key).await?;
            purged.files += 1;
        }
        let Some(last) = last else { break };
        if deleted.count < batch as u64 {
            break;
        }
        after = last;
        tokio::time::sleep(pause).await;
    }
    let feed_ms = i64::try_from(state.config.feed_retention_hours).unwrap_or(i64::MAX).saturating_mul(3_600_000);
    let events_before = before.min(now.saturating_sub(feed_ms));
    let mut after = String::new();
    loop {
        let (deleted, last) = db::retention::delete_events(&state.db, &after, events_before, batch).await?;
        purged.events += deleted.count;
        purged.rows += deleted.rows;
        let Some(last) = last else { break };
        if deleted.count < batch as u64 {
            break;
        }
        after = last;
        tokio::time::sleep(pause).await;
    }
    if purged.rows > 0 {
        crate::metrics::retention_deleted("messages", purged.messages);
        crate::metrics::retention_deleted("events", purged.events);
        tracing::info!(
            messages = purged.messages,
            events = purged.events,
            rows = purged.rows,
            files = purged.files,
            seconds = started.elapsed().as_secs_f64(),
            "deleted what is past the retention"
        );
    }
    Ok(purged)
}
