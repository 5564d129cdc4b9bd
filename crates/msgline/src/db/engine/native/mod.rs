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
//! taking the write lock, so no request waits for a checkpoint's fsync; and keeps the log's size
//! bounded, with the committer's help (see [`checkpoint::Checkpoints`]).

use std::{borrow::Cow, path::PathBuf};

use rusqlite::{Connection, ffi};
use sqlx::AnyPool;
use tokio::sync::{mpsc, oneshot};

use super::{Arg, MAX_GROUP};

mod checkpoint;
use checkpoint::{CHECKPOINT_EVERY, CHECKPOINTER_PRAGMAS, COMMITTER_PATIENCE, Checkpoints, LOG_LIMIT_PAGES};

/// What every connection that writes to the file sets. A writer waits up to 30 s for another
/// process that holds the file's write lock (a bench's seeder, an operator's `sqlite3`) instead
/// of failing with `database is locked`. Checkpoints (copying the write-ahead
/// log back into the database file, with an fsync) run on a thread of their own instead of
/// inside whichever commit crosses the log's size limit. A log file left longer than 128 MiB
/// (twice [`checkpoint::LOG_LIMIT_PAGES`]) is cut back to that when the log starts over.
pub const WRITER_PRAGMAS: &str = "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; \
     PRAGMA busy_timeout = 30000; PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = 134217728;";

/// Each connection here is used by one thread at a time, so SQLite's own per-call mutex is
/// left out.
fn open_flags() -> rusqlite::OpenFlags {
    rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
}

/// The file behind a `sqlite://` URL, or `None` for an in-memory database (which a second
/// connection could not see).
pub fn file_of(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or_default();
    (!path.is_empty() && !path.contains(":memory:")).then(|| PathBuf::from(path))
}

/// One request's work in a shared commit: it runs on the committer thread, and is answered
/// once the commit is durable (or has failed). A unit may run more than once: when another
/// unit of its group fails, the group is rolled back and run again (see [`commit_group`]).
pub trait Unit: Send {
    fn run(&mut self, conn: &Connection) -> rusqlite::Result<()>;
    fn answer(self: Box<Self>, result: sqlx::Result<()>);
}

struct Typed<F, T> {
    work: F,
    output: Option<T>,
    done: oneshot::Sender<sqlx::Result<T>>,
}

impl<F, T> Unit for Typed<F, T>
where
    F: FnMut(&Connection) -> rusqlite::Result<T> + Send,
    T: Send,
{
    fn run(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        self.output = Some((self.work)(conn)?);
        Ok(())
    }

    fn answer(self: Box<Self>, result: sqlx::Result<()>) {
        let Typed { output, done, .. } = *self;
        let _ = done.send(result.and_then(|()| output.ok_or(sqlx::Error::WorkerCrashed)));
    }
}

/// A unit of work and where its answer arrives.
pub fn unit<T: Send + 'static>(
    work: impl FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
) -> (Box<dyn Unit>, oneshot::Receiver<sqlx::Result<T>>) {
    let (done, answer) = oneshot::channel();
    (Box::new(Typed { work, output: None, done }), answer)
}

