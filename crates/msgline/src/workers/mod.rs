//! Work that happens after the response: each worker is a loop around a steppable function, and
//! several instances on one PostgreSQL cooperate through row claims, never through memory.

pub mod agents;
pub mod dispatcher;
pub mod fallback;
pub mod instances;
pub mod janitor;
pub mod line_checker;
pub mod pacer;
pub mod reconciler;
pub mod retention;
pub mod statistics;
pub mod webhooks;

use std::time::Duration;

use tokio::{sync::watch, task::JoinHandle};

use std::sync::Arc;

use crate::{agents::Agents, caller::AuthCache, send::Sender};

/// Starts every worker, each with what it uses; they stop when `shutdown` turns true.
pub fn spawn_all(
    sender: &Sender,
    agents: &Agents,
    auth: &Arc<AuthCache>,
    shutdown: watch::Receiver<bool>,
) -> Vec<JoinHandle<()>> {
    vec![
        tokio::spawn(dispatcher::run(sender.clone(), shutdown.clone())),
        tokio::spawn(pacer::run(sender.clone(), shutdown.clone())),
        tokio::spawn(reconciler::run(sender.clone(), shutdown.clone())),
        tokio::spawn(fallback::run(sender.clone(), shutdown.clone())),
        tokio::spawn(line_checker::run(sender.clone(), shutdown.clone())),
        tokio::spawn(agents::run(agents.clone(), shutdown.clone())),
        tokio::spawn(webhooks::run(sender.clone(), shutdown.clone())),
        tokio::spawn(statistics::run(sender.db.clone(), shutdown.clone())),
        tokio::spawn(instances::run(sender.clone(), auth.clone(), shutdown.clone())),
        tokio::spawn(janitor::run(sender.clone(), shutdown)),
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
