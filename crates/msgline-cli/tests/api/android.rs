//! Lines of kind `android-gateway` against the fake SMS Gateway for Android: send, lifecycle,
//! inbound, signatures, cards and refusals, a send that times out but went through, and `kill -9`.

use std::collections::HashSet;

use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::Sha256;

use crate::{
    devices::{DeviceLine, GW_PASSWORD, GW_USERNAME, Kind},
    helpers::eventually,
};

const FRIEND: &str = "+12015550123";

pub fn sign(key: &str, body: &str, timestamp: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    mac.update(timestamp.as_bytes());
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn an_android_line_registers_its_webhooks_sends_with_msglines_id_and_reports_delivery() {
    let line = DeviceLine::start(Kind::Android, &[]).await;
    assert_eq!(line.created["webhook_registered"], true, "{}", line.created);
    assert_eq!(line.created["bridge_kind"], "android-gateway");

    // The customer sees the kind and the capabilities, never a credential.
    let shown = line.api_get(&format!("/lines/{}", line.line_id)).await;
    assert_eq!(shown["bridge_kind"], "android-gateway");
    assert_eq!(
        shown["capabilities"],
        json!({"imessage": false, "sms": true, "groups": false, "polls": false, "reactions": false, "typing": false, "read_receipts": false, "media": false, "mms": false,
               "replies": false, "edits": false, "unsend": false, "effects": false})
    );
    let listed = line.api_get("/lines").await.to_string();
    assert!(!listed.contains(GW_PASSWORD) && !listed.contains("hook_secret") && !listed.contains("bridge_url"));

    // msgline registered one webhook per event, with a URL carrying the line's secret.
    let hooks = line.fake.get("/control/webhooks").await;
    let events: HashSet<String> =
        hooks.as_array().unwrap().iter().map(|h| h["event"].as_str().unwrap().to_string()).collect();
    let expected: HashSet<String> = ["sms:received", "sms:sent", "sms:delivered", "sms:failed", "mms:downloaded"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(events, expected);
    let secret = line.hook_secret().await;
    assert!(hooks.as_array().unwrap().iter().all(|h| h["url"].as_str().unwrap().contains(&secret)));

    let id = line.send_text(FRIEND, "Your table is ready").await;
    line.wait_status(&id, "delivered").await;
    let sent = line.fake.sent().await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["id"], id.as_str(), "the gateway's id is msgline's");
    assert_eq!(sent[0]["phoneNumbers"], json!([FRIEND]));
    assert_eq!(sent[0]["text"], "Your table is ready");
    // The delivery came by webhook: sent, then delivered.
    let message = line.api_get(&format!("/messages/{id}")).await;
    assert_eq!(message["channel"], "sms");
    assert!(message["sent_at"].is_string() && message["delivered_at"].is_string(), "{message}");
}

#[tokio::test]
async fn an_sms_to_the_phone_arrives_once_even_when_the_webhook_repeats() {
    let line = DeviceLine::start(Kind::Android, &[]).await;
    line.fake.control("/control/repeat-webhooks", json!({"times": 3})).await;
    line.fake.control("/control/inbound", json!({"from": FRIEND, "body": "Is it still open?"})).await;
    let inbound = eventually(20, "the inbound SMS", || async {
        let list = line.inbound().await;
        (!list.is_empty()).then_some(list)
    })
    .await;
    assert_eq!(inbound[0]["body"], "Is it still open?");
    assert_eq!(inbound[0]["channel"], "sms");
    // Repeats change nothing.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(line.inbound().await.len(), 1);
}

#[tokio::test]
async fn a_webhook_with_a_bad_signature_or_an_old_timestamp_is_refused_and_changes_nothing() {
    let line = DeviceLine::start(Kind::Android, &[]).await;
    let secret = line.hook_secret().await;
    let body = json!({
        "id": "evt-1", "webhookId": "w", "event": "sms:received", "deviceId": "d",
        "payload": {"messageId": "in-1", "sender": FRIEND, "phoneNumber": FRIEND, "message": "forged",
                    "receivedAt": "2026-11-25T00:00:00.000+00:00"}
    })
    .to_string();
    let now = (msgline::clock::now_ms() / 1000).to_string();
    let query = format!("secret={secret}");
    let good = sign(&line.signing_key().await, &body, &now);

    // Without the URL's secret, with a wrong key, with a stale timestamp, unsigned: 401.
    assert_eq!(line.post_hook("secret=wrong", &[("X-Signature", &good), ("X-Timestamp", &now)], &body).await, 401);
    let wrong = sign("not-the-key", &body, &now);
    assert_eq!(line.post_hook(&query, &[("X-Signature", &wrong), ("X-Timestamp", &now)], &body).await, 401);
    let old = (msgline::clock::now_ms() / 1000 - 3600).to_string();
    let old_signed = sign(&line.signing_key().await, &body, &old);
    assert_eq!(line.post_hook(&query, &[("X-Signature", &old_signed), ("X-Timestamp", &old)], &body).await, 401);
    assert_eq!(line.post_hook(&query, &[], &body).await, 401);
    assert!(line.inbound().await.is_empty(), "nothing refused was stored");

    // The phone signing with another key (its setting changed by hand) is refused too.
    line.fake.control("/control/signing-key", json!({"key": "changed-on-the-phone"})).await;
    line.fake.control("/control/inbound", json!({"from": FRIEND, "body": "signed with the wrong key"})).await;
    // A correctly signed one is applied.
    assert_eq!(line.post_hook(&query, &[("X-Signature", &good), ("X-Timestamp", &now)], &body).await, 200);
    let inbound = line.inbound().await;
    assert_eq!(inbound.len(), 1, "{inbound:?}");
    assert_eq!(inbound[0]["body"], "forged");
}

/// A webhook the phone would send for an SMS, signed with `key` now.
async fn post_signed(line: &DeviceLine, key: &str, id: &str, text: &str) -> u16 {
    let body = json!({
        "id": id, "webhookId": "w", "event": "sms:received", "deviceId": "d",
        "payload": {"messageId": id, "sender": FRIEND, "phoneNumber": FRIEND, "message": text,
                    "receivedAt": "2026-11-25T00:00:00.000+00:00"}
    })
    .to_string();
    let now = (msgline::clock::now_ms() / 1000).to_string();
    let query = format!("secret={}", line.hook_secret().await);
    line.post_hook(&query, &[("X-Signature", &sign(key, &body, &now)), ("X-Timestamp", &now)], &body).await
}

/// The signing key the phone holds (`GET /settings`, with the local server's credentials).
async fn phone_signing_key(line: &DeviceLine) -> String {
    let settings: serde_json::Value = reqwest::Client::new()
        .get(format!("{}/settings", line.fake.url))
        .basic_auth(GW_USERNAME, Some(GW_PASSWORD))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    settings["webhooks"]["signing_key"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_signing_key_is_not_the_url_secret_the_phone_lists_so_that_secret_cannot_sign() {
    let line = DeviceLine::start(Kind::Android, &[]).await;
    let (secret, key) = (line.hook_secret().await, line.signing_key().await);
    assert!(!key.is_empty() && key != secret, "two independent secrets");
    assert_eq!(phone_signing_key(&line).await, key, "the phone signs with the line's signing key");
    // The phone shows its webhooks' URLs to anyone with its credentials: they carry the URL
    // secret only.
    let hooks = line.fake.get("/control/webhooks").await.to_string();
    assert!(hooks.contains(&secret) && !hooks.contains(&key), "{hooks}");

    // The URL secret as the signing key: refused. The signing key: taken.
    assert_eq!(post_signed(&line, &secret, "in-forged", "signed with the URL secret").await, 401);
    assert!(line.inbound().await.is_empty(), "nothing refused was stored");
    assert_eq!(post_signed(&line, &key, "in-1", "signed with the key").await, 200);
    line.fake.control("/control/inbound", json!({"from": FRIEND, "body": "from the phone"})).await;
    let inbound = eventually(20, "both messages", || async {
        let list = line.inbound().await;
        (list.len() == 2).then_some(list)
    })
    .await;
    assert_eq!(inbound[0]["body"], "from the phone");
}

#[tokio::test]
async fn a_line_from_before_the_signing_key_gets_one_at_the_next_start_and_its_url_secret_stops_signing() {
    let mut line = DeviceLine::start(Kind::Android, &[]).await;
    line.kill().await;
    // As an older msgline left it: no signing key of its own, the phone signing with the URL's.
    let secret = line.hook_secret().await;
    let mut settings = line.settings().await;
    settings.as_object_mut().unwrap().remove("signing_key");
    line.write_settings(&settings).await;
    line.fake.control("/control/signing-key", json!({"key": secret})).await;

    line.serve().await;
    let key = line.signing_key().await;
    assert!(!key.is_empty() && key != secret, "a key of its own");
    assert_eq!(phone_signing_key(&line).await, key, "set on the phone when msgline connected");
    assert_eq!(post_signed(&line, &secret, "in-forged", "signed with the URL secret").await, 401);
    line.fake.control("/control/inbound", json!({"from": FRIEND, "body": "after the upgrade"})).await;
    let arrived = eventually(20, "the SMS", || async { line.inbound().await.into_iter().next() }).await;
    assert_eq!(arrived["body"], "after the upgrade");
}

#[tokio::test]
async fn of_two_instances_giving_a_line_a_signing_key_at_once_the_first_stored_wins() {
    let app = crate::helpers::spawn_app().await;
    let line_id = app.create_line_id("+12015550100", Some(&app.org)).await;
    let line = msgline::testing::db::lines::get(app.db(), &line_id).await.unwrap().unwrap();
    assert_eq!(line.bridge_settings.signing_key, "", "a line without one, as an older msgline made it");
    let adopt = |fresh: &'static str| msgline::testing::db::lines::adopt_signing_key(app.db(), &line_id, fresh);
    assert_eq!(adopt("mls_first").await.unwrap(), "mls_first");
    assert_eq!(adopt("mls_second").await.unwrap(), "mls_first", "the later one learns the stored key");
    let settings = msgline::testing::db::lines::get(app.db(), &line_id).await.unwrap().unwrap().bridge_settings;
    assert_eq!(settings.hook_secret, line.bridge_settings.hook_secret, "the URL secret is kept");
}

#[tokio::test]
async fn cards_go_as_text_and_polls_and_groups_are_refused_with_clear_errors() {
    let line = DeviceLine::start(Kind::Android, &[]).await;
    let (status, card) =
        line.api_post("/contact-cards", json!({"to": FRIEND, "name": "Ann Lee", "phone": "+12015550177"})).await;
    assert_eq!(status, 202, "{card}");
    let id = card["message"]["id"].as_str().unwrap().to_string();
    line.wait_status(&id, "delivered").await;
    let sent = line.fake.sent().await;
    assert!(sent[0]["text"].as_str().unwrap().contains("Ann Lee: +12015550177"), "{sent:?}");

    let (status, poll) =
        line.api_post("/polls", json!({"to": FRIEND, "question": "Lunch?", "options": ["Yes", "No"]})).await;
    assert_eq!(status, 400, "{poll}");
    assert_eq!(poll["error"], "poll_requires_imessage", "{poll}");
    let (status, group) =
        line.api_post("/groups", json!({"participants": [FRIEND, "+12015550124"], "body": "Hi all"})).await;
    assert_eq!(status, 409, "{group}");
    assert_eq!(group["error"], "group_chats_unsupported", "{group}");
    assert_eq!(line.fake.sent().await.len(), 1, "nothing refused reached the phone");
}

#[tokio::test]
async fn a_message_the_phone_cannot_send_is_failed_with_its_reason() {
    let line = DeviceLine::start(Kind::Android, &[]).await;
    line.fake.control("/control/mode", json!({"mode": "fail", "reason": "RESULT_ERROR_NO_SERVICE"})).await;
    let id = line.send_text(FRIEND, "Anyone there?").await;
    let error = line.wait_status(&id, "failed").await;
    assert!(error.unwrap_or_default().contains("RESULT_ERROR_NO_SERVICE"));
}

#[tokio::test]
async fn a_send_that_times_out_but_went_through_is_unknown_then_settled_without_a_second_send() {
    let line = DeviceLine::start(Kind::Android, &[("MSGLINE_BRIDGE_TIMEOUT_MS", "500")]).await;
    line.fake.control("/control/mode", json!({"mode": "slow", "delay_ms": 3000})).await;
    let id = line.send_text(FRIEND, "Slow network").await;
    eventually(20, "the send to time out", || async {
        let attempts = line
            .count(&format!("SELECT COUNT(*) FROM delivery_attempts WHERE message_id = '{id}' AND outcome = 'timeout'"))
            .await;
        (attempts >= 1).then_some(())
    })
    .await;
    line.wait_status(&id, "delivered").await;
    let stats = line.fake.get("/control/stats").await;
    assert_eq!(stats["repeated_ids"], 0, "msgline never posted the message again: {stats}");
    assert_eq!(line.fake.sent().await.len(), 1);
}

#[tokio::test]
async fn kill_9_in_the_middle_of_sends_loses_nothing_and_sends_nothing_twice() {
    crate::devices::kill_9_test(Kind::Android).await;
}

#[tokio::test]
async fn an_mms_the_phone_downloaded_arrives_with_its_files() {
    use base64::{Engine, engine::general_purpose::STANDARD};

    use crate::media::{jpeg, pdf};
    let line = DeviceLine::start(Kind::Android, &[]).await;
    let parts = json!([{"base64": STANDARD.encode(jpeg()), "name": "IMG_0042.jpg", "content_type": "image/jpeg"},
                       {"base64": STANDARD.encode(pdf()), "content_type": "application/pdf"}]);
    line.fake.control("/control/mms", json!({"from": FRIEND, "body": "the menu", "attachments": parts})).await;
    let arrived = eventually(20, "the MMS", || async { line.inbound().await.into_iter().next() }).await;
    assert_eq!((arrived["kind"].as_str(), arrived["channel"].as_str()), (Some("media"), Some("sms")));
    assert_eq!(arrived["body"], "the menu");
    let files = arrived["attachments"].as_array().unwrap().clone();
    assert_eq!(files.len(), 2, "{arrived}");
    assert_eq!(
        (files[0]["content_type"].as_str(), files[0]["filename"].as_str()),
        (Some("image/jpeg"), Some("IMG_0042.jpg"))
    );
    assert_eq!(files[1]["content_type"], "application/pdf");
    let got = reqwest::Client::new()
        .get(line.api(&format!("/attachments/{}", files[0]["id"].as_str().unwrap())))
        .bearer_auth(&line.key)
        .send()
        .await
        .unwrap();
    assert_eq!(got.bytes().await.unwrap().to_vec(), jpeg());
}

#[tokio::test]
async fn tapbacks_typing_and_files_are_refused_on_an_sms_line_and_a_tapbacks_words_are_read_as_one() {
    let line = DeviceLine::start(Kind::Android, &[("MSGLINE_ALLOW_PRIVATE_TARGETS", "true")]).await;
    let id = line.send_text(FRIEND, "Your table is ready").await;
    line.wait_status(&id, "delivered").await;
    let conversation = line.api_get(&format!("/messages/{id}")).await["conversation_id"].as_str().unwrap().to_string();
    let (status, refused) = line.api_post(&format!("/messages/{id}/reactions"), json!({"reaction": "love"})).await;
    assert_eq!((status, refused["error"].as_str()), (400, Some("reaction_requires_imessage")), "{refused}");
    let (status, refused) = line.api_post(&format!("/conversations/{conversation}/typing"), json!({})).await;
    assert_eq!((status, refused["error"].as_str()), (400, Some("typing_requires_imessage")), "{refused}");
    let (files, _) = crate::media::file_server().await;
    let media = json!({"to": FRIEND, "media_urls": [format!("{files}/receipt.pdf")]});
    let (status, refused) = line.api_post("/messages", media).await;
    assert_eq!((status, refused["error"].as_str()), (409, Some("media_unsupported")), "{refused}");
    // Marking the conversation read marks it; SMS has no receipt to send.
    let (status, _) = line.api_post(&format!("/conversations/{conversation}/read"), json!({})).await;
    assert_eq!(status, 204);
    assert_eq!(line.fake.sent().await.len(), 1, "nothing refused reached the phone");

    // An iPhone's tapback reaches an Android phone as words: stored as a reaction to the text.
    line.fake.control("/control/inbound", json!({"from": FRIEND, "body": "Loved “Your table is ready”"})).await;
    let arrived = eventually(20, "the tapback's words", || async { line.inbound().await.into_iter().next() }).await;
    assert_eq!(arrived["kind"], "reaction");
    assert_eq!(arrived["reaction"], json!({"type": "love", "target_message_id": id, "removed": false}));
    let shown = line.api_get(&format!("/messages/{id}")).await;
    assert_eq!(shown["reactions"][0]["from"], FRIEND, "{shown}");
}
