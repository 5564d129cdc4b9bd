//! What iMessage users do to a message, against `msgline sim`: replies, effects and subjects on
//! a send; edits and unsends within Apple's windows, with an explicit unknown outcome that is
//! settled by asking the line (never by calling it again); what the other side edits, unsends
//! and answers; a line without the capability; and every message's `from` and `to`.

use serde_json::{Value, json};

use crate::{
    helpers::{TestApp, eventually, spawn_app, spawn_app_with},
    simline::{LineSpec, SimLine},
};

const LINE: &str = "+12015550100";
const FRIEND: &str = "+12015550123";
const OTHER: &str = "+12015550124";

async fn line_with(app: &TestApp, args: &[&str]) -> SimLine {
    let org = app.org.clone();
    app.sim_line(LineSpec { e164: LINE, org: Some(&org), sim_args: args, start: true }).await
}

/// Sends `body` to `to` and waits until the line sent it; returns the message.
async fn sent_text(app: &TestApp, to: &str, body: &str) -> Value {
    let sent = app.post("/messages", &app.org.key, json!({"to": to, "body": body})).await.expect(202);
    let id = sent["message"]["id"].as_str().unwrap().to_string();
    app.wait_for_message(&app.org.key, &id, "the message sent", |m| !m["sent_at"].is_null()).await
}

