//! The reconciler: asks the line what became of messages whose outcome is unknown (a timeout,
//! an unclear answer, or a claim that ran out because an instance stopped mid-call), and settles
//! them. A line that never received a message gets it queued again (bridges deduplicate on the
//! message id, so even a late original cannot make it two).

use std::time::Duration;

use tokio::sync::watch;

use super::pause;
use crate::{
    bridge::client::StatusLookup,
    clock,
    db::{self, group_changes::ChangeState, outbox::Job},
    domain::lifecycle::{ConversationKind, MessageStatus},
    send,
    send::Sender,
};

const BATCH: i64 = 50;

pub async fn run(state: Sender, mut shutdown: watch::Receiver<bool>) {
    loop {
        let settled = match step(&state).await {
            Ok(n) => n,
            Err(error) => {
                tracing::error!(error = %error, "reconciler step failed");
                0
            }
        };
        let wait = if settled > 0 { Duration::from_millis(20) } else { Duration::from_millis(250) };
        if !pause(&mut shutdown, wait).await {
            break;
        }
    }
}

/// Asks about one batch of unsettled messages and one of unsettled group changes; returns how
/// many it looked at.
pub async fn step(state: &Sender) -> anyhow::Result<usize> {
    // A failure here must not keep messages from being asked about.
    let changes = settle_changes(state).await.unwrap_or_else(|error| {
        tracing::error!(error = %error, "could not settle group changes");
        0
    });
    let actions = settle_actions(state).await.unwrap_or_else(|error| {
        tracing::error!(error = %error, "could not settle edits and unsends");
        0
    });
    let groups = settle_reported_groups(state).await.unwrap_or_else(|error| {
        tracing::error!(error = %error, "could not settle groups from their opening messages");
        0
    });
    let now = clock::now_ms();
    // Held for a minute while being asked; a failed ask sets its own next time.
    let jobs = db::outbox::claim_unsettled(&state.db, now, now + 60_000, BATCH).await?;
    let count = jobs.len();
    let mut tasks = tokio::task::JoinSet::new();
    for job in jobs {
        let state = state.clone();
        tasks.spawn(async move {
            if let Err(error) = settle(&state, &job).await {
                tracing::error!(message = %job.message_id, error = %error, "could not settle a message");
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    Ok(count + changes + actions + groups)
}

/// What the line's answer about a group change or a message action (`what`: `change`, `edit`,
/// `unsend`) settles it at: `applied` or `failed` settles it; one the line never received
/// failed; anything else leaves it unknown, to be asked again later (when, from its age).
fn settled_by(
    lookup: StatusLookup,
    what: &str,
    id: &str,
    created_at: i64,
    error: &Option<String>,
) -> (ChangeState, Option<String>, Option<i64>) {
    let retry_at = clock::now_ms() + next_ask(clock::now_ms() - created_at);
    match lookup {
        StatusLookup::Known(answer) if answer.status == "applied" => (ChangeState::Applied, None, None),
        StatusLookup::Known(answer) if answer.status == "failed" => {
            (ChangeState::Failed, Some(answer.reason.unwrap_or_else(|| "the line could not apply it".into())), None)
        }
        StatusLookup::NotFound => (ChangeState::Failed, Some(format!("the line never received the {what}")), None),
        StatusLookup::Known(answer) => {
            tracing::warn!(id, what, status = %answer.status, "the line answered a status that settles nothing; will ask again");
            (ChangeState::Unknown, error.clone(), Some(retry_at))
        }
        StatusLookup::Failed(failure) => {
            tracing::debug!(id, what, error = failure, "could not ask the line; will ask again");
            (ChangeState::Unknown, error.clone(), Some(retry_at))
        }
    }
}

/// Asks the line about group changes whose outcome is unknown: `applied` or `failed` settles
/// one; a change the line never received failed; anything else is asked again later.
async fn settle_changes(state: &Sender) -> anyhow::Result<usize> {
    let now = clock::now_ms();
    let stale = send::groups::stale_pending_before(state);
    let changes = db::group_changes::claim_unknown(&state.db, now, now + 60_000, BATCH, stale).await?;
    for change in &changes {
        let Some(line) = state.lines.get(&change.line_id).await? else { continue };
        let lookup = state.lines.client().group_change_status(&line, &change.group_id, &change.id).await;
        let (settled, reason, next) = settled_by(lookup, "change", &change.id, change.created_at, &change.error);
        state
            .db
            .transaction(async |tx| db::group_changes::settle(tx, &change.id, settled, reason.as_deref(), next).await)
            .await?;
    }
    Ok(changes.len())
}

/// Asks the line about edits and unsends whose outcome is unknown, as about group changes: one
/// the line never received failed (the message is as it was; the caller may ask again), and
/// nothing is ever asked of the line twice.
async fn settle_actions(state: &Sender) -> anyhow::Result<usize> {
    let now = clock::now_ms();
    let stale = send::actions::stale_pending_before(state);
    let actions = db::message_actions::claim_unknown(&state.db, now, now + 60_000, BATCH, stale).await?;
    for action in &actions {
        let Some(line) = state.lines.get(&action.line_id).await? else { continue };
        let lookup = state.lines.client().action_status(&line, &send::actions::request(action)).await;
        let (settled, reason, next) =
            settled_by(lookup, action.kind.as_str(), &action.id, action.created_at, &action.error);
        state
            .db
            .transaction(async |tx| db::message_actions::settle(tx, &action.id, settled, reason.as_deref(), next).await)
            .await?;
    }
    Ok(actions.len())
}

/// Groups whose creation is unsettled but whose opening message the line has since reported on:
/// a report that it went out (`submitted` or later) means the group exists, a `failed` one that
/// it does not. Their outbox jobs ended with those reports, so nothing else would ask. Groups
/// whose opening message is still unknown are left to the job that asks the line about them.
async fn settle_reported_groups(state: &Sender) -> anyhow::Result<usize> {
    let stale = send::groups::stale_pending_before(state);
    let groups = db::conversations::reported_unsettled_groups(&state.db, stale, BATCH).await?;
    for group in &groups {
        let outcome = if group.status == "failed" { "failed" } else { "created" };
        // Conditional on the group being unsettled still: an instance doing the same, or the
        // job's own lookup, settles it once.
        state
            .db
            .transaction(async |tx| {
                send::groups::settle(tx, &group.group_id, &group.message_id, outcome, group.error.as_deref()).await
            })
            .await?;
        tracing::info!(group = %group.group_id, outcome, "settled a group from its opening message's reports");
    }
    Ok(groups.len())
}

/// The status a line's lookup answer settles a message at: one the protocol allows
/// (`submitted`, `sent`, `delivered`, `read`, `failed`). Anything else, `queued` and `unknown`
/// included, settles nothing: the line is asked again later.
fn settled_status(answer: &str) -> Option<MessageStatus> {
    answer.parse::<MessageStatus>().ok().filter(|status| {
        matches!(
            status,
            MessageStatus::Submitted
                | MessageStatus::Sent
                | MessageStatus::Delivered
                | MessageStatus::Read
                | MessageStatus::Failed
        )
    })
}

/// How long to wait before asking again: a tenth of the message's age, from 1 s to 5 min.
fn next_ask(age_ms: i64) -> i64 {
    (age_ms / 10).clamp(1_000, 300_000)
}

/// A group whose creation is unsettled is asked about first: its opening message's fate
/// follows the group's.
async fn settle_group(state: &Sender, line: &db::lines::Line, job: &Job) -> anyhow::Result<bool> {
    let group = state
        .db
        .write(async |conn| {
            let Some(message) = db::messages::get_any(&mut *conn, &job.message_id).await? else { return Ok(None) };
            Ok::<_, sqlx::Error>(db::conversations::get_any(conn, &message.conversation_id).await?.filter(|c| {
                c.kind == ConversationKind::Group && matches!(c.group_state.as_deref(), Some("creating" | "unknown"))
            }))
        })
        .await?;
    let Some(group) = group else { return Ok(false) };
    let lookup = state.lines.client().group_status(line, &group.id).await;
    let now = clock::now_ms();
    let settled = state
        .db
        .transaction(async |tx| {
            anyhow::Ok(match lookup {
                StatusLookup::Known(answer) if answer.status == "created" => {
                    send::groups::settle(tx, &group.id, &job.message_id, "created", None).await?;
                    false
                }
                StatusLookup::Known(answer) if answer.status != "failed" => {
                    db::conversations::settle_group(tx, &group.id, "unknown").await?;
                    db::moves::advance(tx, &job.message_id, MessageStatus::Unknown, None).await?;
                    db::outbox::mark_unknown(tx, &job.message_id, now + next_ask(now - group.created_at)).await?;
                    tracing::warn!(group = %group.id, status = %answer.status, "the line answered a group status that settles nothing; will ask again");
                    true
                }
                StatusLookup::Known(answer) => {
                    let reason = answer.reason.unwrap_or_else(|| "the line could not create the group".into());
                    send::groups::settle(tx, &group.id, &job.message_id, "failed", Some(&reason)).await?;
                    db::outbox::complete(tx, &job.message_id).await?;
                    true
                }
                StatusLookup::NotFound => {
                    let reason = "the line never received the group creation";
                    send::groups::settle(tx, &group.id, &job.message_id, "failed", Some(reason)).await?;
                    db::outbox::complete(tx, &job.message_id).await?;
                    true
                }
                StatusLookup::Failed(error) => {
                    db::conversations::settle_group(tx, &group.id, "unknown").await?;
                    db::moves::advance(tx, &job.message_id, MessageStatus::Unknown, None).await?;
                    db::outbox::mark_unknown(tx, &job.message_id, now + next_ask(now - group.created_at)).await?;
                    tracing::debug!(group = %group.id, error, "could not ask the line about a group; will ask again");
                    true
                }
            })
        })
        .await?;
    Ok(settled)
}

async fn settle(state: &Sender, job: &Job) -> anyhow::Result<()> {
    let Some(line) = state.lines.get(&job.line_id).await? else { return Ok(()) };
    if settle_group(state, &line, job).await? {
        return Ok(());
    }
    let lookup = state.lines.client().message_status(&line, &job.message_id).await;
    let now = clock::now_ms();
    let asked = state
        .db
        .transaction(async |tx| {
            // A message that is gone has nothing left to ask about.
            let Some(message) = db::messages::get_any(tx, &job.message_id).await? else {
                db::outbox::complete(tx, &job.message_id).await?;
                return Ok(false);
            };
            match lookup {
                StatusLookup::Known(answer) if settled_status(&answer.status).is_none() => {
                    db::outbox::mark_unknown(tx, &message.id, now + next_ask(now - message.created_at)).await?;
                    match answer.status.as_str() {
                        // A dial-in phone has not taken it yet.
                        "queued" => tracing::debug!(message = %message.id, "the line still holds the message for its device"),
                        _ => tracing::warn!(message = %message.id, status = %answer.status, "the line answered a status that settles nothing; will ask again"),
                    }
                }
                StatusLookup::Known(answer) => {
                    let status = settled_status(&answer.status).unwrap_or(MessageStatus::Unknown);
                    let moved = db::moves::advance_through(tx, &message.id, status, answer.reason.as_deref()).await?;
                    db::outbox::complete(tx, &message.id).await?;
                    if let Some(moved) = &moved {
                        crate::metrics::status_moves(moved.status.as_str(), 1);
                    }
                    tracing::info!(message = %message.id, status = %answer.status, "settled a message with its line");
                }
                StatusLookup::NotFound => {
                    db::moves::requeue(tx, &message.id).await?;
                    db::outbox::retry_at(tx, &message.id, now).await?;
                    tracing::info!(message = %message.id, "the line never received a message; queued it again");
                }
                StatusLookup::Failed(error) => {
                    // Still `queued`: its send's claim ran out (the instance stopped between
                    // writing it and hearing the line's answer), so the line may have it or not.
                    // It says so until the line settles it (a line that cannot be asked, Kannel,
                    // counts its window from here).
                    if message.status == MessageStatus::Queued {
                        db::moves::advance(tx, &message.id, MessageStatus::Unknown, None).await?;
                    }
                    db::outbox::mark_unknown(tx, &message.id, now + next_ask(now - message.created_at)).await?;
                    tracing::debug!(message = %message.id, error, "could not ask the line; will ask again");
                }
            }
            anyhow::Ok(true)
        })
        .await?;
    if asked {
        state.dispatch.wake();
    }
    Ok(())
}
