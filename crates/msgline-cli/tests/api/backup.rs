//! `msgline admin backup` while the server sends, and `msgline admin restore` into a new
//! database that a server then runs on: the messages, idempotency keys, API keys and webhook
//! endpoints of the moment of the backup are all there.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::{
    helpers::{ProcessLine, TestDb, api, eventually, json_answer, process_line, run_cli, serve_process},
    receiver::Receiver,
};

const PRIVATE: (&str, &str) = ("MSGLINE_ALLOW_PRIVATE_TARGETS", "true");

/// One accepted send: its number, id, when it was asked for and when its answer came back.
#[derive(Clone)]
struct Accepted {
    i: usize,
    id: String,
    asked: Instant,
    answered: Instant,
}

async fn send(client: &reqwest::Client, port: u16, key: &str, i: usize) -> reqwest::Response {
    client
        .post(api(port, "/messages"))
        .bearer_auth(key)
        .header("Idempotency-Key", format!("backup-{i}"))
        .json(&json!({"to": format!("+1201555{:04}", 3000 + i % 500), "body": format!("backup test {i}")}))
        .send()
        .await
        .expect("the server answers")
}

async fn status_of(client: &reqwest::Client, port: u16, key: &str, id: &str) -> (u16, Value) {
    let answer = client.get(api(port, &format!("/messages/{id}"))).bearer_auth(key).send().await.unwrap();
    (answer.status().as_u16(), answer.json().await.unwrap_or(Value::Null))
}

