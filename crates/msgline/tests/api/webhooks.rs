//! Webhooks: registration, subscriptions, Standard Webhooks signatures checked by an independent
//! verifier, retries, Retry-After, disabling, replay and kill -9 — against a real receiver
//! process on a loopback port.

use std::{collections::HashSet, time::Duration};

use serde_json::{Value, json};
use tokio::process::Child;

use crate::{
    helpers::{ProcessLine, TestApp, TestDb, eventually, process_line, serve_process, spawn_app, spawn_app_with},
    receiver::{Received, Receiver},
    simline::LineSpec,
};

const FRIEND: &str = "+12015550123";
/// A secret that signed nothing here.
const WRONG_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// The app as a delivery test needs it: receivers on loopback allowed, the given retry schedule.
async fn spawn_delivering_app(schedule: &str) -> TestApp {
    let schedule = schedule.to_string();
    spawn_app_with(move |config| {
        config.allow_private_targets = true;
        config.webhook_retry_schedule = schedule;
    })
    .await
}

async fn register(app: &TestApp, url: &str, events: Value) -> Value {
    app.post("/webhooks", &app.org.key, json!({"url": url, "events": events})).await.expect(201)
}

fn id_of(value: &Value) -> String {
    value["id"].as_str().expect("id").to_string()
}

/// Waits until every event is fanned out and every delivery settled.
async fn settled(app: &TestApp) {
    eventually(30, "webhook deliveries to settle", || async {
        let outstanding = msgline::db::webhook_deliveries::outstanding(app.db()).await.expect("count");
        (outstanding == 0).then_some(())
    })
    .await;
}

/// Sends a message and waits until it is delivered and its events have gone out.
async fn send_and_settle(app: &TestApp, body: Value) -> String {
    let sent = app.post("/messages", &app.org.key, body).await.expect(202);
    let id = sent["message"]["id"].as_str().unwrap().to_string();
    app.wait_for_message(&app.org.key, &id, "delivered", |m| m["status"] == "delivered").await;
    settled(app).await;
    id
}

fn types(received: &[Received]) -> Vec<String> {
    let mut types: Vec<String> = received.iter().map(Received::event_type).collect();
    types.sort();
    types
}

fn sorted(names: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_registered_endpoint_shows_its_secret_once_and_can_be_listed_read_and_deleted() {
    let app = spawn_app().await;
    let created = app
        .post(
            "/webhooks",
            &app.org.key,
            json!({"url": "https://example.com/hooks", "events": ["message.received", "messaging.message.*"], "description": "CRM"}),
        )
        .await
        .expect(201);
    let id = id_of(&created);
    assert!(id.starts_with("wh_"), "{id}");
    assert_eq!(created["url"], "https://example.com/hooks");
    assert_eq!(created["events"], json!(["messaging.message.*", "messaging.message.received"]));
    assert_eq!(created["description"], "CRM");
    assert_eq!(created["enabled"], true);
    assert!(created["created_at"].is_string());
    let secret = created["secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_") && secret.len() == 38, "{secret}");

    let read = app.get(&format!("/webhooks/{id}"), &app.org.key).await.expect(200);
    assert_eq!(read["id"], id.as_str());
    assert!(read.get("secret").is_none(), "the secret is shown only at creation: {read}");
    let listed = app.get("/webhooks", &app.org.key).await.expect(200);
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    assert!(listed["data"][0].get("secret").is_none());
    assert!(!listed.to_string().contains(secret));

    // Another organisation cannot see it.
    let other = app.create_org("Other").await;
    app.get(&format!("/webhooks/{id}"), &other.key).await.expect_error(404, "not_found", None);
    assert_eq!(app.get("/webhooks", &other.key).await.expect(200)["data"], json!([]));

    assert_eq!(app.delete(&format!("/webhooks/{id}"), &app.org.key).await.expect(200)["deleted"], true);
    app.get(&format!("/webhooks/{id}"), &app.org.key).await.expect_error(404, "not_found", None);
    app.delete(&format!("/webhooks/{id}"), &app.org.key).await.expect_error(404, "not_found", None);
}

