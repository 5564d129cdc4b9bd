//! SMS fallback: an iMessage sent with `fallback: "sms"` (or under the organisation's default)
//! that fails is sent again as one SMS from the same line; with `fallback_after_seconds`, also
//! one that is not delivered in time. Exactly one SMS per message, across a `kill -9` and across
//! three instances.

use std::{collections::HashMap, time::Duration};

use serde_json::{Value, json};

use crate::{
    helpers::{
        ProcessLine, TestApp, TestDb, eventually, json_answer, process_line, serve_process, spawn_app_with,
        use_postgres,
    },
    simline::{LineSpec, SimLine},
};

async fn app() -> TestApp {
    spawn_app_with(|c| {
        c.rate_limit_per_minute = 100_000;
        c.send_rate_limit_per_minute = 100_000;
    })
    .await
}

async fn reject_imessage(line: &SimLine) {
    let mode = line.control("/control/mode", json!({"imessage": "reject"})).await;
    assert_eq!(mode["imessage"], "reject");
}

/// The simulator of a process line refuses every iMessage from now on.
async fn reject_imessage_at(client: &reqwest::Client, sim_port: u16) {
    let answer = client
        .post(format!("http://127.0.0.1:{sim_port}/control/mode"))
        .json(&json!({"imessage": "reject"}))
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success());
}

/// Waits until the message's fallback is decided and returns it with its SMS.
async fn fell_back(app: &TestApp, id: &str) -> (Value, Value) {
    let message =
        app.wait_for_message(&app.org.key, id, "its SMS fallback", |m| m["fallback_message_id"].is_string()).await;
    let sms_id = message["fallback_message_id"].as_str().unwrap().to_string();
    let sms = app.wait_for_message(&app.org.key, &sms_id, "the SMS delivered", |m| m["status"] == "delivered").await;
    (message, sms)
}

#[tokio::test]
async fn a_failed_imessage_with_sms_fallback_is_sent_again_once_as_sms() {
    let app = app().await;
    app.keep_events().await;
    let line = app.default_line().await;
    reject_imessage(&line).await;
    let sent = app
        .post("/messages", &app.org.key, json!({"to": "+12015550150", "body": "Your code is 4821", "fallback": "sms"}))
        .await
        .expect(202);
    assert_eq!(sent["message"]["channel"], "imessage");
    let id = sent["message"]["id"].as_str().unwrap().to_string();
    let (message, sms) = fell_back(&app, &id).await;
    assert_eq!(message["status"], "failed");
    assert_eq!(sms["channel"], "sms");
    assert_eq!(sms["body"], "Your code is 4821");
    assert_eq!(sms["fallback_for"], id.as_str());
    assert_eq!(sms["conversation_id"], message["conversation_id"]);
    assert_eq!(sms["line_id"], message["line_id"]);

    // One SMS reached the phone; the event names both messages.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let on_line: Vec<Value> = line.sent().await.into_iter().filter(|s| s["body"] == "Your code is 4821").collect();
    assert_eq!(on_line.len(), 1, "{on_line:?}");
    assert_eq!(on_line[0]["channel"], "sms");
    assert_eq!(
        app.event_types(&id).await,
        ["messaging.message.queued", "messaging.message.failed", "messaging.message.fallback"]
    );
    let (data,): (String,) = sqlx::query_as("SELECT data FROM events WHERE type = 'messaging.message.fallback'")
        .fetch_one(app.db().writer_for_tests())
        .await
        .unwrap();
    let data: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(data["message"]["id"], id.as_str());
    assert_eq!(data["message"]["fallback_message_id"], sms["id"]);
    assert_eq!(data["fallback_message"]["id"], sms["id"]);

    // Without fallback, a failed iMessage stays failed.
    let plain =
        app.post("/messages", &app.org.key, json!({"to": "+12015550151", "body": "no fallback"})).await.expect(202);
    let plain_id = plain["message"]["id"].as_str().unwrap();
    app.wait_for_message(&app.org.key, plain_id, "failed", |m| m["status"] == "failed").await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let stored = app.get(&format!("/messages/{plain_id}"), &app.org.key).await.expect(200);
    assert!(stored["fallback_message_id"].is_null());
    assert!(line.sent().await.iter().all(|s| s["body"] != "no fallback"));
}

