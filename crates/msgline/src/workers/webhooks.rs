//! The webhook worker: fans new events out to one delivery per matching endpoint (the first
//! written already claimed), claims the deliveries that are due again (the claim is committed
//! first), signs and posts each through the egress client, then records the attempt and what
//! comes next in one transaction: done, a retry by the schedule (or the receiver's
//! `Retry-After`), or given up. An endpoint that answers 410, or whose every attempt has failed
//! for `MSGLINE_WEBHOOK_DISABLE_AFTER`, is disabled.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tracing::Instrument;

use crate::{
    clock,
    config::Config,
    db::{
        self,
        webhook_deliveries::{Attempt, Claimed, Settle, StoredEvent},
    },
    domain::webhook::{RetrySchedule, jittered, parse_duration, parse_retry_after, signature_header},
    ids,
    send::Sender,
};

/// How long a receiver has to answer.
pub const TIMEOUT: Duration = Duration::from_secs(15);
/// A claim outlives the call it covers; one that runs out (a crash) is taken again.
const LEASE_MS: i64 = TIMEOUT.as_millis() as i64 + 10_000;
/// Most posts in flight at once from one instance.
const MAX_IN_FLIGHT: usize = 128;
/// Most deliveries between their claim and their recorded attempt at once: posts in flight, and
/// those whose answer came back and whose attempt waits for its commit. A post's slot is free
/// again once its answer is in, so that receivers are never held up by the database. Bounded
/// at two windows: on PostgreSQL every attempt to one endpoint commits on one lane (its row is
/// hot), and with 1,024 allowed that lane's queue grew until a delivery run took twice as long
/// in two runs of five.
const MAX_UNRECORDED: usize = 2 * MAX_IN_FLIGHT;
/// Most deliveries one step claims. A step costs about the same round trips whatever it claims,
/// and under a steady stream of sends a step took 20-70 ms on the bench machine: at 32 a step,
/// deliveries fell seconds behind 4,000 events a second.
const CLAIM_BATCH: usize = 128;
/// Free slots a busy worker waits for before its next step, and how long it waits for them.
const REFILL: usize = CLAIM_BATCH / 2;
const REFILL_WAIT: Duration = Duration::from_millis(5);
/// Loops of steps at once on PostgreSQL, sharing the slots: while one waits for the database,
/// the other fans out or claims (each skips the rows the other holds). On SQLite a step's
/// writes run on the writer's one thread, and one loop drained a backlog faster.
fn steppers(backend: db::Backend) -> usize {
    match backend {
        db::Backend::Sqlite => 1,
        db::Backend::Postgres => 2,
    }
}
/// How much of a receiver's answer is kept for the deliveries list.
pub const KEPT_RESPONSE_BYTES: usize = 1024;
const IDLE: Duration = Duration::from_millis(200);
/// Attempts and settled deliveries are kept this long.
const RETENTION_MS: i64 = 30 * 86_400_000;
const PRUNE_EVERY: Duration = Duration::from_secs(300);

/// The worker's configuration, parsed once.
#[derive(Debug, Clone)]
pub struct Settings {
    pub schedule: RetrySchedule,
    pub disable_after_ms: i64,
}

impl Settings {
    pub fn from_config(config: &Config) -> anyhow::Result<Self> {
        let schedule = RetrySchedule::parse(&config.webhook_retry_schedule).map_err(anyhow::Error::msg)?;
        let disable_after = parse_duration(&config.webhook_disable_after).map_err(anyhow::Error::msg)?;
        Ok(Settings { schedule, disable_after_ms: disable_after.as_millis() as i64 })
    }
}

pub async fn run(state: Sender, shutdown: watch::Receiver<bool>) {
    let settings = match Settings::from_config(&state.config) {
        Ok(settings) => Arc::new(settings),
        Err(error) => {
            tracing::error!(error = %error, "webhook delivery is off: its configuration is invalid");
            return;
        }
    };
    let permits = Arc::new(Slots {
        posts: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
        unrecorded: Arc::new(Semaphore::new(MAX_UNRECORDED)),
    });
    let steppers =
        (0..steppers(state.db.backend())).map(|n| steps(&state, &settings, &permits, shutdown.clone(), n == 0));
    futures_util::future::join_all(steppers).await;
    // Let posts in flight finish and record their outcome.
    let _ = tokio::time::timeout(TIMEOUT + Duration::from_secs(1), async {
        let _posted = permits.posts.acquire_many(MAX_IN_FLIGHT as u32).await;
        let _recorded = permits.unrecorded.acquire_many(MAX_UNRECORDED as u32).await;
    })
    .await;
}

