//! The SQLite and PostgreSQL migrations describe the same schema. These tests always use both
//! engines, whichever one the rest of the run uses.

use std::collections::BTreeSet;

use msgline::Db;
use sqlx::Row;

use crate::helpers::TestDb;

async fn migrated(test_db: &TestDb) -> Db {
    let db = Db::connect(test_db.url()).await.expect("the database connects");
    db.migrate().await.expect("the migrations apply");
    db
}

/// Both engines, freshly migrated. The `TestDb`s must outlive the handles.
async fn both() -> ((TestDb, Db), (TestDb, Db)) {
    let sqlite = TestDb::new_sqlite().await;
    let postgres = TestDb::new_postgres().await;
    let (sqlite_db, postgres_db) = (migrated(&sqlite).await, migrated(&postgres).await);
    ((sqlite, sqlite_db), (postgres, postgres_db))
}

/// The names of the migrations from `version` on, as `migrate` returns them.
fn applied_from(version: i64) -> Vec<String> {
    msgline::testing::db::MIGRATIONS.iter().filter(|m| m.version >= version).map(|m| m.name.to_string()).collect()
}

async fn strings(db: &Db, sql: &str) -> BTreeSet<Vec<String>> {
    sqlx::query(sql)
        .fetch_all(db.reader_for_tests())
        .await
        .expect("the catalogue query runs")
        .iter()
        .map(|row| (0..row.len()).map(|i| row.get::<String, _>(i)).collect())
        .collect()
}

/// `(table, column, nullable)` of every column but SQLite's own tables. A SQLite primary key
/// column other than `INTEGER PRIMARY KEY` may technically hold NULL; msgline never stores one,
/// so it counts as NOT NULL, as it is on PostgreSQL.
const SQLITE_COLUMNS: &str = "SELECT m.name, p.name, \
     CASE WHEN p.\"notnull\" = 1 OR p.pk > 0 THEN 'NO' ELSE 'YES' END \
     FROM sqlite_master m, pragma_table_info(m.name) p \
     WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'";
const POSTGRES_COLUMNS: &str = "SELECT table_name::text, column_name::text, is_nullable::text \
     FROM information_schema.columns WHERE table_schema = 'public'";

/// Indexes made by `CREATE INDEX`, not those behind primary keys and UNIQUE constraints.
const SQLITE_INDEXES: &str = "SELECT tbl_name, name FROM sqlite_master \
     WHERE type = 'index' AND name NOT LIKE 'sqlite\\_autoindex%' ESCAPE '\\'";
const POSTGRES_INDEXES: &str = "SELECT tablename::text, indexname::text FROM pg_indexes \
     WHERE schemaname = 'public' AND indexname NOT IN (SELECT conname FROM pg_constraint)";

