//! A line's status reports: the moves they make, one status at a time, each with its event.
//! Apart from [`super::messages`], which stores and reads messages.
//!
//! A status report needs no record of its callback id: every move is conditional on where the
//! message stands when it is written, and a message only moves forward, so a report the line
//! repeats finds its message past it and writes nothing.

use std::collections::{HashMap, HashSet};

use sqlx::AnyConnection;

use super::{
    Batch, Db,
    messages::{COLUMNS, Message, from_row, get_many},
    moves::stage_through,
};
use crate::{
    clock,
    domain::lifecycle::{Direction, MessageStatus},
};

/// A line's report that one of its outbound messages moved.
#[derive(Debug, Clone)]
pub struct StatusReport {
    pub message_id: String,
    pub status: MessageStatus,
    pub reason: Option<String>,
}

/// Applies a line's status reports in one transaction: reads the messages, and moves each
/// forward through every status its reports pass, as one write with an event per status
/// passed. Every move is conditional on the status the message stands at when it is written
/// (see [`stage_through`]), so a move made
/// meanwhile by the dispatcher or another callback is never undone or repeated. Returns, per
/// report, whether it moved its message (`false`: a repeat, or a report the message is past).
pub async fn apply_reports(db: &Db, line_id: &str, reports: Vec<StatusReport>) -> sqlx::Result<Vec<bool>> {
    let backend = db.backend();
    if let Some(lane) = db.group().and_then(|g| g.native_lane()) {
        let line = line_id.to_string();
        return lane
            .run(move |conn| {
                let mut messages = HashMap::new();
                let sql = format!("SELECT {COLUMNS} FROM messages WHERE id = $1");
                for report in &reports {
                    if messages.contains_key(&report.message_id) {
                        continue;
                    }
                    let found =
                        super::engine::native::rows(conn, &sql, &[(&report.message_id).into()], |row| from_row(row))?;
                    messages.extend(found.into_iter().map(|m| (m.id.clone(), m)));
                }
                // Read in the transaction the moves run in, as the messages are.
                let mut endpoints = HashSet::new();
                for org in messages.values().map(|m| m.org_id.as_str()).collect::<HashSet<_>>() {
                    if super::engine::native::finds(conn, super::events::WANTS_EVENTS, &org.into())? {
                        endpoints.insert(org.to_string());
                    }
                }
                let (moves, mut moved) = plan_reports(backend, &[(&line, &reports)], &messages, Some(&endpoints));
                for batch in moves {
                    super::engine::native::run_batch(conn, &batch)?;
                }
                Ok(moved.pop().unwrap_or_default())
            })
            .await;
    }
    if let Some(group) = db.group().filter(|_| backend == super::Backend::Postgres) {
        return group.plan_in_commit(LineReports { line_id: line_id.to_string(), reports }).await;
    }
    db.transaction(async |tx| apply_in(tx, line_id, &reports).await).await
}

/// A line's status reports, planned inside a shared commit on PostgreSQL: the messages are read
/// locked after the commit's batches, and each moves from where it stands.
pub(super) struct LineReports {
    line_id: String,
    reports: Vec<StatusReport>,
}

impl super::engine::group_commit::InCommit for LineReports {
    /// Per report, whether it moved its message.
    type Answer = Vec<bool>;

    async fn plan(conn: &mut AnyConnection, units: Vec<&Self>) -> sqlx::Result<(Vec<Vec<bool>>, Vec<Batch>)> {
        let lines: Vec<(&str, &[StatusReport])> =
            units.iter().map(|unit| (unit.line_id.as_str(), unit.reports.as_slice())).collect();
        plan(conn, super::Backend::Postgres, &lines, true).await
    }
}

/// Applies a line's reports inside a transaction already open (a callback whose other events
/// share it); per report, whether it moved its message.
pub async fn apply_in(conn: &mut AnyConnection, line_id: &str, reports: &[StatusReport]) -> sqlx::Result<Vec<bool>> {
    let backend = super::Backend::of(conn);
    let (mut moved, moves) = plan(conn, backend, &[(line_id, reports)], false).await?;
    super::engine::merge::execute(conn, &moves.iter().collect::<Vec<_>>(), super::engine::merge::Lookup::Estimated)
        .await?;
    Ok(moved.pop().unwrap_or_default())
}