/// One of the worker's loops of steps, sharing its slots with the others; the one that
/// `prunes` also deletes old attempts now and then.
async fn steps(
    state: &Sender,
    settings: &Arc<Settings>,
    permits: &Slots,
    mut shutdown: watch::Receiver<bool>,
    prunes: bool,
) {
    let mut pruned_at: Option<Instant> = None;
    loop {
        if *shutdown.borrow() {
            break;
        }
        let worked = match step(state, settings, permits).await {
            Ok(n) => n,
            Err(error) => {
                tracing::error!(error = %error, "webhook worker step failed");
                0
            }
        };
        if prunes && pruned_at.is_none_or(|at| at.elapsed() >= PRUNE_EVERY) {
            pruned_at = Some(Instant::now());
            if let Err(error) = prune(state).await {
                tracing::error!(error = %error, "could not prune old webhook attempts");
            }
        }
        if permits.free() < REFILL {
            // Most post slots are busy, or most deliveries allowed between claim and record are
            // out: go on once a claim's worth is free again (a step costs the same round trips
            // whether it claims one delivery or thirty), or after a moment if fewer come free.
            tokio::select! {
                _ = permits.free_at_least(REFILL) => {}
                _ = tokio::time::sleep(REFILL_WAIT) => {}
                _ = shutdown.changed() => {}
            }
        } else if worked == 0 {
            tokio::select! {
                _ = tokio::time::sleep(IDLE) => {}
                _ = shutdown.changed() => {}
            }
        }
    }
}

/// The worker's limits: posts in flight, and deliveries claimed but not yet recorded.
struct Slots {
    posts: Arc<Semaphore>,
    unrecorded: Arc<Semaphore>,
}

impl Slots {
    /// How many deliveries may be claimed now.
    fn free(&self) -> usize {
        self.posts.available_permits().min(self.unrecorded.available_permits())
    }

    /// Up to `most` pairs of slots, each a post's and an unrecorded delivery's, taken now: what a
    /// step may claim. Taken before the claim, so that loops of steps side by side never claim
    /// more between them than may be posted.
    fn take(&self, most: usize) -> Vec<(OwnedSemaphorePermit, OwnedSemaphorePermit)> {
        let mut taken = Vec::new();
        while taken.len() < most {
            let Ok(post) = self.posts.clone().try_acquire_owned() else { break };
            let Ok(unrecorded) = self.unrecorded.clone().try_acquire_owned() else { break };
            taken.push((post, unrecorded));
        }
        taken
    }

    /// Waits until `n` deliveries may be claimed.
    async fn free_at_least(&self, n: usize) {
        let _posts = self.posts.acquire_many(n as u32).await;
        let _unrecorded = self.unrecorded.acquire_many(n as u32).await;
    }
}