#[tokio::test]
async fn sqlite_and_postgres_migrations_make_the_same_tables_and_columns() {
    let ((_s, sqlite), (_p, postgres)) = both().await;
    let sqlite_columns = strings(&sqlite, SQLITE_COLUMNS).await;
    let postgres_columns = strings(&postgres, POSTGRES_COLUMNS).await;

    let names = |set: &BTreeSet<Vec<String>>| -> BTreeSet<(String, String)> {
        set.iter().map(|c| (c[0].clone(), c[1].clone())).collect()
    };
    let (sqlite_names, postgres_names) = (names(&sqlite_columns), names(&postgres_columns));
    assert!(sqlite_names.iter().any(|(t, _)| t == "contacts"), "the catalogue query finds tables: {sqlite_names:?}");
    assert_eq!(
        sqlite_names,
        postgres_names,
        "only in SQLite: {:?}; only in PostgreSQL: {:?}",
        sqlite_names.difference(&postgres_names).collect::<Vec<_>>(),
        postgres_names.difference(&sqlite_names).collect::<Vec<_>>()
    );
    assert_eq!(
        sqlite_columns,
        postgres_columns,
        "nullability differs: SQLite {:?}, PostgreSQL {:?}",
        sqlite_columns.difference(&postgres_columns).collect::<Vec<_>>(),
        postgres_columns.difference(&sqlite_columns).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn sqlite_and_postgres_migrations_make_the_same_indexes() {
    let ((_s, sqlite), (_p, postgres)) = both().await;
    let sqlite_indexes = strings(&sqlite, SQLITE_INDEXES).await;
    let postgres_indexes = strings(&postgres, POSTGRES_INDEXES).await;
    assert!(!sqlite_indexes.is_empty());
    assert_eq!(sqlite_indexes, postgres_indexes);
}

#[tokio::test]
async fn migrating_twice_applies_nothing_the_second_time() {
    let ((_s, sqlite), (_p, postgres)) = both().await;
    for db in [&sqlite, &postgres] {
        assert_eq!(db.migrate().await.unwrap(), Vec::<&str>::new());
        let applied = strings(db, "SELECT name FROM msgline_migrations").await;
        let expected: BTreeSet<Vec<String>> =
            msgline::testing::db::MIGRATIONS.iter().map(|m| vec![m.name.to_string()]).collect();
        assert_eq!(applied, expected);
    }
}

/// On PostgreSQL the tables updated soon after each insert keep half of every page free, so
/// that a status update can stay on its row's page without adding index entries.
#[tokio::test]
async fn postgres_leaves_room_on_each_page_for_message_and_conversation_updates() {
    let postgres = TestDb::new_postgres().await;
    let db = migrated(&postgres).await;
    let options = strings(
        &db,
        "SELECT relname::text, array_to_string(reloptions, ',') FROM pg_class \
         WHERE relname IN ('messages', 'conversations') AND relkind = 'r'",
    )
    .await;
    let expected: BTreeSet<Vec<String>> = [["conversations", "fillfactor=50"], ["messages", "fillfactor=50"]]
        .iter()
        .map(|row| row.iter().map(|s| s.to_string()).collect())
        .collect();
    assert_eq!(options, expected);
}

/// A database migrated up to (not including) `version`, as an older msgline left it.
async fn migrated_before(test_db: &TestDb, version: i64) -> Db {
    let db = Db::connect(test_db.url()).await.expect("the database connects");
    let mut conn = db.writer_for_tests().acquire().await.unwrap();
    sqlx::raw_sql(
        "CREATE TABLE msgline_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
    )
    .execute(&mut *conn)
    .await
    .unwrap();
    for migration in msgline::testing::db::MIGRATIONS.iter().filter(|m| m.version < version) {
        let sql = match db.backend() {
            msgline::Backend::Sqlite => migration.sqlite,
            msgline::Backend::Postgres => migration.postgres,
        };
        sqlx::raw_sql(sql).execute(&mut *conn).await.unwrap();
        sqlx::query("INSERT INTO msgline_migrations (version, name, applied_at) VALUES ($1, $2, 0)")
            .bind(migration.version)
            .bind(migration.name)
            .execute(&mut *conn)
            .await
            .unwrap();
    }
    drop(conn);
    db
}

/// Upgrading a database whose sends kept their idempotency records in a table of their own:
/// each send's record lands on its message (its answer's extra objects kept), the key still
/// finds it, and other routes' records stay where they were.
#[tokio::test]
async fn the_idempotency_migration_carries_send_keys_over_onto_their_messages() {
    let (sqlite, postgres) = (TestDb::new_sqlite().await, TestDb::new_postgres().await);
    for test_db in [&sqlite, &postgres] {
        let db = migrated_before(test_db, 13).await;
        let mut conn = db.writer_for_tests().acquire().await.unwrap();
        sqlx::raw_sql(
            r#"INSERT INTO orgs (id, name, created_at) VALUES ('org_1', 'Old', 1);
             INSERT INTO lines (id, org_id, e164, kind, bridge_url, bridge_secret_hash, status, created_at)
               VALUES ('line_1', 'org_1', '+12015550100', 'dedicated', 'http://127.0.0.1:9', 'h', 'online', 1);
             INSERT INTO conversations (id, org_id, line_id, kind, created_at)
               VALUES ('conv_1', 'org_1', 'line_1', 'group', 1);
             INSERT INTO messages (id, org_id, conversation_id, line_id, direction, channel, kind, body, status,
               delivery_unknown, created_at, updated_at) VALUES
               ('msg_text', 'org_1', 'conv_1', 'line_1', 'outbound', 'imessage', 'text', 'a', 'delivered', 0, 1, 9),
               ('msg_poll', 'org_1', 'conv_1', 'line_1', 'outbound', 'imessage', 'poll', 'b', 'sent', 0, 1, 9),
               ('msg_free', 'org_1', 'conv_1', 'line_1', 'outbound', 'imessage', 'text', 'c', 'sent', 0, 1, 9);
             INSERT INTO idempotency_keys (org_id, method, path, idem_key, fingerprint, state, response_status,
               response_body, created_at, expires_at) VALUES
               ('org_1', 'POST', '/messages', 'k1', 'f1', 'done', 202,
                '{"message":{"id":"msg_text"},"duplicate":false,"delivery_unknown":false}', 1, 5000),
               ('org_1', 'POST', '/polls', 'k2', 'f2', 'done', 202,
                '{"message":{"id":"msg_poll"},"duplicate":false,"delivery_unknown":false,"poll":{"id":"poll_1"}}', 1, 5000),
               ('org_1', 'POST', '/groups', 'k3', 'f3', 'done', 201, '{"group":{"id":"conv_1"}}', 1, 5000);"#,
        )
        .execute(&mut *conn)
        .await
        .unwrap();
        drop(conn);

        assert_eq!(db.migrate().await.unwrap(), applied_from(13));
        let rows = strings(
            &db,
            "SELECT id, COALESCE(idem_key, '-'), COALESCE(idem_fingerprint, '-'), COALESCE(idem_extra, '-'), \
             COALESCE(CAST(idem_expires_at AS TEXT), '-') FROM messages",
        )
        .await;
        let poll: serde_json::Value =
            serde_json::from_str(&rows.iter().find(|row| row[0] == "msg_poll").expect("the poll message")[3])
                .expect("the poll's answer, as JSON");
        assert_eq!(poll, serde_json::json!({"poll": {"id": "poll_1"}}), "on {:?}", db.backend());
        let without_extra: BTreeSet<Vec<String>> = rows
            .iter()
            .map(|row| {
                row.iter()
                    .enumerate()
                    .map(|(i, v)| if i == 3 && row[0] == "msg_poll" { "poll".into() } else { v.clone() })
                    .collect()
            })
            .collect();
        let expected: BTreeSet<Vec<String>> = [
            ["msg_text", "/messages k1", "f1", "-", "5000"],
            ["msg_poll", "/polls k2", "f2", "poll", "5000"],
            ["msg_free", "-", "-", "-", "-"],
        ]
        .iter()
        .map(|row| row.iter().map(|s| s.to_string()).collect())
        .collect();
        assert_eq!(without_extra, expected, "on {:?}", db.backend());
        let left = strings(&db, "SELECT path, idem_key FROM idempotency_keys").await;
        assert_eq!(left, [vec!["/groups".to_string(), "k3".to_string()]].into_iter().collect());
        let (message, fingerprint) = msgline::testing::db::idempotency::find_send(&db, "org_1", "/messages k1", 10)
            .await
            .unwrap()
            .expect("the key finds it");
        assert_eq!((message.id.as_str(), fingerprint.as_str()), ("msg_text", "f1"));
        assert!(
            msgline::testing::db::idempotency::find_send(&db, "org_1", "/messages k1", 5000).await.unwrap().is_none()
        );
        db.close().await;
    }
}

/// Upgrading a database whose outbox was a table of its own: every waiting job lands on its
/// message, settled messages have none, and the dispatcher claims what was pending.
#[tokio::test]
async fn the_outbox_migration_carries_waiting_jobs_over_onto_their_messages() {
    let (sqlite, postgres) = (TestDb::new_sqlite().await, TestDb::new_postgres().await);
    for test_db in [&sqlite, &postgres] {
        let db = migrated_before(test_db, 12).await;
        let mut conn = db.writer_for_tests().acquire().await.unwrap();
        sqlx::raw_sql(
            "INSERT INTO orgs (id, name, created_at) VALUES ('org_1', 'Old', 1);
             INSERT INTO lines (id, org_id, e164, kind, bridge_url, bridge_secret_hash, status, created_at) \
               VALUES ('line_1', 'org_1', '+12015550100', 'dedicated', 'http://127.0.0.1:9', 'h', 'online', 1);
             INSERT INTO conversations (id, org_id, line_id, kind, created_at) \
               VALUES ('conv_1', 'org_1', 'line_1', 'group', 1);
             INSERT INTO messages (id, org_id, conversation_id, line_id, direction, channel, kind, body, status, \
               delivery_unknown, created_at, updated_at) VALUES \
               ('msg_pending', 'org_1', 'conv_1', 'line_1', 'outbound', 'imessage', 'text', 'a', 'queued', 0, 1, 1), \
               ('msg_unknown', 'org_1', 'conv_1', 'line_1', 'outbound', 'imessage', 'text', 'b', 'unknown', 1, 1, 1), \
               ('msg_done', 'org_1', 'conv_1', 'line_1', 'outbound', 'imessage', 'text', 'c', 'delivered', 0, 1, 1);
             INSERT INTO outbox (message_id, line_id, state, attempts, available_at, claimed_until, created_at) VALUES \
               ('msg_pending', 'line_1', 'pending', 0, 5, NULL, 1), \
               ('msg_unknown', 'line_1', 'unknown', 2, 7, NULL, 1);",
        )
        .execute(&mut *conn)
        .await
        .unwrap();
        drop(conn);

        assert_eq!(db.migrate().await.unwrap(), applied_from(12));
        let rows = strings(
            &db,
            "SELECT id, COALESCE(outbox_state, '-'), CAST(outbox_attempts AS TEXT), \
             COALESCE(CAST(available_at AS TEXT), '-') FROM messages",
        )
        .await;
        let expected: BTreeSet<Vec<String>> =
            [["msg_done", "-", "0", "-"], ["msg_pending", "pending", "0", "5"], ["msg_unknown", "unknown", "2", "7"]]
                .iter()
                .map(|row| row.iter().map(|s| s.to_string()).collect())
                .collect();
        assert_eq!(rows, expected, "on {:?}", db.backend());
        let claimed = msgline::testing::db::outbox::claim_pending(&db, 10, 1_000, 10).await.unwrap();
        assert_eq!(claimed.iter().map(|j| j.message_id.as_str()).collect::<Vec<_>>(), vec!["msg_pending"]);
        assert_eq!(claimed[0].attempts, 1);
        db.close().await;
    }
}
