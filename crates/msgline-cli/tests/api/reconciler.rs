//! The reconciler: a line's answer to "what became of this message / group" settles it only
//! when the protocol lets that answer settle it; any other answer means "ask again later".

use std::time::Duration;

use serde_json::json;

use crate::{
    helpers::{eventually, spawn_app_with},
    simline::LineSpec,
};

/// The simulator takes sends without answering and, with these flags, reports nothing by
/// callback within the test: only the reconciler's lookups can settle a message.
const SILENT: &[&str] = &["--mode", "timeout", "--late-report-ms", "600000"];

#[tokio::test]
async fn a_lookup_answer_that_settles_nothing_leaves_the_message_unknown_and_asked_again() {
    let app = spawn_app_with(|c| c.bridge_timeout_ms = 300).await;
    let org = app.org.clone();
    let line = app.sim_line(LineSpec { e164: "+12015550100", org: Some(&org), sim_args: SILENT, start: true }).await;
    for answer in ["queued", "unknown", "received", "pending"] {
        line.control("/control/mode", json!({"lookup_status": answer})).await;
        let sent = app
            .post("/messages", &app.org.key, json!({"to": "+12015550123", "body": format!("asked: {answer}")}))
            .await
            .expect(202);
        let id = sent["message"]["id"].as_str().unwrap().to_string();
        app.wait_for_message(&app.org.key, &id, "unknown", |m| m["status"] == "unknown").await;
        // The first asks come a second apart: several have been answered by now.
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let message = app.get(&format!("/messages/{id}"), &app.org.key).await.expect(200);
        assert_eq!(message["status"], "unknown", "after the line answered {answer:?}");
        assert_eq!(message["delivery_unknown"], true);

        // The line tells the truth again: the next ask settles the message.
        line.control("/control/mode", json!({"lookup_status": ""})).await;
        let settled = app.wait_for_message(&app.org.key, &id, "delivered", |m| m["status"] == "delivered").await;
        assert_eq!(settled["delivery_unknown"], false, "after the line answered {answer:?}");
        assert_eq!(line.sent_with_id(&id).await.len(), 1, "asking never sends again");
    }
}

#[tokio::test]
async fn a_group_lookup_answer_other_than_created_or_failed_leaves_the_group_unknown_and_asked_again() {
    let app = spawn_app_with(|c| c.bridge_timeout_ms = 300).await;
    let org = app.org.clone();
    let line = app.sim_line(LineSpec { e164: "+12015550100", org: Some(&org), sim_args: SILENT, start: true }).await;
    line.control("/control/mode", json!({"lookup_status": "creating"})).await;
    let body = json!({"participants": ["+12015550123", "+12015550124"], "body": "Hi all"});
    let created = app.post("/groups", &app.org.key, body).await.expect(202);
    assert_eq!(created["group"]["state"], "unknown");
    let id = created["group"]["id"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let group = app.get(&format!("/groups/{id}"), &app.org.key).await.expect(200);
    assert_eq!(group["state"], "unknown", "a group the line calls `creating` has not failed");

    line.control("/control/mode", json!({"lookup_status": ""})).await;
    eventually(20, "the group to be created", || async {
        let group = app.get(&format!("/groups/{id}"), &app.org.key).await.expect(200);
        (group["state"] == "created").then_some(())
    })
    .await;
}
