//! STOP, START and HELP: opt-outs per organisation and line, the automatic replies, every kind
//! of send refused to an opted-out number, and the opt-outs' list and clearing.

use serde_json::{Value, json};

use crate::{
    fakemodel::{FakeModel, text},
    helpers::{TestApp, eventually, spawn_app, spawn_app_with},
    simline::{LineSpec, SimLine},
};

const FRIEND: &str = "+12015550123";
const OTHER: &str = "+12015550124";

/// Waits until the line's device has sent a text to `to` whose body contains `part`.
async fn replied(line: &SimLine, to: &str, part: &str) -> Value {
    eventually(20, "the automatic reply to be sent", || async {
        line.sent().await.into_iter().find(|s| {
            s["to"].as_array().is_some_and(|t| t.iter().any(|n| n == to))
                && s["body"].as_str().is_some_and(|b| b.contains(part))
        })
    })
    .await
}

/// How many rows `table` holds.
async fn count(app: &TestApp, table: &str) -> i64 {
    let (n,): (i64,) =
        sqlx::query_as(&format!("SELECT COUNT(*) FROM {table}")).fetch_one(app.db().writer_for_tests()).await.unwrap();
    n
}

/// The event types written for the organisation that are not about a message.
async fn contact_events(app: &TestApp) -> Vec<(String, Value)> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT type, data FROM events WHERE org_id = $1 AND type LIKE 'messaging.contact.%' ORDER BY created_at, id",
    )
    .bind(&app.org.id)
    .fetch_all(app.db().writer_for_tests())
    .await
    .unwrap();
    rows.into_iter().map(|(kind, data)| (kind, serde_json::from_str(&data).unwrap())).collect()
}

#[tokio::test]
async fn stop_opts_the_number_out_with_a_reply_and_every_kind_of_send_is_refused_until_start() {
    let app = spawn_app().await;
    app.keep_events().await;
    let line = app.default_line().await;
    let key = &app.org.key;
    let first = app.post("/messages", key, json!({"to": FRIEND, "body": "Your order shipped"})).await.expect(202);
    let contact_id = first["message"]["contact_id"].as_str().unwrap().to_string();

    line.inbound(FRIEND, " Stop. ").await;
    replied(&line, FRIEND, "unsubscribed").await;
    let opt_outs = app.get("/opt-outs", key).await.expect(200);
    let opt_out = &opt_outs["data"][0];
    assert_eq!(opt_outs["data"].as_array().unwrap().len(), 1);
    assert_eq!((opt_out["phone"].as_str(), opt_out["line_id"].as_str()), (Some(FRIEND), Some(line.line_id.as_str())));
    assert_eq!((opt_out["keyword"].as_str(), opt_out["contact_id"].as_str()), (Some("stop"), Some(&*contact_id)));
    let contact = app.get(&format!("/contacts/{contact_id}"), key).await.expect(200);
    assert_eq!(contact["opted_out_at"], opt_out["opted_out_at"]);
    // The STOP is a message of the conversation like any other, and so is the reply.
    let inbound = app.get("/messages?direction=inbound", key).await.expect(200);
    assert_eq!(inbound["data"][0]["body"], " Stop. ");
    let events = contact_events(&app).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].0, "messaging.contact.opted_out");
    assert_eq!(events[0].1["opt_out"]["id"], opt_out["id"]);
    assert_eq!(events[0].1["contact"]["opted_out_at"], opt_out["opted_out_at"]);

    // Every kind of send to the number is refused, and nothing is written.
    let before = (count(&app, "messages").await, count(&app, "conversations").await, count(&app, "contacts").await);
    let conversation = first["message"]["conversation_id"].as_str().unwrap();
    let refused = [
        ("/messages", json!({"to": FRIEND, "body": "one more thing"})),
        ("/messages", json!({"conversation_id": conversation, "body": "by conversation"})),
        ("/messages", json!({"contact_id": contact_id, "body": "by contact"})),
        ("/contact-cards", json!({"to": FRIEND, "name": "Ann Lee", "phone": "+12015550177"})),
        ("/polls", json!({"to": FRIEND, "question": "Lunch?", "options": ["Pizza", "Tacos"]})),
        ("/groups", json!({"participants": [OTHER, FRIEND], "body": "Hi all"})),
    ];
    for (path, body) in refused {
        let answer = app.post(path, key, body).await.expect_error(409, "recipient_opted_out", None);
        assert_eq!(answer["phone"], FRIEND, "{path}");
    }
    let after = (count(&app, "messages").await, count(&app, "conversations").await, count(&app, "contacts").await);
    assert_eq!(before, after);
    // Another number, and the same number from another line of the organisation, are not.
    app.post("/messages", key, json!({"to": OTHER, "body": "hello"})).await.expect(202);
    let org = app.org.clone();
    let _second = app.sim_line(LineSpec { e164: "+12015550101", org: Some(&org), sim_args: &[], start: true }).await;
    app.post("/messages", key, json!({"to": FRIEND, "from": "+12015550101", "body": "from the other line"}))
        .await
        .expect(202);

    // START opts back in, with its reply; the number may be sent to again.
    line.inbound(FRIEND, "START").await;
    replied(&line, FRIEND, "subscribed again").await;
    assert!(app.get("/opt-outs", key).await.expect(200)["data"].as_array().unwrap().is_empty());
    assert!(app.get(&format!("/contacts/{contact_id}"), key).await.expect(200)["opted_out_at"].is_null());
    let events = contact_events(&app).await;
    assert_eq!(
        events.iter().map(|(kind, _)| kind.as_str()).collect::<Vec<_>>(),
        ["messaging.contact.opted_out", "messaging.contact.opted_in"]
    );
    app.post("/messages", key, json!({"to": FRIEND, "from": "+12015550100", "body": "welcome back"})).await.expect(202);
}

