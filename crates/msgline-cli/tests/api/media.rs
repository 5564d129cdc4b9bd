//! Media on `POST /messages`: files fetched from a customer's server through the egress client,
//! typed by their bytes, kept in the media store, sent through the line (which fetches them from
//! msgline with its bridge secret) and served to their organisation at `GET /attachments/{id}`.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use axum::{Router, extract::State, http::StatusCode, response::IntoResponse, routing::get};
use serde_json::{Value, json};
use sha2::Digest;

use crate::{
    helpers::{TestApp, spawn_app, spawn_app_with},
    simline::LineSpec,
};

const FRIEND: &str = "+12015550123";
const SMS_FRIEND: &str = "+12015550124";

pub fn jpeg() -> Vec<u8> {
    let mut bytes = vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, b'J', b'F', b'I', b'F', 0x00];
    bytes.extend((0..6_000u32).map(|i| (i % 251) as u8));
    bytes
}

pub fn pdf() -> Vec<u8> {
    b"%PDF-1.7\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n".to_vec()
}

/// A customer's file server on a loopback port: `/photo.jpg`, `/receipt.pdf`, `/big.bin` (2 KB),
/// anything else 404. Counts the files it served.
pub async fn file_server() -> (String, Arc<AtomicUsize>) {
    let served = Arc::new(AtomicUsize::new(0));
    let app = Router::new()
        .route(
            "/photo.jpg",
            get(|State(n): State<Arc<AtomicUsize>>| async move {
                n.fetch_add(1, Ordering::SeqCst);
                jpeg()
            }),
        )
        .route(
            "/receipt.pdf",
            get(|State(n): State<Arc<AtomicUsize>>| async move {
                n.fetch_add(1, Ordering::SeqCst);
                pdf()
            }),
        )
        .route("/big.bin", get(|| async { vec![7u8; 2_048] }))
        .fallback(|| async { StatusCode::NOT_FOUND.into_response() })
        .with_state(served.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}"), served)
}

