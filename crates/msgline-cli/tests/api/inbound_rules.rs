//! The rules every inbound message meets, whatever kind of line it arrives on (the msgline
//! bridge protocol's `POST /bridge/events`, a BlueBubbles Server's webhook, an SMS Gateway for
//! Android's signed webhook, Kannel's `kind=mo` call): a sender that is empty, only spaces or
//! longer than 254 characters is refused with 400 `invalid_request` naming `data.from`, and
//! nothing of it is stored (no message, no contact); a text longer than 10,000 characters is
//! refused over the bridge protocol (`data.body`: a bridge sends it again fixed) and cut to its
//! first 10,000 characters, not bytes, from a device (which never sends it again); Kannel's text
//! that claims to be UTF-8 and is not is refused, while the same bytes as ISO-8859-1 (or with no
//! charset) are read as Latin-1. A normal message still arrives on every path.

use serde_json::{Value, json};

use crate::{
    android::sign,
    devices::{DeviceLine, Kind},
    helpers::{TestApp, cli_json, spawn_app_with},
    simline::free_port,
};

const FRIEND: &str = "+12015550123";
const LIMIT: usize = 10_000;

/// Senders no message may come from: empty, only spaces, or longer than 254 characters.
fn absurd_senders() -> Vec<(&'static str, String)> {
    vec![
        ("an empty sender", String::new()),
        ("a sender of spaces only", "   ".into()),
        ("a sender of 5,000 digits", "1".repeat(5_000)),
        ("a + and 5,000 digits", format!("+{}", "2".repeat(5_000))),
        ("a handle of 255 characters", format!("{}@example.com", "a".repeat(255 - "@example.com".len()))),
    ]
}

/// A text of `chars` characters with a two-byte `é` every five characters, so that a cut by
/// bytes and a cut by characters differ.
fn text_of(chars: usize) -> String {
    "éabcd".chars().cycle().take(chars).collect()
}

/// The first `LIMIT` characters of `text`.
fn cut(text: &str) -> String {
    text.chars().take(LIMIT).collect()
}

/// Asserts a 400 `invalid_request` answer, naming `field` when given.
#[track_caller]
fn assert_refused(what: &str, (status, body): &(u16, Value), field: Option<&str>) {
    assert_eq!(*status, 400, "{what} is refused with 400; body: {body}");
    assert_eq!(body["error"], "invalid_request", "{what}: {body}");
    if let Some(field) = field {
        assert_eq!(body["field"], field, "{what}: {body}");
    }
}

#[track_caller]
fn assert_taken(what: &str, (status, body): &(u16, Value)) {
    assert_eq!(*status, 200, "{what} is taken; body: {body}");
}

