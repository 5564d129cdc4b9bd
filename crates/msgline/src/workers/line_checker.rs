//! Asks every line's bridge what it can do, at start and every 30 seconds, so `GET /lines`
//! shows current capabilities and status; and makes sure each line's device reports to this
//! instance (registers msgline's webhook where the kind takes registrations), once per start and
//! again until it succeeds.

use std::{collections::HashSet, time::Duration};

use tokio::sync::watch;

use super::pause;
use crate::{api::AppState, db};

const EVERY: Duration = Duration::from_secs(30);

pub async fn run(state: AppState, mut shutdown: watch::Receiver<bool>) {
    let mut connected = HashSet::new();
    loop {
        if let Err(error) = connect(&state, &mut connected).await {
            tracing::error!(error = %error, "line connection check failed");
        }
        if let Err(error) = step(&state).await {
            tracing::error!(error = %error, "line check failed");
        }
        if !pause(&mut shutdown, EVERY).await {
            break;
        }
    }
}

pub async fn step(state: &AppState) -> sqlx::Result<usize> {
    let lines = db::lines::list_all(&state.db).await?;
    for line in &lines {
        state.lines.refresh(line).await?;
    }
    Ok(lines.len())
}

/// Registers msgline with every line's device not yet registered since this instance started.
pub async fn connect(state: &AppState, connected: &mut HashSet<String>) -> sqlx::Result<()> {
    for line in db::lines::list_all(&state.db).await? {
        if connected.contains(&line.id) {
            continue;
        }
        match state.lines.client().connect(&line).await {
            Ok(()) => {
                connected.insert(line.id);
            }
            Err(error) => tracing::warn!(line = %line.id, kind = line.bridge_kind.as_str(), error, "could not register msgline with the line's device; will try again"),
        }
    }
    Ok(())
}
