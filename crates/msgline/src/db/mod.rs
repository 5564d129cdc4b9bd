//! The storage layer: one set of queries for SQLite and PostgreSQL through sqlx's `Any` driver.
//!
//! SQL here is written in the dialect both engines accept: `$1`-style parameters (in order of
//! first use), `ON CONFLICT`, `RETURNING`, integer milliseconds for time, text ids. The few places
//! where the engines differ ask [`Db::backend`].
//!
//! Code outside `db` comes in through one door: the table modules' functions, a [`Batch`] handed
//! to [`Db::commit`], [`Db::transaction`], [`write_returning`], and [`Db::read`] / [`Db::write`]
//! for a connection lent for a few statements. The pools stay here (the architecture test checks that nothing outside
//! calls them), so which engine runs a unit, and how, is decided in one place.

pub mod agents;
pub mod attachments;
pub mod attempts;
pub mod availability;
pub mod backup;
pub mod bench;
pub mod bridge_refs;
pub mod contacts;
pub mod conversations;
pub mod dial_in;
mod engine;
pub mod events;
pub mod fallback;
pub mod feed;
pub mod group_changes;
pub mod idempotency;
pub mod keys;
pub mod line_sends;
pub mod lines;
pub mod message_actions;
pub mod message_view;
pub mod messages;
mod migrate;
pub mod moves;
mod opt_out_checks;
pub mod opt_outs;
pub mod orgs;
pub mod outbox;
mod page;
pub mod polls;
pub mod pools;
pub mod reactions;
pub mod reports;
pub mod retention;
pub mod staff;
pub mod stats;
pub mod typing;
pub mod unrouted;
pub mod webhook_deliveries;
pub mod webhook_fan_out;
pub mod webhooks;

pub use engine::{Arg, Batch, planner};
use engine::{group_commit::GroupWriter, native};
pub use page::{ListQuery, Page, Paged};

use std::time::Duration;

use sqlx::{
    AnyConnection, AnyPool, Executor,
    any::{AnyPoolOptions, install_default_drivers},
};

#[cfg(feature = "testing")]
pub use migrate::MIGRATIONS;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// Shared commits for writes that read nothing back.
    group: Option<GroupWriter<reports::LineReports>>,
    /// On a SQLite file: readers that map rows on their own thread (see [`Db::read_rows`]).
    native_readers: Option<std::sync::Arc<native::Readers>>,
    /// On PostgreSQL: connections of the PostgreSQL driver itself for [`Db::read_rows`], whose
    /// rows are read as they come instead of being copied into the generic driver's rows.
    pg_readers: Option<sqlx::PgPool>,
    /// On PostgreSQL: the sends' opt-out checks, asked many at a time.
    opt_out_checks: Option<opt_out_checks::Checks>,
}

// As the committer's (see `native::WRITER_PRAGMAS`): wait for another writer, don't fail.
const SQLITE_WRITER_PRAGMAS: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
     PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 30000;";
// Readers, sqlx's and the native ones alike, open the file read-write (a read-only open of a WAL
// database can stall in the busy handler) and refuse writes with query_only; a small page cache
// each, since the operating system caches the file too.
const SQLITE_READER_PRAGMAS: &str = "PRAGMA busy_timeout = 5000; PRAGMA query_only = ON; PRAGMA cache_size = -1000;";

impl Db {
    /// Connects to `sqlite://PATH` (creating the file) or `postgres://...`.
    pub async fn connect(url: &str) -> anyhow::Result<Db> {
        Self::open(url, true).await
    }

    /// As [`Db::connect`], for a command or the bench's own reads beside a server: on a SQLite
    /// file it keeps no checkpointer, whose copies would take the checkpoint lock from the
    /// server's. The server's keeps the log short; with no server, the last connection to close
    /// copies the log back, as SQLite does.
    pub async fn connect_for_command(url: &str) -> anyhow::Result<Db> {
        Self::open(url, false).await
    }

