//! The error contract across routes: 401, 403 naming the scope, 413, malformed bodies, unknown
//! routes, and opaque 5xx answers that never carry the database engine's own text.

use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{ALL_SCOPES, BASE, authenticated_routes, spawn_app};

#[tokio::test]
async fn a_database_failure_is_an_opaque_500() {
    let app = spawn_app().await;
    app.post("/contacts", &app.org.key, json!({"phone": "+12015550123", "name": "Ann"})).await.expect(201);
    let drop_table = match app.db().backend() {
        msgline::Backend::Sqlite => "DROP TABLE contacts",
        msgline::Backend::Postgres => "DROP TABLE contacts CASCADE",
    };
    sqlx::query(drop_table).execute(app.db().writer_for_tests()).await.unwrap();

    let responses = [
        app.get("/contacts", &app.org.key).await,
        app.get("/contacts?q=ann", &app.org.key).await,
        app.post("/contacts", &app.org.key, json!({"phone": "+12015550123"})).await,
    ];
    for response in responses {
        assert!(response.header("x-request-id").is_some_and(|id| !id.is_empty()));
        let text = response.body.to_string().to_lowercase();
        let body = response.expect_error(500, "internal_error", None);
        let members: Vec<&String> = body.as_object().unwrap().keys().collect();
        assert!(members.iter().all(|m| *m == "error" || *m == "message"), "{body}");
        for engine_word in ["table", "sqlite", "postgres", "relation", "sql", "contacts", "no such", "exist"] {
            assert!(!text.contains(engine_word), "the 500 body leaks {engine_word:?}: {body}");
        }
    }
    // Routes that do not touch the broken table still work.
    app.get("/lines", &app.org.key).await.expect(200);
}

#[tokio::test]
async fn an_unknown_route_is_a_json_404() {
    let app = spawn_app().await;
    for path in ["/nope", "/api/v1/messaging", "/api/v1/messaging/nope", "/api/v1/messaging/contacts/ct_x/extra"] {
        for key in [None, Some(app.org.key.as_str())] {
            let mut request = app.client.get(format!("{}{path}", app.address));
            if let Some(key) = key {
                request = request.bearer_auth(key);
            }
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 404, "{path}");
            assert!(response.headers()["content-type"].to_str().unwrap().starts_with("application/json"), "{path}");
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["error"], "not_found", "{path}: {body}");
        }
    }
}

#[tokio::test]
async fn every_authenticated_route_refuses_a_request_without_a_key() {
    let app = spawn_app().await;
    for (method, path, _, body) in authenticated_routes() {
        let response = app.request(method.clone(), path, None, body).await;
        assert_eq!(response.status, 401, "{method} {path}: {}", response.body);
        assert_eq!(response.body["error"], "unauthorized", "{method} {path}");
    }
}

#[tokio::test]
async fn every_authenticated_route_names_the_scope_it_needs() {
    let app = spawn_app().await;
    for (method, path, scope, body) in authenticated_routes() {
        let others: Vec<&str> = ALL_SCOPES.into_iter().filter(|s| *s != scope).collect();
        let key = app.create_key(&app.org, &others, None).await;
        let response = app.request(method.clone(), path, Some(&key), body).await;
        assert_eq!(response.status, 403, "{method} {path}: {}", response.body);
        assert_eq!(response.body["error"], format!("missing {scope} scope"), "{method} {path}");
    }
}

#[tokio::test]
async fn every_route_with_a_body_refuses_one_over_a_mebibyte() {
    let app = spawn_app().await;
    let padding = "x".repeat(1024 * 1024);
    for (method, path, _, body) in authenticated_routes().into_iter().filter(|(m, ..)| *m == Method::POST) {
        let mut body = body.unwrap();
        body["padding"] = json!(padding);
        let response = app.request(method.clone(), path, Some(&app.org.key), Some(body)).await;
        assert_eq!(response.status, 413, "{method} {path}: {}", response.body);
        assert_eq!(response.body["error"], "payload_too_large", "{method} {path}");
    }
}

#[tokio::test]
async fn a_chunked_body_over_a_mebibyte_is_refused_too() {
    let app = spawn_app().await;
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", app.port)).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let head = format!(
        "POST {BASE}/contacts HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        app.org.key
    );
    // No Content-Length: the server can only find out by reading. Write while reading, since it
    // may answer and close before the body is complete.
    let sender = tokio::spawn(async move {
        writer.write_all(head.as_bytes()).await?;
        let chunk = vec![b' '; 64 * 1024];
        for _ in 0..20 {
            writer.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).await?;
            writer.write_all(&chunk).await?;
            writer.write_all(b"\r\n").await?;
        }
        writer.write_all(b"0\r\n\r\n").await
    });
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    while let Ok(n) = reader.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buffer[..n]);
    }
    let _ = sender.await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains(r#""error":"payload_too_large""#), "{answer}");
    assert_eq!(app.get("/contacts", &app.org.key).await.expect(200)["data"], json!([]));
}

#[tokio::test]
async fn a_body_that_is_not_a_json_object_is_400() {
    let app = spawn_app().await;
    for text in ["", "   ", "{not json", "[1, 2]", "\"phone\"", "null"] {
        let response = app.client.post(app.url("/contacts")).bearer_auth(&app.org.key).body(text).send().await.unwrap();
        assert_eq!(response.status(), 400, "{text:?}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], "invalid_request", "{text:?}: {body}");
        assert!(body["message"].is_string(), "{text:?}: {body}");
    }
}

#[tokio::test]
async fn error_bodies_carry_a_code_and_a_message() {
    let app = spawn_app().await;
    let bodies = [
        app.request(Method::GET, "/lines", None, None).await.expect(401),
        app.get("/contacts/ct_unknown", &app.org.key).await.expect(404),
        app.post("/contacts", &app.org.key, json!({"phone": "nope"})).await.expect(400),
    ];
    for body in bodies {
        assert!(body["error"].is_string() && body["message"].is_string(), "{body}");
    }
}

#[tokio::test]
async fn a_nul_character_in_a_body_or_the_url_is_400_and_stores_nothing() {
    let app = spawn_app().await;
    let key = &app.org.key;
    let answer = app.post("/contacts", key, json!({"phone": "+12015550123", "name": "Ann\u{0}Lee"})).await;
    answer.expect_error(400, "invalid_request", Some("name"));
    let answer = app
        .post("/messages", key, json!({"to": "+12015550123", "body": "hi", "channel": "sms", "x": ["ok", "a\u{0}"]}))
        .await;
    answer.expect_error(400, "invalid_request", Some("x[1]"));
    for path in ["/conversations?line_id=%00", "/messages/msg_%00", "/contacts?q=a%00b"] {
        let answer = app.get(path, key).await;
        assert!(answer.header("x-request-id").is_some());
        answer.expect_error(400, "invalid_request", None);
    }
    let contacts = app.get("/contacts", key).await.expect(200);
    assert_eq!(contacts["data"], json!([]));
    let messages = app.get("/messages", key).await.expect(200);
    assert_eq!(messages["data"], json!([]));
}
