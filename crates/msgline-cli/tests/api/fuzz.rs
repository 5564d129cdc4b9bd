//! Fuzzing over HTTP: generated input of any shape, posted to a running server where outside
//! input arrives (a bridge's callbacks, a BlueBubbles Server's and an Android phone's webhooks,
//! the send and registration bodies). The answer is never a server error, a 4xx is the
//! documented error body, and the server goes on answering. Inputs come from proptest's
//! strategies with a fixed seed, so a failure repeats; `MSGLINE_FUZZ_CASES` sets the cases per
//! target (`scripts/fuzz` runs more). The parsers alone are fuzzed in src/fuzz.rs.

use proptest::{
    prelude::*,
    strategy::ValueTree,
    test_runner::{Config as RunnerConfig, RngAlgorithm, TestRng, TestRunner},
};
use serde_json::{Map, Value, json};

use crate::{
    android::sign,
    devices::{DeviceLine, Kind},
    helpers::{TestApp, spawn_app_with},
};

/// The server with its rate limits out of the way: every input must be judged on itself.
async fn unlimited_app() -> TestApp {
    spawn_app_with(|c| {
        c.rate_limit_per_minute = 1_000_000;
        c.send_rate_limit_per_minute = 1_000_000;
    })
    .await
}

const UNLIMITED: [(&str, &str); 2] =
    [("MSGLINE_RATE_LIMIT_PER_MINUTE", "1000000"), ("MSGLINE_SEND_RATE_LIMIT_PER_MINUTE", "1000000")];

fn cases() -> usize {
    std::env::var("MSGLINE_FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(120)
}

/// Generated values, the same on every run.
struct Inputs(TestRunner);

impl Inputs {
    fn new() -> Self {
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
        Inputs(TestRunner::new_with_rng(RunnerConfig::default(), rng))
    }

    fn draw<S: Strategy>(&mut self, strategy: &S) -> S::Value {
        strategy.new_tree(&mut self.0).expect("a value").current()
    }
}

/// Text as people and machines send it.
fn odd_text() -> BoxedStrategy<String> {
    prop_oneof![
        any::<String>(),
        "[ \t\r\n\\\\,;:\"'+0-9a-zA-Z\u{85}\u{2028}\u{200b}\u{feff}\u{1F600}é中]{0,60}",
        "\\+?[0-9 ()-]{0,20}",
        Just(String::new()),
    ]
    .boxed()
}

/// A JSON value of any type, its strings from `text`.
fn any_value(text: BoxedStrategy<String>) -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e30f64..1e30).prop_map(Value::from),
        text.prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z_]{1,10}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

/// An object with some of `fields` (each a value from `values`, or a well-formed one from
/// `good`), so that parsing gets past the first missing field often.
fn object_of(fields: &'static [&'static str], good: Vec<Value>) -> BoxedStrategy<Value> {
    let values = prop_oneof![3 => any_value(odd_text()), 2 => prop::sample::select(good)];
    prop::collection::vec((prop::sample::select(fields), values), 0..fields.len() + 2)
        .prop_map(|pairs| {
            let mut object = Map::new();
            for (name, value) in pairs {
                object.insert(name.to_string(), value);
            }
            Value::Object(object)
        })
        .boxed()
}

/// What a device reports as a group's participant: numbers of the group and around it, the
/// line's own number, other forms, an Apple ID, and any text.
fn participant() -> BoxedStrategy<String> {
    prop_oneof![
        6 => (20u32..30).prop_map(|n| format!("+120155501{n}")),
        1 => Just("+12015550100".to_string()),
        1 => Just("(201) 555-0123".to_string()),
        1 => Just("friend@example.com".to_string()),
        2 => odd_text(),
    ]
    .boxed()
}

/// Participant lists of a few, none, or hundreds.
fn participant_lists() -> BoxedStrategy<Vec<String>> {
    prop_oneof![
        8 => prop::collection::vec(participant(), 0..8),
        1 => prop::collection::vec(participant(), 100..400),
    ]
    .boxed()
}

