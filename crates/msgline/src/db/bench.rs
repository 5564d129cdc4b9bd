//! The bench's own rows (`msgline serve --bench-routes` and `msgline bench`): the floor table of
//! the storage ceiling, and the seeders of the read and scheduled scenarios. Nothing here is part
//! of the product's serving path; it lives in `db` because it writes rows as only `db` may.

use sqlx::Row;

use super::{Backend, Db};
use crate::{clock, ids};

/// Creates the floor's table.
pub async fn prepare(db: &Db) -> sqlx::Result<()> {
    sqlx::query("CREATE TABLE IF NOT EXISTS bench_floor (id TEXT PRIMARY KEY, created_at BIGINT NOT NULL)")
        .execute(db.writer())
        .await?;
    Ok(())
}

/// One durable single-row insert, alone on the writer: the storage ceiling `msgline bench`
/// compares the send path with.
pub async fn insert_floor(db: &Db) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO bench_floor (id, created_at) VALUES ($1, $2)")
        .bind(ids::new_id("floor"))
        .bind(clock::now_ms())
        .execute(db.writer())
        .await?;
    Ok(())
}

/// The first organisation and line, and 1,000 direct conversations of theirs (found or made):
/// what the seeders spread their messages over, as `(conversation, contact)`.
async fn seed_conversations(db: &Db) -> anyhow::Result<(String, String, Vec<(String, String)>)> {
    let line: String =
        sqlx::query("SELECT id FROM lines ORDER BY id LIMIT 1").fetch_one(db.writer()).await?.try_get(0)?;
    let org: String =
        sqlx::query("SELECT id FROM orgs ORDER BY id LIMIT 1").fetch_one(db.writer()).await?.try_get(0)?;
    let mut conversations = Vec::new();
    let mut tx = db.begin().await?;
    for i in 0..1000 {
        let phone = format!("+1201555{:04}", 7000 + (i % 2000));
        let contact = super::contacts::find_or_create(&mut *tx, &org, &phone).await?;
        let conversation =
            super::conversations::find_or_create_direct(&mut tx, &org, &line, &contact.id, &phone).await?;
        conversations.push((conversation.id, contact.id));
    }
    tx.commit().await?;
    Ok((org, line, conversations))
}

/// What a seeder does after each batch of `written` rows out of `rows`: a pause, so that the
/// server, writing to the same file from another process, gets the write lock between two; and
/// on SQLite, every 100,000 rows and at the end, what was written copied into the database file
/// and the log emptied (otherwise the log grows by gigabytes while the server's readers hold it
/// open, and every server connection maps its index for the rest of the run).
async fn between_batches(db: &Db, written: i64, rows: i64) -> anyhow::Result<()> {
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    if db.backend() == Backend::Sqlite && (written % 100_000 == 0 || written == rows) {
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(db.writer()).await?;
    }
    Ok(())
}

/// Fills the database with `rows` inbound messages spread over 1,000 conversations (for the read
/// benchmark); returns the id of one conversation to read.
pub async fn seed_messages(db: &Db, rows: i64) -> anyhow::Result<String> {
    let (org, line, conversations) = seed_conversations(db).await?;
    let now = clock::now_ms();
    let batch = 1_000;
    let mut written = 0;
    while written < rows {
        let mut tx = db.begin().await?;
        let n = batch.min(rows - written);
        for i in 0..n {
            let (conversation, contact) = &conversations[((written + i) % 1000) as usize];
            sqlx::query(
                "INSERT INTO messages (id, org_id, conversation_id, contact_id, line_id, direction, channel, kind, body, \
                 status, delivery_unknown, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, 'inbound', 'sms', 'text', 'seeded message', 'received', 0, $6, $6)",
            )
            .bind(ids::new_id("msg"))
            .bind(&org)
            .bind(conversation)
            .bind(contact)
            .bind(&line)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        written += n;
        between_batches(db, written, rows).await?;
    }
    Ok(conversations[0].0.clone())
}

/// Fills the database with `rows` scheduled messages (SMS texts of the first line, over 1,000
/// conversations) due at `send_at`, each its own pending outbox job as a scheduled send writes
/// it, with `body` as their text; for the `scheduled` benchmark.
pub async fn seed_scheduled(db: &Db, rows: i64, send_at: i64, body: &str) -> anyhow::Result<()> {
    let (org, line, conversations) = seed_conversations(db).await?;
    let now = clock::now_ms();
    let mut written = 0;
    while written < rows {
        let mut tx = db.begin().await?;
        let n = 1_000.min(rows - written);
        for i in 0..n {
            let (conversation, contact) = &conversations[((written + i) % 1000) as usize];
            sqlx::query(
                "INSERT INTO messages (id, org_id, conversation_id, contact_id, line_id, direction, channel, kind, body, \
                 status, delivery_unknown, created_at, updated_at, send_at, outbox_state, available_at, outbox_attempts) \
                 VALUES ($1, $2, $3, $4, $5, 'outbound', 'sms', 'text', $6, 'scheduled', 0, $7, $7, $8, 'pending', $8, 0)",
            )
            .bind(ids::new_id("msg"))
            .bind(&org)
            .bind(conversation)
            .bind(contact)
            .bind(&line)
            .bind(body)
            .bind(now)
            .bind(send_at)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        written += n;
        between_batches(db, written, rows).await?;
    }
    Ok(())
}
