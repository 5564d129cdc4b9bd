//! Crash trials: `kill -9` of `msgline serve` at random moments under a continuous send load,
//! `MSGLINE_CRASH_TRIALS` times (3 in the test suite; `scripts/crash-trials N` runs more on both
//! engines). After each kill the server starts again; a send that got no answer is sent again
//! with its idempotency key, as a client would. At the end it counts accepted sends that were
//! lost, messages the line got twice, and messages left `queued` or `unknown`. Each must be 0.

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use tokio::sync::Mutex;

use crate::{
    crash::send_numbered,
    helpers::{ProcessLine, TestDb, eventually, json_answer, process_line, serve_process},
};

#[tokio::test]
async fn kill_9_at_random_moments_loses_nothing_sends_nothing_twice_and_leaves_nothing_stuck() {
    let trials: usize = std::env::var("MSGLINE_CRASH_TRIALS").ok().and_then(|n| n.parse().ok()).unwrap_or(3);
    let db = TestDb::new().await;
    let url = db.url().to_string();
    let ProcessLine { key, port, sim_port, sim: _sim, .. } = process_line(&url, "Trials").await;
    let env = [("MSGLINE_BRIDGE_TIMEOUT_MS", "1000")];
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let messages = format!("http://127.0.0.1:{port}/api/v1/messaging/messages");
    let accepted = Arc::new(Mutex::new(HashMap::<usize, String>::new()));
    let unanswered = Arc::new(Mutex::new(Vec::<usize>::new()));
    let next = Arc::new(AtomicUsize::new(0));

    for _ in 0..trials {
        let mut server = serve_process(&url, port, &env).await;
        let stop = Arc::new(AtomicBool::new(false));
        let mut load = Vec::new();
        for _ in 0..8 {
            let (client, messages, key) = (client.clone(), messages.clone(), key.clone());
            let (accepted, unanswered, next, stop) = (accepted.clone(), unanswered.clone(), next.clone(), stop.clone());
            load.push(tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    match send_numbered(&client, &messages, &key, "trial", i).await {
                        Some(id) => {
                            accepted.lock().await.insert(i, id);
                        }
                        None => unanswered.lock().await.push(i),
                    }
                }
            }));
        }
        tokio::time::sleep(Duration::from_millis(rand::random_range(100..1500))).await;
        server.start_kill().unwrap();
        server.wait().await.unwrap();
        stop.store(true, Ordering::SeqCst);
        for task in load {
            task.await.unwrap();
        }
    }

    // The last start: every send that got no answer is sent again with its key.
    let _server = serve_process(&url, port, &env).await;
    let retries: Vec<usize> = unanswered.lock().await.drain(..).collect();
    for i in retries {
        let id = eventually(30, "a send to be answered", || send_numbered(&client, &messages, &key, "trial", i)).await;
        accepted.lock().await.insert(i, id);
    }
    let accepted = accepted.lock().await.clone();
    let sent_ids: HashSet<&String> = accepted.values().collect();
    assert_eq!(sent_ids.len(), accepted.len(), "one message per idempotency key");

    let reader = msgline::db::Db::connect(&url).await.unwrap();
    let rows: Vec<(String, String)> = eventually(120, "every message to settle", || async {
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT id, status FROM messages").fetch_all(reader.writer()).await.unwrap();
        rows.iter().all(|(_, s)| s == "delivered" || s == "failed").then_some(rows)
    })
    .await;
    let stored: HashSet<&String> = rows.iter().map(|(id, _)| id).collect();
    let lost = sent_ids.iter().filter(|id| !stored.contains(**id)).count();
    let stuck = rows.iter().filter(|(_, s)| s == "queued" || s == "unknown").count();
    let on_line = json_answer(client.get(format!("http://127.0.0.1:{sim_port}/control/sent"))).await;
    let mut times_sent: HashMap<String, usize> = HashMap::new();
    for sent in on_line.as_array().unwrap() {
        *times_sent.entry(sent["id"].as_str().unwrap().to_string()).or_default() += 1;
    }
    let twice = times_sent.values().filter(|n| **n > 1).count();
    let stats = json_answer(client.get(format!("http://127.0.0.1:{sim_port}/control/stats"))).await;
    println!(
        "crash trials: {trials} kills, {} sends accepted, {lost} lost, {twice} sent twice, {stuck} left queued or unknown, \
         {} calls that named a message the line already had",
        accepted.len(),
        stats["repeated_ids"]
    );
    assert_eq!((lost, twice, stuck), (0, 0, 0), "lost, sent twice, stuck");
    assert!(rows.iter().all(|(_, s)| s == "delivered"), "in accept mode every message is delivered");
    assert!(accepted.len() > trials, "the load went on between the kills ({})", accepted.len());
    reader.close().await;
}
