//! The lines' pacer: hands the messages that wait for their line to the dispatcher as each
//! line's budget and health allow ([`crate::lines::pacing::step`]). It keeps, for each line with
//! something waiting, when that line is next worth a look, and sleeps until the earliest of them
//! or until a send, a call's end or a change of the line wakes it: a hundred thousand messages
//! waiting for tomorrow's budget cost a step a minute, not a loop.
//!
//! Instances sharing a database each run a pacer; a step holds its line's row, so they count one
//! budget between them. Every minute the pacer also looks for lines whose messages another
//! instance left waiting.

use std::{collections::HashMap, time::Duration};

use tokio::sync::watch;

use crate::{clock, db, dispatch::lease_ms, lines::pacing, send::Sender};

/// How often the lines with messages waiting are read again from the database.
const RESCAN_MS: i64 = 60_000;

pub async fn run(state: Sender, mut shutdown: watch::Receiver<bool>) {
    let mut due: HashMap<String, i64> = HashMap::new();
    let mut rescan_at = 0;
    loop {
        if *shutdown.borrow() {
            break;
        }
        let now = clock::now_ms();
        if now >= rescan_at {
            match db::line_sends::lines_waiting(&state.db).await {
                Ok(lines) => {
                    for line in lines {
                        due.entry(line).or_insert(now);
                    }
                }
                Err(error) => {
                    tracing::error!(error = %error, "the pacer could not read the lines with messages waiting")
                }
            }
            rescan_at = now + RESCAN_MS;
        }
        for line in state.dispatch.lines_to_pace() {
            due.insert(line, now);
        }
        let ready: Vec<String> = due.iter().filter(|(_, at)| **at <= now).map(|(line, _)| line.clone()).collect();
        for line in ready {
            match step(&state, &line).await {
                Ok(Some(next)) => {
                    due.insert(line, next);
                }
                Ok(None) => {
                    due.remove(&line);
                }
                Err(error) => {
                    tracing::error!(line = %line, error = %error, "a pacing step failed; trying again shortly");
                    due.insert(line, clock::now_ms() + 1_000);
                }
            }
        }
        let next = due.values().copied().min().unwrap_or(i64::MAX).min(rescan_at);
        let wait = Duration::from_millis((next - clock::now_ms()).clamp(0, RESCAN_MS) as u64);
        if wait.is_zero() {
            continue;
        }
        tokio::select! {
            _ = state.dispatch.pacer_woken() => {}
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// One step of one line, its hand-overs started; when to look at the line again.
pub async fn step(state: &Sender, line_id: &str) -> anyhow::Result<Option<i64>> {
    let lease = lease_ms(state.config.bridge_timeout_ms);
    let step = pacing::step(&state.db, line_id, clock::now_ms(), lease).await?;
    if step.expired > 0 {
        crate::metrics::status_moves("failed", step.expired as u64);
        tracing::info!(line = %line_id, expired = step.expired, "messages waited past their validity");
    }
    for line in &step.moved_to {
        tracing::info!(from = %line_id, to = %line, "messages moved to another line of their pool");
        state.dispatch.wake_pacer(line);
    }
    if !step.handed.is_empty() {
        super::dispatcher::deliver_paced(state, &step.handed).await?;
    }
    Ok(step.next_at)
}
