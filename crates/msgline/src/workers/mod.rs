//! Work that happens after the response: each worker is a loop around a steppable function, and
//! several instances on one PostgreSQL cooperate through row claims, never through memory.

pub mod agents;
pub mod dispatcher;
pub mod instances;
pub mod janitor;
pub mod line_checker;
pub mod reconciler;
pub mod statistics;
pub mod webhooks;

use std::time::Duration;

use tokio::{sync::watch, task::JoinHandle};

use crate::state::AppState;

/// Starts every worker; they stop when `shutdown` turns true.
pub fn spawn_all(state: &AppState, shutdown: watch::Receiver<bool>) -> Vec<JoinHandle<()>> {
    vec![
        tokio::spawn(dispatcher::run(state.clone(), shutdown.clone())),
        tokio::spawn(reconciler::run(state.clone(), shutdown.clone())),
        tokio::spawn(line_checker::run(state.clone(), shutdown.clone())),
        tokio::spawn(agents::run(state.clone(), shutdown.clone())),
        tokio::spawn(webhooks::run(state.clone(), shutdown.clone())),
        tokio::spawn(statistics::run(state.clone(), shutdown.clone())),
        tokio::spawn(instances::run(state.clone(), shutdown.clone())),
        tokio::spawn(janitor::run(state.clone(), shutdown)),
    ]
}

/// Sleeps for `duration` unless shutdown comes first; `false` means stop.
pub(crate) async fn pause(shutdown: &mut watch::Receiver<bool>, duration: Duration) -> bool {
    if *shutdown.borrow() {
        return false;
    }
    tokio::select! {
        _ = tokio::time::sleep(duration) => !*shutdown.borrow(),
        _ = shutdown.changed() => false,
    }
}
