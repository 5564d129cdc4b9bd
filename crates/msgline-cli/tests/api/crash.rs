//! Crash safety: `kill -9` of `msgline serve` in the middle of 500 sends loses nothing and
//! sends nothing twice.

use std::{collections::HashSet, future::Future, pin::Pin, sync::Arc, time::Duration};

use serde_json::{Value, json};
use tokio::{process::Child, sync::Mutex};

use crate::helpers::{ProcessLine, TestDb, eventually, json_answer, process_line, serve_process};

const TOTAL: usize = 500;

/// Sends as the crash tests make them: message `i` goes to `+1201555{1000 + i}` with
/// `Idempotency-Key: crash-{i}`, and the id of each one accepted (202) is added to `accepted`.
pub fn numbered_sends(
    client: reqwest::Client,
    url: String,
    key: String,
    accepted: Arc<Mutex<HashSet<String>>>,
) -> impl Fn(usize) -> Pin<Box<dyn Future<Output = ()> + Send>> + Clone {
    move |i: usize| {
        let (client, url, key, accepted) = (client.clone(), url.clone(), key.clone(), accepted.clone());
        Box::pin(async move {
            let answer = client
                .post(url)
                .bearer_auth(&key)
                .header("Idempotency-Key", format!("crash-{i}"))
                .json(&json!({"to": format!("+1201555{:04}", 1000 + i), "body": format!("message {i}")}))
                .send()
                .await;
            if let Ok(answer) = answer
                && answer.status() == 202
            {
                let body: Value = answer.json().await.unwrap();
                accepted.lock().await.insert(body["message"]["id"].as_str().unwrap().to_string());
            }
        })
    }
}

/// Sends message `i` once, as the crash and multi-instance tests make them (to
/// `+1201555{1000 + i % 5000}`, with `Idempotency-Key: {prefix}-{i}`): its id when it was accepted,
/// or had been (a 200 replay of the same key); `None` when no answer said so.
pub async fn send_numbered(client: &reqwest::Client, url: &str, key: &str, prefix: &str, i: usize) -> Option<String> {
    let answer = client
        .post(url)
        .bearer_auth(key)
        .header("Idempotency-Key", format!("{prefix}-{i}"))
        .json(&json!({"to": format!("+1201555{:04}", 1000 + i % 5000), "body": format!("{prefix} message {i}")}))
        .send()
        .await
        .ok()?;
    if !answer.status().is_success() {
        return None;
    }
    let body: Value = answer.json().await.ok()?;
    body["message"]["id"].as_str().map(str::to_string)
}

async fn serve(db_url: &str, port: u16) -> Child {
    serve_with(db_url, port, &[]).await
}

async fn serve_with(db_url: &str, port: u16, env: &[(&str, &str)]) -> Child {
    let mut all = vec![("MSGLINE_BRIDGE_TIMEOUT_MS", "1000")];
    all.extend_from_slice(env);
    serve_process(db_url, port, &all).await
}

#[tokio::test]
async fn kill_9_in_the_middle_of_500_sends_loses_nothing_and_sends_nothing_twice() {
    let db = TestDb::new().await;
    let url = db.url().to_string();
    let ProcessLine { key, port, sim_port, sim: _sim, .. } = process_line(&url, "Crash").await;

    let mut server = serve(&url, port).await;
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let accepted = Arc::new(Mutex::new(HashSet::<String>::new()));
    let messages = format!("http://127.0.0.1:{port}/api/v1/messaging/messages");
    let send = numbered_sends(client.clone(), messages, key.clone(), accepted.clone());

    // First half with 16 in flight; the server is killed while sends and deliveries are under way.
    let first_half = futures_util::stream::iter(0..TOTAL / 2);
    let sending = tokio::spawn({
        let send = send.clone();
        async move {
            use futures_util::StreamExt;
            first_half.for_each_concurrent(16, send).await;
        }
    });
    eventually(60, "a third of the sends to be accepted", || async {
        (accepted.lock().await.len() >= TOTAL / 6).then_some(())
    })
    .await;
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    sending.await.unwrap();
    let before_restart = accepted.lock().await.len();
    assert!(before_restart < TOTAL / 2, "the kill came before every send was done");

    let _server = serve(&url, port).await;
    {
        use futures_util::StreamExt;
        futures_util::stream::iter(TOTAL / 2..TOTAL).for_each_concurrent(16, send).await;
    }
    let accepted = accepted.lock().await.clone();

    let reader = msgline::Db::connect(&url).await.unwrap();
    let statuses = eventually(90, "every accepted message to settle", || async {
        let rows: Vec<(String, String)> = sqlx::query_as::<_, (String, String)>("SELECT id, status FROM messages")
            .fetch_all(reader.writer_for_tests())
            .await
            .unwrap();
        let settled = rows.iter().all(|(_, s)| matches!(s.as_str(), "delivered" | "read" | "failed" | "unknown"));
        (settled && rows.len() >= accepted.len()).then_some(rows)
    })
    .await;
    let stored: HashSet<String> = statuses.iter().map(|(id, _)| id.clone()).collect();
    assert!(accepted.is_subset(&stored), "every 202 is stored");

    let sent: Vec<Value> =
        client.get(format!("http://127.0.0.1:{sim_port}/control/sent")).send().await.unwrap().json().await.unwrap();
    let sent_ids: Vec<String> = sent.iter().map(|s| s["id"].as_str().unwrap().to_string()).collect();
    let unique: HashSet<&String> = sent_ids.iter().collect();
    assert_eq!(unique.len(), sent_ids.len(), "the line sent no message twice");
    let stats: Value =
        client.get(format!("http://127.0.0.1:{sim_port}/control/stats")).send().await.unwrap().json().await.unwrap();
    assert_eq!(stats["repeated_ids"], 0, "msgline never handed the line the same message twice");
    for (id, status) in &statuses {
        if status == "delivered" {
            assert!(unique.contains(id), "{id} is delivered but the line never sent it");
        }
    }
    for id in &sent_ids {
        assert!(stored.contains(id), "the line sent {id}, which msgline does not know");
    }
    let delivered = statuses.iter().filter(|(_, s)| s == "delivered").count();
    assert_eq!(delivered, statuses.len(), "in accept mode every message is delivered in the end");
    assert!(accepted.len() > TOTAL / 2, "sends went on after the restart ({} accepted)", accepted.len());
    reader.close().await;
    drop(db);
}

