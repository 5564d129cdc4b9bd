//! Lines that last: a line's sending policy (`PATCH /lines/{id}`), its health (pause, resume,
//! flagged by its device, offline while its probes fail) and the pacer that hands waiting
//! messages over as the budget allows, with `msgline sim` as the device.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::{
    helpers::{TestApp, eventually, spawn_app_with},
    simline::{LineSpec, SimLine},
};

const FRIEND: &str = "+12015550123";

/// The test's app, its rate limits out of the way of polling a line's view.
async fn app() -> TestApp {
    spawn_app_with(|c| c.rate_limit_per_minute = 1_000_000).await
}

async fn patch_line(app: &TestApp, line: &str, key: &str, body: Value) -> crate::helpers::Resp {
    app.request(Method::PATCH, &format!("/lines/{line}"), Some(key), Some(body)).await
}

async fn set_policy(app: &TestApp, line: &SimLine, policy: Value) -> Value {
    patch_line(app, &line.line_id, &app.org.key, json!({ "policy": policy })).await.expect(200)
}

async fn send(app: &TestApp, to: &str, body: &str) -> String {
    let sent = app.post("/messages", &app.org.key, json!({"to": to, "body": body})).await.expect(202);
    sent["message"]["id"].as_str().unwrap().to_string()
}

async fn status_of(app: &TestApp, id: &str) -> Value {
    app.get(&format!("/messages/{id}"), &app.org.key).await.expect(200)
}

/// The texts the device sent, oldest first.
async fn texts_sent(line: &SimLine) -> Vec<Value> {
    line.sent().await.into_iter().filter(|s| s["kind"] == "text").collect()
}

#[tokio::test]
async fn a_policy_is_set_cleared_and_kept_field_by_field_and_a_bad_value_names_its_field() {
    let app = app().await;
    let line = app.default_line().await;
    let shown = app.get(&format!("/lines/{}", line.line_id), &app.org.key).await.expect(200);
    // The simulator's kind has no limit by default; every field is shown.
    assert_eq!(shown["policy"]["max_per_day"], Value::Null);
    assert_eq!(shown["policy"].as_object().unwrap().len(), 9, "{shown}");
    assert_eq!(shown["health"], "active");
    assert_eq!(shown["health_reason"], Value::Null);
    assert_eq!(shown["queue"], json!({"waiting": 0, "next_send_at": null}));
    assert_eq!(shown["usage"]["day"], 0);

    let set = set_policy(&app, &line, json!({"max_per_day": 500, "min_gap_ms": 100})).await;
    assert_eq!(set["policy"]["max_per_day"], 500);
    assert_eq!(set["policy"]["min_gap_ms"], 100);
    let kept = set_policy(&app, &line, json!({"min_gap_ms": null, "jitter_ms": 0})).await;
    assert_eq!(kept["policy"]["max_per_day"], 500, "a field left out keeps its value");
    assert_eq!(kept["policy"]["min_gap_ms"], Value::Null);
    assert_eq!(kept["policy"]["jitter_ms"], 0);
    let listed = app.get("/lines", &app.org.key).await.expect(200);
    assert_eq!(listed["data"][0]["policy"]["max_per_day"], 500);

    for (bad, field) in
        [(json!({"max_per_day": -1}), "policy.max_per_day"), (json!({"min_gap_ms": "5"}), "policy.min_gap_ms")]
    {
        patch_line(&app, &line.line_id, &app.org.key, json!({"policy": bad})).await.expect_error(
            400,
            "invalid_request",
            Some(field),
        );
    }
    patch_line(&app, &line.line_id, &app.org.key, json!({})).await.expect_error(400, "invalid_request", Some("policy"));
    let after = app.get(&format!("/lines/{}", line.line_id), &app.org.key).await.expect(200);
    assert_eq!(after["policy"], kept["policy"], "a refused change changes nothing");

    // The line routes need messaging_lines; another organisation's line is not found; a shared
    // line is the platform operator's.
    let reader = app.create_key(&app.org, &["messaging_read", "messaging_send"], None).await;
    patch_line(&app, &line.line_id, &reader, json!({"policy": {}})).await.expect_error(
        403,
        "missing messaging_lines scope",
        None,
    );
    app.post(&format!("/lines/{}/pause", line.line_id), &reader, json!({})).await.expect_error(
        403,
        "missing messaging_lines scope",
        None,
    );
    let other = app.create_org("Other").await;
    patch_line(&app, &line.line_id, &other.key, json!({"policy": {}})).await.expect_error(404, "not_found", None);
    let shared = app.create_line_id("+12015550170", None).await;
    patch_line(&app, &shared, &app.org.key, json!({"policy": {"max_per_day": 1}})).await.expect_error(
        409,
        "line_is_shared",
        None,
    );
}

