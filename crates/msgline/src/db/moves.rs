//! Status moves. A message only moves forward; every status it passes writes its
//! `messaging.message.*` event in the same unit of work as the move. Apart from
//! [`super::messages`], which stores and reads messages.

use sqlx::AnyConnection;

use super::{
    Batch, events,
    messages::{COLUMNS, Message, from_row, get_any},
};
use crate::{clock, domain::lifecycle::MessageStatus};

/// The update of a move through `steps` to the last of them (`$1` status, `$2` reason, `$3`
/// delivery_unknown, `$4` now, `$5` id), conditional on the message standing where it may come
/// to the first step from, stamping `<status>_at` for each step, and ending its outbox job too
/// when `settle`. `None` when there is no step or nothing may move to the first.
fn move_sql(steps: &[MessageStatus], settle: bool) -> Option<String> {
    // The keys are runs of forward steps through the statuses: a few dozen at most.
    static BUILT: super::engine::batch::Kept<(Vec<MessageStatus>, bool), Option<String>> =
        std::sync::LazyLock::new(Default::default);
    super::engine::batch::kept(&BUILT, (steps.to_vec(), settle), || build_move_sql(steps, settle))
}

fn build_move_sql(steps: &[MessageStatus], settle: bool) -> Option<String> {
    let from = steps.first()?.sources();
    if from.is_empty() {
        return None;
    }
    let stamps: String = steps
        .iter()
        .filter_map(|step| match step {
            MessageStatus::Submitted => Some(", submitted_at = $4"),
            MessageStatus::Sent => Some(", sent_at = $4"),
            MessageStatus::Delivered => Some(", delivered_at = $4"),
            MessageStatus::Read => Some(", read_at = $4"),
            _ => None,
        })
        .collect();
    let settled = if settle { format!(", {}", super::outbox::SETTLED) } else { String::new() };
    let allowed = from.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ");
    Some(format!(
        "UPDATE messages SET status = $1, error = COALESCE($2, error), delivery_unknown = $3, updated_at = $4{stamps}\
         {settled} WHERE id = $5 AND status IN ({allowed})"
    ))
}

/// Moves a message to `status` if that is a move forward, recording `reason` for a failure,
/// and writes the event. Returns the message as it now is, or `None` when nothing moved.
pub async fn advance(
    conn: &mut AnyConnection,
    id: &str,
    status: MessageStatus,
    reason: Option<&str>,
) -> sqlx::Result<Option<Message>> {
    let mut batch = Batch::new();
    let moved = advance_staged(conn, &mut batch, id, status, reason).await?;
    batch.execute(conn).await?;
    Ok(moved)
}

/// Stages a move from the status `before` was read in, for a shared commit: the update applies
/// only if the message still stands where a move to `status` is allowed, and the event is
/// written only if the update did — on SQLite by `changes()` (the rows the previous statement
/// changed), on PostgreSQL by one statement whose update feeds the insert. Returns the message
/// as it will be if the move applies.
pub fn stage_advance(
    batch: &mut Batch,
    backend: super::Backend,
    before: &Message,
    status: MessageStatus,
    reason: Option<&str>,
) -> Option<Message> {
    stage_move(batch, backend, before, &[status], reason, false, None)
}

/// [`stage_advance`] that also ends the message's outbox job in the same write: the move that
/// records the line's answer to a send is the last the job needs. One row version instead of
/// two (on PostgreSQL the job's end changes an indexed column, so it is never a HOT update).
/// The caller still stages [`super::outbox::stage_complete`] for the case where the move does
/// not apply; it writes nothing when the job has ended.
pub fn stage_advance_settling(
    batch: &mut Batch,
    backend: super::Backend,
    before: &Message,
    status: MessageStatus,
    reason: Option<&str>,
) -> Option<Message> {
    stage_move(batch, backend, before, &[status], reason, true, None)
}

