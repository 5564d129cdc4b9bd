//! The dispatcher: claims outbox jobs (the claim is committed first), calls the line's bridge
//! within the bridge timeout, records the attempt and moves the message. A send that finds a
//! free slot skips the claim: its message is written already claimed, and its request hands it
//! over through the dispatch seam once that is committed ([`take_handovers`]).
//!
//! A send is retried only where the bridge cannot have received it (the connection was refused,
//! or it answered 503). After a timeout or an unclear answer the message is `unknown` and the
//! reconciler asks the line; it is never sent again blindly.

use std::{sync::Arc, time::Duration};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tracing::Instrument;

use crate::{
    bridge::{ReactionRequest, SendRequest, client::SendOutcome},
    clock,
    db::{self, lines::BridgeKind, messages::ForDispatch, outbox::Job},
    dispatch::{Handover, lease_ms},
    domain::{
        lifecycle::{ConversationKind, MessageKind, MessageStatus},
        payload::Payload,
    },
    lines::signals,
    send::Sender,
};

const BATCH: usize = 100;

/// Installs, in the send path's dispatch seam, the delivery of what a send hands over: the call
/// runs at once in the slot the request took. The seam keeps only a weak handle of the send path
/// (it is part of it).
pub fn take_handovers(sender: &Sender) {
    let weak = sender.downgrade();
    sender.dispatch.on_handover(move |handover: Handover| {
        let Some(sender) = Sender::upgrade(&weak) else { return };
        let message = handover.message;
        let job = Job { message_id: message.0.id.clone(), line_id: message.0.line_id.clone(), attempts: 1 };
        spawn_delivery(&sender, handover.slot, job, Some(message), Checked::Now);
    });
}

/// Whether a message's recipients must be checked for opt-outs before it is handed to the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checked {
    /// Handed over by its own request, which checked them a moment before.
    Now,
    /// Claimed from the outbox: it waited (for a slot, a retry, its time), and a STOP may have
    /// arrived meanwhile.
    Before,
    /// Handed over by its line's pacer: it waited for its line's budget or health (a STOP may
    /// have arrived meanwhile, and its time may be long past: the line held it, it was not missed).
    Paced,
}

impl Checked {
    /// How the message came to its call, as its trace says.
    fn as_str(self) -> &'static str {
        match self {
            Checked::Now => "handed_over",
            Checked::Before => "outbox",
            Checked::Paced => "paced",
        }
    }
}

/// Delivers a claimed job in the background, in the slot it holds until the outcome is recorded.
fn spawn_delivery(
    state: &Sender,
    slot: OwnedSemaphorePermit,
    job: Job,
    message: Option<ForDispatch>,
    checked: Checked,
) {
    let state = state.clone();
    let span = tracing::info_span!(target: crate::trace::TARGET, parent: None, "dispatch.claim",
        msgline.message_id = %job.message_id, msgline.line_id = %job.line_id,
        msgline.claim = checked.as_str(), msgline.attempt = job.attempts);
    state.traces.under_send(&span, &job.message_id);
    tokio::spawn(
        async move {
            if let Err(error) = deliver(&state, &job, message, checked).await {
                // The claim runs out and the reconciler asks the line: nothing is lost.
                tracing::error!(message = %job.message_id, error = %error, "could not record a delivery");
            }
            drop(slot);
        }
        .instrument(span),
    );
}

pub async fn run(state: Sender, mut shutdown: watch::Receiver<bool>) {
    let permits = state.dispatch.permits().clone();
    loop {
        if *shutdown.borrow() {
            break;
        }
        let claimed = match step(&state, &permits).await {
            Ok(n) => n,
            Err(error) => {
                tracing::error!(error = %error, "dispatcher could not claim jobs");
                0
            }
        };
        if claimed == 0 {
            tokio::select! {
                _ = state.dispatch.woken() => {}
                _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                _ = shutdown.changed() => {}
            }
        }
    }
    // Let calls in flight finish and record their outcome.
    let _ = tokio::time::timeout(
        state.config.bridge_timeout() + Duration::from_secs(1),
        permits.acquire_many(state.dispatch.size() as u32),
    )
    .await;
}

