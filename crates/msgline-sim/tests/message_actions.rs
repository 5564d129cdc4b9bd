//! The simulated line's replies, effects, edits and unsends, driven over real HTTP: msgline's
//! calls on one side, the control API on the other, and a small receiver for its callbacks.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{Json, Router, extract::State, routing::post};
use msgline_sim::{Mode, SimConfig};
use serde_json::{Value, json};

/// A running simulated line and what its callbacks delivered.
struct TestLine {
    base: String,
    http: reqwest::Client,
    callbacks: Arc<Mutex<Vec<Value>>>,
}

type Received = Arc<Mutex<Vec<Value>>>;

/// Records every callback event (a callback carries an array of them).
async fn receive(State(received): State<Received>, Json(events): Json<Value>) -> Json<Value> {
    let events = events.as_array().cloned().unwrap_or_else(|| vec![events]);
    received.lock().unwrap().extend(events);
    Json(json!({"applied": 1, "duplicates": 0}))
}

/// Starts a callback receiver and a simulated line reporting to it, both on port 0.
async fn spawn_line(config: SimConfig) -> TestLine {
    let callbacks: Received = Arc::default();
    let receiver = Router::new().route("/events", post(receive)).with_state(callbacks.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let callback_url = format!("http://{}/events", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, receiver).await });

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let listen = listener.local_addr().unwrap().to_string();
    let config = SimConfig {
        listen: listen.clone(),
        callback_url: Some(callback_url),
        step: Duration::from_millis(1),
        ..config
    };
    let router = msgline_sim::router(config).unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    TestLine { base: format!("http://{listen}"), http: reqwest::Client::new(), callbacks }
}

impl TestLine {
    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let answer = self.http.post(format!("{}{path}", self.base)).json(&body).send().await.unwrap();
        (answer.status().as_u16(), answer.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let answer = self.http.get(format!("{}{path}", self.base)).send().await.unwrap();
        (answer.status().as_u16(), answer.json().await.unwrap_or(Value::Null))
    }

    /// msgline hands the line a text to send.
    async fn send(&self, id: &str, channel: &str) {
        let body = json!({"id": id, "to": ["+12015550123"], "channel": channel, "kind": "text", "body": "Hello"});
        let (status, answer) = self.post("/v1/messages", body).await;
        assert_eq!((status, answer["status"].as_str()), (202, Some("accepted")), "{answer}");
    }

    async fn edit(&self, message_id: &str, action_id: &str, body: &str) -> (u16, Value) {
        let request = json!({"id": action_id, "message_id": message_id, "body": body});
        self.post(&format!("/v1/messages/{message_id}/edit"), request).await
    }

    async fn unsend(&self, message_id: &str, action_id: &str) -> (u16, Value) {
        let request = json!({"id": action_id, "message_id": message_id});
        self.post(&format!("/v1/messages/{message_id}/unsend"), request).await
    }

    async fn action_status(&self, message_id: &str, action_id: &str) -> (u16, Value) {
        self.get(&format!("/v1/messages/{message_id}/actions/{action_id}")).await
    }

    /// The sent log's entries of one kind.
    async fn sent(&self, kind: &str) -> Vec<Value> {
        let (_, log) = self.get("/control/sent").await;
        log.as_array().unwrap().iter().filter(|entry| entry["kind"] == kind).cloned().collect()
    }

    /// The callbacks of one type received so far.
    fn callbacks_of(&self, kind: &str) -> Vec<Value> {
        self.callbacks.lock().unwrap().iter().filter(|event| event["type"] == kind).cloned().collect()
    }
}

#[tokio::test]
async fn an_edit_is_applied_once_logged_and_looked_up_as_applied() {
    let line = spawn_line(SimConfig::default()).await;
    line.send("msg_1", "imessage").await;

    let (status, answer) = line.edit("msg_1", "mac_1", "Hello again").await;
    assert_eq!((status, answer), (200, json!({"status": "accepted"})));
    let (status, again) = line.edit("msg_1", "mac_1", "Hello again").await;
    assert_eq!((status, again), (200, json!({"status": "accepted"})));

    let edits = line.sent("edit").await;
    assert_eq!(edits.len(), 1, "a repeated action id is not applied again: {edits:?}");
    assert_eq!(edits[0]["id"], "mac_1");
    assert_eq!(edits[0]["target"], "msg_1");
    assert_eq!(edits[0]["body"], "Hello again");
    assert_eq!(edits[0]["to"], json!(["+12015550123"]));
    let (status, lookup) = line.action_status("msg_1", "mac_1").await;
    assert_eq!((status, lookup), (200, json!({"id": "mac_1", "status": "applied"})));
    let (_, stats) = line.get("/control/stats").await;
    assert_eq!(stats["repeated_ids"], 1);
}

