//! Lifecycle events (`messaging.message.*` and others): written in the same transaction as the
//! change that causes them, delivered later by the webhook worker.

use serde_json::{Value, json};
use sqlx::AnyConnection;

use super::{Batch, messages::Message};
use crate::{clock, ids};

/// Writes an event; `data` is the object webhook receivers get.
pub async fn insert(
    conn: &mut AnyConnection,
    org_id: &str,
    kind: &str,
    message_id: Option<&str>,
    data: &Value,
) -> sqlx::Result<String> {
    let id = ids::new_id("evt");
    sqlx::query("INSERT INTO events (id, org_id, type, message_id, data, created_at) VALUES ($1, $2, $3, $4, $5, $6)")
        .bind(&id)
        .bind(org_id)
        .bind(kind)
        .bind(message_id)
        .bind(data.to_string())
        .bind(clock::now_ms())
        .execute(&mut *conn)
        .await?;
    Ok(id)
}

/// `messaging.message.<status>` with the message as it now is.
pub async fn insert_message_event(conn: &mut AnyConnection, message: &Message) -> sqlx::Result<String> {
    let kind = format!("messaging.message.{}", message.status);
    insert(conn, &message.org_id, &kind, Some(&message.id), &json!({"message": message.to_json()})).await
}

/// Stages `messaging.message.<status>` into a batch.
pub fn stage_message_event(batch: &mut Batch, message: &Message) {
    batch.push(
        "INSERT INTO events (id, org_id, type, message_id, data, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        vec![
            ids::new_id("evt").into(),
            (&message.org_id).into(),
            format!("messaging.message.{}", message.status).into(),
            (&message.id).into(),
            json!({"message": message.to_json()}).to_string().into(),
            clock::now_ms().into(),
        ],
    );
}

/// The types of the events written for a message, oldest first (for tests and diagnostics).
pub async fn types_for_message(db: &super::Db, message_id: &str) -> sqlx::Result<Vec<String>> {
    use sqlx::Row;
    let rows = sqlx::query("SELECT type FROM events WHERE message_id = $1 ORDER BY id")
        .bind(message_id)
        .fetch_all(db.writer())
        .await?;
    rows.iter().map(|r| r.try_get(0)).collect()
}
