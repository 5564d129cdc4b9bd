//! `POST /groups`: the rules in their order, every outcome of spec §3 and its replays.

use serde_json::{Value, json};
use sqlx::Row;

use crate::{
    helpers::{TestApp, eventually, spawn_app, spawn_app_with},
    simline::{LineSpec, SimLine},
};

const A: &str = "+12015550123";
const B: &str = "+12015550124";
const LINE: &str = "+12015550100";

fn group(extra: Value) -> Value {
    let mut body = json!({"participants": [A, B], "body": "Hi all", "name": "Weekend trip"});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

async fn line_with(app: &TestApp, args: &[&str]) -> SimLine {
    let org = app.org.clone();
    app.sim_line(LineSpec { e164: LINE, org: Some(&org), sim_args: args, start: true }).await
}

async fn post_group(app: &TestApp, key: Option<&str>, body: Value) -> crate::helpers::Resp {
    let mut request = app.client.post(app.url("/groups")).bearer_auth(&app.org.key).json(&body);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.json().await.unwrap_or(Value::Null);
    crate::helpers::Resp { status, body, headers }
}

async fn count(app: &TestApp, sql: &str) -> i64 {
    sqlx::query(sql).fetch_one(app.db().writer_for_tests()).await.unwrap().get::<i64, _>(0)
}

/// Nothing of a group was written: no group, message or outbox row.
async fn assert_nothing_written(app: &TestApp) {
    assert_eq!(count(app, "SELECT COUNT(*) FROM conversations WHERE kind = 'group'").await, 0);
    assert_eq!(count(app, "SELECT COUNT(*) FROM messages").await, 0);
    assert_eq!(count(app, "SELECT COUNT(*) FROM messages WHERE outbox_state IS NOT NULL").await, 0);
}

async fn group_state(app: &TestApp, id: &str) -> String {
    app.get(&format!("/groups/{id}"), &app.org.key).await.expect(200)["state"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_group_the_line_accepts_is_201_created_with_a_submitted_message_that_then_follows_the_lifecycle() {
    let app = spawn_app().await;
    app.keep_events().await;
    let line = line_with(&app, &[]).await;
    let created = post_group(&app, None, group(json!({}))).await.expect(201);
    let group = &created["group"];
    let id = group["id"].as_str().unwrap();
    assert!(id.starts_with("conv_"));
    assert_eq!(group["state"], "created");
    assert_eq!(group["name"], "Weekend trip");
    assert_eq!(group["participants"], json!([A, B]));
    assert_eq!(group["line_id"], line.line_id.as_str());
    assert_eq!(created["message"]["status"], "submitted");
    assert_eq!(created["message"]["conversation_id"], id);
    assert_eq!(created["delivery_unknown"], false);
    assert_eq!(created["duplicate"], false);

    let message_id = created["message"]["id"].as_str().unwrap();
    app.wait_for_message(&app.org.key, message_id, "delivered", |m| m["status"] == "delivered").await;
    let types = app.event_types(message_id).await;
    assert_eq!(
        types,
        [
            "messaging.message.queued",
            "messaging.message.submitted",
            "messaging.group.created",
            "messaging.message.sent",
            "messaging.message.delivered"
        ]
    );
    let sent = line.sent_with_id(message_id).await;
    assert_eq!(sent[0]["chat"], id);
    assert_eq!(sent[0]["to"], json!([A, B]));
    assert_eq!(sent[0]["name"], "Weekend trip");

    // The group is a conversation: readable, listable, and a place to send later messages.
    assert_eq!(group_state(&app, id).await, "created");
    let thread = app.get(&format!("/messages?conversation_id={id}"), &app.org.key).await.expect(200);
    assert_eq!(thread["data"][0]["id"], message_id);
    let later =
        app.post("/messages", &app.org.key, json!({"conversation_id": id, "body": "Saturday?"})).await.expect(202);
    let later_id = later["message"]["id"].as_str().unwrap();
    app.wait_for_message(&app.org.key, later_id, "delivered", |m| m["status"] == "delivered").await;
    let sent = line.sent_with_id(later_id).await;
    assert_eq!(sent[0]["chat"], id, "a later message goes to the group");
    assert_eq!(sent[0]["channel"], "imessage");
}

#[tokio::test]
async fn a_line_bound_key_naming_another_line_is_409_line_mismatch_and_writes_nothing() {
    let app = spawn_app().await;
    let line = line_with(&app, &[]).await;
    let org = app.org.clone();
    let other = app.create_line("+12015550101", Some(&org), "http://127.0.0.1:1").await;
    let bound = app.create_key(&org, &["messaging_send"], Some(other["line_id"].as_str().unwrap())).await;
    app.post("/groups", &bound, group(json!({"line_id": line.line_id}))).await.expect_error(409, "line_mismatch", None);
    assert_nothing_written(&app).await;
}

#[tokio::test]
async fn a_shared_line_is_409_group_requires_dedicated_line() {
    let app = spawn_app().await;
    let shared = app.sim_line(LineSpec { e164: "+12015550199", org: None, sim_args: &[], start: true }).await;
    app.post("/groups", &app.org.key, group(json!({"line_id": shared.line_id}))).await.expect_error(
        409,
        "group_requires_dedicated_line",
        None,
    );
    assert_nothing_written(&app).await;
}

#[tokio::test]
async fn a_device_without_group_support_is_409_group_chats_unsupported() {
    let app = spawn_app().await;
    let line = line_with(&app, &["--no-groups"]).await;
    app.post("/groups", &app.org.key, group(json!({}))).await.expect_error(409, "group_chats_unsupported", None);
    assert_nothing_written(&app).await;
    assert!(line.sent().await.is_empty());
    let lines = app.get("/lines", &app.org.key).await.expect(200);
    assert_eq!(lines["data"][0]["capabilities"]["groups"], false);
}

#[tokio::test]
async fn a_participant_not_reachable_over_imessage_is_400_and_nothing_falls_back_to_sms() {
    let app = spawn_app().await;
    let line = line_with(&app, &["--sms-only", B]).await;
    let refused = app.post("/groups", &app.org.key, group(json!({}))).await;
    let body = refused.expect_error(400, "participants_not_reachable", None);
    assert_eq!(body["participants"], json!([B]));
    assert_nothing_written(&app).await;
    assert!(line.sent().await.is_empty());
}

#[tokio::test]
async fn the_rules_are_checked_in_order() {
    let app = spawn_app().await;
    // A shared line whose device also lacks groups: the shared-line rule comes first.
    let shared = app
        .sim_line(LineSpec {
            e164: "+12015550199",
            org: None,
            sim_args: &["--no-groups", "--sms-only", B],
            start: true,
        })
        .await;
    app.post("/groups", &app.org.key, group(json!({"line_id": shared.line_id}))).await.expect_error(
        409,
        "group_requires_dedicated_line",
        None,
    );
    // A dedicated line without groups and an SMS-only participant: unsupported comes first.
    let _line = line_with(&app, &["--no-groups", "--sms-only", B]).await;
    app.post("/groups", &app.org.key, group(json!({"from": LINE}))).await.expect_error(
        409,
        "group_chats_unsupported",
        None,
    );
    assert_nothing_written(&app).await;
}

#[tokio::test]
async fn no_answer_in_time_is_202_unknown_and_the_reconciler_later_resolves_it() {
    let app = spawn_app_with(|c| c.bridge_timeout_ms = 300).await;
    app.keep_events().await;
    let line = line_with(&app, &["--mode", "timeout"]).await;
    let first = post_group(&app, Some("trip-1"), group(json!({}))).await.expect(202);
    assert_eq!(first["group"]["state"], "unknown");
    assert_eq!(first["message"]["status"], "unknown");
    assert_eq!(first["delivery_unknown"], true);
    let id = first["group"]["id"].as_str().unwrap().to_string();
    let message_id = first["message"]["id"].as_str().unwrap().to_string();

    eventually(20, "the group to be created", || async { (group_state(&app, &id).await == "created").then_some(()) })
        .await;
    app.wait_for_message(&app.org.key, &message_id, "delivered", |m| m["status"] == "delivered").await;
    let types = app.event_types(&message_id).await;
    assert!(types.contains(&"messaging.group.created".to_string()), "{types:?}");
    assert!(types.contains(&"messaging.message.unknown".to_string()), "{types:?}");
    assert_eq!(line.sent_with_id(&message_id).await.len(), 1);

    // A replay after the outcome was resolved answers like an original that succeeded.
    let replay = post_group(&app, Some("trip-1"), group(json!({}))).await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    let replay = replay.expect(200);
    assert_eq!(replay["duplicate"], true);
    assert_eq!(replay["group"]["id"], id.as_str());
    assert_eq!(replay["group"]["state"], "created");
    assert_eq!(replay["message"]["id"], message_id.as_str());
}

#[tokio::test]
async fn a_replay_while_the_outcome_is_still_uncertain_is_202_again() {
    let app = spawn_app_with(|c| c.bridge_timeout_ms = 300).await;
    let mut line = line_with(&app, &["--mode", "timeout"]).await;
    let first = post_group(&app, Some("trip-2"), group(json!({}))).await.expect(202);
    // The line goes away before anyone can ask it: the outcome stays unknown.
    line.kill().await;
    let replay = post_group(&app, Some("trip-2"), group(json!({}))).await.expect(202);
    assert_eq!(replay["duplicate"], true);
    assert_eq!(replay["delivery_unknown"], true);
    assert_eq!(replay["group"]["id"], first["group"]["id"]);
    assert_eq!(replay["group"]["state"], "unknown");
    assert_eq!(replay["message"]["status"], "unknown");
}

#[tokio::test]
async fn a_refusal_fails_the_group_and_a_replay_returns_the_same_error() {
    let app = spawn_app().await;
    let line = line_with(&app, &["--mode", "reject"]).await;
    let first = post_group(&app, Some("trip-3"), group(json!({}))).await;
    let body = first.expect_error(502, "line_rejected", None);
    assert!(body["message"].as_str().unwrap().contains("refused"), "{body}");
    assert_eq!(body["group"]["state"], "failed");
    let id = body["group"]["id"].as_str().unwrap();
    assert_eq!(group_state(&app, id).await, "failed");
    let message =
        app.get(&format!("/messages/{}", body["message_id"].as_str().unwrap()), &app.org.key).await.expect(200);
    assert_eq!(message["status"], "failed");
    let again = post_group(&app, Some("trip-3"), group(json!({}))).await;
    assert_eq!(again.status, 502);
    assert_eq!(again.body, body);
    assert!(line.sent().await.is_empty());
    // A failed group takes no later messages.
    app.post("/messages", &app.org.key, json!({"conversation_id": id, "body": "x"})).await.expect_error(
        400,
        "invalid_request",
        Some("conversation_id"),
    );
}

#[tokio::test]
async fn a_replay_of_a_created_group_is_200_and_a_different_request_with_the_key_is_409() {
    let app = spawn_app().await;
    let line = line_with(&app, &[]).await;
    let org = app.org.clone();
    let other_line = app.create_line("+12015550101", Some(&org), "http://127.0.0.1:1").await;
    let on_line = |extra: Value| {
        let mut body = group(json!({"from": LINE}));
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let first = post_group(&app, Some("trip-4"), on_line(json!({}))).await.expect(201);
    // The same participant set in another order is the same request.
    let replay = post_group(&app, Some("trip-4"), on_line(json!({"participants": [B, A]}))).await.expect(200);
    assert_eq!(replay["duplicate"], true);
    assert_eq!(replay["group"]["id"], first["group"]["id"]);
    assert_eq!(replay["message"]["id"], first["message"]["id"]);
    let mut another_line = group(json!({"line_id": other_line["line_id"]}));
    another_line.as_object_mut().unwrap().remove("from");
    for different in [
        on_line(json!({"participants": [A, "+12015550125"]})),
        on_line(json!({"body": "Hello all"})),
        on_line(json!({"name": "Another trip"})),
        another_line,
    ] {
        post_group(&app, Some("trip-4"), different).await.expect_error(409, "idempotency_key_reused", None);
    }
    // The key may come in the body; header and body disagreeing is a 400.
    let in_body = app.post("/groups", &app.org.key, on_line(json!({"idempotency_key": "trip-4"}))).await.expect(200);
    assert_eq!(in_body["group"]["id"], first["group"]["id"]);
    post_group(&app, Some("trip-4"), on_line(json!({"idempotency_key": "trip-5"}))).await.expect_error(
        400,
        "invalid_request",
        Some("idempotency_key"),
    );
    assert_eq!(line.sent().await.len(), 1);
    assert_eq!(count(&app, "SELECT COUNT(*) FROM conversations WHERE kind = 'group'").await, 1);
}

#[tokio::test]
async fn participants_are_normalised_and_counted() {
    let app = spawn_app().await;
    let _line = line_with(&app, &[]).await;
    let key = &app.org.key;
    // Duplicates (in any format) and the line's own number are dropped.
    let created = app
        .post(
            "/groups",
            key,
            group(json!({"participants": [A, "(201) 555-0123", LINE, "201-555-0124"], "default_country": "US"})),
        )
        .await
        .expect(201);
    assert_eq!(created["group"]["participants"], json!([A, B]));
    // National numbers need default_country.
    app.post("/groups", key, group(json!({"participants": ["(201) 555-0123", B]}))).await.expect_error(
        400,
        "invalid_request",
        Some("participants"),
    );
    // Fewer than two once the line's number is gone.
    app.post("/groups", key, group(json!({"participants": [A, LINE]}))).await.expect_error(
        400,
        "invalid_request",
        Some("participants"),
    );
    app.post("/groups", key, group(json!({"participants": [A]}))).await.expect_error(
        400,
        "invalid_request",
        Some("participants"),
    );
    let numbers = |n: usize| (0..n).map(|i| format!("+1201555{:04}", 2000 + i)).collect::<Vec<_>>();
    app.post("/groups", key, group(json!({"participants": numbers(32)}))).await.expect_error(
        400,
        "invalid_request",
        Some("participants"),
    );
    let big = app.post("/groups", key, group(json!({"participants": numbers(31)}))).await.expect(201);
    assert_eq!(big["group"]["participants"].as_array().unwrap().len(), 31);
}

#[tokio::test]
async fn body_and_name_limits_hold_at_their_boundaries() {
    let app = spawn_app().await;
    let _line = line_with(&app, &[]).await;
    let key = &app.org.key;
    app.post("/groups", key, group(json!({"body": "x".repeat(10_000)}))).await.expect(201);
    app.post("/groups", key, group(json!({"body": "x".repeat(10_001)}))).await.expect_error(
        400,
        "invalid_request",
        Some("body"),
    );
    app.post("/groups", key, group(json!({"body": "y", "name": "n".repeat(100)}))).await.expect(201);
    app.post("/groups", key, group(json!({"name": "n".repeat(101)}))).await.expect_error(
        400,
        "invalid_request",
        Some("name"),
    );
    app.post("/groups", key, json!({"participants": [A, B]})).await.expect_error(400, "invalid_request", Some("body"));
    let reader = app.create_key(&app.org, &["messaging_read"], None).await;
    app.post("/groups", &reader, group(json!({}))).await.expect_error(403, "missing messaging_send scope", None);
    app.get("/groups/conv_01m80b6h6e744vr7hxxgt73870", key).await.expect_error(404, "not_found", None);
}
