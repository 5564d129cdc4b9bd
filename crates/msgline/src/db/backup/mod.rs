//! `msgline admin backup` and `msgline admin restore`: a consistent copy of a running
//! database, and its return into an empty one.
//!
//! - **SQLite**: the backup is a SQLite file, made with SQLite's online backup API in one step,
//!   so one read transaction sees every page: the copy is the database as of one commit, while
//!   the server goes on writing (in WAL mode a reader holds no writer back).
//! - **PostgreSQL**: the backup is msgline's own stream: every table's rows as `COPY` text, all
//!   read in one `REPEATABLE READ` transaction, so every table is seen as of the same moment.
//!   Restoring needs no `pg_dump` or `pg_restore`, only the `msgline` binary.
//!
//! Either file is written beside its destination and renamed into place once complete, so an
//! interrupted backup never leaves a partial file under the name asked for. A restore refuses a
//! database that holds a row in any table (and a backup of the other engine); it brings the
//! empty database to the schema version of the backup, loads the rows, and then applies the
//! migrations this build has beyond it.

mod postgres;
mod sqlite;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::migrate;

/// Which kind of backup a file holds, from its first bytes.
enum Kind {
    Sqlite,
    Postgres,
}

fn kind_of(file: &Path) -> anyhow::Result<Kind> {
    use std::io::Read;
    let mut head = [0u8; 32];
    let mut reader = std::fs::File::open(file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
    let n = reader.read(&mut head)?;
    if head[..n].starts_with(b"SQLite format 3\0") {
        Ok(Kind::Sqlite)
    } else if head[..n].starts_with(postgres::MAGIC) {
        Ok(Kind::Postgres)
    } else {
        anyhow::bail!(
            "{} is not a msgline backup (neither a SQLite file nor a PostgreSQL backup of msgline)",
            file.display()
        )
    }
}

/// Copies the database at `url` into `to`; answers what `msgline admin backup` prints.
pub async fn backup(url: &str, to: &Path) -> anyhow::Result<Value> {
    let started = std::time::Instant::now();
    let partial = partial_path(to);
    let result = if url.starts_with("sqlite:") {
        let file = super::native::file_of(url)
            .ok_or_else(|| anyhow::anyhow!("an in-memory SQLite database cannot be backed up"))?;
        let partial = partial.clone();
        tokio::task::spawn_blocking(move || sqlite::backup(&file, &partial)).await?
    } else {
        postgres::backup(url, &partial).await
    };
    let version = match result {
        Ok(version) => version,
        Err(error) => {
            let _ = std::fs::remove_file(&partial);
            return Err(error);
        }
    };
    std::fs::rename(&partial, to).map_err(|e| anyhow::anyhow!("cannot move the backup to {}: {e}", to.display()))?;
    let bytes = std::fs::metadata(to)?.len();
    Ok(json!({
        "backup": to.display().to_string(),
        "engine": engine_name(url),
        "schema_version": version,
        "bytes": bytes,
        "seconds": round_ms(started.elapsed()),
    }))
}

/// Loads the backup `from` into the empty database at `url`; answers what `msgline admin
/// restore` prints.
pub async fn restore(url: &str, from: &Path) -> anyhow::Result<Value> {
    let started = std::time::Instant::now();
    let kind = kind_of(from)?;
    let version = match (kind, url.starts_with("sqlite:")) {
        (Kind::Sqlite, true) => {
            let file = super::native::file_of(url)
                .ok_or_else(|| anyhow::anyhow!("restore needs a SQLite file, not an in-memory database"))?;
            let from = from.to_path_buf();
            tokio::task::spawn_blocking(move || sqlite::restore(&from, &file)).await??
        }
        (Kind::Postgres, false) => postgres::restore(url, from).await?,
        (Kind::Sqlite, false) => anyhow::bail!(
            "{} is a backup of a SQLite database: restore it into SQLite (MSGLINE_DATABASE_URL=sqlite://FILE)",
            from.display()
        ),
        (Kind::Postgres, true) => anyhow::bail!(
            "{} is a backup of a PostgreSQL database: restore it into PostgreSQL (MSGLINE_DATABASE_URL=postgres://...)",
            from.display()
        ),
    };
    // The migrations this build has beyond the backup's schema.
    let db = super::Db::connect_for_command(url).await?;
    let applied = db.migrate().await;
    db.close().await;
    Ok(json!({
        "restored": from.display().to_string(),
        "engine": engine_name(url),
        "schema_version": migrate::latest(),
        "backup_schema_version": version,
        "migrations_applied": applied?,
        "seconds": round_ms(started.elapsed()),
    }))
}

/// Refuses a backup made by a newer msgline than this one: its schema is unknown here.
fn loadable(version: i64) -> anyhow::Result<()> {
    anyhow::ensure!(
        version <= migrate::latest(),
        "the backup has schema version {version}, newer than this msgline's {}: restore it with a msgline at least as new as the one that made it",
        migrate::latest()
    );
    Ok(())
}

/// The sentence a restore into a database holding rows ends with (`tables` names some of them).
fn not_empty(tables: &[String]) -> anyhow::Error {
    let shown: Vec<&str> = tables.iter().take(5).map(String::as_str).collect();
    anyhow::anyhow!(
        "the database is not empty (rows in {}): msgline restores only into an empty database; \
         create a new one (a new SQLite file, or `createdb` on PostgreSQL) and point MSGLINE_DATABASE_URL at it",
        shown.join(", ")
    )
}

/// The table that records applied migrations; a restore writes it itself.
const MIGRATIONS_TABLE: &str = "msgline_migrations";

fn partial_path(to: &Path) -> PathBuf {
    let mut name = to.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".partial");
    to.with_file_name(name)
}

fn engine_name(url: &str) -> &'static str {
    if url.starts_with("sqlite:") { "sqlite" } else { "postgres" }
}

fn round_ms(elapsed: std::time::Duration) -> f64 {
    (elapsed.as_secs_f64() * 1000.0).round() / 1000.0
}
