//! Replies, effects, subjects, edits and unsends on a BlueBubbles line, against the fake
//! BlueBubbles Server: what reaches the Mac through its Private API, what msgline shows and
//! announces (once, though the Mac echoes msgline's own action back), Apple refusing an edit
//! (answered 200 with the message unchanged), a Mac without the Private API or before macOS 13,
//! and what the person does on their phone.

use serde_json::{Value, json};

use crate::{
    devices::{BB_PASSWORD, DeviceLine, Kind},
    helpers::eventually,
};

/// Reachable over iMessage in the fake (an odd last digit).
const FRIEND: &str = "+12015550123";

/// Sends `request` (a `/messages` body) and waits until the Mac has it; returns msgline's id and
/// what the fake recorded of it.
async fn sent(line: &DeviceLine, request: Value) -> (String, Value) {
    let (status, answer) = line.api_post("/messages", request).await;
    assert_eq!(status, 202, "{answer}");
    let id = answer["message"]["id"].as_str().unwrap().to_string();
    line.wait_status(&id, "delivered").await;
    let record = line.fake.sent().await.into_iter().find(|s| s["tempGuid"] == id.as_str()).expect("the Mac has it");
    (id, record)
}

/// A message from the friend arrives (with `extra` fields for the fake); returns msgline's
/// message and the Mac's guid of it.
async fn arrived(line: &DeviceLine, body: &str, extra: Value) -> (Value, String) {
    let mut control = json!({"from": FRIEND, "body": body});
    control.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
    let guid = line.fake.control("/control/inbound", control).await["guid"].as_str().unwrap().to_string();
    let message = eventually(20, "the inbound message", || async {
        line.inbound().await.into_iter().find(|m| m["body"] == body)
    })
    .await;
    (message, guid)
}

/// The fake's records of edits and unsends, oldest first.
async fn actions_on_mac(line: &DeviceLine) -> Vec<Value> {
    line.fake.sent().await.into_iter().filter(|s| s["kind"].is_string()).collect()
}

/// How many events of `kind` the organisation has about message `id`.
async fn events(line: &DeviceLine, kind: &str, id: &str) -> i64 {
    line.count(&format!("SELECT COUNT(*) FROM events WHERE type = '{kind}' AND message_id = '{id}'")).await
}

/// Waits until msgline has taken the Mac's webhook whose event id starts with `hook` (the change
/// as the Mac reports it, an echo of msgline's own included) and checks that message `id` has
/// exactly one event of `kind`, then again once the webhook's repeats have had time to come.
async fn exactly_one(line: &DeviceLine, kind: &str, id: &str, hook: &str) {
    let taken = format!("SELECT COUNT(*) FROM bridge_events WHERE event_id LIKE '{hook}%'");
    eventually(20, hook, || async { (line.count(&taken).await >= 1).then_some(()) }).await;
    assert_eq!(events(line, kind, id).await, 1, "one {kind} for {id}");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(events(line, kind, id).await, 1, "still one {kind} for {id}");
}

#[tokio::test]
async fn replies_name_the_macs_guid_and_effects_and_subjects_go_through_the_private_api() {
    let line = DeviceLine::start(Kind::BlueBubbles, &[]).await;
    let shown = line.api_get(&format!("/lines/{}", line.line_id)).await;
    for capability in ["replies", "effects", "edits", "unsend"] {
        assert_eq!(shown["capabilities"][capability], true, "{capability}: {shown}");
    }

    // A reply to a message that arrived names the guid it arrived with.
    let (received, received_guid) = arrived(&line, "Dinner at 8?", json!({})).await;
    let received_id = received["id"].as_str().unwrap();
    let (reply, record) =
        sent(&line, json!({"to": FRIEND, "body": "Yes, see you there", "reply_to": received_id})).await;
    assert_eq!(record["selectedMessageGuid"], received_guid.as_str(), "{record}");
    assert_eq!((record["method"].as_str(), record["partIndex"].as_i64()), (Some("private-api"), Some(0)));
    assert!(record["effectId"].is_null() && record["subject"].is_null(), "{record}");
    assert_eq!(line.api_get(&format!("/messages/{reply}")).await["reply_to"], received_id);

    // A reply to a message msgline sent names the guid the Mac gave that one.
    let (first, first_record) = sent(&line, json!({"to": FRIEND, "body": "Bring the wine"})).await;
    assert_eq!(first_record["method"], "apple-script", "a plain send needs no Private API");
    let (_, record) = sent(&line, json!({"to": FRIEND, "body": "And the cheese", "reply_to": first})).await;
    assert_eq!(record["selectedMessageGuid"], first_record["guid"], "{record}");

    // An effect as Apple names it, and a subject.
    let request = json!({"to": FRIEND, "body": "Happy birthday!", "effect": "slam", "subject": "Today"});
    let (id, record) = sent(&line, request).await;
    assert_eq!(record["effectId"], "com.apple.MobileSMS.expressivesend.impact", "{record}");
    assert_eq!((record["subject"].as_str(), record["method"].as_str()), (Some("Today"), Some("private-api")));
    assert!(record["selectedMessageGuid"].is_null(), "{record}");
    let message = line.api_get(&format!("/messages/{id}")).await;
    assert_eq!((message["effect"].as_str(), message["subject"].as_str()), (Some("slam"), Some("Today")), "{message}");
    // Each went once.
    assert_eq!(line.fake.get("/control/stats").await["repeated_temp_guids"], 0);
}