/// Fans out new events, their first deliveries claimed as they are written, and claims
/// deliveries that are due again (retries, a replay, claims that ran out), as many in all as
/// there are free slots: half each when both wait, so neither waits behind the other. Starts
/// posting each; returns how many events and deliveries it took.
async fn step(state: &Sender, settings: &Arc<Settings>, permits: &Slots) -> anyhow::Result<usize> {
    let mut slots = permits.take(CLAIM_BATCH);
    let free = slots.len();
    if free == 0 {
        return Ok(0);
    }
    let now = clock::now_ms();
    let due = db::webhook_deliveries::any_due(&state.db, now).await?;
    let share = if due { free.div_ceil(2) } else { free };
    // A fan-out takes only the events it can post at once, so that their deliveries are written
    // claimed and in the order of the events. Taking events in bulk on PostgreSQL and leaving
    // the deliveries beyond the claim due (as this did until 2026-12) drained a backlog as fast,
    // but under a steady stream of sends the first deliveries of each fan-out went ahead of the
    // backlog and the rest waited seconds, each written once more by its claim (BENCHMARKS.md).
    // The endpoints come with the fan-out, read in its transaction, after `now`.
    let fanned = db::webhook_fan_out::fan_out(&state.db, share, share, now + LEASE_MS).await?;
    let rest = free - fanned.ready.len();
    let mut claimed: Vec<(Claimed, Option<db::webhooks::Webhook>, i64)> =
        fanned.ready.into_iter().map(|ready| (ready.claimed, Some(ready.webhook), now)).collect();
    let mut again = 0;
    if due && rest > 0 {
        let due = db::webhook_deliveries::claim_due(&state.db, now, LEASE_MS, rest as i64).await?;
        again = due.len();
        let read_at = clock::now_ms();
        // If a read fails, the claims run out and are taken again: nothing is lost.
        let webhooks =
            db::webhooks::for_deliveries(&state.db, due.iter().map(|c| (c.org_id.as_str(), c.webhook_id.as_str())))
                .await?;
        // Several deliveries may share an endpoint.
        claimed.extend(due.into_iter().map(|delivery| {
            let webhook = webhooks.get(&(delivery.org_id.clone(), delivery.webhook_id.clone())).cloned();
            (delivery, webhook, read_at)
        }));
    }
    // One read for the events of every delivery claimed, new or due again (an event may go to
    // several endpoints).
    let events = db::webhook_deliveries::events(&state.db, claimed.iter().map(|(c, ..)| c.event_id.as_str())).await?;
    for (delivery, webhook, read_at) in claimed {
        let event = events.get(&delivery.event_id).cloned();
        let slot = slots.pop().expect("a slot was taken for every delivery claimed");
        start(state, settings, slot, delivery, webhook, event, read_at);
    }
    Ok(fanned.events + again)
}

/// Posts a claimed delivery in a task of its own, holding `slot` (its post's and its unrecorded
/// delivery's, taken before the claim); `webhook` is its endpoint as read at `read_at`.
fn start(
    state: &Sender,
    settings: &Arc<Settings>,
    slot: (OwnedSemaphorePermit, OwnedSemaphorePermit),
    delivery: Claimed,
    webhook: Option<db::webhooks::Webhook>,
    event: Option<StoredEvent>,
    read_at: i64,
) {
    let (post, unrecorded) = slot;
    let span = delivery_span(state, &delivery, event.as_ref());
    let (state, settings) = (state.clone(), settings.clone());
    tokio::spawn(
        async move {
            if let Err(error) = deliver(&state, &settings, &delivery, webhook, read_at, event, post).await {
                // The claim runs out and the delivery is taken again: nothing is lost.
                tracing::error!(delivery = %delivery.id, error = %error, "could not record a webhook attempt");
            }
            drop(unrecorded);
        }
        .instrument(span),
    );
}

/// The trace's span of one attempt: the endpoint, the event and, for a message's event, the
/// message (a child of the span its send was accepted in, when that was here). Never the
/// endpoint's URL, its secret or the event's data.
fn delivery_span(state: &Sender, delivery: &Claimed, event: Option<&StoredEvent>) -> tracing::Span {
    let span = tracing::info_span!(target: crate::trace::TARGET, parent: None, "webhook.delivery",
        otel.kind = "client", msgline.webhook_id = %delivery.webhook_id, msgline.event_id = %delivery.event_id,
        msgline.event_type = event.map(|e| e.kind.as_str()), msgline.attempt = delivery.attempt,
        msgline.message_id = tracing::field::Empty, http.response.status_code = tracing::field::Empty,
        msgline.outcome = tracing::field::Empty);
    if !state.traces.is_on() {
        return span;
    }
    // A message's event holds the message as `data.message` (`Message::event_data`).
    #[derive(serde::Deserialize)]
    struct About {
        message: Option<Id>,
    }
    #[derive(serde::Deserialize)]
    struct Id {
        id: String,
    }
    let message = event
        .filter(|e| e.kind.starts_with("messaging.message."))
        .and_then(|e| serde_json::from_str::<About>(&e.data).ok())
        .and_then(|about| about.message)
        .map(|message| message.id);
    if let Some(message) = message {
        span.record("msgline.message_id", message.as_str());
        state.traces.under_send(&span, &message);
    }
    span
}

async fn prune(state: &Sender) -> sqlx::Result<()> {
    let before = clock::now_ms() - RETENTION_MS;
    while db::webhook_deliveries::prune(&state.db, before, 1000).await? > 0 {}
    Ok(())
}