/// A group's name as a device reports it: ordinary, empty, very long, odd, or not text.
fn group_name() -> BoxedStrategy<Value> {
    prop_oneof![
        5 => "[A-Za-z0-9 ()'-]{1,24}".prop_map(Value::from),
        1 => Just(json!("")),
        1 => "[a-z]{300,2000}".prop_map(Value::from),
        2 => odd_text().prop_map(Value::from),
        1 => any_value(odd_text()),
    ]
    .boxed()
}

/// `group.updated` callbacks, mostly naming `group_id`, with names and participant lists
/// well-formed and hostile.
fn group_updates(group_id: Value) -> BoxedStrategy<Value> {
    let participants = prop_oneof![8 => participant_lists().prop_map(|p| json!(p)), 1 => any_value(odd_text())];
    let group = prop_oneof![8 => Just(group_id), 1 => Just(json!("conv_nothing")), 1 => any_value(odd_text())];
    (odd_text(), group, prop::option::of(group_name()), prop::option::of(participants))
        .prop_map(|(id, group_id, name, participants)| {
            let mut data = json!({"group_id": group_id});
            if let Some(name) = name {
                data["name"] = name;
            }
            if let Some(participants) = participants {
                data["participants"] = participants;
            }
            json!({"id": id, "type": "group.updated", "data": data})
        })
        .boxed()
}

/// A BlueBubbles Server's webhook for a change of the group in `chat` (mostly): the message row
/// the Mac writes for it, with the chat's participants or the new name.
fn bluebubbles_group_changes(chat: String) -> BoxedStrategy<String> {
    let kinds =
        prop::sample::select(vec!["participant-added", "participant-removed", "participant-left", "group-name-change"]);
    let chat = prop_oneof![8 => Just(chat), 1 => odd_text()];
    let members = prop_oneof![8 => participant_lists().prop_map(|list| {
        json!(list.into_iter().map(|address| json!({"address": address, "service": "iMessage"})).collect::<Vec<_>>())
    }), 1 => any_value(odd_text())];
    (kinds, "[A-F0-9-]{8,36}", chat, members, group_name(), 0i64..5)
        .prop_map(|(kind, guid, chat, members, title, item)| {
            let data = json!({"guid": guid, "text": null, "isFromMe": false, "itemType": item, "groupActionType": 0,
                              "groupTitle": title, "chats": [{"guid": chat, "participants": members}]});
            json!({"type": kind, "data": data}).to_string()
        })
        .boxed()
}

/// How often each status answered one target's inputs.
#[derive(Default)]
struct Answers(std::collections::BTreeMap<u16, usize>);

impl Answers {
    /// Prints the counts, and fails unless some inputs were accepted and some refused: a
    /// generator that never gets past the first check proves little.
    fn report(&self, what: &str) {
        println!("{what}: answers {:?}", self.0);
        assert!(self.0.keys().any(|s| *s < 300), "{what}: no input was accepted: {:?}", self.0);
        assert!(self.0.keys().any(|s| *s >= 400), "{what}: no input was refused: {:?}", self.0);
    }
}

/// A valid `example` with 0 to 3 of `fields` changed: set to a generated or well-formed value,
/// or removed.
fn mutated(example: Value, fields: &'static [&'static str], good: Vec<Value>) -> BoxedStrategy<Value> {
    let value = prop_oneof![any_value(odd_text()), prop::sample::select(good)];
    let change = (prop::sample::select(fields), prop::option::of(value));
    prop::collection::vec(change, 0..4)
        .prop_map(move |changes| {
            let mut object = example.clone();
            for (field, value) in changes {
                match value {
                    Some(value) => object[field] = value,
                    None => {
                        object.as_object_mut().expect("an object").remove(field);
                    }
                }
            }
            object
        })
        .boxed()
}

/// Checks an answer to generated input: below 500 (and not 429, which would hide the answer),
/// and a 4xx carries `{"error", "message"}`.
async fn check_answer(answers: &mut Answers, what: &str, input: &str, response: reqwest::Response) {
    let status = response.status().as_u16();
    *answers.0.entry(status).or_default() += 1;
    let body = response.text().await.unwrap_or_default();
    assert!(status < 500 && status != 429, "{what} answered {status} to {input}: {body}");
    if status >= 400 {
        let error: Value =
            serde_json::from_str(&body).unwrap_or_else(|_| panic!("{what}: {status} is not JSON: {body}"));
        assert!(
            error["error"].is_string() && error["message"].is_string(),
            "{what}: {status} is not the error body: {body} (input {input})"
        );
    }
}

