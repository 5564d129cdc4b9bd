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
//! bounded, with the committer's help (see [`Checkpoints`]).

use std::{borrow::Cow, path::PathBuf};

use rusqlite::{Connection, ffi};
use sqlx::AnyPool;
use tokio::sync::{mpsc, oneshot};

use super::{Arg, group_commit::MAX_GROUP};

/// What every connection that writes to the file sets. A writer waits up to 30 s for another
/// process that holds the file's write lock (a bench's seeder, an operator's `sqlite3`) instead
/// of failing with `database is locked`. Checkpoints (copying the write-ahead
/// log back into the database file, with an fsync) run on a thread of their own instead of
/// inside whichever commit crosses the log's size limit. A log file left longer than 128 MiB
/// (twice [`LOG_LIMIT_PAGES`]) is cut back to that when the log starts over.
pub const WRITER_PRAGMAS: &str = "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; \
     PRAGMA busy_timeout = 30000; PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = 134217728;";

/// How often the checkpointer copies the log into the database file.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// The log's length, in pages, past which it is started over (16,384 pages of 4 KiB: 64 MiB).
const LOG_LIMIT_PAGES: i64 = 16_384;

/// The checkpointer's connection. Its passive checkpoints never wait; when it starts the log
/// over itself (see [`Checkpoints::turn`]) it waits up to this busy timeout (5 s), which is
/// shorter than the writer's (30 s): the writer waits for it, never fails because of it.
const CHECKPOINTER_PRAGMAS: &str = "PRAGMA busy_timeout = 5000; PRAGMA cache_size = -500;";

/// Few enough pages for the writer to copy while writers wait (about 0.5 MiB).
const FEW_PAGES: i64 = 128;

/// How long the committer waits for the log's last readers when it starts the log over: past
/// this, it leaves the log as it is and tries again after the checkpointer's next turn.
const RESTART_PATIENCE: std::time::Duration = std::time::Duration::from_millis(50);

/// How long the checkpointer leaves a start-over to the committer before doing it itself (when
/// no shared commit runs, writes come only through sqlx, or none come at all).
const COMMITTER_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);

/// Keeping the write-ahead log short, between two threads.
///
/// A passive checkpoint copies the log into the database file without waiting for anyone, but
/// it cannot copy past the oldest snapshot a reader still holds, and SQLite starts the log over
/// only when a writer begins while everything is copied and no reader uses the log: under
/// steady reads and writes neither happens, and the log grows without end (a soak at 2,529
/// sends/s on SQLite grew it by 8 GB a minute until the disk was full). Starting it over takes
/// a restarting checkpoint, which holds the write lock while it copies the rest and waits for
/// the log's readers (new readers read the copied database instead).
///
/// Run from the checkpointer's thread (as a truncating checkpoint), that first had to win the
/// write lock from a committer that takes it back within a millisecond, sleeping longer between
/// each try, then copied what the last passive copy left and cut the file: a start-over held
/// writers back 205–369 ms in a soak at 1,824 sends/s, once 2.4 s. So the checkpointer only
/// copies (four times a second) and, once the log is past its limit, copies again until little
/// was committed meanwhile, and asks the committer to start the log over right after its next
/// commit, while it holds the write lock anyway: there is no lock to win, and only the few
/// pages committed since the last copy and the readers still in the log (polled every half
/// millisecond, for at most [`RESTART_PATIENCE`]) hold writers back, 2–40 ms at that rate. The
/// file is not cut, only written again from its start; `journal_size_limit` (in
/// [`WRITER_PRAGMAS`]) cuts it back when a burst left it longer than twice the limit.
#[derive(Default)]
struct Checkpoints {
    state: std::sync::Mutex<Asking>,
}

#[derive(Default)]
struct Asking {
    /// When the checkpointer asked for a start-over that has not happened yet.
    asked: Option<std::time::Instant>,
    /// Start-overs in a row that readers kept from finishing; after each, the checkpointer waits
    /// twice as long (from a turn up to [`MOST_TURNS_APART`] turns) before it asks again, so that
    /// a long read (a big list, a report) does not cost writers a wait on every turn.
    failed: u32,
    not_before: Option<std::time::Instant>,
}

