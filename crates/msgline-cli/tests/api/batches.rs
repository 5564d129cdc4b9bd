//! Sends that go to a line together leave in one call (`POST /v1/messages/batch`) when its
//! bridge says it takes batches: each message is still handed over once, gets its own outcome,
//! and a bridge that takes one message a call is called as before.

use serde_json::{Value, json};

use crate::{
    helpers::{TestApp, spawn_app_with},
    simline::{LineSpec, SimLine},
};

/// An app whose limits let a burst through and read each message back.
async fn app_for_bursts(bridge_timeout_ms: u64) -> TestApp {
    spawn_app_with(|config| {
        config.rate_limit_per_minute = 10_000;
        config.send_rate_limit_per_minute = 10_000;
        config.bridge_timeout_ms = bridge_timeout_ms;
        config.metrics_token = Some("scrape-token".into());
    })
    .await
}

async fn line(app: &TestApp, sim_args: &[&str]) -> SimLine {
    let org = app.org.clone();
    let line = app.sim_line(LineSpec { e164: "+12015550100", org: Some(&org), sim_args, start: true }).await;
    // A first send has msgline ask the line what it can do (its `batch`) before the burst.
    let first = app.post("/messages", &app.org.key, json!({"to": "+12015550399", "body": "first"})).await.expect(202);
    let first = first["message"]["id"].as_str().expect("id").to_string();
    let settled = |m: &Value| m["status"] == "delivered" || m["status"] == "failed";
    app.wait_for_message(&app.org.key, &first, "the first send settled", settled).await;
    let lines = app.get("/lines", &app.org.key).await.expect(200);
    assert!(lines["data"][0]["capabilities"].is_object(), "{lines}");
    line
}

/// `n` sends at once, `channel(i)` for each (`None`: msgline chooses); their message ids.
async fn burst(app: &TestApp, n: usize, channel: impl Fn(usize) -> Option<&'static str>) -> Vec<String> {
    let requests: Vec<_> = (0..n)
        .map(|i| {
            let mut body = json!({"to": format!("+120155503{:02}", i % 40), "body": format!("burst {i}")});
            if let Some(channel) = channel(i) {
                body["channel"] = json!(channel);
            }
            app.client.post(app.url("/messages")).bearer_auth(&app.org.key).json(&body).send()
        })
        .collect();
    let mut ids = Vec::new();
    for response in futures_util::future::join_all(requests).await {
        let response = response.expect("an answer");
        assert_eq!(response.status().as_u16(), 202);
        let body: Value = response.json().await.expect("json");
        ids.push(body["message"]["id"].as_str().expect("id").to_string());
    }
    ids
}

async fn wait_settled(app: &TestApp, ids: &[String], status: &str) -> Vec<Value> {
    let mut messages = Vec::new();
    for id in ids {
        messages.push(app.wait_for_message(&app.org.key, id, status, |m| m["status"] == status).await);
    }
    messages
}

/// Each id once in the line's sent log, and no call named an id it had already been handed.
async fn each_sent_once(line: &SimLine, ids: &[String]) {
    let sent = line.sent().await;
    for id in ids {
        let times = sent.iter().filter(|s| s["id"] == id.as_str()).count();
        assert_eq!(times, 1, "{id} was sent {times} times");
    }
    assert_eq!(line.get("/control/stats").await["repeated_ids"], 0);
}

#[tokio::test]
async fn a_burst_to_a_line_that_takes_batches_leaves_in_few_calls_and_each_message_once() {
    let app = app_for_bursts(10_000).await;
    app.keep_events().await;
    // The line takes a moment to answer: what arrives meanwhile waits and leaves together.
    let line = line(&app, &["--answer-ms", "300"]).await;
    let ids = burst(&app, 60, |_| None).await;
    wait_settled(&app, &ids, "delivered").await;
    each_sent_once(&line, &ids).await;
    let stats = line.get("/control/stats").await;
    let (batches, batched) = (stats["batches"].as_u64().unwrap(), stats["batched"].as_u64().unwrap());
    assert!(batches >= 1 && batched >= 2, "{stats}");
    // Fewer calls than messages: the ones that went alone, and the batches.
    assert!(60 - batched + batches < 60, "{stats}");
    // Each message still has its own attempt and its own events. (The line reports before it
    // answers the call, so an attempt may be recorded after its message was delivered.)
    for id in &ids {
        let attempts = crate::helpers::eventually(20, "the attempt is recorded", || async {
            let attempts = app.get(&format!("/events?message_id={id}"), &app.org.key).await.expect(200);
            (!attempts["data"].as_array().unwrap().is_empty()).then_some(attempts)
        })
        .await;
        assert_eq!(attempts["data"].as_array().unwrap().len(), 1, "{attempts}");
        assert_eq!(attempts["data"][0]["outcome"], "accepted");
        let expected = ["queued", "submitted", "sent", "delivered"].map(|s| format!("messaging.message.{s}"));
        assert_eq!(app.event_types(id).await, expected);
    }
    // Once every outcome is recorded, the batches are counted with the sends they carried.
    let metrics = crate::metrics::metrics_text(&app).await;
    let line_label = [("line", line.line_id.as_str())];
    let value = |name: &str| crate::metrics::value(&metrics, name, &line_label).unwrap_or(0.0);
    assert_eq!(value("msgline_bridge_batch_sends_count"), batches as f64, "{metrics}");
    assert_eq!(value("msgline_bridge_batch_sends_sum"), batched as f64, "{metrics}");
}