/// Opens the committer's connection and starts its thread, and with `checkpointer` the thread
/// that keeps the log short; returns the committer's queue.
pub fn start(
    writer: AnyPool,
    file: &std::path::Path,
    depth: usize,
    checkpointer: bool,
) -> anyhow::Result<mpsc::Sender<Box<dyn Unit>>> {
    let conn = Connection::open_with_flags(file, open_flags())
        .map_err(|e| anyhow::anyhow!("cannot open the SQLite database for shared commits: {e}"))?;
    conn.execute_batch(WRITER_PRAGMAS)?;
    // Savepoints keep their undo pages in memory, not in a temporary file written page by page.
    conn.execute_batch("PRAGMA temp_store = MEMORY; PRAGMA cache_size = -4000;")?;
    conn.set_prepared_statement_cache_capacity(128);
    let checkpoints = match checkpointer {
        true => {
            let checkpoints = Connection::open_with_flags(file, open_flags())?;
            checkpoints.execute_batch(CHECKPOINTER_PRAGMAS)?;
            Some(checkpoints)
        }
        false => None,
    };
    let shared = std::sync::Arc::new(Checkpoints::default());
    let watched = std::sync::Arc::downgrade(&shared);
    let (units, queue) = mpsc::channel::<Box<dyn Unit>>(depth);
    let runtime = tokio::runtime::Handle::current();
    std::thread::Builder::new().name("msgline-commit".into()).spawn(move || {
        // Taking the pool's writer, and giving it back (which spawns a task), need the runtime.
        let _runtime = runtime.enter();
        commit_while_queued(&conn, &writer, &runtime, queue, &shared);
    })?;
    if let Some(checkpoints) = checkpoints {
        std::thread::Builder::new().name("msgline-checkpoint".into()).spawn(move || {
            loop {
                std::thread::sleep(CHECKPOINT_EVERY);
                let Some(shared) = watched.upgrade() else { break };
                if let Err(error) = shared.turn(&checkpoints, LOG_LIMIT_PAGES, COMMITTER_PATIENCE) {
                    tracing::warn!(error = %error, "WAL checkpoint failed");
                }
            }
        })?;
    }
    Ok(units)
}

/// Longest the committer keeps the writer while units keep coming: then it gives the writer back
/// to the pool, so that a write through sqlx (a worker's claim, an admin route) that waits for it
/// runs between two commits, and takes it again.
const WRITER_SLICE: std::time::Duration = std::time::Duration::from_millis(5);

/// The committer's loop: takes the units queued, commits them as one group, and goes on with the
/// units that queued meanwhile, holding the writer from group to group.
///
/// The thread takes its units and the writer itself. When an async task did both for it, every
/// commit waited for that task to be scheduled twice (to take the writer, after the last commit
/// handed it back) on the runtime's workers, behind the requests they were serving: under
/// `wrk-send` the committer then sat idle 0.9 ms between commits that took 1.2 ms.
fn commit_while_queued(
    conn: &Connection,
    writer: &AnyPool,
    runtime: &tokio::runtime::Handle,
    mut queue: mpsc::Receiver<Box<dyn Unit>>,
    checkpoints: &Checkpoints,
) {
    let mut group: Vec<Box<dyn Unit>> = Vec::with_capacity(MAX_GROUP);
    while let Some(first) = queue.blocking_recv() {
        group.push(first);
        // The write lock: no sqlx write runs while this thread writes.
        let held = match writer.try_acquire() {
            Some(conn) => Ok(conn),
            None => runtime.block_on(writer.acquire()),
        };
        let held = match held {
            Ok(held) => held,
            Err(error) => {
                tracing::error!(error = %error, "group commit could not take the writer");
                group.drain(..).for_each(|unit| unit.answer(Err(sqlx::Error::PoolTimedOut)));
                continue;
            }
        };
        let taken = std::time::Instant::now();
        loop {
            while group.len() < MAX_GROUP
                && let Ok(unit) = queue.try_recv()
            {
                group.push(unit);
            }
            if group.is_empty() {
                break;
            }
            commit_group(conn, std::mem::replace(&mut group, Vec::with_capacity(MAX_GROUP)));
            // Still holding the writer: no sqlx write runs meanwhile.
            checkpoints.after_commit(conn);
            if taken.elapsed() >= WRITER_SLICE {
                break;
            }
        }
        drop(held);
    }
}

/// Answers every unit with the same failure.
fn fail_all(units: impl IntoIterator<Item = Box<dyn Unit>>, error: rusqlite::Error) {
    let error = into_sqlx(error).to_string();
    for unit in units {
        unit.answer(Err(sqlx::Error::Protocol(error.clone())));
    }
}