/// Most turns between two asks after failed start-overs (8 s).
const MOST_TURNS_APART: u32 = 32;

/// Past this many times the limit, the checkpointer asks on every turn whatever failed before.
const HARD_LIMIT_FACTOR: i64 = 4;

impl Checkpoints {
    fn state(&self) -> std::sync::MutexGuard<'_, Asking> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One turn of the checkpointer. It leaves a start-over to the committer for `patience`
    /// (zero: there is no committer to ask).
    fn turn(&self, conn: &Connection, limit_pages: i64, patience: std::time::Duration) -> rusqlite::Result<()> {
        let asked = self.state().asked;
        // The committer starts the log over after its next commit; a copy now would only make
        // it wait for the checkpoint lock.
        if asked.is_some_and(|at| at.elapsed() < patience) {
            return Ok(());
        }
        if asked.is_some() {
            self.state().asked = None;
        }
        // Another process's committer (the server's, when this is a command or the bench on the
        // same file) may have started the log over meanwhile.
        let (_, mut log_pages, _) = wal_checkpoint(conn, "PASSIVE")?;
        if log_pages <= limit_pages {
            return Ok(());
        }
        // Left to the committer long enough, or no committer to ask: the checkpointer does it.
        if asked.is_some() || patience.is_zero() {
            return truncate(conn);
        }
        // Copy what was committed meanwhile, again while that is much: the writer copies the
        // rest while writers wait.
        for _ in 0..4 {
            let before = log_pages;
            (_, log_pages, _) = wal_checkpoint(conn, "PASSIVE")?;
            if log_pages - before < FEW_PAGES {
                break;
            }
        }
        let now = std::time::Instant::now();
        let mut state = self.state();
        let backing_off = state.not_before.is_some_and(|at| now < at);
        if !backing_off || log_pages > HARD_LIMIT_FACTOR * limit_pages {
            state.asked = Some(now);
        }
        Ok(())
    }

    /// Called by the writer after a commit, holding the write lock: starts the log over if the
    /// checkpointer asked for it.
    fn after_commit(&self, conn: &Connection) {
        if self.state().asked.is_none() {
            return;
        }
        let started = std::time::Instant::now();
        let outcome = conn.busy_handler(Some(briefly)).and_then(|()| wal_checkpoint(conn, "RESTART"));
        if let Err(error) = conn.busy_timeout(std::time::Duration::from_secs(30)) {
            tracing::warn!(error = %error, "could not restore the committer's busy timeout");
        }
        // Asked once, tried once: if readers kept it from finishing, the checkpointer asks again.
        let finished = matches!(outcome, Ok((0, _, _)));
        {
            let mut state = self.state();
            state.asked = None;
            if finished {
                state.failed = 0;
                state.not_before = None;
            } else {
                state.failed += 1;
                let turns = 1u32 << state.failed.min(MOST_TURNS_APART.trailing_zeros());
                state.not_before = Some(std::time::Instant::now() + CHECKPOINT_EVERY * turns);
            }
        }
        match outcome {
            Ok((busy, log_pages, _)) => report_restart("committer", busy, log_pages, started.elapsed()),
            Err(error) => tracing::warn!(error = %error, "WAL checkpoint failed"),
        }
    }
}

/// The checkpointer starting the log over itself: waits for the write lock and the log's
/// readers up to its busy timeout, and cuts the file.
fn truncate(conn: &Connection) -> rusqlite::Result<()> {
    let started = std::time::Instant::now();
    let (busy, log_pages, _) = wal_checkpoint(conn, "TRUNCATE")?;
    report_restart("checkpointer", busy, log_pages, started.elapsed());
    Ok(())
}

/// The committer's busy handler while it starts the log over: polls every half millisecond,
/// for at most [`RESTART_PATIENCE`].
fn briefly(tries: i32) -> bool {
    const POLL: std::time::Duration = std::time::Duration::from_micros(500);
    if POLL * tries.max(0) as u32 >= RESTART_PATIENCE {
        return false;
    }
    std::thread::sleep(POLL);
    true
}

/// `PRAGMA wal_checkpoint(mode)`: whether it was kept from finishing, the log's length and how
/// much of it is copied, in pages.
fn wal_checkpoint(conn: &Connection, mode: &str) -> rusqlite::Result<(i64, i64, i64)> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
}

