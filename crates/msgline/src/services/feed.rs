//! The event feed: the events webhooks carry, for a client that reads them instead of taking
//! deliveries. A reader stands after an event (its cursor, an event id) and reads on from there,
//! oldest first; what it may read is its organisation's events, a line-bound key's only those of
//! its line, written while the feed was on, for `MSGLINE_FEED_RETENTION_HOURS`.

use std::{collections::VecDeque, time::Duration};

use crate::{
    caller::Principal,
    clock,
    db::{
        self,
        feed::{FeedEvent, Position},
    },
    domain::scope::Scope,
    error::{ApiError, ApiResult},
    services::Services,
};

/// Events a stream reads at a time: what a stream holds in memory at most, besides what the
/// connection's buffers hold for a reader that does not keep up.
pub const STREAM_BATCH: i64 = 100;

/// How long a stream gathers after a read that found less than a batch, before it reads again:
/// a reader keeping up with a busy feed would otherwise read a handful of events per query,
/// thousands of queries a second.
const GATHER: Duration = Duration::from_millis(50);

/// How long an idle stream waits before it looks again without being told of new events. On
/// PostgreSQL streams are told (`NOTIFY msgline_feed`), and this only covers an event held back
/// behind a transaction still running; on SQLite it is how fast a stream sees a new event.
fn idle_wait(state: &Services) -> Duration {
    match state.sender.db.backend() {
        db::Backend::Sqlite => Duration::from_millis(200),
        db::Backend::Postgres => Duration::from_millis(500),
    }
}

/// Where a reader starts when it gives no cursor.
#[derive(Clone, Copy)]
pub enum Otherwise {
    /// At the oldest event the feed still gives (a page).
    Oldest,
    /// After the newest (a stream: what comes next).
    Newest,
}

/// The caller may read its organisation's feed: scope `messaging_read`, and the feed on (409
/// `event_feed_off` otherwise).
pub async fn require_on(state: &Services, caller: &Principal) -> ApiResult<()> {
    caller.require(Scope::Read)?;
    if !db::feed::is_on(&state.sender.db, &caller.org_id).await? {
        return Err(ApiError::conflict(
            "event_feed_off",
            "the event feed is off for this organisation; turn it on with PATCH /settings {\"event_feed\": true}",
        ));
    }
    Ok(())
}

/// The position after `cursor` (an event id, given as `field`): an event of the organisation's
/// feed no older than the feed keeps, or a 400 naming `field`. Without a cursor, see
/// [`Otherwise`].
pub async fn position(
    state: &Services,
    caller: &Principal,
    cursor: Option<&str>,
    field: &str,
    otherwise: Otherwise,
) -> ApiResult<Position> {
    let db = &state.sender.db;
    let keeps_ms = state.sender.config.feed_retention_hours as i64 * 3_600_000;
    let oldest = clock::now_ms() - keeps_ms;
    let Some(cursor) = cursor.filter(|c| !c.is_empty()) else {
        return Ok(match otherwise {
            Otherwise::Oldest => db::feed::start(db, &caller.org_id, oldest).await?,
            Otherwise::Newest => db::feed::end(db, &caller.org_id).await?,
        });
    };
    let well_formed = cursor.starts_with("evt_")
        && cursor.len() <= 64
        && cursor.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let found = match well_formed {
        true => db::feed::find(db, &caller.org_id, cursor).await?,
        false => None,
    };
    let Some(found) = found else {
        return Err(ApiError::invalid(field, format!("{field} is not an event of this organisation's feed")));
    };
    if found.created_at < oldest {
        return Err(ApiError::invalid(
            field,
            format!(
                "{cursor} is older than the feed keeps events ({} hours): events after it may be gone; \
                 read the feed again without a cursor, and what happened meanwhile from GET /messages",
                state.sender.config.feed_retention_hours
            ),
        ));
    }
    Ok(found.position)
}

/// Up to `limit` events after `from`, oldest first.
pub async fn page(state: &Services, caller: &Principal, from: Position, limit: i64) -> ApiResult<Vec<FeedEvent>> {
    Ok(db::feed::after(&state.sender.db, &caller.org_id, caller.bound_line(), from, limit).await?)
}

/// A stream's reader: hands out the caller's events after a position as they are read,
/// [`STREAM_BATCH`] at a time, and waits for more when it has given them all. A batch is
/// written to the connection as one piece: a reader keeping up with thousands of events a
/// second costs the server one write per batch, not one per event.
pub struct StreamReader {
    state: Services,
    org_id: String,
    line_id: Option<String>,
    from: Position,
    ready: VecDeque<FeedEvent>,
    told: tokio::sync::watch::Receiver<u64>,
    /// The last read found less than a batch: the next one waits [`GATHER`] first.
    caught_up: bool,
}

impl StreamReader {
    pub fn new(state: Services, caller: &Principal, from: Position) -> Self {
        let told = state.sender.feed.subscribe();
        StreamReader {
            org_id: caller.org_id.clone(),
            line_id: caller.bound_line().map(str::to_string),
            from,
            ready: VecDeque::new(),
            told,
            caught_up: false,
            state,
        }
    }

    /// The events ready to be given (at most [`STREAM_BATCH`]); waits for one.
    pub async fn next_batch(&mut self) -> Vec<FeedEvent> {
        loop {
            if !self.ready.is_empty() {
                return self.ready.drain(..).collect();
            }
            if std::mem::take(&mut self.caught_up) {
                tokio::time::sleep(GATHER).await;
            }
            // Marked seen before the read: an event told of during it makes the wait below end.
            self.told.borrow_and_update();
            let db = &self.state.sender.db;
            match db::feed::after(db, &self.org_id, self.line_id.as_deref(), self.from, STREAM_BATCH).await {
                Ok(events) if !events.is_empty() => {
                    self.caught_up = (events.len() as i64) < STREAM_BATCH;
                    self.from = events.last().expect("not empty").position;
                    self.ready.extend(events);
                    continue;
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(error = %error, "an event stream could not read the feed; trying again"),
            }
            let wait = idle_wait(&self.state);
            if let Ok(Err(_)) = tokio::time::timeout(wait, self.told.changed()).await {
                // Nothing tells any more (the server is stopping): look again after the wait.
                tokio::time::sleep(wait).await;
            }
        }
    }
}