#[tokio::test]
async fn invalid_registrations_are_400_naming_the_field_and_the_bad_entry() {
    let app = spawn_app().await;
    let key = &app.org.key;
    let events = json!(["*"]);
    for (url, why) in [
        ("http://example.com/hooks", "https"),
        ("https://127.0.0.1/hooks", "private"),
        ("https://10.1.2.3/hooks", "private"),
        ("https://[::1]/hooks", "private"),
        ("https://169.254.169.254/latest", "private"),
        ("https://localhost/hooks", "private"),
        ("https://user:pw@example.com/hooks", "user name"),
        ("not a url", "not valid"),
        ("ftp://example.com/", "not valid"),
    ] {
        let body = app.post("/webhooks", key, json!({"url": url, "events": events})).await.expect_error(
            400,
            "invalid_request",
            Some("url"),
        );
        assert!(body["message"].as_str().unwrap().contains(why), "{url}: {body}");
    }
    for bad in ["messaging.message.exploded", "message.delivered", "messaging.*", ""] {
        let body = app
            .post("/webhooks", key, json!({"url": "https://example.com/h", "events": ["message.sent", bad]}))
            .await
            .expect_error(400, "invalid_request", Some("events"));
        assert!(body["message"].as_str().unwrap().contains(&format!("{bad:?}")), "{body}");
    }
    for (body, field) in [
        (json!({"events": ["*"]}), "url"),
        (json!({"url": "https://example.com/h"}), "events"),
        (json!({"url": "https://example.com/h", "events": []}), "events"),
        (json!({"url": "https://example.com/h", "events": "*"}), "events"),
        (json!({"url": 5, "events": ["*"]}), "url"),
    ] {
        app.post("/webhooks", key, body).await.expect_error(400, "invalid_request", Some(field));
    }
    assert_eq!(app.get("/webhooks", key).await.expect(200)["data"], json!([]), "nothing was registered");

    // The same rules, relaxed for development: http and loopback are allowed.
    let open = spawn_delivering_app("1s").await;
    let created = register(&open, "http://127.0.0.1:9/hooks", json!(["*"])).await;
    assert_eq!(created["url"], "http://127.0.0.1:9/hooks");
}

#[tokio::test]
async fn a_key_without_the_webhooks_scope_gets_403_and_no_key_gets_401() {
    let app = spawn_app().await;
    let reader = app.create_key(&app.org, &["messaging_read", "messaging_send"], None).await;
    let body = json!({"url": "https://example.com/h", "events": ["*"]});
    app.post("/webhooks", &reader, body.clone()).await.expect_error(403, "missing messaging_webhooks scope", None);
    app.get("/webhooks", &reader).await.expect_error(403, "missing messaging_webhooks scope", None);
    let id = id_of(&app.post("/webhooks", &app.org.key, body.clone()).await.expect(201));
    for path in [format!("/webhooks/{id}"), format!("/webhooks/{id}/deliveries")] {
        app.get(&path, &reader).await.expect_error(403, "missing messaging_webhooks scope", None);
    }
    app.delete(&format!("/webhooks/{id}"), &reader).await.expect_error(403, "missing messaging_webhooks scope", None);
    app.post(&format!("/webhooks/{id}/rotate-secret"), &reader, json!({})).await.expect_error(
        403,
        "missing messaging_webhooks scope",
        None,
    );
    app.post(&format!("/webhooks/{id}/replay"), &reader, json!({"since": "2024-01-01T00:00:00Z"})).await.expect_error(
        403,
        "missing messaging_webhooks scope",
        None,
    );
    let anonymous = app.request(reqwest::Method::POST, "/webhooks", None, Some(body)).await;
    anonymous.expect_error(401, "unauthorized", None);
}