/// Claims what is due (as many as there are free slots) and starts delivering each; returns
/// how many it claimed.
/// Starts delivering what a line's pacer claimed, each in a slot of the dispatcher's (waiting
/// for one where all are taken).
pub async fn deliver_paced(state: &Sender, ids: &[String]) -> sqlx::Result<()> {
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let mut messages = db::messages::for_dispatch(&state.db, &ids).await?;
    let permits = state.dispatch.permits().clone();
    for id in ids {
        let Some(message) = messages.remove(id) else { continue };
        let job = Job { message_id: id.to_string(), line_id: message.0.line_id.clone(), attempts: 1 };
        let permit = permits.clone().acquire_owned().await.expect("semaphore stays open");
        spawn_delivery(state, permit, job, Some(message), Checked::Paced);
    }
    Ok(())
}

pub async fn step(state: &Sender, permits: &Arc<Semaphore>) -> sqlx::Result<usize> {
    let free = permits.available_permits().min(BATCH);
    if free == 0 {
        let _ = permits.acquire().await;
        return Ok(0);
    }
    let lease_ms = lease_ms(state.config.bridge_timeout_ms);
    let jobs = db::outbox::claim_pending(&state.db, clock::now_ms(), lease_ms, free as i64).await?;
    let claimed = jobs.len();
    // One read for the whole claim, on a reader: the writer stays free for the writes. If it
    // fails, the claims run out and the reconciler asks the lines: nothing is lost.
    let ids: Vec<&str> = jobs.iter().map(|job| job.message_id.as_str()).collect();
    let mut messages = db::messages::for_dispatch(&state.db, &ids).await?;
    for job in jobs {
        let permit = permits.clone().acquire_owned().await.expect("semaphore stays open");
        let message = messages.remove(&job.message_id);
        spawn_delivery(state, permit, job, message, Checked::Before);
    }
    Ok(claimed)
}

/// Backoff for a line that could not be reached: 250 ms doubling to 5 s.
fn retry_delay(attempts: i64) -> i64 {
    (250i64 << attempts.clamp(1, 6).saturating_sub(1)).min(5_000)
}

