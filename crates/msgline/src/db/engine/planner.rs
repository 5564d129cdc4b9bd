//! PostgreSQL's planner statistics while tables grow fast. A connection keeps the plans it
//! made for its prepared statements until the statistics of their tables change, and the plans
//! it makes before a table has statistics (a new database) may read a whole organisation's rows
//! to find one: looking a contact up by phone through the organisation's index instead of the
//! unique one. Autovacuum analyses a table about once a minute at most; a database that grows
//! from nothing to thousands of rows in its first seconds would run such plans until then.
//! Here a small table is analysed each time its rows have doubled since its statistics were
//! taken (from [`LEAST_ROWS`] rows on): a few times while it grows; from [`LARGE`] rows on,
//! when the plans a key lookup gets no longer change with its size, autovacuum keeps up alone.

use super::{Backend, Db};

/// Rows below which a table is left to autovacuum.
const LEAST_ROWS: i64 = 200;
/// Statistics taken of this many rows or more are left to autovacuum to refresh.
const LARGE: i64 = 10_000;

/// Analyses the database's small tables whose rows have doubled since their statistics were
/// taken; returns their names. Nothing on SQLite, whose planner does not cache plans across statistics.
pub async fn analyze_grown(db: &Db) -> sqlx::Result<Vec<String>> {
    if db.backend() != Backend::Postgres {
        return Ok(Vec::new());
    }
    // reltuples is -1 for a table never analysed.
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT s.relname::text FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid \
         WHERE s.schemaname = current_schema() AND c.reltuples < $1 \
         AND s.n_live_tup >= GREATEST(2 * c.reltuples, $2) ORDER BY s.relname",
    )
    .bind(LARGE)
    .bind(LEAST_ROWS)
    .fetch_all(db.writer())
    .await?;
    for table in &tables {
        // Names from the catalogue, quoted as identifiers.
        sqlx::query(&format!("ANALYZE \"{}\"", table.replace('"', "\"\""))).execute(db.writer()).await?;
    }
    Ok(tables)
}
