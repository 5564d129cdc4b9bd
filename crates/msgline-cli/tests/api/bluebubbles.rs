//! Lines of kind `bluebubbles` against the fake BlueBubbles Server: send, lifecycle to read,
//! inbound, cards, polls by fallback text, groups, the Private API helper missing, refused and
//! slow sends, webhook secrets, and `kill -9`.

use serde_json::json;

use crate::{
    devices::{BB_PASSWORD, DeviceLine, Kind},
    helpers::eventually,
};

/// Reachable over iMessage in the fake (an odd last digit); `SMS_ONLY` is not.
const FRIEND: &str = "+12015550123";
const SMS_ONLY: &str = "+12015550124";

#[tokio::test]
async fn a_bluebubbles_line_registers_its_webhook_and_sends_to_the_chat_guid_with_msglines_id() {
    let line = DeviceLine::start(Kind::BlueBubbles, &[]).await;
    assert_eq!(line.created["webhook_registered"], true, "{}", line.created);

    let shown = line.api_get(&format!("/lines/{}", line.line_id)).await;
    assert_eq!(shown["bridge_kind"], "bluebubbles");
    assert_eq!(
        shown["capabilities"],
        json!({"imessage": true, "sms": true, "groups": true, "polls": false, "reactions": true, "typing": true, "read_receipts": true, "media": true, "mms": true,
               "replies": true, "edits": true, "unsend": true, "effects": true})
    );
    let listed = line.api_get("/lines").await.to_string();
    assert!(!listed.contains(BB_PASSWORD) && !listed.contains("hook_secret"));

    let hooks = line.fake.get("/control/webhooks").await;
    let hooks = hooks.as_array().expect("webhooks");
    assert_eq!(hooks.len(), 1, "one webhook, registered once: {hooks:?}");
    assert!(hooks[0]["url"].as_str().unwrap().contains(&line.hook_secret().await));

    // iMessage: delivered, then read, from the Mac's receipts.
    let id = line.send_text(FRIEND, "See you at 8").await;
    line.wait_status(&id, "read").await;
    // A number without iMessage goes to the SMS chat: delivered, never read.
    let sms = line.send_text(SMS_ONLY, "See you at 9").await;
    line.wait_status(&sms, "delivered").await;

    let sent = line.fake.sent().await;
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0]["tempGuid"], id.as_str());
    assert_eq!(sent[0]["chatGuid"], format!("iMessage;-;{FRIEND}"));
    assert_eq!(sent[0]["text"], "See you at 8");
    assert_eq!(sent[1]["chatGuid"], format!("SMS;-;{SMS_ONLY}"));
    let message = line.api_get(&format!("/messages/{sms}")).await;
    assert_eq!(message["channel"], "sms");

    // A second start registers nothing new.
    let mut line = line;
    line.kill().await;
    line.serve().await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(line.fake.get("/control/webhooks").await.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn an_imessage_to_the_mac_arrives_once_and_a_hook_without_the_secret_is_refused() {
    let line = DeviceLine::start(Kind::BlueBubbles, &[]).await;
    line.fake.control("/control/repeat-webhooks", json!({"times": 3})).await;
    line.fake.control("/control/inbound", json!({"from": FRIEND, "body": "Running late"})).await;
    let inbound = eventually(20, "the inbound iMessage", || async {
        let list = line.inbound().await;
        (!list.is_empty()).then_some(list)
    })
    .await;
    assert_eq!(inbound[0]["body"], "Running late");
    assert_eq!(inbound[0]["channel"], "imessage");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(line.inbound().await.len(), 1, "a repeated webhook changes nothing");

    let forged = json!({"type": "new-message", "data": {"guid": "forged", "text": "hi", "isFromMe": false,
                        "handle": {"address": FRIEND}, "chats": [{"guid": format!("iMessage;-;{FRIEND}")}]}})
    .to_string();
    assert_eq!(line.post_hook("secret=wrong", &[], &forged).await, 401);
    assert_eq!(line.post_hook("", &[], &forged).await, 401);
    assert_eq!(line.inbound().await.len(), 1, "nothing refused was stored");
}

#[tokio::test]
async fn a_card_is_a_vcf_attachment_and_a_poll_is_its_fallback_text_with_replies_as_votes() {
    let line = DeviceLine::start(Kind::BlueBubbles, &[]).await;
    let (status, card) =
        line.api_post("/contact-cards", json!({"to": FRIEND, "name": "Ann Lee", "phone": "+12015550177"})).await;
    assert_eq!(status, 202, "{card}");
    let card_id = card["message"]["id"].as_str().unwrap().to_string();
    line.wait_status(&card_id, "read").await;
    let sent = line.fake.sent().await;
    assert_eq!(sent[0]["attachment_name"], format!("{card_id}.vcf"));
    assert!(sent[0]["attachment_text"].as_str().unwrap().contains("FN:Ann Lee"), "{sent:?}");

    let (status, poll) =
        line.api_post("/polls", json!({"to": FRIEND, "question": "Lunch?", "options": ["Pizza", "Salad"]})).await;
    assert_eq!(status, 202, "{poll}");
    let poll_message = poll["message"]["id"].as_str().unwrap().to_string();
    let poll_id = poll["poll"]["id"].as_str().unwrap().to_string();
    line.wait_status(&poll_message, "read").await;
    let sent = line.fake.sent().await;
    // The card's caption (its `body`, the name by default) follows it as its own text.
    assert_eq!(sent[1]["tempGuid"], format!("{card_id}-caption"), "{sent:?}");
    assert_eq!(sent[1]["text"], "Ann Lee");
    let poll_sent = sent.iter().find(|s| s["tempGuid"] == poll_message.as_str()).expect("the poll went out");
    let text = poll_sent["text"].as_str().unwrap();
    assert!(text.contains("Lunch?") && text.contains("1. Pizza") && text.contains("2. Salad"), "{text}");

    line.fake.control("/control/inbound", json!({"from": FRIEND, "body": "2"})).await;
    let tally = eventually(20, "the reply to count as a vote", || async {
        let poll = line.api_get(&format!("/polls/{poll_id}")).await;
        (poll["total_votes"] == 1).then_some(poll)
    })
    .await;
    assert_eq!(tally["tally"][1]["votes"], 1, "{tally}");
}

#[tokio::test]
async fn a_group_is_created_on_the_mac_and_later_messages_and_replies_use_its_chat() {
    let line = DeviceLine::start(Kind::BlueBubbles, &[]).await;
    let (status, created) = line
        .api_post("/groups", json!({"participants": [FRIEND, "+12015550125"], "body": "Hi all", "name": "Trip"}))
        .await;
    assert_eq!(status, 201, "{created}");
    let group_id = created["group"]["id"].as_str().unwrap().to_string();
    let sent = line.fake.sent().await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    let chat = sent[0]["chatGuid"].as_str().expect("the new chat's guid").to_string();
    assert!(chat.contains(";+;"), "a group chat guid: {chat}");
    assert_eq!(sent[0]["addresses"], json!([FRIEND, "+12015550125"]));
    assert_eq!(sent[0]["text"], "Hi all");

    let (status, next) = line.api_post("/messages", json!({"conversation_id": group_id, "body": "Bring snacks"})).await;
    assert_eq!(status, 202, "{next}");
    let next_id = next["message"]["id"].as_str().unwrap().to_string();
    line.wait_status(&next_id, "delivered").await;
    let sent = line.fake.sent().await;
    assert_eq!(sent[1]["chatGuid"], chat.as_str());
    assert_eq!(sent[1]["tempGuid"], next_id.as_str());

    line.fake.control("/control/inbound", json!({"from": FRIEND, "body": "On it", "chat": chat})).await;
    let inbound = eventually(20, "the group reply", || async {
        let list = line.inbound().await;
        (!list.is_empty()).then_some(list)
    })
    .await;
    assert_eq!(inbound[0]["conversation_id"], group_id.as_str(), "{inbound:?}");
}

#[tokio::test]
async fn a_group_is_renamed_and_its_participants_changed_on_the_mac_and_changes_made_there_arrive() {
    const ADDED: &str = "+12015550127";
    let line = DeviceLine::start(Kind::BlueBubbles, &[]).await;
    let (status, created) = line
        .api_post("/groups", json!({"participants": [FRIEND, "+12015550125"], "body": "Hi all", "name": "Trip"}))
        .await;
    assert_eq!(status, 201, "{created}");
    let group_id = created["group"]["id"].as_str().unwrap().to_string();
    let chat = line.fake.sent().await[0]["chatGuid"].as_str().unwrap().to_string();
    let group_path = format!("/groups/{group_id}");

    let (status, renamed) = line.api_call(reqwest::Method::PATCH, &group_path, json!({"name": "Trip (Sat)"})).await;
    assert_eq!(status, 200, "{renamed}");
    assert_eq!(renamed["group"]["name"], "Trip (Sat)");
    let participants_path = format!("{group_path}/participants");
    let (status, changed) =
        line.api_post(&participants_path, json!({"add": [ADDED], "remove": ["+12015550125"]})).await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["group"]["participants"], json!([FRIEND, ADDED]));
    // One call per step, through the Private API, to the chat's guid.
    let calls: Vec<(String, String)> = line.fake.sent().await[1..]
        .iter()
        .map(|s| (s["action"].as_str().unwrap().to_string(), s["chatGuid"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(calls, [("rename".into(), chat.clone()), ("add".into(), chat.clone()), ("remove".into(), chat.clone())]);
    // A BlueBubbles line can change a name but not remove it.
    let (status, refused) = line.api_call(reqwest::Method::PATCH, &group_path, json!({"name": ""})).await;
    assert_eq!((status, refused["error"].as_str()), (502, Some("line_rejected")), "{refused}");

    // On their phones, someone renames the group, adds a friend, and the friend leaves again:
    // the Mac's webhooks update the group.
    line.fake.control("/control/group", json!({"chat": chat, "action": "rename", "name": "Renamed on a phone"})).await;
    line.fake.control("/control/group", json!({"chat": chat, "action": "add", "address": "+12015550129"})).await;
    let group = eventually(20, "the changes made on the phone", || async {
        let group = line.api_get(&group_path).await;
        let everyone = json!([FRIEND, ADDED, "+12015550129"]);
        (group["name"] == "Renamed on a phone" && group["participants"] == everyone).then_some(group)
    })
    .await;
    assert_eq!(group["state"], "created");
    line.fake.control("/control/group", json!({"chat": chat, "action": "leave", "address": "+12015550129"})).await;
    eventually(20, "the friend to have left", || async {
        (line.api_get(&group_path).await["participants"] == json!([FRIEND, ADDED])).then_some(())
    })
    .await;

    // The Mac's wait runs out (500) but the change happens: unknown, then applied once the chat shows it.
    line.fake.control("/control/mode", json!({"mode": "late", "delay_ms": 300})).await;
    let (status, late) = line.api_post(&participants_path, json!({"add": ["+12015550125"]})).await;
    assert_eq!(status, 202, "{late}");
    assert_eq!(late["change"]["status"], "unknown");
    eventually(20, "the late change to be settled", || async {
        let group = line.api_get(&group_path).await;
        (group["participants"] == json!([FRIEND, "+12015550125", ADDED])).then_some(())
    })
    .await;
    // Without the helper the Mac refuses.
    line.fake.control("/control/mode", json!({"mode": "accept"})).await;
    line.fake.control("/control/helper", json!({"connected": false})).await;
    let (status, refused) = line.api_call(reqwest::Method::PATCH, &group_path, json!({"name": "No helper"})).await;
    assert_eq!((status, refused["error"].as_str()), (502, Some("line_rejected")), "{refused}");

    // With it, the line leaves the chat.
    line.fake.control("/control/helper", json!({"connected": true})).await;
    let (status, left) = line.api_post(&format!("{group_path}/leave"), json!({})).await;
    assert_eq!((status, left["group"]["state"].as_str()), (200, Some("left")), "{left}");
    let last = line.fake.sent().await.last().cloned().unwrap();
    assert_eq!((last["action"].as_str(), last["chatGuid"].as_str()), (Some("leave"), Some(chat.as_str())));
}

#[tokio::test]
async fn a_change_the_mac_reports_while_msglines_call_still_runs_is_announced_once() {
    let line = DeviceLine::start(Kind::BlueBubbles, &[]).await;
    line.keep_events().await;
    let (status, created) = line
        .api_post("/groups", json!({"participants": [FRIEND, "+12015550125"], "body": "Hi all", "name": "Trip"}))
        .await;
    assert_eq!(status, 201, "{created}");
    let group_path = format!("/groups/{}", created["group"]["id"].as_str().unwrap());
    let chat = line.fake.sent().await[0]["chatGuid"].as_str().unwrap().to_string();
    let updates = "SELECT COUNT(*) FROM events WHERE type = 'messaging.group.updated'";
    let unattributed =
        "SELECT COUNT(*) FROM events WHERE type = 'messaging.group.updated' AND data LIKE '%\"change\":null%'";

    // The Mac's webhook for each step is answered before the call is: the group already shows
    // the change when the call settles it.
    line.fake.control("/control/mode", json!({"mode": "hook-first"})).await;
    let (status, renamed) = line.api_call(reqwest::Method::PATCH, &group_path, json!({"name": "Trip (Sat)"})).await;
    assert_eq!((status, renamed["group"]["name"].as_str()), (200, Some("Trip (Sat)")), "{renamed}");
    assert_eq!(line.count(updates).await, 1, "one event for the rename");
    // Two steps, each reported by the Mac with the chat's participants of that moment.
    let (status, changed) =
        line.api_post(&format!("{group_path}/participants"), json!({"add": ["+12015550127", "+12015550129"]})).await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["group"]["participants"], json!([FRIEND, "+12015550125", "+12015550127", "+12015550129"]));
    assert_eq!(line.count(updates).await, 2, "one event for the participants' change");
    // Both events name the change that made them.
    assert_eq!(line.count(unattributed).await, 0);

    // A change made on a phone is still announced, once, as no change of msgline's.
    line.fake.control("/control/group", json!({"chat": chat, "action": "rename", "name": "Renamed on a phone"})).await;
    eventually(20, "the rename made on a phone", || async {
        (line.api_get(&group_path).await["name"] == "Renamed on a phone").then_some(())
    })
    .await;
    assert_eq!((line.count(updates).await, line.count(unattributed).await), (3, 1));
}

#[tokio::test]
async fn without_the_private_api_helper_groups_are_refused_and_one_to_one_still_works() {
    let line = DeviceLine::start_with(Kind::BlueBubbles, &["--no-helper"], &[]).await;
    let shown = line.api_get(&format!("/lines/{}", line.line_id)).await;
    assert_eq!(shown["capabilities"]["groups"], false, "{shown}");
    let (status, refused) =
        line.api_post("/groups", json!({"participants": [FRIEND, "+12015550125"], "body": "Hi"})).await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"], "group_chats_unsupported");
    // Without the helper the server cannot say who has iMessage: msgline's usual rules apply.
    let id = line.send_text(FRIEND, "Still here").await;
    line.wait_status(&id, "delivered").await;
    assert_eq!(line.fake.sent().await.len(), 1);
    // Tapbacks and typing need the helper too: refused before the Mac is asked.
    let (status, sent) =
        line.api_post("/messages", json!({"to": FRIEND, "body": "Over iMessage", "channel": "imessage"})).await;
    assert_eq!(status, 202, "{sent}");
    let id = sent["message"]["id"].as_str().unwrap().to_string();
    line.wait_status(&id, "delivered").await;
    let (status, refused) = line.api_post(&format!("/messages/{id}/reactions"), json!({"reaction": "love"})).await;
    assert_eq!((status, refused["error"].as_str()), (409, Some("reactions_unsupported")), "{refused}");
    let conversation = line.api_get(&format!("/messages/{id}")).await["conversation_id"].as_str().unwrap().to_string();
    let (status, refused) = line.api_post(&format!("/conversations/{conversation}/typing"), json!({})).await;
    assert_eq!((status, refused["error"].as_str()), (409, Some("typing_unsupported")), "{refused}");
    assert_eq!(line.fake.sent().await.len(), 2);
}

#[tokio::test]
async fn tapbacks_typing_and_read_receipts_go_through_the_private_api_and_those_from_the_mac_arrive() {
    let line = DeviceLine::start(Kind::BlueBubbles, &[]).await;
    let (status, _) = line
        .api_post("/webhooks", json!({"url": "https://receiver.example/hook", "events": ["messaging.typing"]}))
        .await;
    assert_eq!(status, 201);
    let id = line.send_text(FRIEND, "See you at 8").await;
    line.wait_status(&id, "delivered").await;
    let guid = line.fake.sent().await[0]["guid"].as_str().unwrap().to_string();

    // A tapback on the message msgline sent names it by the guid the Mac gave it.
    let (status, answer) = line.api_post(&format!("/messages/{id}/reactions"), json!({"reaction": "love"})).await;
    assert_eq!(status, 202, "{answer}");
    let reaction = answer["message"]["id"].as_str().unwrap().to_string();
    line.wait_status(&reaction, "delivered").await;
    let sent = line.fake.sent().await;
    let tapbacks: Vec<_> = sent.iter().filter(|s| s["reaction"].is_string()).collect();
    assert_eq!(tapbacks.len(), 1, "{sent:?}");
    assert_eq!(tapbacks[0]["reaction"], "love");
    assert_eq!(tapbacks[0]["selectedMessageGuid"], guid.as_str());
    assert_eq!(tapbacks[0]["chatGuid"], format!("iMessage;-;{FRIEND}"));
    let (status, _) =
        line.api_call(reqwest::Method::DELETE, &format!("/messages/{id}/reactions/love"), json!({})).await;
    assert_eq!(status, 202);
    eventually(20, "the tapback taken back on the Mac", || async {
        line.fake.sent().await.iter().any(|s| s["reaction"] == "-love").then_some(())
    })
    .await;
    let shown = line.api_get(&format!("/messages/{id}")).await;
    assert_eq!(shown["reactions"], json!([]), "{shown}");

    // A tapback from the friend on that message arrives as a reaction on it.
    line.fake.control("/control/reaction", json!({"from": FRIEND, "target": guid, "reaction": "like"})).await;
    let arrived = eventually(20, "the tapback from the Mac", || async {
        line.inbound().await.into_iter().find(|m| m["kind"] == "reaction")
    })
    .await;
    assert_eq!(arrived["reaction"], json!({"type": "like", "target_message_id": id, "removed": false}));
    assert_eq!(arrived["body"], "Liked “See you at 8”");
    let shown = line.api_get(&format!("/messages/{id}")).await;
    assert_eq!(shown["reactions"][0]["from"], FRIEND, "{shown}");

    // A message that arrived is reacted to by its own guid.
    let inbound_guid = line.fake.control("/control/inbound", json!({"from": FRIEND, "body": "Running late"})).await;
    let inbound_guid = inbound_guid["guid"].as_str().unwrap().to_string();
    let received = eventually(20, "the inbound iMessage", || async {
        line.inbound().await.into_iter().find(|m| m["body"] == "Running late")
    })
    .await;
    let received_id = received["id"].as_str().unwrap();
    let (status, answer) =
        line.api_post(&format!("/messages/{received_id}/reactions"), json!({"reaction": "laugh"})).await;
    assert_eq!(status, 202, "{answer}");
    eventually(20, "the tapback on the message that arrived", || async {
        line.fake
            .sent()
            .await
            .into_iter()
            .find(|s| s["reaction"] == "laugh" && s["selectedMessageGuid"] == inbound_guid.as_str())
    })
    .await;

    // Typing through the Private API, hidden again by msgline; a read receipt for the chat.
    let conversation = received["conversation_id"].as_str().unwrap();
    let (status, answer) = line.api_post(&format!("/conversations/{conversation}/typing"), json!({})).await;
    assert_eq!(status, 204, "{answer}");
    let (status, answer) = line.api_post(&format!("/conversations/{conversation}/read"), json!({})).await;
    assert_eq!(status, 204, "{answer}");
    let chat = format!("iMessage;-;{FRIEND}");
    let signals = eventually(20, "the typing indicator hidden again", || async {
        let signals = line.fake.get("/control/signals").await;
        let kinds: Vec<String> =
            signals.as_array().unwrap().iter().map(|s| s["kind"].as_str().unwrap().to_string()).collect();
        kinds.contains(&"stop-typing".to_string()).then_some(signals)
    })
    .await;
    let signals = signals.as_array().unwrap();
    assert!(signals.iter().all(|s| s["chatGuid"] == chat.as_str()), "{signals:?}");
    let kinds: Vec<&str> = signals.iter().map(|s| s["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["typing", "read", "stop-typing"]);
    assert!(
        line.inbound().await.iter().filter(|m| m["conversation_id"] == conversation).all(|m| m["read_at"].is_string())
    );

    // The friend typing on their phone: messaging.typing, no message.
    let messages = line.count("SELECT COUNT(*) FROM messages").await;
    line.fake.control("/control/typing", json!({"from": FRIEND, "display": true})).await;
    eventually(20, "messaging.typing", || async {
        (line.count("SELECT COUNT(*) FROM events WHERE type = 'messaging.typing'").await == 1).then_some(())
    })
    .await;
    assert_eq!(line.count("SELECT COUNT(*) FROM messages").await, messages);
}

#[tokio::test]
async fn a_send_the_mac_reports_as_failed_is_failed_with_the_imessage_error() {
    let line = DeviceLine::start(Kind::BlueBubbles, &[]).await;
    line.fake.control("/control/mode", json!({"mode": "error"})).await;
    let id = line.send_text(FRIEND, "Will not go").await;
    let error = line.wait_status(&id, "failed").await.unwrap_or_default();
    assert!(error.contains("error 22"), "{error}");
}

#[tokio::test]
async fn a_send_that_times_out_but_went_through_is_settled_by_asking_the_mac_never_by_sending_again() {
    let line = DeviceLine::start(Kind::BlueBubbles, &[("MSGLINE_BRIDGE_TIMEOUT_MS", "500")]).await;
    line.fake.control("/control/mode", json!({"mode": "slow", "delay_ms": 3000})).await;
    let id = line.send_text(FRIEND, "Slow Mac").await;
    eventually(20, "the send to time out", || async {
        let sql = format!("SELECT COUNT(*) FROM delivery_attempts WHERE message_id = '{id}' AND outcome = 'timeout'");
        (line.count(&sql).await >= 1).then_some(())
    })
    .await;
    line.wait_status(&id, "read").await;
    let stats = line.fake.get("/control/stats").await;
    assert_eq!(stats["repeated_temp_guids"], 0, "{stats}");
    assert_eq!(line.fake.sent().await.len(), 1);
}

#[tokio::test]
async fn kill_9_in_the_middle_of_sends_loses_nothing_and_sends_nothing_twice() {
    crate::devices::kill_9_test(Kind::BlueBubbles).await;
}

#[tokio::test]
async fn files_go_to_the_mac_through_its_attachment_route_and_files_from_the_mac_arrive() {
    use base64::{Engine, engine::general_purpose::STANDARD};

    use crate::media::{file_server, jpeg, pdf, sha256};
    let line = DeviceLine::start(Kind::BlueBubbles, &[("MSGLINE_ALLOW_PRIVATE_TARGETS", "true")]).await;
    let (server, _) = file_server().await;
    let request = json!({"to": FRIEND, "body": "Your receipt",
                         "media_urls": [format!("{server}/receipt.pdf"), format!("{server}/photo.jpg")]});
    let (status, answer) = line.api_post("/messages", request).await;
    assert_eq!(status, 202, "{answer}");
    let id = answer["message"]["id"].as_str().unwrap().to_string();
    line.wait_status(&id, "delivered").await;
    // The message is delivered with its first file; the second and the caption follow.
    let sent = eventually(20, "two files, then the caption", || async {
        let sent = line.fake.sent().await;
        (sent.len() == 3).then_some(sent)
    })
    .await;
    assert_eq!(sent[0]["tempGuid"], id.as_str());
    assert_eq!(sent[0]["chatGuid"], format!("iMessage;-;{FRIEND}"));
    assert_eq!(sent[0]["attachment_mime"], "application/pdf");
    assert_eq!(sent[0]["attachment_sha256"], sha256(&pdf()));
    assert_eq!(sent[1]["tempGuid"], format!("{id}-2"));
    assert_eq!(sent[1]["attachment_sha256"], sha256(&jpeg()));
    assert_eq!(
        (sent[2]["tempGuid"].as_str(), sent[2]["text"].as_str()),
        (Some(&*format!("{id}-caption")), Some("Your receipt"))
    );

    // A file from the friend's phone: fetched from the Mac and listed on the message.
    let file = json!({"base64": STANDARD.encode(pdf()), "name": "menu.pdf", "mime": "application/pdf"});
    line.fake.control("/control/inbound", json!({"from": FRIEND, "body": "", "attachments": [file]})).await;
    let arrived = eventually(20, "the file from the Mac", || async {
        line.inbound().await.into_iter().find(|m| m["kind"] == "media")
    })
    .await;
    assert_eq!(arrived["body"], "");
    let files = arrived["attachments"].as_array().unwrap().clone();
    assert_eq!((files.len(), files[0]["filename"].as_str()), (1, Some("menu.pdf")));
    assert_eq!(files[0]["content_type"], "application/pdf");
    let got = reqwest::Client::new()
        .get(line.api(&format!("/attachments/{}", files[0]["id"].as_str().unwrap())))
        .bearer_auth(&line.key)
        .send()
        .await
        .unwrap();
    assert_eq!(got.bytes().await.unwrap().to_vec(), pdf());
}
