//! `POST /contact-cards`: fields, the photo and its limits, the vCard the phone receives.

use axum::{Router, http::StatusCode, response::IntoResponse, routing::get};
use base64::{Engine, engine::general_purpose::STANDARD};
use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app, spawn_app_with};

const FRIEND: &str = "+12015550123";
const KB200: usize = 200 * 1024;

fn jpeg(len: usize) -> Vec<u8> {
    let mut bytes = vec![0xff, 0xd8, 0xff, 0xe0];
    bytes.resize(len, 0x42);
    bytes
}

/// A customer's web server with photos of every kind and size, on a loopback port.
async fn photo_server() -> String {
    let router = Router::new()
        .route("/exact.jpg", get(|| async { jpeg(KB200) }))
        .route("/over.jpg", get(|| async { jpeg(KB200 + 1) }))
        .route("/small.jpg", get(|| async { jpeg(1000) }))
        .route("/photo.png", get(|| async { msgline::testing::domain::photo::SERVICE_MARK.to_vec() }))
        .route("/photo.gif", get(|| async { b"GIF89a\x01\x00\x01\x00\x00\x00\x00;".to_vec() }))
        // A page that claims to be an image: the type comes from the bytes.
        .route("/fake.jpg", get(|| async { ([("content-type", "image/jpeg")], "<html>not an image</html>") }))
        .route(
            "/redirect.jpg",
            get(|| async { (StatusCode::FOUND, [("location", "http://127.0.0.1:1/secret.jpg")]).into_response() }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    address
}

fn card(extra: Value) -> Value {
    let mut body = json!({"to": FRIEND, "name": "Ann Lee", "phone": "+12015550177"});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

/// Sends a card and waits until the phone has sent it; returns the envelope and the vCard.
async fn sent_card(app: &TestApp, line: &crate::simline::SimLine, body: Value) -> (Value, String) {
    let envelope = app.post("/contact-cards", &app.org.key, body).await.expect(202);
    let id = envelope["message"]["id"].as_str().unwrap().to_string();
    app.wait_for_message(&app.org.key, &id, "submitted", |m| m["status"] != "queued").await;
    let sent = line.sent_with_id(&id).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["kind"], "contact_card");
    (envelope, sent[0]["vcard"].as_str().expect("the line gets a vCard").to_string())
}

/// Unfolds and splits a vCard into (property with parameters, value) pairs.
fn parse_vcard(text: &str) -> Vec<(String, String)> {
    assert!(text.lines().all(|l| l.len() <= 75), "lines are folded at 75 octets");
    let unfolded = text.replace("\r\n ", "");
    unfolded
        .split("\r\n")
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (name, value) = l.split_once(':').unwrap();
            (name.to_string(), value.to_string())
        })
        .collect()
}

fn unescape(value: &str) -> String {
    value.replace("\\n", "\n").replace("\\,", ",").replace("\\;", ";").replace("\\\\", "\\")
}

#[tokio::test]
async fn a_card_reaches_the_phone_as_a_vcard_with_every_field() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let (envelope, vcard) = sent_card(
        &app,
        &line,
        card(json!({"email": "ann@example.com", "organization": "Acme, Inc.", "note": "claim: @ann; thanks\nsee you"})),
    )
    .await;
    assert_eq!(envelope["contact_card"], json!({"name": "Ann Lee", "phone": "+12015550177"}));
    assert_eq!(envelope["message"]["kind"], "contact_card");
    assert_eq!(envelope["message"]["body"], "Ann Lee", "the caption defaults to the name");
    let fields = parse_vcard(&vcard);
    let get = |name: &str| fields.iter().find(|(n, _)| n == name).map(|(_, v)| unescape(v));
    assert_eq!(fields.first().unwrap(), &("BEGIN".to_string(), "VCARD".to_string()));
    assert_eq!(get("VERSION").unwrap(), "3.0");
    assert_eq!(get("FN").unwrap(), "Ann Lee");
    assert_eq!(get("N").unwrap(), "Lee;Ann;;;");
    assert_eq!(get("TEL;TYPE=CELL").unwrap(), "+12015550177");
    assert_eq!(get("EMAIL;TYPE=INTERNET").unwrap(), "ann@example.com");
    assert_eq!(get("ORG").unwrap(), "Acme, Inc.");
    assert_eq!(get("NOTE").unwrap(), "claim: @ann; thanks\nsee you");
    // No photo given: the service's own mark.
    let photo = fields.iter().find(|(n, _)| n.starts_with("PHOTO")).unwrap();
    assert_eq!(photo.0, "PHOTO;ENCODING=b;TYPE=PNG");
    assert_eq!(STANDARD.decode(&photo.1).unwrap(), msgline::testing::domain::photo::SERVICE_MARK);
    assert_eq!(fields.last().unwrap(), &("END".to_string(), "VCARD".to_string()));
}

#[tokio::test]
async fn a_hand_checked_card_matches_byte_for_byte() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let gif = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;";
    let (_, vcard) = sent_card(
        &app,
        &line,
        json!({"to": FRIEND, "name": "Bo", "phone": "+12015550177", "photo_base64": STANDARD.encode(gif), "caption": "Save me"}),
    )
    .await;
    assert_eq!(
        vcard,
        "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Bo\r\nN:Bo;;;;\r\nTEL;TYPE=CELL:+12015550177\r\n\
         PHOTO;ENCODING=b;TYPE=GIF:R0lGODlhAQABAAAAADs=\r\nEND:VCARD\r\n"
    );
}

