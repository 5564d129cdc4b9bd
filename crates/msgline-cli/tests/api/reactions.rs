//! Tapbacks, typing indicators and read receipts against `msgline sim`: reactions sent through
//! the one send path and received from the line (natively, or as an SMS's words), the typing
//! indicator both ways, and reading a conversation.

use serde_json::{Value, json};

use crate::{
    helpers::{TestApp, eventually, spawn_app},
    simline::{LineSpec, SimLine},
};

const FRIEND: &str = "+12015550123";
const SMS_FRIEND: &str = "+12015550124";

async fn line_with(app: &TestApp, args: &[&str]) -> SimLine {
    let org = app.org.clone();
    app.sim_line(LineSpec { e164: "+12015550100", org: Some(&org), sim_args: args, start: true }).await
}

/// Sends a text and waits until it is delivered; returns the message.
async fn delivered_text(app: &TestApp, to: &str, body: &str) -> Value {
    let sent = app.post("/messages", &app.org.key, json!({"to": to, "body": body})).await.expect(202);
    let id = sent["message"]["id"].as_str().unwrap().to_string();
    app.wait_for_message(&app.org.key, &id, "delivered", |m| m["status"] == "delivered").await
}

/// The organisation's inbound messages, newest first.
async fn inbound(app: &TestApp) -> Vec<Value> {
    app.get("/messages?direction=inbound", &app.org.key).await.expect(200)["data"].as_array().unwrap().clone()
}

async fn count(app: &TestApp, table: &str) -> i64 {
    let (n,): (i64,) =
        sqlx::query_as(&format!("SELECT COUNT(*) FROM {table}")).fetch_one(app.db().writer_for_tests()).await.unwrap();
    n
}

/// The `data` of every event of `kind` written for the organisation, oldest first.
async fn events_of(app: &TestApp, kind: &str) -> Vec<Value> {
    let rows: Vec<(String,)> =
        sqlx::query_as("SELECT data FROM events WHERE org_id = $1 AND type = $2 ORDER BY created_at, id")
            .bind(&app.org.id)
            .bind(kind)
            .fetch_all(app.db().writer_for_tests())
            .await
            .unwrap();
    rows.into_iter().map(|(data,)| serde_json::from_str(&data).unwrap()).collect()
}