/// Runs every unit in one transaction and answers each once the commit is durable.
///
/// The units first run one after another with nothing in between: almost every group commits
/// whole. If one fails, the transaction is rolled back and the group runs again with each unit
/// inside a savepoint, so that a failing unit is rolled back alone and every unit gets its own
/// answer. (A savepoint copies each page its unit changes; paying that only for a group with a
/// failure leaves the committer's time to the statements themselves.)
fn commit_group(conn: &Connection, mut units: Vec<Box<dyn Unit>>) {
    if let Err(error) = begin(conn) {
        return fail_all(units, error);
    }
    match units.iter_mut().try_for_each(|unit| unit.run(conn)) {
        Ok(()) => match conn.execute_batch("COMMIT") {
            Ok(()) => units.into_iter().for_each(|unit| unit.answer(Ok(()))),
            Err(error) => {
                let _ = conn.execute_batch("ROLLBACK");
                fail_all(units, error);
            }
        },
        Err(error) => {
            let _ = conn.execute_batch("ROLLBACK");
            match <[_; 1]>::try_from(units) {
                Ok([unit]) => unit.answer(Err(into_sqlx(error))),
                Err(units) => commit_each_in_savepoint(conn, units),
            }
        }
    }
}

/// Begins a commit's transaction, and forgets what [`finds`] found in the one before.
fn begin(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    FOUND.with_borrow_mut(|found| found.clear());
    Ok(())
}

/// Runs every unit in one transaction, each within a savepoint so that a failing unit is rolled
/// back alone; answers each once the commit is durable.
fn commit_each_in_savepoint(conn: &Connection, units: Vec<Box<dyn Unit>>) {
    if let Err(error) = begin(conn) {
        return fail_all(units, error);
    }
    let mut outcomes = Vec::with_capacity(units.len());
    for mut unit in units {
        let outcome = conn.execute_batch("SAVEPOINT unit").and_then(|()| match unit.run(conn) {
            Ok(()) => conn.execute_batch("RELEASE unit").map(|()| Ok(())),
            Err(error) => conn.execute_batch("ROLLBACK TO unit; RELEASE unit").map(|()| Err(into_sqlx(error))),
        });
        match outcome {
            Ok(result) => outcomes.push((unit, result)),
            Err(error) => {
                // The transaction itself is broken: nothing of it is kept.
                let _ = conn.execute_batch("ROLLBACK");
                return fail_all(outcomes.into_iter().map(|(unit, _)| unit).chain([unit]), error);
            }
        }
    }
    match conn.execute_batch("COMMIT") {
        Ok(()) => {
            for (unit, result) in outcomes {
                unit.answer(result);
            }
        }
        Err(error) => {
            let _ = conn.execute_batch("ROLLBACK");
            fail_all(outcomes.into_iter().map(|(unit, _)| unit), error);
        }
    }
}

/// Most arguments a statement may have and still be kept prepared on its connection. Longer ones
/// are built for a list of rows or ids (a webhook fan-out writes up to 400 rows in one), a text
/// for each length: kept, they filled the statement cache with megabytes of one-off programs and
/// pushed out the few statements every send and status move runs, which were then prepared
/// again each time. A message's insert has 33 (with its numbers, reply, effect and subject): at
/// 32 it was prepared again for every send, 18 % of SQLite's send rate.
const MOST_CACHED_ARGS: usize = 40;

/// A prepared statement: kept on the connection for the next use, or for this one only.
pub enum Prepared<'c> {
    Cached(rusqlite::CachedStatement<'c>),
    Once(rusqlite::Statement<'c>),
}

impl<'c> std::ops::Deref for Prepared<'c> {
    type Target = rusqlite::Statement<'c>;
    fn deref(&self) -> &Self::Target {
        match self {
            Prepared::Cached(statement) => statement,
            Prepared::Once(statement) => statement,
        }
    }
}

impl std::ops::DerefMut for Prepared<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            Prepared::Cached(statement) => statement,
            Prepared::Once(statement) => statement,
        }
    }
}