#[tokio::test]
async fn an_unsent_message_cannot_be_unsent_or_edited_again() {
    let line = spawn_line(SimConfig::default()).await;
    line.send("msg_1", "imessage").await;

    let (status, _) = line.unsend("msg_1", "mac_1").await;
    assert_eq!(status, 200);
    let unsends = line.sent("unsend").await;
    assert_eq!(unsends.len(), 1);
    assert_eq!((&unsends[0]["id"], &unsends[0]["target"]), (&json!("mac_1"), &json!("msg_1")));

    let (status, answer) = line.edit("msg_1", "mac_2", "Too late").await;
    assert_eq!((status, answer["reason"].as_str()), (422, Some("the message was unsent")));
    let (status, answer) = line.unsend("msg_1", "mac_3").await;
    assert_eq!((status, answer["status"].as_str()), (422, Some("rejected")));
}

#[tokio::test]
async fn an_action_on_a_message_the_line_never_sent_is_refused_and_looked_up_as_failed() {
    let line = spawn_line(SimConfig::default()).await;

    let (status, answer) = line.edit("msg_unknown", "mac_1", "Hi").await;
    assert_eq!(status, 422);
    assert_eq!(answer, json!({"status": "rejected", "reason": "the line has no such message to edit"}));
    let (status, lookup) = line.action_status("msg_unknown", "mac_1").await;
    assert_eq!((status, lookup["status"].as_str()), (200, Some("failed")));
    let (status, _) = line.action_status("msg_unknown", "mac_never").await;
    assert_eq!(status, 404, "an action the line never received");
}

#[tokio::test]
async fn an_sms_cannot_be_edited_or_unsent() {
    let line = spawn_line(SimConfig::default()).await;
    line.send("msg_1", "sms").await;

    let (status, answer) = line.unsend("msg_1", "mac_1").await;
    assert_eq!((status, answer["status"].as_str()), (422, Some("rejected")));
    assert!(line.sent("unsend").await.is_empty());
}

