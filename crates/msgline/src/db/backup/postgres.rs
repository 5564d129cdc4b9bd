//! PostgreSQL's side of backup and restore: every table as `COPY` text, read in one snapshot.
//!
//! The file: the line `MSGLINE-BACKUP 1 postgres`, a line of JSON naming the schema version and
//! the tables (parents before the tables that refer to them) with their columns, then for each
//! table in that order its rows as blocks, each a 4-byte big-endian length and that many bytes
//! of `COPY` text, ended by a block of length 0.

use std::{
    io::{BufReader, BufWriter, Read, Write},
    path::Path,
};

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use sqlx::{Connection, Executor, PgConnection, Row};

use super::{MIGRATIONS_TABLE, not_empty};

pub const MAGIC: &[u8] = b"MSGLINE-BACKUP 1 postgres\n";

/// Rows are written and sent in blocks of about this many bytes.
const BLOCK: usize = 256 * 1024;

#[derive(Serialize, Deserialize)]
struct Header {
    schema_version: i64,
    created_at: String,
    tables: Vec<Table>,
}

#[derive(Serialize, Deserialize)]
struct Table {
    name: String,
    columns: Vec<String>,
}

/// Writes every table of the database at `url` to the new file `to`; returns the schema version.
pub async fn backup(url: &str, to: &Path) -> anyhow::Result<i64> {
    let mut conn = PgConnection::connect(url).await?;
    // One snapshot for every read below; no lock beyond what any reader takes.
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY").await?;
    let schema_version: i64 = sqlx::query(&format!("SELECT COALESCE(MAX(version), 0) FROM {MIGRATIONS_TABLE}"))
        .fetch_one(&mut conn)
        .await
        .map_err(|e| anyhow::anyhow!("the database holds no msgline schema: {e}"))?
        .get(0);
    let tables = tables_in_order(&mut conn).await?;
    let header = Header { schema_version, created_at: crate::clock::rfc3339(crate::clock::now_ms()), tables };
    let mut out = BufWriter::with_capacity(BLOCK, std::fs::File::create(to)?);
    out.write_all(MAGIC)?;
    serde_json::to_writer(&mut out, &header)?;
    out.write_all(b"\n")?;
    for table in &header.tables {
        let mut rows =
            conn.copy_out_raw(&format!("COPY {} ({}) TO STDOUT", quoted(&table.name), column_list(table))).await?;
        let mut block = Vec::with_capacity(BLOCK);
        while let Some(chunk) = rows.next().await {
            block.extend_from_slice(&chunk?);
            if block.len() >= BLOCK {
                write_block(&mut out, &block)?;
                block.clear();
            }
        }
        if !block.is_empty() {
            write_block(&mut out, &block)?;
        }
        write_block(&mut out, &[])?;
    }
    conn.execute("COMMIT").await?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    conn.close().await?;
    Ok(schema_version)
}

/// Loads the backup file `from` into the empty database at `url`; returns its schema version.
pub async fn restore(url: &str, from: &Path) -> anyhow::Result<i64> {
    let mut input = BufReader::with_capacity(BLOCK, std::fs::File::open(from)?);
    let mut magic = vec![0u8; MAGIC.len()];
    input.read_exact(&mut magic)?;
    anyhow::ensure!(magic == MAGIC, "{} is not a PostgreSQL backup of msgline", from.display());
    let header: Header = serde_json::from_str(&read_line(&mut input)?)
        .map_err(|e| anyhow::anyhow!("the backup's header is damaged: {e}"))?;
    super::loadable(header.schema_version)?;

    let mut conn = PgConnection::connect(url).await?;
    let full = tables_with_rows(&mut conn).await?;
    if !full.is_empty() {
        return Err(not_empty(&full));
    }
    let current = current_version(&mut conn).await?;
    anyhow::ensure!(
        current <= header.schema_version,
        "the database already has msgline's schema version {current}, newer than the backup's {}: restore into a newly created database",
        header.schema_version
    );
    // The empty database gets the schema the backup was made with.
    let db = crate::db::Db::connect_for_command(url).await?;
    let migrated = super::migrate::run_until(&db, header.schema_version).await;
    db.close().await;
    migrated?;

    conn.execute("BEGIN").await?;
    for table in &header.tables {
        let mut copy =
            conn.copy_in_raw(&format!("COPY {} ({}) FROM STDIN", quoted(&table.name), column_list(table))).await?;
        let mut block = Vec::with_capacity(BLOCK);
        loop {
            let mut length = [0u8; 4];
            input.read_exact(&mut length).map_err(|e| anyhow::anyhow!("the backup ends early: {e}"))?;
            let length = u32::from_be_bytes(length) as usize;
            if length == 0 {
                break;
            }
            block.resize(length, 0);
            input.read_exact(&mut block).map_err(|e| anyhow::anyhow!("the backup ends early: {e}"))?;
            copy.send(block.as_slice()).await?;
        }
        copy.finish().await.map_err(|e| anyhow::anyhow!("loading {}: {e}", table.name))?;
    }
    renumber_feed(&mut conn).await?;
    conn.execute("COMMIT").await?;
    conn.execute("ANALYZE").await?;
    conn.close().await?;
    Ok(header.schema_version)
}