#[tokio::test]
async fn a_send_and_an_inbound_message_reach_exactly_the_endpoints_subscribed_to_them() {
    let app = spawn_delivering_app("1s").await;
    let line = app.default_line().await;
    let receiver = Receiver::start().await;
    register(&app, &receiver.url("/exact"), json!(["messaging.message.delivered", "messaging.message.failed"])).await;
    register(&app, &receiver.url("/aliases"), json!(["message.sent", "message.received"])).await;
    register(&app, &receiver.url("/messages"), json!(["messaging.message.*"])).await;
    register(&app, &receiver.url("/all"), json!(["*"])).await;
    register(&app, &receiver.url("/polls"), json!(["messaging.poll.voted", "messaging.group.created"])).await;

    let message_id = send_and_settle(&app, json!({"to": FRIEND, "body": "Hello"})).await;
    line.inbound(FRIEND, "Hello yourself").await;
    receiver.wait_for(5, Some("/all")).await;
    settled(&app).await;

    let lifecycle = [
        "messaging.message.queued",
        "messaging.message.submitted",
        "messaging.message.sent",
        "messaging.message.delivered",
        "messaging.message.received",
    ];
    assert_eq!(types(&receiver.received_on("/exact").await), sorted(&["messaging.message.delivered"]));
    assert_eq!(
        types(&receiver.received_on("/aliases").await),
        sorted(&["messaging.message.sent", "messaging.message.received"])
    );
    assert_eq!(types(&receiver.received_on("/messages").await), sorted(&lifecycle));
    assert_eq!(types(&receiver.received_on("/all").await), sorted(&lifecycle));
    assert!(receiver.received_on("/polls").await.is_empty());

    // The body is the event with the full message; webhook-id is the event id.
    for delivery in receiver.received_on("/all").await {
        let body = delivery.json();
        let keys: HashSet<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, HashSet::from(["id", "type", "created_at", "data"]));
        assert_eq!(body["id"], delivery.id());
        assert!(delivery.id().starts_with("evt_"));
        let message = &body["data"]["message"];
        let status = body["type"].as_str().unwrap().trim_start_matches("messaging.message.");
        assert_eq!(message["status"], status);
        if status == "received" {
            assert_eq!(message["body"], "Hello yourself");
            assert_eq!(message["direction"], "inbound");
        } else {
            assert_eq!(message["id"], message_id.as_str());
            assert_eq!(message["body"], "Hello");
            assert!(message["conversation_id"].is_string() && message["contact_id"].is_string());
        }
    }
}

#[tokio::test]
async fn deliveries_carry_standard_webhooks_signatures_that_an_independent_verifier_accepts() {
    let app = spawn_delivering_app("1s").await;
    let _line = app.default_line().await;
    let receiver = Receiver::start().await;
    let webhook = register(&app, &receiver.url("/hook"), json!(["messaging.message.queued"])).await;
    let secret = webhook["secret"].as_str().unwrap();

    send_and_settle(&app, json!({"to": FRIEND, "body": "Sign me"})).await;
    let delivery = &receiver.wait_for(1, None).await[0];
    assert_eq!(delivery.header("content-type"), "application/json");
    let now = msgline::clock::now_ms() / 1000;
    assert!((now - delivery.timestamp()).abs() < 60, "webhook-timestamp is unix seconds");
    let signature = delivery.header("webhook-signature");
    assert!(signature.starts_with("v1,") && !signature.contains(' '), "{signature}");

    eprintln!("verifying with {:?}", receiver.verifiers);
    assert!(receiver.verifies(delivery.index, secret, false).await, "the signature verifies");
    assert!(!receiver.verifies(delivery.index, secret, true).await, "a tampered body does not");
    assert!(!receiver.verifies(delivery.index, WRONG_SECRET, false).await, "another secret does not");
}

#[tokio::test]
async fn after_a_secret_rotation_old_and_new_secrets_both_sign_until_the_grace_ends() {
    let app = spawn_delivering_app("1s").await;
    let _line = app.default_line().await;
    let receiver = Receiver::start().await;
    let webhook = register(&app, &receiver.url("/hook"), json!(["messaging.message.queued"])).await;
    let id = id_of(&webhook);
    let first = webhook["secret"].as_str().unwrap().to_string();

    let rotated = app.post(&format!("/webhooks/{id}/rotate-secret"), &app.org.key, json!({})).await.expect(200);
    let second = rotated["secret"].as_str().unwrap().to_string();
    assert!(second.starts_with("whsec_") && second != first);
    let grace_ends = msgline::clock::parse_rfc3339(rotated["previous_secret_expires_at"].as_str().unwrap()).unwrap();
    let in_a_day = msgline::clock::now_ms() + 86_400_000;
    assert!((grace_ends - in_a_day).abs() < 60_000, "24 hours of grace by default");
    assert!(app.get(&format!("/webhooks/{id}"), &app.org.key).await.expect(200).get("secret").is_none());

    send_and_settle(&app, json!({"to": FRIEND, "body": "during the grace"})).await;
    let during = &receiver.wait_for(1, None).await[0];
    assert_eq!(during.header("webhook-signature").split(' ').count(), 2, "one signature per secret");
    assert!(receiver.verifies(during.index, &second, false).await);
    assert!(receiver.verifies(during.index, &first, false).await);

    let at_once =
        app.post(&format!("/webhooks/{id}/rotate-secret"), &app.org.key, json!({"grace_seconds": 0})).await.expect(200);
    let third = at_once["secret"].as_str().unwrap().to_string();
    assert!(at_once["previous_secret_expires_at"].is_null());
    send_and_settle(&app, json!({"to": FRIEND, "body": "after"})).await;
    let after = &receiver.wait_for(2, None).await[1];
    assert!(receiver.verifies(after.index, &third, false).await);
    assert!(!receiver.verifies(after.index, &second, false).await);
    assert!(!receiver.verifies(after.index, &first, false).await);
    app.post(&format!("/webhooks/{id}/rotate-secret"), &app.org.key, json!({"grace_seconds": -1})).await.expect_error(
        400,
        "invalid_request",
        Some("grace_seconds"),
    );
}

