//! Crash trials: `kill -9` at random moments under a continuous send load, `MSGLINE_CRASH_TRIALS`
//! times (3 in the test suite; `scripts/crash-trials N` runs more on both engines).
//!
//! - Of `msgline serve`, while it calls the line's bridge, takes the line's callbacks and delivers
//!   webhooks to a receiver (its own process). After each kill the server starts again; a send
//!   that got no answer is sent again with its idempotency key, as a client would.
//! - Of the simulated line (`msgline sim --journal`, which remembers what it was handed across a
//!   restart, as a phone does), while the server sends through it and takes its callbacks.
//!
//! At the end each counts accepted sends that were lost, messages the line got twice, and
//! messages left `queued` or `unknown`: each must be 0. The server trial also counts events not
//! delivered to the webhook receiver (0), and how often a kill fell in the middle of each kind of
//! work: a bridge call the line then got again, a callback the line had to post again, a webhook
//! delivery the receiver got twice.

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};
use tokio::{process::Child, sync::Mutex, task::JoinHandle};

use crate::{
    crash::send_numbered,
    helpers::{self, ProcessLine, TestDb, eventually, json_answer, process_line, serve_process},
    receiver::Receiver,
};

fn trials() -> usize {
    std::env::var("MSGLINE_CRASH_TRIALS").ok().and_then(|n| n.parse().ok()).unwrap_or(3)
}

/// Sends numbered messages from 8 tasks until stopped, noting which were accepted (with their
/// message ids) and which got no answer.
struct Load {
    client: reqwest::Client,
    messages: String,
    key: String,
    accepted: Arc<Mutex<HashMap<usize, String>>>,
    unanswered: Arc<Mutex<Vec<usize>>>,
    next: Arc<AtomicUsize>,
}

impl Load {
    fn new(port: u16, key: &str) -> Load {
        Load {
            client: reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap(),
            messages: format!("http://127.0.0.1:{port}/api/v1/messaging/messages"),
            key: key.to_string(),
            accepted: Default::default(),
            unanswered: Default::default(),
            next: Default::default(),
        }
    }

    fn start(&self) -> (Arc<AtomicBool>, Vec<JoinHandle<()>>) {
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = (0..8)
            .map(|_| {
                let (client, messages, key) = (self.client.clone(), self.messages.clone(), self.key.clone());
                let (accepted, unanswered, next, stop) =
                    (self.accepted.clone(), self.unanswered.clone(), self.next.clone(), stop.clone());
                tokio::spawn(async move {
                    while !stop.load(Ordering::SeqCst) {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        match send_numbered(&client, &messages, &key, "trial", i).await {
                            Some(id) => {
                                accepted.lock().await.insert(i, id);
                            }
                            None => unanswered.lock().await.push(i),
                        }
                    }
                })
            })
            .collect();
        (stop, tasks)
    }

    async fn stop((stop, tasks): (Arc<AtomicBool>, Vec<JoinHandle<()>>)) {
        stop.store(true, Ordering::SeqCst);
        for task in tasks {
            task.await.unwrap();
        }
    }

    /// Sends every send that got no answer again with its key, until it is answered.
    async fn resend_unanswered(&self) {
        let retries: Vec<usize> = self.unanswered.lock().await.drain(..).collect();
        for i in retries {
            let id = eventually(30, "a send to be answered", || {
                send_numbered(&self.client, &self.messages, &self.key, "trial", i)
            })
            .await;
            self.accepted.lock().await.insert(i, id);
        }
    }
}

/// Watches a count of work left: done when it reaches 0, or when a minute has passed without
/// it going down.
struct Progress {
    least: usize,
    since: tokio::time::Instant,
}

impl Progress {
    fn new() -> Progress {
        Progress { least: usize::MAX, since: tokio::time::Instant::now() }
    }

    fn stalled(&mut self, left: usize) -> bool {
        if left < self.least {
            self.least = left;
            self.since = tokio::time::Instant::now();
        }
        left == 0 || self.since.elapsed() > Duration::from_secs(60)
    }
}

/// What a trial left: accepted sends, lost, sent twice, stuck, and the line's own counters.
struct Tally {
    accepted: usize,
    lost: usize,
    twice: usize,
    stuck: usize,
    line_stats: Value,
}

