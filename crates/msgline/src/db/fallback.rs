//! SMS fallback's rows: the iMessages watched for failure (`fallback = 'sms'`), and the one
//! transaction that writes an SMS in a failed iMessage's place.

use serde_json::json;
use sqlx::AnyConnection;

use super::{
    Db, events,
    messages::{self, Fallback, Message, NewMessage},
};
use crate::domain::lifecycle::{Channel, Direction, MessageKind, MessageStatus};

/// The watched messages whose fallback is to be decided at `now`: they failed, got through (or
/// were canceled), or their `fallback_at` passed. Oldest first. A read, on a reader: it runs
/// four times a second on every instance and must not take SQLite's one writer from the sends.
pub async fn due(db: &Db, now: i64, limit: i64) -> sqlx::Result<Vec<String>> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT id FROM messages WHERE fallback = 'sms' AND (status IN ('failed', 'delivered', 'read', 'canceled') \
         OR (fallback_at IS NOT NULL AND fallback_at <= $1)) ORDER BY id LIMIT $2",
    )
    .bind(now)
    .bind(limit)
    .fetch_all(db.reader())
    .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// Ends the watch of a message without an SMS (it got through, or no SMS can be sent); `false`
/// when another instance decided first.
pub async fn end_watch(conn: &mut AnyConnection, id: &str) -> sqlx::Result<bool> {
    let done = sqlx::query("UPDATE messages SET fallback = NULL WHERE id = $1 AND fallback = 'sms'")
        .bind(id)
        .execute(&mut *conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Writes the SMS that stands in for `imessage` (queued, with its events), points the iMessage
/// at it, ends the watch and writes `messaging.message.fallback`, all in the caller's
/// transaction. `None` when another instance decided first: the caller rolls back.
pub async fn fall_back(conn: &mut AnyConnection, imessage: &Message) -> sqlx::Result<Option<Message>> {
    let sms = messages::insert(
        &mut *conn,
        NewMessage {
            org_id: imessage.org_id.clone(),
            conversation_id: imessage.conversation_id.clone(),
            contact_id: imessage.contact_id.clone(),
            line_id: imessage.line_id.clone(),
            direction: Direction::Outbound,
            channel: Channel::Sms,
            kind: MessageKind::Text,
            body: imessage.body.clone(),
            payload: None,
            status: MessageStatus::Queued,
            agent_id: imessage.agent_id.clone(),
            attachment: None,
            send_at: None,
            fallback: Fallback { for_message: Some(imessage.id.clone()), ..Fallback::default() },
            wait: Default::default(),
            from: imessage.from.clone(),
            to: imessage.to.clone(),
            // Over SMS a reply goes as a plain message, and effects and subjects do not exist.
            extras: Default::default(),
        },
    )
    .await?;
    let claimed =
        sqlx::query("UPDATE messages SET fallback = NULL, fallback_message_id = $1 WHERE id = $2 AND fallback = 'sms'")
            .bind(&sms.id)
            .bind(&imessage.id)
            .execute(&mut *conn)
            .await?;
    if claimed.rows_affected() == 0 {
        return Ok(None);
    }
    let pointed = Message { fallback_message_id: Some(sms.id.clone()), ..imessage.clone() };
    let data = json!({"message": pointed.view(), "fallback_message": sms.view()});
    events::insert(conn, &imessage.org_id, "messaging.message.fallback", Some(&imessage.id), data.to_string()).await?;
    Ok(Some(sms))
}
