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

/// What [`seed_grown`] wrote.
#[derive(Debug, Clone)]
pub struct Grown {
    pub messages: i64,
    pub events: i64,
    pub conversations: i64,
    /// One of the seeded conversations, with `messages / conversations` messages.
    pub conversation_id: String,
}

/// Messages inserted by one statement of [`seed_grown`].
const GROWN_CHUNK: i64 = 50_000;

/// Fills the database as a year of use would: `conversations` direct conversations of the first
/// line, each with its contact (made as the product makes them), then `messages` texts over the
/// past year spread evenly over them, in turns of one message to each: received, then sent and delivered, each with one
/// event (its last status; the fan-out already done), written by statements of 50,000 rows
/// generated in the database. Their ids sort before any id made now (`msg_000…` and a counter),
/// as older ids do. The tables' statistics are refreshed at the end, as the statistics worker
/// would once they grew (and on PostgreSQL the tables vacuumed, as autovacuum would have).
pub async fn seed_grown(db: &Db, messages: i64, conversations: i64) -> anyhow::Result<Grown> {
    let line: (String, String) = {
        let row = sqlx::query("SELECT id, e164 FROM lines ORDER BY id LIMIT 1").fetch_one(db.writer()).await?;
        (row.try_get(0)?, row.try_get(1)?)
    };
    let org: String =
        sqlx::query("SELECT id FROM orgs ORDER BY id LIMIT 1").fetch_one(db.writer()).await?.try_get(0)?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS bench_grown (n BIGINT PRIMARY KEY, conversation_id TEXT NOT NULL, \
         contact_id TEXT NOT NULL, phone TEXT NOT NULL)",
    )
    .execute(db.writer())
    .await?;
    let conversations = conversations.max(1);
    let mut made = 0;
    while made < conversations {
        let mut tx = db.begin().await?;
        for n in made..(made + 1000).min(conversations) {
            let phone = format!("+1302{:07}", n);
            let contact = super::contacts::find_or_create(&mut *tx, &org, &phone).await?;
            let conversation =
                super::conversations::find_or_create_direct(&mut tx, &org, &line.0, &contact.id, &phone).await?;
            sqlx::query("INSERT INTO bench_grown (n, conversation_id, contact_id, phone) VALUES ($1, $2, $3, $4)")
                .bind(n)
                .bind(&conversation.id)
                .bind(&contact.id)
                .bind(&phone)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        made = (made + 1000).min(conversations);
    }
    let padded = |prefix: &str| match db.backend() {
        Backend::Postgres => format!("'{prefix}_' || lpad(g::text, 26, '0')"),
        Backend::Sqlite => format!("'{prefix}_' || printf('%026d', g)"),
    };
    let (message_id, event_id) = (padded("msg"), padded("evt"));
    let now = clock::now_ms();
    let year = 365 * 86_400_000_i64;
    let step = (year / messages.max(1)).max(1);
    let start = now - year;
    // g counts the messages from 1; even ones are outbound.
    let sequence = "WITH RECURSIVE seq(g) AS (SELECT CAST($1 AS BIGINT) UNION ALL SELECT g + 1 FROM seq WHERE g < $2)";
    let at = "($3 + g * $4)";
    let insert_messages = format!(
        "INSERT INTO messages (id, org_id, conversation_id, contact_id, line_id, direction, channel, kind, body, status, \
         delivery_unknown, created_at, updated_at, submitted_at, sent_at, delivered_at, from_number, to_number) \
         {sequence} SELECT {message_id}, $5, c.conversation_id, c.contact_id, $6, \
         CASE WHEN (g / $8) % 2 = 0 THEN 'outbound' ELSE 'inbound' END, 'sms', 'text', 'seeded message number ' || g, \
         CASE WHEN (g / $8) % 2 = 0 THEN 'delivered' ELSE 'received' END, 0, {at}, {at} + 2000, \
         CASE WHEN (g / $8) % 2 = 0 THEN {at} + 5 END, CASE WHEN (g / $8) % 2 = 0 THEN {at} + 800 END, \
         CASE WHEN (g / $8) % 2 = 0 THEN {at} + 2000 END, CASE WHEN (g / $8) % 2 = 0 THEN $7 ELSE c.phone END, \
         CASE WHEN (g / $8) % 2 = 0 THEN c.phone ELSE $7 END \
         FROM seq JOIN bench_grown c ON c.n = g % $8"
    );
    // The event a message's last status wrote, with the message object as its data.
    let insert_events = format!(
        "INSERT INTO events (id, org_id, type, message_id, data, created_at, webhooks_pending) \
         {sequence} SELECT {event_id}, $5, \
         CASE WHEN (g / $8) % 2 = 0 THEN 'messaging.message.delivered' ELSE 'messaging.message.received' END, {message_id}, \
         '{{\"id\":\"' || {message_id} || '\",\"object\":\"message\",\"conversation_id\":\"' || c.conversation_id || \
         '\",\"contact_id\":\"' || c.contact_id || '\",\"line_id\":\"' || $6 || '\",\"from\":\"' || $7 || \
         '\",\"to\":\"' || c.phone || '\",\"direction\":\"outbound\",\"channel\":\"sms\",\"kind\":\"text\",\
         \"body\":\"seeded message number ' || g || '\",\"status\":\"delivered\",\"error\":null,\
         \"delivery_unknown\":false,\"reply_to\":null,\"effect\":null,\"subject\":null,\"edits\":[],\
         \"edited_at\":null,\"unsent_at\":null,\"created_at\":\"2026-01-01T00:00:00.000Z\",\
         \"updated_at\":\"2026-01-01T00:00:02.000Z\",\"sent_at\":\"2026-01-01T00:00:00.800Z\",\
         \"delivered_at\":\"2026-01-01T00:00:02.000Z\",\"read_at\":null}}', {at} + 2000, 0 \
         FROM seq JOIN bench_grown c ON c.n = g % $8"
    );
    let mut written = 0;
    while written < messages {
        let last = (written + GROWN_CHUNK).min(messages);
        for sql in [&insert_messages, &insert_events] {
            sqlx::query(sql)
                .bind(written + 1)
                .bind(last)
                .bind(start)
                .bind(step)
                .bind(&org)
                .bind(&line.0)
                .bind(&line.1)
                .bind(conversations)
                .execute(db.writer())
                .await?;
        }
        written = last;
        between_batches(db, written, messages).await?;
    }
    sqlx::query("UPDATE conversations SET last_message_at = $1 WHERE id IN (SELECT conversation_id FROM bench_grown)")
        .bind(now)
        .execute(db.writer())
        .await?;
    // On PostgreSQL, vacuumed as well: autovacuum comes after a bulk insert and reads the whole
    // table, which a database grown over a year has long behind it, and which would otherwise
    // run beside the measurements.
    let refresh = match db.backend() {
        Backend::Postgres => "VACUUM (ANALYZE)",
        Backend::Sqlite => "ANALYZE",
    };
    for table in ["messages", "events", "conversations", "contacts"] {
        sqlx::query(&format!("{refresh} {table}")).execute(db.writer()).await?;
    }
    let conversation_id: String =
        sqlx::query("SELECT conversation_id FROM bench_grown WHERE n = 1").fetch_one(db.writer()).await?.try_get(0)?;
    Ok(Grown { messages, events: messages, conversations, conversation_id })
}