/// The body every attempt of an event carries: `{id, type, created_at, data}`.
pub fn payload(event: &StoredEvent) -> Vec<u8> {
    db::events::body(&event.id, &event.kind, event.created_at, &event.data)
}

/// What one attempt came to.
enum Outcome {
    Delivered,
    Gone,
    Failed { retry_after: Option<Duration> },
}

/// Why an attempt's outcome was not recorded (its unit of work is then rolled back).
enum Unrecorded {
    /// Another worker claimed the delivery again meanwhile: its own attempt will be recorded.
    ClaimRanOut,
    Database(sqlx::Error),
}

impl From<sqlx::Error> for Unrecorded {
    fn from(error: sqlx::Error) -> Self {
        Unrecorded::Database(error)
    }
}

/// When a failed attempt is tried again, by the schedule or the receiver's `Retry-After` (which
/// wins; it still counts as an attempt); `Failed` when the schedule is spent.
fn after_failure(settings: &Settings, claimed: &Claimed, retry_after: Option<Duration>, now: i64) -> Settle {
    match settings.schedule.delay_after(claimed.attempt) {
        Some(delay) => {
            let wait = retry_after.unwrap_or_else(|| jittered(delay, &mut rand::rng()));
            Settle::RetryAt(now + wait.as_millis() as i64)
        }
        None => Settle::Failed,
    }
}

