//! Retention's deletes (`MSGLINE_RETENTION_DAYS`): old messages with the rows that hang from
//! them, and old events with their webhook deliveries and attempts, a batch per transaction.
//!
//! Messages and events are found through their primary keys: an id begins with its creation
//! time (see `ids`), so the ids below the cutoff's are the old rows, in order, and no index of
//! creation times costs every send an entry. `created_at` is checked as well, so that a row is
//! judged by its time whatever its id. Each batch starts after the last id the previous one
//! took, so rows that are kept are read once per pass, not once per batch.

use sqlx::{AnyConnection, Row};

use super::{Db, engine::batch::texts_of};
use crate::ids;

/// A message with nothing left to happen to it: in a final status (`submitted` and `sent` too:
/// the line has it, and after days no report is coming), no delivery work (not waiting, not
/// `unknown`, not scheduled), no SMS fallback being watched for, no claim on it, no edit or
/// unsend still in question, no agent run still to answer it, and its idempotency key expired
/// (a replay of the request would otherwise send it again). `$4` is now.
const SETTLED: &str = "m.status IN ('submitted', 'sent', 'delivered', 'read', 'failed', 'canceled', 'received') \
     AND m.outbox_state IS NULL AND m.fallback IS NULL \
     AND (m.idem_expires_at IS NULL OR m.idem_expires_at <= $4) \
     AND NOT EXISTS (SELECT 1 FROM message_claims c WHERE c.message_id = m.id) \
     AND NOT EXISTS (SELECT 1 FROM message_actions a WHERE a.message_id = m.id AND a.state IN ('pending', 'unknown')) \
     AND NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.trigger_message_id = m.id AND r.state IN ('pending', 'running'))";

/// Up to `$5` settled messages with ids between `$1` and `$2` (exclusive), created before `$3`,
/// in id order, found through the primary key; `$4` is now.
pub fn messages_batch() -> String {
    format!(
        "SELECT m.id FROM messages m WHERE m.id > $1 AND m.id < $2 AND m.created_at < $3 AND {SETTLED} \
         ORDER BY m.id LIMIT $5"
    )
}

/// Up to `$4` events with ids between `$1` and `$2` (exclusive), created before `$3`, in id
/// order, found through the primary key: fanned out, without a delivery still to make, and
/// whose message (if any) is gone.
pub const EVENTS_BATCH: &str = "SELECT e.id FROM events e WHERE e.id > $1 AND e.id < $2 AND e.created_at < $3 \
     AND e.webhooks_pending = 0 \
     AND (e.message_id IS NULL OR NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = e.message_id)) \
     AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state NOT IN ('delivered', 'failed')) \
     ORDER BY e.id LIMIT $4";

/// The smallest id of `prefix` made at `at_ms`: every id made earlier sorts below it.
pub fn first_id_at(prefix: &str, at_ms: i64) -> String {
    ids::encode(prefix, (at_ms.max(0) as u128) << 80)
}

/// What one batch took: how many messages (or events), and how many rows in all with them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Deleted {
    pub count: u64,
    pub rows: u64,
}

