//! The event feed: `PATCH /settings {"event_feed": true}`, `GET /feed` pages after a cursor and
//! `GET /feed/stream` server-sent events resumed after `Last-Event-ID`: every event once, in
//! order, across a restart and from another instance, a line-bound key's line only, and a
//! reader that does not read costing the server a bounded amount of memory.

use std::{
    collections::{HashMap, HashSet},
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{
    crash::send_numbered,
    helpers::{TestDb, api, eventually, json_answer, process_line, serve_process, spawn_app, use_postgres},
    simline::{LineSpec, free_port},
};

/// A `GET /feed/stream` being read: its events as they come.
pub struct Stream {
    response: reqwest::Response,
    buffer: String,
    /// Keep-alive comments seen.
    pub comments: usize,
}

/// An event of a stream: its `id:`, `event:` and `data:`.
#[derive(Debug, Clone)]
pub struct StreamEvent {
    pub id: String,
    pub kind: String,
    pub data: Value,
}

impl Stream {
    pub async fn open(port: u16, key: &str, last_event_id: Option<&str>) -> Stream {
        let mut request = reqwest::Client::new().get(api(port, "/feed/stream")).bearer_auth(key);
        if let Some(last) = last_event_id {
            request = request.header("Last-Event-ID", last);
        }
        let response = request.send().await.expect("the stream answers");
        assert_eq!(response.status(), 200, "the stream opens");
        assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
        Stream { response, buffer: String::new(), comments: 0 }
    }

    /// The next event, or `None` if none comes within `wait`.
    pub async fn next(&mut self, wait: Duration) -> Option<StreamEvent> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut id, mut kind, mut data) = (None, None, String::new());
                for line in block.lines() {
                    if line.starts_with(':') {
                        self.comments += 1;
                    } else if let Some(value) = line.strip_prefix("id: ").or_else(|| line.strip_prefix("id:")) {
                        id = Some(value.to_string());
                    } else if let Some(value) = line.strip_prefix("event: ").or_else(|| line.strip_prefix("event:")) {
                        kind = Some(value.to_string());
                    } else if let Some(value) = line.strip_prefix("data: ").or_else(|| line.strip_prefix("data:")) {
                        data.push_str(value);
                    }
                }
                if let (Some(id), Some(kind)) = (id, kind) {
                    let data: Value = serde_json::from_str(&data).expect("each event's data is JSON");
                    assert_eq!(data["id"], id.as_str(), "data is the event object");
                    assert_eq!(data["type"], kind.as_str());
                    return Some(StreamEvent { id, kind, data });
                }
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk()).await.ok()?;
            let chunk = chunk.expect("the stream reads").expect("the stream stays open");
            self.buffer.push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
        }
    }

    /// Events until `enough` holds for those read (failing after `secs`).
    pub async fn until(&mut self, secs: u64, enough: impl Fn(&[StreamEvent]) -> bool) -> Vec<StreamEvent> {
        let mut read = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(secs);
        while !enough(&read) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left).await {
                Some(event) => read.push(event),
                None => panic!("the stream gave {} events in {secs} s, not enough", read.len()),
            }
        }
        read
    }
}