/// A prepared statement with `$N` bound to the N-th argument.
pub fn bound<'c>(conn: &'c Connection, sql: &str, args: &[Arg]) -> rusqlite::Result<Prepared<'c>> {
    /// `$1`, `$2`, …: the names of the parameters most statements have, made once.
    static NAMES: std::sync::LazyLock<Vec<String>> =
        std::sync::LazyLock::new(|| (1..=MOST_CACHED_ARGS).map(|n| format!("${n}")).collect());
    let mut statement = if args.len() <= MOST_CACHED_ARGS {
        Prepared::Cached(conn.prepare_cached(sql)?)
    } else {
        Prepared::Once(conn.prepare(sql)?)
    };
    for (n, arg) in args.iter().enumerate() {
        let index = match NAMES.get(n) {
            Some(name) => statement.parameter_index(name)?,
            None => statement.parameter_index(&format!("${}", n + 1))?,
        };
        let Some(index) = index else { continue };
        match arg {
            Arg::Text(value) => statement.raw_bind_parameter(index, value.as_deref())?,
            Arg::Int(value) => statement.raw_bind_parameter(index, *value)?,
        }
    }
    Ok(statement)
}

/// The rows of a query, each read through `map`.
pub fn rows<T>(
    conn: &Connection,
    sql: &str,
    args: &[Arg],
    map: impl Fn(&Named<'_, '_>) -> sqlx::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    let mut statement = bound(conn, sql, args)?;
    let names: Vec<String> = statement.column_names().into_iter().map(str::to_string).collect();
    let mut rows = statement.raw_query();
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(map(&Named { row, names: &names, next: Default::default() }).map_err(decode_error)?);
    }
    Ok(out)
}

/// A row whose columns are found by name among its statement's column names, asked of SQLite
/// once per query. rusqlite's own lookup by name asks SQLite for each column's name, under the
/// connection's lock, on every call: a message of 21 columns took some 200 of those calls, and
/// in the `read` bench they were about a quarter of the server's CPU.
pub struct Named<'r, 's> {
    row: &'r rusqlite::Row<'s>,
    names: &'r [String],
    /// The column after the last one read: readers mostly take the columns in their order.
    next: std::cell::Cell<usize>,
}

impl Named<'_, '_> {
    fn get<T: rusqlite::types::FromSql>(&self, column: &str) -> sqlx::Result<T> {
        super::column_index(&self.next, self.names, String::as_str, column)
            .ok_or_else(|| rusqlite::Error::InvalidColumnName(column.to_string()))
            .and_then(|index| self.row.get(index))
            .map_err(|e| sqlx::Error::ColumnDecode { index: column.to_string(), source: Box::new(e) })
    }
}

impl super::Columns for Named<'_, '_> {
    fn opt_text(&self, column: &str) -> sqlx::Result<Option<String>> {
        self.get(column)
    }

    fn opt_int(&self, column: &str) -> sqlx::Result<Option<i64>> {
        self.get(column)
    }
}

