//! Sender pools: lines of one organisation that a send may name together (`pool_id`), the line a
//! contact is answered from (sticky: the pool line of its latest conversation), and failover: a
//! message that waits on a pool line stopped too long moves to another line of its pool, with
//! its contact's conversation, while no line has been handed it.

use sqlx::{AnyConnection, Row, any::AnyRow};

use super::{Db, ListQuery, Page, Paged};
use crate::{clock, ids};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    pub id: String,
    pub org_id: String,
    pub name: String,
    /// In the order they were given.
    pub line_ids: Vec<String>,
    pub failover_after_seconds: i64,
    pub created_at: i64,
}

const COLUMNS: &str = "id, org_id, name, failover_after_seconds, created_at";

fn from_row(row: &AnyRow) -> sqlx::Result<Pool> {
    Ok(Pool {
        id: row.try_get("id")?,
        org_id: row.try_get("org_id")?,
        name: row.try_get("name")?,
        line_ids: Vec::new(),
        failover_after_seconds: row.try_get("failover_after_seconds")?,
        created_at: row.try_get("created_at")?,
    })
}

async fn with_lines(conn: &mut AnyConnection, mut pool: Pool) -> sqlx::Result<Pool> {
    pool.line_ids = sqlx::query_scalar("SELECT line_id FROM pool_lines WHERE pool_id = $1 ORDER BY position")
        .bind(&pool.id)
        .fetch_all(&mut *conn)
        .await?;
    Ok(pool)
}