#[tokio::test]
async fn a_tapback_goes_to_the_line_follows_the_lifecycle_shows_on_its_target_and_can_be_taken_back() {
    let app = spawn_app().await;
    app.keep_events().await;
    let line = line_with(&app, &[]).await;
    let key = &app.org.key;
    let target = delivered_text(&app, FRIEND, "See you at 6").await;
    let target_id = target["id"].as_str().unwrap();
    assert_eq!(target["reactions"], json!([]));

    let path = format!("/messages/{target_id}/reactions");
    let request = app.client.post(app.url(&path)).bearer_auth(key).header("Idempotency-Key", "react-1");
    let answer = request.json(&json!({"reaction": "love"})).send().await.unwrap();
    assert_eq!(answer.status(), 202);
    let sent: Value = answer.json().await.unwrap();
    let reaction = &sent["message"];
    assert_eq!((reaction["kind"].as_str(), reaction["channel"].as_str()), (Some("reaction"), Some("imessage")));
    assert_eq!(reaction["body"], "Loved “See you at 6”");
    assert_eq!(reaction["reaction"], json!({"type": "love", "target_message_id": target_id, "removed": false}));
    assert_eq!(reaction["conversation_id"], target["conversation_id"]);
    let reaction_id = reaction["id"].as_str().unwrap().to_string();

    // Through the lifecycle like any message, and the line was asked for a tapback on the target.
    app.wait_for_message(key, &reaction_id, "the tapback delivered", |m| m["status"] == "delivered").await;
    let on_line = line.sent_with_id(&reaction_id).await;
    assert_eq!(on_line.len(), 1);
    assert_eq!(on_line[0]["kind"], "reaction");
    assert_eq!(on_line[0]["to"], json!([FRIEND]));
    assert_eq!(on_line[0]["reaction"]["type"], "love");
    assert_eq!(
        (on_line[0]["reaction"]["target"].as_str(), on_line[0]["reaction"]["target_message_id"].as_str()),
        (Some(target_id), Some(target_id))
    );
    let types = app.event_types(&reaction_id).await;
    assert!(types.contains(&"messaging.message.delivered".to_string()), "{types:?}");

    // The target shows it.
    let shown = app.get(&format!("/messages/{target_id}"), key).await.expect(200);
    assert_eq!(shown["reactions"].as_array().unwrap().len(), 1, "{shown}");
    assert_eq!(shown["reactions"][0]["reaction"], "love");
    assert_eq!(shown["reactions"][0]["direction"], "outbound");
    assert_eq!(shown["reactions"][0]["from"], "+12015550100");
    assert_eq!(shown["reactions"][0]["message_id"], reaction_id.as_str());

    // The same key and request answer the first answer; the key for another reaction is refused.
    let replay = app.client.post(app.url(&path)).bearer_auth(key).header("Idempotency-Key", "react-1");
    let replay = replay.json(&json!({"reaction": "love"})).send().await.unwrap();
    assert_eq!(replay.status(), 200);
    let replayed: Value = replay.json().await.unwrap();
    assert_eq!(
        (replayed["duplicate"].as_bool(), replayed["message"]["id"].as_str()),
        (Some(true), Some(&*reaction_id))
    );
    let reused = app.client.post(app.url(&path)).bearer_auth(key).header("Idempotency-Key", "react-1");
    let reused = reused.json(&json!({"reaction": "like"})).send().await.unwrap();
    assert_eq!(reused.status(), 409);
    assert_eq!(reused.json::<Value>().await.unwrap()["error"], "idempotency_key_reused");
    assert_eq!(line.sent().await.iter().filter(|s| s["kind"] == "reaction").count(), 1);

    // Taken back: a reaction message with removed, and the target shows nothing.
    let removal = app.delete(&format!("{path}/love"), key).await.expect(202);
    assert_eq!(removal["message"]["reaction"]["removed"], true);
    assert_eq!(removal["message"]["body"], "Removed a heart “See you at 6”");
    let removal_id = removal["message"]["id"].as_str().unwrap();
    app.wait_for_message(key, removal_id, "the removal delivered", |m| m["status"] == "delivered").await;
    assert_eq!(line.sent_with_id(removal_id).await[0]["reaction"]["remove"], true);
    let shown = app.get(&format!("/messages/{target_id}"), key).await.expect(200);
    assert_eq!(shown["reactions"], json!([]));

    // A tapback arriving from the friend: an inbound message of kind reaction on the target.
    line.control("/control/reaction", json!({"from": FRIEND, "target": target_id, "reaction": "like"})).await;
    let arrived = inbound(&app).await;
    assert_eq!(arrived[0]["kind"], "reaction");
    assert_eq!(arrived[0]["status"], "received");
    assert_eq!(arrived[0]["body"], "Liked “See you at 6”");
    assert_eq!(arrived[0]["reaction"], json!({"type": "like", "target_message_id": target_id, "removed": false}));
    let arrived_id = arrived[0]["id"].as_str().unwrap();
    assert_eq!(app.event_types(arrived_id).await, ["messaging.message.received"]);
    let in_conversation = format!("/messages?conversation_id={}", target["conversation_id"].as_str().unwrap());
    let listed = app.get(&in_conversation, key).await.expect(200);
    let on_target = listed["data"].as_array().unwrap().iter().find(|m| m["id"] == target_id).unwrap().clone();
    assert_eq!(on_target["reactions"].as_array().unwrap().len(), 1, "{on_target}");
    assert_eq!(on_target["reactions"][0]["from"], FRIEND);
    assert_eq!(on_target["reactions"][0]["direction"], "inbound");
    // The page's other messages, which nobody reacted to, show an empty list.
    let others: Vec<&Value> = listed["data"].as_array().unwrap().iter().filter(|m| m["id"] != target_id).collect();
    assert!(others.len() >= 3 && others.iter().all(|m| m["reactions"] == json!([])), "{listed}");

    // Reacting to a message that arrived names it by the line's own id for it.
    line.inbound(FRIEND, "Running late").await;
    let received = inbound(&app).await.into_iter().find(|m| m["body"] == "Running late").unwrap();
    let received_id = received["id"].as_str().unwrap();
    let laugh = app.post(&format!("/messages/{received_id}/reactions"), key, json!({"reaction": "laugh"})).await;
    let laugh_id = laugh.expect(202)["message"]["id"].as_str().unwrap().to_string();
    app.wait_for_message(key, &laugh_id, "the tapback delivered", |m| m["status"] == "delivered").await;
    let asked = &line.sent_with_id(&laugh_id).await[0]["reaction"];
    assert!(asked["target"].as_str().unwrap().starts_with("sim-in-"), "{asked}");
    assert_eq!(asked["target_message_id"], received_id);
}

