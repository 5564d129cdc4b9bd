//! What a line's pacer reads and writes: the ledger of sends each line was handed (`line_sends`,
//! its budgets' windows), the messages that wait for their line (`outbox_state = 'paced'`), and
//! their hand-over. A pacing step runs in one transaction that first locks the line's row
//! ([`lock_line`]), so that instances sharing a PostgreSQL database count one budget.

use sqlx::{AnyConnection, Row};

use super::{Db, lines::Line, outbox};
use crate::domain::lifecycle::MessageStatus;

pub const MINUTE_MS: i64 = 60_000;
pub const HOUR_MS: i64 = 3_600_000;
pub const DAY_MS: i64 = 86_400_000;
/// How long a line's ledger is kept: past a calendar month and a day.
pub const KEEP_MS: i64 = 40 * DAY_MS;

/// A line's sends in its windows, as of now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub minute: u64,
    pub hour: u64,
    pub day: u64,
    pub new_contacts_hour: u64,
    pub new_contacts_day: u64,
    pub new_contacts_month: u64,
}

/// The line's latest send: when the device may have sent it (a send in flight counts as late as
/// its call may last) and its message, whose id draws the jitter after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastSend {
    pub at: i64,
    pub message_id: String,
}

/// A message waiting for its line.
#[derive(Debug, Clone)]
pub struct Waiting {
    pub id: String,
    pub org_id: String,
    pub conversation_id: String,
    /// The number it goes to; a group's conversation id for a group message.
    pub recipient: String,
    pub group: bool,
    pub available_at: i64,
}

/// Takes the line's row for the rest of the transaction (on SQLite the transaction holds the
/// write lock already), and reads the line as it stands: one pacing step at a time per line,
/// whichever instance runs it, each with the line's latest health and policy.
pub async fn lock_line(conn: &mut AnyConnection, line_id: &str) -> sqlx::Result<Option<Line>> {
    super::lines::get_locked(conn, line_id).await
}

/// The line's sends in each window, and its latest send.
pub async fn usage(
    conn: &mut AnyConnection,
    line_id: &str,
    now: i64,
    month_start: i64,
) -> sqlx::Result<(Usage, Option<LastSend>)> {
    let row = sqlx::query(
        "SELECT COALESCE(SUM(CASE WHEN at > $2 THEN 1 ELSE 0 END), 0) AS minute, \
         COALESCE(SUM(CASE WHEN at > $3 THEN 1 ELSE 0 END), 0) AS hour, \
         COALESCE(SUM(CASE WHEN at > $4 THEN 1 ELSE 0 END), 0) AS day, \
         COALESCE(SUM(CASE WHEN at > $3 AND new_contact = 1 THEN 1 ELSE 0 END), 0) AS new_hour, \
         COALESCE(SUM(CASE WHEN at > $4 AND new_contact = 1 THEN 1 ELSE 0 END), 0) AS new_day, \
         COALESCE(SUM(CASE WHEN at >= $5 AND new_contact = 1 THEN 1 ELSE 0 END), 0) AS new_month \
         FROM line_sends WHERE line_id = $1 AND at > $6",
    )
    .bind(line_id)
    .bind(now - MINUTE_MS)
    .bind(now - HOUR_MS)
    .bind(now - DAY_MS)
    .bind(month_start)
    .bind((now - DAY_MS).min(month_start - 1))
    .fetch_one(&mut *conn)
    .await?;
    let count = |name: &str| -> sqlx::Result<u64> { Ok(row.try_get::<i64, _>(name)?.max(0) as u64) };
    let usage = Usage {
        minute: count("minute")?,
        hour: count("hour")?,
        day: count("day")?,
        new_contacts_hour: count("new_hour")?,
        new_contacts_day: count("new_day")?,
        new_contacts_month: count("new_month")?,
    };
    let last = sqlx::query("SELECT at, message_id FROM line_sends WHERE line_id = $1 ORDER BY at DESC LIMIT 1")
        .bind(line_id)
        .fetch_optional(&mut *conn)
        .await?
        .map(|row| -> sqlx::Result<LastSend> { Ok(LastSend { at: row.try_get(0)?, message_id: row.try_get(1)? }) })
        .transpose()?;
    Ok((usage, last))
}

