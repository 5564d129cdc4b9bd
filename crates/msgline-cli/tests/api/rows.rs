//! What one message costs the database: every row inserted, updated or deleted between a send
//! (with an `Idempotency-Key`, to a number never written to before) and its `delivered`, with
//! no webhook endpoint, counted by triggers on every table. docs/operations.md ("What a message
//! costs") lists the rows.

use std::{collections::BTreeMap, time::Duration};

use serde_json::{Value, json};
use sqlx::{Connection, Executor, Row};

use crate::helpers::{ProcessLine, TestDb, eventually, json_answer, process_line, serve_process, use_postgres};

/// Less than half of what a message cost before its row became its own outbox (19 row writes on
/// both engines): 8, since the request that writes a message claims it (docs/operations.md,
/// "What a message costs"). On PostgreSQL 10: that claim is a row of its own, inserted and
/// deleted, so that the message's updates change no indexed column (HOT updates, which write
/// no index entry).
fn most() -> i64 {
    if use_postgres() { 10 } else { 8 }
}

async fn count_writes(conn: &mut sqlx::AnyConnection) {
    conn.execute("CREATE TABLE row_writes (table_name TEXT NOT NULL, op TEXT NOT NULL)").await.unwrap();
    let list = if use_postgres() {
        conn.execute(
            "CREATE FUNCTION count_row_write() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN INSERT INTO row_writes VALUES (TG_TABLE_NAME, TG_OP); RETURN NULL; END $$",
        )
        .await
        .unwrap();
        "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'row_writes'"
    } else {
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'row_writes'"
    };
    let tables: Vec<String> =
        sqlx::query(list).fetch_all(&mut *conn).await.unwrap().iter().map(|row| row.get(0)).collect();
    assert!(tables.iter().any(|t| t == "messages"), "the schema is in place: {tables:?}");
    // The line check writes a line's health every 30 s whatever the traffic: not the message's.
    for table in tables.iter().filter(|t| *t != "lines") {
        for op in ["INSERT", "UPDATE", "DELETE"] {
            let sql = if use_postgres() {
                format!(
                    "CREATE TRIGGER count_{op}_{table} AFTER {op} ON {table} FOR EACH ROW \
                     EXECUTE FUNCTION count_row_write()"
                )
            } else {
                format!(
                    "CREATE TRIGGER count_{op}_{table} AFTER {op} ON {table} FOR EACH ROW \
                     BEGIN INSERT INTO row_writes VALUES ('{table}', '{op}'); END"
                )
            };
            conn.execute(sql.as_str()).await.unwrap();
        }
    }
}

#[tokio::test]
async fn one_message_sent_to_delivered_writes_at_most_half_the_rows_it_used_to() {
    let db = TestDb::new().await;
    let url = db.url().to_string();
    let ProcessLine { key, port, sim: _sim, .. } = process_line(&url, "Rows").await;
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(&url).await.expect("a connection of its own");
    count_writes(&mut conn).await;
    let _server = serve_process(&url, port, &[]).await;
    conn.execute("DELETE FROM row_writes").await.unwrap();

    let client = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}/api/v1/messaging");
    let sent: Value = json_answer(
        client
            .post(format!("{base}/messages"))
            .bearer_auth(&key)
            .header("Idempotency-Key", "rows-1")
            .json(&json!({"to": "+12015553000", "from": "+12015550100", "body": "what does this cost"})),
    )
    .await;
    let id = sent["message"]["id"].as_str().expect("accepted").to_string();
    eventually(30, "the message to be delivered", || async {
        let body: Value =
            client.get(format!("{base}/messages/{id}")).bearer_auth(&key).send().await.ok()?.json().await.ok()?;
        (body["status"] == "delivered").then_some(())
    })
    .await;
    // Whatever the workers still write about it (a settled job, a last mark) counts too.
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let mut writes = BTreeMap::<String, i64>::new();
    for row in sqlx::query("SELECT table_name, op FROM row_writes").fetch_all(&mut conn).await.unwrap() {
        let (table, op): (String, String) = (row.get(0), row.get(1));
        *writes.entry(format!("{op} {table}")).or_default() += 1;
    }
    let total: i64 = writes.values().sum();
    eprintln!(
        "rows written for one message ({}): {total} {writes:#?}",
        if use_postgres() { "postgres" } else { "sqlite" }
    );
    assert!(writes.contains_key("INSERT messages"), "the counting saw the send: {writes:#?}");
    let most = most();
    assert!(total <= most, "one message to delivered writes at most {most} rows, not {total}: {writes:#?}");
    // A claim kept apart ends with the line's answer.
    let claims = (writes.get("INSERT message_claims").copied(), writes.get("DELETE message_claims").copied());
    let expected = if use_postgres() { (Some(1), Some(1)) } else { (None, None) };
    assert_eq!(claims, expected, "{writes:#?}");
}