    async fn open(url: &str, checkpointer: bool) -> anyhow::Result<Db> {
        install_default_drivers();
        if url.starts_with("sqlite:") {
            let file = native::file_of(url);
            // With a file, the committer's checkpointer copies the log back; in memory, SQLite does.
            let pragmas = if file.is_some() {
                // The committer makes most writes; this connection, the transactions that read as
                // they write, gets a smaller page cache than SQLite's default 2 MB.
                format!("PRAGMA journal_mode = WAL; {} PRAGMA cache_size = -1000;", native::WRITER_PRAGMAS)
            } else {
                SQLITE_WRITER_PRAGMAS.to_string()
            };
            let writer = AnyPoolOptions::new()
                .max_connections(1)
                .min_connections(1)
                // A ping before every use costs a round trip to the connection's thread.
                .test_before_acquire(false)
                .acquire_timeout(Duration::from_secs(30))
                .after_connect(move |conn, _| {
                    let pragmas = pragmas.clone();
                    Box::pin(async move {
                        conn.execute(sqlx::raw_sql(&pragmas)).await?;
                        Ok(())
                    })
                })
                .connect(&with_mode(url, "rwc"))
                .await
                .map_err(|e| anyhow::anyhow!("cannot open the SQLite database: {e}"))?;
            // Lists and the busiest reads go through the native readers (`read_rows`); these
            // serve the rest.
            let reader = AnyPoolOptions::new()
                .max_connections(2)
                .test_before_acquire(false)
                .acquire_timeout(Duration::from_secs(30))
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        conn.execute(sqlx::raw_sql(SQLITE_READER_PRAGMAS)).await?;
                        Ok(())
                    })
                })
                .connect_lazy(&with_mode(url, "rw"))?;
            let group = Some(match &file {
                Some(file) => GroupWriter::start_sqlite(writer.clone(), file, checkpointer)?,
                None => GroupWriter::start_in_memory(writer.clone()),
            });
            let native_readers = file.map(|file| std::sync::Arc::new(native::Readers::new(file)));
            Ok(Db {
                writer,
                reader,
                backend: Backend::Sqlite,
                group,
                native_readers,
                pg_readers: None,
                opt_out_checks: None,
            })
        } else {
            let pool = AnyPoolOptions::new()
                .max_connections(16)
                .test_before_acquire(false)
                .acquire_timeout(Duration::from_secs(30))
                .connect(url)
                .await
                .map_err(|e| anyhow::anyhow!("cannot connect to PostgreSQL: {e}"))?;
            // One lane moves messages; one carries the rest (sends, webhook deliveries). A second
            // and third lane for the rest made smaller groups, so more statements per message:
            // the database spent more CPU for fewer sends.
            let group = Some(GroupWriter::start_postgres(url, 2)?);
            let pg_readers = sqlx::postgres::PgPoolOptions::new()
                .max_connections(4)
                .test_before_acquire(false)
                .acquire_timeout(Duration::from_secs(30))
                .connect_lazy(url)?;
            Ok(Db {
                writer: pool.clone(),
                reader: pool,
                backend: Backend::Postgres,
                group,
                native_readers: None,
                opt_out_checks: Some(opt_out_checks::Checks::start(pg_readers.clone())),
                pg_readers: Some(pg_readers),
            })
        }
    }

    /// The pool for writes (and for reads that must see a write just made). Only `db` holds
    /// the pools: outside it, [`Db::write`] lends a connection of this one.
    pub(in crate::db) fn writer(&self) -> &AnyPool {
        &self.writer
    }

    /// The pool for reads; outside `db`, [`Db::read`] lends a connection of it.
    pub(in crate::db) fn reader(&self) -> &AnyPool {
        &self.reader
    }

    /// The writer pool itself, for the integration tests alone: they count rows, change them and
    /// break tables on purpose, which the product does only through `db`'s operations.
    #[cfg(feature = "testing")]
    pub fn writer_for_tests(&self) -> &AnyPool {
        &self.writer
    }

    /// The reader pool itself, for the integration tests alone (see [`Db::writer_for_tests`]).
    #[cfg(feature = "testing")]
    pub fn reader_for_tests(&self) -> &AnyPool {
        &self.reader
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The rows of a read, each through `map`: on a SQLite file read and mapped on a thread of
    /// its own, elsewhere through the reader pool.
    pub async fn read_rows<T: Send + 'static>(
        &self,
        sql: String,
        args: Vec<Arg>,
        map: fn(&dyn Columns) -> sqlx::Result<T>,
    ) -> sqlx::Result<Vec<T>> {
        if let Some(readers) = &self.native_readers {
            return readers.query(sql, args, map).await;
        }
        if let Some(readers) = &self.pg_readers {
            let rows = engine::batch::bind(sqlx::query::<sqlx::Postgres>(&sql), args).fetch_all(readers).await?;
            return rows.iter().map(|row| map(&PgNamed::new(row))).collect();
        }
        let rows = engine::batch::bind(sqlx::query(&sql), args).fetch_all(&self.reader).await?;
        rows.iter().map(|row| map(row)).collect()
    }

    /// On PostgreSQL, where the sends' opt-out checks are asked together.
    fn opt_out_checks(&self) -> Option<&opt_out_checks::Checks> {
        self.opt_out_checks.as_ref()
    }

    /// The group committer.
    fn group(&self) -> Option<&GroupWriter<reports::LineReports>> {
        self.group.as_ref()
    }

    /// Commits a unit of work that reads nothing back, and returns once it is durable. Where it
    /// runs is the database's choice, not the caller's: on a SQLite file the committer thread;
    /// on PostgreSQL the lane that moves messages if the unit changes existing messages (so that
    /// two commits never wait on each other's row locks), else any other lane; in memory the
    /// single lane. Many units share one commit.
    pub async fn commit(&self, batch: Batch) -> sqlx::Result<()> {
        match self.group() {
            Some(group) => group.commit(batch).await,
            None => self.commit_alone(batch).await,
        }
    }

    /// Commits the batch unless one of its refusals finds a row ([`Batch::refuse_if_found`]):
    /// `None` when committed, else the row's `refused`, and nothing written.
    pub async fn commit_or_refuse(&self, batch: Batch) -> sqlx::Result<Option<String>> {
        if let Some(group) = self.group().filter(|_| self.refuses_in_commit()) {
            return group.commit_or_refuse(batch).await;
        }
        for (sql, args) in batch.refusals() {
            let found = self.read_rows(sql.to_string(), args.clone(), |row| row.text("refused")).await?;
            if let Some(first) = found.into_iter().next() {
                return Ok(Some(first));
            }
        }
        self.commit(batch).await.map(|()| None)
    }

    /// Whether refusals run inside the commit (SQLite's committer thread, PostgreSQL's lanes), so
    /// that a check staged as one costs no read of its own. The send path does not ask: it calls
    /// [`opt_outs::check_now_or_at_commit`], which does.
    pub(in crate::db) fn refuses_in_commit(&self) -> bool {
        self.group().is_some_and(|group| group.native_lane().is_some() || self.backend == Backend::Postgres)
    }

    async fn commit_alone(&self, batch: Batch) -> sqlx::Result<()> {
        let mut tx = self.begin().await?;
        batch.execute(&mut tx).await?;
        tx.commit().await
    }

    /// Begins a transaction on the writer pool.
    ///
    /// On SQLite the transaction takes the write lock as it begins. A transaction that has read
    /// and then writes asks for the lock without waiting for it (SQLite cannot tell whether
    /// waiting would deadlock): while the checkpointer held it for a truncating checkpoint,
    /// such transactions failed with `database is locked`. Taken first, the lock is waited for.
    pub(in crate::db) async fn begin(&self) -> sqlx::Result<sqlx::Transaction<'static, sqlx::Any>> {
        match self.backend {
            Backend::Sqlite => self.writer.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => self.writer.begin().await,
        }
    }

    /// Runs a unit of work that reads as it writes in one transaction of its own (see
    /// `Db::begin`): committed if `work` succeeds, rolled back if it fails.
    pub async fn transaction<T, E>(&self, work: impl AsyncFnOnce(&mut AnyConnection) -> Result<T, E>) -> Result<T, E>
    where
        E: From<sqlx::Error>,
    {
        let mut tx = self.begin().await?;
        let value = work(&mut tx).await?;
        tx.commit().await?;
        Ok(value)
    }

    /// Runs `work` on a connection of the readers, for a few reads that may miss a write made a
    /// moment ago (on SQLite the readers are connections of their own, and refuse writes). The
    /// connection goes back to its pool when `work` ends.
    pub async fn read<T, E>(&self, work: impl AsyncFnOnce(&mut AnyConnection) -> Result<T, E>) -> Result<T, E>
    where
        E: From<sqlx::Error>,
    {
        let mut conn = self.reader.acquire().await?;
        work(&mut conn).await
    }

    /// Runs `work` on the writer's connection, each statement committed on its own (autocommit):
    /// for a single write that needs no shared commit ([`Db::commit`]), and for reads that must
    /// see a write just made.
    /// On SQLite the writer is one connection, so `work` holds it as briefly as it can; a unit
    /// that writes after reading belongs in [`Db::transaction`].
    pub async fn write<T, E>(&self, work: impl AsyncFnOnce(&mut AnyConnection) -> Result<T, E>) -> Result<T, E>
    where
        E: From<sqlx::Error>,
    {
        let mut conn = self.writer.acquire().await?;
        work(&mut conn).await
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
        if let Some(readers) = &self.pg_readers {
            readers.close().await;
        }
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

/// A row's columns by name, whether it was read through sqlx or on the committer thread.
pub trait Columns {
    fn opt_text(&self, column: &str) -> sqlx::Result<Option<String>>;
    fn opt_int(&self, column: &str) -> sqlx::Result<Option<i64>>;

    fn text(&self, column: &str) -> sqlx::Result<String> {
        self.opt_text(column)?.ok_or_else(|| null_column(column))
    }

    fn int(&self, column: &str) -> sqlx::Result<i64> {
        self.opt_int(column)?.ok_or_else(|| null_column(column))
    }
}

/// A column holding one of a type's names (a status, a kind), as that type.
pub fn parsed<T>(row: &(impl Columns + ?Sized), column: &str) -> sqlx::Result<T>
where
    T: std::str::FromStr,
    T::Err: std::error::Error + Send + Sync + 'static,
{
    row.text(column)?
        .parse()
        .map_err(|e: T::Err| sqlx::Error::ColumnDecode { index: column.to_string(), source: Box::new(e) })
}

fn null_column(column: &str) -> sqlx::Error {
    sqlx::Error::ColumnDecode { index: column.to_string(), source: "unexpected NULL".into() }
}

impl Columns for sqlx::any::AnyRow {
    fn opt_text(&self, column: &str) -> sqlx::Result<Option<String>> {
        sqlx::Row::try_get(self, column)
    }

    fn opt_int(&self, column: &str) -> sqlx::Result<Option<i64>> {
        sqlx::Row::try_get(self, column)
    }
}

/// Where `column` stands among a row's `columns`, by `name` (case-insensitively, as SQLite's are),
/// trying the one after the last found first: readers mostly take the columns in their order.
fn column_index<T>(
    next: &std::cell::Cell<usize>,
    columns: &[T],
    name: impl Fn(&T) -> &str,
    column: &str,
) -> Option<usize> {
    let start = next.get();
    let found = match columns.get(start) {
        Some(at) if name(at).eq_ignore_ascii_case(column) => Some(start),
        _ => columns.iter().position(|at| name(at).eq_ignore_ascii_case(column)),
    };
    if let Some(index) = found {
        next.set(index + 1);
    }
    found
}

/// A PostgreSQL row whose columns are found by position. sqlx's lookup by name hashes the name
/// into the statement's map on every call; a page of 50 messages makes about a thousand, which
/// were a tenth of the server's CPU in the `read` bench.
struct PgNamed<'r> {
    row: &'r sqlx::postgres::PgRow,
    next: std::cell::Cell<usize>,
}

