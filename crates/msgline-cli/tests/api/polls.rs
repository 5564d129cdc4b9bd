//! `POST /polls`, `GET /polls/{id}` and votes by tap, by text and by number.

use serde_json::{Value, json};

use crate::{
    helpers::{TestApp, spawn_app, spawn_app_with},
    simline::{LineSpec, SimLine},
};

const FRIEND: &str = "+12015550123";
const SMS_ONLY: &str = "+12015550124";

fn lunch() -> Value {
    json!({"to": FRIEND, "question": "Lunch?", "options": ["Pizza", "Tacos", "Sushi"]})
}

async fn send_poll(app: &TestApp, body: Value) -> (String, String) {
    let envelope = app.post("/polls", &app.org.key, body).await.expect(202);
    (envelope["poll"]["id"].as_str().unwrap().to_string(), envelope["message"]["id"].as_str().unwrap().to_string())
}

async fn tally(app: &TestApp, poll_id: &str) -> Vec<i64> {
    let poll = app.get(&format!("/polls/{poll_id}"), &app.org.key).await.expect(200);
    poll["tally"].as_array().unwrap().iter().map(|t| t["votes"].as_i64().unwrap()).collect()
}

async fn line_with_sms_only(app: &TestApp) -> SimLine {
    let org = app.org.clone();
    app.sim_line(LineSpec { e164: "+12015550100", org: Some(&org), sim_args: &["--sms-only", SMS_ONLY], start: true })
        .await
}

#[tokio::test]
async fn a_poll_is_sent_natively_over_imessage_and_read_back_with_its_tally() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let envelope = app.post("/polls", &app.org.key, lunch()).await.expect(202);
    assert_eq!(envelope["poll"]["question"], "Lunch?");
    assert_eq!(envelope["poll"]["options"], json!(["Pizza", "Tacos", "Sushi"]));
    assert!(envelope["poll"]["id"].as_str().unwrap().starts_with("poll_"));
    assert_eq!(envelope["message"]["kind"], "poll");
    assert_eq!(envelope["message"]["channel"], "imessage");
    let id = envelope["message"]["id"].as_str().unwrap();
    app.wait_for_message(&app.org.key, id, "delivered", |m| m["status"] == "delivered").await;
    let sent = line.sent_with_id(id).await;
    assert_eq!(sent[0]["kind"], "poll");
    assert_eq!(sent[0]["poll"]["options"], json!(["Pizza", "Tacos", "Sushi"]));
    let poll_id = envelope["poll"]["id"].as_str().unwrap();
    let poll = app.get(&format!("/polls/{poll_id}"), &app.org.key).await.expect(200);
    assert_eq!(poll["message_id"], id);
    assert_eq!(poll["total_votes"], 0);
    assert_eq!(tally(&app, poll_id).await, [0, 0, 0]);
}

#[tokio::test]
async fn poll_limits_hold_at_their_boundaries() {
    let app = spawn_app().await;
    let _line = app.default_line().await;
    let key = &app.org.key;
    let with = |question: String, options: Vec<String>| json!({"to": FRIEND, "question": question, "options": options});
    let opts = |n: usize| (1..=n).map(|i| format!("option {i}")).collect::<Vec<_>>();
    app.post("/polls", key, with("q".repeat(200), opts(2))).await.expect(202);
    app.post("/polls", key, with("q".repeat(201), opts(2))).await.expect_error(
        400,
        "invalid_request",
        Some("question"),
    );
    app.post("/polls", key, with("q".into(), opts(1))).await.expect_error(400, "invalid_request", Some("options"));
    app.post("/polls", key, with("q".into(), opts(12))).await.expect(202);
    app.post("/polls", key, with("q".into(), opts(13))).await.expect_error(400, "invalid_request", Some("options"));
    app.post("/polls", key, with("q".into(), vec!["x".repeat(80), "y".into()])).await.expect(202);
    app.post("/polls", key, with("q".into(), vec!["x".repeat(81), "y".into()])).await.expect_error(
        400,
        "invalid_request",
        Some("options"),
    );
    app.post("/polls", key, with("q".into(), vec!["Pizza".into(), " pIZZA ".into()])).await.expect_error(
        400,
        "invalid_request",
        Some("options"),
    );
    app.post("/polls", key, json!({"to": FRIEND, "options": ["a", "b"]})).await.expect_error(
        400,
        "invalid_request",
        Some("question"),
    );
    app.post("/polls", key, json!({"to": "(201) 555-0123", "question": "q", "options": ["a", "b"]}))
        .await
        .expect_error(400, "invalid_request", Some("to"));
    app.post(
        "/polls",
        key,
        json!({"to": "(201) 555-0123", "default_country": "US", "question": "q", "options": ["a", "b"]}),
    )
    .await
    .expect(202);
}