#[tokio::test]
async fn bad_reactions_are_refused_with_the_field_at_fault_and_change_nothing() {
    let app = spawn_app().await;
    let _line = line_with(&app, &["--sms-only", SMS_FRIEND]).await;
    let key = &app.org.key;
    let target = delivered_text(&app, FRIEND, "hello").await;
    let over_sms = delivered_text(&app, SMS_FRIEND, "hello by SMS").await;
    assert_eq!(over_sms["channel"], "sms");
    let reacted_on = format!("/messages/{}/reactions", target["id"].as_str().unwrap());
    let reaction = app.post(&reacted_on, key, json!({"reaction": "like"})).await.expect(202);
    let before = count(&app, "messages").await;
    let reactions_before = count(&app, "reactions").await;

    let on = |message: &Value| format!("/messages/{}/reactions", message["id"].as_str().unwrap());
    app.post(&on(&target), key, json!({"reaction": "wow"})).await.expect_error(
        400,
        "invalid_request",
        Some("reaction"),
    );
    app.post(&on(&target), key, json!({})).await.expect_error(400, "invalid_request", Some("reaction"));
    app.post(&on(&target), key, json!({"reaction": 5})).await.expect_error(400, "invalid_request", None);
    app.delete(&format!("{}/wow", on(&target)), key).await.expect_error(400, "invalid_request", Some("reaction"));
    app.post(&on(&over_sms), key, json!({"reaction": "love"})).await.expect_error(
        400,
        "reaction_requires_imessage",
        None,
    );
    app.post(&on(&reaction["message"]), key, json!({"reaction": "love"})).await.expect_error(
        400,
        "invalid_request",
        Some("id"),
    );
    app.post("/messages/msg_unknown/reactions", key, json!({"reaction": "love"})).await.expect_error(
        404,
        "not_found",
        None,
    );

    // Another organisation's message is not found, whatever the key may do.
    let other = app.create_org("Other").await;
    app.post(&on(&target), &other.key, json!({"reaction": "love"})).await.expect_error(404, "not_found", None);
    app.delete(&format!("{}/love", on(&target)), &other.key).await.expect_error(404, "not_found", None);
    let conversation = target["conversation_id"].as_str().unwrap();
    app.post(&format!("/conversations/{conversation}/typing"), &other.key, json!({})).await.expect_error(
        404,
        "not_found",
        None,
    );
    app.post(&format!("/conversations/{conversation}/read"), &other.key, json!({})).await.expect_error(
        404,
        "not_found",
        None,
    );

    // Each needs messaging_send.
    let reader = app.create_key(&app.org, &["messaging_read"], None).await;
    for path in
        [on(&target), format!("/conversations/{conversation}/typing"), format!("/conversations/{conversation}/read")]
    {
        let refused = app.post(&path, &reader, json!({"reaction": "love"})).await;
        assert_eq!(refused.status, 403, "{path}");
        assert_eq!(refused.body["error"], "missing messaging_send scope", "{path}");
    }
    assert_eq!((count(&app, "messages").await, count(&app, "reactions").await), (before, reactions_before));
}