#[tokio::test]
async fn a_number_that_texted_stop_before_any_send_is_refused_on_the_first_and_others_are_written_once() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let key = &app.org.key;
    // The first send to a number reads its opt-out, contact and thread together: this number
    // never had a send, only its STOP, which made its contact and conversation.
    line.inbound(FRIEND, "STOP").await;
    replied(&line, FRIEND, "unsubscribed").await;
    let before = (count(&app, "messages").await, count(&app, "conversations").await, count(&app, "contacts").await);
    let answer = app.post("/messages", key, json!({"to": FRIEND, "body": "hello"})).await.expect_error(
        409,
        "recipient_opted_out",
        None,
    );
    assert_eq!(answer["phone"], FRIEND);
    let after = (count(&app, "messages").await, count(&app, "conversations").await, count(&app, "contacts").await);
    assert_eq!(before, after);

    // A contact made through the API, with no conversation yet: the send uses it and makes one
    // conversation, which the next send (through the cache) uses too.
    let contact = app.post("/contacts", key, json!({"phone": OTHER, "name": "Bo"})).await.expect(201);
    let first = app.post("/messages", key, json!({"to": OTHER, "body": "one"})).await.expect(202);
    let second = app.post("/messages", key, json!({"to": OTHER, "body": "two"})).await.expect(202);
    assert_eq!(first["message"]["contact_id"], contact["id"]);
    assert_eq!(first["message"]["conversation_id"], second["message"]["conversation_id"]);
    let (threads,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM conversations WHERE contact_id = $1")
        .bind(contact["id"].as_str().unwrap())
        .fetch_one(app.db().writer_for_tests())
        .await
        .unwrap();
    assert_eq!(threads, 1);
}