/// The answer's status and JSON body (`Null` when it has none).
async fn answer(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.expect("a body");
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// Where a test reads what was stored: the in-process app with its organisation's key, or a
/// device line's `msgline serve`.
enum Stored<'a> {
    App(&'a TestApp),
    Device(&'a DeviceLine),
}

impl Stored<'_> {
    async fn list(&self, path: &str) -> Vec<Value> {
        let list = match self {
            Stored::App(app) => app.get(path, &app.org.key).await.expect(200),
            Stored::Device(line) => line.api_get(path).await,
        };
        list["data"].as_array().unwrap_or_else(|| panic!("GET {path} lists: {list}")).clone()
    }

    /// Every message of the organisation, both ways, newest first.
    async fn messages(&self) -> Vec<Value> {
        self.list("/messages").await
    }

    async fn inbound(&self) -> Vec<Value> {
        self.list("/messages?direction=inbound").await
    }

    async fn contacts(&self) -> Vec<Value> {
        self.list("/contacts").await
    }

    async fn assert_nothing_stored(&self, after: &str) {
        assert_eq!(self.messages().await, Vec::<Value>::new(), "no message was stored after {after}");
        assert_eq!(self.contacts().await, Vec::<Value>::new(), "no contact was stored after {after}");
    }

    /// The inbound message with this body, which must be there once.
    async fn arrived(&self, body: &str) -> Value {
        let found: Vec<Value> = self.inbound().await.into_iter().filter(|m| m["body"] == body).collect();
        assert_eq!(
            found.len(),
            1,
            "one inbound message with the body {:?}…",
            body.chars().take(20).collect::<String>()
        );
        found[0].clone()
    }

    /// The only contact is `FRIEND`, and the message is theirs.
    async fn assert_from_friend(&self, message: &Value) {
        let contacts = self.contacts().await;
        let phones: Vec<&str> = contacts.iter().filter_map(|c| c["phone"].as_str()).collect();
        assert_eq!(phones, [FRIEND], "the only contact is the normal sender");
        assert_eq!(message["contact_id"], contacts[0]["id"], "{message}");
    }
}

/// An app whose request limits the tests do not meet.
async fn app() -> TestApp {
    spawn_app_with(|c| {
        c.rate_limit_per_minute = 100_000;
        c.send_rate_limit_per_minute = 100_000;
    })
    .await
}

// --- the msgline bridge protocol ---

/// POSTs a callback as the line's bridge; (status, body).
async fn bridge_callback(app: &TestApp, secret: &str, body: Value) -> (u16, Value) {
    answer(app.client.post(app.url("/bridge/events")).bearer_auth(secret).json(&body).send().await.unwrap()).await
}

fn bridge_inbound(id: &str, from: &str, body: &str) -> Value {
    json!({"id": id, "type": "message.inbound", "data": {"from": from, "body": body, "channel": "sms"}})
}

#[tokio::test]
async fn a_bridge_callback_with_a_blank_or_overlong_sender_or_an_overlong_text_is_refused_and_stores_nothing() {
    let app = app().await;
    let line = app.default_line().await;
    let callback = |body: Value| bridge_callback(&app, &line.secret, body);
    let stored = Stored::App(&app);

    for (n, (what, from)) in absurd_senders().into_iter().enumerate() {
        let refused = callback(bridge_inbound(&format!("bad-from-{n}"), &from, "hello")).await;
        assert_refused(&format!("a callback with {what}"), &refused, Some("data.from"));
    }
    let over = text_of(LIMIT + 1);
    let refused = callback(bridge_inbound("too-long", FRIEND, &over)).await;
    assert_refused("a callback with a text of 10,001 characters", &refused, Some("data.body"));
    // In an array, the event at fault is named, and its well-formed neighbour is not applied.
    let refused =
        callback(json!([bridge_inbound("pair-1", FRIEND, "fine"), bridge_inbound("pair-2", "  ", "hi")])).await;
    assert_refused("an array with a blank sender second", &refused, Some("[1].data.from"));
    let refused =
        callback(json!([bridge_inbound("pair-3", FRIEND, "fine"), bridge_inbound("pair-4", FRIEND, &over)])).await;
    assert_refused("an array with an overlong text second", &refused, Some("[1].data.body"));
    stored.assert_nothing_stored("the refused callbacks").await;

    // Exactly 10,000 characters (12,000 bytes) is within the limit, and kept whole.
    let full = text_of(LIMIT);
    assert!(full.len() > LIMIT, "more bytes than characters");
    let taken = callback(bridge_inbound("at-the-limit", FRIEND, &full)).await;
    assert_taken("a callback with a text of exactly 10,000 characters", &taken);
    assert_eq!(taken.1["applied"], 1, "{}", taken.1);
    stored.arrived(&full).await;
    // The control: a normal message arrives.
    let taken = callback(bridge_inbound("normal", FRIEND, "Running late")).await;
    assert_eq!(taken, (200, json!({"applied": 1, "duplicates": 0})));
    let message = stored.arrived("Running late").await;
    assert_eq!(stored.inbound().await.len(), 2);
    stored.assert_from_friend(&message).await;
}

// --- device webhooks ---

/// POSTs `body` to the device line's hook route with `query` and `headers`; (status, body).
async fn post_hook(line: &DeviceLine, query: &str, headers: &[(&str, &str)], body: &str) -> (u16, Value) {
    let url = format!("{}?{query}", line.api(&format!("/bridge/hooks/{}", line.line_id)));
    let mut request = reqwest::Client::new().post(url).header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    answer(request.body(body.to_string()).send().await.expect("serve answers")).await
}

async fn bluebubbles_hook(line: &DeviceLine, query: &str, body: String) -> (u16, Value) {
    post_hook(line, query, &[], &body).await
}

/// A BlueBubbles Server's `new-message` webhook for a message from `address` in its 1:1 chat.
fn bluebubbles_message(guid: &str, address: &str, text: &str) -> String {
    json!({"type": "new-message", "data": {
        "guid": guid, "text": text, "isFromMe": false, "dateCreated": 1_764_000_000_000i64,
        "handle": {"address": address, "service": "iMessage"},
        "chats": [{"guid": format!("iMessage;-;{address}")}],
        "attachments": [],
    }})
    .to_string()
}

#[tokio::test]
async fn a_bluebubbles_webhook_with_a_blank_or_overlong_sender_is_refused_and_an_overlong_text_is_cut_to_10000_characters()
 {
    let line = DeviceLine::start(Kind::BlueBubbles, &[]).await;
    let query = format!("secret={}", line.hook_secret().await);
    let hook = |body: String| bluebubbles_hook(&line, &query, body);
    let stored = Stored::Device(&line);

    for (n, (what, address)) in absurd_senders().into_iter().enumerate() {
        let refused = hook(bluebubbles_message(&format!("bad-from-{n}"), &address, "hello")).await;
        assert_refused(&format!("a BlueBubbles message with {what}"), &refused, Some("data.from"));
    }
    stored.assert_nothing_stored("the refused webhooks").await;

    // The Mac never sends a webhook again: a text over the limit is kept, cut by characters.
    let long = text_of(LIMIT + 500);
    assert_taken("a BlueBubbles message of 10,500 characters", &hook(bluebubbles_message("long", FRIEND, &long)).await);
    let kept = stored.arrived(&cut(&long)).await;
    assert_eq!(kept["body"].as_str().unwrap().chars().count(), LIMIT);
    // The control: a normal message arrives.
    assert_taken("a normal BlueBubbles message", &hook(bluebubbles_message("normal", FRIEND, "Running late")).await);
    let message = stored.arrived("Running late").await;
    assert_eq!(message["channel"], "imessage");
    assert_eq!(stored.inbound().await.len(), 2);
    stored.assert_from_friend(&message).await;
}

/// POSTs a webhook signed as the phone signs (with the line's signing key, now), so that only
/// its content can be at fault.
async fn android_hook(line: &DeviceLine, query: &str, key: &str, body: String) -> (u16, Value) {
    let now = (msgline::clock::now_ms() / 1000).to_string();
    let signature = sign(key, &body, &now);
    post_hook(line, query, &[("X-Signature", &signature), ("X-Timestamp", &now)], &body).await
}

/// An SMS Gateway for Android `sms:received` webhook; `sender` and `phoneNumber` left out when
/// `None` (an older app sends only `phoneNumber`).
fn android_sms(id: &str, sender: Option<&str>, phone_number: Option<&str>, text: &str) -> String {
    let mut payload = json!({"messageId": id, "message": text, "receivedAt": "2026-11-25T00:00:00.000+00:00"});
    if let Some(sender) = sender {
        payload["sender"] = json!(sender);
    }
    if let Some(number) = phone_number {
        payload["phoneNumber"] = json!(number);
    }
    json!({"id": id, "webhookId": "w", "event": "sms:received", "deviceId": "d", "payload": payload}).to_string()
}

#[tokio::test]
async fn an_android_gateway_webhook_with_a_blank_or_overlong_sender_is_refused_and_an_overlong_text_is_cut_to_10000_characters()
 {
    let line = DeviceLine::start(Kind::Android, &[]).await;
    let query = format!("secret={}", line.hook_secret().await);
    let key = line.signing_key().await;
    let hook = |body: String| android_hook(&line, &query, &key, body);
    let stored = Stored::Device(&line);

    for (n, (what, from)) in absurd_senders().into_iter().enumerate() {
        let refused = hook(android_sms(&format!("bad-from-{n}"), Some(&from), Some(&from), "hello")).await;
        assert_refused(&format!("an SMS with {what}"), &refused, Some("data.from"));
        // An older app's webhook, with `phoneNumber` only.
        let refused = hook(android_sms(&format!("bad-number-{n}"), None, Some(&from), "hello")).await;
        assert_refused(&format!("an older app's SMS with {what}"), &refused, Some("data.from"));
    }
    stored.assert_nothing_stored("the refused webhooks").await;

    // The phone never sends a webhook again: a text over the limit is kept, cut by characters.
    let long = text_of(LIMIT + 500);
    assert_taken("an SMS of 10,500 characters", &hook(android_sms("long", Some(FRIEND), Some(FRIEND), &long)).await);
    let kept = stored.arrived(&cut(&long)).await;
    assert_eq!(kept["body"].as_str().unwrap().chars().count(), LIMIT);
    // The control: a normal SMS arrives.
    assert_taken("a normal SMS", &hook(android_sms("normal", Some(FRIEND), Some(FRIEND), "Is it still open?")).await);
    let message = stored.arrived("Is it still open?").await;
    assert_eq!(message["channel"], "sms");
    assert_eq!(stored.inbound().await.len(), 2);
    stored.assert_from_friend(&message).await;
}

// --- Kannel ---

/// Every byte outside the unreserved set percent-encoded, as smsbox sends `%p` and `%b`.
fn percent(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (*b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A Kannel line of the app's organisation, made with `msgline admin line create` (no smsbox
/// behind it: the tests call its hook as smsbox would); returns the hook's URL, with its secret.
async fn kannel_hook(app: &TestApp) -> String {
    let smsbox = format!("http://127.0.0.1:{}", free_port());
    let created = cli_json(
        &app.cli(&[
            "admin",
            "line",
            "create",
            "--e164",
            "+12015550100",
            "--kind",
            "dedicated",
            "--org",
            &app.org.id,
            "--bridge-kind",
            "kannel",
            "--bridge-url",
            &smsbox,
            "--bridge-username",
            "msgline",
            "--bridge-password",
            "kannel-password",
        ])
        .await,
    );
    // The command prints the URL with MSGLINE_PUBLIC_URL's base; the test's server is elsewhere.
    let printed = created["hook_url"].as_str().expect("hook_url");
    format!("{}{}", app.address, &printed[printed.find("/api/").expect("a path")..])
}

/// smsbox's `get-url` call for an arriving message (`kind=mo`), as kannel.conf's `sms-service`
/// makes it (see kannel_rig.rs): the sender's and the text's bytes, and `%C` when given.
async fn kannel_mo(
    app: &TestApp,
    hook: &str,
    id: &str,
    from: &[u8],
    text: &[u8],
    charset: Option<&str>,
) -> (u16, Value) {
    let mut url = format!(
        "{hook}&kind=mo&from={}&to=%2B12015550100&text={}&coding=0&time=1764000000&id={id}",
        percent(from),
        percent(text)
    );
    if let Some(charset) = charset {
        url.push_str(&format!("&charset={}", percent(charset.as_bytes())));
    }
    answer(app.client.get(url).send().await.expect("the hook answers")).await
}

#[tokio::test]
async fn a_kannel_message_with_a_blank_or_overlong_sender_is_refused_and_an_overlong_text_is_cut_to_10000_characters() {
    let app = app().await;
    let hook = kannel_hook(&app).await;
    let stored = Stored::App(&app);

    for (n, (what, from)) in absurd_senders().into_iter().enumerate() {
        let refused = kannel_mo(&app, &hook, &format!("bad-from-{n}"), from.as_bytes(), b"hello", Some("UTF-8")).await;
        assert_refused(&format!("a Kannel message with {what}"), &refused, Some("data.from"));
    }
    stored.assert_nothing_stored("the refused calls").await;

    // smsbox does not call again for a message it was answered 200: a text over the limit is
    // kept, cut by characters.
    let long = text_of(LIMIT + 500);
    let taken = kannel_mo(&app, &hook, "long", FRIEND.as_bytes(), long.as_bytes(), Some("UTF-8")).await;
    assert_taken("a Kannel message of 10,500 characters", &taken);
    let kept = stored.arrived(&cut(&long)).await;
    assert_eq!(kept["body"].as_str().unwrap().chars().count(), LIMIT);
    // The control: a normal message arrives.
    let taken =
        kannel_mo(&app, &hook, "normal", FRIEND.as_bytes(), "Grüße from a phone".as_bytes(), Some("UTF-8")).await;
    assert_taken("a normal Kannel message", &taken);
    let message = stored.arrived("Grüße from a phone").await;
    assert_eq!(message["channel"], "sms");
    assert_eq!(stored.inbound().await.len(), 2);
    stored.assert_from_friend(&message).await;
}

#[tokio::test]
async fn a_kannel_text_said_to_be_utf8_that_is_not_is_refused_and_the_same_bytes_as_latin1_arrive() {
    let app = app().await;
    let hook = kannel_hook(&app).await;
    let stored = Stored::App(&app);

    // `C3 28` (a lead byte without its continuation) and `caf E9` (Latin-1 é) are not UTF-8.
    for (n, bytes) in [&b"\xc3\x28"[..], &b"caf\xe9"[..]].into_iter().enumerate() {
        let refused = kannel_mo(&app, &hook, &format!("not-utf8-{n}"), FRIEND.as_bytes(), bytes, Some("UTF-8")).await;
        assert_refused(&format!("charset=UTF-8 with the bytes {bytes:02x?}"), &refused, None);
    }
    stored.assert_nothing_stored("the refused calls").await;

    // The same bytes as ISO-8859-1, or with no charset named: each byte is its code point.
    let taken = kannel_mo(&app, &hook, "latin-1", FRIEND.as_bytes(), b"\xc3\x28", Some("ISO-8859-1")).await;
    assert_taken("charset=ISO-8859-1 with the bytes c3 28", &taken);
    let latin1 = stored.arrived("\u{c3}(").await;
    assert_eq!(latin1["channel"], "sms");
    let taken = kannel_mo(&app, &hook, "no-charset", FRIEND.as_bytes(), b"caf\xe9", None).await;
    assert_taken("no charset with the bytes caf e9", &taken);
    stored.arrived("café").await;
    // The control: valid UTF-8 said to be UTF-8 arrives.
    let taken = kannel_mo(&app, &hook, "utf-8", FRIEND.as_bytes(), "naïve café".as_bytes(), Some("UTF-8")).await;
    assert_taken("charset=UTF-8 with valid UTF-8", &taken);
    let message = stored.arrived("naïve café").await;
    assert_eq!(stored.inbound().await.len(), 3);
    stored.assert_from_friend(&message).await;
}
