//! The agent runner: claims queued agent runs (and runs whose claim ran out) and executes them,
//! each on its own, up to [`CONCURRENCY`] at once per instance. A run waits for nothing but a
//! free slot: a slow model holds up its own run, not the others', and a model that errors or
//! times out fails its run and holds up nothing else.

use std::{sync::Arc, time::Duration};

use tokio::sync::{Semaphore, watch};
use tracing::Instrument;

use super::pause;
use crate::{
    agents::Agents,
    agents::{self, Outcome},
    clock, db,
};

/// Most runs one instance executes at once.
const CONCURRENCY: usize = 8;

pub async fn run(state: Agents, mut shutdown: watch::Receiver<bool>) {
    let slots = Arc::new(Semaphore::new(CONCURRENCY));
    loop {
        let claimed = match step(&state, &slots).await {
            Ok(n) => n,
            Err(error) => {
                tracing::error!(error = %error, "agent runner step failed");
                0
            }
        };
        let wait = if claimed > 0 { Duration::from_millis(10) } else { Duration::from_millis(200) };
        if !pause(&mut shutdown, wait).await {
            break;
        }
    }
    // Runs under way may finish (or run out of model time) before the process stops; one cut
    // short is claimed again when its lease runs out.
    let grace = Duration::from_millis(state.config.agent_timeout_ms);
    let _ = tokio::time::timeout(grace, slots.acquire_many(CONCURRENCY as u32)).await;
}

/// Claims as many due runs as there are free slots and starts each in a slot of its own;
/// returns how many it claimed. It does not wait for them.
pub async fn step(state: &Agents, slots: &Arc<Semaphore>) -> anyhow::Result<usize> {
    let free = slots.available_permits();
    if free == 0 {
        return Ok(0);
    }
    let lease = state.config.agent_timeout_ms as i64 * 2 + 5_000;
    let runs = db::agents::claim(&state.db, clock::now_ms(), lease, free as i64).await?;
    let count = runs.len();
    for run in runs {
        let state = state.clone();
        let slot = slots.clone().acquire_owned().await?;
        // The run's trace: the message that started it, and the sends of its replies within it.
        // Never the prompt, the conversation or the model's words.
        let span = tracing::info_span!(target: crate::trace::TARGET, parent: None, "agent.run",
            msgline.run_id = %run.id, msgline.agent_id = %run.agent_id, msgline.org_id = %run.org_id,
            msgline.message_id = %run.trigger_message_id, msgline.attempt = run.attempts,
            msgline.outcome = tracing::field::Empty);
        tokio::spawn(async move {
            let _slot = slot;
            let execution = agents::execute(&state, &run).instrument(span.clone()).await;
            let (status, outcome, error) = match execution {
                Ok(Outcome::Replied) => ("done", "replied", None),
                Ok(Outcome::ToolCap) => ("done", "tool_call_limit", None),
                Ok(Outcome::ModelError(error)) => ("failed", "model_error", Some(error)),
                Ok(Outcome::RateLimited(wait)) => {
                    ("done", "rate_limited", Some(format!("the reply was not sent: over a rate limit for {wait} s")))
                }
                Err(error) => {
                    // Left claimed: it is picked up again when the claim runs out.
                    tracing::error!(run = %run.id, error = %error, "agent run could not finish");
                    return;
                }
            };
            if let Some(error) = &error {
                tracing::warn!(run = %run.id, agent = %run.agent_id, error, "agent run failed");
            }
            span.record("msgline.outcome", outcome);
            drop(span);
            crate::metrics::agent_run(outcome);
            if let Err(e) = db::agents::finish(&state.db, &run.id, status, outcome, error.as_deref()).await {
                tracing::error!(run = %run.id, error = %e, "could not record the end of an agent run");
            }
        });
    }
    Ok(count)
}