/// When a full window of `span` since `since` opens again: the moment the send that must leave
/// it for one more to fit (the `count - limit + 1`-th oldest) is `span` old. `new_only`: count
/// only sends to new contacts. `None` when the window is not full after all.
pub async fn opens_at(
    conn: &mut AnyConnection,
    line_id: &str,
    since: i64,
    span: i64,
    full: (u64, u64),
    new_only: bool,
) -> sqlx::Result<Option<i64>> {
    let (count, limit) = full;
    if count < limit {
        return Ok(None);
    }
    let filter = if new_only { " AND new_contact = 1" } else { "" };
    let at: Option<i64> = sqlx::query_scalar(&format!(
        "SELECT at FROM line_sends WHERE line_id = $1 AND at > $2{filter} ORDER BY at LIMIT 1 OFFSET $3"
    ))
    .bind(line_id)
    .bind(since)
    .bind((count - limit) as i64)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(at.map(|at| at + span))
}

/// Sends to `recipient` in the last minute, and the oldest of them.
pub async fn recipient_minute(
    conn: &mut AnyConnection,
    line_id: &str,
    recipient: &str,
    now: i64,
) -> sqlx::Result<(u64, Option<i64>)> {
    let row = sqlx::query(
        "SELECT COUNT(*) AS n, MIN(at) AS oldest FROM line_sends WHERE line_id = $1 AND recipient = $2 AND at > $3",
    )
    .bind(line_id)
    .bind(recipient)
    .bind(now - MINUTE_MS)
    .fetch_one(&mut *conn)
    .await?;
    Ok((row.try_get::<i64, _>("n")?.max(0) as u64, row.try_get("oldest")?))
}

/// Whether the line has messaged `recipient` or heard from it: a send in its ledger, or in the
/// message's conversation an earlier message that arrived or that a line took.
pub async fn is_known(conn: &mut AnyConnection, line_id: &str, waiting: &Waiting) -> sqlx::Result<bool> {
    let sent: Option<i64> =
        sqlx::query_scalar("SELECT 1 FROM line_sends WHERE line_id = $1 AND recipient = $2 LIMIT 1")
            .bind(line_id)
            .bind(&waiting.recipient)
            .fetch_optional(&mut *conn)
            .await?;
    if sent.is_some() {
        return Ok(true);
    }
    let talked: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM messages WHERE org_id = $1 AND conversation_id = $2 AND id <> $3 \
         AND (direction = 'inbound' OR submitted_at IS NOT NULL) LIMIT 1",
    )
    .bind(&waiting.org_id)
    .bind(&waiting.conversation_id)
    .bind(&waiting.id)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(talked.is_some())
}

const WAITING: &str = "SELECT m.id, m.org_id, m.conversation_id, m.available_at, c.kind, \
     (SELECT p.phone FROM conversation_participants p WHERE p.conversation_id = m.conversation_id LIMIT 1) AS phone \
     FROM messages m JOIN conversations c ON c.id = m.conversation_id \
     WHERE m.line_id = $1 AND m.outbox_state = 'paced' AND m.available_at <= $2";

fn waiting_from_row(row: &sqlx::any::AnyRow) -> sqlx::Result<Waiting> {
    let conversation_id: String = row.try_get("conversation_id")?;
    let group = row.try_get::<String, _>("kind")? == "group";
    let phone: Option<String> = row.try_get("phone")?;
    Ok(Waiting {
        id: row.try_get("id")?,
        org_id: row.try_get("org_id")?,
        recipient: if group { conversation_id.clone() } else { phone.unwrap_or_else(|| conversation_id.clone()) },
        conversation_id,
        group,
        available_at: row.try_get("available_at")?,
    })
}