#[tokio::test]
async fn a_receiver_failing_three_times_gets_the_event_four_times_with_one_id_and_then_never_again() {
    // 1.25 s ± 20 % is never under a second, so every retry carries a later timestamp.
    let app = spawn_delivering_app("1250ms,1250ms,1250ms,1250ms").await;
    let _line = app.default_line().await;
    let receiver = Receiver::start().await;
    let long_answer = "x".repeat(5000);
    receiver
        .script(
            json!([{"status": 500, "body": long_answer}, {"status": 500, "body": "down"}, {"status": 502, "body": "down"}]),
            json!({"status": 200, "body": "thanks"}),
        )
        .await;
    let webhook = register(&app, &receiver.url("/hook"), json!(["messaging.message.queued"])).await;
    let id = id_of(&webhook);
    app.post("/messages", &app.org.key, json!({"to": FRIEND, "body": "retry me"})).await.expect(202);

    let got = receiver.wait_for(4, None).await;
    settled(&app).await;
    let event_id = got[0].id();
    assert!(got.iter().all(|r| r.id() == event_id), "the same webhook-id on every attempt");
    assert!(got.iter().all(|r| r.body == got[0].body), "the same body on every attempt");
    for pair in got.windows(2) {
        assert!(pair[1].timestamp() > pair[0].timestamp(), "each attempt has a later timestamp");
        let gap = pair[1].at - pair[0].at;
        assert!(gap >= 1.0, "retries wait for the schedule (gap {gap:.3} s)");
    }
    assert!(receiver.verifies(3, webhook["secret"].as_str().unwrap(), false).await);

    // Delivered: nothing more comes, even after the schedule's next delay has passed.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(receiver.received().await.len(), 4, "a delivered event is not sent again");

    let attempts = app.get(&format!("/webhooks/{id}/deliveries"), &app.org.key).await.expect(200);
    let attempts = attempts["data"].as_array().unwrap();
    assert_eq!(attempts.len(), 4);
    let statuses: Vec<i64> = attempts.iter().map(|a| a["status_code"].as_i64().unwrap()).collect();
    assert_eq!(statuses, [200, 502, 500, 500], "newest first");
    for (attempt, number) in attempts.iter().zip([4, 3, 2, 1]) {
        assert_eq!(attempt["attempt"], number);
        assert_eq!(attempt["event_id"], event_id.as_str());
        assert_eq!(attempt["event_type"], "messaging.message.queued");
        assert!(attempt["id"].as_str().unwrap().starts_with("att_"));
        assert!(attempt["latency_ms"].is_i64());
        assert_eq!(attempt["succeeded"], number == 4);
        assert_eq!(attempt["next_attempt_at"].is_string(), number < 4, "{attempt}");
    }
    assert_eq!(attempts[0]["response_body"], "thanks");
    assert_eq!(attempts[3]["response_body"].as_str().unwrap().len(), 1024, "long answers are cut to 1 KiB");
    let filtered =
        app.get(&format!("/webhooks/{id}/deliveries?event_id={event_id}&limit=2"), &app.org.key).await.expect(200);
    assert_eq!(filtered["data"].as_array().unwrap().len(), 2);
    assert!(filtered["next_cursor"].is_string());
}

