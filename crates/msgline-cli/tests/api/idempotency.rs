//! Idempotent sends: a replay answers what the first request got and sends nothing more, and
//! concurrent requests with one key send exactly once.

use serde_json::{Value, json};

use crate::helpers::{spawn_app, spawn_app_with};

const FRIEND: &str = "+12015550123";

fn hello() -> Value {
    json!({"to": FRIEND, "body": "Hello"})
}

#[tokio::test]
async fn a_key_past_its_time_is_free_for_a_new_send() {
    // Keys last MSGLINE_IDEMPOTENCY_TTL_HOURS; at 0 they are past their time at once.
    let app = spawn_app_with(|config| config.idempotency_ttl_hours = 0).await;
    let _line = app.default_line().await;
    let send = |body: Value| {
        app.client
            .post(app.url("/messages"))
            .bearer_auth(&app.org.key)
            .header("Idempotency-Key", "order-18")
            .json(&body)
            .send()
    };
    let first = send(hello()).await.unwrap();
    assert_eq!(first.status(), 202);
    let first: Value = first.json().await.unwrap();
    let again = send(hello()).await.unwrap();
    assert_eq!(again.status(), 202, "an expired key replays nothing");
    let again: Value = again.json().await.unwrap();
    assert_ne!(again["message"]["id"], first["message"]["id"]);
    let other = send(json!({"to": FRIEND, "body": "a different text"})).await.unwrap();
    assert_eq!(other.status(), 202, "nor does it hold a different request off");
}

#[tokio::test]
async fn a_replay_with_the_same_key_returns_the_original_and_sends_nothing_more() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let send = |body: Value| {
        app.client
            .post(app.url("/messages"))
            .bearer_auth(&app.org.key)
            .header("Idempotency-Key", "order-17")
            .json(&body)
            .send()
    };
    let first = send(hello()).await.unwrap();
    assert_eq!(first.status(), 202);
    let first: Value = first.json().await.unwrap();
    let id = first["message"]["id"].as_str().unwrap().to_string();

    // Once the message has moved on, a replay still answers what the send answered.
    app.wait_for_message(&app.org.key, &id, "delivered", |m| m["status"] == "delivered").await;
    let replay = send(hello()).await.unwrap();
    assert_eq!(replay.status(), 200);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    let replay: Value = replay.json().await.unwrap();
    assert_eq!(replay["duplicate"], true);
    assert_eq!(replay["message"]["id"], id.as_str());
    let mut original = first.clone();
    original["duplicate"] = json!(true);
    assert_eq!(replay, original, "the replay is the first answer, flagged as a duplicate");

    let other = send(json!({"to": FRIEND, "body": "a different text"})).await.unwrap();
    assert_eq!(other.status(), 409);
    let other: Value = other.json().await.unwrap();
    assert_eq!(other["error"], "idempotency_key_reused");

    // The key in the body means the same; the header and the body disagreeing is a 400.
    let body_key = app
        .post("/messages", &app.org.key, json!({"to": FRIEND, "body": "Hello", "idempotency_key": "order-17"}))
        .await;
    assert_eq!(body_key.expect(200)["message"]["id"], id.as_str());

    app.wait_for_message(&app.org.key, &id, "delivered", |m| m["status"] == "delivered").await;
    assert_eq!(line.sent().await.len(), 1);
}

#[tokio::test]
async fn twenty_concurrent_requests_with_one_key_send_exactly_once() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let mut requests = Vec::new();
    for _ in 0..20 {
        let request = app
            .client
            .post(app.url("/messages"))
            .bearer_auth(&app.org.key)
            .header("Idempotency-Key", "concurrent-1")
            .json(&hello())
            .send();
        requests.push(request);
    }
    let mut accepted = 0;
    let mut ids = std::collections::HashSet::new();
    for response in futures_util::future::join_all(requests).await {
        let response = response.unwrap();
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        match status {
            202 => accepted += 1,
            200 => assert_eq!(body["duplicate"], true),
            409 => assert_eq!(body["error"], "idempotency_key_in_progress"),
            other => panic!("unexpected {other}: {body}"),
        }
        if let Some(id) = body["message"]["id"].as_str() {
            ids.insert(id.to_string());
        }
    }
    assert_eq!(accepted, 1);
    assert_eq!(ids.len(), 1);
    let id = ids.into_iter().next().unwrap();
    let listed = app.get("/messages", &app.org.key).await.expect(200);
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    app.wait_for_message(&app.org.key, &id, "delivered", |m| m["status"] == "delivered").await;
    assert_eq!(line.sent_with_id(&id).await.len(), 1);
    assert_eq!(line.sent().await.len(), 1);
}

#[tokio::test]
async fn twenty_concurrent_requests_with_one_key_to_a_known_recipient_send_exactly_once() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    // The recipient is known: later sends to it take the shared-commit path on SQLite.
    app.post("/messages", &app.org.key, json!({"to": FRIEND, "body": "warm-up"})).await.expect(202);
    let requests: Vec<_> = (0..20)
        .map(|_| {
            app.client
                .post(app.url("/messages"))
                .bearer_auth(&app.org.key)
                .header("Idempotency-Key", "concurrent-known")
                .json(&hello())
                .send()
        })
        .collect();
    let mut statuses = Vec::new();
    let mut ids = std::collections::HashSet::new();
    for response in futures_util::future::join_all(requests).await {
        let response = response.unwrap();
        statuses.push(response.status().as_u16());
        let body: Value = response.json().await.unwrap();
        if let Some(id) = body["message"]["id"].as_str() {
            ids.insert(id.to_string());
        }
    }
    assert_eq!(statuses.iter().filter(|s| **s == 202).count(), 1, "{statuses:?}");
    assert!(statuses.iter().all(|s| matches!(s, 200 | 202 | 409)), "{statuses:?}");
    assert_eq!(ids.len(), 1);
    let id = ids.into_iter().next().unwrap();
    app.wait_for_message(&app.org.key, &id, "delivered", |m| m["status"] == "delivered").await;
    assert_eq!(line.sent_with_id(&id).await.len(), 1);
    assert_eq!(line.sent().await.len(), 2);
}
