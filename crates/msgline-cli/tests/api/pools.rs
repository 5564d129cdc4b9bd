//! Sender pools: the routes, the line a send through a pool takes (sticky for a known contact,
//! the most budget left for a new one), and failover that moves only what no line was handed.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::{
    helpers::{TestApp, eventually, spawn_app_with},
    simline::{LineSpec, SimLine},
};

async fn app_with(configure: impl FnOnce(&mut msgline::Config)) -> TestApp {
    spawn_app_with(|c| {
        c.rate_limit_per_minute = 1_000_000;
        c.send_rate_limit_per_minute = 1_000_000;
        configure(c);
    })
    .await
}

async fn line(app: &TestApp, e164: &str) -> SimLine {
    let org = app.org.clone();
    app.sim_line(LineSpec { e164, org: Some(&org), sim_args: &[], start: true }).await
}

async fn send(app: &TestApp, body: Value) -> Value {
    app.post("/messages", &app.org.key, body).await.expect(202)["message"].clone()
}

async fn delivered(app: &TestApp, id: &str) -> Value {
    app.wait_for_message(&app.org.key, id, "delivered", |m| m["status"] == "delivered").await
}

#[tokio::test]
async fn a_pool_is_created_read_changed_and_deleted_and_bad_fields_are_named() {
    let app = app_with(|_| {}).await;
    let one = app.create_line_id("+12015550180", Some(&app.org)).await;
    let two = app.create_line_id("+12015550181", Some(&app.org)).await;
    let shared = app.create_line_id("+12015550182", None).await;
    let pool = app.post("/pools", &app.org.key, json!({"name": "Support", "line_ids": [one, two]})).await.expect(201);
    assert!(pool["id"].as_str().unwrap().starts_with("pool_"));
    assert_eq!(pool["line_ids"], json!([one, two]));
    assert_eq!(pool["failover_after_seconds"], 300);
    let id = pool["id"].as_str().unwrap().to_string();
    assert_eq!(app.get(&format!("/pools/{id}"), &app.org.key).await.expect(200), pool);
    assert_eq!(app.get("/pools", &app.org.key).await.expect(200)["data"][0]["id"], id.as_str());
    let changed = app
        .request(
            Method::PATCH,
            &format!("/pools/{id}"),
            Some(&app.org.key),
            Some(json!({"name": "Help", "failover_after_seconds": 60})),
        )
        .await
        .expect(200);
    assert_eq!((changed["name"].as_str(), changed["failover_after_seconds"].as_i64()), (Some("Help"), Some(60)));
    assert_eq!(changed["line_ids"], json!([one, two]), "a field left out keeps its value");

    for (body, status, code, field) in [
        (json!({"line_ids": [one]}), 400, "invalid_request", "name"),
        (json!({"name": "x"}), 400, "invalid_request", "line_ids"),
        (json!({"name": "x", "line_ids": []}), 400, "invalid_request", "line_ids"),
        (json!({"name": "x", "line_ids": [one, one]}), 400, "invalid_request", "line_ids[1]"),
        (json!({"name": "x", "line_ids": [shared]}), 400, "invalid_request", "line_ids[0]"),
        (json!({"name": "x", "line_ids": ["line_unknown"]}), 404, "not_found", "line_ids[0]"),
        (
            json!({"name": "x", "line_ids": [one], "failover_after_seconds": 4}),
            400,
            "invalid_request",
            "failover_after_seconds",
        ),
    ] {
        app.post("/pools", &app.org.key, body).await.expect_error(status, code, Some(field));
    }
    let other = app.create_org("Other").await;
    app.get(&format!("/pools/{id}"), &other.key).await.expect_error(404, "not_found", None);
    let reader = app.create_key(&app.org, &["messaging_read", "messaging_send"], None).await;
    app.get("/pools", &reader).await.expect_error(403, "missing messaging_lines scope", None);

    // A send names a pool or a line, not both; an unknown pool is not found.
    let both = json!({"to": "+12015550123", "body": "x", "pool_id": id, "line_id": one});
    app.post("/messages", &app.org.key, both).await.expect_error(400, "invalid_request", Some("pool_id"));
    let unknown = json!({"to": "+12015550123", "body": "x", "pool_id": "pool_unknown"});
    app.post("/messages", &app.org.key, unknown).await.expect_error(404, "not_found", Some("pool_id"));

    assert_eq!(app.delete(&format!("/pools/{id}"), &app.org.key).await.status, 204);
    app.get(&format!("/pools/{id}"), &app.org.key).await.expect_error(404, "not_found", None);
}