/// Up to `limit` messages due on the line, in the order they go: oldest first within an
/// organisation, and on a line several organisations share, the organisations in turn, the one
/// the line served longest ago first (so one organisation's campaign does not hold back
/// another's one-off code).
pub async fn waiting(conn: &mut AnyConnection, line_id: &str, now: i64, limit: i64) -> sqlx::Result<Vec<Waiting>> {
    let orgs: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT org_id FROM messages WHERE line_id = $1 AND outbox_state = 'paced' AND available_at <= $2",
    )
    .bind(line_id)
    .bind(now)
    .fetch_all(&mut *conn)
    .await?;
    if orgs.len() <= 1 {
        let rows = sqlx::query(&format!("{WAITING} ORDER BY m.available_at, m.id LIMIT $3"))
            .bind(line_id)
            .bind(now)
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?;
        return rows.iter().map(waiting_from_row).collect();
    }
    // Each organisation's own queue, and when the line last served it.
    let mut queues = Vec::new();
    for org in orgs {
        let served: Option<i64> =
            sqlx::query_scalar("SELECT MAX(at) FROM line_sends WHERE line_id = $1 AND org_id = $2 AND at > $3")
                .bind(line_id)
                .bind(&org)
                .bind(now - DAY_MS)
                .fetch_one(&mut *conn)
                .await?;
        let rows = sqlx::query(&format!("{WAITING} AND m.org_id = $3 ORDER BY m.available_at, m.id LIMIT $4"))
            .bind(line_id)
            .bind(now)
            .bind(&org)
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?;
        let queue: Vec<Waiting> = rows.iter().map(waiting_from_row).collect::<sqlx::Result<_>>()?;
        let oldest = queue.first().map_or(i64::MAX, |w| w.available_at);
        queues.push((served.unwrap_or(i64::MIN), oldest, queue.into_iter()));
    }
    queues.sort_by_key(|(served, oldest, _)| (*served, *oldest));
    let mut merged = Vec::new();
    while merged.len() < limit as usize {
        let before = merged.len();
        for (_, _, queue) in queues.iter_mut() {
            if let Some(next) = queue.next() {
                merged.push(next);
            }
        }
        if merged.len() == before {
            break;
        }
    }
    merged.truncate(limit as usize);
    Ok(merged)
}

/// Claims `chosen` for the dispatcher (`claimed_until`) and writes each into the ledger at
/// `until` (a send in flight counts as late as its call may last; [`settle`] sets the time it
/// was taken). Returns the ids actually claimed (still waiting).
pub async fn hand_over(
    conn: &mut AnyConnection,
    line_id: &str,
    chosen: &[(Waiting, bool)],
    until: i64,
) -> sqlx::Result<Vec<String>> {
    let mut claimed = Vec::new();
    for (waiting, new_contact) in chosen {
        let done = sqlx::query(
            "UPDATE messages SET outbox_state = 'claimed', claimed_until = $1, outbox_attempts = outbox_attempts + 1 \
             WHERE id = $2 AND outbox_state = 'paced'",
        )
        .bind(until)
        .bind(&waiting.id)
        .execute(&mut *conn)
        .await?;
        if done.rows_affected() == 0 {
            continue;
        }
        sqlx::query(
            "INSERT INTO line_sends (line_id, message_id, org_id, recipient, new_contact, at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (line_id, message_id) DO NOTHING",
        )
        .bind(line_id)
        .bind(&waiting.id)
        .bind(&waiting.org_id)
        .bind(&waiting.recipient)
        .bind(i64::from(*new_contact))
        .bind(until)
        .execute(&mut *conn)
        .await?;
        claimed.push(waiting.id.clone());
    }
    Ok(claimed)
}

/// After a paced send's call: the ledger's time becomes when the call ended, so the line's gap
/// runs from then.
pub async fn settle(db: &Db, line_id: &str, message_id: &str, at: i64) -> sqlx::Result<()> {
    sqlx::query("UPDATE line_sends SET at = $1 WHERE line_id = $2 AND message_id = $3")
        .bind(at)
        .bind(line_id)
        .bind(message_id)
        .execute(db.writer())
        .await
        .map(drop)
}