#[tokio::test]
async fn a_line_without_message_actions_says_so_and_refuses_edits() {
    let line = spawn_line(SimConfig::default()).await;
    line.send("msg_1", "imessage").await;
    let capability_flags = |answer: &Value| {
        ["replies", "edits", "unsend", "effects"].map(|name| answer["capabilities"][name].as_bool().unwrap())
    };
    let (_, capabilities) = line.get("/v1/capabilities").await;
    assert_eq!(capability_flags(&capabilities), [true; 4]);

    let (_, mode) = line.post("/control/mode", json!({"message_actions": false})).await;
    assert_eq!(mode["message_actions"], false);
    let (_, capabilities) = line.get("/v1/capabilities").await;
    assert_eq!(capability_flags(&capabilities), [false; 4]);
    let (status, answer) = line.edit("msg_1", "mac_1", "Hi").await;
    assert_eq!((status, answer["reason"].as_str()), (422, Some("this device cannot edit or unsend messages")));

    line.post("/control/mode", json!({"message_actions": true})).await;
    let (_, capabilities) = line.get("/v1/capabilities").await;
    assert_eq!(capability_flags(&capabilities), [true; 4]);
    let (status, _) = line.edit("msg_1", "mac_2", "Hi").await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_blocked_line_refuses_an_action_and_takes_it_once_unblocked() {
    let line = spawn_line(SimConfig::default()).await;
    line.send("msg_1", "imessage").await;

    line.post("/control/mode", json!({"blocked": true})).await;
    let (status, answer) = line.edit("msg_1", "mac_1", "Hi").await;
    assert_eq!((status, answer["error"].as_str()), (422, Some("line_blocked")));
    let (status, _) = line.action_status("msg_1", "mac_1").await;
    assert_eq!(status, 404, "nothing was done, so nothing is remembered");

    line.post("/control/mode", json!({"blocked": false, "offline": true})).await;
    let (status, _) = line.edit("msg_1", "mac_1", "Hi").await;
    assert_eq!(status, 503);
    let (status, _) = line.action_status("msg_1", "mac_1").await;
    assert_eq!(status, 503);

    line.post("/control/mode", json!({"offline": false})).await;
    let (status, _) = line.edit("msg_1", "mac_1", "Hi").await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn in_reject_mode_an_action_is_refused() {
    let line = spawn_line(SimConfig::default()).await;
    line.send("msg_1", "imessage").await;

    line.post("/control/mode", json!({"mode": "reject"})).await;
    let (status, answer) = line.unsend("msg_1", "mac_1").await;
    assert_eq!((status, answer["reason"].as_str()), (422, Some("the simulated line refused the unsend")));
    let (_, lookup) = line.action_status("msg_1", "mac_1").await;
    assert_eq!(lookup["status"], "failed");
}

#[tokio::test]
async fn in_timeout_mode_an_action_is_applied_but_not_answered_in_time() {
    let line = spawn_line(SimConfig::default()).await;
    line.send("msg_1", "imessage").await;

    line.post("/control/mode", json!({"mode": Mode::Timeout})).await;
    let call = line
        .http
        .post(format!("{}/v1/messages/msg_1/edit", line.base))
        .json(&json!({"id": "mac_1", "message_id": "msg_1", "body": "Hi"}))
        .timeout(Duration::from_millis(300))
        .send()
        .await;
    assert!(call.is_err_and(|error| error.is_timeout()), "the call is never answered in time");
    let (status, lookup) = line.action_status("msg_1", "mac_1").await;
    assert_eq!((status, lookup["status"].as_str()), (200, Some("applied")));
    assert_eq!(line.sent("edit").await.len(), 1);
}

#[tokio::test]
async fn a_malformed_action_is_answered_400_and_not_remembered() {
    let line = spawn_line(SimConfig::default()).await;
    line.send("msg_1", "imessage").await;

    let (status, _) = line.post("/v1/messages/msg_1/edit", json!({"id": "mac_1", "message_id": "msg_1"})).await;
    assert_eq!(status, 400, "an edit without its text");
    let (status, _) = line.post("/v1/messages/msg_1/unsend", json!({"id": "mac_1", "message_id": "msg_2"})).await;
    assert_eq!(status, 400, "the body names another message");
    let (status, _) = line.action_status("msg_1", "mac_1").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_sends_reply_to_effect_and_subject_show_in_the_sent_log() {
    let line = spawn_line(SimConfig::default()).await;
    let body = json!({
        "id": "msg_2", "to": ["+12015550123"], "channel": "imessage", "kind": "text", "body": "Yes",
        "reply_to": "sim-in-0", "effect": "slam", "subject": "Plans"
    });
    line.post("/v1/messages", body).await;
    line.send("msg_3", "imessage").await;

    let texts = line.sent("text").await;
    assert_eq!(texts[0]["reply_to"], "sim-in-0");
    assert_eq!(texts[0]["effect"], "slam");
    assert_eq!(texts[0]["subject"], "Plans");
    for field in ["reply_to", "effect", "subject", "target"] {
        assert!(texts[1].get(field).is_none(), "{field} is left out when absent: {}", texts[1]);
    }
}

#[tokio::test]
async fn the_person_replies_edits_and_unsends_by_callback() {
    let line = spawn_line(SimConfig::default()).await;

    let (status, _) =
        line.post("/control/inbound", json!({"from": "+12015550123", "body": "Yes", "reply_to": "msg_1"})).await;
    assert_eq!(status, 200);
    let (status, answer) = line.post("/control/edit", json!({"message_id": "msg_9", "body": "Yes!"})).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer["event_id"].is_string());
    let (status, _) = line.post("/control/unsend", json!({"message_id": "msg_9"})).await;
    assert_eq!(status, 200);

    assert_eq!(line.callbacks_of("message.inbound")[0]["data"]["reply_to"], "msg_1");
    assert_eq!(line.callbacks_of("message.edited")[0]["data"], json!({"message_id": "msg_9", "body": "Yes!"}));
    assert_eq!(line.callbacks_of("message.unsent")[0]["data"], json!({"message_id": "msg_9"}));
    let ids: Vec<Value> = line.callbacks.lock().unwrap().iter().map(|event| event["id"].clone()).collect();
    assert_eq!(ids.len(), 3);
    assert!(ids[0] != ids[1] && ids[1] != ids[2], "each callback has its own id: {ids:?}");
}

#[tokio::test]
async fn an_edit_or_unsend_control_without_its_fields_is_a_400() {
    let line = spawn_line(SimConfig::default()).await;

    for (path, body) in [
        ("/control/edit", json!({"body": "Yes!"})),
        ("/control/edit", json!({"message_id": "msg_9"})),
        ("/control/unsend", json!({})),
        ("/control/unsend", json!({"message_id": " "})),
    ] {
        let (status, answer) = line.post(path, body.clone()).await;
        assert_eq!(status, 400, "{path} {body}");
        assert!(answer["error"].as_str().is_some_and(|error| error.contains("required")), "{answer}");
    }
    assert!(line.callbacks.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_restarted_line_remembers_its_actions() {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let journal = std::env::temp_dir().join(format!("msgline-sim-actions-{}-{nanos}.jsonl", std::process::id()));
    let config = || SimConfig { journal: Some(journal.clone()), ..SimConfig::default() };
    let line = spawn_line(config()).await;
    line.send("msg_1", "imessage").await;
    line.edit("msg_1", "mac_1", "Hello again").await;
    line.unsend("msg_unknown", "mac_2").await;

    let restarted = spawn_line(config()).await;
    let (_, lookup) = restarted.action_status("msg_1", "mac_1").await;
    assert_eq!(lookup["status"], "applied");
    let (_, lookup) = restarted.action_status("msg_unknown", "mac_2").await;
    assert_eq!(lookup["status"], "failed");
    let (status, _) = restarted.edit("msg_1", "mac_1", "Hello again").await;
    assert_eq!(status, 200);
    assert_eq!(restarted.sent("edit").await.len(), 1, "the repeated action is not applied again");
    let _ = std::fs::remove_file(&journal);
}