/// A message from `from` arrives on the line; returns msgline's message.
async fn arrived(app: &TestApp, line: &SimLine, from: &str, body: &str, reply_to: Option<&str>) -> Value {
    let mut control = json!({"from": from, "body": body});
    if let Some(id) = reply_to {
        control["reply_to"] = json!(id);
    }
    line.control("/control/inbound", control).await;
    eventually(10, "the inbound message stored", || async {
        let list = app.get("/messages?direction=inbound", &app.org.key).await.expect(200);
        list["data"].as_array().unwrap().iter().find(|m| m["body"] == body).cloned()
    })
    .await
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

/// Moves a message's `sent_at` back by `ms`: Apple's windows are tested by the clock the test
/// sets, never by sleeping.
async fn sent_earlier(app: &TestApp, id: &str, ms: i64) {
    sqlx::query(&format!("UPDATE messages SET sent_at = sent_at - {ms} WHERE id = $1"))
        .bind(id)
        .execute(app.db().writer_for_tests())
        .await
        .unwrap();
}

/// The sim's log entries of edits and unsends of `target`.
async fn actions_on_line(line: &SimLine, target: &str) -> Vec<Value> {
    line.sent().await.into_iter().filter(|s| s["target"] == target).collect()
}

async fn edit(app: &TestApp, id: &str, body: &str, key: Option<&str>) -> reqwest::Response {
    let mut request = app.client.post(app.url(&format!("/messages/{id}/edit"))).bearer_auth(&app.org.key);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    request.json(&json!({"body": body})).send().await.unwrap()
}

#[tokio::test]
async fn replies_effects_and_subjects_reach_the_line_and_every_message_names_its_numbers() {
    let app = spawn_app().await;
    app.keep_events().await;
    let line = line_with(&app, &[]).await;
    let key = &app.org.key;
    let first = sent_text(&app, FRIEND, "Dinner at 6?").await;
    assert_eq!((first["from"].as_str(), first["to"].as_str()), (Some(LINE), Some(FRIEND)));
    let answer = arrived(&app, &line, FRIEND, "Sounds good", Some(first["id"].as_str().unwrap())).await;
    assert_eq!((answer["from"].as_str(), answer["to"].as_str()), (Some(FRIEND), Some(LINE)));
    assert_eq!(answer["reply_to"], first["id"], "the person's inline reply names what it answers");

    // A reply to the inbound message, with an effect and a subject.
    let body =
        json!({"to": FRIEND, "body": "See you", "reply_to": answer["id"], "effect": "confetti", "subject": "Tonight"});
    let sent = app.post("/messages", key, body).await.expect(202)["message"].clone();
    assert_eq!(sent["reply_to"], answer["id"]);
    assert_eq!((sent["effect"].as_str(), sent["subject"].as_str()), (Some("confetti"), Some("Tonight")));
    let id = sent["id"].as_str().unwrap();
    app.wait_for_message(key, id, "the reply sent", |m| !m["sent_at"].is_null()).await;
    let on_line = line.sent_with_id(id).await;
    assert_eq!(on_line.len(), 1);
    // The line names an inbound message by its own id: not msgline's.
    let line_name = on_line[0]["reply_to"].as_str().expect("the reply reached the line as one");
    assert_ne!(line_name, answer["id"].as_str().unwrap());
    assert_eq!((on_line[0]["effect"].as_str(), on_line[0]["subject"].as_str()), (Some("confetti"), Some("Tonight")));
    // A reply to msgline's own message is named by msgline's id.
    let body = json!({"to": FRIEND, "body": "Or 7", "reply_to": first["id"]});
    let own = app.post("/messages", key, body).await.expect(202)["message"]["id"].as_str().unwrap().to_string();
    app.wait_for_message(key, &own, "the second reply sent", |m| !m["sent_at"].is_null()).await;
    assert_eq!(line.sent_with_id(&own).await[0]["reply_to"], first["id"]);

    // Contact cards and polls answer a message too.
    let poll = json!({"to": FRIEND, "question": "Where?", "options": ["Here", "There"], "reply_to": first["id"]});
    let poll = app.post("/polls", key, poll).await.expect(202);
    assert_eq!(poll["message"]["reply_to"], first["id"]);

    // Lists, webhook events and the feed carry the numbers too.
    let listed = app.get("/messages?direction=outbound", key).await.expect(200);
    assert!(listed["data"].as_array().unwrap().iter().all(|m| m["from"] == LINE && m["to"] == FRIEND), "{listed}");
    let queued = events_of(&app, "messaging.message.queued").await;
    assert!(queued.iter().all(|e| e["message"]["from"] == LINE && e["message"]["to"] == FRIEND), "{queued:?}");
    app.request(reqwest::Method::PATCH, "/settings", Some(key), Some(json!({"event_feed": true}))).await.expect(200);
    let _ = sent_text(&app, OTHER, "Feed me").await;
    // The feed shows an event once every transaction that began before it has ended.
    let fed = eventually(10, "the feed to show the message's events", || async {
        let feed = app.get("/feed?limit=200", key).await.expect(200);
        let fed: Vec<Value> =
            feed["data"].as_array().unwrap().iter().filter(|e| e["data"]["message"]["to"] == OTHER).cloned().collect();
        (!fed.is_empty()).then_some(fed)
    })
    .await;
    assert!(fed.iter().all(|e| e["data"]["message"]["from"] == LINE), "{fed:?}");
}

#[tokio::test]
async fn a_group_message_has_no_to() {
    let app = spawn_app().await;
    let _line = line_with(&app, &[]).await;
    let body = json!({"participants": [FRIEND, OTHER], "body": "Hi both"});
    let created = app.post("/groups", &app.org.key, body).await.expect(201);
    let id = created["message"]["id"].as_str().unwrap();
    let message = app.get(&format!("/messages/{id}"), &app.org.key).await.expect(200);
    assert_eq!((message["from"].as_str(), message["to"].clone()), (Some(LINE), Value::Null));
}

#[tokio::test]
async fn bad_replies_effects_and_subjects_are_refused_naming_their_field_and_nothing_is_sent() {
    let app = spawn_app().await;
    let line = line_with(&app, &["--sms-only", OTHER]).await;
    let key = &app.org.key;
    let elsewhere = sent_text(&app, OTHER, "Another conversation").await;
    let before = line.sent().await.len();
    let send = |body: Value| app.post("/messages", key, body);
    send(json!({"to": FRIEND, "body": "x", "reply_to": elsewhere["id"]})).await.expect_error(
        400,
        "invalid_request",
        Some("reply_to"),
    );
    send(json!({"to": FRIEND, "body": "x", "reply_to": "msg_nope"})).await.expect_error(
        400,
        "invalid_request",
        Some("reply_to"),
    );
    send(json!({"to": FRIEND, "body": "x", "reply_to": 7})).await.expect_error(
        400,
        "invalid_request",
        Some("reply_to"),
    );
    send(json!({"to": FRIEND, "body": "x", "effect": "sparkles"})).await.expect_error(
        400,
        "invalid_request",
        Some("effect"),
    );
    let long = "s".repeat(201);
    send(json!({"to": FRIEND, "body": "x", "subject": long})).await.expect_error(
        400,
        "invalid_request",
        Some("subject"),
    );
    // Over SMS: effects and subjects are refused, a reply goes as a plain message.
    send(json!({"to": OTHER, "body": "x", "effect": "slam"})).await.expect_error(409, "effect_requires_imessage", None);
    send(json!({"to": FRIEND, "channel": "sms", "body": "x", "subject": "Hi"})).await.expect_error(
        409,
        "subject_requires_imessage",
        None,
    );
    assert_eq!(line.sent().await.len(), before, "nothing refused reached the line");
    let plain = send(json!({"to": OTHER, "body": "Plain", "reply_to": elsewhere["id"]})).await.expect(202);
    let id = plain["message"]["id"].as_str().unwrap();
    assert_eq!(plain["message"]["reply_to"], elsewhere["id"]);
    app.wait_for_message(key, id, "the SMS reply sent", |m| !m["sent_at"].is_null()).await;
    let on_line = line.sent_with_id(id).await;
    assert_eq!((on_line[0]["channel"].as_str(), on_line[0].get("reply_to")), (Some("sms"), None));
}

#[tokio::test]
async fn edits_and_unsends_keep_apples_windows_and_limits_and_each_fires_one_event() {
    let app = spawn_app().await;
    app.keep_events().await;
    let line = line_with(&app, &[]).await;
    let message = sent_text(&app, FRIEND, "See you at 6").await;
    let id = message["id"].as_str().unwrap();
    assert_eq!((message["edits"].clone(), message["edited_at"].clone()), (json!([]), Value::Null));

    let answer = edit(&app, id, "See you at 7", Some("edit-1")).await;
    assert_eq!(answer.status(), 200);
    let edited: Value = answer.json().await.unwrap();
    assert_eq!(edited["body"], "See you at 7");
    assert!(edited["edited_at"].is_string() && edited["action"].is_null(), "{edited}");
    assert_eq!(edited["edits"], json!([{"body": "See you at 6", "at": message["sent_at"]}]));
    let on_line = actions_on_line(&line, id).await;
    assert_eq!(on_line.len(), 1);
    assert_eq!((on_line[0]["kind"].as_str(), on_line[0]["body"].as_str()), (Some("edit"), Some("See you at 7")));
    // The same key again answers the same, and nothing more reaches the line.
    let replay = edit(&app, id, "See you at 7", Some("edit-1")).await;
    assert_eq!((replay.status().as_u16(), replay.headers().get("idempotent-replayed").is_some()), (200, true));
    edit(&app, id, "Something else", Some("edit-1"))
        .await
        .status()
        .as_u16()
        .eq(&409)
        .then_some(())
        .expect("a key reused");
    assert_eq!(actions_on_line(&line, id).await.len(), 1);
    assert_eq!(events_of(&app, "messaging.message.edited").await.len(), 1);

    // Five edits in all, then Apple's limit.
    for n in 2..=5 {
        assert_eq!(edit(&app, id, &format!("Edit {n}"), None).await.status(), 200);
    }
    let refused: Value = edit(&app, id, "Edit 6", None).await.json().await.unwrap();
    assert_eq!(refused["error"], "edit_limit_reached", "{refused}");
    let now = app.get(&format!("/messages/{id}"), &app.org.key).await.expect(200);
    assert_eq!((now["body"].as_str(), now["edits"].as_array().unwrap().len()), (Some("Edit 5"), 5));
    assert_eq!(events_of(&app, "messaging.message.edited").await.len(), 5);

    // Fifteen minutes after sending, no edit; two minutes after, no unsend.
    let late = sent_text(&app, FRIEND, "Late").await;
    let late_id = late["id"].as_str().unwrap();
    sent_earlier(&app, late_id, 15 * 60_000 + 1_000).await;
    let refused: Value = edit(&app, late_id, "Too late", None).await.json().await.unwrap();
    assert_eq!(refused["error"], "edit_window_closed", "{refused}");
    let unsend = |id: String| {
        let app = &app;
        async move { app.post(&format!("/messages/{id}/unsend"), &app.org.key, json!({})).await }
    };
    unsend(late_id.to_string()).await.expect_error(409, "unsend_window_closed", None);
    let fresh = sent_text(&app, FRIEND, "Oops").await;
    let fresh_id = fresh["id"].as_str().unwrap().to_string();
    sent_earlier(&app, &fresh_id, 60_000).await;
    let unsent = unsend(fresh_id.clone()).await.expect(200);
    assert!(unsent["unsent_at"].is_string(), "{unsent}");
    assert_eq!(unsent["body"], "Oops", "the organisation keeps its record of the text");
    assert_eq!(actions_on_line(&line, &fresh_id).await[0]["kind"], "unsend");
    assert_eq!(events_of(&app, "messaging.message.unsent").await.len(), 1);
    // An unsent message, a received one and one not sent yet cannot be changed.
    unsend(fresh_id.clone()).await.expect_error(409, "message_not_editable", None);
    let body: Value = edit(&app, &fresh_id, "x", None).await.json().await.unwrap();
    assert_eq!(body["error"], "message_not_editable");
    let inbound = arrived(&app, &line, FRIEND, "Mine", None).await;
    let body: Value = edit(&app, inbound["id"].as_str().unwrap(), "x", None).await.json().await.unwrap();
    assert_eq!(body["error"], "message_not_editable");
    let at = msgline::clock::rfc3339(msgline::clock::now_ms() + 3_600_000);
    let later =
        app.post("/messages", &app.org.key, json!({"to": FRIEND, "body": "Later", "send_at": at})).await.expect(202);
    let body: Value = edit(&app, later["message"]["id"].as_str().unwrap(), "x", None).await.json().await.unwrap();
    assert_eq!(body["error"], "message_not_editable");
    edit(&app, id, "", None).await.status().as_u16().eq(&400).then_some(()).expect("an empty edit is refused");
}

#[tokio::test]
async fn an_edit_the_line_does_not_answer_is_unknown_then_settled_by_asking_and_never_sent_again() {
    let app = spawn_app_with(|config| config.bridge_timeout_ms = 500).await;
    app.keep_events().await;
    let line = line_with(&app, &[]).await;
    let message = sent_text(&app, FRIEND, "Version one").await;
    let id = message["id"].as_str().unwrap();
    line.control("/control/mode", json!({"mode": "timeout"})).await;
    let answer = edit(&app, id, "Version two", Some("slow-edit")).await;
    assert_eq!(answer.status(), 202);
    let pending: Value = answer.json().await.unwrap();
    assert_eq!(
        (pending["body"].as_str(), pending["action"]["status"].as_str()),
        (Some("Version one"), Some("unknown"))
    );
    assert_eq!(pending["action"]["kind"], "edit");
    // msgline asks the line, which applied it: the message is edited, once.
    let settled = app.wait_for_message(&app.org.key, id, "the edit settled", |m| m["body"] == "Version two").await;
    assert!(settled["action"].is_null() && settled["edited_at"].is_string(), "{settled}");
    assert_eq!(actions_on_line(&line, id).await.len(), 1, "asked about, never called again");
    assert_eq!(events_of(&app, "messaging.message.edited").await.len(), 1);
    // The key replays the outcome as it now stands.
    assert_eq!(edit(&app, id, "Version two", Some("slow-edit")).await.status(), 200);

    // A line that refuses: the message stays as it was, the action shows why.
    line.control("/control/mode", json!({"mode": "reject"})).await;
    let refused: Value = edit(&app, id, "Version three", None).await.json().await.unwrap();
    assert_eq!(refused["error"], "line_rejected", "{refused}");
    let now = app.get(&format!("/messages/{id}"), &app.org.key).await.expect(200);
    assert_eq!((now["body"].as_str(), now["action"]["status"].as_str()), (Some("Version two"), Some("failed")));
}

#[tokio::test]
async fn a_line_without_the_capabilities_refuses_with_409_naming_each_and_nothing_reaches_it() {
    let app = spawn_app_with(|config| config.line_check_seconds = 1).await;
    let line = line_with(&app, &[]).await;
    let key = &app.org.key;
    let message = sent_text(&app, FRIEND, "Hello").await;
    let id = message["id"].as_str().unwrap();
    // The device loses them (a Mac whose Private API helper went away); the line's next check
    // learns it.
    line.control("/control/mode", json!({"message_actions": false})).await;
    let path = format!("/lines/{}", line.line_id);
    eventually(10, "the line's check to learn it", || async {
        let view = app.get(&path, key).await.expect(200);
        (view["capabilities"]["edits"] == false).then_some(())
    })
    .await;
    let before = line.sent().await.len();
    let lacks = |answer: crate::helpers::Resp, capability: &str| {
        let body = answer.expect_error(409, "line_lacks_capability", None);
        assert_eq!(body["capability"], capability, "{body}");
    };
    lacks(app.post("/messages", key, json!({"to": FRIEND, "body": "x", "reply_to": id})).await, "replies");
    lacks(app.post("/messages", key, json!({"to": FRIEND, "body": "x", "effect": "slam"})).await, "effects");
    lacks(app.post("/messages", key, json!({"to": FRIEND, "body": "x", "subject": "Hi"})).await, "effects");
    lacks(app.post(&format!("/messages/{id}/edit"), key, json!({"body": "x"})).await, "edits");
    lacks(app.post(&format!("/messages/{id}/unsend"), key, json!({})).await, "unsend");
    assert_eq!(line.sent().await.len(), before, "nothing reached the line");
    let line_view = app.get(&path, key).await.expect(200);
    let capabilities = &line_view["capabilities"];
    assert_eq!(
        [&capabilities["replies"], &capabilities["edits"], &capabilities["unsend"], &capabilities["effects"]],
        [&json!(false); 4]
    );
}

#[tokio::test]
async fn what_the_other_side_edits_and_unsends_updates_the_record_with_one_event_each() {
    let app = spawn_app().await;
    app.keep_events().await;
    let line = line_with(&app, &[]).await;
    let inbound = arrived(&app, &line, FRIEND, "Running late", None).await;
    let id = inbound["id"].as_str().unwrap();
    assert!(inbound["effect"].is_null() && inbound["subject"].is_null(), "{inbound}");
    // A message sent with an effect and a subject keeps both; an effect msgline does not know is
    // left out.
    let look = json!({"from": FRIEND, "body": "Surprise", "effect": "lasers", "subject": "Guess what"});
    line.control("/control/inbound", look).await;
    let odd = json!({"from": FRIEND, "body": "Odd", "effect": "sparkles"});
    line.control("/control/inbound", odd).await;
    let found = |body: &'static str| {
        let app = &app;
        async move {
            eventually(10, body, || async {
                let list = app.get("/messages?direction=inbound", &app.org.key).await.expect(200);
                list["data"].as_array().unwrap().iter().find(|m| m["body"] == body).cloned()
            })
            .await
        }
    };
    let festive = found("Surprise").await;
    assert_eq!((festive["effect"].as_str(), festive["subject"].as_str()), (Some("lasers"), Some("Guess what")));
    assert!(found("Odd").await["effect"].is_null());
    line.control("/control/edit", json!({"message_id": id, "body": "Running very late"})).await;
    let edited = app.wait_for_message(&app.org.key, id, "the edit stored", |m| m["body"] == "Running very late").await;
    assert!(edited["edited_at"].is_string(), "{edited}");
    assert_eq!(edited["edits"][0]["body"], "Running late");
    line.control("/control/unsend", json!({"message_id": id})).await;
    let unsent = app.wait_for_message(&app.org.key, id, "the unsend stored", |m| m["unsent_at"].is_string()).await;
    assert_eq!(unsent["body"], "Running very late", "kept as the organisation's own record");
    let edits = events_of(&app, "messaging.message.edited").await;
    let unsends = events_of(&app, "messaging.message.unsent").await;
    assert_eq!((edits.len(), unsends.len()), (1, 1));
    assert_eq!(edits[0]["message"]["id"], id);
    assert_eq!(edits[0]["message"]["direction"], "inbound");
}