#[tokio::test]
async fn sms_is_refused_in_its_three_forms_before_anything_is_written() {
    let app = spawn_app().await;
    let _line = line_with_sms_only(&app).await;
    let key = &app.org.key;
    let mut explicit = lunch();
    explicit["channel"] = json!("sms");
    app.post("/polls", key, explicit).await.expect_error(400, "poll_requires_imessage", None);
    app.post("/polls", key, json!({"to": SMS_ONLY, "question": "q", "options": ["a", "b"]})).await.expect_error(
        400,
        "poll_requires_imessage",
        None,
    );
    let org = app.org.clone();
    let sms_line = app.create_line("+12015550101", Some(&org), "http://127.0.0.1:1").await;
    msgline::testing::db::lines::record_check(
        app.db(),
        sms_line["line_id"].as_str().unwrap(),
        Some(msgline::testing::db::lines::Capabilities { imessage: false, sms: true, ..Default::default() }),
    )
    .await
    .unwrap();
    let mut on_sms_line = lunch();
    on_sms_line["from"] = json!("+12015550101");
    app.post("/polls", key, on_sms_line).await.expect_error(400, "poll_requires_imessage", None);
    let messages = app.get("/messages", key).await.expect(200);
    assert!(messages["data"].as_array().unwrap().is_empty(), "nothing was written");
}

