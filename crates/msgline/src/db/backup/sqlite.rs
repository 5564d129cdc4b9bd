//! SQLite's side of backup and restore: the online backup API, every page in one step.

use std::{path::Path, time::Duration};

use rusqlite::{
    Connection, OpenFlags,
    backup::{Backup, StepResult},
};

use super::{MIGRATIONS_TABLE, not_empty};

/// Copies the database file `from` (in use by a server or not) to the new file `to`; returns
/// the schema version it holds.
pub fn backup(from: &Path, to: &Path) -> anyhow::Result<i64> {
    anyhow::ensure!(from.exists(), "there is no SQLite database at {}", from.display());
    // Read-write, as the server's readers open it (a read-only open of a WAL database can wait
    // on its recovery), and refusing writes.
    let source =
        Connection::open_with_flags(from, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    source.execute_batch("PRAGMA busy_timeout = 30000; PRAGMA query_only = ON;")?;
    let _ = std::fs::remove_file(to);
    let mut copy = Connection::open(to)?;
    copy_all(&source, &mut copy)?;
    // One self-contained file: no write-ahead log beside it.
    copy.execute_batch("PRAGMA journal_mode = DELETE;")?;
    let version = schema_version(&copy)?;
    copy.close().map_err(|(_, e)| e)?;
    std::fs::File::open(to)?.sync_all()?;
    Ok(version)
}

/// Loads the backup file `from` into the database file `to`, which must hold no rows; returns
/// the backup's schema version.
pub fn restore(from: &Path, to: &Path) -> anyhow::Result<i64> {
    let source = Connection::open_with_flags(from, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    let version = schema_version(&source)?;
    super::loadable(version)?;
    let mut target = Connection::open(to)?;
    target.execute_batch("PRAGMA busy_timeout = 30000;")?;
    let full = tables_with_rows(&target)?;
    if !full.is_empty() {
        return Err(not_empty(&full));
    }
    // Every page of the target is replaced, its empty schema (if any) with it.
    copy_all(&source, &mut target)?;
    target.execute_batch("PRAGMA journal_mode = WAL;")?;
    target.close().map_err(|(_, e)| e)?;
    Ok(version)
}

/// Copies every page in one step: one read transaction on the source, hence one consistent
/// state. A step refused by a lock is tried again.
fn copy_all(source: &Connection, target: &mut Connection) -> anyhow::Result<()> {
    let backup = Backup::new(source, target)?;
    for _ in 0..600 {
        match backup.step(-1)? {
            StepResult::Done => return Ok(()),
            StepResult::More | StepResult::Busy | StepResult::Locked => std::thread::sleep(Duration::from_millis(50)),
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    anyhow::bail!("the database stayed locked for 30 seconds; nothing was copied")
}

fn schema_version(conn: &Connection) -> anyhow::Result<i64> {
    let has_table: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
        [MIGRATIONS_TABLE],
        |row| row.get(0),
    )?;
    anyhow::ensure!(has_table, "the file holds no msgline database (no {MIGRATIONS_TABLE} table)");
    Ok(conn.query_row(&format!("SELECT COALESCE(MAX(version), 0) FROM {MIGRATIONS_TABLE}"), [], |row| row.get(0))?)
}

/// The tables (other than the migrations' record) that hold at least one row.
fn tables_with_rows(conn: &Connection) -> anyhow::Result<Vec<String>> {
    let mut statement = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> ?1 ORDER BY name",
    )?;
    let tables: Vec<String> =
        statement.query_map([MIGRATIONS_TABLE], |row| row.get(0))?.collect::<rusqlite::Result<_>>()?;
    let mut full = Vec::new();
    for table in tables {
        let any: bool = conn.query_row(&format!("SELECT EXISTS (SELECT 1 FROM \"{table}\")"), [], |row| row.get(0))?;
        if any {
            full.push(table);
        }
    }
    Ok(full)
}
