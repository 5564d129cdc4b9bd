//! Scheduled sends: `send_at` on the three send routes, checked; a message waits `scheduled`
//! and goes out at its time, not before; cancel before and after hand-over, and a cancel racing
//! the dispatcher with one winner; a `kill -9` while messages come due, three instances on
//! PostgreSQL, and a server that was down past the time a message may still go out.

use std::{collections::HashSet, time::Duration};

use serde_json::{Value, json};

use crate::helpers::{
    ProcessLine, TestApp, TestDb, eventually, json_answer, process_line, serve_process, spawn_app_with, use_postgres,
};

/// An app whose schedules may be a second ahead.
async fn app() -> TestApp {
    spawn_app_with(|c| {
        c.schedule_min_seconds = 1;
        c.rate_limit_per_minute = 100_000;
        c.send_rate_limit_per_minute = 100_000;
    })
    .await
}

fn at(ms_ahead: i64) -> String {
    msgline::clock::rfc3339(msgline::clock::now_ms() + ms_ahead)
}

fn id(answer: &Value) -> String {
    answer["message"]["id"].as_str().expect("message id").to_string()
}

#[tokio::test]
async fn a_scheduled_send_waits_scheduled_and_goes_out_at_its_time_not_before() {
    let app = app().await;
    app.keep_events().await;
    let line = app.default_line().await;
    let send_at = msgline::clock::now_ms() + 2_500;
    let answer = app
        .post(
            "/messages",
            &app.org.key,
            json!({"to": "+12015550130", "body": "at its time", "send_at": msgline::clock::rfc3339(send_at)}),
        )
        .await
        .expect(202);
    let message = &answer["message"];
    assert_eq!(message["status"], "scheduled");
    assert_eq!(message["send_at"], msgline::clock::rfc3339(send_at));
    let id = id(&answer);
    let waiting = app.get("/messages?status=scheduled", &app.org.key).await.expect(200);
    assert_eq!(waiting["data"].as_array().unwrap().len(), 1);
    assert_eq!(waiting["data"][0]["id"], id.as_str());

    // Not before its time.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(line.sent_with_id(&id).await.is_empty(), "sent before its time");
    let still = app.get(&format!("/messages/{id}"), &app.org.key).await.expect(200);
    assert_eq!(still["status"], "scheduled");

    let done = app.wait_for_message(&app.org.key, &id, "delivered", |m| m["status"] == "delivered").await;
    let submitted = msgline::clock::parse_rfc3339(done["submitted_at"].as_str().unwrap()).unwrap();
    assert!(submitted >= send_at, "handed over at {submitted}, before its time {send_at}");
    assert_eq!(line.sent_with_id(&id).await.len(), 1);
    assert_eq!(
        app.event_types(&id).await,
        [
            "messaging.message.scheduled",
            "messaging.message.queued",
            "messaging.message.submitted",
            "messaging.message.sent",
            "messaging.message.delivered"
        ]
    );
    let waiting = app.get("/messages?status=scheduled", &app.org.key).await.expect(200);
    assert_eq!(waiting["data"], json!([]));
}

#[tokio::test]
async fn send_at_must_be_a_time_from_the_minimum_to_90_days_ahead_on_every_send_route() {
    let app = spawn_app_with(|c| c.schedule_min_seconds = 60).await;
    let _line = app.default_line().await;
    let day = 86_400_000;
    for send_at in [json!("tomorrow"), json!(12), json!(at(10_000)), json!(at(-60_000)), json!(at(91 * day))] {
        let body = json!({"to": "+12015550131", "body": "x", "send_at": send_at});
        app.post("/messages", &app.org.key, body).await.expect_error(400, "invalid_request", Some("send_at"));
    }
    let card = json!({"to": "+12015550131", "name": "Desk", "phone": "+12015550100", "send_at": at(5_000)});
    app.post("/contact-cards", &app.org.key, card).await.expect_error(400, "invalid_request", Some("send_at"));
    let poll = json!({"to": "+12015550131", "question": "Q?", "options": ["a", "b"], "send_at": at(5_000)});
    app.post("/polls", &app.org.key, poll).await.expect_error(400, "invalid_request", Some("send_at"));
    let listed = app.get("/messages", &app.org.key).await.expect(200);
    assert_eq!(listed["data"], json!([]), "a refused schedule writes nothing");

    // At the edges: a minute and 90 days ahead are taken, on each route.
    let soon = json!({"to": "+12015550131", "body": "x", "send_at": at(61_000)});
    assert_eq!(app.post("/messages", &app.org.key, soon).await.expect(202)["message"]["status"], "scheduled");
    let late = json!({"to": "+12015550131", "body": "x", "send_at": at(90 * day - 60_000)});
    assert_eq!(app.post("/messages", &app.org.key, late).await.expect(202)["message"]["status"], "scheduled");
    let card = json!({"to": "+12015550131", "name": "Desk", "phone": "+12015550100", "send_at": at(120_000)});
    let card = app.post("/contact-cards", &app.org.key, card).await.expect(202);
    assert_eq!(card["message"]["status"], "scheduled");
    assert_eq!(card["message"]["kind"], "contact_card");
    let poll = json!({"to": "+12015550131", "question": "Q?", "options": ["a", "b"], "send_at": at(120_000)});
    let poll = app.post("/polls", &app.org.key, poll).await.expect(202);
    assert_eq!(poll["message"]["status"], "scheduled");
}