/// Writers wait while the log is started over: a long wait shows in the sends' latency.
fn report_restart(by: &str, busy: i64, log_pages: i64, took: std::time::Duration) {
    let waited_ms = took.as_millis() as u64;
    if busy != 0 {
        tracing::warn!(by, log_pages, waited_ms, "the write-ahead log could not be started over yet; trying again");
    } else if waited_ms >= 100 {
        tracing::warn!(by, log_pages, waited_ms, "starting the write-ahead log over held writers back");
    } else {
        tracing::debug!(by, log_pages, waited_ms, "started the write-ahead log over");
    }
}

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

/// The units one commit carries, and the signal that the commit is over.
type Group = (Vec<Box<dyn Unit>>, oneshot::Sender<()>);

/// A unit of work and where its answer arrives.
pub fn unit<T: Send + 'static>(
    work: impl FnMut(&Connection) -> rusqlite::Result<T> + Send + 'static,
) -> (Box<dyn Unit>, oneshot::Receiver<sqlx::Result<T>>) {
    let (done, answer) = oneshot::channel();
    (Box::new(Typed { work, output: None, done }), answer)
}

/// Opens the committer's connection and starts its thread; returns the lane's queue.
pub fn start(writer: AnyPool, file: &std::path::Path, depth: usize) -> anyhow::Result<mpsc::Sender<Box<dyn Unit>>> {
    let conn = Connection::open_with_flags(file, open_flags())
        .map_err(|e| anyhow::anyhow!("cannot open the SQLite database for shared commits: {e}"))?;
    conn.execute_batch(WRITER_PRAGMAS)?;
    // Savepoints keep their undo pages in memory, not in a temporary file written page by page.
    conn.execute_batch("PRAGMA temp_store = MEMORY; PRAGMA cache_size = -4000;")?;
    conn.set_prepared_statement_cache_capacity(128);
    let checkpoints = Connection::open_with_flags(file, open_flags())?;
    checkpoints.execute_batch(CHECKPOINTER_PRAGMAS)?;
    let shared = std::sync::Arc::new(Checkpoints::default());
    let watched = std::sync::Arc::downgrade(&shared);
    let (work, groups) = std::sync::mpsc::channel::<Group>();
    std::thread::Builder::new().name("msgline-commit".into()).spawn(move || {
        while let Ok((units, finished)) = groups.recv() {
            commit_group(&conn, units);
            // The lane still holds the writer: no sqlx write runs meanwhile.
            shared.after_commit(&conn);
            let _ = finished.send(());
        }
    })?;
    std::thread::Builder::new().name("msgline-checkpoint".into()).spawn(move || {
        loop {
            std::thread::sleep(CHECKPOINT_EVERY);
            let Some(shared) = watched.upgrade() else { break };
            if let Err(error) = shared.turn(&checkpoints, LOG_LIMIT_PAGES, COMMITTER_PATIENCE) {
                tracing::warn!(error = %error, "WAL checkpoint failed");
            }
        }
    })?;
    let (units, rx) = mpsc::channel(depth);
    tokio::spawn(lane(writer, rx, work));
    Ok(units)
}