/// A claimed message back to waiting for its line, out of the ledger (the line did not send
/// it: its device said it is blocked, or the line was not to be called now).
pub async fn wait_again(db: &Db, line_id: &str, message_id: &str) -> sqlx::Result<()> {
    db.transaction(async |tx| {
        // Its claim is on the row, or (PostgreSQL, a send that called its line itself) apart,
        // and then the row has no time it is due from yet: it is due now.
        sqlx::query(&format!(
            "UPDATE messages SET outbox_state = '{}', claimed_until = NULL, available_at = COALESCE(available_at, $2) \
             WHERE id = $1 AND (outbox_state IS NOT NULL OR EXISTS (SELECT 1 FROM message_claims c WHERE c.message_id = $1))",
            outbox::PACED
        ))
        .bind(message_id)
        .bind(crate::clock::now_ms())
        .execute(&mut *tx)
        .await?;
        outbox::unclaim(tx, message_id).await?;
        sqlx::query("DELETE FROM line_sends WHERE line_id = $1 AND message_id = $2")
            .bind(line_id)
            .bind(message_id)
            .execute(&mut *tx)
            .await
            .map(drop)
    })
    .await
}

/// Fails up to `limit` of the line's waiting messages whose validity ended (`expired`, with
/// their events); returns how many.
pub async fn expire(conn: &mut AnyConnection, line_id: &str, now: i64, limit: i64) -> sqlx::Result<usize> {
    let ids: Vec<String> = sqlx::query_scalar(
        "SELECT id FROM messages WHERE line_id = $1 AND outbox_state = 'paced' AND expires_at <= $2 \
         ORDER BY expires_at LIMIT $3",
    )
    .bind(line_id)
    .bind(now)
    .bind(limit)
    .fetch_all(&mut *conn)
    .await?;
    for id in &ids {
        super::moves::advance(conn, id, MessageStatus::Failed, Some("expired")).await?;
        outbox::complete(conn, id).await?;
    }
    Ok(ids.len())
}

/// How many wait on the line, and the earliest due.
#[derive(Debug, Clone, Copy, Default)]
pub struct Queue {
    pub waiting: u64,
    pub next_due: Option<i64>,
}

/// [`Queue`]: a count of every message waiting on the line, for its view (a step of the line's
/// pacer reads only [`next_times`]).
pub async fn queue(conn: &mut AnyConnection, line_id: &str) -> sqlx::Result<Queue> {
    let row = sqlx::query(
        "SELECT COUNT(*) AS n, MIN(available_at) AS due FROM messages WHERE line_id = $1 AND outbox_state = 'paced'",
    )
    .bind(line_id)
    .fetch_one(&mut *conn)
    .await?;
    Ok(Queue { waiting: row.try_get::<i64, _>("n")?.max(0) as u64, next_due: row.try_get("due")? })
}

/// When the line's earliest waiting message is due, and when the earliest validity ends: `None`
/// for both when nothing waits. Two queries of one `MIN` each, which both engines answer from
/// the first entry of the matching index (`messages_paced`, `messages_paced_expiry`) however many
/// wait; [`queue`]'s count reads every waiting message of the line.
pub async fn next_times(conn: &mut AnyConnection, line_id: &str) -> sqlx::Result<(Option<i64>, Option<i64>)> {
    let due: Option<i64> =
        sqlx::query_scalar("SELECT MIN(available_at) FROM messages WHERE line_id = $1 AND outbox_state = 'paced'")
            .bind(line_id)
            .fetch_one(&mut *conn)
            .await?;
    if due.is_none() {
        return Ok((None, None));
    }
    let expiry: Option<i64> =
        sqlx::query_scalar("SELECT MIN(expires_at) FROM messages WHERE line_id = $1 AND outbox_state = 'paced'")
            .bind(line_id)
            .fetch_one(&mut *conn)
            .await?;
    Ok((due, expiry))
}

/// The lines that have messages waiting (what a pacer starting up looks at first).
pub async fn lines_waiting(db: &Db) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar("SELECT DISTINCT line_id FROM messages WHERE outbox_state = 'paced'")
        .fetch_all(db.reader())
        .await
}

/// Forgets ledger rows older than [`KEEP_MS`]; returns how many.
pub async fn prune(db: &Db, now: i64) -> sqlx::Result<u64> {
    let done = sqlx::query("DELETE FROM line_sends WHERE at < $1").bind(now - KEEP_MS).execute(db.writer()).await?;
    Ok(done.rows_affected())
}
