//! A line's budget with real `msgline serve` processes: three instances on one PostgreSQL
//! database count one budget, a line paused through one instance sends nothing through another at
//! once, and `kill -9` while a thousand paced messages wait loses none and sends none twice.

use std::{collections::HashMap, time::Duration};

use serde_json::{Value, json};

use crate::{
    helpers::{ProcessLine, TestDb, api, cli_value, eventually, process_line, serve_process, three, use_postgres},
    simline::free_port,
};

const FAST: [(&str, &str); 2] =
    [("MSGLINE_RATE_LIMIT_PER_MINUTE", "1000000"), ("MSGLINE_SEND_RATE_LIMIT_PER_MINUTE", "1000000")];

/// What the line's device sent: each message id and how many times.
async fn sent_counts(sim_port: u16) -> HashMap<String, usize> {
    let sent: Vec<Value> =
        reqwest::get(format!("http://127.0.0.1:{sim_port}/control/sent")).await.unwrap().json().await.unwrap();
    let mut counts = HashMap::new();
    for entry in sent {
        *counts.entry(entry["id"].as_str().unwrap_or_default().to_string()).or_insert(0) += 1;
    }
    counts
}

async fn set_policy(url: &str, line_id: &str, policy: &str) {
    cli_value(url, &["admin", "line", "update", "--id", line_id, "--policy", policy]).await;
}