#[tokio::test]
async fn bridge_callbacks_of_any_shape_never_get_a_server_error() {
    let app = unlimited_app().await;
    let line = app.default_line().await;
    app.keep_events().await;
    let key = app.org.key.clone();
    // Real ids for the events to name: messages, a poll, a group.
    let sent = app.post("/messages", &key, json!({"to": "+12015550123", "body": "hi"})).await.expect(202);
    let message_id = sent["message"]["id"].clone();
    let poll = app
        .post("/polls", &key, json!({"to": "+12015550123", "question": "Lunch?", "options": ["Yes", "No"]}))
        .await
        .expect(202);
    let poll_id = poll["message"]["id"].clone();
    let group = app
        .post("/groups", &key, json!({"participants": ["+12015550123", "+12015550124"], "body": "Hi all"}))
        .await
        .expect(201);
    let group_id = group["group"]["id"].clone();
    let good = vec![
        message_id,
        poll_id,
        group_id.clone(),
        json!(["+12015550123", "+12015550125"]),
        json!("Trip"),
        json!("+12015550123"),
        json!("delivered"),
        json!("failed"),
        json!("sms"),
        json!("imessage"),
        json!(0),
        json!(1),
        json!(i64::MIN),
        json!(i64::MAX),
        json!("created"),
        json!("grp_nothing"),
        json!("love"),
        json!("-like"),
        json!("sim-in-1"),
        json!(true),
    ];
    let data = object_of(
        &[
            "message_id",
            "status",
            "reason",
            "from",
            "body",
            "chat",
            "channel",
            "poll_message_id",
            "option_index",
            "group_id",
            "state",
            "name",
            "participants",
            "target",
            "reaction",
            "removed",
            "typing",
        ],
        good,
    );
    let kinds = prop::sample::select(vec![
        "message.status",
        "message.inbound",
        "message.reaction",
        "typing",
        "poll.vote",
        "group.state",
        "group.updated",
        "unknown",
    ]);
    let event = (odd_text(), kinds, data).prop_map(|(id, kind, data)| json!({"id": id, "type": kind, "data": data}));
    let event = prop_oneof![3 => event, 1 => group_updates(group_id.clone())];
    let body = prop_oneof![
        3 => event.clone(),
        2 => prop::collection::vec(event, 0..5).prop_map(Value::Array),
        1 => any_value(odd_text()),
    ];
    let mut inputs = Inputs::new();
    let mut answers = Answers::default();
    let url = format!("{}/api/v1/messaging/bridge/events", app.address);
    for _ in 0..cases() {
        let input = inputs.draw(&body).to_string();
        let response = app
            .client
            .post(&url)
            .bearer_auth(&line.secret)
            .header("content-type", "application/json")
            .body(input.clone());
        check_answer(&mut answers, "POST /bridge/events", &input, response.send().await.expect("serve answers")).await;
    }
    answers.report("POST /bridge/events");
    app.get("/messages", &key).await.expect(200);
    let (updates,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM events WHERE type = 'messaging.group.updated'")
        .fetch_one(app.db().writer_for_tests())
        .await
        .unwrap();
    assert!(updates > 0, "no group.updated changed the group");
    // The group took only what a participant can be: never the line itself, never twice.
    let group = app.get(&format!("/groups/{}", group_id.as_str().unwrap()), &key).await.expect(200);
    let participants: Vec<&str> = group["participants"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(!participants.contains(&"+12015550100"), "{group}");
    let mut distinct = participants.clone();
    distinct.dedup();
    assert_eq!(distinct, participants, "{group}");
}

#[tokio::test]
async fn bluebubbles_webhooks_of_any_shape_never_get_a_server_error() {
    let line = DeviceLine::start(Kind::BlueBubbles, &UNLIMITED).await;
    line.keep_events().await;
    let id = line.send_text("+12015550123", "hi").await;
    let (status, created) =
        line.api_post("/groups", json!({"participants": ["+12015550123", "+12015550125"], "body": "Hi all"})).await;
    assert_eq!(status, 201, "{created}");
    let chat = line
        .fake
        .sent()
        .await
        .iter()
        .find_map(|s| s["chatGuid"].as_str().filter(|c| c.contains(";+;")).map(str::to_string));
    let secret = line.hook_secret().await;
    let good = vec![
        json!(id),
        json!("iMessage;-;+12015550123"),
        json!("iMessage;+;chat123"),
        json!("SMS;-;+12015550123"),
        json!({"address": "+12015550123", "service": "iMessage"}),
        json!([{"guid": "iMessage;-;+12015550123"}]),
        json!(true),
        json!(false),
        json!(1_764_000_000_000i64),
        json!(22),
        json!("love"),
        json!("-question"),
        json!("2004"),
        json!("p:0/NOT-A-GUID"),
    ];
    let data = object_of(
        &[
            "guid",
            "tempGuid",
            "text",
            "handle",
            "chats",
            "isFromMe",
            "dateCreated",
            "dateDelivered",
            "dateRead",
            "error",
            "associatedMessageGuid",
            "associatedMessageType",
            "attachments",
            "display",
        ],
        good,
    );
    let kinds = prop::sample::select(vec!["new-message", "updated-message", "message-send-error", "typing-indicator"]);
    let body = prop_oneof![
        4 => (kinds, data).prop_map(|(kind, data)| json!({"type": kind, "data": data}).to_string()),
        2 => bluebubbles_group_changes(chat.expect("the group's chat")),
        1 => any_value(odd_text()).prop_map(|v| v.to_string()),
        1 => odd_text(),
    ];
    let mut inputs = Inputs::new();
    let mut answers = Answers::default();
    let url = format!("{}?secret={secret}", line.api(&format!("/bridge/hooks/{}", line.line_id)));
    let client = reqwest::Client::new();
    for _ in 0..cases() {
        let input = inputs.draw(&body);
        let response = client.post(&url).header("content-type", "application/json").body(input.clone());
        check_answer(&mut answers, "a BlueBubbles webhook", &input, response.send().await.expect("serve answers"))
            .await;
    }
    answers.report("BlueBubbles webhooks");
    line.api_get("/messages").await;
    let group = line.api_get(&format!("/groups/{}", created["group"]["id"].as_str().unwrap())).await;
    assert_eq!(group["state"], "created", "{group}");
    let updates = line.count("SELECT COUNT(*) FROM events WHERE type = 'messaging.group.updated'").await;
    assert!(updates > 0, "no group change from the Mac changed the group");
}

#[tokio::test]
async fn android_gateway_webhooks_of_any_shape_and_signature_never_get_a_server_error() {
    let line = DeviceLine::start(Kind::Android, &UNLIMITED).await;
    let id = line.send_text("+12015550123", "hi").await;
    let secret = line.hook_secret().await;
    let key = line.signing_key().await;
    let good = vec![json!(id), json!("+12015550123"), json!("hello"), json!("2026-11-25T00:00:00.000+00:00")];
    let payload = object_of(&["messageId", "sender", "phoneNumber", "message", "reason", "receivedAt"], good);
    let events = prop::sample::select(vec!["sms:received", "sms:sent", "sms:delivered", "sms:failed", "system:ping"]);
    let delivery = (odd_text(), events, payload).prop_map(|(id, event, payload)| {
        json!({"id": id, "webhookId": "w", "event": event, "deviceId": "d", "payload": payload}).to_string()
    });
    let body = prop_oneof![4 => delivery, 1 => odd_text()];
    // Signed right, or a timestamp or signature of any form.
    let timestamp = prop_oneof![
        4 => Just(None),
        1 => prop_oneof![
            prop::sample::select(vec![i64::MIN, i64::MAX, -1, 0]).prop_map(|n| n.to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            odd_text(),
        ]
        .prop_map(Some),
    ];
    let signature = prop_oneof![4 => Just(None), 1 => prop_oneof!["[0-9a-f]{0,80}", odd_text()].prop_map(Some)];
    let mut inputs = Inputs::new();
    let mut answers = Answers::default();
    let url = format!("{}?secret={secret}", line.api(&format!("/bridge/hooks/{}", line.line_id)));
    let client = reqwest::Client::new();
    for _ in 0..cases() {
        let (input, timestamp, signature) = inputs.draw(&(body.clone(), timestamp.clone(), signature.clone()));
        let timestamp = timestamp.unwrap_or_else(|| (msgline::clock::now_ms() / 1000).to_string());
        let signature = signature.unwrap_or_else(|| sign(&key, &input, &timestamp));
        let mut request = client.post(&url).header("content-type", "application/json").body(input.clone());
        // A header value cannot hold every character; what cannot be sent is not tried.
        if reqwest::header::HeaderValue::from_str(&timestamp).is_ok()
            && reqwest::header::HeaderValue::from_str(&signature).is_ok()
        {
            request = request.header("X-Timestamp", &timestamp).header("X-Signature", &signature);
        }
        let shown = format!("{input} (X-Timestamp {timestamp:?}, X-Signature {signature:?})");
        check_answer(&mut answers, "an Android gateway webhook", &shown, request.send().await.expect("serve answers"))
            .await;
    }
    answers.report("Android gateway webhooks");
    line.api_get("/messages").await;
}

#[tokio::test]
async fn request_bodies_of_any_shape_never_get_a_server_error() {
    let app = unlimited_app().await;
    let _line = app.default_line().await;
    let key = app.org.key.clone();
    let good = vec![
        json!("+12015550123"),
        json!("2015550123"),
        json!("US"),
        json!("hello"),
        json!(["Yes", "No"]),
        json!(["+12015550123", "+12015550124"]),
        json!("imessage"),
        json!("https://example.invalid/hook"),
        json!(["*"]),
        json!("Ann Lee"),
        json!("ann@example.com"),
    ];
    // Each route's valid example, mutated: fields set to generated values or well-formed ones,
    // or removed; unmutated about a fifth of the time, so that accepting paths are reached too.
    let targets: [(&str, Value, &'static [&'static str]); 6] = [
        (
            "/messages",
            json!({"to": "+12015550123", "body": "hello"}),
            &["to", "body", "from", "channel", "default_country", "idempotency_key", "contact_id", "conversation_id"],
        ),
        (
            "/contact-cards",
            json!({"to": "+12015550123", "name": "Ann Lee", "phone": "+12015550177"}),
            &["to", "name", "phone", "email", "organization", "note", "photo_base64", "caption"],
        ),
        (
            "/polls",
            json!({"to": "+12015550123", "question": "Lunch?", "options": ["Pizza", "Tacos"]}),
            &["to", "question", "options", "channel"],
        ),
        (
            "/groups",
            json!({"participants": ["+12015550123", "+12015550124"], "body": "Hi all", "name": "Trip"}),
            &["participants", "name", "body", "line_id"],
        ),
        (
            "/contacts",
            json!({"phone": "+12015550199", "name": "Ann Lee"}),
            &["phone", "name", "email", "default_country", "metadata"],
        ),
        ("/webhooks", json!({"url": "https://example.com/hook", "events": ["*"]}), &["url", "events", "description"]),
    ];
    let mut inputs = Inputs::new();
    let mut answers = Answers::default();
    for (path, example, fields) in targets {
        let body = prop_oneof![5 => mutated(example, fields, good.clone()), 1 => any_value(odd_text())];
        for _ in 0..cases() / 2 {
            let input = inputs.draw(&body).to_string();
            let response = app
                .client
                .post(app.url(path))
                .bearer_auth(&key)
                .header("content-type", "application/json")
                .body(input.clone())
                .send()
                .await
                .expect("serve answers");
            check_answer(&mut answers, &format!("POST {path}"), &input, response).await;
        }
    }
    answers.report("send and registration bodies");
    app.get("/messages", &key).await.expect(200);
}