pub fn sha256(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

async fn count(app: &TestApp, table: &str) -> i64 {
    let (n,): (i64,) =
        sqlx::query_as(&format!("SELECT COUNT(*) FROM {table}")).fetch_one(app.db().writer_for_tests()).await.unwrap();
    n
}

#[tokio::test]
async fn files_are_fetched_typed_by_their_bytes_sent_through_the_line_and_served_to_their_organisation() {
    let app = spawn_app_with(|c| c.allow_private_targets = true).await;
    let line = app.default_line().await;
    let key = &app.org.key;
    let (server, served) = file_server().await;
    let request = json!({"to": FRIEND, "body": "Your receipt",
                         "media_urls": [format!("{server}/photo.jpg"), format!("{server}/receipt.pdf")]});
    let answer = app.client.post(app.url("/messages")).bearer_auth(key).header("Idempotency-Key", "media-1");
    let answer = answer.json(&request).send().await.unwrap();
    assert_eq!(answer.status(), 202);
    let sent: Value = answer.json().await.unwrap();
    let message = &sent["message"];
    assert_eq!((message["kind"].as_str(), message["body"].as_str()), (Some("media"), Some("Your receipt")));
    let files = message["attachments"].as_array().unwrap().clone();
    assert_eq!(files.len(), 2, "{message}");
    assert_eq!(files[0]["content_type"], "image/jpeg");
    assert_eq!(files[0]["size"], jpeg().len());
    assert_eq!(files[0]["filename"], "photo.jpg");
    assert_eq!(files[1]["content_type"], "application/pdf");
    assert!(files.iter().all(|f| f["id"].as_str().unwrap().starts_with("file_")));

    // The line fetched each file from msgline, byte for byte, and the message was delivered.
    let id = message["id"].as_str().unwrap();
    let shown = app.wait_for_message(key, id, "delivered", |m| m["status"] == "delivered").await;
    assert_eq!(shown["attachments"], json!(files));
    let on_line = line.sent_with_id(id).await;
    assert_eq!(on_line[0]["kind"], "media");
    assert_eq!(on_line[0]["attachments"][0]["sha256"], sha256(&jpeg()));
    assert_eq!(on_line[0]["attachments"][1]["sha256"], sha256(&pdf()));

    // Served to the organisation with the type read from the bytes.
    let file_id = files[0]["id"].as_str().unwrap();
    let got = app.client.get(app.url(&format!("/attachments/{file_id}"))).bearer_auth(key).send().await.unwrap();
    assert_eq!(got.status(), 200);
    assert_eq!(got.headers()["content-type"], "image/jpeg");
    assert_eq!(got.headers()["content-disposition"], "attachment; filename=\"photo.jpg\"");
    assert_eq!(got.bytes().await.unwrap().to_vec(), jpeg());

    // Another organisation, or no key, gets nothing; the bridge route wants the line's secret.
    let other = app.create_org("Other").await;
    app.get(&format!("/attachments/{file_id}"), &other.key).await.expect_error(404, "not_found", None);
    let bare = app.client.get(app.url(&format!("/attachments/{file_id}"))).send().await.unwrap();
    assert_eq!(bare.status(), 401);
    let bridge = format!("{}/api/v1/messaging/bridge/attachments/{file_id}", app.address);
    let wrong = app.client.get(&bridge).bearer_auth("mlb_wrong").send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let right = app.client.get(&bridge).bearer_auth(&line.secret).send().await.unwrap();
    assert_eq!(right.bytes().await.unwrap().to_vec(), jpeg());

    // A replay answers the first answer and fetches nothing again.
    assert_eq!(served.load(Ordering::SeqCst), 2);
    let again = app.client.post(app.url("/messages")).bearer_auth(key).header("Idempotency-Key", "media-1");
    let again = again.json(&request).send().await.unwrap();
    assert_eq!(again.status(), 200);
    let replayed: Value = again.json().await.unwrap();
    assert_eq!(replayed["message"]["attachments"], json!(files));
    assert_eq!(served.load(Ordering::SeqCst), 2);

    // Files alone, without a caption.
    let alone = app.post("/messages", key, json!({"to": FRIEND, "media_urls": [format!("{server}/photo.jpg")]})).await;
    let alone = alone.expect(202);
    assert_eq!((alone["message"]["kind"].as_str(), alone["message"]["body"].as_str()), (Some("media"), Some("")));
    assert_eq!(count(&app, "attachments").await, 3);
}

#[tokio::test]
async fn bad_media_is_refused_with_the_field_at_fault_and_nothing_is_sent() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let key = &app.org.key;
    let send = |urls: Value| json!({"to": FRIEND, "body": "see this", "media_urls": urls});
    // Not https, or not a public address: refused before anything is fetched.
    for url in [
        "http://cdn.example/a.jpg",
        "https://127.0.0.1/a.jpg",
        "https://10.0.0.8/a.jpg",
        "https://[::ffff:192.168.1.1]/a.jpg",
        "https://localhost/a.jpg",
        "not a url",
    ] {
        app.post("/messages", key, send(json!([url]))).await.expect_error(400, "invalid_request", Some("media_urls"));
    }
    let eleven: Vec<String> = (0..11).map(|i| format!("https://cdn.example/{i}.jpg")).collect();
    app.post("/messages", key, send(json!(eleven))).await.expect_error(400, "invalid_request", Some("media_urls"));
    app.post("/messages", key, send(json!("https://cdn.example/a.jpg"))).await.expect_error(
        400,
        "invalid_request",
        None,
    );
    app.post("/messages", key, json!({"to": FRIEND})).await.expect_error(400, "invalid_request", Some("body"));
    assert_eq!((count(&app, "messages").await, count(&app, "attachments").await), (0, 0));
    assert!(line.sent().await.is_empty());
}

#[tokio::test]
async fn a_file_over_the_limit_or_missing_is_refused_and_sms_needs_a_line_with_mms() {
    let app = spawn_app_with(|c| {
        c.allow_private_targets = true;
        c.media_max_bytes = 1_024;
    })
    .await;
    let org = app.org.clone();
    let line = app
        .sim_line(LineSpec {
            e164: "+12015550100",
            org: Some(&org),
            sim_args: &["--sms-only", SMS_FRIEND, "--no-mms"],
            start: true,
        })
        .await;
    let key = &app.org.key;
    let (server, _) = file_server().await;
    let big = app.post("/messages", key, json!({"to": FRIEND, "media_urls": [format!("{server}/big.bin")]})).await;
    let big = big.expect_error(413, "media_too_large", None);
    assert_eq!(big["field"], "media_urls");
    app.post("/messages", key, json!({"to": FRIEND, "media_urls": [format!("{server}/gone.jpg")]})).await.expect_error(
        400,
        "invalid_request",
        Some("media_urls"),
    );
    // The small PDF over SMS, from a line that cannot send MMS.
    app.post("/messages", key, json!({"to": SMS_FRIEND, "media_urls": [format!("{server}/receipt.pdf")]}))
        .await
        .expect_error(400, "media_requires_mms", None);
    assert_eq!(count(&app, "messages").await, 0);
    assert!(line.sent().await.is_empty());
    // Over iMessage the same line sends it.
    let sent = app.post("/messages", key, json!({"to": FRIEND, "media_urls": [format!("{server}/receipt.pdf")]}));
    let id = sent.await.expect(202)["message"]["id"].as_str().unwrap().to_string();
    app.wait_for_message(key, &id, "delivered", |m| m["status"] == "delivered").await;
}