async fn deliver(state: &Sender, job: &Job, message: Option<ForDispatch>, checked: Checked) -> anyhow::Result<()> {
    let Some(line) = state.lines.get(&job.line_id).await? else {
        anyhow::bail!("line {} is gone", job.line_id);
    };
    // A line with a budget, or not active now, sends only what its pacer hands over: anything
    // else for it (a scheduled message come due, a retry, a send accepted before its policy
    // changed) waits for the pacer instead.
    if checked != Checked::Paced && !line.sends_directly() {
        db::line_sends::wait_again(&state.db, &line.id, &job.message_id).await?;
        state.dispatch.wake_pacer(&line.id);
        return Ok(());
    }
    let Some((mut message, kind, phone)) = message else {
        state.db.write(async |conn| db::outbox::complete(conn, &job.message_id).await).await?;
        return Ok(());
    };
    if !matches!(message.status, MessageStatus::Scheduled | MessageStatus::Queued | MessageStatus::Unknown) {
        // Settled already (a callback came first).
        state.db.write(async |conn| db::outbox::complete(conn, &job.message_id).await).await?;
        return Ok(());
    }
    let recipients = match (kind, phone) {
        (ConversationKind::Direct, Some(phone)) => vec![phone],
        _ => state.db.read(async |conn| db::messages::recipients(conn, &message.conversation_id).await).await?,
    };
    // Checked again at hand-over: a recipient who texted STOP while the message waited (after it
    // was accepted) gets nothing, and the message fails with `recipient_opted_out`. A scheduled message whose time
    // is long past (the server was down) fails with `schedule_missed`.
    if checked != Checked::Now && matches!(message.status, MessageStatus::Queued | MessageStatus::Scheduled) {
        let phones: Vec<&str> = recipients.iter().map(String::as_str).collect();
        let late_ms = message.send_at.map_or(0, |at| clock::now_ms() - at);
        let since = message.created_at;
        let opted_out = db::opt_outs::first_opted_out_since(&state.db, &message.org_id, &line.id, &phones, since);
        let reason = if opted_out.await?.is_some() {
            Some("recipient_opted_out")
        } else if message.status == MessageStatus::Scheduled
            && checked == Checked::Before
            && late_ms > state.config.schedule_late_seconds as i64 * 1_000
        {
            Some("schedule_missed")
        } else {
            None
        };
        if let Some(reason) = reason {
            let mut batch = db::Batch::new();
            let failed = MessageStatus::Failed;
            db::moves::stage_advance_settling(&mut batch, state.db.backend(), &message, failed, Some(reason));
            db::outbox::stage_complete(&mut batch, state.db.backend(), &message.id);
            state.db.commit(batch).await?;
            crate::metrics::status_moves(failed.as_str(), 1);
            tracing::info!(message = %message.id, line = %line.id, reason, "not handed over");
            return Ok(());
        }
    }
    // A scheduled message's time came: it is queued (with its event) before the line is called,
    // in a commit of its own; the job stays claimed by this dispatcher meanwhile.
    if message.status == MessageStatus::Scheduled {
        let mut batch = db::Batch::new();
        let moved = db::moves::stage_advance(&mut batch, state.db.backend(), &message, MessageStatus::Queued, None);
        state.db.commit(batch).await?;
        crate::metrics::status_moves(MessageStatus::Queued.as_str(), 1);
        message = moved.unwrap_or(message);
    }
    let is_group = kind == ConversationKind::Group;
    // Replies, effects and subjects are iMessage's: over SMS the text goes plain.
    let imessage = message.channel == crate::domain::lifecycle::Channel::Imessage;
    let reply_to = match message.extras.reply_to.as_deref().filter(|_| imessage) {
        Some(id) => Some(crate::send::extras::line_name(&state.db, &line.id, id).await?),
        None => None,
    };
    let request = SendRequest {
        reply_to,
        effect: message.extras.effect.clone().filter(|_| imessage),
        subject: message.extras.subject.clone().filter(|_| imessage),
        id: message.id.clone(),
        to: if is_group { Vec::new() } else { recipients },
        chat: is_group.then(|| message.conversation_id.clone()),
        channel: message.channel.to_string(),
        kind: message.kind.to_string(),
        body: message.body.clone(),
        vcard: message.attachment.clone().filter(|_| message.kind == MessageKind::ContactCard),
        poll: match &message.payload {
            Some(Payload::Poll(poll)) => Some(poll.clone()),
            _ => None,
        },
        reaction: reaction_of(&message),
        attachments: if message.kind == MessageKind::Media {
            let base = state.config.public_base();
            db::attachments::for_message(&state.db, &message.id)
                .await?
                .into_iter()
                .map(|a| crate::bridge::AttachmentRef {
                    url: format!("{base}/api/v1/messaging/bridge/attachments/{}", a.id),
                    id: a.id,
                    content_type: a.content_type,
                    size: a.size,
                    filename: a.filename,
                })
                .collect()
        } else {
            Vec::new()
        },
    };
    let call = tracing::info_span!(target: crate::trace::TARGET, "line.call", otel.kind = "client",
        msgline.message_id = %message.id, msgline.line_id = %line.id, msgline.bridge_kind = line.bridge_kind.as_str(),
        msgline.outcome = tracing::field::Empty, http.response.status_code = tracing::field::Empty);
    let result = state.lines.client().send(&line, &request).instrument(call.clone()).await;
    call.record("msgline.outcome", result.outcome.attempt_outcome());
    if let Some(status) = result.http_status {
        call.record("http.response.status_code", i64::from(status));
    }
    state.traces.called(&message.id, &call);
    drop(call);
    let now = clock::now_ms();
    if matches!(
        result.outcome,
        SendOutcome::Accepted | SendOutcome::Rejected(_) | SendOutcome::Blocked(_) | SendOutcome::Held { .. }
    ) {
        state.dispatch.line_answered(&line.id);
    }

    let error_text = match &result.outcome {
        SendOutcome::Rejected(reason) | SendOutcome::Blocked(reason) => Some(reason.clone()),
        SendOutcome::Unreachable(error) | SendOutcome::Unknown(error) => Some(error.clone()),
        SendOutcome::RetryLater => Some("the line asked to be tried later".into()),
        SendOutcome::Timeout => Some("the line did not answer within the bridge timeout".into()),
        SendOutcome::Accepted | SendOutcome::Held { .. } => None,
    };
    let mut batch = db::Batch::new();
    db::attempts::stage_insert(
        &mut batch,
        db::attempts::NewAttempt {
            org_id: &message.org_id,
            message_id: &message.id,
            line_id: &line.id,
            attempt: job.attempts,
            outcome: result.outcome.attempt_outcome(),
            http_status: result.http_status,
            latency_ms: result.latency_ms,
            error: error_text.as_deref(),
        },
    );
    // The move, and whether the line answered for good (the move then ends the job too).
    let next = match &result.outcome {
        SendOutcome::Accepted => Some((MessageStatus::Submitted, None, true)),
        SendOutcome::Rejected(reason) => Some((MessageStatus::Failed, Some(reason.as_str()), true)),
        SendOutcome::Timeout | SendOutcome::Unknown(_) => Some((MessageStatus::Unknown, None, false)),
        SendOutcome::Unreachable(_) | SendOutcome::RetryLater | SendOutcome::Blocked(_) | SendOutcome::Held { .. } => {
            None
        }
    };
    // The whole outcome is one unit of work: the move (with its event), the attempt and the
    // end or next turn of the outbox job.
    if let Some((status, reason, settle)) = next {
        let stage = if settle { db::moves::stage_advance_settling } else { db::moves::stage_advance };
        stage(&mut batch, state.db.backend(), &message, status, reason);
    }
    stage_job_end(&mut batch, state.db.backend(), &message.id, &result.outcome, job.attempts, now);
    state.db.commit(batch).await?;
    if let SendOutcome::Blocked(reason) = &result.outcome {
        // Nothing was sent: the line stops until an operator resumes it, the message waits.
        if crate::lines::health::flag(&state.db, &line.id, reason).await?.is_some() {
            tracing::warn!(line = %line.id, reason, "the line's device says its account is blocked: line flagged");
        }
        state.lines.forget(&line.id);
        db::line_sends::wait_again(&state.db, &line.id, &message.id).await?;
        state.dispatch.wake_pacer(&line.id);
    } else if checked == Checked::Paced {
        db::line_sends::settle(&state.db, &line.id, &message.id, clock::now_ms()).await?;
        state.dispatch.wake_pacer(&line.id);
    }
    // What the answer says of the line, in its kind's words (a BlueBubbles Server answers a send
    // only once the Mac sent it, so its acceptance ends a run of failures).
    match &result.outcome {
        SendOutcome::Rejected(reason) => {
            signals::observe(&state.db, &state.lines, &line, &message.id, Some(reason)).await?
        }
        SendOutcome::Accepted if line.bridge_kind == BridgeKind::BlueBubbles => state.lines.end_run(&line.id),
        _ => {}
    }
    crate::metrics::bridge_call(&line.id, result.outcome.attempt_outcome(), result.latency_ms);
    if let Some((status, ..)) = next {
        crate::metrics::status_moves(status.as_str(), 1);
    }
    if !matches!(result.outcome, SendOutcome::Accepted | SendOutcome::Held { .. }) {
        tracing::info!(message = %message.id, line = %line.id, outcome = ?result.outcome, "delivery attempt did not succeed");
    }
    Ok(())
}

