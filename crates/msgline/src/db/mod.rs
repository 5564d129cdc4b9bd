//! The storage layer: one set of queries for SQLite and PostgreSQL through sqlx's `Any` driver.
//!
//! SQL here is written in the dialect both engines accept: `$1`-style parameters (in order of
//! first use), `ON CONFLICT`, `RETURNING`, integer milliseconds for time, text ids. The few places
//! where the engines differ ask [`Db::backend`].

pub mod attempts;
pub mod contacts;
pub mod conversations;
pub mod events;
pub mod idempotency;
pub mod keys;
pub mod lines;
pub mod messages;
mod migrate;
pub mod orgs;
pub mod outbox;
mod page;
pub mod polls;
pub mod webhook_deliveries;
pub mod webhooks;

pub use page::{Page, Paged};

use std::time::Duration;

use sqlx::{
    AnyPool, Executor,
    any::{AnyPoolOptions, install_default_drivers},
};

pub use migrate::MIGRATIONS;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Handles to the database. On SQLite all writes go through one connection (several writers
/// only contend for the file lock) and reads through a small pool; on PostgreSQL both are the
/// same pool.
#[derive(Clone)]
pub struct Db {
    writer: AnyPool,
    reader: AnyPool,
    backend: Backend,
}

const SQLITE_WRITER_PRAGMAS: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
     PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;";
const SQLITE_READER_PRAGMAS: &str = "PRAGMA busy_timeout = 5000;";

impl Db {
    /// Connects to `sqlite://PATH` (creating the file) or `postgres://...`.
    pub async fn connect(url: &str) -> anyhow::Result<Db> {
        install_default_drivers();
        if url.starts_with("sqlite:") {
            let writer = AnyPoolOptions::new()
                .max_connections(1)
                .min_connections(1)
                .acquire_timeout(Duration::from_secs(30))
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        conn.execute(sqlx::raw_sql(SQLITE_WRITER_PRAGMAS)).await?;
                        Ok(())
                    })
                })
                .connect(&with_mode(url, "rwc"))
                .await
                .map_err(|e| anyhow::anyhow!("cannot open the SQLite database: {e}"))?;
            let reader = AnyPoolOptions::new()
                .max_connections(4)
                .acquire_timeout(Duration::from_secs(30))
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        conn.execute(sqlx::raw_sql(SQLITE_READER_PRAGMAS)).await?;
                        Ok(())
                    })
                })
                .connect_lazy(&with_mode(url, "ro"))?;
            Ok(Db { writer, reader, backend: Backend::Sqlite })
        } else {
            let pool = AnyPoolOptions::new()
                .max_connections(16)
                .acquire_timeout(Duration::from_secs(30))
                .connect(url)
                .await
                .map_err(|e| anyhow::anyhow!("cannot connect to PostgreSQL: {e}"))?;
            Ok(Db { writer: pool.clone(), reader: pool, backend: Backend::Postgres })
        }
    }

    /// The pool for writes (and for reads that must see a write just made).
    pub fn writer(&self) -> &AnyPool {
        &self.writer
    }

    /// The pool for reads.
    pub fn reader(&self) -> &AnyPool {
        &self.reader
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Applies every migration not yet applied; returns the names of those it applied.
    pub async fn migrate(&self) -> anyhow::Result<Vec<&'static str>> {
        migrate::run(self).await
    }

    /// Whether the database answers a trivial query.
    pub async fn ping(&self) -> bool {
        sqlx::query("SELECT 1").execute(&self.reader).await.is_ok()
    }

    pub async fn close(&self) {
        self.reader.close().await;
        self.writer.close().await;
    }
}

fn with_mode(url: &str, mode: &str) -> String {
    if url.contains("mode=") {
        url.to_string()
    } else if url.contains('?') {
        format!("{url}&mode={mode}")
    } else {
        format!("{url}?mode={mode}")
    }
}

/// Escapes `%`, `_` and `\` for a `LIKE ... ESCAPE '\'` pattern.
pub fn like_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Whether a database error is a unique-constraint violation.
pub fn is_unique_violation(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(db) => {
            db.kind() == sqlx::error::ErrorKind::UniqueViolation
                || db.code().is_some_and(|c| c == "23505" || c == "2067" || c == "1555")
        }
        _ => false,
    }
}
