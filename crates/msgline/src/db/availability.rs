//! Remembered iMessage reachability for `GET /availability`: what a line's device last said
//! about a number, and what msgline learned on its own (a contact's inbound iMessage, a send's
//! automatic channel choice), each with its time.

use sqlx::Row;

use super::{Batch, Db};

/// The freshest answer about `phone` from `line_id` (or, for the organisation, from its contact
/// with that number) no older than `since`: (reachable over iMessage, when learned).
pub async fn remembered(
    db: &Db,
    org_id: &str,
    line_id: &str,
    phone: &str,
    since: i64,
) -> sqlx::Result<Option<(bool, i64)>> {
    let rows = sqlx::query(
        "SELECT imessage, checked_at FROM availability WHERE line_id = $1 AND phone = $2 AND checked_at >= $3 \
         UNION ALL SELECT imessage_reachable, imessage_checked_at FROM contacts WHERE org_id = $4 AND phone = $2 \
         AND imessage_reachable IS NOT NULL AND imessage_checked_at >= $3",
    )
    .bind(line_id)
    .bind(phone)
    .bind(since)
    .bind(org_id)
    .fetch_all(db.reader())
    .await?;
    let mut found: Option<(bool, i64)> = None;
    for row in rows {
        let (reachable, at): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
        if found.is_none_or(|(_, best)| at > best) {
            found = Some((reachable != 0, at));
        }
    }
    Ok(found)
}

/// Remembers the device's answer for the line, and on the organisation's contact with that
/// number if there is one (so that sends choose their channel by it too).
pub async fn remember(
    db: &Db,
    org_id: &str,
    line_id: &str,
    phone: &str,
    reachable: bool,
    now: i64,
) -> sqlx::Result<()> {
    let mut batch = Batch::new();
    batch.push(
        "INSERT INTO availability (line_id, phone, imessage, checked_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (line_id, phone) DO UPDATE SET imessage = excluded.imessage, checked_at = excluded.checked_at",
        vec![line_id.into(), phone.into(), i64::from(reachable).into(), now.into()],
    );
    batch.push(
        "UPDATE contacts SET imessage_reachable = $1, imessage_checked_at = $2 WHERE org_id = $3 AND phone = $4",
        vec![i64::from(reachable).into(), now.into(), org_id.into(), phone.into()],
    );
    db.commit(batch).await
}
