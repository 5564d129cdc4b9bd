//! Idempotency records. A send's key is kept on the message it made ([`SendKey`]): its answer
//! is that message as accepted, so nothing else is written. Other requests (group creation)
//! keep (organisation, method, path, key) → the request's fingerprint and the response it got
//! in `idempotency_keys`, stored in the same transaction as what the request wrote.

use serde_json::Value;
use sqlx::{AnyConnection, Row};

use super::Db;

/// The scope of one key.
#[derive(Debug, Clone)]
pub struct IdemScope<'a> {
    pub org_id: &'a str,
    pub method: &'a str,
    pub path: &'a str,
    pub key: &'a str,
}

/// What an earlier request with the same key left.
#[derive(Debug, Clone)]
pub enum Prior {
    /// The same request finished: answer it again.
    Done { status: u16, body: Value },
    /// The same request is still running; `body` is what it noted so far (a group's ids).
    InProgress { body: Option<Value> },
    /// Another request used this key.
    Mismatch,
}

const WHERE: &str = "org_id = $1 AND method = $2 AND path = $3 AND idem_key = $4";

pub use super::messages::SendKey;

/// Stages the release of a send's key from the message holding it if its time is up, for a
/// send that found it held (the rare case: a key reused after its time), so that the send's
/// own insert can take it.
pub fn stage_take_expired(batch: &mut super::Batch, org_id: &str, key: &str, now: i64) {
    batch.push(
        "UPDATE messages SET idem_key = NULL WHERE org_id = $1 AND idem_key = $2 AND idem_expires_at <= $3",
        vec![org_id.into(), key.into(), now.into()],
    );
}

/// What a send with this key made, while the key lasts: the message, the fingerprint of the
/// request that made it, and the rest of its answer ([`SendKey::extra`]).
pub async fn find_send(
    db: &Db,
    org_id: &str,
    key: &str,
    now: i64,
) -> sqlx::Result<Option<(super::messages::Message, String, Option<String>)>> {
    let sql = format!(
        "SELECT {}, idem_fingerprint, idem_extra FROM messages WHERE org_id = $1 AND idem_key = $2 AND idem_expires_at > $3",
        super::messages::COLUMNS
    );
    let rows = db
        .read_rows(sql, vec![org_id.into(), key.into(), now.into()], |row| {
            Ok((super::messages::from_row(row)?, row.text("idem_fingerprint")?, row.opt_text("idem_extra")?))
        })
        .await?;
    Ok(rows.into_iter().next())
}

async fn read(
    executor: impl sqlx::Executor<'_, Database = sqlx::Any>,
    scope: &IdemScope<'_>,
    fingerprint: &str,
    now: i64,
) -> sqlx::Result<Option<Prior>> {
    let row = sqlx::query(&format!(
        "SELECT fingerprint, state, response_status, response_body FROM idempotency_keys WHERE {WHERE} AND expires_at > $5"
    ))
    .bind(scope.org_id)
    .bind(scope.method)
    .bind(scope.path)
    .bind(scope.key)
    .bind(now)
    .fetch_optional(executor)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let stored: String = row.try_get(0)?;
    if stored != fingerprint {
        return Ok(Some(Prior::Mismatch));
    }
    let state: String = row.try_get(1)?;
    let status: Option<i64> = row.try_get(2)?;
    let body: Option<Value> = row.try_get::<Option<String>, _>(3)?.and_then(|b| serde_json::from_str(&b).ok());
    if state != "done" {
        return Ok(Some(Prior::InProgress { body }));
    }
    Ok(Some(Prior::Done { status: status.unwrap_or(200) as u16, body: body.unwrap_or(Value::Null) }))
}

/// A read outside any transaction: lets replays answer without redoing the request's work.
pub async fn peek(db: &Db, scope: &IdemScope<'_>, fingerprint: &str, now: i64) -> sqlx::Result<Option<Prior>> {
    read(db.writer(), scope, fingerprint, now).await
}

/// Claims the key inside the request's transaction. `None` means it is ours; otherwise what an
/// earlier request left. On PostgreSQL a concurrent claim of the same key waits here until the
/// first transaction ends, then sees its result.
pub async fn claim(
    conn: &mut AnyConnection,
    scope: &IdemScope<'_>,
    fingerprint: &str,
    now: i64,
    ttl_ms: i64,
) -> sqlx::Result<Option<Prior>> {
    sqlx::query(&format!("DELETE FROM idempotency_keys WHERE {WHERE} AND expires_at <= $5"))
        .bind(scope.org_id)
        .bind(scope.method)
        .bind(scope.path)
        .bind(scope.key)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    let inserted = sqlx::query(
        "INSERT INTO idempotency_keys (org_id, method, path, idem_key, fingerprint, state, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, 'in_progress', $6, $7) ON CONFLICT (org_id, method, path, idem_key) DO NOTHING",
    )
    .bind(scope.org_id)
    .bind(scope.method)
    .bind(scope.path)
    .bind(scope.key)
    .bind(fingerprint)
    .bind(now)
    .bind(now + ttl_ms)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if inserted == 1 {
        return Ok(None);
    }
    Ok(Some(read(&mut *conn, scope, fingerprint, now).await?.unwrap_or(Prior::InProgress { body: None })))
}

/// Stores the response a claimed key answered with.
pub async fn complete(conn: &mut AnyConnection, scope: &IdemScope<'_>, status: u16, body: &Value) -> sqlx::Result<()> {
    sqlx::query(&format!(
        "UPDATE idempotency_keys SET state = 'done', response_status = $5, response_body = $6 WHERE {WHERE}"
    ))
    .bind(scope.org_id)
    .bind(scope.method)
    .bind(scope.path)
    .bind(scope.key)
    .bind(status as i64)
    .bind(body.to_string())
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Deletes up to `limit` expired records; returns how many.
pub async fn delete_expired(db: &Db, now: i64, limit: i64) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "DELETE FROM idempotency_keys WHERE (org_id, method, path, idem_key) IN \
         (SELECT org_id, method, path, idem_key FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2)",
    )
    .bind(now)
    .bind(limit)
    .execute(db.writer())
    .await?
    .rows_affected())
}

/// Notes what a request still in progress has written so far (a group's ids), for replays.
pub async fn note_progress(conn: &mut AnyConnection, scope: &IdemScope<'_>, body: &Value) -> sqlx::Result<()> {
    sqlx::query(&format!("UPDATE idempotency_keys SET response_body = $5 WHERE {WHERE}"))
        .bind(scope.org_id)
        .bind(scope.method)
        .bind(scope.path)
        .bind(scope.key)
        .bind(body.to_string())
        .execute(&mut *conn)
        .await?;
    Ok(())
}