#[tokio::test]
async fn a_scheduled_message_is_canceled_before_its_time_and_not_after_hand_over() {
    let app = app().await;
    app.keep_events().await;
    let line = app.default_line().await;
    let later = app
        .post("/messages", &app.org.key, json!({"to": "+12015550132", "body": "never", "send_at": at(2_000)}))
        .await
        .expect(202);
    let later_id = id(&later);
    let cancel = format!("/messages/{later_id}/cancel");
    let canceled = app.post(&cancel, &app.org.key, json!({})).await.expect(200);
    assert_eq!(canceled["status"], "canceled");
    // Again: the same answer; the message stays canceled.
    assert_eq!(app.post(&cancel, &app.org.key, json!({})).await.expect(200)["status"], "canceled");

    // Another organisation's key, and a key bound to another line, do not find it.
    let other = app.create_org("Other schedules").await;
    app.post(&cancel, &other.key, json!({})).await.expect_error(404, "not_found", None);

    // A message sent at once cannot be canceled; neither can one whose time came.
    let now = app.post("/messages", &app.org.key, json!({"to": "+12015550132", "body": "now"})).await.expect(202);
    let refused = app.post(&format!("/messages/{}/cancel", id(&now)), &app.org.key, json!({})).await;
    let refused = refused.expect_error(409, "message_not_cancelable", None);
    assert!(refused["status"].is_string(), "{refused}");
    let due = app
        .post("/messages", &app.org.key, json!({"to": "+12015550132", "body": "due", "send_at": at(1_300)}))
        .await
        .expect(202);
    let due_id = id(&due);
    app.wait_for_message(&app.org.key, &due_id, "delivered", |m| m["status"] == "delivered").await;
    let refused = app.post(&format!("/messages/{due_id}/cancel"), &app.org.key, json!({})).await;
    assert_eq!(refused.expect_error(409, "message_not_cancelable", None)["status"], "delivered");

    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(line.sent_with_id(&later_id).await.is_empty(), "a canceled message never reaches the line");
    let stored = app.get(&format!("/messages/{later_id}"), &app.org.key).await.expect(200);
    assert_eq!(stored["status"], "canceled");
    assert_eq!(app.event_types(&later_id).await, ["messaging.message.scheduled", "messaging.message.canceled"]);

    // A key bound to another line does not find it either.
    let other_line = app.create_line_id("+12015550119", Some(&app.org)).await;
    let bound = app.create_key(&app.org, &["messaging_send", "messaging_read"], Some(&other_line)).await;
    app.post(&cancel, &bound, json!({})).await.expect_error(404, "not_found", None);
}

#[tokio::test]
async fn cancels_racing_the_dispatcher_each_have_one_winner() {
    let app = app().await;
    let line = app.default_line().await;
    let due = msgline::clock::now_ms() + 4_000;
    let mut ids = Vec::new();
    for i in 0..40 {
        let body = json!({"to": format!("+120155502{i:02}"), "body": format!("race {i}"), "send_at": msgline::clock::rfc3339(due)});
        ids.push(id(&app.post("/messages", &app.org.key, body).await.expect(202)));
    }
    // Cancel every one of them right as they come due.
    let wait = (due - msgline::clock::now_ms()).max(0) as u64;
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let paths: Vec<String> = ids.iter().map(|id| format!("/messages/{id}/cancel")).collect();
    let answers =
        futures_util::future::join_all(paths.iter().map(|path| app.post(path, &app.org.key, json!({})))).await;
    let mut canceled = HashSet::new();
    let mut too_late = HashSet::new();
    for (id, answer) in ids.iter().zip(answers) {
        match answer.status.as_u16() {
            200 => assert!(canceled.insert(id.clone())),
            409 => assert!(too_late.insert(id.clone())),
            other => panic!("cancel answered {other}: {}", answer.body),
        }
    }
    for id in &too_late {
        app.wait_for_message(&app.org.key, id, "delivered", |m| m["status"] == "delivered").await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    for id in &ids {
        let sent = line.sent_with_id(id).await.len();
        let stored = app.get(&format!("/messages/{id}"), &app.org.key).await.expect(200);
        if canceled.contains(id) {
            assert_eq!((sent, stored["status"].as_str()), (0, Some("canceled")), "{id}: canceled, so never sent");
        } else {
            assert_eq!((sent, stored["status"].as_str()), (1, Some("delivered")), "{id}: not canceled, so sent once");
        }
    }
}

/// Schedules `count` messages at `send_at` through the API at `api`; their ids.
async fn schedule(client: &reqwest::Client, api: &str, key: &str, count: usize, send_at: i64) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..count {
        let answer = json_answer(client.post(format!("{api}/messages")).bearer_auth(key).json(&json!({
            "to": format!("+1201555{:04}", 3000 + i),
            "body": format!("scheduled {i}"),
            "send_at": msgline::clock::rfc3339(send_at),
        })))
        .await;
        ids.push(answer["message"]["id"].as_str().expect("id").to_string());
    }
    ids
}