#[tokio::test]
async fn help_is_answered_with_the_organisations_text_and_an_opt_in_word_from_a_subscriber_is_a_message() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let key = &app.org.key;
    let defaults = app.get("/settings", key).await.expect(200);
    assert_eq!(defaults["defaults"], json!({"opt_out_reply": true, "opt_in_reply": true, "help_reply": true}));
    assert!(defaults["help_reply"].as_str().unwrap().contains("STOP"));

    let set = app
        .request(
            reqwest::Method::PATCH,
            "/settings",
            Some(key),
            Some(json!({"help_reply": "Acme: call 201-555-0100."})),
        )
        .await
        .expect(200);
    assert_eq!(set["help_reply"], "Acme: call 201-555-0100.");
    assert_eq!(set["defaults"]["help_reply"], false);
    assert_eq!(set["opt_out_reply"], defaults["opt_out_reply"]);
    line.inbound(FRIEND, "help").await;
    replied(&line, FRIEND, "Acme: call 201-555-0100.").await;
    // HELP opts nobody out.
    assert!(app.get("/opt-outs", key).await.expect(200)["data"].as_array().unwrap().is_empty());

    // "Yes" from a number that is not opted out is an ordinary message: no reply.
    let sent_before = line.sent().await.len();
    line.inbound(OTHER, "Yes").await;
    let inbound = app.get("/messages?direction=inbound", key).await.expect(200);
    assert_eq!(inbound["data"][0]["body"], "Yes");
    let outbound = app.get("/messages?direction=outbound", key).await.expect(200);
    assert!(outbound["data"].as_array().unwrap().iter().all(|m| m["body"] != defaults["opt_in_reply"]));
    assert_eq!(line.sent().await.len(), sent_before);

    // "" goes back to the default; bad settings change nothing.
    let reset =
        app.request(reqwest::Method::PATCH, "/settings", Some(key), Some(json!({"help_reply": ""}))).await.expect(200);
    assert_eq!(reset["help_reply"], defaults["help_reply"]);
    let long = "x".repeat(307);
    app.request(reqwest::Method::PATCH, "/settings", Some(key), Some(json!({"opt_out_reply": long})))
        .await
        .expect_error(400, "invalid_request", Some("opt_out_reply"));
    app.request(reqwest::Method::PATCH, "/settings", Some(key), Some(json!({"stop_reply": "typo"})))
        .await
        .expect_error(400, "invalid_request", None);
    let reader = app.create_key(&app.org, &["messaging_read"], None).await;
    app.get("/settings", &reader).await.expect(200);
    app.request(reqwest::Method::PATCH, "/settings", Some(&reader), Some(json!({"help_reply": "mine"})))
        .await
        .expect_error(403, "missing messaging_contacts scope", None);
    assert_eq!(app.get("/settings", key).await.expect(200), defaults);
}

#[tokio::test]
async fn opt_outs_are_listed_and_cleared_by_their_organisation_only() {
    let app = spawn_app().await;
    app.keep_events().await;
    let line = app.default_line().await;
    let key = &app.org.key;
    line.inbound(FRIEND, "UNSUBSCRIBE").await;
    line.inbound(OTHER, "quit").await;
    let listed = app.get("/opt-outs", key).await.expect(200);
    assert_eq!(listed["data"].as_array().unwrap().len(), 2);
    let mine = app.get(&format!("/opt-outs?phone={}", FRIEND.replace('+', "%2B")), key).await.expect(200);
    assert_eq!(mine["data"].as_array().unwrap().len(), 1);
    assert_eq!(mine["data"][0]["keyword"], "unsubscribe");
    let id = mine["data"][0]["id"].as_str().unwrap().to_string();
    app.get("/opt-outs?phone=banana", key).await.expect_error(400, "invalid_request", Some("phone"));

    // Another organisation sees none and clears none; nor does a key bound to another line, or
    // one without messaging_contacts.
    let other = app.create_org("Other").await;
    assert!(app.get("/opt-outs", &other.key).await.expect(200)["data"].as_array().unwrap().is_empty());
    app.delete(&format!("/opt-outs/{id}"), &other.key).await.expect_error(404, "not_found", None);
    let org = app.org.clone();
    let second = app.sim_line(LineSpec { e164: "+12015550101", org: Some(&org), sim_args: &[], start: true }).await;
    let bound = app.create_key(&app.org, &["messaging_contacts"], Some(&second.line_id)).await;
    assert!(app.get("/opt-outs", &bound).await.expect(200)["data"].as_array().unwrap().is_empty());
    app.delete(&format!("/opt-outs/{id}"), &bound).await.expect_error(404, "not_found", None);
    let reader = app.create_key(&app.org, &["messaging_read", "messaging_send"], None).await;
    app.get("/opt-outs", &reader).await.expect_error(403, "missing messaging_contacts scope", None);
    app.delete(&format!("/opt-outs/{id}"), &reader).await.expect_error(403, "missing messaging_contacts scope", None);
    app.post("/messages", key, json!({"to": FRIEND, "from": "+12015550100", "body": "still refused"}))
        .await
        .expect(409);

    // Cleared by its organisation: sends go through again, and the event says so.
    let cleared = app.delete(&format!("/opt-outs/{id}"), key).await.expect(200);
    assert_eq!(cleared, json!({"id": id, "deleted": true}));
    app.delete(&format!("/opt-outs/{id}"), key).await.expect_error(404, "not_found", None);
    app.post("/messages", key, json!({"to": FRIEND, "from": "+12015550100", "body": "hello again"})).await.expect(202);
    app.post("/messages", key, json!({"to": OTHER, "from": "+12015550100", "body": "still out"})).await.expect(409);
    let events: Vec<String> = contact_events(&app).await.into_iter().map(|(kind, _)| kind).collect();
    assert_eq!(events, ["messaging.contact.opted_out", "messaging.contact.opted_out", "messaging.contact.opted_in"]);
}