std::thread_local! {
    /// What [`finds`] found in the commit running on this thread; emptied as each begins.
    static FOUND: std::cell::RefCell<std::collections::HashMap<(&'static str, Arg), bool>> =
        Default::default();
}

/// Whether `sql`, with `$1` = `arg`, finds a row, asked once per commit on the committer's
/// thread. For the existence of rows no unit of a commit adds or removes (webhook endpoints are
/// written outside the committer, which holds the only writer connection while it commits).
pub fn finds(conn: &Connection, sql: &'static str, arg: &Arg) -> rusqlite::Result<bool> {
    let key = (sql, arg.clone());
    if let Some(found) = FOUND.with_borrow(|found| found.get(&key).copied()) {
        return Ok(found);
    }
    let found = bound(conn, sql, std::slice::from_ref(arg))?.raw_query().next()?.is_some();
    FOUND.with_borrow_mut(|cache| cache.insert(key, found));
    Ok(found)
}

/// Runs a batch's statements in order.
pub fn run_batch(conn: &Connection, batch: &super::Batch) -> rusqlite::Result<()> {
    // Rows the previous statement changed: what `changes()` would answer.
    let mut changed = 0;
    for statement in batch.statements() {
        if let Some((sql, arg)) = &statement.guard
            && !finds(conn, sql, arg)?
        {
            changed = match &statement.otherwise {
                Some((otherwise, n)) => bound(conn, otherwise, &statement.args[..*n])?.raw_execute()?,
                None => 0,
            };
            continue;
        }
        changed = match &statement.if_changed {
            // An insert that waits for its update: the count is at hand.
            Some(insert) if changed > 0 => bound(conn, insert, &statement.args)?.raw_execute()?,
            Some(_) => 0,
            None => bound(conn, &statement.sql, &statement.args)?.raw_execute()?,
        };
    }
    Ok(())
}

/// Runs a batch's statements unless one of its refusals finds a row (see
/// [`super::Batch::refuse_if_found`]); then nothing is written, and the answer is that row's
/// `refused`, its one column.
pub fn run_refusable(conn: &Connection, batch: &super::Batch) -> rusqlite::Result<Option<String>> {
    for (sql, args) in batch.refusals() {
        let mut statement = bound(conn, sql, args)?;
        let mut rows = statement.raw_query();
        if let Some(row) = rows.next()? {
            return Ok(Some(row.get(0)?));
        }
    }
    run_batch(conn, batch)?;
    Ok(None)
}

/// Reads on connections of their own, each on a thread of its own: one hand-off per query
/// where sqlx makes one per row, and rows read straight into the caller's type. The threads are
/// fixed, not tokio's blocking pool: under a steady stream of reads that pool started a new
/// thread whenever the query before had not yet handed its thread back, and kept it ten seconds
/// (72 threads in the bench's `read` on SQLite, each with its own allocation arena for SQLite's
/// memory: the server's resident memory went from 52 to 62 MiB there; BENCHMARKS.md).
pub struct Readers {
    jobs: std::sync::mpsc::Sender<ReadJob>,
    /// Queries handed over at once: as many as there are threads, so memory stays bounded.
    running: tokio::sync::Semaphore,
}

/// One query for a reader thread: run on its connection, or told why there is none.
type ReadJob = Box<dyn FnOnce(rusqlite::Result<&Connection>) + Send>;

/// Reader threads, each with one connection, opened at its first query.
const READERS: usize = 4;

impl Readers {
    pub fn new(file: PathBuf) -> Self {
        let (jobs, queue) = std::sync::mpsc::channel::<ReadJob>();
        let queue = std::sync::Arc::new(std::sync::Mutex::new(queue));
        for n in 0..READERS {
            let (queue, file) = (queue.clone(), file.clone());
            let started = std::thread::Builder::new().name(format!("msgline-read-{n}")).spawn(move || {
                let mut conn: Option<Connection> = None;
                loop {
                    // The queue's lock is let go before the query runs. The loop ends when the
                    // `Readers` (the last sender) goes.
                    let Ok(job) = queue.lock().expect("reader queue lock").recv() else { break };
                    if conn.is_none() {
                        match open_reader(&file) {
                            Ok(opened) => conn = Some(opened),
                            Err(error) => {
                                job(Err(error));
                                continue;
                            }
                        }
                    }
                    job(Ok(conn.as_ref().expect("opened above")));
                }
            });
            if let Err(error) = started {
                tracing::error!(error = %error, "could not start a SQLite reader thread");
            }
        }
        Self { jobs, running: tokio::sync::Semaphore::new(READERS) }
    }

    /// The rows of one query, each read through `map`.
    pub async fn query<T: Send + 'static>(
        &self,
        sql: String,
        args: Vec<Arg>,
        map: fn(&dyn super::Columns) -> sqlx::Result<T>,
    ) -> sqlx::Result<Vec<T>> {
        let _running = self.running.acquire().await.map_err(|_| sqlx::Error::PoolClosed)?;
        let (done, answer) = oneshot::channel();
        let job: ReadJob = Box::new(move |conn| {
            let result = conn.and_then(|conn| rows(conn, &sql, &args, |row| map(row))).map_err(into_sqlx);
            let _ = done.send(result);
        });
        self.jobs.send(job).map_err(|_| sqlx::Error::WorkerCrashed)?;
        answer.await.map_err(|_| sqlx::Error::WorkerCrashed)?
    }
}

fn open_reader(file: &std::path::Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(file, open_flags())?;
    conn.execute_batch(super::SQLITE_READER_PRAGMAS)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// A row that could not be read, as the committer thread reports it.
fn decode_error(error: sqlx::Error) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Null, Box::new(error))
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
mod tests;