#[tokio::test]
async fn files_that_arrive_with_a_message_are_fetched_from_the_line_and_listed_on_it() {
    use base64::{Engine, engine::general_purpose::STANDARD};
    let app = spawn_app().await;
    let line = app.default_line().await;
    let key = &app.org.key;
    let media = json!([{"base64": STANDARD.encode(pdf()), "filename": "r.pdf"}, {"base64": STANDARD.encode(jpeg())}]);
    line.control("/control/inbound", json!({"from": FRIEND, "body": "my receipt", "media": media})).await;
    let arrived = app.get("/messages?direction=inbound", key).await.expect(200)["data"][0].clone();
    assert_eq!((arrived["kind"].as_str(), arrived["body"].as_str()), (Some("media"), Some("my receipt")));
    let files = arrived["attachments"].as_array().unwrap().clone();
    assert_eq!(files.len(), 2, "{arrived}");
    assert_eq!(
        (files[0]["content_type"].as_str(), files[0]["filename"].as_str()),
        (Some("application/pdf"), Some("r.pdf"))
    );
    assert_eq!(
        (files[1]["content_type"].as_str(), files[1]["size"].as_u64()),
        (Some("image/jpeg"), Some(jpeg().len() as u64))
    );
    let first = files[0]["id"].as_str().unwrap();
    let got = app.client.get(app.url(&format!("/attachments/{first}"))).bearer_auth(key).send().await.unwrap();
    assert_eq!(got.headers()["content-type"], "application/pdf");
    assert_eq!(got.bytes().await.unwrap().to_vec(), pdf());
    let other = app.create_org("Other").await;
    app.get(&format!("/attachments/{first}"), &other.key).await.expect_error(404, "not_found", None);

    // A file alone, with no text.
    line.control("/control/inbound", json!({"from": FRIEND, "media": [{"base64": STANDARD.encode(jpeg())}]})).await;
    let alone = app.get("/messages?direction=inbound", key).await.expect(200)["data"][0].clone();
    assert_eq!((alone["kind"].as_str(), alone["body"].as_str()), (Some("media"), Some("")));
    assert_eq!(count(&app, "attachments").await, 3);
}

#[tokio::test]
async fn a_file_over_the_limit_that_arrives_is_left_out_and_the_message_kept() {
    use base64::{Engine, engine::general_purpose::STANDARD};
    let app = spawn_app_with(|c| c.media_max_bytes = 1_024).await;
    let line = app.default_line().await;
    let media = json!([{"base64": STANDARD.encode(jpeg())}, {"base64": STANDARD.encode(pdf()), "filename": "r.pdf"}]);
    line.control("/control/inbound", json!({"from": FRIEND, "body": "two files", "media": media})).await;
    let arrived = app.get("/messages?direction=inbound", &app.org.key).await.expect(200)["data"][0].clone();
    let files = arrived["attachments"].as_array().unwrap().clone();
    assert_eq!(files.len(), 1, "{arrived}");
    assert_eq!(files[0]["filename"], "r.pdf");
}

#[tokio::test]
async fn a_stored_file_no_message_holds_is_removed_once_it_is_an_hour_old() {
    let app = spawn_app_with(|c| c.allow_private_targets = true).await;
    let _line = app.default_line().await;
    let (server, _) = file_server().await;
    let sent =
        app.post("/messages", &app.org.key, json!({"to": FRIEND, "media_urls": [format!("{server}/receipt.pdf")]}));
    let kept = sent.await.expect(202)["message"]["attachments"][0]["id"].as_str().unwrap().to_string();
    let dir = std::path::PathBuf::from(app.config.media_store.strip_prefix("file://").unwrap());
    let store = &app.state.media();
    store.put(&format!("{}/file_orphan", app.org.id), b"left behind".to_vec()).await.unwrap();
    store.put(&format!("{}/file_recent", app.org.id), b"a request still committing".to_vec()).await.unwrap();
    // Two hours old: the orphan, and the file a message holds.
    let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7_200);
    for name in ["file_orphan", kept.as_str()] {
        let path = dir.join(&app.org.id).join(name);
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(two_hours_ago).unwrap();
    }
    let removed = msgline::testing::workers::janitor::orphaned_files(app.state.sender()).await.unwrap();
    assert_eq!(removed, 1);
    assert_eq!(store.get(&format!("{}/file_orphan", app.org.id)).await.unwrap(), None);
    assert!(store.get(&format!("{}/file_recent", app.org.id)).await.unwrap().is_some());
    app.get(&format!("/attachments/{kept}"), &app.org.key).await.expect(200);
}