impl<'r> PgNamed<'r> {
    fn new(row: &'r sqlx::postgres::PgRow) -> Self {
        Self { row, next: Default::default() }
    }

    fn get<T>(&self, column: &str) -> sqlx::Result<T>
    where
        T: for<'a> sqlx::Decode<'a, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
    {
        use sqlx::{Column, Row};
        let index = column_index(&self.next, self.row.columns(), |c| c.name(), column)
            .ok_or_else(|| sqlx::Error::ColumnNotFound(column.into()))?;
        self.row.try_get(index)
    }
}

impl Columns for PgNamed<'_> {
    fn opt_text(&self, column: &str) -> sqlx::Result<Option<String>> {
        self.get(column)
    }

    fn opt_int(&self, column: &str) -> sqlx::Result<Option<i64>> {
        self.get(column)
    }
}

/// Runs a statement that writes and reads back (`UPDATE … RETURNING`): on a SQLite file as a
/// unit of a shared commit, elsewhere on the writer. Each row is read through `map`.
pub async fn write_returning<T: Send + 'static>(
    db: &Db,
    sql: String,
    args: Vec<Arg>,
    map: fn(&dyn Columns) -> sqlx::Result<T>,
) -> sqlx::Result<Vec<T>> {
    if let Some(lane) = db.group().and_then(|g| g.native_lane()) {
        return lane.run(move |conn| native::rows(conn, &sql, &args, |row| map(row))).await;
    }
    let rows = engine::batch::bind(sqlx::query(&sql), args).fetch_all(db.writer()).await?;
    rows.iter().map(|row| map(row)).collect()
}