/// Stages the moves through `steps` (each a move forward from the one before, starting from
/// where `before` stands). On PostgreSQL as one conditional update, one row version, with an
/// event for each step, written only if the update applies: a line that reports `sent` and
/// `delivered` together moves its message once (a second update of the row in one transaction
/// seldom finds room on its page, so it is not HOT and writes every index again). `reason` is
/// recorded for a move to `failed`, which can only be the last step. Returns the message as it
/// will be if the moves apply.
///
/// On PostgreSQL the message may have moved on since it was read: the dispatcher's record of
/// the line's answer may run just before, in the same commit, or a receipt check in another.
/// The one update then finds it past its first step and writes nothing, so the moves are also
/// staged one status at a time after it, each conditional on where the message then stands:
/// they make whatever the update did not, and where it did, they find the message past them and
/// write nothing. No status is skipped, none is written twice.
///
/// `endpoints` is `Some` when `before` was read in the transaction the moves run in, and nothing
/// else can move it before that commits (SQLite's committer; PostgreSQL's lane that moves
/// messages, which reads them locked), with whether the message's organisation has a webhook
/// endpoint, read there too: the message then stands where `before` says, so one update moves
/// it through every step and ends its outbox job, and with no endpoint no event is built or
/// written (see [`super::events::only_if`]).
pub fn stage_through(
    batch: &mut Batch,
    backend: super::Backend,
    before: &Message,
    steps: &[MessageStatus],
    reason: Option<&str>,
    endpoints: Option<bool>,
) -> Option<Message> {
    if endpoints.is_some() {
        return stage_move(batch, backend, before, steps, reason, true, endpoints);
    }
    let mut together = None;
    if backend == super::Backend::Postgres {
        together = Some(stage_move(batch, backend, before, steps, reason, false, None)?);
        if steps.len() == 1 {
            return together;
        }
    }
    // The single moves: after the one update on PostgreSQL; alone on SQLite, which rewrites a
    // row in place whatever an update changes, so one update per status costs no more there.
    let mut current = before.clone();
    for &step in steps {
        let reason = reason.filter(|_| step == MessageStatus::Failed);
        if let Some(next) = stage_move(batch, backend, &current, &[step], reason, false, None) {
            current = next;
        }
    }
    together.or(Some(current).filter(|c| c.status != before.status))
}

/// Stages one update moving `before` through `steps` (ending its outbox job too when `settle`),
/// and an event for each step, written only where the organisation has an endpoint: `endpoint`
/// says whether it has one where that was read in the commit, else the commit asks (the
/// statement's guard). Returns the message as it will be if the update applies.
fn stage_move(
    batch: &mut Batch,
    backend: super::Backend,
    before: &Message,
    steps: &[MessageStatus],
    reason: Option<&str>,
    settle: bool,
    endpoint: Option<bool>,
) -> Option<Message> {
    let events = endpoint != Some(false);
    let update = move_sql(steps, settle)?;
    let status = *steps.last()?;
    let reason = reason.filter(|_| status == MessageStatus::Failed || steps.len() == 1);
    let now = clock::now_ms();
    let unknown = status == MessageStatus::Unknown;
    let update_args: Vec<super::Arg> =
        vec![status.as_str().into(), reason.into(), (unknown as i64).into(), now.into(), (&before.id).into()];
    // The message after each step: what that step's event carries.
    let mut after = before.clone();
    let mut events_rows = Vec::with_capacity(steps.len());
    for &step in steps {
        after.status = step;
        if step == status && reason.is_some() {
            after.error = reason.map(str::to_string);
        }
        after.delivery_unknown = step == MessageStatus::Unknown;
        after.updated_at = now;
        match step {
            MessageStatus::Submitted => after.submitted_at = Some(now),
            MessageStatus::Sent => after.sent_at = Some(now),
            MessageStatus::Delivered => after.delivered_at = Some(now),
            MessageStatus::Read => after.read_at = Some(now),
            _ => {}
        }
        if !events {
            continue;
        }
        events_rows.push(vec![
            crate::ids::new_id("evt").into(),
            (&after.org_id).into(),
            after.status.event_type().into(),
            (&after.id).into(),
            after.event_data().into(),
            now.into(),
        ]);
    }
    if events {
        let plain_args = update_args.len();
        batch.push_rows_if_updated(
            backend,
            &update,
            update_args,
            events::INSERT,
            events_rows,
            events::values,
            Some(events::only_if),
        );
        // Where the commit has not read it already, it asks whether there is an endpoint. On
        // SQLite the events are a statement of their own; on PostgreSQL one with the update,
        // which a commit that finds no endpoint runs as the update alone: the events' rows, the
        // widest of the statement, are then neither read nor carried through the update.
        let org = || (&before.org_id).into();
        match (endpoint, backend) {
            (Some(_), _) => {}
            (None, super::Backend::Sqlite) => {
                batch.guard_last(events::WANTS_EVENTS, org());
            }
            (None, super::Backend::Postgres) => {
                batch.guard_last_or(events::WANTS_EVENTS, org(), update, plain_args);
            }
        }
    } else {
        batch.push(update, update_args);
    }
    batch.mark_moves_messages();
    Some(after)
}

