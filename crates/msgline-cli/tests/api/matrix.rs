//! Two matrices over every operation of the OpenAPI document, so that a new route is covered
//! the day it is added:
//! - tenants: another organisation's id is 404 on every route that takes an id, and changes
//!   nothing;
//! - bad input: malformed, mistyped, oversized, invalid UTF-8 and NUL-carrying bodies, garbage
//!   paging and garbage ids are a JSON 4xx on every route, never a 5xx or a hang, and change
//!   nothing.

use std::{collections::HashMap, time::Duration};

use reqwest::Method;
use serde_json::{Value, json};

use crate::{
    helpers::{TestApp, spawn_app_with},
    openapi::{METHODS, document, example_body},
};

/// The server with its rate limits out of the way: every case must be judged on its input.
async fn unlimited() -> TestApp {
    spawn_app_with(|c| {
        c.rate_limit_per_minute = 1_000_000;
        c.send_rate_limit_per_minute = 1_000_000;
        // The media message below is fetched from a loopback server.
        c.allow_private_targets = true;
    })
    .await
}

/// One of each resource of the test's organisation, by the path segment before its `{id}`.
async fn resources(app: &TestApp) -> HashMap<&'static str, String> {
    let line = app.default_line().await;
    let key = &app.org.key;
    let sent = app.post("/messages", key, json!({"to": "+12015550123", "body": "hello"})).await.expect(202);
    let files = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let files_at = files.local_addr().unwrap();
    let router = axum::Router::new().route("/a.pdf", axum::routing::get(|| async { b"%PDF-1.7\n%%EOF\n".to_vec() }));
    tokio::spawn(async move { axum::serve(files, router).await.unwrap() });
    let media = app
        .post("/messages", key, json!({"to": "+12015550123", "media_urls": [format!("http://{files_at}/a.pdf")]}))
        .await
        .expect(202);
    let poll = app
        .post("/polls", key, json!({"to": "+12015550123", "question": "Lunch?", "options": ["Pizza", "Tacos"]}))
        .await
        .expect(202);
    let group = app
        .post("/groups", key, json!({"participants": ["+12015550123", "+12015550124"], "body": "Hi all"}))
        .await
        .expect(201);
    let webhook = app
        .post("/webhooks", key, json!({"url": "https://example.com/hook", "events": ["messaging.message.queued"]}))
        .await
        .expect(201);
    let agent = app
        .post(
            "/agents",
            key,
            json!({"name": "Ava", "line_id": line.line_id, "instructions": "Help.", "enabled": false}),
        )
        .await
        .expect(201);
    let made_key = app.post("/keys", key, json!({"name": "spare", "scopes": ["messaging_read"]})).await.expect(201);
    // An opt-out, and msgline's reply to it.
    line.inbound("+12015550133", "STOP").await;
    let opt_out = app.get("/opt-outs", key).await.expect(200)["data"][0].clone();
    let replies = app.get("/messages?direction=outbound&limit=200", key).await.expect(200);
    let reply = replies["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["body"].as_str().is_some_and(|b| b.contains("unsubscribed")))
        .map(|m| m["id"].clone());
    assert!(reply.is_some(), "the reply to STOP");
    // Settled first: a message's later moves would write events while the matrix runs.
    let settled = [&sent["message"]["id"], &media["message"]["id"], &poll["message"]["id"], &group["message"]["id"]];
    for id in settled.into_iter().chain(&reply) {
        let id = id.as_str().unwrap();
        app.wait_for_message(key, id, "delivered", |m| m["status"] == "delivered").await;
    }
    let text = |v: &Value| v.as_str().expect("an id").to_string();
    HashMap::from([
        ("messages", text(&sent["message"]["id"])),
        ("contacts", text(&sent["message"]["contact_id"])),
        ("conversations", text(&sent["message"]["conversation_id"])),
        ("polls", text(&poll["poll"]["id"])),
        ("groups", text(&group["group"]["id"])),
        ("webhooks", text(&webhook["id"])),
        ("agents", text(&agent["id"])),
        ("keys", text(&made_key["id"])),
        ("lines", line.line_id.clone()),
        ("opt-outs", text(&opt_out["id"])),
        ("attachments", text(&media["message"]["attachments"][0]["id"])),
    ])
}

/// `path` with `{id}` replaced by the organisation's resource of that kind.
fn with_id(path: &str, ids: &HashMap<&'static str, String>) -> Option<String> {
    let (before, _) = path.split_once("/{id}")?;
    let kind = before.rsplit('/').next()?;
    Some(path.replace("{id}", ids.get(kind)?).replace("{reaction}", "love"))
}