/// Deletes up to `limit` settled messages created before `before` with ids after `after`, and
/// every row that hangs from them (delivery attempts, attachments' rows, polls and their votes,
/// reactions, edits and unsends, agent runs and their tool calls, bridge references, dial-in
/// requests), in one transaction. Returns what went, the last id it took (the next batch starts
/// after it), and the media-store keys of the deleted attachments, whose files the caller
/// removes once this has committed.
pub async fn delete_messages(
    db: &Db,
    after: &str,
    before: i64,
    now: i64,
    limit: i64,
) -> sqlx::Result<(Deleted, Option<String>, Vec<String>)> {
    let backend = db.backend();
    db.transaction(async |conn: &mut AnyConnection| {
        let ids: Vec<String> = sqlx::query(&messages_batch())
            .bind(after)
            .bind(first_id_at("msg", before))
            .bind(before)
            .bind(now)
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?
            .iter()
            .map(|row| row.try_get(0))
            .collect::<sqlx::Result<_>>()?;
        let Some(last) = ids.last().cloned() else { return Ok((Deleted::default(), None, Vec::new())) };
        let list = serde_json::to_string(&ids).expect("ids are strings");
        let of = texts_of(backend, 1);
        let keys: Vec<String> =
            sqlx::query(&format!("DELETE FROM attachments WHERE message_id IN ({of}) RETURNING storage_key"))
                .bind(&list)
                .fetch_all(&mut *conn)
                .await?
                .iter()
                .map(|row| row.try_get(0))
                .collect::<sqlx::Result<_>>()?;
        let mut rows = keys.len() as u64;
        // Children before their parents: SQLite keeps every foreign key, PostgreSQL those of
        // polls, votes and agent runs.
        for sql in [
            format!("DELETE FROM delivery_attempts WHERE message_id IN ({of})"),
            format!("DELETE FROM poll_votes WHERE message_id IN ({of})"),
            format!("DELETE FROM poll_votes WHERE poll_id IN (SELECT id FROM polls WHERE message_id IN ({of}))"),
            format!("DELETE FROM polls WHERE message_id IN ({of})"),
            format!(
                "DELETE FROM agent_tool_calls WHERE run_id IN \
                 (SELECT id FROM agent_runs WHERE trigger_message_id IN ({of}))"
            ),
            format!("DELETE FROM agent_runs WHERE trigger_message_id IN ({of})"),
            format!("DELETE FROM reactions WHERE message_id IN ({of})"),
            format!("DELETE FROM message_actions WHERE message_id IN ({of})"),
            format!("DELETE FROM dial_in_queue WHERE message_id IN ({of})"),
            format!(
                "DELETE FROM bridge_refs WHERE (line_id, local_id) IN \
                 (SELECT line_id, id FROM messages WHERE id IN ({of}))"
            ),
        ] {
            rows += sqlx::query(&sql).bind(&list).execute(&mut *conn).await?.rows_affected();
        }
        let messages =
            sqlx::query(&format!("DELETE FROM messages WHERE id IN ({of})")).bind(&list).execute(&mut *conn).await?;
        let messages = messages.rows_affected();
        Ok((Deleted { count: messages, rows: rows + messages }, Some(last), keys))
    })
    .await
}

/// Deletes up to `limit` events created before `before` with ids after `after`, whose message
/// (if they name one) is gone, that are fanned out to webhooks and have no delivery still to
/// make, with their deliveries and the deliveries' attempts, in one transaction. An event of a
/// message that is kept stays with it. Returns how many events and rows in all went, and the
/// last id it took.
pub async fn delete_events(db: &Db, after: &str, before: i64, limit: i64) -> sqlx::Result<(Deleted, Option<String>)> {
    let backend = db.backend();
    db.transaction(async |conn: &mut AnyConnection| {
        let ids: Vec<String> = sqlx::query(EVENTS_BATCH)
            .bind(after)
            .bind(first_id_at("evt", before))
            .bind(before)
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?
            .iter()
            .map(|row| row.try_get(0))
            .collect::<sqlx::Result<_>>()?;
        let Some(last) = ids.last().cloned() else { return Ok((Deleted::default(), None)) };
        let list = serde_json::to_string(&ids).expect("ids are strings");
        let of = texts_of(backend, 1);
        let mut rows = 0;
        for sql in [
            format!(
                "DELETE FROM webhook_attempts WHERE delivery_id IN \
                 (SELECT id FROM webhook_deliveries WHERE event_id IN ({of}))"
            ),
            format!("DELETE FROM webhook_deliveries WHERE event_id IN ({of})"),
        ] {
            rows += sqlx::query(&sql).bind(&list).execute(&mut *conn).await?.rows_affected();
        }
        let events =
            sqlx::query(&format!("DELETE FROM events WHERE id IN ({of})")).bind(&list).execute(&mut *conn).await?;
        let events = events.rows_affected();
        Ok((Deleted { count: events, rows: rows + events }, Some(last)))
    })
    .await
}
