//! Delivery attempts: every call to a line's bridge for a message, as `GET /events` shows them.

use sqlx::{AnyConnection, Row, any::AnyRow};

use super::{Batch, Db, ListQuery, Page, Paged};
use crate::{clock, ids};

#[derive(Debug, Clone)]
pub struct Attempt {
    pub id: String,
    pub message_id: String,
    pub line_id: String,
    pub attempt: i64,
    /// `accepted`, `rejected`, `timeout` or `error`.
    pub outcome: String,
    pub http_status: Option<i64>,
    pub latency_ms: i64,
    pub error: Option<String>,
    pub created_at: i64,
}

const COLUMNS: &str = "id, org_id, message_id, line_id, attempt, outcome, http_status, latency_ms, error, created_at";

fn from_row(row: &AnyRow) -> sqlx::Result<Attempt> {
    Ok(Attempt {
        id: row.try_get(0)?,
        message_id: row.try_get(2)?,
        line_id: row.try_get(3)?,
        attempt: row.try_get(4)?,
        outcome: row.try_get(5)?,
        http_status: row.try_get(6)?,
        latency_ms: row.try_get(7)?,
        error: row.try_get(8)?,
        created_at: row.try_get(9)?,
    })
}

/// One call to a line, as recorded.
#[derive(Debug, Clone)]
pub struct NewAttempt<'a> {
    pub org_id: &'a str,
    pub message_id: &'a str,
    pub line_id: &'a str,
    pub attempt: i64,
    pub outcome: &'a str,
    pub http_status: Option<u16>,
    pub latency_ms: i64,
    pub error: Option<&'a str>,
}

pub async fn insert(conn: &mut AnyConnection, attempt: NewAttempt<'_>) -> sqlx::Result<()> {
    let mut batch = Batch::new();
    stage_insert(&mut batch, attempt);
    batch.execute(conn).await
}

pub fn stage_insert(batch: &mut Batch, attempt: NewAttempt<'_>) {
    batch.push(
        format!("INSERT INTO delivery_attempts ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"),
        vec![
            ids::new_id("att").into(),
            attempt.org_id.into(),
            attempt.message_id.into(),
            attempt.line_id.into(),
            attempt.attempt.into(),
            attempt.outcome.into(),
            attempt.http_status.map(i64::from).into(),
            attempt.latency_ms.into(),
            attempt.error.into(),
            clock::now_ms().into(),
        ],
    );
}

/// The organisation's attempts, newest first, optionally of one line and for one message.
pub async fn list(
    db: &Db,
    org_id: &str,
    line_id: Option<&str>,
    message_id: Option<&str>,
    page: &Page,
) -> sqlx::Result<Paged<Attempt>> {
    ListQuery::new(format!("SELECT {COLUMNS} FROM delivery_attempts WHERE org_id = $1"), org_id)
        .eq("line_id", line_id)
        .eq("message_id", message_id)
        .fetch(db, page, from_row, |a| &a.id)
        .await
}