/// Everything the matrices must leave as it was: each table's row count.
async fn row_counts(app: &TestApp) -> Vec<(&'static str, i64)> {
    let mut counts = Vec::new();
    for table in [
        "messages",
        "contacts",
        "conversations",
        "polls",
        "webhooks",
        "agents",
        "api_keys",
        "events",
        "poll_votes",
        "opt_outs",
    ] {
        let (n,): (i64,) = sqlx::query_as(&format!("SELECT COUNT(*) FROM {table}"))
            .fetch_one(app.db().writer_for_tests())
            .await
            .unwrap();
        counts.push((table, n));
    }
    counts
}

/// The state of the organisation's resources as the API shows them.
async fn snapshot(app: &TestApp, ids: &HashMap<&'static str, String>) -> Vec<Value> {
    let mut shown = Vec::new();
    for (kind, id) in ids {
        if matches!(*kind, "keys" | "opt-outs" | "attachments") {
            continue; // listed below, or bytes rather than JSON
        }
        let mut answer = app.get(&format!("/{kind}/{id}"), &app.org.key).await.expect(200);
        if let Some(object) = answer.as_object_mut() {
            // What moves by itself: a message's progress, a line's last check.
            for moving in ["status", "updated_at", "submitted_at", "sent_at", "delivered_at", "read_at", "checked_at"] {
                object.remove(moving);
            }
        }
        shown.push(json!({kind.to_string(): answer}));
    }
    shown.push(app.get("/keys", &app.org.key).await.expect(200));
    shown.push(app.get("/opt-outs", &app.org.key).await.expect(200));
    shown.push(app.get("/settings", &app.org.key).await.expect(200));
    shown
}

async fn raw(app: &TestApp, method: &str, path: &str, key: &str, body: Option<Vec<u8>>) -> (u16, String, String) {
    raw_as(app, method, path, key, body, "application/json").await
}

/// [`raw`] with the body declared as `content_type`.
async fn raw_as(
    app: &TestApp,
    method: &str,
    path: &str,
    key: &str,
    body: Option<Vec<u8>>,
    content_type: &str,
) -> (u16, String, String) {
    let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
    let mut request =
        app.client.request(method, format!("{}{path}", app.address)).bearer_auth(key).timeout(Duration::from_secs(15));
    if let Some(body) = body {
        request = request.header("content-type", content_type).body(body);
    }
    let response = request.send().await.unwrap_or_else(|e| panic!("{path} answered nothing: {e}"));
    let status = response.status().as_u16();
    let kind = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    (status, kind, response.text().await.unwrap_or_default())
}

#[tokio::test]
async fn another_organisations_id_is_404_on_every_route_that_takes_one_and_changes_nothing() {
    let app = unlimited().await;
    let document = document(&app).await;
    let ids = resources(&app).await;
    let other = app.create_org("Other").await;
    let (counts, shown) = (row_counts(&app).await, snapshot(&app, &ids).await);
    let mut checked = 0;
    for (path, item) in document["paths"].as_object().unwrap() {
        let Some(path) = path.strip_prefix("/api/v1/messaging") else { continue };
        // A line's bridge authenticates with its secret, never an organisation's key.
        if path.starts_with("/bridge/") {
            continue;
        }
        let Some(concrete) = with_id(path, &ids) else { continue };
        for method in METHODS {
            let operation = &item[method];
            if operation.is_null() {
                continue;
            }
            let body = example_body(&document, operation).map(|b| serde_json::to_vec(&b).unwrap());
            let (status, _, text) = raw(&app, method, &format!("/api/v1/messaging{concrete}"), &other.key, body).await;
            assert_eq!(status, 404, "{method} {concrete} with another organisation's key: {text}");
            for id in ids.values() {
                assert!(!text.contains(id.as_str()), "{method} {concrete} shows {id}: {text}");
            }
            checked += 1;
        }
    }
    eprintln!("tenant matrix: {checked} operations with an id, each 404");
    assert!(checked >= 20, "{checked} operations with an id");
    assert_eq!(row_counts(&app).await, counts);
    assert_eq!(snapshot(&app, &ids).await, shown);
}