/// The event feed orders events by the id of the transaction that wrote them, which is this
/// server's own count: the restored events are put before every transaction of the new one
/// (keeping their order), and the feed's sequence goes on after them.
async fn renumber_feed(conn: &mut PgConnection) -> anyhow::Result<()> {
    let has_feed: bool = sqlx::query(
        "SELECT EXISTS (SELECT 1 FROM information_schema.columns \
         WHERE table_schema = current_schema() AND table_name = 'events' AND column_name = 'feed_txid')",
    )
    .fetch_one(&mut *conn)
    .await?
    .get(0);
    if has_feed {
        conn.execute("UPDATE events SET feed_txid = 0 WHERE feed_txid IS NOT NULL").await?;
        conn.execute("SELECT setval('events_feed_seq', GREATEST((SELECT MAX(feed_seq) FROM events), 1))").await?;
    }
    Ok(())
}

/// The schema's tables but the migrations' record, each after the tables it refers to.
async fn tables_in_order(conn: &mut PgConnection) -> anyhow::Result<Vec<Table>> {
    let names = table_names(conn).await?;
    let references: Vec<(String, String)> = sqlx::query(
        "SELECT child.relname::text, parent.relname::text FROM pg_constraint c \
         JOIN pg_class child ON child.oid = c.conrelid JOIN pg_class parent ON parent.oid = c.confrelid \
         WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace",
    )
    .fetch_all(&mut *conn)
    .await?
    .iter()
    .map(|row| (row.get(0), row.get(1)))
    .collect();
    let mut ordered = Vec::with_capacity(names.len());
    let mut left = names;
    while !left.is_empty() {
        let ready: Vec<String> = left
            .iter()
            .filter(|name| {
                references.iter().all(|(child, parent)| child != *name || parent == *name || !left.contains(parent))
            })
            .cloned()
            .collect();
        anyhow::ensure!(!ready.is_empty(), "the tables refer to each other in a circle: {left:?}");
        left.retain(|name| !ready.contains(name));
        ordered.extend(ready);
    }
    let mut tables = Vec::with_capacity(ordered.len());
    for name in ordered {
        let columns = sqlx::query(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position",
        )
        .bind(&name)
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|row| row.get(0))
        .collect();
        tables.push(Table { name, columns });
    }
    Ok(tables)
}

/// The schema's tables but the migrations' record, by name.
async fn table_names(conn: &mut PgConnection) -> anyhow::Result<Vec<String>> {
    Ok(sqlx::query(
        "SELECT table_name::text FROM information_schema.tables \
         WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> $1 ORDER BY 1",
    )
    .bind(MIGRATIONS_TABLE)
    .fetch_all(&mut *conn)
    .await?
    .iter()
    .map(|row| row.get(0))
    .collect())
}

async fn tables_with_rows(conn: &mut PgConnection) -> anyhow::Result<Vec<String>> {
    let names = table_names(conn).await?;
    let mut full = Vec::new();
    for name in names {
        let any: bool = sqlx::query(&format!("SELECT EXISTS (SELECT 1 FROM {})", quoted(&name)))
            .fetch_one(&mut *conn)
            .await?
            .get(0);
        if any {
            full.push(name);
        }
    }
    Ok(full)
}

async fn current_version(conn: &mut PgConnection) -> anyhow::Result<i64> {
    let exists: bool =
        sqlx::query("SELECT to_regclass($1) IS NOT NULL").bind(MIGRATIONS_TABLE).fetch_one(&mut *conn).await?.get(0);
    if !exists {
        return Ok(0);
    }
    Ok(sqlx::query(&format!("SELECT COALESCE(MAX(version), 0) FROM {MIGRATIONS_TABLE}"))
        .fetch_one(&mut *conn)
        .await?
        .get(0))
}

fn write_block(out: &mut impl Write, block: &[u8]) -> std::io::Result<()> {
    out.write_all(&(block.len() as u32).to_be_bytes())?;
    out.write_all(block)
}

fn read_line(input: &mut impl std::io::BufRead) -> anyhow::Result<String> {
    let mut line = String::new();
    input.read_line(&mut line)?;
    Ok(line)
}

fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn column_list(table: &Table) -> String {
    table.columns.iter().map(|c| quoted(c)).collect::<Vec<_>>().join(", ")
}