/// Waits for every message to settle, then counts what was lost, sent twice or left stuck.
async fn tally(url: &str, load: &Load, sim_port: u16) -> Tally {
    let accepted = load.accepted.lock().await.clone();
    let sent_ids: HashSet<&String> = accepted.values().collect();
    assert_eq!(sent_ids.len(), accepted.len(), "one message per idempotency key");

    // Every message must settle; what has not once a minute has passed without progress is
    // counted stuck. (The backlog after many kills takes a while: the load goes on throughout.)
    let reader = msgline::Db::connect(url).await.unwrap();
    let mut progress = Progress::new();
    let rows = loop {
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT id, status FROM messages").fetch_all(reader.writer_for_tests()).await.unwrap();
        let left = rows.iter().filter(|(_, s)| s != "delivered" && s != "failed").count();
        if progress.stalled(left) {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    reader.close().await;
    let unsettled: Vec<&(String, String)> = rows.iter().filter(|(_, s)| s != "delivered" && s != "failed").collect();
    if !unsettled.is_empty() {
        println!("not settled: {} messages, e.g. {:?}", unsettled.len(), &unsettled[..unsettled.len().min(5)]);
    }
    let stored: HashSet<&String> = rows.iter().map(|(id, _)| id).collect();
    let lost = sent_ids.iter().filter(|id| !stored.contains(**id)).count();
    let stuck = unsettled.len();
    let on_line = json_answer(load.client.get(format!("http://127.0.0.1:{sim_port}/control/sent"))).await;
    let mut times_sent: HashMap<String, usize> = HashMap::new();
    for sent in on_line.as_array().unwrap() {
        *times_sent.entry(sent["id"].as_str().unwrap().to_string()).or_default() += 1;
    }
    let twice = times_sent.values().filter(|n| **n > 1).count();
    let line_stats = json_answer(load.client.get(format!("http://127.0.0.1:{sim_port}/control/stats"))).await;
    Tally { accepted: accepted.len(), lost, twice, stuck, line_stats }
}

/// A database with an organisation and its line; the line's simulator is started by the trial
/// (see [`start_sim`]).
struct Setup {
    _db: TestDb,
    url: String,
    key: String,
    port: u16,
    sim_port: u16,
    secret: String,
    journal: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Setup {
    async fn new(org: &str) -> Setup {
        let db = TestDb::new().await;
        let url = db.url().to_string();
        let ProcessLine { key, port, sim_port, mut sim, line, .. } = process_line(&url, org).await;
        sim.kill().await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        Setup {
            _db: db,
            url,
            key,
            port,
            sim_port,
            secret: line["bridge_secret"].as_str().unwrap().to_string(),
            journal: dir.path().join("line.journal"),
            _dir: dir,
        }
    }
}

/// Starts `msgline sim` for the trial's line, with its journal, taking 20 ms to answer a send.
async fn start_sim(sim_port: u16, port: u16, secret: &str, journal: &std::path::Path) -> Child {
    let extra = ["--answer-ms".as_ref(), "20".as_ref(), "--journal".as_ref(), journal.as_os_str()];
    helpers::start_sim(sim_port, port, secret, &extra).await
}

#[tokio::test]
async fn kill_9_at_random_moments_loses_nothing_sends_nothing_twice_and_leaves_nothing_stuck() {
    let trials = trials();
    let Setup { _db, url, key, port, sim_port, secret, journal, _dir } = Setup::new("Trials").await;
    let _sim = start_sim(sim_port, port, &secret, &journal).await;
    let env = [("MSGLINE_BRIDGE_TIMEOUT_MS", "1000"), ("MSGLINE_ALLOW_PRIVATE_TARGETS", "true")];
    let load = Load::new(port, &key);

    // A customer's endpoint for every message's delivery, so kills land in webhook deliveries too.
    let receiver = Receiver::start().await;
    let mut server = serve_process(&url, port, &env).await;
    let registered = json_answer(
        load.client
            .post(format!("http://127.0.0.1:{port}/api/v1/messaging/webhooks"))
            .bearer_auth(&key)
            .json(&json!({"url": receiver.url("/hook"), "events": ["messaging.message.delivered"]})),
    )
    .await;
    assert!(registered["id"].is_string(), "{registered}");

    // What each kill interrupted: sends claimed for a call to the line, webhook deliveries
    // claimed for a call to the receiver.
    let reader = msgline::Db::connect(&url).await.unwrap();
    let (mut calls_cut, mut deliveries_cut) = (0i64, 0i64);
    for trial in 0..trials {
        if trial > 0 {
            server = serve_process(&url, port, &env).await;
        }
        let running = load.start();
        tokio::time::sleep(Duration::from_millis(rand::random_range(100..1500))).await;
        server.start_kill().unwrap();
        server.wait().await.unwrap();
        Load::stop(running).await;
        let count = |sql: &'static str| async {
            sqlx::query_as::<_, (i64,)>(sql).fetch_one(reader.writer_for_tests()).await.unwrap().0
        };
        // A claim is on its message's row, or (PostgreSQL, a send that called its line itself)
        // a row of message_claims.
        calls_cut += count("SELECT COUNT(*) FROM messages WHERE outbox_state = 'claimed'").await;
        calls_cut += count("SELECT COUNT(*) FROM message_claims").await;
        deliveries_cut += count("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'claimed'").await;
    }

    // The last start: every send that got no answer is sent again with its key.
    let _server = serve_process(&url, port, &env).await;
    load.resend_unanswered().await;
    let Tally { accepted, lost, twice, stuck, line_stats } = tally(&url, &load, sim_port).await;

    // Every delivered event reaches the receiver at least once.
    let events: Vec<(String,)> = sqlx::query_as("SELECT id FROM events WHERE type = 'messaging.message.delivered'")
        .fetch_all(reader.writer_for_tests())
        .await
        .unwrap();
    // Every event must arrive; what has not once a minute has passed without progress is
    // counted.
    let mut progress = Progress::new();
    let (undelivered, repeated_deliveries, received) = loop {
        let mut times: HashMap<String, usize> = HashMap::new();
        for delivery in receiver.received().await {
            *times.entry(delivery.id()).or_default() += 1;
        }
        let undelivered = events.iter().filter(|(id,)| !times.contains_key(id)).count();
        if progress.stalled(undelivered) {
            break (undelivered, times.values().filter(|n| **n > 1).count(), times);
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    // What became of an event that did not arrive, for the failure's report.
    if undelivered > 0 {
        for (id,) in events.iter().filter(|(id,)| !received.contains_key(id)) {
            type Delivery = (String, i64, Option<i64>, Option<i64>, Option<i64>, i64);
            let rows: Vec<Delivery> = sqlx::query_as(
                "SELECT state, attempts, next_attempt_at, claimed_until, last_status, updated_at \
                 FROM webhook_deliveries WHERE event_id = $1",
            )
            .bind(id)
            .fetch_all(reader.writer_for_tests())
            .await
            .unwrap();
            let pending: Vec<(i64,)> = sqlx::query_as("SELECT webhooks_pending FROM events WHERE id = $1")
                .bind(id)
                .fetch_all(reader.writer_for_tests())
                .await
                .unwrap();
            println!(
                "not delivered: event {id} (webhooks_pending {pending:?}), its deliveries (state, attempts, \
                 next_attempt_at, claimed_until, last_status, updated_at) {rows:?}, now {}",
                msgline::clock::now_ms()
            );
        }
    }
    reader.close().await;
    println!(
        "crash trials: {trials} kills of serve, {accepted} sends accepted, {lost} lost, {twice} sent twice, \
         {stuck} left queued or unknown, {undelivered} of {} events not delivered; kills in the middle of work: \
         {calls_cut} sends claimed for a call to the line, {deliveries_cut} webhook deliveries claimed, {} sends \
         the line was asked about, {} bridge calls the line got again, {} callbacks the line posted again, \
         {repeated_deliveries} webhook deliveries the receiver got twice",
        events.len(),
        line_stats["lookups"],
        line_stats["repeated_ids"],
        line_stats["callback_retries"],
    );
    assert_eq!((lost, twice, stuck, undelivered), (0, 0, 0, 0), "lost, sent twice, stuck, events not delivered");
    assert!(accepted > trials, "the load went on between the kills ({accepted})");
}

#[tokio::test]
async fn kill_9_of_the_line_at_random_moments_loses_nothing_sends_nothing_twice_and_leaves_nothing_stuck() {
    let trials = trials();
    let Setup { _db, url, key, port, sim_port, secret, journal, _dir } = Setup::new("Line trials").await;
    let _server = serve_process(&url, port, &[("MSGLINE_BRIDGE_TIMEOUT_MS", "1000")]).await;
    let load = Load::new(port, &key);
    let running = load.start();
    // Each simulator process counts for itself: its counters are read before it is killed.
    let mut counted = [0u64; 3];
    let mut count = |stats: &Value| {
        for (total, name) in counted.iter_mut().zip(["lookups", "repeated_ids", "callback_retries"]) {
            *total += stats[name].as_u64().unwrap_or(0);
        }
    };
    for _ in 0..trials {
        let mut sim = start_sim(sim_port, port, &secret, &journal).await;
        tokio::time::sleep(Duration::from_millis(rand::random_range(100..1500))).await;
        count(&json_answer(load.client.get(format!("http://127.0.0.1:{sim_port}/control/stats"))).await);
        sim.start_kill().unwrap();
        sim.wait().await.unwrap();
        // The line stays away for a moment while sends go on.
        tokio::time::sleep(Duration::from_millis(rand::random_range(0..500))).await;
    }
    Load::stop(running).await;
    let _sim = start_sim(sim_port, port, &secret, &journal).await;
    load.resend_unanswered().await;
    let Tally { accepted, lost, twice, stuck, line_stats } = tally(&url, &load, sim_port).await;
    count(&line_stats);
    let [lookups, repeated, callback_retries] = counted;
    println!(
        "line crash trials: {trials} kills of the line, {accepted} sends accepted, {lost} lost, {twice} sent twice, \
         {stuck} left queued or unknown; kills in the middle of work: {lookups} sends the line was asked about \
         (their answer lost), {repeated} calls after a restart named a message the line already had, \
         {callback_retries} callbacks the line posted again",
    );
    assert_eq!((lost, twice, stuck), (0, 0, 0), "lost, sent twice, stuck");
    assert!(accepted > trials, "the load went on between the kills ({accepted})");
}