#[tokio::test]
async fn an_agent_never_answers_a_stop_and_a_stop_in_a_group_is_an_ordinary_message() {
    let model = FakeModel::start(vec![text("Hello!")]).await;
    let url = model.url.clone();
    let app = spawn_app_with(move |c| {
        c.agent_model_url = url;
        c.agent_model = "test-model".into();
    })
    .await;
    let line = app.default_line().await;
    let key = &app.org.key;
    let agent = app
        .post("/agents", key, json!({"name": "Ava", "line_id": line.line_id, "instructions": "Help.", "enabled": true}))
        .await
        .expect(201);
    let runs = format!("/agents/{}/runs", agent["id"].as_str().unwrap());
    // A run would be queued in the transaction that stores the message.
    line.inbound(FRIEND, "STOP").await;
    replied(&line, FRIEND, "unsubscribed").await;
    assert!(app.get(&runs, key).await.expect(200)["data"].as_array().unwrap().is_empty());
    line.inbound(FRIEND, "HELP").await;
    assert!(app.get(&runs, key).await.expect(200)["data"].as_array().unwrap().is_empty());
    line.inbound(OTHER, "hi").await;
    assert_eq!(app.get(&runs, key).await.expect(200)["data"].as_array().unwrap().len(), 1);

    // In a group chat, STOP opts nobody out.
    let group =
        app.post("/groups", key, json!({"participants": [OTHER, "+12015550125"], "body": "Hi all"})).await.expect(201);
    let chat = group["group"]["id"].as_str().unwrap();
    app.wait_for_message(key, group["message"]["id"].as_str().unwrap(), "the group", |m| m["status"] == "delivered")
        .await;
    line.control("/control/inbound", json!({"from": OTHER, "body": "stop", "chat": chat})).await;
    let opted: Vec<String> = app.get("/opt-outs", key).await.expect(200)["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["phone"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(opted, [FRIEND]);
}

/// Sends that arrive together have their opt-out checks asked together (inside the commit they
/// share; on PostgreSQL one statement for all of its sends): each send still gets the answer for
/// its own number, and a refused send writes nothing while the others in its commit are written.
#[tokio::test]
async fn sends_checked_together_each_get_the_answer_for_their_own_number() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let key = &app.org.key;
    let numbers: Vec<String> = (0..9).map(|i| format!("+1201555{}", 2000 + i)).collect();
    // A first send each, so that the sends below are checked for opt-outs alone.
    let mut contacts = std::collections::HashMap::new();
    for number in &numbers {
        let sent = app.post("/messages", key, json!({"to": number, "body": "first"})).await.expect(202);
        contacts.insert(number, sent["message"]["contact_id"].clone());
    }
    let stopped: Vec<&String> = numbers.iter().step_by(3).collect();
    for number in &stopped {
        line.inbound(number, "STOP").await;
        replied(&line, number, "unsubscribed").await;
    }
    let before = count(&app, "messages").await;
    let app = &app;
    let sends = numbers.iter().cycle().take(45).map(|number| async move {
        (number, app.post("/messages", key, json!({"to": number, "body": "together"})).await)
    });
    for (number, answer) in futures_util::future::join_all(sends).await {
        if stopped.contains(&number) {
            let refused = answer.expect_error(409, "recipient_opted_out", None);
            assert_eq!(refused["phone"], number.as_str());
        } else {
            assert_eq!(answer.expect(202)["message"]["contact_id"], contacts[number]);
        }
    }
    assert_eq!(count(app, "messages").await, before + 30);
}

