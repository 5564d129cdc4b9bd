//! A line's status reports: each callback id recorded once, then the moves it makes, one
//! status at a time, each with its event. Apart from [`super::messages`], which stores and reads
//! messages.

use std::collections::HashMap;

use sqlx::{AnyConnection, Row};

use super::{
    Batch, Db,
    messages::{COLUMNS, Message, from_row, get_many, stage_advance},
};
use crate::{
    clock,
    domain::lifecycle::{Direction, MessageStatus},
};

/// A line's report that one of its outbound messages moved.
#[derive(Debug, Clone)]
pub struct StatusReport {
    /// The callback's id, recorded so that a repeat changes nothing.
    pub event_id: String,
    pub message_id: String,
    pub status: MessageStatus,
    pub reason: Option<String>,
}

/// Applies a line's status reports in one transaction: records each callback id, reads the
/// messages, and moves each forward one status at a time (an event per status passed). Every
/// move is conditional on the status the message stands at when it is written (see
/// [`stage_advance`]), so a move made meanwhile by the dispatcher or another callback is never
/// undone or repeated. Returns, per report, whether it was new.
pub async fn apply_reports(db: &Db, line_id: &str, reports: Vec<StatusReport>) -> sqlx::Result<Vec<bool>> {
    let backend = db.backend();
    if let Some(lane) = db.group().and_then(|g| g.native_lane()) {
        let line = line_id.to_string();
        return lane
            .run(move |conn| {
                let now = clock::now_ms();
                let mut fresh = Vec::with_capacity(reports.len());
                for report in &reports {
                    let args = [(&line).into(), (&report.event_id).into(), now.into()];
                    fresh.push(super::native::bound(conn, RECORD_CALLBACK, &args)?.raw_execute()? == 1);
                }
                let mut messages = HashMap::new();
                let sql = format!("SELECT {COLUMNS} FROM messages WHERE id = $1");
                for report in &reports {
                    if messages.contains_key(&report.message_id) {
                        continue;
                    }
                    let found = super::native::rows(conn, &sql, &[(&report.message_id).into()], |row| from_row(row))?;
                    messages.extend(found.into_iter().map(|m| (m.id.clone(), m)));
                }
                for moves in plan_reports(backend, &line, &reports, &fresh, &mut messages) {
                    super::native::run_batch(conn, &moves)?;
                }
                Ok(fresh)
            })
            .await;
    }
    if let Some(group) = db.group().filter(|_| backend == super::Backend::Postgres) {
        return group.apply_reports(line_id.to_string(), reports).await;
    }
    let mut tx = db.writer().begin().await?;
    let (mut fresh, moves) = record_and_plan(&mut tx, backend, &[(line_id, &reports)]).await?;
    super::merge::execute(&mut tx, &moves.iter().collect::<Vec<_>>()).await?;
    tx.commit().await?;
    Ok(fresh.pop().unwrap_or_default())
}

/// For several lines' reports at once, inside a transaction: records every callback id in one
/// statement, reads every message in another, and plans the moves. Returns, per line's reports,
/// which were new, and the moves (a batch per message).
pub(super) async fn record_and_plan(
    conn: &mut AnyConnection,
    backend: super::Backend,
    lines: &[(&str, &[StatusReport])],
) -> sqlx::Result<(Vec<Vec<bool>>, Vec<Batch>)> {
    let now = clock::now_ms();
    let all = || lines.iter().flat_map(|(line, reports)| reports.iter().map(move |r| (*line, r)));
    let count = all().count();
    if count == 0 {
        return Ok((lines.iter().map(|_| Vec::new()).collect(), Vec::new()));
    }
    // One statement records every callback id and returns those not seen before.
    let values: Vec<String> = (0..count).map(|i| format!("(${}, ${}, ${})", 3 * i + 1, 3 * i + 2, 3 * i + 3)).collect();
    let sql = format!(
        "INSERT INTO bridge_events (line_id, event_id, received_at) VALUES {} \
         ON CONFLICT (line_id, event_id) DO NOTHING RETURNING line_id, event_id",
        values.join(", ")
    );
    let mut query = sqlx::query(&sql);
    for (line, report) in all() {
        query = query.bind(line).bind(&report.event_id).bind(now);
    }
    let recorded: std::collections::HashSet<(String, String)> = query
        .persistent(false)
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
        .collect::<sqlx::Result<_>>()?;
    let ids: Vec<&str> = all().map(|(_, r)| r.message_id.as_str()).collect();
    let mut messages: HashMap<String, Message> =
        get_many(&mut *conn, &ids).await?.into_iter().map(|m| (m.id.clone(), m)).collect();
    // A callback id repeated within one request counts as new once.
    let mut seen = std::collections::HashSet::new();
    let mut fresh = Vec::with_capacity(lines.len());
    let mut moves = Vec::new();
    for (line, reports) in lines {
        let new: Vec<bool> = reports
            .iter()
            .map(|r| {
                recorded.contains(&(line.to_string(), r.event_id.clone())) && seen.insert((*line, r.event_id.as_str()))
            })
            .collect();
        let planned = plan_reports(backend, line, reports, &new, &mut messages);
        moves.extend(planned);
        fresh.push(new);
    }
    Ok((fresh, moves))
}

/// Records a bridge callback's id; changes no row if the line sent it before.
const RECORD_CALLBACK: &str = "INSERT INTO bridge_events (line_id, event_id, received_at) VALUES ($1, $2, $3) \
     ON CONFLICT (line_id, event_id) DO NOTHING";

/// The moves that new reports make, from the messages as read: a batch per message, its
/// reports' moves in the order they came.
fn plan_reports(
    backend: super::Backend,
    line_id: &str,
    reports: &[StatusReport],
    fresh: &[bool],
    messages: &mut HashMap<String, Message>,
) -> Vec<Batch> {
    let mut batches: Vec<Batch> = Vec::new();
    let mut of_message: HashMap<&str, usize> = HashMap::new();
    for (report, _) in reports.iter().zip(fresh).filter(|(_, fresh)| **fresh) {
        let Some(current) =
            messages.get(&report.message_id).filter(|m| m.line_id == line_id && m.direction == Direction::Outbound)
        else {
            tracing::warn!(line = line_id, message = %report.message_id, "status for a message this line did not send; ignored");
            continue;
        };
        let at = *of_message.entry(report.message_id.as_str()).or_insert_with(|| {
            // The line has told: nothing left to send or ask (once per message, however many
            // of its reports came together).
            let mut batch = Batch::new();
            super::outbox::stage_complete(&mut batch, &report.message_id);
            batches.push(batch);
            batches.len() - 1
        });
        let batch = &mut batches[at];
        let mut current = current.clone();
        for step in current.status.steps_to(report.status) {
            let reason = if step == MessageStatus::Failed { report.reason.as_deref() } else { None };
            if let Some(after) = stage_advance(batch, backend, &current, step, reason) {
                current = after;
            }
        }
        messages.insert(report.message_id.clone(), current);
    }
    batches
}

/// Records a bridge callback's id inside a transaction; `false` if the line sent it before.
pub async fn record_callback(conn: &mut AnyConnection, line_id: &str, event_id: &str) -> sqlx::Result<bool> {
    let done = sqlx::query(RECORD_CALLBACK).bind(line_id).bind(event_id).bind(clock::now_ms()).execute(conn).await?;
    Ok(done.rows_affected() == 1)
}
