//! Inbound messages on a shared line that no organisation has written to from it: kept, not
//! dropped, until an operator routes them.

use serde_json::Value;
use sqlx::AnyConnection;

use crate::{clock, ids};

pub async fn insert(
    conn: &mut AnyConnection,
    line_id: &str,
    from: &str,
    body: &str,
    payload: &Value,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO unrouted_inbound (id, line_id, from_phone, body, payload, received_at) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(ids::new_id("unr"))
    .bind(line_id)
    .bind(from)
    .bind(body)
    .bind(payload.to_string())
    .bind(clock::now_ms())
    .execute(conn)
    .await?;
    Ok(())
}

/// How many inbound messages are waiting unrouted on a line (for tests).
#[cfg(feature = "testing")]
pub async fn count(db: &super::Db, line_id: &str) -> sqlx::Result<i64> {
    use sqlx::Row;
    sqlx::query("SELECT COUNT(*) FROM unrouted_inbound WHERE line_id = $1")
        .bind(line_id)
        .fetch_one(db.reader())
        .await?
        .try_get(0)
}