/// A reaction message's tapback as the line is asked for it. The message keeps the line's name
/// for the target where an attachment would be (see `send::reaction`).
fn reaction_of(message: &db::messages::Message) -> Option<ReactionRequest> {
    let Some(Payload::Reaction(reaction)) = &message.payload else { return None };
    let target_message_id = reaction.target_message_id.clone()?;
    Some(ReactionRequest {
        tapback: reaction.tapback.as_str().to_string(),
        target: message.attachment.clone().unwrap_or_else(|| target_message_id.clone()),
        target_message_id,
        remove: reaction.removed,
    })
}

/// What becomes of the outbox job after a call.
fn stage_job_end(
    batch: &mut db::Batch,
    backend: db::Backend,
    message_id: &str,
    outcome: &SendOutcome,
    attempts: i64,
    now: i64,
) {
    use db::outbox::{stage_complete, stage_mark_unknown, stage_retry_at};
    match outcome {
        SendOutcome::Accepted | SendOutcome::Rejected(_) => stage_complete(batch, backend, message_id),
        // Back to waiting for the line, after the commit (see `deliver`).
        SendOutcome::Blocked(_) => {}
        SendOutcome::Unreachable(_) | SendOutcome::RetryLater => {
            stage_retry_at(batch, backend, message_id, now + retry_delay(attempts))
        }
        SendOutcome::Timeout | SendOutcome::Unknown(_) => stage_mark_unknown(batch, backend, message_id, now + 500),
        // The line asks its device for it, and is asked about it later.
        SendOutcome::Held { ask_at } => stage_mark_unknown(batch, backend, message_id, *ask_at),
    }
}
