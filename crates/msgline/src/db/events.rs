//! Lifecycle events (`messaging.message.*` and others): written in the same transaction as the
//! change that causes them, delivered later by the webhook worker.

use sqlx::AnyConnection;

use super::Batch;
use crate::{clock, ids};

/// An event row's insert, its values given by [`values`].
pub(super) const INSERT: &str = "INSERT INTO events (id, org_id, type, message_id, data, created_at, webhooks_pending)";

/// The values of an event row from the placeholders of its id, organisation, type, message,
/// data and time. It waits for the webhook fan-out only if the organisation has an enabled
/// endpoint: an organisation without one writes no fan-out mark to clear. (An endpoint enabled
/// while the event is being written may or may not get it, as with any fan-out in progress.)
pub(super) fn values(p: &[String]) -> String {
    format!(
        "{}, (SELECT COUNT(*) FROM (SELECT 1 FROM webhooks w WHERE w.org_id = {} AND w.enabled = 1 LIMIT 1) AS w)",
        p.join(", "),
        p[1]
    )
}

/// Whether an event is written at all: only for an organisation with a webhook endpoint,
/// enabled or disabled, or with its event feed on. Events are what endpoints are sent (now, or
/// by a replay, which never reaches back before the endpoint was made) and what the feed reads;
/// with neither, a message costs no event rows.
pub(super) fn only_if(p: &[String]) -> String {
    format!(
        "(EXISTS (SELECT 1 FROM webhooks w WHERE w.org_id = {org}) \
         OR EXISTS (SELECT 1 FROM orgs o WHERE o.id = {org} AND o.event_feed = 1))",
        org = p[1]
    )
}

/// Finds a row if the organisation `$1` wants events (see [`only_if`]): the condition on its
/// own, for a runner that asks it once for many events.
pub(super) const WANTS_EVENTS: &str = "SELECT 1 FROM webhooks WHERE org_id = $1 \
     UNION ALL SELECT 1 FROM orgs WHERE id = $1 AND event_feed = 1 LIMIT 1";

/// The insert of one event, parameters `$1..$6` in [`values`]' order; built once.
fn insert_sql() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(|| {
        let placeholders: Vec<String> = (1..=6).map(|i| format!("${i}")).collect();
        format!("{INSERT} SELECT {} WHERE {}", values(&placeholders), only_if(&placeholders))
    })
}

/// Writes an event if the organisation wants events (see [`only_if`]); `data` is the
/// object webhook receivers get, serialised. Returns the event's id, or `None` if none was
/// written.
pub async fn insert(
    conn: &mut AnyConnection,
    org_id: &str,
    kind: &str,
    message_id: Option<&str>,
    data: String,
) -> sqlx::Result<Option<String>> {
    let id = ids::new_id("evt");
    let done = sqlx::query(insert_sql())
        .bind(&id)
        .bind(org_id)
        .bind(kind)
        .bind(message_id)
        .bind(data)
        .bind(clock::now_ms())
        .execute(&mut *conn)
        .await?;
    Ok((done.rows_affected() == 1).then_some(id))
}

/// An event as webhooks and the feed give it, `{id, type, created_at, data}`, from its row
/// (`data` as stored, serialised).
pub fn object(id: &str, kind: &str, created_at: i64, data: &str) -> serde_json::Value {
    let data: serde_json::Value = serde_json::from_str(data).unwrap_or(serde_json::Value::Null);
    serde_json::json!({"id": id, "type": kind, "created_at": clock::rfc3339(created_at), "data": data})
}

/// [`object`], serialised.
pub fn body(id: &str, kind: &str, created_at: i64, data: &str) -> Vec<u8> {
    serde_json::to_vec(&object(id, kind, created_at, data)).expect("JSON values serialise")
}

/// Stages `messaging.message.<status>` of a message into a batch, with `data` (the message as
/// it now is: `Message::event_data`).
pub fn stage_message_event(batch: &mut Batch, org_id: &str, message_id: &str, status: &str, data: String) {
    batch
        .push(
            insert_sql(),
            vec![
                ids::new_id("evt").into(),
                org_id.into(),
                format!("messaging.message.{status}").into(),
                message_id.into(),
                data.into(),
                clock::now_ms().into(),
            ],
        )
        .guard_last(WANTS_EVENTS, org_id.into());
}

/// The types of the events written for a message, oldest first (for tests).
#[cfg(feature = "testing")]
pub async fn types_for_message(db: &super::Db, message_id: &str) -> sqlx::Result<Vec<String>> {
    use sqlx::Row;
    let rows = sqlx::query("SELECT type FROM events WHERE message_id = $1 ORDER BY id")
        .bind(message_id)
        .fetch_all(db.writer())
        .await?;
    rows.iter().map(|r| r.try_get(0)).collect()
}
