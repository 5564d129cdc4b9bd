//! Shared commits on SQLite, run on a thread of their own with a direct connection to the file.
//!
//! Through sqlx every statement is a hand-off between the async task and the connection's
//! worker thread, and with a single writer those hand-offs, not the statements, set how many
//! messages a second the file can take. Here a whole group of requests' batches is one
//! hand-off: the committer thread runs every statement from its cache of prepared statements
//! and commits once.
//!
//! SQLite takes one writer at a time. The committer keeps to that by holding the pool's only
//! writer connection while its thread writes, so sqlx writes and shared commits queue for the
//! same connection and never meet in SQLite's busy handler.
//!
//! A third connection, on a thread of its own, checkpoints the log four times a second without
//! taking the write lock, so no request waits for a checkpoint's fsync.

use std::{borrow::Cow, path::PathBuf};

use rusqlite::{Connection, ffi};
use sqlx::AnyPool;
use tokio::sync::{mpsc, oneshot};

use super::{Arg, group_commit::Job};

/// What every connection that writes to the file sets. Checkpoints (copying the write-ahead
/// log back into the database file, with an fsync) run on a thread of their own instead of
/// inside whichever commit crosses the log's size limit.
pub const WRITER_PRAGMAS: &str = "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; \
     PRAGMA busy_timeout = 5000; PRAGMA wal_autocheckpoint = 0;";

/// How often the checkpointer copies the log into the database file.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// The file behind a `sqlite://` URL, or `None` for an in-memory database (which a second
/// connection could not see).
pub fn file_of(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or_default();
    (!path.is_empty() && !path.contains(":memory:")).then(|| PathBuf::from(path))
}

/// Opens the committer's connection and starts its thread; returns the lane's queue.
pub fn start(writer: AnyPool, file: &std::path::Path, depth: usize) -> anyhow::Result<mpsc::Sender<Job>> {
    let conn = Connection::open_with_flags(file, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE)
        .map_err(|e| anyhow::anyhow!("cannot open the SQLite database for shared commits: {e}"))?;
    conn.execute_batch(WRITER_PRAGMAS)?;
    conn.set_prepared_statement_cache_capacity(128);
    let checkpoints = Connection::open_with_flags(file, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE)?;
    checkpoints.execute_batch("PRAGMA busy_timeout = 5000;")?;
    let alive = std::sync::Arc::new(());
    let watched = std::sync::Arc::downgrade(&alive);
    let (work, groups) = std::sync::mpsc::channel::<(Vec<Job>, oneshot::Sender<()>)>();
    std::thread::Builder::new().name("msgline-commit".into()).spawn(move || {
        let _alive = alive;
        while let Ok((jobs, finished)) = groups.recv() {
            commit_group(&conn, jobs);
            let _ = finished.send(());
        }
    })?;
    std::thread::Builder::new().name("msgline-checkpoint".into()).spawn(move || {
        while watched.strong_count() > 0 {
            std::thread::sleep(CHECKPOINT_EVERY);
            if let Err(error) = checkpoints.execute_batch("PRAGMA wal_checkpoint(PASSIVE);") {
                tracing::warn!(error = %error, "WAL checkpoint failed");
            }
        }
    })?;
    let (jobs, rx) = mpsc::channel(depth);
    tokio::spawn(lane(writer, rx, work));
    Ok(jobs)
}

async fn lane(
    writer: AnyPool,
    mut rx: mpsc::Receiver<Job>,
    work: std::sync::mpsc::Sender<(Vec<Job>, oneshot::Sender<()>)>,
) {
    let mut group = Vec::with_capacity(super::group_commit::MAX_GROUP);
    while rx.recv_many(&mut group, super::group_commit::MAX_GROUP).await > 0 {
        let jobs: Vec<Job> = std::mem::take(&mut group);
        // The write lock: no sqlx write runs while the committer's thread writes.
        let held = match writer.acquire().await {
            Ok(conn) => conn,
            Err(error) => {
                tracing::error!(error = %error, "group commit could not take the writer");
                for job in jobs {
                    let _ = job.done.send(Err(sqlx::Error::PoolTimedOut));
                }
                continue;
            }
        };
        let (finished, wait) = oneshot::channel();
        if work.send((jobs, finished)).is_err() {
            break;
        }
        let _ = wait.await;
        drop(held);
    }
}