/// The objects a fake S3-compatible service holds, by request path (`/bucket/key`).
type Objects = Arc<std::sync::Mutex<std::collections::HashMap<String, Vec<u8>>>>;

/// A fake S3-compatible service on a loopback port, path-style: `PUT`, `GET` and `DELETE` of
/// `/bucket/key`, answering as S3 does where a client reads the answer (an `ETag` on writes;
/// `ETag`, `Last-Modified` and `Content-Length` on reads; a `NoSuchKey` error otherwise). It
/// checks no signature.
async fn fake_s3() -> (String, Objects) {
    use axum::{body::Bytes, http::Method, http::Uri};
    let objects: Objects = Arc::default();
    let held = objects.clone();
    let app = Router::new().fallback(move |method: Method, uri: Uri, body: Bytes| {
        let held = held.clone();
        async move {
            let key = uri.path().to_string();
            let mut objects = held.lock().unwrap();
            let etag = [("etag", "\"0123456789abcdef\"")];
            match method {
                Method::PUT => {
                    objects.insert(key, body.to_vec());
                    (StatusCode::OK, etag).into_response()
                }
                Method::DELETE => {
                    objects.remove(&key);
                    StatusCode::NO_CONTENT.into_response()
                }
                Method::GET | Method::HEAD => match objects.get(&key) {
                    Some(bytes) => (
                        StatusCode::OK,
                        [("etag", "\"0123456789abcdef\""), ("last-modified", "Wed, 25 Nov 2026 00:00:00 GMT")],
                        bytes.clone(),
                    )
                        .into_response(),
                    None => (
                        StatusCode::NOT_FOUND,
                        [("content-type", "application/xml")],
                        "<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>",
                    )
                        .into_response(),
                },
                _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}"), objects)
}

#[tokio::test]
async fn with_an_s3_store_the_files_are_kept_in_the_bucket_and_served_from_it() {
    let (s3, objects) = fake_s3().await;
    let (files, _) = file_server().await;
    let db = crate::helpers::TestDb::new().await;
    let line = crate::helpers::process_line(db.url(), "Bucket Org").await;
    let env = [
        ("MSGLINE_MEDIA_STORE", "s3://msgline-files/prod"),
        ("AWS_ENDPOINT", s3.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "test-key"),
        ("AWS_SECRET_ACCESS_KEY", "test-secret"),
        ("MSGLINE_ALLOW_PRIVATE_TARGETS", "true"),
    ];
    let _server = crate::helpers::serve_process(db.url(), line.port, &env).await;
    let base = format!("http://127.0.0.1:{}/api/v1/messaging", line.port);
    let client = reqwest::Client::new();
    let request = json!({"to": FRIEND, "body": "receipt", "media_urls": [format!("{files}/receipt.pdf")]});
    let answer = client.post(format!("{base}/messages")).bearer_auth(&line.key).json(&request).send().await.unwrap();
    assert_eq!(answer.status(), 202);
    let sent: Value = answer.json().await.unwrap();
    let file_id = sent["message"]["attachments"][0]["id"].as_str().unwrap().to_string();
    // The bytes are in the bucket under the prefix, by organisation and file.
    let stored: Vec<(String, Vec<u8>)> = objects.lock().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(stored.len(), 1, "{:?}", stored.iter().map(|(k, _)| k).collect::<Vec<_>>());
    assert!(stored[0].0.starts_with("/msgline-files/prod/"), "{}", stored[0].0);
    assert!(stored[0].0.ends_with(&format!("/{file_id}")), "{}", stored[0].0);
    assert_eq!(stored[0].1, pdf());
    // Served from the bucket, to the API and to the line.
    let got = client.get(format!("{base}/attachments/{file_id}")).bearer_auth(&line.key).send().await.unwrap();
    assert_eq!(got.status(), 200);
    assert_eq!(got.bytes().await.unwrap().to_vec(), pdf());
    let id = sent["message"]["id"].as_str().unwrap();
    crate::helpers::eventually(20, "the media message delivered", || async {
        let shown: Value =
            client.get(format!("{base}/messages/{id}")).bearer_auth(&line.key).send().await.ok()?.json().await.ok()?;
        (shown["status"] == "delivered").then_some(())
    })
    .await;
}