async fn feed_on(port: u16, key: &str) {
    let answer = reqwest::Client::new()
        .patch(api(port, "/settings"))
        .bearer_auth(key)
        .json(&json!({"event_feed": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.json::<Value>().await.unwrap()["event_feed"], true);
}

/// Every event of the feed, read page by page (`limit` each) from the start.
async fn read_all(port: u16, key: &str, limit: usize) -> Vec<Value> {
    let client = reqwest::Client::new();
    let (mut all, mut after): (Vec<Value>, Option<String>) = (Vec::new(), None);
    loop {
        let mut url = format!("{}?limit={limit}", api(port, "/feed"));
        if let Some(after) = &after {
            url.push_str(&format!("&after={after}"));
        }
        let page = json_answer(client.get(url).bearer_auth(key)).await;
        let data = page["data"].as_array().expect("data").clone();
        assert!(data.len() <= limit);
        if data.is_empty() {
            assert_eq!(page["next_cursor"].as_str(), after.as_deref(), "an empty page keeps the cursor");
            return all;
        }
        after = page["next_cursor"].as_str().map(str::to_string);
        assert_eq!(after.as_deref(), data.last().unwrap()["id"].as_str(), "next_cursor is the last event");
        all.extend(data);
    }
}

/// The statuses of each message as its events give them, in the feed's order.
fn statuses(events: &[Value]) -> HashMap<String, Vec<String>> {
    let mut by_message: HashMap<String, Vec<String>> = HashMap::new();
    for event in events {
        if let Some(status) = event["type"].as_str().unwrap().strip_prefix("messaging.message.") {
            let id = event["data"]["message"]["id"].as_str().unwrap().to_string();
            by_message.entry(id).or_default().push(status.to_string());
        }
    }
    by_message
}

fn assert_once_each_in_order(events: &[Value], messages: &[String]) {
    let ids: Vec<&str> = events.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len(), "no event twice");
    let by_message = statuses(events);
    for id in messages {
        let seen = &by_message[id];
        assert_eq!(seen.first().map(String::as_str), Some("queued"), "{id}: {seen:?}");
        assert_eq!(seen.last().map(String::as_str), Some("delivered"), "{id}: {seen:?}");
        assert_eq!(seen.iter().collect::<HashSet<_>>().len(), seen.len(), "{id}: each status once: {seen:?}");
    }
}

#[tokio::test]
async fn the_feed_is_off_until_turned_on_then_pages_give_every_event_once_oldest_first() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let key = app.org.key.clone();
    app.get("/feed", &key).await.expect_error(409, "event_feed_off", None);
    // Nothing is kept while the feed is off and there is no endpoint.
    let before = app.post("/messages", &key, json!({"to": "+12015550199", "body": "unseen"})).await.expect(202);
    let before = before["message"]["id"].as_str().unwrap().to_string();
    app.wait_for_message(&key, &before, "the first send delivered", |m| m["status"] == "delivered").await;
    assert!(app.event_types(&before).await.is_empty(), "no events while the feed is off: {before}");

    let answer = app.request(reqwest::Method::PATCH, "/settings", Some(&key), Some(json!({"event_feed": "yes"}))).await;
    answer.expect_error(400, "invalid_request", Some("event_feed"));
    feed_on(app.port, &key).await;
    assert_eq!(app.get("/settings", &key).await.expect(200)["event_feed"], true);

    let mut messages = Vec::new();
    for i in 0..12 {
        let sent =
            app.post("/messages", &key, json!({"to": format!("+120155502{i:02}"), "body": format!("m{i}")})).await;
        messages.push(sent.expect(202)["message"]["id"].as_str().unwrap().to_string());
    }
    for id in &messages {
        app.wait_for_message(&key, id, "delivered", |m| m["status"] == "delivered").await;
    }
    let whole = read_all(app.port, &key, 200).await;
    let paged = read_all(app.port, &key, 5).await;
    let ids = |events: &[Value]| events.iter().map(|e| e["id"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(ids(&paged), ids(&whole), "pages of 5 give what one page gives, in the same order");
    assert_once_each_in_order(&whole, &messages);
    assert!(!statuses(&whole).contains_key(&before), "an event written while the feed was off is not in it");
    // The event object is the webhook's.
    let first = &whole[0];
    assert_eq!(first["type"], "messaging.message.queued");
    assert!(first["created_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(first["data"]["message"]["line_id"], line.line_id.as_str());

    // Bad cursors and limits change nothing and say which parameter is at fault.
    app.get("/feed?after=evt_nosuchevent", &key).await.expect_error(400, "invalid_request", Some("after"));
    app.get("/feed?after=msg_x'--", &key).await.expect_error(400, "invalid_request", Some("after"));
    app.get("/feed?limit=0", &key).await.expect_error(400, "invalid_request", Some("limit"));
    app.get("/feed?limit=201", &key).await.expect_error(400, "invalid_request", Some("limit"));
    // Another organisation's event is not a cursor here, and its feed is its own.
    let other = app.create_org("Other").await;
    feed_on(app.port, &other.key).await;
    let cursor = format!("/feed?after={}", first["id"].as_str().unwrap());
    app.get(&cursor, &other.key).await.expect_error(400, "invalid_request", Some("after"));
    assert!(app.get("/feed", &other.key).await.expect(200)["data"].as_array().unwrap().is_empty());
    // The scope.
    let contacts_only = app.create_key(&app.org, &["messaging_contacts"], None).await;
    app.get("/feed", &contacts_only).await.expect_error(403, "missing messaging_read scope", None);
}

#[tokio::test]
async fn a_line_bound_key_reads_its_own_line_s_events_only() {
    let app = spawn_app().await;
    let org = app.org.clone();
    let a = app.sim_line(LineSpec { e164: "+12015550100", org: Some(&org), sim_args: &[], start: true }).await;
    let b = app.sim_line(LineSpec { e164: "+12015550101", org: Some(&org), sim_args: &[], start: true }).await;
    feed_on(app.port, &org.key).await;
    let bound = app.create_key(&org, &["messaging_read", "messaging_send"], Some(&a.line_id)).await;
    let mut on_a = Vec::new();
    for (i, from) in ["+12015550100", "+12015550101", "+12015550100", "+12015550101"].iter().enumerate() {
        let sent =
            app.post("/messages", &org.key, json!({"from": from, "to": format!("+1201555030{i}"), "body": "x"})).await;
        let id = sent.expect(202)["message"]["id"].as_str().unwrap().to_string();
        app.wait_for_message(&org.key, &id, "delivered", |m| m["status"] == "delivered").await;
        if *from == "+12015550100" {
            on_a.push(id);
        }
    }
    let everything = read_all(app.port, &org.key, 200).await;
    assert_eq!(statuses(&everything).len(), 4, "the organisation's key sees both lines");
    let own = read_all(app.port, &bound, 3).await;
    assert_once_each_in_order(&own, &on_a);
    for event in &own {
        assert_eq!(event["data"]["message"]["line_id"], a.line_id.as_str(), "{event}");
    }
    assert!(own.len() < everything.len());
    // Its stream too: it resumes after its first event and gives line A's events only.
    let mut stream = Stream::open(app.port, &bound, own[0]["id"].as_str()).await;
    let streamed = stream.until(20, |read| read.len() == own.len() - 1).await;
    let streamed: Vec<&str> = streamed.iter().map(|e| e.id.as_str()).collect();
    let expected: Vec<&str> = own[1..].iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(streamed, expected);
    drop(b);
}

#[tokio::test]
async fn a_stream_resumed_after_last_event_id_across_a_kill_9_loses_and_repeats_nothing() {
    let db = TestDb::new().await;
    let url = db.url().to_string();
    let mut line = process_line(&url, "Stream").await;
    let port = line.port;
    let mut server = serve_process(&url, port, &[]).await;
    let (key, client) = (line.key.clone(), reqwest::Client::new());
    feed_on(port, &key).await;
    // An idle stream gives nothing, and a fresh one starts at what comes next.
    let mut stream = Stream::open(port, &key, None).await;
    assert!(stream.next(Duration::from_millis(500)).await.is_none());
    let mut sent = Vec::new();
    for i in 0..10 {
        sent.push(send_numbered(&client, &api(port, "/messages"), &key, "first", i).await.expect("accepted"));
    }
    let delivered =
        |read: &[StreamEvent], n: usize| read.iter().filter(|e| e.kind == "messaging.message.delivered").count() >= n;
    let mut read = stream.until(60, |read| delivered(read, 5)).await;
    drop(stream);

    server.start_kill().unwrap();
    server.wait().await.unwrap();
    server = serve_process(&url, port, &[]).await;
    let last = read.last().unwrap().id.clone();
    let mut resumed = Stream::open(port, &key, Some(&last)).await;
    for i in 0..10 {
        sent.push(send_numbered(&client, &api(port, "/messages"), &key, "second", i).await.expect("accepted"));
    }
    let already = read.iter().filter(|e| e.kind == "messaging.message.delivered").count();
    read.extend(resumed.until(60, |more| delivered(more, 20 - already)).await);
    // Whatever else the stream still had to give (the last steps of the first messages).
    let whole = read_all(port, &key, 200).await;
    while read.len() < whole.len() {
        match resumed.next(Duration::from_secs(10)).await {
            Some(event) => read.push(event),
            None => break,
        }
    }
    let streamed: Vec<&str> = read.iter().map(|e| e.id.as_str()).collect();
    let paged: Vec<&str> = whole.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(streamed, paged, "the stream and its resumption give the feed, once each, in order");
    assert_once_each_in_order(&whole, &sent);
    let unknown =
        client.get(api(port, "/feed/stream")).bearer_auth(&key).header("Last-Event-ID", "evt_gone").send().await;
    let unknown = unknown.unwrap();
    assert_eq!(unknown.status(), 400);
    assert_eq!(unknown.json::<Value>().await.unwrap()["field"], "Last-Event-ID");
    drop(server);
    line.sim.start_kill().ok();
}

#[tokio::test]
async fn an_idle_stream_sends_a_keep_alive_comment_within_15_seconds() {
    let app = spawn_app().await;
    feed_on(app.port, &app.org.key).await;
    let mut stream = Stream::open(app.port, &app.org.key, None).await;
    assert!(stream.next(Duration::from_secs(16)).await.is_none(), "no event on an idle feed");
    assert!(stream.comments >= 1, "a keep-alive comment came within 16 s");
}

#[tokio::test]
async fn an_event_committed_through_another_instance_reaches_a_stream_within_a_second() {
    if !use_postgres() {
        return; // several instances need a shared server database: the PostgreSQL pass runs this
    }
    let db = TestDb::new_postgres().await;
    let url = db.url().to_string();
    let line = process_line(&url, "Two instances").await;
    let other = free_port();
    let _a = serve_process(&url, line.port, &[]).await;
    let _b = serve_process(&url, other, &[]).await;
    let key = line.key.clone();
    feed_on(line.port, &key).await;
    let mut stream = Stream::open(line.port, &key, None).await;
    let client = reqwest::Client::new();
    for i in 0..5 {
        let id = send_numbered(&client, &api(other, "/messages"), &key, "elsewhere", i).await.expect("accepted");
        let accepted = Instant::now();
        let event = loop {
            let event = stream.next(Duration::from_secs(5)).await.expect("the event reaches the other instance");
            if event.kind == "messaging.message.queued" && event.data["data"]["message"]["id"] == id.as_str() {
                break event;
            }
        };
        let took = accepted.elapsed();
        assert!(took < Duration::from_secs(1), "send {i}: {} reached instance A after {took:?}", event.id);
    }
}

/// The server's resident memory, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_reader_that_does_not_read_costs_the_server_a_bounded_amount_of_memory() {
    let db = TestDb::new().await;
    let url = db.url().to_string();
    let line = process_line(&url, "Slow reader").await;
    let port = line.port;
    let server = serve_process(&url, port, &[]).await;
    let key = line.key.clone();
    feed_on(port, &key).await;
    // About 30 MB of events: 800 messages of 9,000 characters, each in every event of its
    // lifecycle.
    let client = reqwest::Client::new();
    let body = "x".repeat(9_000);
    let mut last = String::new();
    for i in 0..800 {
        let answer = client
            .post(api(port, "/messages"))
            .bearer_auth(&key)
            .json(&json!({"to": format!("+1201555{:04}", 2000 + i), "body": body}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 202);
        last = answer.json::<Value>().await.unwrap()["message"]["id"].as_str().unwrap().to_string();
    }
    eventually(120, "the last message delivered", || async {
        let message = json_answer(client.get(api(port, &format!("/messages/{last}"))).bearer_auth(&key)).await;
        (message["status"] == "delivered").then_some(())
    })
    .await;
    let first = json_answer(client.get(format!("{}?limit=1", api(port, "/feed"))).bearer_auth(&key)).await;
    let first = first["data"][0]["id"].as_str().unwrap().to_string();
    let pid = server.id().expect("the server runs");
    let settled = rss_kib(pid);

    // A client asks for the whole feed from its first event and reads nothing of it.
    let mut stalled = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let request = format!(
        "GET /api/v1/messaging/feed/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n\
         Last-Event-ID: {first}\r\n\r\n"
    );
    stalled.write_all(request.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    stalled.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let stalled_at = rss_kib(pid);
    let grown = stalled_at.saturating_sub(settled);
    eprintln!("server RSS {settled} KiB settled, {stalled_at} KiB with a stalled reader: +{grown} KiB");
    assert!(grown < 16 * 1024, "a reader that reads nothing grew the server by {grown} KiB, more than 16 MiB");
    // The connection is still the server's to give the rest to: a reader that catches up gets it.
    let mut caught_up = Stream::open(port, &key, Some(&first)).await;
    assert!(caught_up.next(Duration::from_secs(10)).await.is_some());
    drop(stalled);
}
