//! The event feed's reads: an organisation's events in the order they were committed, from a
//! position on. See `migrations/*/0032_event_feed.sql` for how each engine keeps that order.
//!
//! A position is where a reader stands; the events after it are the ones it has not seen. On
//! SQLite it is a rowid (one writer commits at a time, so rowids grow in commit order). On
//! PostgreSQL it is (the writing transaction's id, a sequence number), and a read returns only
//! events of transactions older than every transaction still running: a later read can then
//! never find an event before a position already passed.

use std::sync::Arc;

use sqlx::Row;
use tokio::sync::watch;

use super::{Backend, Db};

/// An event as the feed gives it.
#[derive(Debug, Clone)]
pub struct FeedEvent {
    pub id: String,
    pub kind: String,
    pub data: String,
    pub created_at: i64,
    pub position: Position,
}

impl FeedEvent {
    /// The event object as webhooks deliver it (`{id, type, created_at, data}`), written around
    /// the stored `data` as it is: a stream gives thousands a second, and parsing each message
    /// back into a tree to write it out again was most of what a reader cost the server. (The
    /// keys come in another order than in a webhook's body, which sorts them; the object is the
    /// same.)
    pub fn json(&self) -> String {
        let quoted = |text: &str| serde_json::to_string(text).expect("strings serialise");
        let data = if self.data.trim().is_empty() { "null" } else { self.data.as_str() };
        format!(
            "{{\"id\":{},\"type\":{},\"created_at\":\"{}\",\"data\":{}}}",
            quoted(&self.id),
            quoted(&self.kind),
            crate::clock::rfc3339(self.created_at),
            data
        )
    }
}

/// A place in an organisation's feed (see the module's doc). The zero position is before every
/// event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    txid: i64,
    seq: i64,
}

/// An event's position and when it was written.
pub struct Found {
    pub position: Position,
    pub created_at: i64,
}

/// The event `event_id` of the organisation, if the feed has it (PostgreSQL's events written
/// before the feed existed have no position, and are not in it).
pub async fn find(db: &Db, org_id: &str, event_id: &str) -> sqlx::Result<Option<Found>> {
    let sql = match db.backend() {
        Backend::Sqlite => "SELECT 0, rowid, created_at FROM events WHERE id = $1 AND org_id = $2",
        Backend::Postgres => {
            "SELECT feed_txid, feed_seq, created_at FROM events WHERE id = $1 AND org_id = $2 \
             AND feed_txid IS NOT NULL"
        }
    };
    let row = sqlx::query(sql).bind(event_id).bind(org_id).fetch_optional(db.reader()).await?;
    row.map(|row| {
        Ok(Found { position: Position { txid: row.try_get(0)?, seq: row.try_get(1)? }, created_at: row.try_get(2)? })
    })
    .transpose()
}

/// The position just before the organisation's first event written at or after `since` (a time
/// in ms): where a reader without a cursor starts. With no such event, the end of the feed.
pub async fn start(db: &Db, org_id: &str, since: i64) -> sqlx::Result<Position> {
    let sql = match db.backend() {
        Backend::Sqlite => {
            "SELECT 0, rowid FROM events WHERE org_id = $1 AND created_at >= $2 ORDER BY created_at LIMIT 1"
        }
        Backend::Postgres => {
            "SELECT feed_txid, feed_seq FROM events WHERE org_id = $1 AND created_at >= $2 \
             AND feed_txid IS NOT NULL ORDER BY created_at LIMIT 1"
        }
    };
    match sqlx::query(sql).bind(org_id).bind(since).fetch_optional(db.reader()).await? {
        Some(row) => Ok(Position { txid: row.try_get(0)?, seq: row.try_get::<i64, _>(1)? - 1 }),
        None => end(db, org_id).await,
    }
}

/// The position after every event of the organisation that a read can return now: where a
/// stream without a cursor starts, to give what comes next.
pub async fn end(db: &Db, org_id: &str) -> sqlx::Result<Position> {
    let sql = match db.backend() {
        Backend::Sqlite => {
            "SELECT 0, rowid FROM events INDEXED BY events_feed WHERE org_id = $1 ORDER BY rowid DESC LIMIT 1"
        }
        Backend::Postgres => {
            "SELECT feed_txid, feed_seq FROM events WHERE org_id = $1 AND feed_txid IS NOT NULL \
             AND feed_txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint \
             ORDER BY feed_txid DESC, feed_seq DESC LIMIT 1"
        }
    };
    let row = sqlx::query(sql).bind(org_id).fetch_optional(db.reader()).await?;
    row.map(|row| Ok(Position { txid: row.try_get(0)?, seq: row.try_get(1)? }))
        .transpose()
        .map(Option::unwrap_or_default)
}

/// Up to `limit` events of the organisation after `from`, in commit order; with `line_id`, only
/// those of messages on that line (as a webhook endpoint registered with a line-bound key).
pub async fn after(
    db: &Db,
    org_id: &str,
    line_id: Option<&str>,
    from: Position,
    limit: i64,
) -> sqlx::Result<Vec<FeedEvent>> {
    let line = match line_id {
        Some(_) => " AND (SELECT m.line_id FROM messages m WHERE m.id = events.message_id) = $5",
        None => " AND $5 IS NULL",
    };
    let sql = match db.backend() {
        Backend::Sqlite => format!(
            "SELECT id, type, data, created_at, 0, rowid FROM events INDEXED BY events_feed \
             WHERE org_id = $1 AND $2 = $2 AND rowid > $3{line} ORDER BY rowid LIMIT $4"
        ),
        Backend::Postgres => format!(
            "SELECT id, type, data, created_at, feed_txid, feed_seq FROM events \
             WHERE org_id = $1 AND (feed_txid, feed_seq) > ($2, $3) \
             AND feed_txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint{line} \
             ORDER BY feed_txid, feed_seq LIMIT $4"
        ),
    };
    let rows = sqlx::query(&sql)
        .bind(org_id)
        .bind(from.txid)
        .bind(from.seq)
        .bind(limit)
        .bind(line_id)
        .fetch_all(db.reader())
        .await?;
    rows.iter()
        .map(|row| {
            Ok(FeedEvent {
                id: row.try_get(0)?,
                kind: row.try_get(1)?,
                data: row.try_get(2)?,
                created_at: row.try_get(3)?,
                position: Position { txid: row.try_get(4)?, seq: row.try_get(5)? },
            })
        })
        .collect()
}

/// Whether the organisation has turned its feed on.
pub async fn is_on(db: &Db, org_id: &str) -> sqlx::Result<bool> {
    let row = sqlx::query("SELECT event_feed FROM orgs WHERE id = $1").bind(org_id).fetch_optional(db.reader()).await?;
    Ok(row.map(|row| row.try_get::<i64, _>(0)).transpose()?.unwrap_or(0) == 1)
}

/// Tells this instance's open streams that an organisation's feed may have new events: each
/// looks again. PostgreSQL's instances are told by `NOTIFY msgline_feed` (a trigger on events,
/// heard by `workers::instances`); on SQLite, where one instance writes, streams look again
/// after a short wait.
#[derive(Clone)]
pub struct Signal(Arc<watch::Sender<u64>>);

/// The channel every instance listens on for new events of organisations with a feed.
pub const CHANNEL: &str = "msgline_feed";

impl Default for Signal {
    fn default() -> Self {
        Signal(Arc::new(watch::channel(0).0))
    }
}

impl Signal {
    pub fn bump(&self) {
        self.0.send_modify(|n| *n = n.wrapping_add(1));
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.0.subscribe()
    }
}
