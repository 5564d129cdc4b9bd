//! Android phones that dial in: the line's device (its registration and device tokens, hashed,
//! and when it last called) and what waits for the phone to take it.

use sqlx::Row;

use super::{Backend, Db};
use crate::clock;

/// The channel a message queued for a dial-in phone is announced on (its line's id), so that
/// the instance holding the phone's event stream tells it at once.
pub const CHANNEL: &str = "msgline_devices";

/// The device registered on a dial-in line.
#[derive(Debug, Clone)]
pub struct Device {
    pub line_id: String,
    pub device_id: Option<String>,
    pub last_seen_at: Option<i64>,
}

const DEVICE: &str = "line_id, device_id, last_seen_at";

fn device(row: &sqlx::any::AnyRow) -> sqlx::Result<Device> {
    Ok(Device { line_id: row.try_get(0)?, device_id: row.try_get(1)?, last_seen_at: row.try_get(2)? })
}

/// Makes a line a dial-in line with the registration token's hash (at the line's creation).
pub async fn create(db: &Db, line_id: &str, registration_hash: &str) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO dial_in_devices (line_id, registration_hash) VALUES ($1, $2)")
        .bind(line_id)
        .bind(registration_hash)
        .execute(db.writer())
        .await?;
    Ok(())
}

/// Registers a device on the line whose registration token hashes to `registration_hash`,
/// replacing any device registered before (its token stops working). Returns the line's id, or
/// `None` for an unknown token.
pub async fn register(
    db: &Db,
    registration_hash: &str,
    device_id: &str,
    token_hash: &str,
    name: &str,
) -> sqlx::Result<Option<String>> {
    let now = clock::now_ms();
    let row = sqlx::query(
        "UPDATE dial_in_devices SET device_id = $1, token_hash = $2, name = $3, registered_at = $4, last_seen_at = $4 \
         WHERE registration_hash = $5 RETURNING line_id",
    )
    .bind(device_id)
    .bind(token_hash)
    .bind(name)
    .bind(now)
    .bind(registration_hash)
    .fetch_optional(db.writer())
    .await?;
    row.map(|row| row.try_get(0)).transpose()
}

/// The device whose token hashes to `token_hash`, marked seen now.
pub async fn seen(db: &Db, token_hash: &str) -> sqlx::Result<Option<Device>> {
    let row =
        sqlx::query(&format!("UPDATE dial_in_devices SET last_seen_at = $1 WHERE token_hash = $2 RETURNING {DEVICE}"))
            .bind(clock::now_ms())
            .bind(token_hash)
            .fetch_optional(db.writer())
            .await?;
    row.as_ref().map(device).transpose()
}

/// Marks the line's device seen now (a webhook it sent).
pub async fn seen_line(db: &Db, line_id: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE dial_in_devices SET last_seen_at = $1 WHERE line_id = $2 AND device_id IS NOT NULL")
        .bind(clock::now_ms())
        .bind(line_id)
        .execute(db.writer())
        .await?;
    Ok(())
}

/// The line's device, registered or not.
pub async fn get(db: &Db, line_id: &str) -> sqlx::Result<Option<Device>> {
    let row = sqlx::query(&format!("SELECT {DEVICE} FROM dial_in_devices WHERE line_id = $1"))
        .bind(line_id)
        .fetch_optional(db.reader())
        .await?;
    row.as_ref().map(device).transpose()
}

/// Queues a message's request for the line's phone (a message queued before keeps its row: the
/// phone never gets it twice), and announces it to every instance.
pub async fn enqueue(db: &Db, line_id: &str, message_id: &str, request: &str) -> sqlx::Result<()> {
    let backend = db.backend();
    db.transaction(async |tx| {
        sqlx::query(
            "INSERT INTO dial_in_queue (message_id, line_id, request, queued_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (message_id) DO NOTHING",
        )
        .bind(message_id)
        .bind(line_id)
        .bind(request)
        .bind(clock::now_ms())
        .execute(&mut *tx)
        .await?;
        super::notify(backend, &mut *tx, CHANNEL, line_id).await
    })
    .await
}