#[tokio::test]
async fn votes_by_tap_by_text_and_by_number_are_recorded_and_a_revote_replaces_the_earlier() {
    let app = spawn_app().await;
    app.keep_events().await;
    let line = app.default_line().await;
    let (poll_id, poll_message) = send_poll(&app, lunch()).await;
    app.wait_for_message(&app.org.key, &poll_message, "delivered", |m| m["status"] == "delivered").await;

    // A native tap (option_index counts from 0).
    line.control("/control/vote", json!({"from": FRIEND, "poll_message_id": poll_message, "option_index": 1})).await;
    assert_eq!(tally(&app, &poll_id).await, [0, 1, 0]);
    let votes = app.get("/messages?direction=inbound", &app.org.key).await.expect(200);
    let vote = &votes["data"][0];
    assert_eq!(vote["kind"], "poll_vote");
    assert_eq!(vote["status"], "received");
    assert_eq!(vote["body"], "Voted \"Tacos\" in the poll \"Lunch?\"");
    let events = app.event_types(vote["id"].as_str().unwrap()).await;
    assert!(events.contains(&"messaging.poll.voted".to_string()), "{events:?}");

    // The same voter by text, then by number: each vote replaces the one before in the tally.
    line.inbound(FRIEND, "  sushi ").await;
    assert_eq!(tally(&app, &poll_id).await, [0, 0, 1]);
    line.inbound(FRIEND, "1").await;
    assert_eq!(tally(&app, &poll_id).await, [1, 0, 0]);
    let poll = app.get(&format!("/polls/{poll_id}"), &app.org.key).await.expect(200);
    assert_eq!(poll["total_votes"], 1);
    // A number from someone with no poll in their conversation is just text.
    line.inbound("+12015550130", "1").await;
    assert_eq!(tally(&app, &poll_id).await, [1, 0, 0]);

    // A reply that matches nothing is an ordinary message; every vote stays in the history.
    line.inbound(FRIEND, "see you there").await;
    let inbound = app
        .get(&format!("/messages?direction=inbound&contact_id={}", vote["contact_id"].as_str().unwrap()), &app.org.key)
        .await
        .expect(200);
    let kinds: Vec<&str> = inbound["data"].as_array().unwrap().iter().map(|m| m["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "poll_vote").count(), 3);
    assert_eq!(inbound["data"][0]["kind"], "text");
    assert_eq!(inbound["data"][0]["body"], "see you there");
}

#[tokio::test]
async fn a_number_reply_votes_on_the_latest_poll_of_its_conversation() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let (first, _) = send_poll(&app, lunch()).await;
    let (second, _) = send_poll(&app, json!({"to": FRIEND, "question": "Dinner?", "options": ["Soup", "Salad"]})).await;
    line.inbound(FRIEND, "2").await;
    assert_eq!(tally(&app, &second).await, [0, 1]);
    assert_eq!(tally(&app, &first).await, [0, 0, 0]);
    // Numbers past the options are ordinary text.
    line.inbound(FRIEND, "3").await;
    assert_eq!(tally(&app, &second).await, [0, 1]);
    let inbound = app.get("/messages?direction=inbound", &app.org.key).await.expect(200);
    assert_eq!(inbound["data"][0]["kind"], "text");
}

#[tokio::test]
async fn another_organisations_poll_is_not_found() {
    let app = spawn_app().await;
    let _line = app.default_line().await;
    let (poll_id, _) = send_poll(&app, lunch()).await;
    let other = app.create_org("Other").await;
    app.get(&format!("/polls/{poll_id}"), &other.key).await.expect_error(404, "not_found", None);
}

#[tokio::test]
async fn a_poll_closes_when_its_window_ends_and_when_a_newer_poll_is_sent() {
    let app = spawn_app_with(|c| c.poll_open_seconds = 2).await;
    let line = app.default_line().await;
    let (lunch_id, lunch_message) = send_poll(&app, lunch()).await;
    app.wait_for_message(&app.org.key, &lunch_message, "delivered", |m| m["status"] == "delivered").await;
    line.inbound(FRIEND, "1").await;
    assert_eq!(tally(&app, &lunch_id).await, [1, 0, 0]);
    let poll = app.get(&format!("/polls/{lunch_id}"), &app.org.key).await.expect(200);
    assert_eq!(poll["closed_at"], Value::Null, "open");

    // Past its window: a matching reply is text, a tap is ignored, and the poll says when it closed.
    tokio::time::sleep(std::time::Duration::from_millis(2200)).await;
    line.inbound(FRIEND, "2").await;
    line.control("/control/vote", json!({"from": FRIEND, "poll_message_id": lunch_message, "option_index": 2})).await;
    assert_eq!(tally(&app, &lunch_id).await, [1, 0, 0]);
    let poll = app.get(&format!("/polls/{lunch_id}"), &app.org.key).await.expect(200);
    assert!(poll["closed_at"].is_string(), "{poll}");
    let inbound = app.get("/messages?direction=inbound", &app.org.key).await.expect(200);
    assert_eq!(inbound["data"][0]["kind"], "text");
    assert_eq!(inbound["data"][0]["body"], "2");

    // A newer poll closes the one before at once, taps included.
    let (dinner_id, dinner_message) =
        send_poll(&app, json!({"to": FRIEND, "question": "Dinner?", "options": ["Soup", "Salad"]})).await;
    let (dessert_id, _) =
        send_poll(&app, json!({"to": FRIEND, "question": "Dessert?", "options": ["Cake", "Fruit"]})).await;
    line.control("/control/vote", json!({"from": FRIEND, "poll_message_id": dinner_message, "option_index": 0})).await;
    assert_eq!(tally(&app, &dinner_id).await, [0, 0]);
    let dinner = app.get(&format!("/polls/{dinner_id}"), &app.org.key).await.expect(200);
    let dessert = app.get(&format!("/polls/{dessert_id}"), &app.org.key).await.expect(200);
    assert_eq!(dinner["closed_at"], dessert["created_at"], "closed when the next poll was sent");
    assert_eq!(dessert["closed_at"], Value::Null);
    line.inbound(FRIEND, "1").await;
    assert_eq!(tally(&app, &dessert_id).await, [1, 0]);
}
