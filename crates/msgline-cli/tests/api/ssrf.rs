//! Every way of writing an internal address, in every URL the server fetches for a customer
//! (contact-card photos, media, webhook endpoints): refused, and a listener on that address proves
//! that nothing reached it.

use std::sync::atomic::Ordering;

use serde_json::json;

use crate::helpers::spawn_app;

/// Ways of naming 127.0.0.1 (or a private IPv4 embedded in IPv6) on `port`.
fn internal_urls(port: u16) -> Vec<String> {
    let hosts = [
        "127.0.0.1",
        "localhost",
        "localhost.",
        "2130706433",
        "0x7f000001",
        "0177.0.0.1",
        "0x7f.0.0.1",
        "127.1",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[::127.0.0.1]",
        "[::ffff:0:127.0.0.1]",
        "[::ffff:0:7f00:1]",
        "[::ffff:0:10.0.0.1]",
        "[64:ff9b::7f00:1]",
        "[2002:7f00:1::]",
        "[2001:0:808:808::80ff:fffe]",
        "[fe80::1]",
        "169.254.169.254",
        "100.64.0.1",
        "10.0.0.1",
        "0.0.0.0",
    ];
    hosts.iter().map(|host| format!("https://{host}:{port}/x.jpg")).collect()
}

#[tokio::test]
async fn internal_addresses_in_every_form_are_refused_and_nothing_reaches_them() {
    let (port, arrived) = crate::helpers::counting_listener().await;
    let app = spawn_app().await;
    let _line = app.default_line().await;
    let key = &app.org.key;
    let urls = internal_urls(port);

    for url in &urls {
        // A contact card's photo is fetched while the request waits: a 400 naming the field.
        // The reason is the address, not a failed connection: nothing was tried.
        let card = json!({"to": "+12015550123", "name": "Ann", "phone": "+12015550177", "photo_url": url});
        let refused =
            app.post("/contact-cards", key, card).await.expect_error(400, "invalid_request", Some("photo_url"));
        assert!(refused["message"].as_str().unwrap().contains("private"), "{url}: {refused}");
        // A message's media, likewise.
        let media = json!({"to": "+12015550123", "body": "look", "media_urls": [url]});
        let refused = app.post("/messages", key, media).await.expect_error(400, "invalid_request", Some("media_urls"));
        assert!(refused["message"].as_str().unwrap().contains("private"), "{url}: {refused}");
    }
    for url in &urls {
        // A webhook endpoint is refused when it is registered: an address by its value, a name
        // (`localhost.` too) by its spelling. Others are refused at each delivery, where the name
        // resolves.
        let answer = app.post("/webhooks", key, json!({"url": url, "events": ["messaging.message.queued"]})).await;
        answer.expect_error(400, "invalid_request", Some("url"));
    }
    assert!(app.get("/webhooks", key).await.expect(200)["data"].as_array().unwrap().is_empty());
    assert_eq!(arrived.load(Ordering::SeqCst), 0, "nothing reached the internal listener");
}