#[tokio::test]
async fn an_edit_and_an_unsend_reach_the_mac_and_are_announced_once_despite_its_echo() {
    let line = DeviceLine::start(Kind::BlueBubbles, &[]).await;
    line.keep_events().await;
    line.fake.control("/control/repeat-webhooks", json!({"times": 2})).await;
    let (id, record) = sent(&line, json!({"to": FRIEND, "body": "See you at 8"})).await;
    let guid = record["guid"].as_str().unwrap().to_string();

    let (status, edited) = line.api_post(&format!("/messages/{id}/edit"), json!({"body": "See you at 9"})).await;
    assert_eq!(status, 200, "{edited}");
    assert_eq!(edited["body"], "See you at 9");
    assert!(edited["edited_at"].is_string(), "{edited}");
    assert_eq!(edited["edits"].as_array().map(Vec::len), Some(1), "{edited}");
    assert_eq!(edited["edits"][0]["body"], "See you at 8");
    let on_mac = actions_on_mac(&line).await;
    assert_eq!(on_mac.len(), 1, "{on_mac:?}");
    assert_eq!((on_mac[0]["kind"].as_str(), on_mac[0]["guid"].as_str()), (Some("edit"), Some(guid.as_str())));
    assert_eq!(on_mac[0]["editedMessage"], "See you at 9");
    let on_the_mac = line.fake.get(&format!("/api/v1/message/{guid}?password={BB_PASSWORD}")).await;
    assert_eq!(on_the_mac["data"]["text"], "See you at 9", "{on_the_mac}");
    exactly_one(&line, "messaging.message.edited", &id, &format!("bluebubbles:edit:{guid}:")).await;
    let shown = line.api_get(&format!("/messages/{id}")).await;
    assert_eq!((shown["body"].as_str(), shown["edits"].as_array().map(Vec::len)), (Some("See you at 9"), Some(1)));

    let (status, unsent) = line.api_post(&format!("/messages/{id}/unsend"), json!({})).await;
    assert_eq!(status, 200, "{unsent}");
    assert!(unsent["unsent_at"].is_string(), "{unsent}");
    let on_mac = actions_on_mac(&line).await;
    assert_eq!(on_mac.len(), 2, "{on_mac:?}");
    assert_eq!((on_mac[1]["kind"].as_str(), on_mac[1]["guid"].as_str()), (Some("unsend"), Some(guid.as_str())));
    exactly_one(&line, "messaging.message.unsent", &id, &format!("bluebubbles:unsend:{guid}")).await;
    // The Mac's echoes and their repeats changed nothing more.
    assert_eq!(events(&line, "messaging.message.edited", &id).await, 1);
    let shown = line.api_get(&format!("/messages/{id}")).await;
    assert_eq!((shown["body"].as_str(), shown["edits"].as_array().map(Vec::len)), (Some("See you at 9"), Some(1)));
}

#[tokio::test]
async fn an_edit_apple_refuses_is_never_shown_as_done() {
    let line = DeviceLine::start(Kind::BlueBubbles, &[]).await;
    line.keep_events().await;
    let (id, record) = sent(&line, json!({"to": FRIEND, "body": "See you at 8"})).await;
    let guid = record["guid"].as_str().unwrap().to_string();

    // The Mac answers 200 with the message unchanged, as when Apple refuses.
    line.fake.control("/control/mode", json!({"mode": "refuse", "delay_ms": 200})).await;
    let (status, refused) = line.api_post(&format!("/messages/{id}/edit"), json!({"body": "See you at 9"})).await;
    assert_eq!((status, refused["error"].as_str()), (502, Some("line_rejected")), "{refused}");
    assert!(refused.to_string().contains("Apple did not edit the message"), "the reason: {refused}");
    let shown = line.api_get(&format!("/messages/{id}")).await;
    assert_eq!((shown["body"].as_str(), shown["edited_at"].as_str()), (Some("See you at 8"), None), "{shown}");
    assert_eq!(events(&line, "messaging.message.edited", &id).await, 0);

    // The Mac accepts again: the edit asked anew is applied, once.
    line.fake.control("/control/mode", json!({"mode": "accept"})).await;
    let (status, edited) = line.api_post(&format!("/messages/{id}/edit"), json!({"body": "See you at 9"})).await;
    assert_eq!((status, edited["body"].as_str()), (200, Some("See you at 9")), "{edited}");
    assert_eq!(actions_on_mac(&line).await.len(), 2);
    exactly_one(&line, "messaging.message.edited", &id, &format!("bluebubbles:edit:{guid}:")).await;
}