async fn count_messages(url: &str) -> i64 {
    use sqlx::{Connection, Row};
    sqlx::any::install_default_drivers();
    let mut conn = sqlx::AnyConnection::connect(url).await.expect("the database opens");
    sqlx::query("SELECT COUNT(*) FROM messages").fetch_one(&mut conn).await.unwrap().get::<i64, _>(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_backup_taken_under_load_restores_messages_keys_and_webhooks_into_a_new_database() {
    let source = TestDb::new().await;
    let ProcessLine { key, port, sim: _sim, .. } = process_line(source.url(), "Backup Org").await;
    let mut server = serve_process(source.url(), port, &[PRIVATE]).await;
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let receiver = Receiver::start().await;
    let endpoint: Value = json_answer(
        client
            .post(api(port, "/webhooks"))
            .bearer_auth(&key)
            .json(&json!({"url": receiver.url("/hook"), "events": ["messaging.message.delivered"]})),
    )
    .await;
    let secret = endpoint["secret"].as_str().expect("the endpoint's secret").to_string();
    let reader: Value = json_answer(
        client
            .post(api(port, "/keys"))
            .bearer_auth(&key)
            .json(&json!({"scopes": ["messaging_read"], "name": "reader"})),
    )
    .await;
    let reader_key = reader["key"].as_str().expect("a read key").to_string();

    // Settled before the backup: 40 messages, every one delivered.
    let mut settled = Vec::new();
    for i in 0..40 {
        let body: Value = send(&client, port, &key, i).await.json().await.unwrap();
        settled.push(body["message"]["id"].as_str().expect("an id").to_string());
    }
    for id in &settled {
        eventually(30, "a settled message to be delivered", || async {
            (status_of(&client, port, &key, id).await.1["status"] == "delivered").then_some(())
        })
        .await;
    }

    // Sends keep coming, from four connections, while the backup is made.
    let accepted: Arc<Mutex<Vec<Accepted>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(1000));
    let mut senders = Vec::new();
    for _ in 0..4 {
        let (client, key, accepted, stop, next) =
            (client.clone(), key.clone(), accepted.clone(), stop.clone(), next.clone());
        senders.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let asked = Instant::now();
                let answer = send(&client, port, &key, i).await;
                assert_eq!(answer.status(), 202, "a send under load is accepted");
                let body: Value = answer.json().await.unwrap();
                let id = body["message"]["id"].as_str().unwrap().to_string();
                accepted.lock().await.push(Accepted { i, id, asked, answered: Instant::now() });
            }
        }));
    }
    eventually(30, "100 sends under load", || async { (accepted.lock().await.len() >= 100).then_some(()) }).await;
    let file = tempfile::tempdir().unwrap();
    let backup_file = file.path().join("msgline.backup");
    let backup_started = Instant::now();
    let made = run_cli(source.url(), &["admin", "backup", "--to", backup_file.to_str().unwrap()]).await;
    let backup_ended = Instant::now();
    let made = crate::helpers::cli_json(&made);
    assert_eq!(made["backup"], backup_file.to_str().unwrap(), "{made}");
    assert!(made["bytes"].as_u64().unwrap() > 0, "{made}");
    let during = accepted.lock().await.len();
    eventually(30, "100 more sends after the backup", || async {
        (accepted.lock().await.len() >= during + 100).then_some(())
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    for sender in senders {
        sender.await.expect("the sender ran to the end");
    }
    let accepted = accepted.lock().await.clone();
    let before: Vec<&Accepted> = accepted.iter().filter(|a| a.answered < backup_started).collect();
    let after: Vec<&Accepted> = accepted.iter().filter(|a| a.asked > backup_ended).collect();
    assert!(before.len() >= 100 && after.len() >= 100);

    // A database that holds rows is refused, and keeps what it holds.
    let held = count_messages(source.url()).await;
    let refused = run_cli(source.url(), &["admin", "restore", "--from", backup_file.to_str().unwrap()]).await;
    assert_eq!(refused.status.code(), Some(1), "a restore into a database with rows fails");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("not empty") && said.contains("empty database"), "the refusal says why: {said}");
    assert_eq!(count_messages(source.url()).await, held, "the refused restore changed nothing");
    // A file that is no backup is refused with a sentence too.
    let junk = file.path().join("junk");
    std::fs::write(&junk, b"hello").unwrap();
    let target = TestDb::new().await;
    let refused = run_cli(target.url(), &["admin", "restore", "--from", junk.to_str().unwrap()]).await;
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("is not a msgline backup"));

    // Into a new database, and a server on it (in the place of the first, so the line's
    // reports reach it).
    let restored = crate::helpers::cli_json(
        &run_cli(target.url(), &["admin", "restore", "--from", backup_file.to_str().unwrap()]).await,
    );
    assert_eq!(restored["schema_version"], made["schema_version"], "{restored}");
    server.kill().await.unwrap();
    let _restored_server = serve_process(target.url(), port, &[PRIVATE]).await;

    for id in &settled {
        let (status, body) = status_of(&client, port, &reader_key, id).await;
        assert_eq!(status, 200, "a message of before the backup is there: {body}");
        assert_eq!(body["status"], "delivered", "with its status: {body}");
    }
    for sent in &before {
        let (status, body) = status_of(&client, port, &key, &sent.id).await;
        assert_eq!(status, 200, "a message accepted before the backup began is there: {body}");
        assert_eq!(body["body"], format!("backup test {}", sent.i));
    }
    for sent in &after {
        let (status, _) = status_of(&client, port, &key, &sent.id).await;
        assert_eq!(status, 404, "a message asked for after the backup ended is not in it");
    }
    // Idempotency keys replay: the same key and body give the first message back.
    let replay = send(&client, port, &key, 0).await;
    assert_eq!(replay.status(), 200, "a replay of a key of before the backup");
    let replay: Value = replay.json().await.unwrap();
    assert_eq!(replay["message"]["id"], settled[0].as_str());
    assert_eq!(replay["duplicate"], true);
    let replay: Value = send(&client, port, &key, before[0].i).await.json().await.unwrap();
    assert_eq!(replay["message"]["id"], before[0].id.as_str());

    // Keys keep their scopes: the read key reads and cannot send.
    let refused = client
        .post(api(port, "/messages"))
        .bearer_auth(&reader_key)
        .json(&json!({"to": "+12015559999", "body": "no"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);

    // The webhook endpoint, with its secret, delivers the events of new sends.
    let hooks: Value = json_answer(client.get(api(port, "/webhooks")).bearer_auth(&key)).await;
    assert_eq!(hooks["data"][0]["id"], endpoint["id"], "{hooks}");
    let already = receiver.received_on("/hook").await.len();
    let fresh: Value = json_answer(
        client
            .post(api(port, "/messages"))
            .bearer_auth(&key)
            .json(&json!({"to": "+12015558888", "body": "after the restore"})),
    )
    .await;
    let fresh_id = fresh["message"]["id"].as_str().unwrap().to_string();
    let delivery = eventually(60, "the new message's webhook", || async {
        receiver.received_on("/hook").await.into_iter().find(|r| r.json()["data"]["message"]["id"] == fresh_id.as_str())
    })
    .await;
    assert!(already > 0, "the first server delivered webhooks too");
    assert!(receiver.verifies(delivery.index, &secret, false).await, "signed with the restored secret");
}