#[tokio::test]
async fn photos_are_fetched_as_jpeg_png_or_gif_up_to_200_kb() {
    let app = spawn_app_with(|c| c.allow_private_targets = true).await;
    let line = app.default_line().await;
    let server = photo_server().await;
    for (path, kind) in [("/exact.jpg", "JPEG"), ("/photo.png", "PNG"), ("/photo.gif", "GIF")] {
        let (_, vcard) = sent_card(&app, &line, card(json!({"photo_url": format!("{server}{path}")}))).await;
        let fields = parse_vcard(&vcard);
        let photo = fields.iter().find(|(n, _)| n.starts_with("PHOTO")).unwrap();
        assert_eq!(photo.0, format!("PHOTO;ENCODING=b;TYPE={kind}"), "{path}");
        if path == "/exact.jpg" {
            assert_eq!(STANDARD.decode(&photo.1).unwrap().len(), KB200);
        }
    }
    for path in ["/over.jpg", "/fake.jpg", "/redirect.jpg", "/missing.jpg"] {
        let refused =
            app.post("/contact-cards", &app.org.key, card(json!({"photo_url": format!("{server}{path}")}))).await;
        refused.expect_error(400, "invalid_request", Some("photo_url"));
    }
    assert_eq!(line.sent().await.len(), 3, "refused cards are not sent");
}

#[tokio::test]
async fn photo_urls_must_be_https_and_public_unless_private_targets_are_allowed() {
    let app = spawn_app().await;
    let _line = app.default_line().await;
    let server = photo_server().await;
    let http =
        app.post("/contact-cards", &app.org.key, card(json!({"photo_url": format!("{server}/small.jpg")}))).await;
    let body = http.expect_error(400, "invalid_request", Some("photo_url"));
    assert!(body["message"].as_str().unwrap().contains("https"), "{body}");
    for url in [
        "https://127.0.0.1/a.jpg",
        "https://[::ffff:127.0.0.1]/a.jpg",
        "https://localhost/a.jpg",
        "https://10.0.0.8/a.jpg",
    ] {
        app.post("/contact-cards", &app.org.key, card(json!({"photo_url": url}))).await.expect_error(
            400,
            "invalid_request",
            Some("photo_url"),
        );
    }
    let listed = app.get("/messages", &app.org.key).await.expect(200);
    assert!(listed["data"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn base64_photos_take_raw_base64_or_a_data_url_under_the_same_limits() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let raw = STANDARD.encode(jpeg(KB200));
    sent_card(&app, &line, card(json!({"photo_base64": raw}))).await;
    let data_url = format!("data:image/png;base64,{}", STANDARD.encode(msgline::testing::domain::photo::SERVICE_MARK));
    sent_card(&app, &line, card(json!({"photo_base64": data_url}))).await;
    for bad in [
        STANDARD.encode(jpeg(KB200 + 1)),
        "data:image/png;base64".to_string(),
        "data:text/plain;base64,aGVsbG8=".to_string(),
        "!!!".to_string(),
        STANDARD.encode(b"plain text"),
    ] {
        app.post("/contact-cards", &app.org.key, card(json!({"photo_base64": bad}))).await.expect_error(
            400,
            "invalid_request",
            Some("photo_base64"),
        );
    }
}

#[tokio::test]
async fn a_card_needs_a_name_and_a_valid_phone_and_the_send_scope() {
    let app = spawn_app().await;
    let _line = app.default_line().await;
    let key = &app.org.key;
    app.post("/contact-cards", key, json!({"to": FRIEND, "phone": "+12015550177"})).await.expect_error(
        400,
        "invalid_request",
        Some("name"),
    );
    app.post("/contact-cards", key, json!({"to": FRIEND, "name": "Ann"})).await.expect_error(
        400,
        "invalid_request",
        Some("phone"),
    );
    app.post("/contact-cards", key, card(json!({"phone": "555"}))).await.expect_error(
        400,
        "invalid_request",
        Some("phone"),
    );
    app.post("/contact-cards", key, card(json!({"email": "nope"}))).await.expect_error(
        400,
        "invalid_request",
        Some("email"),
    );
    app.post("/contact-cards", key, json!({"name": "A", "phone": "+12015550177"})).await.expect_error(
        400,
        "invalid_request",
        Some("to"),
    );
    app.post("/contact-cards", key, card(json!({"agent_id": "agt_01m80b6h6e744vr7hxxgt73870"}))).await.expect_error(
        404,
        "not_found",
        Some("agent_id"),
    );
    let reader = app.create_key(&app.org, &["messaging_read"], None).await;
    app.post("/contact-cards", &reader, card(json!({}))).await.expect_error(403, "missing messaging_send scope", None);
}

#[tokio::test]
async fn a_replayed_card_is_not_sent_again() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let send = || {
        app.client
            .post(app.url("/contact-cards"))
            .bearer_auth(&app.org.key)
            .header("Idempotency-Key", "card-1")
            .json(&card(json!({})))
            .send()
    };
    let first: Value = send().await.unwrap().json().await.unwrap();
    let again = send().await.unwrap();
    assert_eq!(again.status(), 200);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["duplicate"], true);
    assert_eq!(again["message"]["id"], first["message"]["id"]);
    assert_eq!(again["contact_card"], first["contact_card"]);
    let id = first["message"]["id"].as_str().unwrap();
    app.wait_for_message(&app.org.key, id, "delivered", |m| m["status"] == "delivered").await;
    assert_eq!(line.sent().await.len(), 1);
}