#[tokio::test]
async fn the_organisations_default_applies_to_sends_that_do_not_say() {
    let app = app().await;
    let line = app.default_line().await;
    reject_imessage(&line).await;
    assert_eq!(app.get("/settings", &app.org.key).await.expect(200)["fallback"], "none");
    let refused =
        app.request(reqwest::Method::PATCH, "/settings", Some(&app.org.key), Some(json!({"fallback": "mms"})));
    refused.await.expect_error(400, "invalid_request", Some("fallback"));
    let on = app.request(reqwest::Method::PATCH, "/settings", Some(&app.org.key), Some(json!({"fallback": "sms"})));
    assert_eq!(on.await.expect(200)["fallback"], "sms");

    let default = app.post("/messages", &app.org.key, json!({"to": "+12015550152", "body": "by default"})).await;
    let default_id = default.expect(202)["message"]["id"].as_str().unwrap().to_string();
    let (_, sms) = fell_back(&app, &default_id).await;
    assert_eq!(sms["body"], "by default");

    let none =
        app.post("/messages", &app.org.key, json!({"to": "+12015550153", "body": "not this one", "fallback": "none"}));
    let none_id = none.await.expect(202)["message"]["id"].as_str().unwrap().to_string();
    app.wait_for_message(&app.org.key, &none_id, "failed", |m| m["status"] == "failed").await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(app.get(&format!("/messages/{none_id}"), &app.org.key).await.expect(200)["fallback_message_id"].is_null());

    // An SMS send has nothing to fall back from.
    let sms = app.post("/messages", &app.org.key, json!({"to": "+12015550154", "body": "sms", "channel": "sms"}));
    let sms_id = sms.await.expect(202)["message"]["id"].as_str().unwrap().to_string();
    app.wait_for_message(&app.org.key, &sms_id, "delivered", |m| m["status"] == "delivered").await;
    assert!(app.get(&format!("/messages/{sms_id}"), &app.org.key).await.expect(200)["fallback_message_id"].is_null());
}

#[tokio::test]
async fn fallback_after_seconds_falls_back_when_the_imessage_is_not_delivered_in_time() {
    let app = app().await;
    // The line takes its time: four seconds between each step of a message's progress.
    let org = app.org.clone();
    let line = app
        .sim_line(LineSpec { e164: "+12015550100", org: Some(&org), sim_args: &["--step-ms", "4000"], start: true })
        .await;
    let body = json!({"to": "+12015550155", "body": "slow", "fallback": "sms", "fallback_after_seconds": 1});
    let sent = app.post("/messages", &app.org.key, body).await.expect(202);
    let id = sent["message"]["id"].as_str().unwrap().to_string();
    let message =
        app.wait_for_message(&app.org.key, &id, "its SMS fallback", |m| m["fallback_message_id"].is_string()).await;
    assert!(matches!(message["status"].as_str(), Some("submitted" | "sent")), "not delivered yet: {message}");
    let sms_id = message["fallback_message_id"].as_str().unwrap();
    let sms = app.get(&format!("/messages/{sms_id}"), &app.org.key).await.expect(200);
    assert_eq!((sms["channel"].as_str(), sms["fallback_for"].as_str()), (Some("sms"), Some(id.as_str())));
    // The iMessage may still arrive: the documented risk of falling back on time.
    let imessage = app.wait_for_message(&app.org.key, &id, "delivered", |m| m["status"] == "delivered").await;
    assert_eq!(imessage["fallback_message_id"], sms_id);
    let copies = line.sent().await.into_iter().filter(|s| s["body"] == "slow").count();
    assert_eq!(copies, 2, "the iMessage and one SMS");

    // A message delivered before its time never falls back.
    let quick = app.sim_line(LineSpec { e164: "+12015550101", org: Some(&org), sim_args: &[], start: true }).await;
    let body = json!({"to": "+12015550156", "body": "quick", "fallback": "sms", "fallback_after_seconds": 3,
                      "line_id": quick.line_id});
    let sent = app.post("/messages", &app.org.key, body).await.expect(202);
    let quick_id = sent["message"]["id"].as_str().unwrap().to_string();
    app.wait_for_message(&app.org.key, &quick_id, "delivered", |m| m["status"] == "delivered").await;
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    let stored = app.get(&format!("/messages/{quick_id}"), &app.org.key).await.expect(200);
    assert!(stored["fallback_message_id"].is_null(), "{stored}");
    assert_eq!(quick.sent().await.len(), 1);
}

#[tokio::test]
async fn fallback_fields_are_checked_and_a_refusal_writes_nothing() {
    let app = app().await;
    let _line = app.default_line().await;
    let to = "+12015550157";
    for (body, field) in [
        (json!({"to": to, "body": "x", "fallback": "mms"}), "fallback"),
        (json!({"to": to, "body": "x", "fallback": true}), "fallback"),
        (json!({"to": to, "body": "x", "fallback": "sms", "fallback_after_seconds": 0}), "fallback_after_seconds"),
        (json!({"to": to, "body": "x", "fallback": "sms", "fallback_after_seconds": 86_401}), "fallback_after_seconds"),
        (json!({"to": to, "body": "x", "fallback": "sms", "fallback_after_seconds": "10"}), "fallback_after_seconds"),
        (json!({"to": to, "body": "x", "fallback": "none", "fallback_after_seconds": 10}), "fallback_after_seconds"),
        (json!({"to": to, "fallback": "sms", "media_urls": ["https://cdn.example/a.png"]}), "fallback"),
    ] {
        app.post("/messages", &app.org.key, body).await.expect_error(400, "invalid_request", Some(field));
    }
    assert_eq!(app.get("/messages", &app.org.key).await.expect(200)["data"], json!([]));
}