/// For several lines' reports at once, inside a transaction: reads every message in one
/// statement and plans the moves. Returns, per line's reports, which move their message, and
/// the moves (a batch per message).
///
/// `lock`: the messages are read locked (`FOR UPDATE`, on PostgreSQL) after the transaction's
/// other writes, so no other transaction can move them before it commits; the moves then start
/// from where the messages stand, each one update (see [`stage_through`]), and with the
/// organisations' webhook endpoints read here too, no event is built for one without any.
pub(super) async fn plan(
    conn: &mut AnyConnection,
    backend: super::Backend,
    lines: &[(&str, &[StatusReport])],
    lock: bool,
) -> sqlx::Result<(Vec<Vec<bool>>, Vec<Batch>)> {
    let ids: Vec<&str> = lines.iter().flat_map(|(_, reports)| reports.iter().map(|r| r.message_id.as_str())).collect();
    if ids.is_empty() {
        return Ok((lines.iter().map(|_| Vec::new()).collect(), Vec::new()));
    }
    let read = match lock {
        true => lock_many(&mut *conn, &ids).await?,
        false => get_many(&mut *conn, &ids).await?,
    };
    let messages: HashMap<String, Message> = read.into_iter().map(|m| (m.id.clone(), m)).collect();
    let endpoints = match lock {
        true => Some(with_endpoints(&mut *conn, messages.values().map(|m| m.org_id.as_str())).await?),
        false => None,
    };
    let (moves, moved) = plan_reports(backend, lines, &messages, endpoints.as_ref());
    Ok((moved, moves))
}

/// The messages `ids`, locked until the transaction ends, in id order (the order every merged
/// move locks them in). On a PostgreSQL commit lane.
async fn lock_many(conn: &mut AnyConnection, ids: &[&str]) -> sqlx::Result<Vec<Message>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM messages WHERE id IN ({}) ORDER BY id FOR UPDATE",
        super::engine::batch::lane_texts_of(1)
    );
    let rows = sqlx::query(&sql).bind(serde_json::to_string(ids).expect("ids are strings")).fetch_all(conn).await?;
    rows.iter().map(from_row).collect()
}

/// Which of `orgs` want events: a webhook endpoint, enabled or not, or the event feed on (see
/// [`super::events::only_if`]). On a PostgreSQL commit lane.
async fn with_endpoints<'a>(
    conn: &mut AnyConnection,
    orgs: impl Iterator<Item = &'a str>,
) -> sqlx::Result<HashSet<String>> {
    use sqlx::Row;
    let orgs: Vec<&str> = orgs.collect::<HashSet<_>>().into_iter().collect();
    let orgs_in = super::engine::batch::lane_texts_of(1);
    let sql = format!(
        "SELECT DISTINCT org_id FROM webhooks WHERE org_id IN ({orgs_in}) \
         UNION SELECT id FROM orgs WHERE event_feed = 1 AND id IN ({orgs_in})"
    );
    let rows = sqlx::query(&sql).bind(serde_json::to_string(&orgs).expect("ids are strings")).fetch_all(conn).await?;
    rows.iter().map(|row| row.try_get(0)).collect()
}

/// Records a bridge callback's id; changes no row if the line sent it before.
const RECORD_CALLBACK: &str = "INSERT INTO bridge_events (line_id, event_id, received_at) VALUES ($1, $2, $3) \
     ON CONFLICT (line_id, event_id) DO NOTHING";

/// Up to `$2` callback ids recorded before `$1`, found through `bridge_events_by_age`.
pub const CALLBACKS_BEFORE: &str = "SELECT line_id, event_id FROM bridge_events WHERE received_at < $1 LIMIT $2";