#[tokio::test]
async fn a_line_that_takes_one_message_a_call_is_never_sent_a_batch() {
    let app = app_for_bursts(10_000).await;
    let line = line(&app, &["--answer-ms", "300", "--batch", "0"]).await;
    let ids = burst(&app, 30, |_| None).await;
    wait_settled(&app, &ids, "delivered").await;
    each_sent_once(&line, &ids).await;
    assert_eq!(line.get("/control/stats").await["batches"], 0);
}

#[tokio::test]
async fn a_bridge_that_stops_taking_batches_gets_each_message_alone_and_once() {
    let app = app_for_bursts(10_000).await;
    let line = line(&app, &["--answer-ms", "300"]).await;
    // msgline still holds the capabilities it was told: the batch calls it makes are answered 404.
    line.control("/control/mode", json!({"batch": 0})).await;
    let ids = burst(&app, 30, |_| None).await;
    wait_settled(&app, &ids, "delivered").await;
    each_sent_once(&line, &ids).await;
    assert_eq!(line.get("/control/stats").await["batches"], 0);
}

#[tokio::test]
async fn each_message_of_a_batch_gets_its_own_answer() {
    let app = app_for_bursts(10_000).await;
    let line = line(&app, &["--answer-ms", "300"]).await;
    // iMessage is refused and SMS taken: one batch carries both answers.
    line.control("/control/mode", json!({"imessage": "reject"})).await;
    let channel = |i: usize| Some(if i.is_multiple_of(2) { "imessage" } else { "sms" });
    let ids = burst(&app, 40, channel).await;
    for (i, id) in ids.iter().enumerate() {
        let message = app
            .wait_for_message(&app.org.key, id, "settled", |m| m["status"] == "failed" || m["status"] == "delivered")
            .await;
        if i % 2 == 0 {
            assert_eq!(message["status"], "failed", "{message}");
            assert_eq!(message["error"], "iMessage is refusing every send (control mode)", "{message}");
        } else {
            assert_eq!(message["status"], "delivered", "{message}");
        }
    }
    let stats = line.get("/control/stats").await;
    assert!(stats["batches"].as_u64().unwrap() >= 1, "{stats}");
}

#[tokio::test]
async fn a_batch_the_line_never_answers_leaves_each_message_unknown_until_the_line_is_asked() {
    let app = app_for_bursts(1_000).await;
    let line = line(&app, &["--mode", "timeout", "--late-report-ms", "60000"]).await;
    let ids = burst(&app, 30, |_| None).await;
    // No answer in time: every message of the call may be on the line, and none is sent again;
    // the line's status lookups settle each one.
    wait_settled(&app, &ids, "delivered").await;
    each_sent_once(&line, &ids).await;
    let stats = line.get("/control/stats").await;
    assert!(stats["batches"].as_u64().unwrap() >= 1, "{stats}");
    assert!(stats["lookups"].as_u64().unwrap() >= 30, "{stats}");
    for id in &ids {
        let attempts = app.get(&format!("/events?message_id={id}"), &app.org.key).await.expect(200);
        let outcomes: Vec<&Value> = attempts["data"].as_array().unwrap().iter().map(|a| &a["outcome"]).collect();
        assert!(outcomes.iter().any(|o| *o == "timeout"), "{attempts}");
    }
}

#[tokio::test]
async fn questions_about_new_numbers_that_arrive_together_are_asked_in_one_call() {
    let app = app_for_bursts(10_000).await;
    let line = line(&app, &[]).await;
    let before = line.get("/control/stats").await;
    // The line takes a moment to say who is on iMessage: the questions that arrive meanwhile
    // wait and go together. `burst` sends to 40 numbers never seen.
    line.control("/control/mode", json!({"ask_ms": 300})).await;
    let ids = burst(&app, 40, |_| None).await;
    wait_settled(&app, &ids, "delivered").await;
    let stats = line.get("/control/stats").await;
    let asked = |s: &Value, field: &str| s[field].as_u64().unwrap();
    // Each number asked about once, in fewer calls than numbers.
    assert_eq!(asked(&stats, "reachability_asks") - asked(&before, "reachability_asks"), 40, "{stats}");
    let calls = asked(&stats, "reachability_calls") - asked(&before, "reachability_calls");
    assert!((1..40).contains(&calls), "{stats}");
    for message in wait_settled(&app, &ids, "delivered").await {
        assert_eq!(message["channel"], "imessage", "{message}");
    }
}
