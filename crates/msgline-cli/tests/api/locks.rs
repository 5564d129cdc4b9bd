//! Another process holding the database's write lock (a bench's seeder, an operator's shell)
//! delays msgline's writes; it does not fail them. Sends made meanwhile are accepted once the
//! lock is let go, the workers carry on, and nothing is logged as an error.

use std::{sync::Arc, time::Duration};

use serde_json::{Value, json};
use sqlx::{Connection, Executor};
use tokio::{io::AsyncBufReadExt, sync::Mutex};

use crate::helpers::{ProcessLine, TestDb, eventually, process_line, serve_process_with, use_postgres};

/// Longer than the 5 s SQLite used to wait before failing with `database is locked`.
const HOLD: Duration = Duration::from_secs(8);

#[tokio::test]
async fn a_write_lock_held_by_another_process_delays_sends_and_workers_without_an_error() {
    let db = TestDb::new().await;
    let url = db.url().to_string();
    let ProcessLine { key, port, sim: _sim, .. } = process_line(&url, "Locks").await;
    let mut server = serve_process_with(&url, port, &[], std::process::Stdio::piped()).await;
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut lines = tokio::io::BufReader::new(server.stderr.take().expect("piped")).lines();
    let reading = tokio::spawn({
        let log = log.clone();
        async move {
            while let Ok(Some(line)) = lines.next_line().await {
                log.lock().await.push(line);
            }
        }
    });
    let client = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let base = format!("http://127.0.0.1:{port}/api/v1/messaging");
    let send = |i: usize| {
        let (client, base, key) = (client.clone(), base.clone(), key.clone());
        async move {
            let answer = client
                .post(format!("{base}/messages"))
                .bearer_auth(&key)
                .json(&json!({"to": format!("+1201555{:04}", 3000 + i), "body": format!("held {i}")}))
                .send()
                .await
                .expect("the send answers");
            (answer.status().as_u16(), answer.json::<Value>().await.expect("json"))
        }
    };
    // Before the lock: a send goes through, so the line is known to work.
    assert_eq!(send(0).await.0, 202);

    // Another process's connection takes the write lock and keeps it.
    sqlx::any::install_default_drivers();
    let mut holder = sqlx::AnyConnection::connect(&url).await.expect("second connection");
    if use_postgres() {
        holder.execute("BEGIN").await.unwrap();
        holder.execute("LOCK TABLE messages IN EXCLUSIVE MODE").await.unwrap();
    } else {
        holder.execute("BEGIN IMMEDIATE").await.unwrap();
    }
    let sends: Vec<_> = (1..=5).map(|i| tokio::spawn(send(i))).collect();
    tokio::time::sleep(HOLD).await;
    holder.execute("COMMIT").await.unwrap();

    let mut ids = Vec::new();
    for sent in sends {
        let (status, body) = sent.await.unwrap();
        assert_eq!(status, 202, "a send waiting for the lock is accepted once it is free: {body}");
        ids.push(body["message"]["id"].as_str().unwrap().to_string());
    }
    for id in &ids {
        eventually(30, "the held sends to be delivered", || async {
            let answer = client.get(format!("{base}/messages/{id}")).bearer_auth(&key).send().await.ok()?;
            let body: Value = answer.json().await.ok()?;
            (body["status"] == "delivered").then_some(())
        })
        .await;
    }
    server.kill().await.unwrap();
    let _ = reading.await;
    let log = log.lock().await;
    let errors: Vec<&String> = log
        .iter()
        .filter(|line| line.contains("ERROR") || line.contains("locked") || line.contains("timed out"))
        .collect();
    assert!(errors.is_empty(), "nothing is logged as failing while another process holds the lock: {errors:#?}");
}