/// Deletes up to `limit` callback ids recorded before `before`; returns how many. In batches, so
/// that on SQLite no pass holds the write lock for long.
pub async fn delete_callbacks_before(db: &super::Db, before: i64, limit: i64) -> sqlx::Result<u64> {
    Ok(sqlx::query(&format!("DELETE FROM bridge_events WHERE (line_id, event_id) IN ({CALLBACKS_BEFORE})"))
        .bind(before)
        .bind(limit)
        .execute(db.writer())
        .await?
        .rows_affected())
}

/// The moves that several lines' reports make, from the messages as read: a batch per message,
/// ending its outbox job and moving it once through every status its reports pass, in the order
/// they came (a line that reports `sent` and `delivered` in one callback, or in two callbacks
/// that share a commit, writes one row version, not two); and per line, per report, whether it
/// moves its message. `endpoints`, when the messages were read in the transaction the moves run
/// in: the organisations with a webhook endpoint, read there too (see [`stage_through`]).
///
/// One batch per message, never two: the batches of a commit are independent sequences, which a
/// shared commit may run in any order (see `engine::merge`). Two batches for one message, the
/// second planned from where the first leaves it, could run second first: `delivered` would then
/// move the message from where it was read, and the `sent` planned before it would find the
/// message past it, leaving `sent_at` empty.
fn plan_reports(
    backend: super::Backend,
    lines: &[(&str, &[StatusReport])],
    messages: &HashMap<String, Message>,
    endpoints: Option<&HashSet<String>>,
) -> (Vec<Batch>, Vec<Vec<bool>>) {
    // Per message, in the order first reported: as read, and the steps its reports make.
    let mut planned: Vec<(&Message, Vec<MessageStatus>, Option<&str>)> = Vec::new();
    let mut of_message: HashMap<&str, usize> = HashMap::new();
    let mut moved = Vec::with_capacity(lines.len());
    for &(line_id, reports) in lines {
        let mut of_line = Vec::with_capacity(reports.len());
        for report in reports {
            let at = of_message.get(report.message_id.as_str()).copied();
            // Where the message's earlier reports in this commit leave it.
            let current = at.and_then(|at| planned[at].1.last().copied());
            let Some(read) =
                messages.get(&report.message_id).filter(|m| m.line_id == line_id && m.direction == Direction::Outbound)
            else {
                tracing::warn!(line = line_id, message = %report.message_id, "status for a message this line did not send; ignored");
                of_line.push(false);
                continue;
            };
            let steps = current.unwrap_or(read.status).steps_to(report.status);
            // A repeat, or a report its message is past: nothing to write.
            of_line.push(!steps.is_empty());
            if steps.is_empty() {
                continue;
            }
            let reason = steps.contains(&MessageStatus::Failed).then_some(report.reason.as_deref()).flatten();
            match at {
                Some(at) => {
                    planned[at].1.extend(steps);
                    planned[at].2 = reason.or(planned[at].2);
                }
                None => {
                    of_message.insert(report.message_id.as_str(), planned.len());
                    planned.push((read, steps, reason));
                }
            }
        }
        moved.push(of_line);
    }
    let batches = planned
        .into_iter()
        .map(|(read, steps, reason)| {
            let mut batch = Batch::new();
            let events = endpoints.map(|orgs| orgs.contains(&read.org_id));
            // The line has told: nothing left to send or ask. Where the message stands as read,
            // its move ends the job in the same update.
            if events.is_none() {
                super::outbox::stage_complete(&mut batch, backend, &read.id);
            }
            stage_through(&mut batch, backend, read, &steps, reason, events);
            batch
        })
        .collect();
    (batches, moved)
}

/// Records a bridge callback's id inside a transaction; `false` if the line sent it before.
pub async fn record_callback(conn: &mut AnyConnection, line_id: &str, event_id: &str) -> sqlx::Result<bool> {
    let done = sqlx::query(RECORD_CALLBACK).bind(line_id).bind(event_id).bind(clock::now_ms()).execute(conn).await?;
    Ok(done.rows_affected() == 1)
}