/// Sends `count` messages with fallback through `api`; their ids.
async fn send_with_fallback(client: &reqwest::Client, api: &str, key: &str, count: usize, tag: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..count {
        let answer = json_answer(client.post(format!("{api}/messages")).bearer_auth(key).json(&json!({
            "to": format!("+1201555{:04}", 4000 + i),
            "body": format!("{tag} {i}"),
            "fallback": "sms",
        })))
        .await;
        ids.push(answer["message"]["id"].as_str().expect("id").to_string());
    }
    ids
}

/// Waits until every message fell back; then checks each has exactly one SMS, in the database
/// and on the line.
async fn exactly_one_sms_each(url: &str, sim_port: u16, ids: &[String], tag: &str) {
    let reader = msgline::Db::connect(url).await.unwrap();
    let rows = eventually(60, "every message to fall back", || async {
        let rows: Vec<(String, Option<String>, Option<String>)> =
            sqlx::query_as("SELECT id, fallback_message_id, fallback_for FROM messages")
                .fetch_all(reader.writer_for_tests())
                .await
                .unwrap();
        let pointed = rows.iter().filter(|(id, to, _)| ids.contains(id) && to.is_some()).count();
        (pointed == ids.len()).then_some(rows)
    })
    .await;
    let mut sms_for: HashMap<String, usize> = HashMap::new();
    for (_, _, fallback_for) in &rows {
        if let Some(of) = fallback_for {
            *sms_for.entry(of.clone()).or_default() += 1;
        }
    }
    for id in ids {
        assert_eq!(sms_for.get(id), Some(&1), "{id} has exactly one SMS");
    }
    reader.close().await;
    let client = reqwest::Client::new();
    let on_line = eventually(30, "the SMS to reach the line", || async {
        let sent: Vec<Value> =
            client.get(format!("http://127.0.0.1:{sim_port}/control/sent")).send().await.ok()?.json().await.ok()?;
        let mine: Vec<Value> =
            sent.into_iter().filter(|s| s["body"].as_str().is_some_and(|b| b.starts_with(tag))).collect();
        (mine.len() >= ids.len()).then_some(mine)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut bodies: HashMap<String, usize> = HashMap::new();
    for sent in &on_line {
        assert_eq!(sent["channel"], "sms");
        *bodies.entry(sent["body"].as_str().unwrap().to_string()).or_default() += 1;
    }
    assert_eq!(bodies.len(), ids.len());
    assert!(bodies.values().all(|n| *n == 1), "each text reached the line once: {bodies:?}");
}

#[tokio::test]
async fn kill_9_between_failures_and_their_fallbacks_still_gives_each_message_one_sms() {
    let db = TestDb::new().await;
    let url = db.url().to_string();
    let ProcessLine { key, port, sim_port, sim: _sim, .. } = process_line(&url, "Fallback crash").await;
    let client = reqwest::Client::new();
    reject_imessage_at(&client, sim_port).await;
    let mut server = serve_process(&url, port, &[]).await;
    let api = format!("http://127.0.0.1:{port}/api/v1/messaging");
    let ids = send_with_fallback(&client, &api, &key, 60, "crash").await;
    // Killed while failures are still being decided.
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    let _server = serve_process(&url, port, &[]).await;
    exactly_one_sms_each(&url, sim_port, &ids, "crash").await;
}

#[tokio::test]
async fn three_instances_fall_back_once_per_message() {
    if !use_postgres() {
        return; // several instances need a shared server database: the PostgreSQL pass runs this
    }
    let db = TestDb::new_postgres().await;
    let url = db.url().to_string();
    let ProcessLine { key, port, sim_port, sim: _sim, .. } = process_line(&url, "Fallback three").await;
    let client = reqwest::Client::new();
    reject_imessage_at(&client, sim_port).await;
    let ports = [port, crate::simline::free_port(), crate::simline::free_port()];
    let mut servers = Vec::new();
    for port in ports {
        servers.push(serve_process(&url, port, &[]).await);
    }
    let mut ids = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let api = format!("http://127.0.0.1:{port}/api/v1/messaging");
        let tag = format!("three{i}");
        ids.extend(send_with_fallback(&client, &api, &key, 30, &tag).await);
    }
    exactly_one_sms_each(&url, sim_port, &ids, "three").await;
}
