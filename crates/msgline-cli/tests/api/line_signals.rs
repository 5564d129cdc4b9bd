//! Each kind of line stops on its own device's words (lines::signals, docs/lines.md): an Android
//! phone at its sending limit flags its line at once, a run of generic failures flags it, a phone
//! without signal does not; a run of failed iMessages flags a BlueBubbles line, a recipient
//! without iMessage does not. Against the fakes of SMS Gateway for Android and BlueBubbles Server.

use std::time::Duration;

use serde_json::{Value, json};

use crate::{
    devices::{DeviceLine, Kind},
    helpers::eventually,
};

const FRIEND: &str = "+12015550123";
/// The app's words (`MessagesService`: "Send result: " and the result's name and description).
const LIMIT: &str = "Send result: RESULT_ERROR_LIMIT_EXCEEDED (Failed because we reached the sending queue limit)";
const GENERIC: &str = "Send result: RESULT_ERROR_GENERIC_FAILURE (Generic failure cause)";
const NO_SERVICE: &str = "Send result: RESULT_ERROR_NO_SERVICE (Failed because service is currently unavailable)";

async fn health(line: &DeviceLine) -> Value {
    line.api_get(&format!("/lines/{}", line.line_id)).await
}

/// Sends one text and waits for it to end `failed` or `sent` (or later).
async fn send_and_settle(line: &DeviceLine, body: &str, outcome: &str) {
    let id = line.send_text(FRIEND, body).await;
    line.wait_status(&id, outcome).await;
}

/// Waits for the line to be flagged; the line as shown then.
async fn until_flagged(line: &DeviceLine) -> Value {
    eventually(30, "the line to be flagged", || async {
        let now = health(line).await;
        (now["health"] == "flagged").then_some(now)
    })
    .await
}

async fn android_mode(line: &DeviceLine, mode: &str, reason: &str) {
    line.fake.control("/control/mode", json!({"mode": mode, "reason": reason})).await;
}

#[tokio::test]
async fn an_android_phone_at_its_sending_limit_flags_its_line_at_once_and_later_sends_wait_for_a_resume() {
    let line = DeviceLine::start(Kind::Android, &[]).await;
    android_mode(&line, "fail", LIMIT).await;
    send_and_settle(&line, "one too many", "failed").await;
    let flagged = until_flagged(&line).await;
    assert!(flagged["health_reason"].as_str().unwrap().contains("RESULT_ERROR_LIMIT_EXCEEDED"), "{flagged}");

    // The phone would send again, but the line stays stopped until an operator resumes it.
    android_mode(&line, "accept", "").await;
    let handed = line.fake.sent().await.len();
    let waiting = line.send_text(FRIEND, "after the limit").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(line.status(&waiting).await.0, "queued");
    assert_eq!(line.fake.sent().await.len(), handed, "a flagged line sends nothing");

    let (status, _) = line.api_post(&format!("/lines/{}/resume", line.line_id), json!({})).await;
    assert_eq!(status, 200);
    line.wait_status(&waiting, "sent").await;
}

#[tokio::test]
async fn a_run_of_generic_failures_flags_an_android_line_and_no_signal_or_a_send_between_does_not() {
    let line = DeviceLine::start(Kind::Android, &[]).await;
    // A phone without signal says nothing about its SIM.
    android_mode(&line, "fail", NO_SERVICE).await;
    for i in 0..5 {
        send_and_settle(&line, &format!("no signal {i}"), "failed").await;
    }
    assert_eq!(health(&line).await["health"], "active");

    // Four generic failures, then a send that goes: the run starts again.
    android_mode(&line, "fail", GENERIC).await;
    for i in 0..4 {
        send_and_settle(&line, &format!("generic {i}"), "failed").await;
    }
    android_mode(&line, "accept", "").await;
    send_and_settle(&line, "this one goes", "sent").await;
    android_mode(&line, "fail", GENERIC).await;
    for i in 0..4 {
        send_and_settle(&line, &format!("generic again {i}"), "failed").await;
    }
    assert_eq!(health(&line).await["health"], "active", "four in a row since the last send that went");

    send_and_settle(&line, "the fifth in a row", "failed").await;
    let flagged = until_flagged(&line).await;
    let reason = flagged["health_reason"].as_str().unwrap();
    assert!(reason.contains("5 sends in a row") && reason.contains("RESULT_ERROR_GENERIC_FAILURE"), "{reason}");
}

#[tokio::test]
async fn a_run_of_failed_imessages_flags_a_bluebubbles_line_and_a_recipient_without_imessage_does_not() {
    let line = DeviceLine::start(Kind::BlueBubbles, &[]).await;
    // Error 22: the recipient is not registered with iMessage.
    line.fake.control("/control/mode", json!({"mode": "error", "code": 22})).await;
    for i in 0..5 {
        send_and_settle(&line, &format!("not on iMessage {i}"), "failed").await;
    }
    assert_eq!(health(&line).await["health"], "active");

    line.fake.control("/control/mode", json!({"mode": "error", "code": 38})).await;
    for i in 0..4 {
        send_and_settle(&line, &format!("refused {i}"), "failed").await;
    }
    assert_eq!(health(&line).await["health"], "active");
    send_and_settle(&line, "refused again", "failed").await;
    let flagged = until_flagged(&line).await;
    assert!(flagged["health_reason"].as_str().unwrap().contains("error 38"), "{flagged}");

    // Later sends wait on the flagged line: the Mac is not called.
    line.fake.control("/control/mode", json!({"mode": "accept"})).await;
    let handed = line.fake.sent().await.len();
    let waiting = line.send_text(FRIEND, "held").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(line.status(&waiting).await.0, "queued");
    assert_eq!(line.fake.sent().await.len(), handed);
}
