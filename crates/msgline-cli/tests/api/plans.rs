//! PostgreSQL's plans (these tests always use PostgreSQL, whichever engine the rest of the run
//! uses). A connection keeps its prepared statements' plans for as long as it lives, or until
//! their tables' statistics change; a plan made on an empty table must still find rows by key
//! once the table is large: the commit lanes' by their settings, the readers' once msgline
//! analyses a table that grew fast.

use msgline::testing::{
    db::{self, Db},
    domain::lifecycle::MessageStatus,
};
use sqlx::Row;

use crate::helpers::{TestDb, eventually, plan_of};

/// Inserts `n` queued outbound messages into the conversation; returns their ids.
async fn queued(db: &Db, conversation: &str, n: i64) -> Vec<String> {
    let rows = sqlx::query(
        "INSERT INTO messages (id, org_id, conversation_id, contact_id, line_id, direction, channel, kind, body, \
         status, delivery_unknown, created_at, updated_at) \
         SELECT 'msg_plan_' || md5(random()::text || g::text), c.org_id, c.id, c.contact_id, c.line_id, 'outbound', \
         'sms', 'text', 'hello', 'queued', 0, 1, 1 FROM conversations c, generate_series(1, $2) g WHERE c.id = $1 \
         RETURNING id",
    )
    .bind(conversation)
    .bind(n)
    .fetch_all(db.writer_for_tests())
    .await
    .expect("messages are inserted");
    rows.iter().map(|row| row.get(0)).collect()
}

/// Moves every message to `submitted`, each in a commit request of its own, all at once: the
/// moves lane (where the database sends a batch that moves messages) takes them in a few shared commits, where they run as merged statements.
async fn submit_all(db: &Db, org: &str, ids: &[String]) {
    let mut messages = Vec::new();
    for id in ids {
        messages.push(db::messages::get(db, org, id).await.expect("read").expect("the message exists"));
    }
    let mut tasks = Vec::new();
    for message in messages {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            let mut batch = db::Batch::new();
            db::moves::stage_advance(&mut batch, db.backend(), &message, MessageStatus::Submitted, None)
                .expect("queued may move to submitted");
            db.commit(batch).await
        }));
    }
    for task in tasks {
        task.await.expect("the task runs").expect("the move commits");
    }
}

/// `(sequential tuples read, rows updated)` on `messages`, as the statistics have them.
async fn messages_stats(db: &Db) -> (i64, i64) {
    let row = sqlx::query("SELECT seq_tup_read, n_tup_upd FROM pg_stat_user_tables WHERE relname = 'messages'")
        .fetch_one(db.writer_for_tests())
        .await
        .expect("the statistics are readable");
    (row.get(0), row.get(1))
}

#[tokio::test]
async fn a_status_move_finds_its_message_by_key_even_when_its_plan_was_made_on_an_empty_table() {
    let test_db = TestDb::new_postgres().await;
    let db = Db::connect(test_db.url()).await.expect("the database connects");
    db.migrate().await.expect("the migrations apply");
    // No analysis in the middle of the test: it would make PostgreSQL plan again.
    sqlx::query("ALTER TABLE messages SET (autovacuum_enabled = false)")
        .execute(db.writer_for_tests())
        .await
        .expect("alter");
    msgline::admin::create_org(&db, "Plans").await.expect("org");
    let org: String = sqlx::query("SELECT id FROM orgs").fetch_one(db.writer_for_tests()).await.expect("org").get(0);
    let setup = msgline::admin::LineSetup::msgline("+12015550100", "dedicated", Some(&org), "http://127.0.0.1:9", None);
    msgline::admin::create_line(&db, setup).await.expect("line");
    let conversation = msgline::seed_bench_messages(&db, 0).await.expect("conversations");

    // While the table holds a few rows, the lane runs the merged move often enough for
    // PostgreSQL to settle on one plan for it.
    let mut moved = 0;
    for _ in 0..10 {
        let ids = queued(&db, &conversation, 8).await;
        submit_all(&db, &org, &ids).await;
        moved += ids.len() as i64;
    }
    // The table grows past what one scan should ever read for a handful of moves.
    let large = 20_000;
    queued(&db, &conversation, large).await;
    let ids = queued(&db, &conversation, 8).await;
    submit_all(&db, &org, &ids).await;
    moved += ids.len() as i64;

    // The lane reports its statistics within seconds of its last commit.
    let scanned = eventually(30, "the moves show in the statistics", || async {
        let (scanned, updated) = messages_stats(&db).await;
        (updated >= moved).then_some(scanned)
    })
    .await;
    assert!(
        scanned < large,
        "moving {} messages read {scanned} rows of a {large}-row table by sequential scan",
        ids.len()
    );
    let status: String = sqlx::query("SELECT status FROM messages WHERE id = $1")
        .bind(&ids[0])
        .fetch_one(db.writer_for_tests())
        .await
        .expect("read")
        .get(0);
    assert_eq!(status, "submitted");
    db.close().await;
}

/// Index entries read on `contacts`, over all its indexes, as the statistics have them.
async fn contacts_index_reads(db: &Db) -> i64 {
    sqlx::query("SELECT COALESCE(SUM(idx_tup_read), 0)::bigint FROM pg_stat_user_indexes WHERE relname = 'contacts'")
        .fetch_one(db.writer_for_tests())
        .await
        .expect("the statistics are readable")
        .get(0)
}