#[tokio::test]
async fn an_sms_that_reads_as_a_tapback_is_a_reaction_to_the_message_it_quotes() {
    let app = spawn_app().await;
    let line = line_with(&app, &["--sms-only", SMS_FRIEND]).await;
    let key = &app.org.key;
    let target = delivered_text(&app, SMS_FRIEND, "Your table is ready").await;
    let target_id = target["id"].as_str().unwrap();
    line.control(
        "/control/inbound",
        json!({"from": SMS_FRIEND, "body": "Loved “Your table is ready”", "channel": "sms"}),
    )
    .await;
    let arrived = inbound(&app).await;
    assert_eq!((arrived[0]["kind"].as_str(), arrived[0]["channel"].as_str()), (Some("reaction"), Some("sms")));
    assert_eq!(arrived[0]["body"], "Loved “Your table is ready”");
    assert_eq!(arrived[0]["reaction"], json!({"type": "love", "target_message_id": target_id, "removed": false}));
    let shown = app.get(&format!("/messages/{target_id}"), key).await.expect(200);
    assert_eq!(shown["reactions"][0]["reaction"], "love");
    assert_eq!(shown["reactions"][0]["from"], SMS_FRIEND);

    // Taken back in words (either form), and a quote of nothing in the conversation.
    line.control(
        "/control/inbound",
        json!({"from": SMS_FRIEND, "body": "Removed a heart from “Your table is ready”", "channel": "sms"}),
    )
    .await;
    assert_eq!(app.get(&format!("/messages/{target_id}"), key).await.expect(200)["reactions"], json!([]));
    line.control(
        "/control/inbound",
        json!({"from": SMS_FRIEND, "body": "Laughed at \"something else\"", "channel": "sms"}),
    )
    .await;
    let arrived = inbound(&app).await;
    assert_eq!(arrived[0]["reaction"], json!({"type": "laugh", "target_message_id": null, "removed": false}));
    // Words around the quote make an ordinary text.
    line.control("/control/inbound", json!({"from": SMS_FRIEND, "body": "Loved it, thanks", "channel": "sms"})).await;
    assert_eq!(inbound(&app).await[0]["kind"], "text");
}

#[tokio::test]
async fn typing_shows_on_the_line_until_the_next_send_and_typing_to_the_line_is_an_event() {
    let app = spawn_app().await;
    app.keep_events().await;
    let line = line_with(&app, &["--sms-only", SMS_FRIEND]).await;
    let key = &app.org.key;
    let first = delivered_text(&app, FRIEND, "Let me check").await;
    let conversation = first["conversation_id"].as_str().unwrap();
    let shown = || async { line.get("/control/typing").await["typing"].clone() };

    app.post(&format!("/conversations/{conversation}/typing"), key, json!({})).await.expect(204);
    assert_eq!(shown().await, json!([{"to": [FRIEND]}]));
    let typing: Vec<Value> = line.sent().await.into_iter().filter(|s| s["kind"] == "typing").collect();
    assert_eq!(typing.len(), 1);
    assert_eq!(typing[0]["to"], json!([FRIEND]));
    // The next message ends it.
    delivered_text(&app, FRIEND, "Found it").await;
    assert_eq!(shown().await, json!([]));

    // Over SMS there is no indicator; nor from a shared line.
    let sms = delivered_text(&app, SMS_FRIEND, "by SMS").await;
    let sms_conversation = sms["conversation_id"].as_str().unwrap();
    app.post(&format!("/conversations/{sms_conversation}/typing"), key, json!({})).await.expect_error(
        400,
        "typing_requires_imessage",
        None,
    );
    let shared = app.sim_line(LineSpec { e164: "+12015550161", org: None, sim_args: &[], start: true }).await;
    let on_shared =
        app.post("/messages", key, json!({"to": FRIEND, "body": "hi", "line_id": shared.line_id})).await.expect(202);
    let shared_conversation = on_shared["message"]["conversation_id"].as_str().unwrap();
    app.post(&format!("/conversations/{shared_conversation}/typing"), key, json!({})).await.expect_error(
        409,
        "typing_requires_dedicated_line",
        None,
    );
    app.post("/conversations/conv_unknown/typing", key, json!({})).await.expect_error(404, "not_found", None);

    // The friend types: messaging.typing, and no message is stored.
    let messages = count(&app, "messages").await;
    line.control("/control/typing", json!({"from": FRIEND})).await;
    line.control("/control/typing", json!({"from": FRIEND, "typing": false})).await;
    let events = events_of(&app, "messaging.typing").await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!((events[0]["from"].as_str(), events[0]["typing"].as_bool()), (Some(FRIEND), Some(true)));
    assert_eq!(events[0]["conversation_id"], conversation);
    assert_eq!(events[0]["contact_id"], first["contact_id"]);
    assert_eq!(events[1]["typing"], false);
    assert_eq!(count(&app, "messages").await, messages);
}

