//! What a line's device calls a message or a chat (a BlueBubbles message guid, a chat guid)
//! mapped to msgline's id. Kinds that take msgline's own ids need no rows here.

use sqlx::Row;

use super::Db;
use crate::clock;

/// Records that the device calls `local_id` `remote_id` on this line; a second record of the
/// same remote id keeps the first.
pub async fn record(db: &Db, line_id: &str, remote_id: &str, local_id: &str) -> sqlx::Result<()> {
    record_in(db.writer(), line_id, remote_id, local_id).await
}

/// [`record`] through any connection: inside a transaction, an inbound message's name is written
/// with the message.
pub async fn record_in<'c, E>(executor: E, line_id: &str, remote_id: &str, local_id: &str) -> sqlx::Result<()>
where
    E: sqlx::Executor<'c, Database = sqlx::Any>,
{
    sqlx::query(
        "INSERT INTO bridge_refs (line_id, remote_id, local_id, created_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (line_id, remote_id) DO NOTHING",
    )
    .bind(line_id)
    .bind(remote_id)
    .bind(local_id)
    .bind(clock::now_ms())
    .execute(executor)
    .await?;
    Ok(())
}

/// msgline's id for what the device calls `remote_id`.
pub async fn local_for(db: &Db, line_id: &str, remote_id: &str) -> sqlx::Result<Option<String>> {
    local_for_in(db.writer(), line_id, remote_id).await
}

/// [`local_for`] through any connection (inside a transaction).
pub async fn local_for_in<'c, E>(executor: E, line_id: &str, remote_id: &str) -> sqlx::Result<Option<String>>
where
    E: sqlx::Executor<'c, Database = sqlx::Any>,
{
    let row = sqlx::query("SELECT local_id FROM bridge_refs WHERE line_id = $1 AND remote_id = $2")
        .bind(line_id)
        .bind(remote_id)
        .fetch_optional(executor)
        .await?;
    row.map(|r| r.try_get(0)).transpose()
}

/// The oldest `local_id` recorded under a remote id starting with `prefix` (which must hold no
/// `%` or `_`) that has no other name on the line yet, with when it was recorded. A kind records
/// what it expects to see before a send (`sent:<digest>:<id>`) and matches it here when the device
/// reports a message without msgline's id.
pub async fn first_unnamed(db: &Db, line_id: &str, prefix: &str) -> sqlx::Result<Option<(String, i64)>> {
    let row = sqlx::query(
        "SELECT r.local_id, r.created_at FROM bridge_refs r WHERE r.line_id = $1 AND r.remote_id LIKE $2 \
         AND NOT EXISTS (SELECT 1 FROM bridge_refs n WHERE n.line_id = $1 AND n.local_id = r.local_id \
         AND n.remote_id NOT LIKE 'sent:%') ORDER BY r.created_at, r.local_id LIMIT 1",
    )
    .bind(line_id)
    .bind(format!("{prefix}%"))
    .fetch_optional(db.writer())
    .await?;
    row.map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).transpose()
}

/// Every remote id recorded for `local_id`, oldest first, with when each was recorded.
pub async fn remotes_for(db: &Db, line_id: &str, local_id: &str) -> sqlx::Result<Vec<(String, i64)>> {
    let rows = sqlx::query(
        "SELECT remote_id, created_at FROM bridge_refs WHERE line_id = $1 AND local_id = $2 ORDER BY created_at",
    )
    .bind(line_id)
    .bind(local_id)
    .fetch_all(db.writer())
    .await?;
    rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect()
}
