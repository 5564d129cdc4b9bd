//! What an outside red team found, tried as an attacker would: memory kept for refused input,
//! line-bound keys reaching past their line, bridge callbacks msgline cannot use answered 200,
//! and request bodies read as JSON whatever they were.

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{
    helpers::{TestDb, cli_value, eventually, serve_process, spawn_app},
    simline::{LineSpec, free_port},
};

/// The resident memory of a process, in MiB.
pub(crate) fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's status");
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kb / 1024.0
}

#[tokio::test]
async fn thousands_of_refused_requests_with_huge_numbers_do_not_grow_the_servers_memory() {
    let db = TestDb::new().await;
    let org = cli_value(db.url(), &["admin", "org", "create", "--name", "Hostile"]).await;
    let key = org["api_key"].as_str().unwrap().to_string();
    let port = free_port();
    let server = serve_process(db.url(), port, &[]).await;
    let pid = server.id().expect("a pid");
    let client = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}/api/v1/messaging");
    // Warm up the routes, then take the baseline.
    for _ in 0..20 {
        let refused = client.post(format!("{base}/contacts")).bearer_auth(&key).json(&json!({"phone": "x"}));
        assert_eq!(refused.send().await.unwrap().status(), 400);
    }
    let before = rss_mib(pid);

    // 2,000 refusals, each with a different 128 KiB "number" (as a send and as a contact), a
    // few at a time: before the fix every one of them was kept (256 MiB).
    use futures_util::StreamExt;
    futures_util::stream::iter(0..2_000usize)
        .for_each_concurrent(4, |n| {
            let (client, base, key) = (client.clone(), base.clone(), key.clone());
            async move {
                let huge = format!("+1{n}{}", "5".repeat(128 * 1024));
                let (path, body) = match n % 2 {
                    0 => ("messages", json!({"to": huge, "body": "hi"})),
                    _ => ("contacts", json!({"phone": huge})),
                };
                let answer = client.post(format!("{base}/{path}")).bearer_auth(&key).json(&body).send().await.unwrap();
                assert_eq!(answer.status(), 400, "a huge number is refused");
                let error = answer.text().await.unwrap();
                assert!(error.len() < 1_000, "the error does not send the input back whole: {} bytes", error.len());
            }
        })
        .await;

    // Request buffers are handed back within a second or so; what stays must be small.
    let mut after = rss_mib(pid);
    for _ in 0..50 {
        if after - before <= 48.0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        after = rss_mib(pid);
    }
    eprintln!("hostile memory: {before:.1} MiB before 2,000 refused 128 KiB numbers, {after:.1} MiB after");
    assert!(
        after - before <= 48.0,
        "2,000 refused requests of 128 KiB grew the server from {before:.1} to {after:.1} MiB"
    );
    let contacts: (i64,) = {
        let reader = msgline::Db::connect(db.url()).await.unwrap();
        sqlx::query_as("SELECT COUNT(*) FROM contacts").fetch_one(reader.writer_for_tests()).await.unwrap()
    };
    assert_eq!(contacts.0, 0, "nothing refused was written");
}

