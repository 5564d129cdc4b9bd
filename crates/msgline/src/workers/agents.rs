//! The agent runner: claims queued agent runs (and runs whose claim ran out) and executes them.
//! A model that errors or times out fails its run and holds up nothing else.

use std::time::Duration;

use tokio::sync::watch;

use super::pause;
use crate::{
    agents::{self, Outcome},
    clock, db,
    state::AppState,
};

const BATCH: i64 = 8;

pub async fn run(state: AppState, mut shutdown: watch::Receiver<bool>) {
    loop {
        let claimed = match step(&state).await {
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
}

/// Claims due runs and executes them concurrently; returns how many it claimed.
pub async fn step(state: &AppState) -> anyhow::Result<usize> {
    let lease = state.config.agent_timeout_ms as i64 * 2 + 5_000;
    let runs = db::agents::claim(&state.db, clock::now_ms(), lease, BATCH).await?;
    let count = runs.len();
    let mut tasks = tokio::task::JoinSet::new();
    for run in runs {
        let state = state.clone();
        tasks.spawn(async move {
            let (status, outcome, error) = match agents::execute(&state, &run).await {
                Ok(Outcome::Replied) => ("done", "replied", None),
                Ok(Outcome::ToolCap) => ("done", "tool_call_limit", None),
                Ok(Outcome::ModelError(error)) => ("failed", "model_error", Some(error)),
                Err(error) => {
                    // Left claimed: it is picked up again when the claim runs out.
                    tracing::error!(run = %run.id, error = %error, "agent run could not finish");
                    return;
                }
            };
            if let Some(error) = &error {
                tracing::warn!(run = %run.id, agent = %run.agent_id, error, "agent run failed");
            }
            crate::metrics::agent_run(outcome);
            if let Err(e) = db::agents::finish(&state.db, &run.id, status, outcome, error.as_deref()).await {
                tracing::error!(run = %run.id, error = %e, "could not record the end of an agent run");
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    Ok(count)
}
