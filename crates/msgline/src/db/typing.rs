//! Who is typing in a conversation, as the line last reported it (`conversation_typing`).

use sqlx::{AnyConnection, Row};

use super::Db;

/// Someone typing in a conversation: their number, since when, and until when the report holds
/// if nothing stops it sooner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Typing {
    pub phone: String,
    pub since_ms: i64,
    pub until_ms: i64,
}

/// Records a report: `until_ms` of `None` is "stopped typing".
pub async fn record(
    conn: &mut AnyConnection,
    org_id: &str,
    conversation_id: &str,
    phone: &str,
    now_ms: i64,
    until_ms: Option<i64>,
) -> sqlx::Result<()> {
    match until_ms {
        Some(until_ms) => {
            sqlx::query(
                "INSERT INTO conversation_typing (conversation_id, org_id, phone, since_ms, until_ms) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (conversation_id) DO UPDATE SET \
                 phone = excluded.phone, since_ms = excluded.since_ms, until_ms = excluded.until_ms",
            )
            .bind(conversation_id)
            .bind(org_id)
            .bind(phone)
            .bind(now_ms)
            .bind(until_ms)
            .execute(&mut *conn)
            .await?;
        }
        None => {
            sqlx::query("DELETE FROM conversation_typing WHERE conversation_id = $1 AND org_id = $2 AND phone = $3")
                .bind(conversation_id)
                .bind(org_id)
                .bind(phone)
                .execute(&mut *conn)
                .await?;
        }
    }
    Ok(())
}

/// The report in force for a conversation at `now_ms`, if any.
pub async fn current(db: &Db, org_id: &str, conversation_id: &str, now_ms: i64) -> sqlx::Result<Option<Typing>> {
    let row = sqlx::query(
        "SELECT phone, since_ms, until_ms FROM conversation_typing \
         WHERE conversation_id = $1 AND org_id = $2 AND until_ms > $3",
    )
    .bind(conversation_id)
    .bind(org_id)
    .bind(now_ms)
    .fetch_optional(db.reader())
    .await?;
    row.map(|row| {
        Ok(Typing {
            phone: row.try_get("phone")?,
            since_ms: row.try_get("since_ms")?,
            until_ms: row.try_get("until_ms")?,
        })
    })
    .transpose()
}