#[tokio::test]
async fn the_new_routes_keep_tenants_apart_and_need_the_send_scope() {
    let app = spawn_app().await;
    let _line = line_with(&app, &[]).await;
    let message = sent_text(&app, FRIEND, "Mine").await;
    let id = message["id"].as_str().unwrap();
    let stranger = app.create_org("Stranger").await;
    for path in [format!("/messages/{id}/edit"), format!("/messages/{id}/unsend")] {
        app.post(&path, &stranger.key, json!({"body": "x"})).await.expect_error(404, "not_found", None);
        let reader = app.create_key(&app.org, &["messaging_read"], None).await;
        app.post(&path, &reader, json!({"body": "x"})).await.expect_error(403, "missing messaging_send scope", None);
    }
    // Another organisation's message cannot be replied to either.
    let _theirs =
        app.sim_line(LineSpec { e164: "+12015550199", org: Some(&stranger), sim_args: &[], start: true }).await;
    let body = json!({"to": FRIEND, "body": "x", "reply_to": id});
    app.post("/messages", &stranger.key, body).await.expect_error(400, "invalid_request", Some("reply_to"));
    let unchanged = app.get(&format!("/messages/{id}"), &app.org.key).await.expect(200);
    assert_eq!((unchanged["body"].as_str(), unchanged["edits"].clone()), (Some("Mine"), json!([])));
}