#[tokio::test]
async fn a_410_disables_the_endpoint_at_once_and_a_replay_enables_it_again() {
    let app = spawn_delivering_app("100ms,100ms,100ms").await;
    let _line = app.default_line().await;
    let receiver = Receiver::start().await;
    receiver.script(json!([{"status": 410}]), json!({"status": 200})).await;
    let before = msgline::clock::rfc3339(msgline::clock::now_ms());
    let id = id_of(&register(&app, &receiver.url("/hook"), json!(["messaging.message.queued"])).await);

    send_and_settle(&app, json!({"to": FRIEND, "body": "first"})).await;
    let webhook = app.get(&format!("/webhooks/{id}"), &app.org.key).await.expect(200);
    assert_eq!(webhook["enabled"], false);
    assert_eq!(webhook["disabled_reason"], "gone");
    assert!(webhook["disabled_at"].is_string());
    let attempts = app.get(&format!("/webhooks/{id}/deliveries"), &app.org.key).await.expect(200);
    assert_eq!(attempts["data"].as_array().unwrap().len(), 1, "a 410 is not retried");
    assert_eq!(attempts["data"][0]["status_code"], 410);
    assert!(attempts["data"][0]["next_attempt_at"].is_null());

    // A disabled endpoint gets nothing new.
    send_and_settle(&app, json!({"to": FRIEND, "body": "second"})).await;
    assert_eq!(receiver.received().await.len(), 1);

    // A replay brings it back, with what it missed.
    let replay = app.post(&format!("/webhooks/{id}/replay"), &app.org.key, json!({"since": before})).await.expect(202);
    assert_eq!(replay["queued"], 2);
    let got = receiver.wait_for(3, None).await;
    settled(&app).await;
    assert_eq!(receiver.received().await.len(), 3);
    let replayed: HashSet<String> = got[1..].iter().map(Received::id).collect();
    assert_eq!(replayed.len(), 2, "both queued events, once each");
    assert!(replayed.contains(&got[0].id()), "the event answered with 410 comes again");
    let webhook = app.get(&format!("/webhooks/{id}"), &app.org.key).await.expect(200);
    assert_eq!(webhook["enabled"], true);
    assert!(webhook["disabled_reason"].is_null());
}

#[tokio::test]
async fn retry_after_on_429_and_503_sets_the_next_attempt() {
    let app = spawn_delivering_app("100ms,100ms,100ms").await;
    let _line = app.default_line().await;
    let receiver = Receiver::start().await;
    receiver
        .script(
            json!([{"status": 429, "headers": {"Retry-After": "2"}}, {"status": 503, "headers": {"Retry-After": "1"}}]),
            json!({"status": 200}),
        )
        .await;
    let id = id_of(&register(&app, &receiver.url("/hook"), json!(["messaging.message.queued"])).await);
    app.post("/messages", &app.org.key, json!({"to": FRIEND, "body": "later please"})).await.expect(202);

    let got = receiver.wait_for(3, None).await;
    let (first_gap, second_gap) = (got[1].at - got[0].at, got[2].at - got[1].at);
    assert!(first_gap >= 2.0, "Retry-After: 2 waited {first_gap:.3} s");
    assert!(second_gap >= 1.0, "Retry-After: 1 waited {second_gap:.3} s");
    assert!(first_gap < 4.0 && second_gap < 3.0, "and not much longer ({first_gap:.3} s, {second_gap:.3} s)");
    settled(&app).await;
    let attempts = app.get(&format!("/webhooks/{id}/deliveries"), &app.org.key).await.expect(200);
    let oldest = &attempts["data"][2];
    assert_eq!(oldest["status_code"], 429);
    let planned = msgline::clock::parse_rfc3339(oldest["next_attempt_at"].as_str().unwrap()).unwrap()
        - msgline::clock::parse_rfc3339(oldest["created_at"].as_str().unwrap()).unwrap();
    assert_eq!(planned, 2000);
}

#[tokio::test]
async fn an_endpoint_whose_every_attempt_fails_for_the_disable_window_is_disabled() {
    let app = spawn_app_with(|config| {
        config.allow_private_targets = true;
        config.webhook_retry_schedule = "300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms".into();
        config.webhook_disable_after = "1s".into();
    })
    .await;
    let _line = app.default_line().await;
    let receiver = Receiver::start().await;
    receiver.script(json!([]), json!({"status": 500})).await;
    let id = id_of(&register(&app, &receiver.url("/hook"), json!(["messaging.message.queued"])).await);
    app.post("/messages", &app.org.key, json!({"to": FRIEND, "body": "x"})).await.expect(202);

    let webhook = eventually(30, "the endpoint to be disabled", || async {
        let webhook = app.get(&format!("/webhooks/{id}"), &app.org.key).await.expect(200);
        (webhook["enabled"] == false).then_some(webhook)
    })
    .await;
    assert_eq!(webhook["disabled_reason"], "failing");
    settled(&app).await;
    let count = receiver.received().await.len();
    assert!((2..=10).contains(&count), "attempts went on for about a second, then stopped ({count})");
}