#[tokio::test]
async fn a_line_bound_key_sees_and_changes_nothing_of_another_line() {
    let app = spawn_app().await;
    let org = app.org.clone();
    let one = app.sim_line(LineSpec { e164: "+12015550100", org: Some(&org), sim_args: &[], start: true }).await;
    let two = app.sim_line(LineSpec { e164: "+12015550101", org: Some(&org), sim_args: &[], start: true }).await;
    let key = &app.org.key;
    let mut sent = Vec::new();
    for line in [&one, &two] {
        let body = json!({"to": "+12015550123", "body": "hello", "line_id": line.line_id});
        let id = app.post("/messages", key, body).await.expect(202)["message"]["id"].as_str().unwrap().to_string();
        app.wait_for_message(key, &id, "handed to the line", |m| m["status"] != "queued").await;
        sent.push(id);
    }
    let bound =
        app.create_key(&org, &["messaging_read", "messaging_send", "messaging_contacts"], Some(&one.line_id)).await;

    // GET /events: the bound line's attempts only, even when asked by message id.
    let all = app.get("/events", key).await.expect(200);
    assert!(all["data"].as_array().unwrap().len() >= 2, "{all}");
    let mine = app.get("/events", &bound).await.expect(200);
    let lines: Vec<&Value> = mine["data"].as_array().unwrap().iter().map(|a| &a["line_id"]).collect();
    assert!(!lines.is_empty() && lines.iter().all(|l| **l == one.line_id), "{mine}");
    let other = app.get(&format!("/events?message_id={}", sent[1]), &bound).await.expect(200);
    assert_eq!(other["data"], json!([]));

    // A contact card naming another line's agent: that agent does not exist for this key.
    let agent = app
        .post("/agents", key, json!({"name": "Bo", "line_id": two.line_id, "instructions": "Be brief."}))
        .await
        .expect(201);
    let card = json!({"to": "+12015550123", "agent_id": agent["id"]});
    app.post("/contact-cards", &bound, card).await.expect_error(404, "not_found", Some("agent_id"));

    // The automatic replies are every line's: a line-bound key cannot change them.
    let before = app.get("/settings", key).await.expect(200);
    let change = json!({"help_reply": "Line one only"});
    app.request(reqwest::Method::PATCH, "/settings", Some(&bound), Some(change.clone())).await.expect_error(
        409,
        "line_mismatch",
        None,
    );
    assert_eq!(app.get("/settings", key).await.expect(200), before);
    app.request(reqwest::Method::PATCH, "/settings", Some(key), Some(change)).await.expect(200);
}

#[tokio::test]
async fn bridge_callbacks_msgline_cannot_use_are_400_and_apply_nothing() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let key = &app.org.key;
    let poll = json!({"to": "+12015550123", "question": "Lunch?", "options": ["Pizza", "Tacos"]});
    let poll_message = app.post("/polls", key, poll).await.expect(202)["message"]["id"].as_str().unwrap().to_string();
    let callback =
        |body: Value| app.client.post(app.url("/bridge/events")).bearer_auth(&line.secret).json(&body).send();
    let inbound = |id: &str, channel: &str| json!({"id": id, "type": "message.inbound", "data": {"from": "+12015550123", "body": "hi", "channel": channel}});
    let refused = [
        (
            json!({"id": "e1", "type": "message.status", "data": {"message_id": poll_message, "status": "teleported"}}),
            "data.status",
        ),
        (
            json!({"id": "e2", "type": "poll.vote", "data": {"from": "+12015550123", "poll_message_id": poll_message, "option_index": -1}}),
            "data.option_index",
        ),
        (
            json!({"id": "e3", "type": "poll.vote", "data": {"from": "+12015550123", "poll_message_id": poll_message, "option_index": 99}}),
            "data.option_index",
        ),
        (json!({"id": "e4", "type": "group.state", "data": {"group_id": "conv_x", "state": "exploded"}}), "data.state"),
        (inbound("", "sms"), "id"),
        (inbound("e5", "carrier-pigeon"), "data.channel"),
        (json!([inbound("e6", "sms"), inbound("e7", "carrier-pigeon")]), "[1].data.channel"),
    ];
    for (body, field) in refused {
        let answer = callback(body.clone()).await.unwrap();
        assert_eq!(answer.status(), 400, "{body}");
        let error: Value = answer.json().await.unwrap();
        assert_eq!(
            (error["error"].as_str(), error["field"].as_str()),
            (Some("invalid_request"), Some(field)),
            "{body}"
        );
    }
    let inbound_count =
        || async { app.get("/messages?direction=inbound", key).await.expect(200)["data"].as_array().unwrap().len() };
    assert_eq!(inbound_count().await, 0, "nothing of a refused callback was applied");
    // The same events, well formed, are taken; an empty id no longer shadows later ones.
    let taken: Value =
        callback(json!([inbound("e6", "sms"), inbound("e7", "imessage")])).await.unwrap().json().await.unwrap();
    assert_eq!(taken["applied"], 2);
    assert_eq!(inbound_count().await, 2);
    let vote = json!({"id": "e8", "type": "poll.vote", "data": {"from": "+12015550123", "poll_message_id": poll_message, "option_index": 1}});
    assert_eq!(callback(vote).await.unwrap().status(), 200);
}