#[tokio::test]
async fn reading_a_conversation_marks_its_inbound_messages_and_sends_a_receipt_where_the_line_has_them() {
    let app = spawn_app().await;
    let line = line_with(&app, &["--sms-only", SMS_FRIEND, "--read-receipts"]).await;
    let key = &app.org.key;
    line.inbound(FRIEND, "Are you open?").await;
    line.inbound(FRIEND, "Today?").await;
    let arrived = inbound(&app).await;
    assert!(arrived.iter().all(|m| m["read_at"].is_null()));
    let conversation = arrived[0]["conversation_id"].as_str().unwrap().to_string();

    app.post(&format!("/conversations/{conversation}/read"), key, json!({})).await.expect(204);
    let read = inbound(&app).await;
    assert!(read.iter().all(|m| m["read_at"].is_string()), "{read:?}");
    let receipts: Vec<Value> = line.sent().await.into_iter().filter(|s| s["kind"] == "read").collect();
    assert_eq!(receipts.len(), 1);
    assert_eq!(receipts[0]["to"], json!([FRIEND]));
    // Again: nothing left to mark, and the receipt is sent again (the call is safe to repeat).
    let first_read_at = read[0]["read_at"].clone();
    app.post(&format!("/conversations/{conversation}/read"), key, json!({})).await.expect(204);
    assert_eq!(inbound(&app).await[0]["read_at"], first_read_at);

    // The outbound `read` status still comes from the line.
    let reply =
        app.post("/messages", key, json!({"conversation_id": conversation, "body": "Yes, until 6"})).await.expect(202);
    let reply_id = reply["message"]["id"].as_str().unwrap();
    app.wait_for_message(key, reply_id, "read", |m| m["status"] == "read").await;

    // Over SMS the messages are marked, and no receipt goes to the line.
    line.control("/control/inbound", json!({"from": SMS_FRIEND, "body": "hi", "channel": "sms"})).await;
    let sms = inbound(&app).await.into_iter().find(|m| m["channel"] == "sms").unwrap();
    let before = line.sent().await.iter().filter(|s| s["kind"] == "read").count();
    app.post(&format!("/conversations/{}/read", sms["conversation_id"].as_str().unwrap()), key, json!({}))
        .await
        .expect(204);
    let sms = app.get(&format!("/messages/{}", sms["id"].as_str().unwrap()), key).await.expect(200);
    assert!(sms["read_at"].is_string());
    eventually(5, "no receipt for SMS", || async {
        (line.sent().await.iter().filter(|s| s["kind"] == "read").count() == before).then_some(())
    })
    .await;
}