/// Waits until every message is in one of `statuses`; their statuses by id.
async fn settled(url: &str, ids: &[String], statuses: &[&str]) -> Vec<(String, String)> {
    let reader = msgline::Db::connect(url).await.unwrap();
    let rows = eventually(60, "the scheduled messages to settle", || async {
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT id, status FROM messages").fetch_all(reader.writer_for_tests()).await.unwrap();
        let mine: Vec<(String, String)> = rows.into_iter().filter(|(id, _)| ids.contains(id)).collect();
        (mine.len() == ids.len() && mine.iter().all(|(_, s)| statuses.contains(&s.as_str()))).then_some(mine)
    })
    .await;
    reader.close().await;
    rows
}

async fn sent_ids(client: &reqwest::Client, sim_port: u16) -> Vec<String> {
    let sent: Vec<Value> =
        client.get(format!("http://127.0.0.1:{sim_port}/control/sent")).send().await.unwrap().json().await.unwrap();
    sent.iter().map(|s| s["id"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn kill_9_while_scheduled_messages_come_due_loses_none_and_sends_none_twice() {
    let db = TestDb::new().await;
    let url = db.url().to_string();
    let ProcessLine { key, port, sim_port, sim: _sim, .. } = process_line(&url, "Scheduled crash").await;
    let env = [("MSGLINE_SCHEDULE_MIN_SECONDS", "1"), ("MSGLINE_BRIDGE_TIMEOUT_MS", "1000")];
    let mut server = serve_process(&url, port, &env).await;
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let api = format!("http://127.0.0.1:{port}/api/v1/messaging");
    let due = msgline::clock::now_ms() + 6_000;
    let ids = schedule(&client, &api, &key, 120, due).await;
    // Killed just after they come due, while the dispatcher is handing them over.
    let wait = (due - msgline::clock::now_ms() + 60).max(0) as u64;
    tokio::time::sleep(Duration::from_millis(wait)).await;
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    let _server = serve_process(&url, port, &env).await;

    let statuses = settled(&url, &ids, &["delivered", "failed", "unknown"]).await;
    assert!(statuses.iter().all(|(_, s)| s == "delivered"), "{statuses:?}");
    let sent = sent_ids(&client, sim_port).await;
    let unique: HashSet<&String> = sent.iter().collect();
    assert_eq!(unique.len(), sent.len(), "the line sent no message twice");
    assert_eq!(unique.len(), ids.len(), "every scheduled message was sent");
}

#[tokio::test]
async fn a_message_due_while_the_server_was_down_goes_out_when_it_is_back_unless_it_is_too_late() {
    let db = TestDb::new().await;
    let url = db.url().to_string();
    let ProcessLine { key, port, sim_port, sim: _sim, .. } = process_line(&url, "Scheduled late").await;
    let client = reqwest::Client::new();
    let api = format!("http://127.0.0.1:{port}/api/v1/messaging");
    let env = [("MSGLINE_SCHEDULE_MIN_SECONDS", "1"), ("MSGLINE_SCHEDULE_LATE_SECONDS", "3")];
    let mut server = serve_process(&url, port, &env).await;
    let now = msgline::clock::now_ms();
    let soon = schedule(&client, &api, &key, 1, now + 1_600).await;
    let sooner = schedule(&client, &api, &key, 1, now + 1_500).await;
    server.start_kill().unwrap();
    server.wait().await.unwrap();

    // Back about 2 s after their time: still within 3 s, so they go out.
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    let server = serve_process(&url, port, &env).await;
    let statuses = settled(&url, &[soon[0].clone(), sooner[0].clone()], &["delivered"]).await;
    assert_eq!(statuses.len(), 2);
    drop(server);

    // Back 5 s after its time: too late, it fails and nothing is sent.
    let mut server = serve_process(&url, port, &env).await;
    let missed = schedule(&client, &api, &key, 1, msgline::clock::now_ms() + 1_300).await;
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    tokio::time::sleep(Duration::from_millis(6_000)).await;
    let _server = serve_process(&url, port, &env).await;
    settled(&url, &missed, &["failed"]).await;
    let message: Value = json_answer(client.get(format!("{api}/messages/{}", missed[0])).bearer_auth(&key)).await;
    assert_eq!(message["error"], "schedule_missed", "{message}");
    assert!(!sent_ids(&client, sim_port).await.contains(&missed[0]), "a missed message is not sent late");
}

#[tokio::test]
async fn three_instances_send_each_scheduled_message_once() {
    if !use_postgres() {
        return; // several instances need a shared server database: the PostgreSQL pass runs this
    }
    let db = TestDb::new_postgres().await;
    let url = db.url().to_string();
    let ProcessLine { key, port, sim_port, sim: _sim, .. } = process_line(&url, "Scheduled three").await;
    let env = [("MSGLINE_SCHEDULE_MIN_SECONDS", "1")];
    let ports = [port, crate::simline::free_port(), crate::simline::free_port()];
    let mut servers = Vec::new();
    for port in ports {
        servers.push(serve_process(&url, port, &env).await);
    }
    let client = reqwest::Client::new();
    let due = msgline::clock::now_ms() + 8_000;
    let mut ids = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let api = format!("http://127.0.0.1:{port}/api/v1/messaging");
        let batch = schedule(&client, &api, &key, 40, due).await;
        assert_eq!(batch.len(), 40, "instance {i} scheduled its share");
        ids.extend(batch);
    }
    let ids: Vec<String> = ids.into_iter().collect::<HashSet<_>>().into_iter().collect();
    let statuses = settled(&url, &ids, &["delivered", "failed", "unknown"]).await;
    assert!(statuses.iter().all(|(_, s)| s == "delivered"), "{statuses:?}");
    let sent = sent_ids(&client, sim_port).await;
    let unique: HashSet<&String> = sent.iter().collect();
    assert_eq!(unique.len(), sent.len(), "no scheduled message was sent twice");
    assert_eq!(unique.len(), ids.len(), "every scheduled message was sent");
}

#[tokio::test]
async fn a_replayed_scheduled_send_answers_with_its_first_id_once_send_at_is_too_near_to_accept_anew() {
    // Round 4 red team: send_at was checked before the key was looked up, so a client whose
    // first answer was lost could never learn the id of a message that will go out.
    let app = spawn_app_with(|c| {
        c.schedule_min_seconds = 2;
        c.rate_limit_per_minute = 100_000;
        c.send_rate_limit_per_minute = 100_000;
    })
    .await;
    let _line = app.default_line().await;
    let send_at = at(3_000);
    let routes = [
        ("/messages", "sched-message", json!({"to": "+12015550137", "body": "later", "send_at": send_at})),
        (
            "/polls",
            "sched-poll",
            json!({"to": "+12015550137", "question": "Q?", "options": ["a", "b"], "send_at": send_at}),
        ),
        (
            "/contact-cards",
            "sched-card",
            json!({"to": "+12015550137", "name": "Desk", "phone": "+12015550100", "send_at": send_at}),
        ),
    ];
    let post = |path: &'static str, key: &'static str, body: Value| {
        app.client.post(app.url(path)).bearer_auth(&app.org.key).header("Idempotency-Key", key).json(&body).send()
    };
    let mut first = Vec::new();
    for (path, key, body) in &routes {
        let answer = post(path, key, body.clone()).await.unwrap();
        assert_eq!(answer.status(), 202, "{path}");
        let answer: Value = answer.json().await.unwrap();
        assert_eq!(answer["message"]["status"], "scheduled", "{path}");
        first.push(id(&answer));
    }
    // send_at is now nearer than the minimum: a new request would be refused...
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let fresh = json!({"to": "+12015550137", "body": "later", "send_at": send_at});
    app.post("/messages", &app.org.key, fresh).await.expect_error(400, "invalid_request", Some("send_at"));
    // ...but a replay of an accepted one answers from its key, with its first id.
    for ((path, key, body), first) in routes.iter().zip(&first) {
        let again = post(path, key, body.clone()).await.unwrap();
        assert_eq!(again.status(), 200, "{path}: a replay is answered from its key");
        let again: Value = again.json().await.unwrap();
        assert_eq!(again["duplicate"], true, "{path}");
        assert_eq!(&id(&again), first, "{path}");
    }
    // A different request under an accepted key is still a conflict, not a send_at error.
    let other = json!({"to": "+12015550137", "body": "something else", "send_at": send_at});
    let reused = post("/messages", "sched-message", other).await.unwrap();
    assert_eq!(reused.status(), 409);
    // Every one still goes out once, at its time.
    for first in &first {
        app.wait_for_message(&app.org.key, first, "sent", |m| m["status"] != "scheduled").await;
    }
}