#[tokio::test]
async fn new_contacts_go_to_the_line_with_the_most_budget_left_and_a_contact_stays_on_its_line() {
    let app = app_with(|_| {}).await;
    let one = line(&app, "+12015550183").await;
    let two = line(&app, "+12015550184").await;
    for (sim, day) in [(&one, 100), (&two, 100)] {
        let path = format!("/lines/{}", sim.line_id);
        app.request(Method::PATCH, &path, Some(&app.org.key), Some(json!({"policy": {"max_per_day": day}})))
            .await
            .expect(200);
    }
    let pool =
        app.post("/pools", &app.org.key, json!({"name": "Spread", "line_ids": [one.line_id, two.line_id]})).await;
    let pool = pool.expect(201)["id"].as_str().unwrap().to_string();
    let mut lines_used = Vec::new();
    for i in 0..4 {
        let sent = send(&app, json!({"to": format!("+1201555019{i}"), "body": "hello", "pool_id": pool})).await;
        delivered(&app, sent["id"].as_str().unwrap()).await;
        lines_used.push(sent["line_id"].as_str().unwrap().to_string());
    }
    // Each new contact went to the line with the most of the day left: they take turns.
    assert_eq!(lines_used.iter().filter(|l| **l == one.line_id).count(), 2, "{lines_used:?}");
    assert_eq!(lines_used.iter().filter(|l| **l == two.line_id).count(), 2, "{lines_used:?}");
    // A contact stays on its line, whatever the budgets say now.
    let again = send(&app, json!({"to": "+12015550193", "body": "again", "pool_id": pool})).await;
    assert_eq!(again["line_id"], lines_used[3].as_str());
}

#[tokio::test]
async fn failover_moves_only_messages_no_line_was_handed_and_the_contact_follows() {
    let app = app_with(|c| {
        c.line_check_seconds = 1;
        c.bridge_timeout_ms = 1_000;
    })
    .await;
    let one = line(&app, "+12015550185").await;
    let two = line(&app, "+12015550186").await;
    let body = json!({"name": "Failover", "line_ids": [one.line_id, two.line_id], "failover_after_seconds": 5});
    let pool = app.post("/pools", &app.org.key, body).await.expect(201)["id"].as_str().unwrap().to_string();
    let to = "+12015550187";
    let first = send(&app, json!({"to": to, "body": "first", "pool_id": pool})).await;
    assert_eq!(first["line_id"], one.line_id.as_str());
    delivered(&app, first["id"].as_str().unwrap()).await;

    // The device takes the next one without answering in time (the line may have it: unknown),
    // then goes away.
    one.control("/control/mode", json!({"mode": "timeout"})).await;
    let handed = send(&app, json!({"to": to, "body": "handed over", "pool_id": pool})).await;
    let handed_id = handed["id"].as_str().unwrap().to_string();
    app.wait_for_message(&app.org.key, &handed_id, "unknown", |m| m["status"] == "unknown").await;
    one.control("/control/mode", json!({"offline": true})).await;
    eventually(15, "the line offline", || async {
        let shown = app.get(&format!("/lines/{}", one.line_id), &app.org.key).await.expect(200);
        (shown["health"] == "offline").then_some(())
    })
    .await;
    let waiting = send(&app, json!({"to": to, "body": "waiting", "pool_id": pool})).await;
    let waiting_id = waiting["id"].as_str().unwrap().to_string();
    assert_eq!(waiting["line_id"], one.line_id.as_str(), "the contact's line, while it is not yet failed over");
    let moved =
        app.wait_for_message(&app.org.key, &waiting_id, "moved and delivered", |m| m["status"] == "delivered").await;
    assert_eq!(moved["line_id"], two.line_id.as_str());
    assert_ne!(moved["conversation_id"], first["conversation_id"], "the contact's conversation on the new line");
    // The handed-over message stayed where it was.
    let stayed = app.get(&format!("/messages/{handed_id}"), &app.org.key).await.expect(200);
    assert_eq!(stayed["line_id"], one.line_id.as_str());
    let on_two: Vec<Value> = two.sent().await;
    assert_eq!(on_two.len(), 1, "only the waiting message reached the second line: {on_two:?}");
    assert_eq!(on_two[0]["id"], waiting_id.as_str());
    // The contact now answers from the second line.
    let next = send(&app, json!({"to": to, "body": "next", "pool_id": pool})).await;
    assert_eq!(next["line_id"], two.line_id.as_str());
    tokio::time::sleep(Duration::from_millis(200)).await;
}