#[tokio::test]
async fn kill_9_during_an_agent_run_still_gives_the_inbound_one_run_and_no_tool_call_twice() {
    use crate::fakemodel::{FakeModel, text, tool_calls};
    let model = FakeModel::start(vec![
        tool_calls(&[("messaging_send", json!({"body": "first, exactly once"}))]),
        // The second question hangs: the server is killed while it waits.
        json!({"delay_ms": 4000, "message": {"role": "assistant", "content": "never sent"}}),
        // The run starts over after the restart and the model repeats its tool call.
        tool_calls(&[("messaging_send", json!({"body": "first, exactly once"}))]),
        text("and a goodbye"),
    ])
    .await;
    let db = TestDb::new().await;
    let url = db.url().to_string();
    let ProcessLine { key, line, port, sim_port, sim: _sim, .. } = process_line(&url, "Agents").await;
    let env = [("MSGLINE_AGENT_MODEL_URL", model.url.as_str()), ("MSGLINE_AGENT_TIMEOUT_MS", "2000")];
    let mut server = serve_with(&url, port, &env).await;
    let client = reqwest::Client::new();
    let api = format!("http://127.0.0.1:{port}/api/v1/messaging");
    let agent: Value = json_answer(client.post(format!("{api}/agents")).bearer_auth(&key).json(
        &json!({"name": "Ava", "line_id": line["line_id"], "instructions": "Be brief.", "tools": ["messaging_send"]}),
    ))
    .await;
    let agent_id = agent["id"].as_str().unwrap().to_string();
    let answer = client
        .post(format!("http://127.0.0.1:{sim_port}/control/inbound"))
        .json(&json!({"from": "+12015550123", "body": "hello"}))
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success());

    let sent_bodies = || async {
        let sent: Vec<Value> =
            client.get(format!("http://127.0.0.1:{sim_port}/control/sent")).send().await.unwrap().json().await.unwrap();
        sent.iter().map(|s| s["body"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    eventually(20, "the first tool call to reach the phone", || async {
        (sent_bodies().await.len() == 1 && model.requests().len() >= 2).then_some(())
    })
    .await;
    server.start_kill().unwrap();
    server.wait().await.unwrap();

    let _server = serve_with(&url, port, &env).await;
    let runs = eventually(40, "the run to finish after the restart", || async {
        let runs: Value = client
            .get(format!("{api}/agents/{agent_id}/runs"))
            .bearer_auth(&key)
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        let runs = runs["data"].as_array()?.clone();
        (runs.len() == 1 && runs[0]["state"] == "done").then_some(runs)
    })
    .await;
    assert_eq!(runs[0]["attempts"], 2, "the run was taken up again");
    eventually(20, "the goodbye", || async {
        let bodies = sent_bodies().await;
        bodies.contains(&"and a goodbye".to_string()).then_some(())
    })
    .await;
    let bodies = sent_bodies().await;
    assert_eq!(bodies.iter().filter(|b| *b == "first, exactly once").count(), 1, "{bodies:?}");
    assert!(!bodies.contains(&"never sent".to_string()));
    drop(db);
}