#[tokio::test]
async fn three_instances_on_postgresql_never_exceed_a_line_s_budget() {
    if !use_postgres() {
        return; // several instances need a shared server database: the PostgreSQL pass runs this
    }
    let db = TestDb::new_postgres().await;
    let url = db.url().to_string();
    let ProcessLine { key, port, sim_port, line, sim: _sim, .. } = process_line(&url, "Budget").await;
    let line_id = line["line_id"].as_str().unwrap().to_string();
    set_policy(&url, &line_id, r#"{"max_per_minute": 10}"#).await;
    let ports = [port, free_port(), free_port()];
    let servers = three(&url, ports, &FAST).await;
    let client = reqwest::Client::new();
    for i in 0..30 {
        let body = json!({"to": format!("+1201555{:04}", 3000 + i), "body": format!("budget {i}")});
        let answer = client.post(api(ports[i % 3], "/messages")).bearer_auth(&key).json(&body).send().await.unwrap();
        assert_eq!(answer.status(), 202, "send {i}");
    }
    eventually(20, "the minute's ten sends", || async { (sent_counts(sim_port).await.len() >= 10).then_some(()) })
        .await;
    // Each instance's pacer has looked again since (a send wakes it, a call's end too).
    tokio::time::sleep(Duration::from_secs(4)).await;
    let sent = sent_counts(sim_port).await;
    assert_eq!(sent.len(), 10, "ten a minute across three instances: {sent:?}");
    let shown: Value = client
        .get(api(ports[2], &format!("/lines/{line_id}")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["usage"]["minute"], 10, "{shown}");
    assert_eq!(shown["queue"]["waiting"], 20, "{shown}");
    drop(servers);
}

#[tokio::test]
async fn a_line_paused_through_one_instance_sends_nothing_through_another_at_once() {
    if !use_postgres() {
        return; // several instances need a shared server database: the PostgreSQL pass runs this
    }
    let db = TestDb::new_postgres().await;
    let url = db.url().to_string();
    let ProcessLine { key, port, sim_port, line, sim: _sim, .. } = process_line(&url, "Paused").await;
    let line_id = line["line_id"].as_str().unwrap().to_string();
    let ports = [port, free_port(), free_port()];
    let servers = three(&url, ports, &FAST).await;
    let client = reqwest::Client::new();
    // Naming the line, so that the instance reads it through its line cache.
    let send = |port: u16, n: usize| {
        let body = json!({"to": format!("+1201555{:04}", 4000 + n), "body": format!("paused {n}"), "line_id": line_id});
        client.post(api(port, "/messages")).bearer_auth(&key).json(&body).send()
    };
    // The second instance sends on the line, so it has the line (active) in its cache.
    let first = send(ports[1], 0).await.unwrap().json::<Value>().await.unwrap();
    let first_id = first["message"]["id"].as_str().unwrap().to_string();
    eventually(20, "the first send", || async { sent_counts(sim_port).await.contains_key(&first_id).then_some(()) })
        .await;

    let paused = client.post(api(ports[0], &format!("/lines/{line_id}/pause"))).bearer_auth(&key).send().await;
    assert_eq!(paused.unwrap().status(), 200);
    // Well inside the line cache's ten seconds: the second instance heard of the pause.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = send(ports[1], 1).await.unwrap().json::<Value>().await.unwrap();
    let held_id = held["message"]["id"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!sent_counts(sim_port).await.contains_key(&held_id), "a paused line sent through another instance");
    let shown: Value = client
        .get(api(ports[1], &format!("/messages/{held_id}")))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["status"], "queued", "{shown}");

    let resumed = client.post(api(ports[2], &format!("/lines/{line_id}/resume"))).bearer_auth(&key).send().await;
    assert_eq!(resumed.unwrap().status(), 200);
    eventually(20, "the held send after the resume", || async {
        sent_counts(sim_port).await.contains_key(&held_id).then_some(())
    })
    .await;
    drop(servers);
}

#[tokio::test]
async fn kill_9_while_a_thousand_paced_messages_wait_loses_none_and_sends_none_twice() {
    const TOTAL: usize = 1_000;
    let db = TestDb::new().await;
    let url = db.url().to_string();
    let ProcessLine { key, port, sim_port, line, sim: _sim, .. } = process_line(&url, "Paced").await;
    let line_id = line["line_id"].as_str().unwrap().to_string();
    set_policy(&url, &line_id, r#"{"max_per_minute": 300}"#).await;
    let mut server = serve_process(&url, port, &FAST).await;
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let mut accepted = Vec::new();
    for chunk in (0..TOTAL).collect::<Vec<_>>().chunks(50) {
        let sends = chunk.iter().map(|i| {
            let body = json!({"to": format!("+1201556{:04}", i), "body": format!("paced {i}")});
            client
                .post(api(port, "/messages"))
                .bearer_auth(&key)
                .header("Idempotency-Key", format!("paced-{i}"))
                .json(&body)
                .send()
        });
        for answer in futures_util::future::join_all(sends).await {
            let answer: Value = answer.unwrap().json().await.unwrap();
            accepted.push(answer["message"]["id"].as_str().expect("accepted").to_string());
        }
    }
    // Mid-hand-over: some sent, most waiting for the budget.
    eventually(30, "the first sends", || async { (sent_counts(sim_port).await.len() >= 50).then_some(()) }).await;
    server.kill().await.unwrap();
    let _ = server.wait().await;
    let before_restart = sent_counts(sim_port).await.len();
    assert!(before_restart < TOTAL, "the kill came while messages waited");

    // Back, with the budget lifted: everything that waited goes, once.
    let _server = serve_process(&url, port, &FAST).await;
    set_policy(&url, &line_id, r#"{"max_per_minute": null}"#).await;
    let sent = eventually(120, "every accepted message sent", || async {
        let sent = sent_counts(sim_port).await;
        (sent.len() >= TOTAL).then_some(sent)
    })
    .await;
    let twice: Vec<_> = sent.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "sent twice: {twice:?}");
    let stats: Value =
        reqwest::get(format!("http://127.0.0.1:{sim_port}/control/stats")).await.unwrap().json().await.unwrap();
    assert_eq!(stats["repeated_ids"], 0, "msgline never handed the line the same message twice");
    for id in &accepted {
        assert!(sent.contains_key(id), "{id} was accepted and never sent");
    }
    assert_eq!(sent.len(), TOTAL);
}