#[tokio::test]
async fn an_edit_without_an_answer_in_time_is_settled_by_asking_the_mac_never_by_editing_again() {
    let line = DeviceLine::start(Kind::BlueBubbles, &[("MSGLINE_BRIDGE_TIMEOUT_MS", "500")]).await;
    line.keep_events().await;
    let (id, record) = sent(&line, json!({"to": FRIEND, "body": "See you at 8"})).await;
    let guid = record["guid"].as_str().unwrap().to_string();

    // Slow but applied: 202, then edited once, from the Mac's echo or from asking it.
    line.fake.control("/control/mode", json!({"mode": "slow", "delay_ms": 2000})).await;
    let (status, pending) = line.api_post(&format!("/messages/{id}/edit"), json!({"body": "See you at 9"})).await;
    assert_eq!(status, 202, "{pending}");
    assert_eq!(pending["action"]["status"], "unknown", "{pending}");
    assert_eq!(pending["body"], "See you at 8");
    eventually(30, "the slow edit applied", || async {
        (line.api_get(&format!("/messages/{id}")).await["body"] == "See you at 9").then_some(())
    })
    .await;
    exactly_one(&line, "messaging.message.edited", &id, &format!("bluebubbles:edit:{guid}:")).await;

    // Refused, as the real Mac does after some 43 s: unknown, then failed once the Mac's message
    // still does not show it a minute on; never edited.
    line.fake.control("/control/mode", json!({"mode": "refuse", "delay_ms": 3000})).await;
    let (status, pending) = line.api_post(&format!("/messages/{id}/edit"), json!({"body": "See you at 10"})).await;
    assert_eq!(status, 202, "{pending}");
    let failed = eventually(120, "the refused edit to fail", || async {
        let message = line.api_get(&format!("/messages/{id}")).await;
        (message["action"]["status"] == "failed").then_some(message)
    })
    .await;
    assert_eq!((failed["body"].as_str(), failed["edits"].as_array().map(Vec::len)), (Some("See you at 9"), Some(1)));
    assert!(failed["action"]["error"].as_str().unwrap_or_default().contains("Apple did not edit"), "{failed}");
    assert_eq!(events(&line, "messaging.message.edited", &id).await, 1);
    // One call to the Mac per edit.
    assert_eq!(actions_on_mac(&line).await.len(), 2);
}

#[tokio::test]
async fn without_the_private_api_replies_effects_edits_and_unsends_are_refused_before_the_mac_is_asked() {
    let line = DeviceLine::start_with(Kind::BlueBubbles, &["--no-private-api"], &[]).await;
    let shown = line.api_get(&format!("/lines/{}", line.line_id)).await;
    for capability in ["replies", "effects", "edits", "unsend"] {
        assert_eq!(shown["capabilities"][capability], false, "{capability}: {shown}");
    }
    // Without the Private API the Mac cannot say who has iMessage: the sends name the channel.
    let (id, _) = sent(&line, json!({"to": FRIEND, "body": "See you at 8", "channel": "imessage"})).await;
    let before = line.fake.get("/control/stats").await["sends"].clone();

    let (edit, unsend) = (format!("/messages/{id}/edit"), format!("/messages/{id}/unsend"));
    let imessage = |extra: Value| {
        let mut send = json!({"to": FRIEND, "body": "Yes", "channel": "imessage"});
        send.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
        send
    };
    let refusals = [
        ("/messages", imessage(json!({"reply_to": id})), "replies"),
        ("/messages", imessage(json!({"effect": "confetti"})), "effects"),
        ("/messages", imessage(json!({"subject": "Hello"})), "effects"),
        (edit.as_str(), json!({"body": "See you at 9"}), "edits"),
        (unsend.as_str(), json!({}), "unsend"),
    ];
    for (path, body, capability) in refusals {
        let (status, refused) = line.api_post(path, body).await;
        assert_eq!((status, refused["error"].as_str()), (409, Some("line_lacks_capability")), "{path}: {refused}");
        assert_eq!(refused["capability"], capability, "{refused}");
    }
    assert_eq!(line.fake.get("/control/stats").await["sends"], before, "nothing reached the Mac");
    assert_eq!(line.fake.sent().await.len(), 1);
}

