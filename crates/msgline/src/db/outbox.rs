//! The delivery outbox: one row per outbound message not yet settled with its line. Written in
//! the same transaction as the message; claimed, committed, then worked on outside any
//! transaction, so a crash never loses a send and never hides one that may have happened.

use sqlx::{AnyConnection, Row};

use super::{Backend, Db};

#[derive(Debug, Clone)]
pub struct Job {
    pub message_id: String,
    pub line_id: String,
    pub attempts: i64,
}

pub async fn insert(conn: &mut AnyConnection, message_id: &str, line_id: &str, now: i64) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO outbox (message_id, line_id, state, attempts, available_at, created_at) \
         VALUES ($1, $2, 'pending', 0, $3, $3)",
    )
    .bind(message_id)
    .bind(line_id)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Stages a pending job into a batch.
pub fn stage_insert(batch: &mut super::Batch, message_id: &str, line_id: &str, now: i64) {
    batch.push(
        "INSERT INTO outbox (message_id, line_id, state, attempts, available_at, created_at) \
         VALUES ($1, $2, 'pending', 0, $3, $3)",
        vec![message_id.into(), line_id.into(), now.into()],
    );
}

/// Stages a job's return to `pending` (due at `available_at`) into a batch.
pub fn stage_retry_at(batch: &mut super::Batch, message_id: &str, available_at: i64) {
    batch.push(
        "UPDATE outbox SET state = 'pending', available_at = $1, claimed_until = NULL WHERE message_id = $2",
        vec![available_at.into(), message_id.into()],
    );
}

/// Stages a job's move to `unknown` (to be asked about from `available_at`) into a batch.
pub fn stage_mark_unknown(batch: &mut super::Batch, message_id: &str, available_at: i64) {
    batch.push(
        "UPDATE outbox SET state = 'unknown', available_at = $1, claimed_until = NULL WHERE message_id = $2",
        vec![available_at.into(), message_id.into()],
    );
}

/// Stages the end of a job into a batch.
pub fn stage_complete(batch: &mut super::Batch, message_id: &str) {
    batch.push("DELETE FROM outbox WHERE message_id = $1", vec![message_id.into()]);
}

/// A job already claimed by the request that writes it (group creation calls the line itself);
/// if that request dies, the claim runs out and the reconciler asks the line.
pub async fn insert_claimed(
    conn: &mut AnyConnection,
    message_id: &str,
    line_id: &str,
    now: i64,
    lease_ms: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO outbox (message_id, line_id, state, attempts, available_at, claimed_until, created_at) \
         VALUES ($1, $2, 'claimed', 1, $3, $4, $3)",
    )
    .bind(message_id)
    .bind(line_id)
    .bind(now)
    .bind(now + lease_ms)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

fn skip_locked(db: &Db) -> &'static str {
    match db.backend() {
        Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        Backend::Sqlite => "",
    }
}

/// Claims up to `limit` pending jobs that are due, for `lease_ms`. The claim is committed
/// before the line is called.
pub async fn claim_pending(db: &Db, now: i64, lease_ms: i64, limit: i64) -> sqlx::Result<Vec<Job>> {
    let sql = format!(
        "UPDATE outbox SET state = 'claimed', claimed_until = $1, attempts = attempts + 1 \
         WHERE message_id IN (SELECT message_id FROM outbox WHERE state = 'pending' AND available_at <= $2 \
         ORDER BY available_at LIMIT $3{}) RETURNING message_id, line_id, attempts",
        skip_locked(db)
    );
    super::write_returning(db, sql, vec![(now + lease_ms).into(), now.into(), limit.into()], job_from_row).await
}

fn job_from_row(row: &dyn super::Columns) -> sqlx::Result<Job> {
    Ok(Job { message_id: row.text("message_id")?, line_id: row.text("line_id")?, attempts: row.int("attempts")? })
}

/// Claims up to `limit` jobs whose outcome must be asked of the line: those marked unknown and
/// due, and those whose claim ran out (the instance that held it stopped mid-call). They are
/// pushed back to `next_at` so that one asker works on each at a time.
pub async fn claim_unsettled(db: &Db, now: i64, next_at: i64, limit: i64) -> sqlx::Result<Vec<Job>> {
    let sql = format!(
        "UPDATE outbox SET state = 'unknown', available_at = $1, claimed_until = NULL \
         WHERE message_id IN (SELECT message_id FROM outbox WHERE (state = 'unknown' AND available_at <= $2) \
         OR (state = 'claimed' AND claimed_until < $2) ORDER BY available_at LIMIT $3{}) \
         RETURNING message_id, line_id, attempts",
        skip_locked(db)
    );
    super::write_returning(db, sql, vec![next_at.into(), now.into(), limit.into()], job_from_row).await
}

/// Back to `pending`, due at `available_at` (the line could not have received it).
pub async fn retry_at(conn: &mut AnyConnection, message_id: &str, available_at: i64) -> sqlx::Result<()> {
    sqlx::query("UPDATE outbox SET state = 'pending', available_at = $1, claimed_until = NULL WHERE message_id = $2")
        .bind(available_at)
        .bind(message_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// To be asked of the line from `available_at` on.
pub async fn mark_unknown(conn: &mut AnyConnection, message_id: &str, available_at: i64) -> sqlx::Result<()> {
    sqlx::query("UPDATE outbox SET state = 'unknown', available_at = $1, claimed_until = NULL WHERE message_id = $2")
        .bind(available_at)
        .bind(message_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Settled with the line: nothing more to do.
pub async fn complete(conn: &mut AnyConnection, message_id: &str) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM outbox WHERE message_id = $1").bind(message_id).execute(&mut *conn).await?;
    Ok(())
}

/// Whether any job is waiting to be sent or settled (for tests and shutdown).
pub async fn count(db: &Db) -> sqlx::Result<i64> {
    sqlx::query("SELECT COUNT(*) FROM outbox").fetch_one(db.writer()).await?.try_get(0)
}