/// Tells the instances listening on this PostgreSQL `payload` on `channel` (`NOTIFY`), when the
/// transaction `executor` runs in commits (at once outside one). Nothing on SQLite, which one
/// instance serves.
async fn notify<'e>(
    backend: Backend,
    executor: impl sqlx::Executor<'e, Database = sqlx::Any>,
    channel: &'static str,
    payload: &str,
) -> sqlx::Result<()> {
    if backend == Backend::Postgres {
        sqlx::query("SELECT pg_notify($1, $2)").bind(channel).bind(payload.to_string()).execute(executor).await?;
    }
    Ok(())
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

impl Backend {
    /// The engine behind a connection.
    pub fn of(conn: &sqlx::AnyConnection) -> Backend {
        if conn.backend_name().eq_ignore_ascii_case("sqlite") { Backend::Sqlite } else { Backend::Postgres }
    }

    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Db;

    /// A transaction that reads and then writes must wait for another connection holding the
    /// write lock (on a SQLite file the checkpointer takes it for a truncating checkpoint), not
    /// fail with `database is locked`: SQLite does not wait when a read transaction asks for
    /// the write lock, so the transaction must take it first.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn transactions_that_read_then_write_wait_for_the_write_lock_instead_of_failing() {
        use std::sync::{
            Arc,
            atomic::{AtomicBool, Ordering},
        };
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.db");
        let db = Db::connect(&format!("sqlite://{}", file.display())).await.unwrap();
        sqlx::query("CREATE TABLE counters (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
            .execute(db.writer())
            .await
            .unwrap();
        sqlx::query("INSERT INTO counters (id, n) VALUES (1, 0)").execute(db.writer()).await.unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let holder = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let conn = rusqlite::Connection::open(&file).unwrap();
                conn.execute_batch("PRAGMA busy_timeout = 30000").unwrap();
                while !stop.load(Ordering::Relaxed) {
                    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    conn.execute_batch("COMMIT").unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            })
        };
        let mut failures = Vec::new();
        for _ in 0..200 {
            let outcome: sqlx::Result<()> = db
                .transaction(async |tx| {
                    let (n,): (i64,) =
                        sqlx::query_as("SELECT n FROM counters WHERE id = 1").fetch_one(&mut *tx).await?;
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                    sqlx::query("UPDATE counters SET n = $1 WHERE id = 1").bind(n + 1).execute(&mut *tx).await?;
                    Ok(())
                })
                .await;
            if let Err(error) = outcome {
                failures.push(error.to_string());
            }
        }
        stop.store(true, Ordering::Relaxed);
        holder.join().unwrap();
        assert!(failures.is_empty(), "{} of 200 transactions failed, first: {}", failures.len(), failures[0]);
        let (n,): (i64,) = sqlx::query_as("SELECT n FROM counters WHERE id = 1").fetch_one(db.writer()).await.unwrap();
        assert_eq!(n, 200);
    }
}