#[tokio::test]
async fn replay_redelivers_exactly_the_events_since_the_given_time() {
    let app = spawn_delivering_app("1s").await;
    let _line = app.default_line().await;
    let receiver = Receiver::start().await;
    let id = id_of(&register(&app, &receiver.url("/hook"), json!(["*"])).await);

    send_and_settle(&app, json!({"to": FRIEND, "body": "before"})).await;
    assert_eq!(receiver.received().await.len(), 4);
    let later = send_and_settle(&app, json!({"to": FRIEND, "body": "after"})).await;
    let first_pass = receiver.received().await;
    assert_eq!(first_pass.len(), 8);
    let later_events: Vec<&Received> =
        first_pass.iter().filter(|r| r.json()["data"]["message"]["id"] == later.as_str()).collect();
    let since = later_events.iter().map(|r| r.json()["created_at"].as_str().unwrap().to_string()).min().unwrap();

    let replay = app.post(&format!("/webhooks/{id}/replay"), &app.org.key, json!({"since": since})).await.expect(202);
    assert_eq!(replay["queued"], 4);
    receiver.wait_for(12, None).await;
    settled(&app).await;
    let all = receiver.received().await;
    assert_eq!(all.len(), 12, "nothing else was sent again");
    let replayed: HashSet<String> = all[8..].iter().map(Received::id).collect();
    let expected: HashSet<String> = later_events.iter().map(|r| r.id()).collect();
    assert_eq!(replayed, expected);

    for (body, field) in [
        (json!({"since": "yesterday"}), "since"),
        (json!({}), "since"),
        (json!({"since": "2999-01-01T00:00:00Z"}), "since"),
    ] {
        app.post(&format!("/webhooks/{id}/replay"), &app.org.key, body).await.expect_error(
            400,
            "invalid_request",
            Some(field),
        );
    }
    app.post("/webhooks/wh_01j00000000000000000000000/replay", &app.org.key, json!({"since": since}))
        .await
        .expect_error(404, "not_found", None);
}

#[tokio::test]
async fn an_endpoint_registered_with_a_line_bound_key_gets_only_that_line_s_events() {
    let app = spawn_delivering_app("1s").await;
    let org = app.org.clone();
    let first = app.default_line().await;
    let second = app.sim_line(LineSpec { e164: "+12015550101", org: Some(&org), sim_args: &[], start: true }).await;
    let receiver = Receiver::start().await;
    let bound = app.create_key(&org, &["messaging_webhooks"], Some(&first.line_id)).await;

    let mine = app.post("/webhooks", &bound, json!({"url": receiver.url("/bound"), "events": ["*"]})).await.expect(201);
    assert_eq!(mine["line_id"], first.line_id.as_str());
    app.post("/webhooks", &bound, json!({"url": receiver.url("/x"), "events": ["*"], "line_id": second.line_id}))
        .await
        .expect_error(409, "line_mismatch", None);
    let everything = register(&app, &receiver.url("/all"), json!(["*"])).await;
    app.get(&format!("/webhooks/{}", id_of(&everything)), &bound).await.expect_error(404, "not_found", None);
    assert_eq!(app.get("/webhooks", &bound).await.expect(200)["data"].as_array().unwrap().len(), 1);
    assert_eq!(app.get("/webhooks", &app.org.key).await.expect(200)["data"].as_array().unwrap().len(), 2);

    send_and_settle(&app, json!({"to": FRIEND, "body": "one", "line_id": first.line_id})).await;
    send_and_settle(&app, json!({"to": FRIEND, "body": "two", "line_id": second.line_id})).await;
    let on_bound = receiver.received_on("/bound").await;
    assert_eq!(on_bound.len(), 4);
    assert!(on_bound.iter().all(|r| r.json()["data"]["message"]["line_id"] == first.line_id.as_str()));
    assert_eq!(receiver.received_on("/all").await.len(), 8);
}

/// `msgline serve` as its own process on `port`, with the test's settings.
async fn serve(db_url: &str, port: u16) -> Child {
    let env = [
        ("MSGLINE_ALLOW_PRIVATE_TARGETS", "true"),
        ("MSGLINE_WEBHOOK_RETRY_SCHEDULE", "1s,1s,1s,1s,1s,1s,1s,1s,1s,1s"),
    ];
    serve_process(db_url, port, &env).await
}