#[tokio::test]
async fn a_kill_9_during_an_edit_loses_nothing_and_applies_nothing_twice() {
    use crate::helpers::{TestDb, json_answer, process_line, serve_process};
    let db = TestDb::new().await;
    let url = db.url().to_string();
    let line = process_line(&url, "Crash during an edit").await;
    let mut server = serve_process(&url, line.port, &[]).await;
    let client = reqwest::Client::new();
    let api = |path: &str| crate::helpers::api(line.port, path);
    let sent = json_answer(
        client.post(api("/messages")).bearer_auth(&line.key).json(&json!({"to": FRIEND, "body": "Before"})),
    )
    .await;
    let id = sent["message"]["id"].as_str().unwrap().to_string();
    let get = || json_answer(client.get(api(&format!("/messages/{id}"))).bearer_auth(&line.key));
    eventually(20, "the message sent", || async { get().await["sent_at"].is_string().then_some(()) }).await;

    // The device takes the edit and never answers in time; msgline is killed mid-call.
    let sim = format!("http://127.0.0.1:{}", line.sim_port);
    client.post(format!("{sim}/control/mode")).json(&json!({"mode": "timeout"})).send().await.unwrap();
    let edit = client
        .post(api(&format!("/messages/{id}/edit")))
        .bearer_auth(&line.key)
        .header("Idempotency-Key", "crash-edit")
        .json(&json!({"body": "After"}))
        .send();
    let call = tokio::spawn(edit);
    eventually(10, "the edit reached the line", || async {
        let sent: Vec<Value> = client.get(format!("{sim}/control/sent")).send().await.ok()?.json().await.ok()?;
        sent.iter().any(|s| s["target"] == id.as_str()).then_some(())
    })
    .await;
    server.kill().await.unwrap();
    assert!(call.await.unwrap().is_err(), "the caller saw the server go");

    // Restarted, msgline finds the edit it was making, asks the line (once the call would have
    // ended: here moved back in time), and applies it once; it never calls the line again.
    let mut server = serve_process(&url, line.port, &[]).await;
    let direct = msgline::Db::connect(&url).await.unwrap();
    sqlx::query("UPDATE message_actions SET created_at = created_at - 120000 WHERE message_id = $1")
        .bind(&id)
        .execute(direct.writer_for_tests())
        .await
        .unwrap();
    let settled = eventually(20, "the edit settled", || async {
        let message = get().await;
        (message["body"] == "After").then_some(message)
    })
    .await;
    assert_eq!(settled["edits"].as_array().unwrap().len(), 1, "{settled}");
    assert!(settled["action"].is_null(), "{settled}");
    let sent: Vec<Value> = client.get(format!("{sim}/control/sent")).send().await.unwrap().json().await.unwrap();
    assert_eq!(sent.iter().filter(|s| s["target"] == id.as_str()).count(), 1, "the line was asked once");
    // The caller's retry with its key answers the outcome.
    let retry = client
        .post(api(&format!("/messages/{id}/edit")))
        .bearer_auth(&line.key)
        .header("Idempotency-Key", "crash-edit")
        .json(&json!({"body": "After"}))
        .send()
        .await
        .unwrap();
    assert_eq!(retry.status(), 200);
    server.kill().await.unwrap();
}
