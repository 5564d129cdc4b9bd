//! Webhook delivery: Standard Webhooks signatures checked by an independent verifier, secret
//! rotation, retries, Retry-After, disabling, replay and kill -9 — against a real receiver
//! process on a loopback port.

use std::{collections::HashSet, time::Duration};

use serde_json::{Value, json};
use tokio::process::Child;

use crate::{
    helpers::{ProcessLine, TestDb, eventually, json_answer, process_line, serve_process, spawn_app_with},
    receiver::{Received, Receiver},
    webhooks::{id_of, register, send_and_settle, settled, spawn_delivering_app},
};

const FRIEND: &str = "+12015550123";
/// A secret that signed nothing here.
const WRONG_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

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
async fn two_failures_further_apart_than_the_retry_schedule_allows_do_not_disable_an_endpoint() {
    // One retry 300 ms after a failure: failures more than 600 ms apart are separate streaks.
    let app = spawn_app_with(|config| {
        config.allow_private_targets = true;
        config.webhook_retry_schedule = "300ms".into();
        config.webhook_disable_after = "3s".into();
    })
    .await;
    let _line = app.default_line().await;
    let receiver = Receiver::start().await;
    receiver.script(json!([]), json!({"status": 500})).await;
    let id = id_of(&register(&app, &receiver.url("/hook"), json!(["messaging.message.queued"])).await);
    for round in 0..2 {
        app.post("/messages", &app.org.key, json!({"to": FRIEND, "body": format!("x{round}")})).await.expect(202);
        receiver.wait_for(2 * (round + 1), Some("/hook")).await;
        settled(&app).await;
        // A quiet time longer than the disable window, with nothing to deliver.
        tokio::time::sleep(Duration::from_millis(3500)).await;
    }
    let webhook = app.get(&format!("/webhooks/{id}"), &app.org.key).await.expect(200);
    assert_eq!(webhook["enabled"], true, "failures 3.5 s apart are not 3 s of continuous failure: {webhook}");
    assert_eq!(receiver.received().await.len(), 4, "each event was tried twice");
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

/// `msgline serve` as its own process on `port`, with the test's settings. The first retry waits
/// 10 s, so that deliveries that failed are still waiting when the test kills the server, however
/// slowly the machine got there; later retries come a second apart.
async fn serve(db_url: &str, port: u16) -> Child {
    let env = [
        ("MSGLINE_ALLOW_PRIVATE_TARGETS", "true"),
        ("MSGLINE_WEBHOOK_RETRY_SCHEDULE", "10s,1s,1s,1s,1s,1s,1s,1s,1s,1s"),
    ];
    serve_process(db_url, port, &env).await
}

/// An app whose endpoint (subscribed to `messaging.message.queued`) answers every post after
/// `delay_ms`, and that has just accepted `messages` sends at once: (app, its line, receiver,
/// endpoint id).
async fn sends_to_a_slow_receiver(
    delay_ms: u64,
    messages: usize,
) -> (crate::helpers::TestApp, crate::simline::SimLine, Receiver, String) {
    let app = spawn_app_with(|config| {
        config.allow_private_targets = true;
        config.rate_limit_per_minute = 10_000;
        config.send_rate_limit_per_minute = 10_000;
    })
    .await;
    let line = app.default_line().await;
    let receiver = Receiver::start().await;
    receiver.script(json!([]), json!({"status": 200, "delay_ms": delay_ms})).await;
    let id = id_of(&register(&app, &receiver.url("/hook"), json!(["messaging.message.queued"])).await);
    let sends = (0..messages).map(|i| {
        let to = format!("+1201555{:04}", 1000 + i);
        app.post("/messages", &app.org.key, json!({"to": to, "body": format!("message {i}")}))
    });
    for answer in futures_util::future::join_all(sends).await {
        answer.expect(202);
    }
    (app, line, receiver, id)
}

#[tokio::test]
async fn a_slow_receiver_gets_at_most_128_posts_at_once_and_every_event_once() {
    const MESSAGES: usize = 200;
    // Every answer takes a second, and the sends go at once: more events are due than may be
    // posted together, and they queue behind the posts in flight.
    let (app, _line, receiver, id) = sends_to_a_slow_receiver(1000, MESSAGES).await;
    let received = receiver.wait_for(MESSAGES, None).await;
    let ids: HashSet<String> = received.iter().map(Received::id).collect();
    if ids.len() != MESSAGES {
        // What msgline recorded of the events that arrived more than once.
        let mut twice = Vec::new();
        for event in received.iter().map(Received::id).filter(|e| received.iter().filter(|r| &r.id() == e).count() > 1)
        {
            twice.push(app.get(&format!("/webhooks/{id}/deliveries?event_id={event}"), &app.org.key).await.expect(200));
        }
        panic!("{} events for {MESSAGES} messages; attempts of those that came twice: {twice:#?}", ids.len());
    }
    // Nothing is still coming: the receiver got each event once, not once more after its answer.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(receiver.received().await.len(), MESSAGES);
    let most = receiver.most_at_once().await;
    assert!(most <= 128, "{most} posts at once; the documented bound is 128 per instance");
    assert!(most >= 64, "posts run side by side, half the bound at least (at most {most} at once)");
}

#[tokio::test]
async fn a_new_event_is_not_held_back_behind_a_replay() {
    const MESSAGES: usize = 600;
    let since = msgline::clock::rfc3339(msgline::clock::now_ms());
    // Each answer takes a fifth of a second: a replay of 600 events is several rounds of posts
    // (up to 128 at once).
    let (app, _line, receiver, id) = sends_to_a_slow_receiver(200, MESSAGES).await;
    receiver.wait_for(MESSAGES, None).await;
    settled(&app).await;
    // Every event again, due at once; then a new message's event.
    let replay = app.post(&format!("/webhooks/{id}/replay"), &app.org.key, json!({"since": since})).await.expect(202);
    assert_eq!(replay["queued"], MESSAGES);
    let new = app.post("/messages", &app.org.key, json!({"to": FRIEND, "body": "new"})).await.expect(202);
    let received = receiver.wait_for(2 * MESSAGES + 1, None).await;
    let after_replay = &received[MESSAGES..];
    let position = after_replay
        .iter()
        .position(|r| r.json()["data"]["message"]["id"] == new["message"]["id"])
        .expect("the new event is delivered");
    // New events and deliveries due again share the free posts: the new event goes out with the
    // first rounds of the replay, not after all of it.
    assert!(position < MESSAGES / 2, "the new event came {position}th of {} after the replay", after_replay.len());
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
    let created: Value = json_answer(
        client
            .post(format!("{api}/webhooks"))
            .bearer_auth(&key)
            .json(&json!({"url": receiver.url("/hook"), "events": ["*"]})),
    )
    .await;
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

    let reader = msgline::Db::connect(&url).await.unwrap();
    let count = |state: &'static str| {
        let reader = reader.clone();
        async move {
            let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM webhook_deliveries WHERE state = $1")
                .bind(state)
                .fetch_one(reader.writer_for_tests())
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
            sqlx::query_as("SELECT status FROM messages").fetch_all(reader.writer_for_tests()).await.unwrap();
        let delivered = statuses.len() == MESSAGES && statuses.iter().all(|(s,)| s == "delivered");
        let outstanding = msgline::testing::db::webhook_deliveries::outstanding(&reader).await.unwrap();
        if !delivered || outstanding > 0 {
            return None;
        }
        let ids: Vec<(String,)> =
            sqlx::query_as("SELECT id FROM events").fetch_all(reader.writer_for_tests()).await.unwrap();
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
