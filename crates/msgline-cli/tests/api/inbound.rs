//! Bridge callbacks: inbound messages on dedicated and shared lines, repeated callbacks, and
//! the bridge secret.

use serde_json::{Value, json};

use crate::{
    helpers::{plan_of, spawn_app},
    simline::LineSpec,
};

const FRIEND: &str = "+12015550123";

#[tokio::test]
async fn an_inbound_message_on_a_dedicated_line_lands_on_the_contact_and_conversation() {
    let app = spawn_app().await;
    app.keep_events().await;
    let line = app.default_line().await;
    let sent = app.post("/messages", &app.org.key, json!({"to": FRIEND, "body": "Hi"})).await.expect(202);
    line.inbound(FRIEND, "Hello yourself").await;
    let inbound = app.get("/messages?direction=inbound", &app.org.key).await.expect(200);
    let message = &inbound["data"][0];
    assert_eq!(message["body"], "Hello yourself");
    assert_eq!(message["status"], "received");
    assert_eq!(message["direction"], "inbound");
    assert_eq!(message["line_id"], line.line_id.as_str());
    assert_eq!(message["contact_id"], sent["message"]["contact_id"]);
    assert_eq!(message["conversation_id"], sent["message"]["conversation_id"]);
    let id = message["id"].as_str().unwrap();
    assert_eq!(app.event_types(id).await, ["messaging.message.received"]);

    // A first message from a stranger creates the contact and the conversation.
    line.inbound("+12015550177", "who is this?").await;
    let contacts = app.get("/contacts?q=0177", &app.org.key).await.expect(200);
    assert_eq!(contacts["data"][0]["phone"], "+12015550177");
}

#[tokio::test]
async fn an_inbound_message_on_a_shared_line_goes_to_the_organisation_that_last_wrote_to_the_sender() {
    let app = spawn_app().await;
    let other = app.create_org("Other").await;
    let shared = app.sim_line(LineSpec { e164: "+12015550199", org: None, sim_args: &[], start: true }).await;
    let via_shared = |to: &str| json!({"to": to, "from": "+12015550199", "body": "from the shared line"});
    app.post("/messages", &app.org.key, via_shared(FRIEND)).await.expect(202);
    app.post("/messages", &other.key, via_shared(FRIEND)).await.expect(202);
    app.post("/messages", &app.org.key, via_shared("+12015550124")).await.expect(202);

    shared.inbound(FRIEND, "reply to the latest writer").await;
    shared.inbound("+12015550124", "reply to the only writer").await;
    let mine = app.get("/messages?direction=inbound", &app.org.key).await.expect(200);
    let theirs = app.get("/messages?direction=inbound", &other.key).await.expect(200);
    let bodies = |list: &Value| -> Vec<String> {
        list["data"].as_array().unwrap().iter().map(|m| m["body"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(bodies(&theirs), ["reply to the latest writer"]);
    assert_eq!(bodies(&mine), ["reply to the only writer"]);

    // The first organisation writes again, after the other's conversation got the reply: the
    // next reply goes back to it.
    app.post("/messages", &app.org.key, via_shared(FRIEND)).await.expect(202);
    shared.inbound(FRIEND, "reply to the first writer, who wrote again").await;
    let mine = app.get("/messages?direction=inbound", &app.org.key).await.expect(200);
    assert_eq!(bodies(&mine), ["reply to the first writer, who wrote again", "reply to the only writer"]);
    let theirs = app.get("/messages?direction=inbound", &other.key).await.expect(200);
    assert_eq!(bodies(&theirs), ["reply to the latest writer"]);
}

/// Every arrival on a shared line looks for the organisation that last wrote to the sender:
/// through indexes (the sender's contacts by number, their conversations on the line, each one's
/// latest message), never by reading the line's messages.
#[tokio::test]
async fn a_shared_line_finds_who_last_wrote_through_indexes() {
    let app = spawn_app().await;
    let query =
        msgline::testing::db::messages::LAST_SENDER_ORG.replace("$1", "'line_x'").replace("$2", "'+12015550123'");
    let plan = plan_of(app.state.db(), true, &query).await;
    assert!(plan.iter().any(|line| line.contains("contacts_by_phone")), "{plan:#?}");
    assert!(plan.iter().all(|line| !line.starts_with("SCAN") && !line.contains("Seq Scan")), "{plan:#?}");
}

#[tokio::test]
async fn an_inbound_message_nobody_wrote_to_is_kept_unrouted() {
    let app = spawn_app().await;
    let shared = app.sim_line(LineSpec { e164: "+12015550199", org: None, sim_args: &[], start: true }).await;
    let answer = shared.inbound("+12015550150", "hello?").await;
    assert_eq!(answer["callback_status"], 200);
    let inbound = app.get("/messages?direction=inbound", &app.org.key).await.expect(200);
    assert!(inbound["data"].as_array().unwrap().is_empty());
    assert_eq!(msgline::testing::db::unrouted::count(app.db(), &shared.line_id).await.unwrap(), 1);
}

#[tokio::test]
async fn a_repeated_callback_changes_nothing_and_a_wrong_secret_is_refused() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let event = json!({"id": "bridge-evt-1", "type": "message.inbound", "data": {"from": FRIEND, "body": "once"}});
    let post = |secret: &str, body: Value| {
        app.client
            .post(format!("{}/api/v1/messaging/bridge/events", app.address))
            .bearer_auth(secret)
            .json(&body)
            .send()
    };
    let first: Value = post(&line.secret, event.clone()).await.unwrap().json().await.unwrap();
    assert_eq!(first, json!({"applied": 1, "duplicates": 0}));
    let again: Value = post(&line.secret, json!([event.clone()])).await.unwrap().json().await.unwrap();
    assert_eq!(again, json!({"applied": 0, "duplicates": 1}));
    let inbound = app.get("/messages?direction=inbound", &app.org.key).await.expect(200);
    assert_eq!(inbound["data"].as_array().unwrap().len(), 1);

    let refused = post("mlb_not-the-secret", event.clone()).await.unwrap();
    assert_eq!(refused.status(), 401);
    // An API key is not a bridge secret.
    let refused = post(&app.org.key, event).await.unwrap();
    assert_eq!(refused.status(), 401);
    let unknown_type = post(&line.secret, json!({"id": "x", "type": "message.teleported", "data": {}})).await.unwrap();
    assert_eq!(unknown_type.status(), 400);
}

#[tokio::test]
async fn a_status_callback_for_another_lines_message_is_ignored() {
    let app = spawn_app().await;
    let org = app.org.clone();
    let line = app.default_line().await;
    let other = app
        .sim_line(LineSpec { e164: "+12015550101", org: Some(&org), sim_args: &["--mode", "timeout"], start: true })
        .await;
    let sent = app.post("/messages", &app.org.key, json!({"to": FRIEND, "line_id": line.line_id, "body": "x"})).await;
    let id = sent.expect(202)["message"]["id"].as_str().unwrap().to_string();
    app.wait_for_message(&app.org.key, &id, "delivered", |m| m["status"] == "delivered").await;
    // The other line's bridge claims the message failed: it is not that line's to report.
    let forged = json!({"id": "forged-1", "type": "message.status", "data": {"message_id": id, "status": "failed", "reason": "x"}});
    let answer = app
        .client
        .post(format!("{}/api/v1/messaging/bridge/events", app.address))
        .bearer_auth(&other.secret)
        .json(&forged)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let message = app.get(&format!("/messages/{id}"), &app.org.key).await.expect(200);
    assert_eq!(message["status"], "delivered");
}