#[tokio::test]
async fn a_lookup_by_phone_reads_one_entry_once_a_table_that_grew_fast_is_analysed() {
    let test_db = TestDb::new_postgres().await;
    let db = Db::connect(test_db.url()).await.expect("the database connects");
    db.migrate().await.expect("the migrations apply");
    // Autovacuum stays out of it: the analysis under test is msgline's own.
    sqlx::query("ALTER TABLE contacts SET (autovacuum_enabled = false)")
        .execute(db.writer_for_tests())
        .await
        .expect("alter");
    msgline::admin::create_org(&db, "Plans").await.expect("org");
    let org: String = sqlx::query("SELECT id FROM orgs").fetch_one(db.writer_for_tests()).await.expect("org").get(0);
    let lookups = |prefix: &'static str| {
        let (db, org) = (db.clone(), org.clone());
        async move {
            for i in 0..40 {
                let phone = format!("{prefix}{i:04}");
                let found = db::contacts::reachability_by_phone(&db, &org, &phone).await.expect("read");
                assert_eq!(found, None);
                // A first send's read of everything it needs of its recipient.
                let recipient = db::conversations::recipient(&db, &org, "line_none", &phone).await.expect("read");
                assert_eq!(recipient, db::conversations::Recipient::default());
            }
        }
    };
    // A send's reachability lookup, asked often while the organisation has few contacts: each
    // reader settles on a plan made without statistics.
    lookups("+1201555").await;
    let large = 20_000;
    sqlx::query(
        "INSERT INTO contacts (id, org_id, phone, created_at, updated_at) \
         SELECT 'ct_' || g, $1, '+130' || lpad(g::text, 8, '0'), 0, 0 FROM generate_series(1, $2) g",
    )
    .bind(&org)
    .bind(large)
    .execute(db.writer_for_tests())
    .await
    .expect("contacts are inserted");
    // Statistics reach the views within a second or so of a transaction's end.
    let analysed = eventually(30, "the grown table is analysed", || async {
        let tables = db::planner::analyze_grown(&db).await.expect("analyse");
        tables.contains(&"contacts".to_string()).then_some(tables)
    })
    .await;
    assert!(!analysed.contains(&"orgs".to_string()), "a table with one row is left to autovacuum: {analysed:?}");
    let before = contacts_index_reads(&db).await;
    lookups("+1401555").await;
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let read = contacts_index_reads(&db).await - before;
    assert!(read < 1_000, "80 lookups by phone read {read} index entries of a {large}-row table");
    // Analysed now, the table is left alone until it changes again by half.
    assert!(!db::planner::analyze_grown(&db).await.expect("analyse").contains(&"contacts".to_string()));
    db.close().await;
}

/// The webhook worker's looks for work (an event to fan out; a delivery due, or one whose claim
/// ran out) read their queues' indexes even when the statistics were taken just after a burst,
/// when nearly every event was new and every delivery due. Then a look with no order was
/// planned as a read of the table from its start, past every event and delivery handled since,
/// on every look: a drain ran at under 1,000 events a second instead of over 5,000.
#[tokio::test]
async fn the_webhook_workers_looks_read_their_queues_after_statistics_taken_in_a_burst() {
    let test_db = TestDb::new_postgres().await;
    let db = Db::connect(test_db.url()).await.expect("the database connects");
    db.migrate().await.expect("the migrations apply");
    for table in ["events", "webhook_deliveries"] {
        sqlx::query(&format!("ALTER TABLE {table} SET (autovacuum_enabled = false)"))
            .execute(db.writer_for_tests())
            .await
            .expect("alter");
    }
    msgline::admin::create_org(&db, "Burst").await.expect("org");
    let org: String = sqlx::query("SELECT id FROM orgs").fetch_one(db.writer_for_tests()).await.expect("org").get(0);

    // A burst: 5,000 events, none fanned out, and a delivery due for each; analysed then.
    sqlx::query(
        "INSERT INTO events (id, org_id, type, data, created_at) \
         SELECT 'evt_burst_' || lpad(g::text, 5, '0'), $1, 'message.sent', '{}', g FROM generate_series(1, 5000) g",
    )
    .bind(&org)
    .execute(db.writer_for_tests())
    .await
    .expect("events");
    sqlx::query(
        "INSERT INTO webhook_deliveries (id, org_id, webhook_id, event_id, state, attempts, next_attempt_at, \
         created_at, updated_at) SELECT 'whd_' || id, org_id, 'wh_gone', id, 'pending', 0, 1, 1, 1 FROM events",
    )
    .execute(db.writer_for_tests())
    .await
    .expect("deliveries");
    sqlx::query("ANALYZE events, webhook_deliveries").execute(db.writer_for_tests()).await.expect("analyze");
    // Then all but the last were handled.
    let last = "evt_burst_05000";
    sqlx::query("UPDATE events SET webhooks_pending = 0 WHERE id < $1")
        .bind(last)
        .execute(db.writer_for_tests())
        .await
        .unwrap();
    sqlx::query("UPDATE webhook_deliveries SET state = 'delivered', next_attempt_at = NULL WHERE event_id < $1")
        .bind(last)
        .execute(db.writer_for_tests())
        .await
        .unwrap();

    let unfanned = plan_of(&db, false, db::webhook_fan_out::ANY_UNFANNED).await;
    assert!(unfanned.iter().any(|line| line.contains("events_webhooks_pending")), "{unfanned:#?}");
    let due = plan_of(&db, false, db::webhook_deliveries::ANY_DUE).await;
    for index in ["webhook_deliveries_waiting", "webhook_deliveries_posting"] {
        assert!(due.iter().any(|line| line.contains(index)), "{index}: {due:#?}");
    }
    // And the looks find what is left.
    let found: String =
        sqlx::query(db::webhook_fan_out::ANY_UNFANNED).fetch_one(db.reader_for_tests()).await.unwrap().get(0);
    assert_eq!(found, last);
    assert!(db::webhook_deliveries::any_due(&db, msgline::clock::now_ms()).await.unwrap());
    db.close().await;
}