#[tokio::test]
async fn the_operator_sets_any_line_s_policy_and_pauses_it_from_the_command_line() {
    let app = app().await;
    let shared = app.create_line_id("+12015550171", None).await;
    let output = app.cli(&["admin", "line", "update", "--id", &shared, "--policy", r#"{"max_per_hour": 30}"#]).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let shown: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(shown["policy"]["max_per_hour"], 30);
    let paused = app.cli(&["admin", "line", "update", "--id", &shared, "--pause"]).await;
    assert_eq!(serde_json::from_slice::<Value>(&paused.stdout).unwrap()["health"], "paused");
    let bad = app.cli(&["admin", "line", "update", "--id", &shared, "--policy", r#"{"max_per_hour": -3}"#]).await;
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("policy.max_per_hour"));
}

#[tokio::test]
async fn a_minimum_gap_holds_between_consecutive_sends_as_the_device_saw_them() {
    let app = app().await;
    let line = app.default_line().await;
    set_policy(&app, &line, json!({"min_gap_ms": 400, "jitter_ms": 200})).await;
    let mut ids = Vec::new();
    for i in 0..4 {
        ids.push(send(&app, &format!("+1201555013{i}"), &format!("paced {i}")).await);
    }
    for id in &ids {
        app.wait_for_message(&app.org.key, id, "sent", |m| m["status"] == "delivered").await;
    }
    let sent = texts_sent(&line).await;
    assert_eq!(sent.len(), 4, "each once: {sent:?}");
    let times: Vec<i64> =
        sent.iter().map(|s| msgline::clock::parse_rfc3339(s["at"].as_str().unwrap()).unwrap()).collect();
    for pair in times.windows(2) {
        assert!(pair[1] - pair[0] >= 400, "a gap of {} ms between two sends: {times:?}", pair[1] - pair[0]);
    }
    let shown = app.get(&format!("/lines/{}", line.line_id), &app.org.key).await.expect(200);
    assert_eq!(shown["usage"]["minute"], 4);
    assert_eq!(shown["queue"]["waiting"], 0);
}

#[tokio::test]
async fn a_new_contact_budget_holds_while_replies_to_known_numbers_still_go() {
    let app = app().await;
    let line = app.default_line().await;
    // A number the line has heard from is known.
    line.inbound("+12015550140", "hi there").await;
    eventually(10, "the inbound message", || async {
        let list = app.get("/messages?direction=inbound", &app.org.key).await.expect(200);
        (!list["data"].as_array().unwrap().is_empty()).then_some(())
    })
    .await;
    set_policy(&app, &line, json!({"max_new_contacts_per_day": 1})).await;
    let first_new = send(&app, "+12015550141", "to a new number").await;
    app.wait_for_message(&app.org.key, &first_new, "the first new contact", |m| m["status"] == "delivered").await;
    let second_new = send(&app, "+12015550142", "to another new number").await;
    let reply = send(&app, "+12015550140", "a reply to a known number").await;
    let again = send(&app, "+12015550141", "the first number again").await;
    app.wait_for_message(&app.org.key, &reply, "the reply", |m| m["status"] == "delivered").await;
    app.wait_for_message(&app.org.key, &again, "the known number", |m| m["status"] == "delivered").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(status_of(&app, &second_new).await["status"], "queued");
    let shown = app.get(&format!("/lines/{}", line.line_id), &app.org.key).await.expect(200);
    assert_eq!(shown["usage"]["new_contacts_day"], 1);
    assert_eq!(shown["queue"]["waiting"], 1);
    assert!(shown["queue"]["next_send_at"].is_string(), "{shown}");
    // More budget: the waiting message goes.
    set_policy(&app, &line, json!({"max_new_contacts_per_day": 2})).await;
    app.wait_for_message(&app.org.key, &second_new, "the second new contact", |m| m["status"] == "delivered").await;
    assert_eq!(texts_sent(&line).await.len(), 4);
}

#[tokio::test]
async fn a_message_that_waits_past_its_validity_fails_as_expired_and_is_never_sent() {
    let app = app().await;
    app.keep_events().await;
    let line = app.default_line().await;
    set_policy(&app, &line, json!({"max_per_day": 1})).await;
    let first = send(&app, FRIEND, "the day's one").await;
    app.wait_for_message(&app.org.key, &first, "the first", |m| m["status"] == "delivered").await;
    let late = app
        .post("/messages", &app.org.key, json!({"to": FRIEND, "body": "an OTP", "validity_seconds": 5}))
        .await
        .expect(202);
    let late = late["message"]["id"].as_str().unwrap().to_string();
    let failed = app.wait_for_message(&app.org.key, &late, "expired", |m| m["status"] == "failed").await;
    assert_eq!(failed["error"], "expired");
    assert!(app.event_types(&late).await.contains(&"messaging.message.failed".to_string()));
    assert_eq!(texts_sent(&line).await.len(), 1, "the expired message never reached the device");
    for bad in [json!(4), json!(259_201), json!("60")] {
        app.post("/messages", &app.org.key, json!({"to": FRIEND, "body": "x", "validity_seconds": bad}))
            .await
            .expect_error(400, "invalid_request", Some("validity_seconds"));
    }
}

#[tokio::test]
async fn a_paused_line_sends_nothing_until_it_is_resumed() {
    let app = app().await;
    app.keep_events().await;
    let line = app.default_line().await;
    let paused = app.post(&format!("/lines/{}/pause", line.line_id), &app.org.key, json!({})).await.expect(200);
    assert_eq!(paused["health"], "paused");
    assert!(paused["health_reason"].is_string());
    let id = send(&app, FRIEND, "held").await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(status_of(&app, &id).await["status"], "queued");
    assert!(texts_sent(&line).await.is_empty());
    let shown = app.get(&format!("/lines/{}", line.line_id), &app.org.key).await.expect(200);
    assert_eq!(shown["queue"]["waiting"], 1);
    let resumed = app.post(&format!("/lines/{}/resume", line.line_id), &app.org.key, json!({})).await.expect(200);
    assert_eq!(resumed["health"], "active");
    app.wait_for_message(&app.org.key, &id, "delivered after resume", |m| m["status"] == "delivered").await;
    assert_eq!(texts_sent(&line).await.len(), 1);
    let changes = health_events(&app).await;
    // Newest first: (health, previous).
    assert_eq!(changes, [("active".to_string(), "paused".to_string()), ("paused".to_string(), "active".to_string())]);
}

/// The `messaging.line.health_changed` events of the test's organisation, newest first, as
/// (health, previous).
async fn health_events(app: &TestApp) -> Vec<(String, String)> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT data FROM events WHERE org_id = $1 AND type = 'messaging.line.health_changed' ORDER BY id DESC",
    )
    .bind(&app.org.id)
    .fetch_all(app.db().reader_for_tests())
    .await
    .expect("events");
    rows.iter()
        .map(|(data,)| {
            let data: Value = serde_json::from_str(data).unwrap();
            (data["health"].as_str().unwrap().to_string(), data["previous"].as_str().unwrap().to_string())
        })
        .collect()
}

#[tokio::test]
async fn a_blocked_device_flags_its_line_at_once_and_later_sends_wait_until_it_is_resumed() {
    let app = app().await;
    app.keep_events().await;
    let line = app.default_line().await;
    line.control("/control/mode", json!({"blocked": true})).await;
    let first = send(&app, FRIEND, "refused by a blocked account").await;
    eventually(10, "the line flagged", || async {
        let shown = app.get(&format!("/lines/{}", line.line_id), &app.org.key).await.expect(200);
        (shown["health"] == "flagged").then_some(())
    })
    .await;
    let second = send(&app, "+12015550150", "after the flag").await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    for id in [&first, &second] {
        assert_eq!(status_of(&app, id).await["status"], "queued", "{id} waits");
    }
    assert!(texts_sent(&line).await.is_empty());
    // The device is fine again, but a flag waits for an operator.
    line.control("/control/mode", json!({"blocked": false})).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(texts_sent(&line).await.is_empty());
    app.post(&format!("/lines/{}/resume", line.line_id), &app.org.key, json!({})).await.expect(200);
    for id in [&first, &second] {
        app.wait_for_message(&app.org.key, id, "delivered", |m| m["status"] == "delivered").await;
    }
    let sent = texts_sent(&line).await;
    assert_eq!(sent.len(), 2, "each sent once: {sent:?}");
    assert_eq!(health_events(&app).await[1], ("flagged".to_string(), "active".to_string()));
}

#[tokio::test]
async fn a_line_whose_probes_fail_goes_offline_its_sends_wait_and_it_comes_back_by_itself() {
    let app = spawn_app_with(|c| {
        c.line_check_seconds = 1;
        c.rate_limit_per_minute = 1_000_000;
    })
    .await;
    let line = app.default_line().await;
    line.control("/control/mode", json!({"offline": true})).await;
    eventually(10, "the line offline", || async {
        let shown = app.get(&format!("/lines/{}", line.line_id), &app.org.key).await.expect(200);
        (shown["health"] == "offline").then_some(())
    })
    .await;
    let id = send(&app, FRIEND, "while the phone is away").await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(status_of(&app, &id).await["status"], "queued");
    line.control("/control/mode", json!({"offline": false})).await;
    app.wait_for_message(&app.org.key, &id, "delivered once back", |m| m["status"] == "delivered").await;
    let shown = app.get(&format!("/lines/{}", line.line_id), &app.org.key).await.expect(200);
    assert_eq!(shown["health"], "active");
    assert_eq!(texts_sent(&line).await.len(), 1);
}

#[tokio::test]
async fn on_a_shared_line_one_organisation_s_campaign_does_not_hold_back_another_s_code() {
    let app = app().await;
    let line = app.sim_line(LineSpec { e164: "+12015550172", org: None, sim_args: &[], start: true }).await;
    let output =
        app.cli(&["admin", "line", "update", "--id", &line.line_id, "--policy", r#"{"min_gap_ms": 250}"#]).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let other = app.create_org("Codes").await;
    let mut campaign = Vec::new();
    for i in 0..8 {
        let body = json!({"to": format!("+1201555016{i}"), "body": format!("sale {i}"), "line_id": line.line_id});
        campaign.push(app.post("/messages", &app.org.key, body).await.expect(202)["message"]["id"].clone());
    }
    let code = json!({"to": "+12015550199", "body": "your code is 123456", "line_id": line.line_id});
    let code = app.post("/messages", &other.key, code).await.expect(202)["message"]["id"].as_str().unwrap().to_string();
    app.wait_for_message(&other.key, &code, "the code", |m| m["status"] == "delivered").await;
    let sent = texts_sent(&line).await;
    let position = sent.iter().position(|s| s["id"] == code.as_str()).expect("the code was sent");
    assert!(position <= 2, "the code went out {}th, behind the campaign: {sent:?}", position + 1);
}