/// Whether messages wait for the line's phone to take them.
pub async fn has_waiting(db: &Db, line_id: &str) -> sqlx::Result<bool> {
    let row = sqlx::query("SELECT 1 FROM dial_in_queue WHERE line_id = $1 AND taken_at IS NULL LIMIT 1")
        .bind(line_id)
        .fetch_optional(db.reader())
        .await?;
    Ok(row.is_some())
}

/// Hands the phone up to `limit` of the line's waiting requests, oldest first, each once: marked
/// taken, and its message to be asked about (`GET /message`'s answer may never reach the phone,
/// or the phone may die with it) from `ask_at` on, in the same transaction.
pub async fn take(db: &Db, line_id: &str, limit: i64, ask_at: i64) -> sqlx::Result<Vec<String>> {
    let lock = match db.backend() {
        Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        Backend::Sqlite => "",
    };
    db.transaction(async |tx| {
        let rows = sqlx::query(&format!(
            "SELECT message_id, request FROM dial_in_queue WHERE line_id = $1 AND taken_at IS NULL \
             ORDER BY queued_at LIMIT $2{lock}"
        ))
        .bind(line_id)
        .bind(limit)
        .fetch_all(&mut *tx)
        .await?;
        let now = clock::now_ms();
        let mut requests = Vec::with_capacity(rows.len());
        for row in rows {
            let id: String = row.try_get(0)?;
            sqlx::query("UPDATE dial_in_queue SET taken_at = $1 WHERE message_id = $2")
                .bind(now)
                .bind(&id)
                .execute(&mut *tx)
                .await?;
            super::outbox::mark_unknown(tx, &id, ask_at).await?;
            requests.push(row.try_get(1)?);
        }
        Ok(requests)
    })
    .await
}

/// Records what the phone reported of a message of the line (`reported`, a msgline status);
/// returns whether the line has that message.
pub async fn report(
    db: &Db,
    line_id: &str,
    message_id: &str,
    reported: &str,
    reason: Option<&str>,
) -> sqlx::Result<bool> {
    let done =
        sqlx::query("UPDATE dial_in_queue SET reported = $1, reason = $2 WHERE message_id = $3 AND line_id = $4")
            .bind(reported)
            .bind(reason)
            .bind(message_id)
            .bind(line_id)
            .execute(db.writer())
            .await?;
    Ok(done.rows_affected() == 1)
}

/// Where a message stands with the phone.
pub enum Queued {
    /// Never queued for the phone.
    Absent,
    /// Waiting for the phone to take it.
    Waiting,
    /// Taken; what the phone last reported (a msgline status) and why, if anything.
    Taken { reported: Option<String>, reason: Option<String> },
}

pub async fn queued(db: &Db, line_id: &str, message_id: &str) -> sqlx::Result<Queued> {
    let row =
        sqlx::query("SELECT taken_at, reported, reason FROM dial_in_queue WHERE message_id = $1 AND line_id = $2")
            .bind(message_id)
            .bind(line_id)
            .fetch_optional(db.reader())
            .await?;
    let Some(row) = row else { return Ok(Queued::Absent) };
    Ok(match row.try_get::<Option<i64>, _>(0)? {
        None => Queued::Waiting,
        Some(_) => Queued::Taken { reported: row.try_get(1)?, reason: row.try_get(2)? },
    })
}

/// Takes a waiting message back from the phone's queue (its validity ran out); returns whether
/// it was still waiting (the phone then never gets it).
pub async fn withdraw(db: &Db, message_id: &str) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM dial_in_queue WHERE message_id = $1 AND taken_at IS NULL")
        .bind(message_id)
        .execute(db.writer())
        .await?;
    Ok(done.rows_affected() == 1)
}