async fn set_lines(conn: &mut AnyConnection, pool_id: &str, line_ids: &[String]) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM pool_lines WHERE pool_id = $1").bind(pool_id).execute(&mut *conn).await?;
    for (position, line_id) in line_ids.iter().enumerate() {
        sqlx::query("INSERT INTO pool_lines (pool_id, line_id, position) VALUES ($1, $2, $3)")
            .bind(pool_id)
            .bind(line_id)
            .bind(position as i64)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

pub async fn create(
    db: &Db,
    org_id: &str,
    name: &str,
    line_ids: &[String],
    failover_after_seconds: i64,
) -> sqlx::Result<Pool> {
    let pool = Pool {
        id: ids::new_id("pool"),
        org_id: org_id.to_string(),
        name: name.to_string(),
        line_ids: line_ids.to_vec(),
        failover_after_seconds,
        created_at: clock::now_ms(),
    };
    db.transaction(async |tx| {
        sqlx::query(
            "INSERT INTO pools (id, org_id, name, failover_after_seconds, created_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&pool.id)
        .bind(&pool.org_id)
        .bind(&pool.name)
        .bind(pool.failover_after_seconds)
        .bind(pool.created_at)
        .execute(&mut *tx)
        .await?;
        set_lines(tx, &pool.id, &pool.line_ids).await
    })
    .await?;
    Ok(pool)
}

/// A pool of the organisation.
pub async fn get(db: &Db, org_id: &str, id: &str) -> sqlx::Result<Option<Pool>> {
    db.read(async |conn| {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM pools WHERE org_id = $1 AND id = $2"))
            .bind(org_id)
            .bind(id)
            .fetch_optional(&mut *conn)
            .await?;
        match row.as_ref().map(from_row).transpose()? {
            Some(pool) => with_lines(conn, pool).await.map(Some),
            None => Ok(None),
        }
    })
    .await
}

pub async fn list(db: &Db, org_id: &str, page: &Page) -> sqlx::Result<Paged<Pool>> {
    let paged = ListQuery::new(format!("SELECT {COLUMNS} FROM pools WHERE org_id = $1"), org_id)
        .fetch(db, page, from_row, |p| &p.id)
        .await?;
    let mut rows = Vec::with_capacity(paged.rows.len());
    for pool in paged.rows {
        rows.push(db.read(async |conn| with_lines(conn, pool).await).await?);
    }
    Ok(Paged { rows, next: paged.next })
}

/// Changes what is given of a pool; `None` when the organisation has no such pool.
pub async fn update(
    db: &Db,
    org_id: &str,
    id: &str,
    name: Option<&str>,
    line_ids: Option<&[String]>,
    failover_after_seconds: Option<i64>,
) -> sqlx::Result<Option<Pool>> {
    let changed = db
        .transaction(async |tx| -> sqlx::Result<bool> {
            let found = sqlx::query(
                "UPDATE pools SET name = COALESCE($1, name), \
                 failover_after_seconds = COALESCE($2, failover_after_seconds) WHERE org_id = $3 AND id = $4",
            )
            .bind(name)
            .bind(failover_after_seconds)
            .bind(org_id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
            if found.rows_affected() == 0 {
                return Ok(false);
            }
            if let Some(line_ids) = line_ids {
                set_lines(tx, id, line_ids).await?;
            }
            Ok(true)
        })
        .await?;
    match changed {
        true => get(db, org_id, id).await,
        false => Ok(None),
    }
}

/// Deletes a pool (its lines stay as they are; messages sent through it stay on their lines).
pub async fn delete(db: &Db, org_id: &str, id: &str) -> sqlx::Result<bool> {
    db.transaction(async |tx| {
        let done = sqlx::query("DELETE FROM pools WHERE org_id = $1 AND id = $2")
            .bind(org_id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        sqlx::query("DELETE FROM pool_lines WHERE pool_id = $1").bind(id).execute(&mut *tx).await?;
        sqlx::query("UPDATE messages SET pool_id = NULL WHERE pool_id = $1 AND outbox_state = 'paced'")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        Ok(true)
    })
    .await
}

/// The pool line of the contact's latest direct conversation with the organisation, if it has one.
pub async fn sticky_line(db: &Db, org_id: &str, pool: &Pool, phone: &str) -> sqlx::Result<Option<String>> {
    db.read(async |conn| {
        sqlx::query_scalar(
            "SELECT c.line_id FROM conversations c JOIN contacts ct ON ct.id = c.contact_id \
             JOIN pool_lines p ON p.line_id = c.line_id AND p.pool_id = $3 \
             WHERE ct.org_id = $1 AND ct.phone = $2 AND c.org_id = $1 AND c.kind = 'direct' \
             ORDER BY COALESCE(c.last_message_at, c.created_at) DESC, c.id DESC LIMIT 1",
        )
        .bind(org_id)
        .bind(phone)
        .bind(&pool.id)
        .fetch_optional(&mut *conn)
        .await
    })
    .await
}

/// A message waiting on a line that may move within its pool.
#[derive(Debug, Clone)]
pub struct Movable {
    pub message_id: String,
    pub org_id: String,
    pub pool_id: String,
    pub contact_id: String,
    pub phone: String,
}

/// The messages waiting on `line_id` that were sent through a pool, never handed to a line, and
/// go to one number (a group's messages never move).
pub async fn movable(conn: &mut AnyConnection, line_id: &str, limit: i64) -> sqlx::Result<Vec<Movable>> {
    let rows = sqlx::query(
        "SELECT m.id, m.org_id, m.pool_id, m.contact_id, p.phone FROM messages m \
         JOIN conversations c ON c.id = m.conversation_id AND c.kind = 'direct' \
         JOIN conversation_participants p ON p.conversation_id = m.conversation_id \
         WHERE m.line_id = $1 AND m.outbox_state = 'paced' AND m.pool_id IS NOT NULL AND m.contact_id IS NOT NULL \
         ORDER BY m.available_at LIMIT $2",
    )
    .bind(line_id)
    .bind(limit)
    .fetch_all(&mut *conn)
    .await?;
    rows.iter()
        .map(|row| {
            Ok(Movable {
                message_id: row.try_get("id")?,
                org_id: row.try_get("org_id")?,
                pool_id: row.try_get("pool_id")?,
                contact_id: row.try_get("contact_id")?,
                phone: row.try_get("phone")?,
            })
        })
        .collect()
}

/// A pool's lines (in order) and how long a line may be stopped before its messages move.
pub async fn lines_of(conn: &mut AnyConnection, pool_id: &str) -> sqlx::Result<Option<(Vec<String>, i64)>> {
    let failover: Option<i64> = sqlx::query_scalar("SELECT failover_after_seconds FROM pools WHERE id = $1")
        .bind(pool_id)
        .fetch_optional(&mut *conn)
        .await?;
    let Some(failover) = failover else { return Ok(None) };
    let lines = sqlx::query_scalar("SELECT line_id FROM pool_lines WHERE pool_id = $1 ORDER BY position")
        .bind(pool_id)
        .fetch_all(&mut *conn)
        .await?;
    Ok(Some((lines, failover)))
}

/// Whether a message to `phone` may move to `line_id`: the line is active and the number has
/// not opted out of the organisation's messages on it.
pub async fn may_move_to(conn: &mut AnyConnection, org_id: &str, line_id: &str, phone: &str) -> sqlx::Result<bool> {
    let active: Option<String> =
        sqlx::query_scalar("SELECT health FROM lines WHERE id = $1 AND (org_id = $2 OR org_id IS NULL)")
            .bind(line_id)
            .bind(org_id)
            .fetch_optional(&mut *conn)
            .await?;
    if active.as_deref() != Some("active") {
        return Ok(false);
    }
    let opted_out: Option<i64> =
        sqlx::query_scalar("SELECT 1 FROM opt_outs WHERE org_id = $1 AND line_id = $2 AND phone = $3 LIMIT 1")
            .bind(org_id)
            .bind(line_id)
            .bind(phone)
            .fetch_optional(&mut *conn)
            .await?;
    Ok(opted_out.is_none())
}

/// Moves a waiting message to `line_id`, into its contact's conversation on that line (made if
/// needed, and made the contact's latest, so the contact stays on the new line). Only a message
/// still waiting moves. Returns whether it moved.
pub async fn move_message(conn: &mut AnyConnection, moving: &Movable, line_id: &str) -> sqlx::Result<bool> {
    let conversation =
        super::conversations::find_or_create_direct(conn, &moving.org_id, line_id, &moving.contact_id, &moving.phone)
            .await?;
    let now = clock::now_ms();
    let moved = sqlx::query(
        "UPDATE messages SET line_id = $1, conversation_id = $2, updated_at = $3 WHERE id = $4 AND outbox_state = 'paced'",
    )
    .bind(line_id)
    .bind(&conversation.id)
    .bind(now)
    .bind(&moving.message_id)
    .execute(&mut *conn)
    .await?;
    if moved.rows_affected() == 1 {
        sqlx::query("UPDATE conversations SET last_message_at = $1 WHERE id = $2")
            .bind(now)
            .bind(&conversation.id)
            .execute(&mut *conn)
            .await?;
    }
    Ok(moved.rows_affected() == 1)
}