#[tokio::test]
async fn before_macos_13_replies_and_effects_work_but_edits_and_unsends_are_refused() {
    let line = DeviceLine::start_with(Kind::BlueBubbles, &["--macos", "12.6"], &[]).await;
    let capabilities = line.api_get(&format!("/lines/{}", line.line_id)).await["capabilities"].clone();
    assert_eq!(
        [&capabilities["replies"], &capabilities["effects"], &capabilities["edits"], &capabilities["unsend"]],
        [true, true, false, false],
        "{capabilities}"
    );
    let (id, first) = sent(&line, json!({"to": FRIEND, "body": "See you at 8"})).await;
    let (_, reply) = sent(&line, json!({"to": FRIEND, "body": "Or 9", "reply_to": id, "effect": "gentle"})).await;
    assert_eq!(reply["selectedMessageGuid"], first["guid"], "{reply}");
    assert_eq!(reply["effectId"], "com.apple.MobileSMS.expressivesend.gentle");

    for (verb, body, capability) in
        [("edit", json!({"body": "See you at 9"}), "edits"), ("unsend", json!({}), "unsend")]
    {
        let (status, refused) = line.api_post(&format!("/messages/{id}/{verb}"), body).await;
        assert_eq!((status, refused["error"].as_str()), (409, Some("line_lacks_capability")), "{refused}");
        assert_eq!(refused["capability"], capability);
    }
    assert!(actions_on_mac(&line).await.is_empty(), "nothing reached the Mac");
}

#[tokio::test]
async fn the_friends_edits_unsends_and_replies_made_on_their_phone_arrive() {
    let line = DeviceLine::start(Kind::BlueBubbles, &[]).await;
    line.keep_events().await;
    line.fake.control("/control/repeat-webhooks", json!({"times": 2})).await;
    let (mine, my_record) = sent(&line, json!({"to": FRIEND, "body": "Dinner at 8?"})).await;

    // An inline reply to msgline's message names it.
    let thread = json!({"threadOriginatorGuid": my_record["guid"], "threadOriginatorPart": "0:0:12"});
    let (reply, _) = arrived(&line, "Sounds good", thread).await;
    assert_eq!(reply["reply_to"], mine.as_str(), "{reply}");
    // And one to a message of theirs that arrived.
    let (theirs, their_guid) = arrived(&line, "Can I bring Sam?", json!({})).await;
    let their_id = theirs["id"].as_str().unwrap().to_string();
    let (second, _) = arrived(&line, "He loves pasta", json!({"threadOriginatorGuid": their_guid})).await;
    assert_eq!(second["reply_to"], their_id.as_str(), "{second}");
    let (plain, _) = arrived(&line, "See you", json!({})).await;
    assert!(plain["reply_to"].is_null(), "{plain}");
    // A message sent with an effect and a subject keeps both, by msgline's names.
    let look = json!({"expressiveSendStyleId": "com.apple.messages.effect.CKConfettiEffect", "subject": "Party"});
    let (festive, _) = arrived(&line, "Happy birthday", look).await;
    assert_eq!((festive["effect"].as_str(), festive["subject"].as_str()), (Some("confetti"), Some("Party")));
    assert!(plain["effect"].is_null() && plain["subject"].is_null(), "{plain}");

    // They edit it on their phone.
    line.fake.control("/control/edit", json!({"message_guid": their_guid, "body": "Can I bring Sam and Alex?"})).await;
    let edited = eventually(20, "the edit made on the phone", || async {
        let message = line.api_get(&format!("/messages/{their_id}")).await;
        (message["body"] == "Can I bring Sam and Alex?").then_some(message)
    })
    .await;
    assert!(edited["edited_at"].is_string(), "{edited}");
    assert_eq!(edited["edits"].as_array().map(Vec::len), Some(1), "{edited}");
    assert_eq!(edited["edits"][0]["body"], "Can I bring Sam?");
    exactly_one(&line, "messaging.message.edited", &their_id, &format!("bluebubbles:edit:{their_guid}:")).await;

    // Then unsend it.
    line.fake.control("/control/unsend", json!({"message_guid": their_guid})).await;
    let unsent = eventually(20, "the unsend made on the phone", || async {
        let message = line.api_get(&format!("/messages/{their_id}")).await;
        message["unsent_at"].is_string().then_some(message)
    })
    .await;
    assert_eq!(unsent["body"], "Can I bring Sam and Alex?", "the organisation keeps the text: {unsent}");
    exactly_one(&line, "messaging.message.unsent", &their_id, &format!("bluebubbles:unsend:{their_guid}")).await;
    assert_eq!(events(&line, "messaging.message.edited", &their_id).await, 1);
}