/// Posts one claimed delivery and records what came of it. `webhook` is the endpoint as read
/// at `read_at`; `post` is the delivery's slot among the posts in flight, given back once the
/// receiver has answered.
async fn deliver(
    state: &Sender,
    settings: &Settings,
    claimed: &Claimed,
    webhook: Option<db::webhooks::Webhook>,
    read_at: i64,
    event: Option<StoredEvent>,
    post: OwnedSemaphorePermit,
) -> anyhow::Result<()> {
    let Some(webhook) = webhook else {
        // The endpoint was deleted, and its deliveries with it; one written by a fan-out that
        // read the endpoint just before goes now.
        db::webhook_deliveries::forget(&state.db, &claimed.id).await?;
        return Ok(());
    };
    let Some(event) = event else { return Ok(()) };
    if !webhook.enabled {
        state
            .db
            .write(async |conn| {
                db::webhook_deliveries::settle(conn, claimed, Settle::Failed, None, clock::now_ms()).await
            })
            .await?;
        return Ok(());
    }

    let body = payload(&event);
    let timestamp = clock::now_ms() / 1000;
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(HeaderName::from_static("webhook-id"), HeaderValue::from_str(&event.id)?);
    headers.insert(HeaderName::from_static("webhook-timestamp"), HeaderValue::from(timestamp));
    let signature = signature_header(webhook.signing_secrets(clock::now_ms()), &event.id, timestamp, &body);
    headers.insert(HeaderName::from_static("webhook-signature"), HeaderValue::from_str(&signature)?);

    let started = Instant::now();
    let result = state.egress.post_keeping_status(&webhook.url, headers, body, KEPT_RESPONSE_BYTES, TIMEOUT).await;
    let latency_ms = started.elapsed().as_millis() as i64;
    drop(post);
    let now = clock::now_ms();
    if state.traces.is_on() {
        let span = tracing::Span::current();
        let outcome = match &result {
            Ok(answer) => {
                span.record("http.response.status_code", i64::from(answer.status));
                if (200..300).contains(&answer.status) { "delivered" } else { "refused" }
            }
            Err(_) => "unreachable",
        };
        span.record("msgline.outcome", outcome);
    }

    let (status, response_body, error, outcome) = match result {
        Ok(answer) => {
            let text = String::from_utf8_lossy(&answer.body).into_owned();
            let outcome = match answer.status {
                200..=299 => Outcome::Delivered,
                410 => Outcome::Gone,
                429 | 503 => Outcome::Failed {
                    retry_after: answer
                        .headers
                        .get(header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| parse_retry_after(v, time::OffsetDateTime::now_utc())),
                },
                _ => Outcome::Failed { retry_after: None },
            };
            (Some(answer.status), Some(text), None, outcome)
        }
        Err(error) => (None, None, Some(error.to_string()), Outcome::Failed { retry_after: None }),
    };

    // What the attempt came to, as the deliveries list shows it.
    let attempt = |settle: Settle| Attempt {
        id: ids::new_id("att"),
        webhook_id: webhook.id.clone(),
        event_id: event.id.clone(),
        event_type: event.kind.clone(),
        attempt: claimed.attempt,
        status_code: status.map(i64::from),
        succeeded: settle == Settle::Delivered,
        latency_ms,
        response_body,
        error,
        next_attempt_at: match settle {
            Settle::RetryAt(at) => Some(at),
            _ => None,
        },
        created_at: now,
    };

    // A delivery, and a failure that cannot disable the endpoint, read nothing back: they share
    // a commit with other writes. The endpoint's streak, after a failure is noted, began no
    // earlier than the `failing_since` read with it (or than the read itself, when it was not
    // failing then): if even that is younger than the disable window, no disable can follow.
    let gap = settings.schedule.streak_gap().as_millis() as i64;
    let shared = match &outcome {
        Outcome::Delivered => Some(Settle::Delivered),
        Outcome::Failed { retry_after }
            if now - webhook.failing_since.unwrap_or(read_at) < settings.disable_after_ms =>
        {
            Some(after_failure(settings, claimed, *retry_after, now))
        }
        _ => None,
    };
    if let Some(settle) = shared {
        let attempt = attempt(settle);
        let mut batch = db::Batch::new();
        db::webhook_deliveries::stage_attempt(&mut batch, state.db.backend(), claimed, settle, status, &attempt, gap);
        state.db.commit(batch).await?;
        record(&webhook, &event, claimed, status, settle, &attempt);
        return Ok(());
    }

    let recorded = state
        .db
        .transaction(async |tx| -> Result<_, Unrecorded> {
            let mut disable = None;
            let settle = match outcome {
                Outcome::Delivered => Settle::Delivered,
                Outcome::Gone => {
                    disable = Some("gone");
                    Settle::Failed
                }
                Outcome::Failed { retry_after } => {
                    let failing_since = db::webhooks::note_failure(tx, &webhook.id, now, gap).await?;
                    if now - failing_since >= settings.disable_after_ms {
                        disable = Some("failing");
                        Settle::Failed
                    } else {
                        after_failure(settings, claimed, retry_after, now)
                    }
                }
            };
            if !db::webhook_deliveries::settle(tx, claimed, settle, status, now).await? {
                return Err(Unrecorded::ClaimRanOut);
            }
            let attempt = attempt(settle);
            db::webhook_deliveries::insert_attempt(tx, &claimed.org_id, &claimed.id, &attempt).await?;
            match (settle, disable) {
                (Settle::Delivered, _) => db::webhooks::note_success(tx, &webhook.id).await?,
                (_, Some(reason)) => db::webhooks::disable(tx, &webhook.id, reason, now).await?,
                _ => {}
            }
            Ok((settle, disable, attempt))
        })
        .await;
    let (settle, disable, attempt) = match recorded {
        Ok(recorded) => recorded,
        Err(Unrecorded::ClaimRanOut) => {
            tracing::warn!(delivery = %claimed.id, "a webhook claim ran out before its attempt was recorded");
            return Ok(());
        }
        Err(Unrecorded::Database(error)) => return Err(error.into()),
    };
    match disable {
        Some(reason) => {
            crate::metrics::webhook_attempt("failed");
            tracing::warn!(webhook = %webhook.id, event = %event.id, status, reason, "disabled a webhook endpoint")
        }
        None => record(&webhook, &event, claimed, status, settle, &attempt),
    }
    Ok(())
}

/// Counts an attempt that did not disable its endpoint, and logs it if it failed.
fn record(
    webhook: &db::webhooks::Webhook,
    event: &StoredEvent,
    claimed: &Claimed,
    status: Option<u16>,
    settle: Settle,
    attempt: &Attempt,
) {
    crate::metrics::webhook_attempt(match settle {
        Settle::Delivered => "delivered",
        Settle::RetryAt(_) => "retrying",
        Settle::Failed => "failed",
    });
    if settle != Settle::Delivered {
        tracing::info!(
            webhook = %webhook.id,
            event = %event.id,
            attempt = claimed.attempt,
            status,
            error = attempt.error.as_deref(),
            next_attempt_at = attempt.next_attempt_at.map(clock::rfc3339),
            "webhook attempt failed"
        );
    }
}