/// Sends raw bytes as one HTTP/1.1 request and returns the answer's status, headers and body.
async fn raw(address: &str, request: &[u8]) -> (u16, String, String) {
    let mut stream = tokio::net::TcpStream::connect(address.trim_start_matches("http://")).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_string())
}

#[tokio::test]
async fn bodies_that_are_not_one_json_value_are_refused_with_the_json_error_shape() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let key = &app.org.key;
    let conversation = app.create_conversation(&app.org, &line.line_id, "+12015550123").await;
    let send = |content_type: Option<&str>, body: &'static str| {
        let mut request = app.client.post(app.url("/messages")).bearer_auth(key).body(body);
        if let Some(kind) = content_type {
            request = request.header("content-type", kind);
        }
        request.send()
    };
    let read_error = |answer: reqwest::Response| async move {
        let status = answer.status().as_u16();
        (status, answer.json::<Value>().await.expect("a JSON error"))
    };

    // Bytes after the JSON value: nothing is sent.
    let trailing =
        read_error(send(Some("application/json"), r#"{"to": "+12015550123", "body": "hi"} garbage"#).await.unwrap())
            .await;
    assert_eq!((trailing.0, trailing.1["error"].as_str()), (400, Some("invalid_request")), "{}", trailing.1);
    // A body declared as something else is 415, in the JSON error shape.
    for kind in ["text/plain", "application/x-www-form-urlencoded", "application/xml"] {
        let (status, error) =
            read_error(send(Some(kind), r#"{"to": "+12015550123", "body": "hi"}"#).await.unwrap()).await;
        assert_eq!((status, error["error"].as_str()), (415, Some("unsupported_media_type")), "{kind}: {error}");
    }
    assert_eq!(app.get("/messages", key).await.expect(200)["data"], json!([]), "nothing was sent");
    // JSON with a charset, a +json type, or no type at all is read.
    send(Some("application/json; charset=utf-8"), r#"{"to": "+12015550123", "body": "one"}"#)
        .await
        .unwrap()
        .error_for_status()
        .unwrap();
    send(None, r#"{"to": "+12015550123", "body": "two"}"#).await.unwrap().error_for_status().unwrap();

    // Routes that take no fields still read what they are sent.
    let read = format!("/conversations/{}/read", conversation.id);
    let invalid_utf8 = app
        .client
        .post(app.url(&read))
        .bearer_auth(key)
        .header("content-type", "application/json")
        .body(vec![0xff, 0xfe, 0x7b])
        .send()
        .await
        .unwrap();
    assert_eq!(invalid_utf8.status(), 400);
    let too_large = app
        .client
        .post(app.url(&read))
        .bearer_auth(key)
        .header("content-type", "application/json")
        .body(format!("{{\"p\": \"{}\"}}", "x".repeat(1_100_000)))
        .send()
        .await
        .unwrap();
    assert_eq!(too_large.status(), 413);
    let form = app
        .client
        .post(app.url(&read))
        .bearer_auth(key)
        .header("content-type", "text/plain")
        .body("x=1")
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 415);
    let empty = app.client.post(app.url(&read)).bearer_auth(key).send().await.unwrap();
    assert_eq!(empty.status(), 204);

    // A URL too long for the HTTP layer still gets a JSON error with a request id.
    let long = format!("GET /api/v1/messaging/messages?x={} HTTP/1.1\r\nhost: a\r\n\r\n", "a".repeat(70 * 1024));
    let (status, head, body) = raw(&app.address, long.as_bytes()).await;
    assert_eq!(status, 414, "{head}");
    assert!(head.contains("content-type: application/json") && head.contains("x-request-id: "), "{head}");
    let error: Value = serde_json::from_str(&body).expect("a JSON body");
    assert_eq!(error["error"], "uri_too_long");
    // So does a request line that is not HTTP.
    let (status, _, body) = raw(&app.address, b"GET\x01/ nonsense\r\n\r\n").await;
    assert_eq!(status, 400);
    assert_eq!(serde_json::from_str::<Value>(&body).expect("a JSON body")["error"], "invalid_request");
    // The server still answers.
    eventually(5, "the server to answer", || async { (app.get("/lines", key).await.status == 200).then_some(()) })
        .await;
}
