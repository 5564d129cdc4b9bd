//! Schema migrations, embedded in the binary: `migrations/sqlite` and `migrations/postgres`
//! describe the same tables and columns (a test checks it).

use sqlx::{Acquire, Executor, Row};

use super::{Backend, Db};

pub struct Migration {
    pub version: i64,
    pub name: &'static str,
    pub sqlite: &'static str,
    pub postgres: &'static str,
}

macro_rules! migration {
    ($version:expr, $name:literal) => {
        Migration {
            version: $version,
            name: $name,
            sqlite: include_str!(concat!("../../../../migrations/sqlite/", $name, ".sql")),
            postgres: include_str!(concat!("../../../../migrations/postgres/", $name, ".sql")),
        }
    };
}

pub const MIGRATIONS: &[Migration] = &[
    migration!(1, "0001_foundation"),
    migration!(2, "0002_messaging"),
    migration!(3, "0003_webhooks"),
    migration!(4, "0004_cards_and_polls"),
    migration!(5, "0005_agents"),
    migration!(6, "0006_statement_rows"),
    migration!(7, "0007_events_index"),
    migration!(8, "0008_keyed_rows"),
    migration!(9, "0009_update_room"),
    migration!(10, "0010_events_by_message"),
    migration!(11, "0011_line_kinds"),
    migration!(12, "0012_message_outbox"),
    migration!(13, "0013_message_idempotency"),
    migration!(14, "0014_webhook_failure_streaks"),
    migration!(15, "0015_opt_outs"),
    migration!(16, "0016_availability"),
    migration!(17, "0017_group_changes"),
    migration!(18, "0018_webhook_children_unlinked"),
    migration!(19, "0019_reactions"),
    migration!(20, "0020_attachments"),
    migration!(21, "0021_indexes_for_clean_up"),
    migration!(22, "0022_message_rows_unlinked"),
    migration!(23, "0023_webhook_queue_indexes"),
    migration!(24, "0024_routing_by_conversation"),
    migration!(25, "0025_unsettled_groups"),
    migration!(26, "0026_staff"),
    migration!(27, "0027_typing"),
    migration!(28, "0028_scheduled_sends"),
    migration!(29, "0029_sms_fallback"),
    migration!(30, "0030_webhook_rows_unlinked"),
    migration!(31, "0031_lines_that_last"),
    migration!(32, "0032_event_feed"),
    migration!(33, "0033_dial_in"),
    migration!(34, "0034_message_actions"),
    migration!(35, "0035_message_claims"),
    migration!(36, "0036_retention"),
];

/// Arbitrary constant naming msgline's migration lock on PostgreSQL, so that several instances
/// starting at once migrate one after another.
const PG_LOCK: i64 = 0x006d_7367_6c69_6e65;

pub async fn run(db: &Db) -> anyhow::Result<Vec<&'static str>> {
    run_until(db, i64::MAX).await
}

/// The version of the newest migration this build holds.
pub fn latest() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// Applies the migrations not yet applied up to `version` (a restore brings an empty database
/// to the schema its backup was made with, loads the rows, then applies the rest).
pub async fn run_until(db: &Db, version: i64) -> anyhow::Result<Vec<&'static str>> {
    let mut conn = db.writer().acquire().await?;
    if db.backend() == Backend::Postgres {
        sqlx::query("SELECT pg_advisory_lock($1)").bind(PG_LOCK).execute(&mut *conn).await?;
    }
    let result = apply(db.backend(), &mut conn, version).await;
    if db.backend() == Backend::Postgres {
        sqlx::query("SELECT pg_advisory_unlock($1)").bind(PG_LOCK).execute(&mut *conn).await?;
    }
    result
}

async fn apply(backend: Backend, conn: &mut sqlx::AnyConnection, until: i64) -> anyhow::Result<Vec<&'static str>> {
    conn.execute(sqlx::raw_sql(
        "CREATE TABLE IF NOT EXISTS msgline_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
    ))
    .await?;
    let applied: Vec<i64> = sqlx::query("SELECT version FROM msgline_migrations")
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|row| row.get::<i64, _>(0))
        .collect();
    let mut done = Vec::new();
    for migration in MIGRATIONS.iter().filter(|m| m.version <= until && !applied.contains(&m.version)) {
        let sql = match backend {
            Backend::Sqlite => migration.sqlite,
            Backend::Postgres => migration.postgres,
        };
        let mut tx = conn.begin().await?;
        tx.execute(sqlx::raw_sql(sql))
            .await
            .map_err(|e| anyhow::anyhow!("migration {} failed: {e}", migration.name))?;
        sqlx::query("INSERT INTO msgline_migrations (version, name, applied_at) VALUES ($1, $2, $3)")
            .bind(migration.version)
            .bind(migration.name)
            .bind(crate::clock::now_ms())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        tracing::info!(migration = migration.name, "applied migration");
        done.push(migration.name);
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::MIGRATIONS;

    /// A migration file that is not in [`MIGRATIONS`] would never run, silently.
    #[test]
    fn every_migration_file_is_listed_once_in_order() {
        let listed: Vec<String> = MIGRATIONS.iter().map(|m| m.name.to_string()).collect();
        for engine in ["sqlite", "postgres"] {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations").join(engine);
            let mut files: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .filter_map(|name| name.strip_suffix(".sql").map(str::to_string))
                .collect();
            files.sort();
            assert_eq!(files, listed, "migrations/{engine}");
        }
        for (n, migration) in MIGRATIONS.iter().enumerate() {
            assert_eq!(migration.version, n as i64 + 1);
            assert!(migration.name.starts_with(&format!("{:04}_", n + 1)), "{}", migration.name);
        }
    }
}