async fn lane(writer: AnyPool, mut rx: mpsc::Receiver<Box<dyn Unit>>, work: std::sync::mpsc::Sender<Group>) {
    let mut group = Vec::with_capacity(MAX_GROUP);
    while rx.recv_many(&mut group, MAX_GROUP).await > 0 {
        let units: Vec<Box<dyn Unit>> = std::mem::take(&mut group);
        // The write lock: no sqlx write runs while the committer's thread writes.
        let held = match writer.acquire().await {
            Ok(conn) => conn,
            Err(error) => {
                tracing::error!(error = %error, "group commit could not take the writer");
                for unit in units {
                    unit.answer(Err(sqlx::Error::PoolTimedOut));
                }
                continue;
            }
        };
        let (finished, wait) = oneshot::channel();
        if work.send((units, finished)).is_err() {
            break;
        }
        let _ = wait.await;
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
    if let Err(error) = conn.execute_batch("BEGIN IMMEDIATE") {
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

/// Runs every unit in one transaction, each within a savepoint so that a failing unit is rolled
/// back alone; answers each once the commit is durable.
fn commit_each_in_savepoint(conn: &Connection, units: Vec<Box<dyn Unit>>) {
    if let Err(error) = conn.execute_batch("BEGIN IMMEDIATE") {
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
/// again each time.
const MOST_CACHED_ARGS: usize = 32;

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
    map: impl Fn(&rusqlite::Row<'_>) -> sqlx::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    let mut statement = bound(conn, sql, args)?;
    let mut rows = statement.raw_query();
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(map(row).map_err(decode_error)?);
    }
    Ok(out)
}

/// Runs a batch's statements in order.
pub fn run_batch(conn: &Connection, batch: &super::Batch) -> rusqlite::Result<()> {
    // Rows the previous statement changed: what `changes()` would answer.
    let mut changed = 0;
    for statement in batch.statements() {
        changed = match &statement.if_changed {
            // An insert that waits for its update: the count is at hand.
            Some(insert) if changed > 0 => bound(conn, insert, &statement.args)?.raw_execute()?,
            Some(_) => 0,
            None => bound(conn, &statement.sql, &statement.args)?.raw_execute()?,
        };
    }
    Ok(())
}

/// Reads on connections of their own, each query on a blocking thread: one hand-off per query
/// where sqlx makes one per row, and rows read straight into the caller's type.
pub struct Readers {
    file: PathBuf,
    idle: std::sync::Mutex<Vec<Connection>>,
    /// Queries running at once: as many as there are connections, so memory stays bounded.
    running: tokio::sync::Semaphore,
}

/// Reader connections, and queries at once.
const READERS: usize = 4;

impl Readers {
    pub fn new(file: PathBuf) -> Self {
        Self { file, idle: Default::default(), running: tokio::sync::Semaphore::new(READERS) }
    }

    fn open(&self) -> rusqlite::Result<Connection> {
        let conn = Connection::open_with_flags(&self.file, open_flags())?;
        conn.execute_batch(super::SQLITE_READER_PRAGMAS)?;
        conn.set_prepared_statement_cache_capacity(64);
        Ok(conn)
    }

    /// The rows of one query, each read through `map`.
    pub async fn query<T: Send + 'static>(
        self: &std::sync::Arc<Self>,
        sql: String,
        args: Vec<Arg>,
        map: fn(&dyn super::Columns) -> sqlx::Result<T>,
    ) -> sqlx::Result<Vec<T>> {
        let readers = self.clone();
        let _running = self.running.acquire().await.map_err(|_| sqlx::Error::PoolClosed)?;
        tokio::task::spawn_blocking(move || {
            let idle = readers.idle.lock().expect("reader pool lock").pop();
            let conn = match idle {
                Some(conn) => conn,
                None => readers.open().map_err(into_sqlx)?,
            };
            let result = rows(&conn, &sql, &args, |row| map(row)).map_err(into_sqlx);
            let mut idle = readers.idle.lock().expect("reader pool lock");
            if idle.len() < READERS {
                idle.push(conn);
            }
            result
        })
        .await
        .map_err(|_| sqlx::Error::WorkerCrashed)?
    }
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
mod tests {
    use super::{CHECKPOINTER_PRAGMAS, Checkpoints, commit_group, file_of, unit, wal_checkpoint};

    /// The log tests run one at a time: each keeps several threads busy or times a wait, and two
    /// at once on a 2-core machine measure the machine, not the checkpointer.
    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
        ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A database in WAL mode with one table `t (v BLOB)`, and its writer, which checkpoints
    /// nothing by itself; the directory goes with the first value.
    fn log_file() -> (tempfile::TempDir, std::path::PathBuf, rusqlite::Connection) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.db");
        let writer = rusqlite::Connection::open(&file).unwrap();
        writer
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; PRAGMA synchronous = OFF; \
                 PRAGMA busy_timeout = 30000; CREATE TABLE t (v BLOB)",
            )
            .unwrap();
        (dir, file, writer)
    }

    /// Runs a writer of about 50 MB of log against two readers that always hold a snapshot
    /// between them, and a checkpointer; returns the log file's largest size meanwhile and the
    /// log's length once the writer stops. With `committer_helps`, the writer starts the
    /// log over when asked, as the committer does; without, the checkpointer must do it alone.
    fn log_sizes(committer_helps: bool) -> (u64, u64) {
        let _turn = one_at_a_time();
        use std::sync::{
            Arc,
            atomic::{AtomicBool, Ordering},
        };
        let (_dir, file, writer) = log_file();
        let stop = Arc::new(AtomicBool::new(false));
        // Two readers whose read transactions overlap, so one always holds a snapshot.
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (file, stop) = (file.clone(), stop.clone());
                std::thread::spawn(move || {
                    let reader = rusqlite::Connection::open(&file).unwrap();
                    reader.execute_batch("PRAGMA busy_timeout = 5000").unwrap();
                    while !stop.load(Ordering::Relaxed) {
                        reader.execute_batch("BEGIN").unwrap();
                        let _: i64 = reader.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0)).unwrap();
                        std::thread::sleep(std::time::Duration::from_millis(3));
                        reader.execute_batch("COMMIT").unwrap();
                    }
                })
            })
            .collect();
        let shared = Arc::new(Checkpoints::default());
        // Left to the writer for a minute (longer than the test), or not at all.
        let patience = std::time::Duration::from_secs(if committer_helps { 60 } else { 0 });
        let checkpointer = {
            let (file, stop, shared) = (file.clone(), stop.clone(), shared.clone());
            std::thread::spawn(move || {
                let conn = rusqlite::Connection::open(&file).unwrap();
                conn.execute_batch(CHECKPOINTER_PRAGMAS).unwrap();
                let mut largest = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    shared.turn(&conn, 256, patience).unwrap();
                    largest = largest.max(std::fs::metadata(file.with_extension("db-wal")).map_or(0, |m| m.len()));
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                largest
            })
        };
        // 4,000 rows of a page each: with the b-tree pages they touch, about 50 MB of log.
        let page = vec![7u8; 4000];
        for row in 0..4_000 {
            writer.execute("INSERT INTO t (v) VALUES (?1)", [&page]).unwrap();
            if committer_helps {
                shared.after_commit(&writer);
            } else if row % 50 == 0 {
                // A writer that never lets go of the lock for a millisecond starves any other
                // connection's checkpoint (which is why the committer starts the log over
                // itself); sqlx's writes, the only ones left to this path, come with gaps.
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        stop.store(true, Ordering::Relaxed);
        for reader in readers {
            reader.join().unwrap();
        }
        let largest = checkpointer.join().unwrap();
        // With nobody reading, the next turn copies all of the log.
        let (_, log_pages, copied) = wal_checkpoint(&writer, "PASSIVE").unwrap();
        assert_eq!(log_pages, copied);
        (largest, log_pages as u64 * 4096)
    }

    /// Unbounded, the log holds every frame written: about 50 MB. Bounded, it stays near the
    /// limit (256 pages of 4 KiB, 1 MiB) plus what is written between two turns, which on a
    /// crowded machine was seen to reach 9 MB.
    fn assert_bounded(committer_helps: bool) {
        let (largest, log) = log_sizes(committer_helps);
        assert!(largest < 16 << 20, "the log reached {largest} bytes");
        assert!(log < 16 << 20, "the log holds {log} bytes");
    }

    /// The committer starts the log over when the checkpointer asks.
    #[test]
    fn the_log_stays_bounded_while_readers_and_the_committer_never_stop() {
        assert_bounded(true);
    }

    /// A reader that keeps the log in use makes the committer's start-over fail after a short
    /// wait; the checkpointer then waits a while before asking again, unless the log grows past
    /// four times its limit.
    #[test]
    fn after_a_start_over_a_reader_kept_from_finishing_the_checkpointer_waits_before_asking_again() {
        let _turn = one_at_a_time();
        let (_dir, file, writer) = log_file();
        let write_pages = |pages: usize| {
            for _ in 0..pages {
                writer.execute("INSERT INTO t (v) VALUES (?1)", [&vec![7u8; 4000]]).unwrap();
            }
        };
        let checkpointer = rusqlite::Connection::open(&file).unwrap();
        checkpointer.execute_batch(CHECKPOINTER_PRAGMAS).unwrap();
        let reader = rusqlite::Connection::open(&file).unwrap();
        let shared = Checkpoints::default();
        let patience = std::time::Duration::from_secs(60);

        write_pages(300);
        // The reader's snapshot predates what comes next: the log cannot be copied past it.
        reader.execute_batch("BEGIN").unwrap();
        let _: i64 = reader.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0)).unwrap();
        write_pages(10);
        shared.turn(&checkpointer, 256, patience).unwrap();
        assert!(shared.state().asked.is_some(), "past its limit, the log is to be started over");
        let started = std::time::Instant::now();
        shared.after_commit(&writer);
        assert!(started.elapsed() < std::time::Duration::from_millis(500), "waited {:?}", started.elapsed());
        assert_eq!(shared.state().failed, 1);

        // Still past the limit, but within four times it: not asked again yet.
        shared.turn(&checkpointer, 256, patience).unwrap();
        assert!(shared.state().asked.is_none());
        // Past four times the limit: asked whatever failed before.
        write_pages(800);
        shared.turn(&checkpointer, 256, patience).unwrap();
        assert!(shared.state().asked.is_some());

        // With the reader gone, the start-over finishes and the count starts again.
        reader.execute_batch("COMMIT").unwrap();
        shared.after_commit(&writer);
        assert_eq!(shared.state().failed, 0);
        assert!(shared.state().not_before.is_none());
    }

    /// With no shared commit to ask (writes through sqlx only), the checkpointer does it itself.
    #[test]
    fn the_log_stays_bounded_while_readers_and_another_writer_never_stop() {
        assert_bounded(false);
    }

    #[test]
    fn a_failing_unit_is_rolled_back_alone_and_the_others_commit() {
        let dir = tempfile::tempdir().unwrap();
        let conn = rusqlite::Connection::open(dir.path().join("t.db")).unwrap();
        conn.execute_batch("CREATE TABLE t (k TEXT PRIMARY KEY)").unwrap();
        let insert = |key: &'static str| {
            unit(move |conn: &rusqlite::Connection| {
                conn.execute("INSERT INTO t (k) VALUES (?1)", [key])?;
                Ok(key)
            })
        };
        let (first, first_answer) = insert("a");
        let (second, second_answer) = insert("b");
        // Inserts "c", then breaks the key: its "c" must not survive.
        let (broken, broken_answer) = unit(|conn: &rusqlite::Connection| {
            conn.execute("INSERT INTO t (k) VALUES ('c')", [])?;
            conn.execute("INSERT INTO t (k) VALUES ('a')", [])
        });
        let (last, last_answer) = insert("d");
        commit_group(&conn, vec![first, second, broken, last]);

        assert_eq!(first_answer.blocking_recv().unwrap().unwrap(), "a");
        assert_eq!(second_answer.blocking_recv().unwrap().unwrap(), "b");
        assert!(super::super::is_unique_violation(&broken_answer.blocking_recv().unwrap().unwrap_err()));
        assert_eq!(last_answer.blocking_recv().unwrap().unwrap(), "d");
        let keys: Vec<String> = conn
            .prepare("SELECT k FROM t ORDER BY k")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(keys, ["a", "b", "d"]);

        // A group that fails as a whole unit of one: nothing of it stays.
        let (alone, alone_answer) = insert("b");
        commit_group(&conn, vec![alone]);
        assert!(super::super::is_unique_violation(&alone_answer.blocking_recv().unwrap().unwrap_err()));
        let count: i64 = conn.query_row("SELECT COUNT(*) FROM t", [], |row| row.get(0)).unwrap();
        assert_eq!(count, 3);
    }

    #[test]
    fn the_file_is_read_from_the_url() {
        assert_eq!(file_of("sqlite://msgline.db").unwrap().to_str(), Some("msgline.db"));
        assert_eq!(file_of("sqlite:///tmp/x/a.db?mode=rwc").unwrap().to_str(), Some("/tmp/x/a.db"));
        assert_eq!(file_of("sqlite::memory:"), None);
        assert_eq!(file_of("postgres://localhost/x"), None);
    }
}
