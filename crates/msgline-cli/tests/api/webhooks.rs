//! Webhooks: registration, scopes, endpoints of line-bound keys and which events reach which
//! endpoint — against a real receiver process on a loopback port. How deliveries are signed,
//! retried, disabled and replayed is in `webhook_delivery`.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::{
    helpers::{TestApp, TestDb, eventually, spawn_app, spawn_app_with},
    receiver::{Received, Receiver},
    simline::LineSpec,
};

const FRIEND: &str = "+12015550123";

/// The app as a delivery test needs it: receivers on loopback allowed, the given retry schedule.
pub(crate) async fn spawn_delivering_app(schedule: &str) -> TestApp {
    let schedule = schedule.to_string();
    spawn_app_with(move |config| {
        config.allow_private_targets = true;
        config.webhook_retry_schedule = schedule;
    })
    .await
}

pub(crate) async fn register(app: &TestApp, url: &str, events: Value) -> Value {
    app.post("/webhooks", &app.org.key, json!({"url": url, "events": events})).await.expect(201)
}

pub(crate) fn id_of(value: &Value) -> String {
    value["id"].as_str().expect("id").to_string()
}

/// Waits until every event is fanned out and every delivery settled.
pub(crate) async fn settled(app: &TestApp) {
    eventually(30, "webhook deliveries to settle", || async {
        let outstanding = msgline::testing::db::webhook_deliveries::outstanding(app.db()).await.expect("count");
        (outstanding == 0).then_some(())
    })
    .await;
}

/// Sends a message and waits until it is delivered and its events have gone out.
pub(crate) async fn send_and_settle(app: &TestApp, body: Value) -> String {
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
        // A trailing dot names the same host (a fully qualified name); case does not matter.
        ("https://localhost./", "private"),
        ("https://LOCALHOST./x", "private"),
        ("https://hooks.localhost./x", "private"),
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
    let db = msgline::Db::connect(test_db.url()).await.unwrap();
    db.migrate().await.unwrap();
    let org = |value: Value| value["org_id"].as_str().unwrap().to_string();
    let with = org(msgline::admin::create_org(&db, "With an endpoint").await.unwrap());
    let disabled = org(msgline::admin::create_org(&db, "With a disabled endpoint").await.unwrap());
    let without = org(msgline::admin::create_org(&db, "Without").await.unwrap());
    let events = msgline::testing::domain::webhook::Subscriptions::parse(["*"]).unwrap();
    for org_id in [&with, &disabled] {
        let endpoint = msgline::testing::db::webhooks::create(
            &db,
            msgline::testing::db::webhooks::NewWebhook {
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
            let mut conn = db.writer_for_tests().acquire().await.unwrap();
            msgline::testing::db::webhooks::disable(&mut conn, &endpoint.id, "test", msgline::clock::now_ms())
                .await
                .unwrap();
        }
    }
    // The fan-out mark, or `None` when no event row was written.
    let pending = |org_id: String| {
        let db = db.clone();
        async move {
            let mut conn = db.writer_for_tests().acquire().await.unwrap();
            let id =
                msgline::testing::db::events::insert(&mut conn, &org_id, "messaging.test", None, json!({}).to_string())
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
        .fetch_one(db.writer_for_tests())
        .await
        .unwrap();
    assert_eq!(rows, 0);
}

#[tokio::test]
async fn an_endpoint_disabled_through_the_api_gets_nothing_until_it_is_enabled_again() {
    let app = spawn_delivering_app("1s").await;
    let _line = app.default_line().await;
    let receiver = Receiver::start().await;
    let hook = register(&app, &receiver.url("/paused"), json!(["messaging.message.delivered"])).await;
    let id = id_of(&hook);
    let path = format!("/webhooks/{id}");

    let disabled =
        app.request(reqwest::Method::PATCH, &path, Some(&app.org.key), Some(json!({"enabled": false}))).await;
    let disabled = disabled.expect(200);
    assert_eq!(disabled["enabled"], false);
    assert_eq!(disabled["disabled_reason"], "manual");
    assert!(disabled["disabled_at"].is_string() && disabled.get("secret").is_none());
    send_and_settle(&app, json!({"to": FRIEND, "body": "while paused"})).await;
    assert!(receiver.received_on("/paused").await.is_empty());

    let enabled = app.request(reqwest::Method::PATCH, &path, Some(&app.org.key), Some(json!({"enabled": true}))).await;
    let enabled = enabled.expect(200);
    assert_eq!(enabled["enabled"], true);
    assert!(enabled["disabled_reason"].is_null());
    send_and_settle(&app, json!({"to": FRIEND, "body": "after"})).await;
    receiver.wait_for(1, Some("/paused")).await;
    let got = receiver.received_on("/paused").await;
    assert_eq!(got.len(), 1, "only the event after enabling");
    assert_eq!(got[0].json()["data"]["message"]["body"], "after");

    // Bad input changes nothing; another organisation's endpoint and a key without the scope
    // are refused.
    let patch = |key: String, body: Value| {
        let path = path.clone();
        let app = &app;
        async move { app.request(reqwest::Method::PATCH, &path, Some(&key), Some(body)).await }
    };
    patch(app.org.key.clone(), json!({"enabled": "no"})).await.expect_error(400, "invalid_request", Some("enabled"));
    patch(app.org.key.clone(), json!({"enabled": false, "url": "https://x.example"})).await.expect(400);
    patch(app.org.key.clone(), json!({})).await.expect(400);
    let other = app.create_org("Other hooks").await;
    patch(other.key.clone(), json!({"enabled": false})).await.expect_error(404, "not_found", None);
    let sender = app.create_key(&app.org, &["messaging_send"], None).await;
    patch(sender, json!({"enabled": false})).await.expect(403);
    let unchanged = app.get(&path, &app.org.key).await.expect(200);
    assert_eq!(unchanged["enabled"], true);
}