#[tokio::test]
async fn a_stop_that_arrives_while_a_message_waits_for_the_line_stops_that_message() {
    // One call to the line at a time, and the line takes a second to answer each: the second
    // send waits in the outbox while the first is with the line.
    let app = spawn_app_with(|c| c.dispatch_concurrency = 1).await;
    app.keep_events().await;
    let line = app
        .sim_line(LineSpec {
            e164: "+12015550100",
            org: Some(&app.org),
            sim_args: &["--answer-ms", "1500"],
            start: true,
        })
        .await;
    let first = app.post("/messages", &app.org.key, json!({"to": "+12015550140", "body": "first"})).await.expect(202);
    let waiting = app.post("/messages", &app.org.key, json!({"to": "+12015550141", "body": "waits"})).await.expect(202);
    let waiting_id = waiting["message"]["id"].as_str().unwrap().to_string();
    assert_eq!(waiting["message"]["status"], "queued");

    // STOP arrives while the second waits: it was accepted, but is not handed over.
    line.inbound("+12015550141", "STOP").await;
    let failed = app.wait_for_message(&app.org.key, &waiting_id, "failed", |m| m["status"] == "failed").await;
    assert_eq!(failed["error"], "recipient_opted_out", "{failed}");
    let first_id = first["message"]["id"].as_str().unwrap();
    app.wait_for_message(&app.org.key, first_id, "delivered", |m| m["status"] == "delivered").await;
    assert!(line.sent_with_id(&waiting_id).await.is_empty(), "nothing reached the line for the opted-out number");
    let to_them: Vec<Value> =
        line.sent().await.into_iter().filter(|s| s["to"] == json!(["+12015550141"]) && s["body"] == "waits").collect();
    assert!(to_them.is_empty(), "{to_them:?}");
    let types = app.event_types(&waiting_id).await;
    assert_eq!(types, ["messaging.message.queued", "messaging.message.failed"], "{types:?}");
}

/// A send repeated with its `Idempotency-Key` after its recipient texted STOP answers what the
/// first request got (the check no longer hides the replay); a new key is refused and writes
/// nothing.
#[tokio::test]
async fn a_send_replayed_after_a_stop_answers_the_first_and_a_new_one_is_refused() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let send = |key: &'static str| {
        app.client
            .post(app.url("/messages"))
            .bearer_auth(&app.org.key)
            .header("Idempotency-Key", key)
            .json(&json!({"to": FRIEND, "body": "Your order shipped"}))
            .send()
    };
    let first = send("order-1").await.unwrap();
    assert_eq!(first.status(), 202);
    let first: Value = first.json().await.unwrap();
    line.inbound(FRIEND, "STOP").await;
    replied(&line, FRIEND, "unsubscribed").await;
    let messages = count(&app, "messages").await;

    let again = send("order-1").await.unwrap();
    assert_eq!(again.status(), 200);
    let again: Value = again.json().await.unwrap();
    assert_eq!((&again["duplicate"], &again["message"]["id"]), (&json!(true), &first["message"]["id"]));
    let refused = send("order-2").await.unwrap();
    assert_eq!(refused.status(), 409);
    let refused: Value = refused.json().await.unwrap();
    assert_eq!((refused["error"].as_str(), refused["phone"].as_str()), (Some("recipient_opted_out"), Some(FRIEND)));
    assert_eq!(count(&app, "messages").await, messages);
}
