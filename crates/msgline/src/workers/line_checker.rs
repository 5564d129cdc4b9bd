//! Asks every line's bridge what it can do, at start and every 30 seconds, so `GET /lines`
//! shows current capabilities and status; and makes sure each line's device reports to this
//! instance (registers msgline's webhook where the kind takes registrations), once per start and
//! again until it succeeds. On lines whose device can lose its reports while msgline is down, it
//! then asks about the messages still waiting for a receipt: after each registration those of
//! the last day, and every five minutes those of the last hour.

use std::{
    collections::{HashMap, HashSet},
    time::Duration,
};

use tokio::sync::watch;

use super::pause;
use crate::{
    bridge::client::StatusLookup,
    clock,
    db::{self, lines::Line},
    domain::lifecycle::{Health, MessageStatus},
    lines::health,
    send::Sender,
};

/// Every how many seconds of checks the receipts of the last hour are asked about again.
const CATCH_UP_SECONDS: u64 = 300;
const HOUR_MS: i64 = 3_600_000;
/// The most messages asked about per line in one catch-up.
const CATCH_UP_BATCH: i64 = 500;

/// How many probes in a row must fail before a line is `offline`: one failed probe may be a
/// device still starting (a line registered a moment before its bridge listens) or a blip.
const FAILED_PROBES_FOR_OFFLINE: u32 = 2;

pub async fn run(state: Sender, mut shutdown: watch::Receiver<bool>) {
    let mut connected = HashSet::new();
    let mut failed_probes = HashMap::new();
    let every = state.config.line_check_seconds.max(1);
    let catch_up_every = (CATCH_UP_SECONDS / every).max(1);
    for round in 1_u64.. {
        if let Err(error) = connect(&state, &mut connected).await {
            tracing::error!(error = %error, "line connection check failed");
        }
        if let Err(error) = step(&state, &mut failed_probes).await {
            tracing::error!(error = %error, "line check failed");
        }
        if round.is_multiple_of(catch_up_every)
            && let Err(error) = catch_up_all(&state, clock::now_ms() - HOUR_MS).await
        {
            tracing::error!(error = %error, "receipt catch-up failed");
        }
        if !pause(&mut shutdown, Duration::from_secs(every)).await {
            break;
        }
    }
}

/// Probes every line; `failed_probes` counts, per line, the probes that failed in a row.
pub async fn step(state: &Sender, failed_probes: &mut HashMap<String, u32>) -> sqlx::Result<usize> {
    let lines = db::lines::list_all(&state.db).await?;
    for line in &lines {
        // A line that answered a send since the last probe but one is up, whatever its probe says.
        let recently = Duration::from_secs(2 * state.config.line_check_seconds.max(1));
        let answered = state.lines.refresh(line).await?.is_some() || state.dispatch.answered_within(&line.id, recently);
        let failed = match answered {
            true => {
                failed_probes.remove(&line.id);
                0
            }
            false => {
                let count = failed_probes.entry(line.id.clone()).or_insert(0);
                *count += 1;
                *count
            }
        };
        // A probe moves only between active and offline: a pause or a flag is an operator's to end.
        let changed = match (answered, line.health) {
            (false, Health::Active) if failed >= FAILED_PROBES_FOR_OFFLINE => {
                health::went_offline(&state.db, &line.id, "the line's device does not answer msgline's probes").await?
            }
            (true, Health::Offline) => health::came_back(&state.db, &line.id).await?,
            _ => None,
        };
        if let Some(change) = changed {
            tracing::warn!(line = %line.id, health = change.line.health.as_str(), previous = change.previous.as_str(), "line health changed");
            state.lines.forget(&line.id);
            state.dispatch.wake_pacer(&line.id);
        }
    }
    Ok(lines.len())
}

/// Registers msgline with every line's device not yet registered since this instance started.
pub async fn connect(state: &Sender, connected: &mut HashSet<String>) -> sqlx::Result<()> {
    for line in db::lines::list_all(&state.db).await? {
        if connected.contains(&line.id) {
            continue;
        }
        match state.lines.client().connect(&line).await {
            Ok(()) => {
                if state.lines.client().reports_may_be_lost(&line) {
                    catch_up(state, &line, clock::now_ms() - 24 * HOUR_MS).await?;
                }
                connected.insert(line.id);
            }
            Err(error) => {
                tracing::warn!(line = %line.id, kind = line.bridge_kind.as_str(), error, "could not register msgline with the line's device; will try again")
            }
        }
    }
    Ok(())
}

async fn catch_up_all(state: &Sender, since: i64) -> sqlx::Result<()> {
    for line in db::lines::list_all(&state.db).await? {
        if state.lines.client().reports_may_be_lost(&line) {
            catch_up(state, &line, since).await?;
        }
    }
    Ok(())
}

/// Asks the line about its messages moved since `since` that still wait for a receipt, and moves
/// each forward to where the line says it is. Returns how many moved.
pub async fn catch_up(state: &Sender, line: &Line, since: i64) -> sqlx::Result<usize> {
    let mut moved = 0;
    for id in db::messages::awaiting_receipts(&state.db, &line.id, since, CATCH_UP_BATCH).await? {
        let StatusLookup::Known(answer) = state.lines.client().message_status(line, &id).await else { continue };
        let Ok(status) = answer.status.parse::<MessageStatus>() else { continue };
        let reason = answer.reason.as_deref();
        let changed =
            state.db.transaction(async |tx| db::moves::advance_through(tx, &id, status, reason).await).await?;
        if let Some(message) = &changed {
            crate::metrics::status_moves(message.status.as_str(), 1);
        }
        moved += usize::from(changed.is_some());
    }
    if moved > 0 {
        tracing::info!(line = %line.id, moved, "caught up with receipts the line reported while msgline was away");
    }
    Ok(moved)
}
