//! On PostgreSQL, keeps the planner's statistics up with tables that grow fast (see
//! [`crate::db::planner`]): a look at the table statistics every second, an `ANALYZE` only where
//! a table has changed by half again since its last one.

use std::time::Duration;

use tokio::sync::watch;

use super::pause;
use crate::db::{self, Backend, Db};

const EVERY: Duration = Duration::from_secs(1);

pub async fn run(db: Db, mut shutdown: watch::Receiver<bool>) {
    if db.backend() != Backend::Postgres {
        return;
    }
    while pause(&mut shutdown, EVERY).await {
        match db::planner::analyze_grown(&db).await {
            Ok(tables) if !tables.is_empty() => tracing::debug!(?tables, "analysed tables that grew"),
            Ok(_) => {}
            Err(error) => tracing::warn!(error = %error, "could not refresh the planner's statistics"),
        }
    }
}
