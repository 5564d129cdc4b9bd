//! Keeping SQLite's write-ahead log short: the checkpointer's turns and the committer's
//! start-overs (see [`Checkpoints`]).

use rusqlite::Connection;
/// How often the checkpointer copies the log into the database file.
pub(in crate::db) const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// The log's length, in pages, past which it is started over (16,384 pages of 4 KiB: 64 MiB).
pub(in crate::db) const LOG_LIMIT_PAGES: i64 = 16_384;

/// The checkpointer's connection. Its passive checkpoints never wait; when it starts the log
/// over itself (see [`Checkpoints::turn`]) it waits up to this busy timeout (5 s), which is
/// shorter than the writer's (30 s): the writer waits for it, never fails because of it.
pub(in crate::db) const CHECKPOINTER_PRAGMAS: &str = "PRAGMA busy_timeout = 5000; PRAGMA cache_size = -500;";

/// Few enough pages for the writer to copy while writers wait (about 0.5 MiB).
const FEW_PAGES: i64 = 128;

/// How long the committer waits for the log's last readers when it starts the log over: past
/// this, it leaves the log as it is and tries again after the checkpointer's next turn.
const RESTART_PATIENCE: std::time::Duration = std::time::Duration::from_millis(50);

/// How long the checkpointer leaves a start-over to the committer before doing it itself (when
/// no shared commit runs, writes come only through sqlx, or none come at all).
pub(in crate::db) const COMMITTER_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);

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
/// [`super::WRITER_PRAGMAS`]) cuts it back when a burst left it longer than twice the limit.
#[derive(Default)]
pub(in crate::db) struct Checkpoints {
    state: std::sync::Mutex<Asking>,
}

#[derive(Default)]
pub(in crate::db) struct Asking {
    /// When the checkpointer asked for a start-over that has not happened yet.
    pub(in crate::db) asked: Option<std::time::Instant>,
    /// Start-overs in a row that readers kept from finishing; after each, the checkpointer waits
    /// twice as long (from a turn up to [`MOST_TURNS_APART`] turns) before it asks again, so that
    /// a long read (a big list, a report) does not cost writers a wait on every turn.
    pub(in crate::db) failed: u32,
    pub(in crate::db) not_before: Option<std::time::Instant>,
}

/// Most turns between two asks after failed start-overs (8 s).
const MOST_TURNS_APART: u32 = 32;

/// Past this many times the limit, the checkpointer asks on every turn whatever failed before.
const HARD_LIMIT_FACTOR: i64 = 4;

impl Checkpoints {
    pub(in crate::db) fn state(&self) -> std::sync::MutexGuard<'_, Asking> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One turn of the checkpointer. It leaves a start-over to the committer for `patience`
    /// (zero: there is no committer to ask).
    pub(in crate::db) fn turn(
        &self,
        conn: &Connection,
        limit_pages: i64,
        patience: std::time::Duration,
    ) -> rusqlite::Result<()> {
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
    pub(in crate::db) fn after_commit(&self, conn: &Connection) {
        if self.state().asked.is_none() {
            return;
        }
        let started = std::time::Instant::now();
        // The writer's own busy timeout (`WRITER_PRAGMAS`) comes back once the start-over is done.
        let timeout_ms = conn.query_row("PRAGMA busy_timeout", [], |r| r.get::<_, u64>(0));
        let outcome = conn.busy_handler(Some(briefly)).and_then(|()| wal_checkpoint(conn, "RESTART"));
        if let Err(error) = timeout_ms.and_then(|ms| conn.busy_timeout(std::time::Duration::from_millis(ms))) {
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
pub(in crate::db) fn wal_checkpoint(conn: &Connection, mode: &str) -> rusqlite::Result<(i64, i64, i64)> {
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