#[tokio::test]
async fn after_kill_9_with_deliveries_pending_every_event_is_delivered_at_least_once() {
    const MESSAGES: usize = 30;
    let db = TestDb::new().await;
    let url = db.url().to_string();
    let ProcessLine { key, port, sim: _sim, .. } = process_line(&url, "Crash").await;

    // The receiver fails the first 80 deliveries, so retries are pending when serve dies, and
    // answers the last 40 of those slowly, so some posts are in flight (claimed) when it dies.
    let receiver = Receiver::start().await;
    let mut script = vec![json!({"status": 500}); 40];
    script.extend(vec![json!({"status": 500, "delay_ms": 5000}); 40]);
    receiver.script(json!(script), json!({"status": 200})).await;
    let mut server = serve(&url, port).await;
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let api = format!("http://127.0.0.1:{port}/api/v1/messaging");
    let created: Value = client
        .post(format!("{api}/webhooks"))
        .bearer_auth(&key)
        .json(&json!({"url": receiver.url("/hook"), "events": ["*"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let secret = created["secret"].as_str().expect("registered").to_string();
    for i in 0..MESSAGES {
        let answer = client
            .post(format!("{api}/messages"))
            .bearer_auth(&key)
            .json(&json!({"to": format!("+1201555{:04}", 1000 + i), "body": format!("message {i}")}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 202);
    }
    receiver.wait_for(50, None).await;
    server.start_kill().unwrap();
    server.wait().await.unwrap();

    let reader = msgline::db::Db::connect(&url).await.unwrap();
    let count = |state: &'static str| {
        let reader = reader.clone();
        async move {
            let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM webhook_deliveries WHERE state = $1")
                .bind(state)
                .fetch_one(reader.writer())
                .await
                .unwrap();
            n
        }
    };
    assert!(count("pending").await > 0, "retries were pending when serve was killed");
    assert!(count("claimed").await > 0, "posts were in flight when serve was killed");

    let mut server = serve(&url, port).await;
    let events: Vec<String> = eventually(120, "every message to be delivered and every event sent", || async {
        let statuses: Vec<(String,)> =
            sqlx::query_as("SELECT status FROM messages").fetch_all(reader.writer()).await.unwrap();
        let delivered = statuses.len() == MESSAGES && statuses.iter().all(|(s,)| s == "delivered");
        let outstanding = msgline::db::webhook_deliveries::outstanding(&reader).await.unwrap();
        if !delivered || outstanding > 0 {
            return None;
        }
        let ids: Vec<(String,)> = sqlx::query_as("SELECT id FROM events").fetch_all(reader.writer()).await.unwrap();
        Some(ids.into_iter().map(|(id,)| id).collect())
    })
    .await;
    assert!(events.len() >= MESSAGES * 4, "{} events", events.len());
    let received = receiver.received().await;
    let delivered: HashSet<String> = received.iter().map(Received::id).collect();
    let missing: Vec<&String> = events.iter().filter(|id| !delivered.contains(*id)).collect();
    assert!(missing.is_empty(), "every event reached the receiver at least once; missing {missing:?}");
    let last = received.last().unwrap();
    assert!(receiver.verifies(last.index, &secret, false).await);
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    reader.close().await;
    drop(db);
}

#[tokio::test]
async fn a_poll_vote_is_delivered_with_the_poll_the_option_and_the_vote_message() {
    let app = spawn_delivering_app("1s").await;
    let line = app.default_line().await;
    let receiver = Receiver::start().await;
    register(&app, &receiver.url("/votes"), json!(["messaging.poll.voted"])).await;
    register(&app, &receiver.url("/inbound"), json!(["message.received"])).await;

    let poll = app
        .post("/polls", &app.org.key, json!({"to": FRIEND, "question": "Lunch?", "options": ["Pizza", "Tacos"]}))
        .await
        .expect(202);
    let poll_message = poll["message"]["id"].as_str().unwrap();
    app.wait_for_message(&app.org.key, poll_message, "delivered", |m| m["status"] == "delivered").await;
    line.control("/control/vote", json!({"from": FRIEND, "poll_message_id": poll_message, "option_index": 1})).await;

    let vote = receiver.wait_for(1, Some("/votes")).await[0].json();
    settled(&app).await;
    assert_eq!(vote["type"], "messaging.poll.voted");
    assert_eq!(vote["data"]["poll"]["id"], poll["poll"]["id"]);
    assert_eq!(vote["data"]["option"], "Tacos");
    assert_eq!(vote["data"]["option_index"], 1);
    assert_eq!(vote["data"]["message"]["kind"], "poll_vote");
    assert_eq!(vote["data"]["contact"]["phone"], FRIEND);
    // The vote is also an inbound message, so message.received subscribers hear of it too.
    let inbound = receiver.received_on("/inbound").await;
    assert_eq!(inbound.len(), 1);
    assert_eq!(inbound[0].json()["data"]["message"]["id"], vote["data"]["message"]["id"]);
    assert_eq!(receiver.received().await.len(), 2);
}

#[tokio::test]
async fn a_created_group_is_delivered_with_the_group_and_its_opening_message() {
    let app = spawn_delivering_app("1s").await;
    let _line = app.default_line().await;
    let receiver = Receiver::start().await;
    register(&app, &receiver.url("/groups"), json!(["messaging.group.created", "messaging.group.failed"])).await;

    let created = app
        .post(
            "/groups",
            &app.org.key,
            json!({"participants": [FRIEND, "+12015550124"], "body": "Hi all", "name": "Trip"}),
        )
        .await
        .expect(201);
    let event = receiver.wait_for(1, None).await[0].json();
    assert_eq!(event["type"], "messaging.group.created");
    assert_eq!(event["data"]["group"]["id"], created["group"]["id"]);
    assert_eq!(event["data"]["group"]["state"], "created");
    assert_eq!(event["data"]["message"]["id"], created["message"]["id"]);
    let message_id = created["message"]["id"].as_str().unwrap();
    app.wait_for_message(&app.org.key, message_id, "delivered", |m| m["status"] == "delivered").await;
    settled(&app).await;
    assert_eq!(receiver.received().await.len(), 1, "the opening message's own events were not subscribed to");
}

#[tokio::test]
async fn an_event_is_written_only_where_its_organisation_has_an_endpoint_and_queued_only_where_one_is_enabled() {
    // The database alone, with no worker that could fan the events out meanwhile.
    let test_db = TestDb::new().await;
    let db = msgline::db::Db::connect(test_db.url()).await.unwrap();
    db.migrate().await.unwrap();
    let org = |value: Value| value["org_id"].as_str().unwrap().to_string();
    let with = org(msgline::admin::create_org(&db, "With an endpoint").await.unwrap());
    let disabled = org(msgline::admin::create_org(&db, "With a disabled endpoint").await.unwrap());
    let without = org(msgline::admin::create_org(&db, "Without").await.unwrap());
    let events = msgline::domain::webhook::Subscriptions::parse(["*"]).unwrap();
    for org_id in [&with, &disabled] {
        let endpoint = msgline::db::webhooks::create(
            &db,
            msgline::db::webhooks::NewWebhook {
                org_id,
                line_id: None,
                url: "https://receiver.example/hooks",
                description: None,
                events: &events,
            },
        )
        .await
        .unwrap();
        if org_id == &disabled {
            let mut conn = db.writer().acquire().await.unwrap();
            msgline::db::webhooks::disable(&mut conn, &endpoint.id, "test", msgline::clock::now_ms()).await.unwrap();
        }
    }
    // The fan-out mark, or `None` when no event row was written.
    let pending = |org_id: String| {
        let db = db.clone();
        async move {
            let mut conn = db.writer().acquire().await.unwrap();
            let id = msgline::db::events::insert(&mut conn, &org_id, "messaging.test", None, json!({}).to_string())
                .await
                .unwrap()?;
            let row = sqlx::query("SELECT webhooks_pending FROM events WHERE id = $1")
                .bind(&id)
                .fetch_one(&mut *conn)
                .await
                .unwrap();
            Some(sqlx::Row::get::<i64, _>(&row, 0))
        }
    };
    assert_eq!(pending(with).await, Some(1));
    // A disabled endpoint may be replayed the events it missed: they are kept, not queued.
    assert_eq!(pending(disabled).await, Some(0));
    // With no endpoint there is nobody to send an event to, now or by a replay.
    assert_eq!(pending(without.clone()).await, None);
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM events WHERE org_id = $1")
        .bind(&without)
        .fetch_one(db.writer())
        .await
        .unwrap();
    assert_eq!(rows, 0);
}