#[tokio::test]
async fn bad_input_on_every_route_is_a_json_4xx_and_changes_nothing() {
    let app = unlimited().await;
    let document = document(&app).await;
    let ids = resources(&app).await;
    let (counts, shown) = (row_counts(&app).await, snapshot(&app, &ids).await);
    let key = app.org.key.clone();
    let mut cases = 0;
    let mut expect_4xx = |method: &str, path: &str, (status, kind, text): (u16, String, String)| {
        assert!((400..500).contains(&status) && status != 429, "{method} {path}: {status} {text}");
        assert!(kind.starts_with("application/json"), "{method} {path}: {status} {kind} {text}");
        let body: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{method} {path}: {text}"));
        assert!(body["error"].is_string(), "{method} {path}: {body}");
        cases += 1;
    };
    for (path, item) in document["paths"].as_object().unwrap() {
        let Some(short) = path.strip_prefix("/api/v1/messaging") else { continue };
        let path = match with_id(short, &ids) {
            Some(concrete) => format!("/api/v1/messaging{concrete}"),
            None if short.contains('{') => format!("/api/v1/messaging{}", short.replace("{line_id}", "line_none")),
            None => path.clone(),
        };
        for method in METHODS {
            let operation = &item[method];
            if operation.is_null() {
                continue;
            }
            if !operation["requestBody"].is_null() {
                let mb = |n: usize| {
                    let mut body = b"{\"body\": \"".to_vec();
                    body.extend(std::iter::repeat_n(b'a', n));
                    body.extend(b"\"}");
                    body
                };
                let bodies: Vec<Vec<u8>> = vec![
                    b"{".to_vec(),
                    b"[]".to_vec(),
                    b"\"text\"".to_vec(),
                    b"{\"to\": 5, \"body\": [1], \"name\": {}, \"url\": 7, \"since\": false, \"phone\": 1, \
                      \"scopes\": \"all\", \"participants\": \"x\", \"options\": 3, \"grace_seconds\": \"soon\"}"
                        .to_vec(),
                    b"{\"body\": \"\xff\xfe\", \"name\": \"\xc3\x28\"}".to_vec(),
                    b"{\"body\": \"a\\u0000b\", \"name\": \"a\\u0000\"}".to_vec(),
                    mb(1024 * 1024),
                    mb(10 * 1024 * 1024),
                ];
                for body in bodies {
                    let case = format!("{path} with {}", String::from_utf8_lossy(&body[..body.len().min(40)]));
                    expect_4xx(method, &case, raw(&app, method, &path, &key, Some(body)).await);
                }
                // A body that would do if it ended after its JSON value, and one declared as
                // something other than JSON (415).
                let plausible = "{\"to\": \"+12015550123\", \"body\": \"hi\", \"name\": \"Ann\", \"phone\": \"+12015550123\", \
                                 \"url\": \"https://receiver.example/hook\", \"events\": [\"*\"], \"scopes\": [\"messaging_read\"]}";
                let trailing = format!("{plausible} garbage").into_bytes();
                expect_4xx(
                    method,
                    &format!("{path} with trailing bytes"),
                    raw(&app, method, &path, &key, Some(trailing)).await,
                );
                for kind in ["text/plain", "application/x-www-form-urlencoded", "application/xml"] {
                    let answer = raw_as(&app, method, &path, &key, Some(plausible.as_bytes().to_vec()), kind).await;
                    if !path.contains("/bridge/") {
                        assert_eq!(answer.0, 415, "{method} {path} as {kind}: {}", answer.2);
                    }
                    expect_4xx(method, &format!("{path} as {kind}"), answer);
                }
            }
            if method == "get"
                && operation["parameters"].as_array().is_some_and(|p| p.iter().any(|p| p["name"] == "limit"))
            {
                for query in [
                    "limit=-1",
                    "limit=0",
                    "limit=99999999999999999999",
                    "limit=abc",
                    "cursor=%25%25%25",
                    "cursor=AAAA",
                ] {
                    let url = format!("{path}?{query}");
                    expect_4xx(method, &url, raw(&app, method, &url, &key, None).await);
                }
            }
        }
    }
    // Ids that are not text at all.
    for path in
        ["/api/v1/messaging/messages/%FF%FE", "/api/v1/messaging/contacts/%00", "/api/v1/messaging/agents/%C3%28"]
    {
        expect_4xx("get", path, raw(&app, "get", path, &key, None).await);
    }
    eprintln!("bad input matrix: {cases} cases, each a JSON 4xx");
    assert!(cases >= 150, "{cases} cases");
    assert_eq!(row_counts(&app).await, counts);
    assert_eq!(snapshot(&app, &ids).await, shown);
}
