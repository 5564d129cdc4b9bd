//! The egress client for customer-supplied URLs ignores proxy settings: a proxy would resolve the
//! target itself, past the check that refuses private addresses.

use std::{sync::atomic::Ordering, time::Duration};

use serde_json::json;

use crate::{
    helpers::{TestDb, json_answer, process_line, serve_process},
    simline::free_port,
};

#[tokio::test]
async fn a_proxy_in_the_environment_is_never_used_for_customer_urls() {
    // A "proxy" that counts the connections it gets.
    let (proxy_port, connections) = crate::helpers::counting_listener().await;
    let proxy_url = format!("http://127.0.0.1:{proxy_port}");

    let db = TestDb::new().await;
    let url = db.url().to_string();
    let line = process_line(&url, "Proxy").await;
    // For https only: the simulated line is called over http, by the bridge client, which is the
    // operator's to route.
    let _server = serve_process(&url, line.port, &[("HTTPS_PROXY", proxy_url.as_str())]).await;
    let client = reqwest::Client::new();
    let api = |path: &str| format!("http://127.0.0.1:{}/api/v1/messaging{path}", line.port);

    // A name that resolves to loopback: refused by msgline's own resolver, never handed to a proxy.
    let card = json!({"to": "+12015550123", "name": "Ann", "phone": "+12015550177",
                      "photo_url": format!("https://localhost:{}/photo.jpg", free_port())});
    let answer = client.post(api("/contact-cards")).bearer_auth(&line.key).json(&card).send().await.unwrap();
    assert_eq!(answer.status(), 400);
    let body: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(body["field"], "photo_url", "{body}");

    // A webhook to a public-looking name that cannot be resolved here: tried directly (and
    // failing), never through the proxy.
    let hook = json_answer(
        client
            .post(api("/webhooks"))
            .bearer_auth(&line.key)
            .json(&json!({"url": "https://hooks.example.invalid/msgline", "events": ["messaging.message.queued"]})),
    )
    .await;
    assert!(hook["id"].is_string(), "{hook}");
    let sent = client
        .post(api("/messages"))
        .bearer_auth(&line.key)
        .json(&json!({"to": "+12015550123", "body": "hello"}))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 202);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(connections.load(Ordering::SeqCst), 0, "nothing went through the proxy");
}
