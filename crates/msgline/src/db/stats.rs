//! What `/metrics` reports about the database: each figure read through an index.

use sqlx::Row;

use super::Db;
use crate::metrics::LineGauges;

/// The database's side of the metrics.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Messages with delivery work left, per outbox state.
    pub outbox: Vec<(String, i64)>,
    /// When the oldest of them was created.
    pub oldest_outbox_at: Option<i64>,
    /// Webhook deliveries pending or claimed.
    pub webhook_backlog: i64,
    /// When the oldest of them was created.
    pub oldest_webhook_at: Option<i64>,
    /// Events waiting to be fanned out to endpoints.
    pub events_unfanned: i64,
    /// Every line: whether its bridge answered its last check, its health, what waits for it
    /// and its sends in the last 24 hours.
    pub lines: Vec<LineGauges>,
}

pub async fn snapshot(db: &Db) -> sqlx::Result<Snapshot> {
    let mut snapshot = Snapshot::default();
    // Claims kept apart (PostgreSQL's sends that call their line themselves) count as claimed.
    let rows = sqlx::query(
        "SELECT outbox_state, COUNT(*) AS n, MIN(created_at) AS oldest FROM messages \
         WHERE outbox_state IS NOT NULL GROUP BY outbox_state \
         UNION ALL SELECT 'claimed' AS outbox_state, COUNT(*) AS n, MIN(m.created_at) AS oldest \
         FROM message_claims c JOIN messages m ON m.id = c.message_id",
    )
    .fetch_all(db.reader())
    .await?;
    let mut counts: Vec<(String, i64)> = Vec::new();
    for row in rows {
        let (state, n): (String, i64) = (row.try_get("outbox_state")?, row.try_get("n")?);
        match counts.iter_mut().find(|(s, _)| *s == state) {
            Some(count) => count.1 += n,
            None if n > 0 => counts.push((state, n)),
            None => {}
        }
        let oldest: Option<i64> = row.try_get("oldest")?;
        snapshot.oldest_outbox_at = match (snapshot.oldest_outbox_at, oldest) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    snapshot.outbox = counts;
    let sql =
        format!("SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM ({}) open", super::webhook_deliveries::OPEN);
    let row = sqlx::query(&sql).fetch_one(db.reader()).await?;
    snapshot.webhook_backlog = row.try_get("n")?;
    snapshot.oldest_webhook_at = row.try_get("oldest")?;
    snapshot.events_unfanned = sqlx::query("SELECT COUNT(*) FROM events WHERE webhooks_pending = 1")
        .fetch_one(db.reader())
        .await?
        .try_get(0)?;
    // Events wait to be fanned out while every post is busy: the oldest of them is older than
    // any delivery made since.
    let unfanned = sqlx::query("SELECT created_at FROM events WHERE webhooks_pending = 1 ORDER BY id LIMIT 1")
        .fetch_optional(db.reader())
        .await?;
    if let Some(row) = unfanned {
        let oldest: i64 = row.try_get(0)?;
        snapshot.oldest_webhook_at = Some(snapshot.oldest_webhook_at.map_or(oldest, |at: i64| at.min(oldest)));
    }
    let lines = sqlx::query(
        "SELECT l.id, l.status, l.health, \
         (SELECT COUNT(*) FROM messages m WHERE m.line_id = l.id AND m.outbox_state = 'paced') AS waiting, \
         (SELECT COUNT(*) FROM line_sends s WHERE s.line_id = l.id AND s.at > $1) AS sends_day \
         FROM lines l ORDER BY l.id",
    )
    .bind(crate::clock::now_ms() - super::line_sends::DAY_MS)
    .fetch_all(db.reader())
    .await?;
    for row in lines {
        let status: String = row.try_get("status")?;
        snapshot.lines.push(LineGauges {
            id: row.try_get("id")?,
            online: status == "online",
            health: row.try_get("health")?,
            waiting: row.try_get("waiting")?,
            sends_day: row.try_get("sends_day")?,
        });
    }
    Ok(snapshot)
}

/// An organisation's outbound messages made since `since_ms`, counted by status.
pub async fn sends_by_status(db: &Db, org_id: &str, since_ms: i64) -> sqlx::Result<Vec<(String, i64)>> {
    let rows = sqlx::query(
        "SELECT status, COUNT(*) FROM messages WHERE org_id = $1 AND id >= $2 AND direction = 'outbound' \
         GROUP BY status ORDER BY status",
    )
    .bind(org_id)
    .bind(crate::ids::floor("msg", since_ms))
    .fetch_all(db.reader())
    .await?;
    rows.iter().map(|row| Ok((row.try_get(0)?, row.try_get(1)?))).collect()
}
