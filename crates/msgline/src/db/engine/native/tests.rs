//! The committer's and the checkpointer's tests, on real files.

use super::{
    checkpoint::{CHECKPOINTER_PRAGMAS, Checkpoints, wal_checkpoint},
    commit_group, file_of, unit,
};
use rusqlite::OptionalExtension;

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
        atomic::{AtomicBool, AtomicU64, Ordering},
    };
    let (_dir, file, writer) = log_file();
    let stop = Arc::new(AtomicBool::new(false));
    // Two readers whose read transactions overlap, so one always holds a snapshot. Each reads
    // one row by key, as the API's reads do: a count of the whole table made every transaction
    // longer as the table grew, until the committer's start-overs, which wait 50 ms for the
    // log's readers, failed several times in a row and the log reached 22 MB.
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (file, stop) = (file.clone(), stop.clone());
            std::thread::spawn(move || {
                let reader = rusqlite::Connection::open(&file).unwrap();
                reader.execute_batch("PRAGMA busy_timeout = 5000").unwrap();
                while !stop.load(Ordering::Relaxed) {
                    reader.execute_batch("BEGIN").unwrap();
                    let _: Option<i64> = reader
                        .query_row("SELECT length(v) FROM t ORDER BY rowid DESC LIMIT 1", [], |r| r.get(0))
                        .optional()
                        .unwrap()
                        .flatten();
                    std::thread::sleep(std::time::Duration::from_millis(3));
                    reader.execute_batch("COMMIT").unwrap();
                }
            })
        })
        .collect();
    let shared = Arc::new(Checkpoints::default());
    // How many turns the checkpointer has finished, for the writer to keep pace (below).
    let turns = Arc::new(AtomicU64::new(0));
    // Left to the writer for a minute (longer than the test), or not at all.
    let patience = std::time::Duration::from_secs(if committer_helps { 60 } else { 0 });
    let checkpointer = {
        let (file, stop, shared, turns) = (file.clone(), stop.clone(), shared.clone(), turns.clone());
        std::thread::spawn(move || {
            let conn = rusqlite::Connection::open(&file).unwrap();
            conn.execute_batch(CHECKPOINTER_PRAGMAS).unwrap();
            let mut largest = 0u64;
            while !stop.load(Ordering::Relaxed) {
                shared.turn(&conn, 256, patience).unwrap();
                largest = largest.max(std::fs::metadata(file.with_extension("db-wal")).map_or(0, |m| m.len()));
                turns.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            largest
        })
    };
    // 4,000 rows of a page each: with the b-tree pages they touch, about 50 MB of log.
    let page = vec![7u8; 4000];
    let mut turns_seen = 0;
    for row in 0..4_000 {
        // Helped, every 100 rows (about 1.2 MB of log) the writer waits, for at most 5 s, until
        // the checkpointer has finished a turn since the last wait, so that the test measures
        // the start-overs, not the scheduler. Left to run, this writer wrote 50 MB in 0.3 s,
        // faster than a turn copies it, and the log reached 20-50 MB whatever the checkpointer
        // did (in CI, with the count below, once 18 MB). (Unhelped, a turn that starts the log over waits for the readers, and the
        // writer's pauses below give it room.)
        if committer_helps && row % 100 == 0 {
            let since = std::time::Instant::now();
            while turns.load(Ordering::Relaxed) == turns_seen && since.elapsed().as_secs() < 5 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            turns_seen = turns.load(Ordering::Relaxed);
        }
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
/// limit (256 pages of 4 KiB, 1 MiB) plus what is written between two turns: with the helping
/// writer keeping pace and two busy loops beside the test, 2.6-7.4 MB (without the writer's
/// start-overs, 49 MB).
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

#[test]
fn a_refused_batch_writes_nothing_and_its_group_commits_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("r.db")).unwrap();
    conn.execute_batch(
        "CREATE TABLE stops (phone TEXT); CREATE TABLE sent (phone TEXT); INSERT INTO stops VALUES ('+1');",
    )
    .unwrap();
    let send = |phone: &'static str| {
        let mut batch = crate::db::Batch::new();
        batch.push("INSERT INTO sent (phone) VALUES ($1)", vec![phone.into()]);
        batch.refuse_if_found("SELECT phone AS refused FROM stops WHERE phone = $1", vec![phone.into()]);
        unit(move |conn: &rusqlite::Connection| super::run_refusable(conn, &batch))
    };
    let (refused, refused_answer) = send("+1");
    let (sent, sent_answer) = send("+2");
    commit_group(&conn, vec![refused, sent]);

    assert_eq!(refused_answer.blocking_recv().unwrap().unwrap().as_deref(), Some("+1"));
    assert_eq!(sent_answer.blocking_recv().unwrap().unwrap(), None);
    let written: Vec<String> = conn
        .prepare("SELECT phone FROM sent")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(written, ["+2"]);
}