/// Moves the message at once (one conditional update) and stages its event into `batch`.
async fn advance_staged(
    conn: &mut AnyConnection,
    batch: &mut Batch,
    id: &str,
    status: MessageStatus,
    reason: Option<&str>,
) -> sqlx::Result<Option<Message>> {
    let Some(update) = move_sql(&[status], false) else { return Ok(None) };
    let row = sqlx::query(&format!("{update} RETURNING {COLUMNS}"))
        .bind(status.as_str())
        .bind(reason)
        .bind((status == MessageStatus::Unknown) as i64)
        .bind(clock::now_ms())
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
    let Some(message) = row.as_ref().map(from_row).transpose()? else { return Ok(None) };
    events::stage_message_event(batch, &message.org_id, &message.id, message.status.as_str(), message.event_data());
    Ok(Some(message))
}

/// Puts an `unknown` message back to `queued` once the line has said it never received it.
pub async fn requeue(conn: &mut AnyConnection, id: &str) -> sqlx::Result<()> {
    sqlx::query("UPDATE messages SET status = 'queued', delivery_unknown = 0, updated_at = $1 WHERE id = $2 AND status = 'unknown'")
        .bind(clock::now_ms())
        .bind(id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Moves an outbound message forward to `target` one status at a time, so that each status it
/// passes writes its own event (a line that reports `delivered` first still yields `sent`).
/// Returns the message as it ends up, if anything moved.
pub async fn advance_through(
    conn: &mut AnyConnection,
    id: &str,
    target: MessageStatus,
    reason: Option<&str>,
) -> sqlx::Result<Option<Message>> {
    let Some(current) = get_any(conn, id).await? else { return Ok(None) };
    let mut batch = Batch::new();
    let moved = advance_through_staged(conn, &mut batch, &current, target, reason).await?;
    batch.execute(conn).await?;
    Ok(moved)
}

/// [`advance_through`] from a message already read, with the events staged into `batch`.
async fn advance_through_staged(
    conn: &mut AnyConnection,
    batch: &mut Batch,
    current: &Message,
    target: MessageStatus,
    reason: Option<&str>,
) -> sqlx::Result<Option<Message>> {
    let mut last = None;
    for step in current.status.steps_to(target) {
        let reason = if step == MessageStatus::Failed { reason } else { None };
        if let Some(moved) = advance_staged(conn, batch, &current.id, step, reason).await? {
            last = Some(moved);
        }
    }
    Ok(last)
}

/// What a cancel of a scheduled message came to.
#[derive(Debug)]
pub enum Canceled {
    /// It was scheduled and not yet claimed: now `canceled`, with its event.
    Now(Message),
    /// Too late: the dispatcher had it already, or it was never scheduled; as it stands.
    TooLate(Message),
    NotFound,
}

/// Cancels a scheduled message before the dispatcher claims it. One conditional update decides
/// a race with the dispatcher's claim: the claim takes only a pending job, the cancel only a
/// message still `scheduled` with its job pending; whichever commits first wins, and the other
/// changes nothing.
pub async fn cancel_scheduled(conn: &mut AnyConnection, org_id: &str, id: &str) -> sqlx::Result<Canceled> {
    let Some(current) = get_any(&mut *conn, id).await?.filter(|m| m.org_id == org_id) else {
        return Ok(Canceled::NotFound);
    };
    let now = clock::now_ms();
    let done = sqlx::query(&format!(
        "UPDATE messages SET status = 'canceled', updated_at = $1, {} WHERE id = $2 AND org_id = $3 \
         AND status = 'scheduled' AND outbox_state = 'pending'",
        super::outbox::SETTLED
    ))
    .bind(now)
    .bind(id)
    .bind(org_id)
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() == 0 {
        let now_standing = get_any(&mut *conn, id).await?.unwrap_or(current);
        return Ok(Canceled::TooLate(now_standing));
    }
    let canceled = Message { status: MessageStatus::Canceled, updated_at: now, ..current };
    let data = canceled.event_data();
    events::insert(conn, org_id, MessageStatus::Canceled.event_type(), Some(id), data).await?;
    Ok(Canceled::Now(canceled))
}