fn commit_group(conn: &Connection, jobs: Vec<Job>) {
    let shared = (|| {
        conn.execute_batch("BEGIN IMMEDIATE")?;
        for job in &jobs {
            run(conn, job)?;
        }
        conn.execute_batch("COMMIT")
    })();
    match shared {
        Ok(()) => {
            for job in jobs {
                let _ = job.done.send(Ok(()));
            }
        }
        Err(_) => {
            let _ = conn.execute_batch("ROLLBACK");
            // One at a time, each in its own transaction, so that each request gets its answer.
            for job in jobs {
                let alone = (|| {
                    conn.execute_batch("BEGIN IMMEDIATE")?;
                    run(conn, &job)?;
                    conn.execute_batch("COMMIT")
                })();
                if alone.is_err() {
                    let _ = conn.execute_batch("ROLLBACK");
                }
                let _ = job.done.send(alone.map_err(into_sqlx));
            }
        }
    }
}

/// Runs one request's statements, binding `$N` to the N-th argument.
fn run(conn: &Connection, job: &Job) -> rusqlite::Result<()> {
    for (sql, args) in job.batch.statements() {
        let mut statement = conn.prepare_cached(sql)?;
        for (n, arg) in args.iter().enumerate() {
            let Some(index) = statement.parameter_index(&format!("${}", n + 1))? else { continue };
            match arg {
                Arg::Text(value) => statement.raw_bind_parameter(index, value.as_deref())?,
                Arg::Int(value) => statement.raw_bind_parameter(index, *value)?,
            }
        }
        statement.raw_execute()?;
    }
    Ok(())
}

/// A failed statement, in the form the rest of the storage layer reads errors in.
#[derive(Debug)]
struct Failure {
    message: String,
    /// SQLite's extended result code.
    code: Option<i32>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

impl sqlx::error::DatabaseError for Failure {
    fn message(&self) -> &str {
        &self.message
    }

    fn code(&self) -> Option<Cow<'_, str>> {
        self.code.map(|code| Cow::Owned(code.to_string()))
    }

    fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self
    }

    fn kind(&self) -> sqlx::error::ErrorKind {
        match self.code {
            Some(ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY) => {
                sqlx::error::ErrorKind::UniqueViolation
            }
            Some(ffi::SQLITE_CONSTRAINT_FOREIGNKEY) => sqlx::error::ErrorKind::ForeignKeyViolation,
            Some(ffi::SQLITE_CONSTRAINT_NOTNULL) => sqlx::error::ErrorKind::NotNullViolation,
            Some(ffi::SQLITE_CONSTRAINT_CHECK) => sqlx::error::ErrorKind::CheckViolation,
            _ => sqlx::error::ErrorKind::Other,
        }
    }
}

fn into_sqlx(error: rusqlite::Error) -> sqlx::Error {
    let code = match &error {
        rusqlite::Error::SqliteFailure(failure, _) => Some(failure.extended_code),
        _ => None,
    };
    sqlx::Error::Database(Box::new(Failure { message: error.to_string(), code }))
}

#[cfg(test)]
mod tests {
    use super::file_of;

    #[test]
    fn the_file_is_read_from_the_url() {
        assert_eq!(file_of("sqlite://msgline.db").unwrap().to_str(), Some("msgline.db"));
        assert_eq!(file_of("sqlite:///tmp/x/a.db?mode=rwc").unwrap().to_str(), Some("/tmp/x/a.db"));
        assert_eq!(file_of("sqlite::memory:"), None);
        assert_eq!(file_of("postgres://localhost/x"), None);
    }
}
