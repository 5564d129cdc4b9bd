//! Files a bridge reports with an inbound message (`message.inbound`'s `attachments[].url`) are
//! fetched with the line's bridge token, so only from the bridge's own origin: a URL anywhere else
//! is never called, and the message is kept without that file.

use std::sync::{Arc, Mutex};

use axum::{Router, extract::State, http::HeaderMap, http::Uri, http::header};
use serde_json::{Value, json};

use crate::{helpers::spawn_app, media::pdf};

/// What a file host was asked: each request's path and `Authorization` header.
type Calls = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A loopback server that answers every `/files/…` path with a PDF and records every request.
async fn file_host() -> (String, Calls) {
    let calls: Calls = Arc::default();
    let app = Router::new()
        .fallback(|State(calls): State<Calls>, uri: Uri, headers: HeaderMap| async move {
            let authorization = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).map(str::to_string);
            calls.lock().unwrap().push((uri.path().to_string(), authorization));
            if uri.path().starts_with("/files/") { Ok(pdf()) } else { Err(axum::http::StatusCode::NOT_FOUND) }
        })
        .with_state(calls.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}"), calls)
}

fn file_calls(calls: &Calls) -> Vec<(String, Option<String>)> {
    calls.lock().unwrap().iter().filter(|(path, _)| path.starts_with("/files/")).cloned().collect()
}

#[tokio::test]
async fn an_inbound_file_off_the_bridges_origin_is_left_out_and_the_bridge_token_never_goes_there() {
    let app = spawn_app().await;
    let (bridge, bridge_calls) = file_host().await;
    let (elsewhere, elsewhere_calls) = file_host().await;
    let line = app.create_line("+12015550100", Some(&app.org), &bridge).await;
    let port = bridge.rsplit_once(':').unwrap().1;
    let attachments = json!([
        {"url": format!("{bridge}/files/kept.pdf"), "filename": "kept.pdf"},
        // Another port of the same host.
        {"url": format!("{elsewhere}/files/elsewhere.pdf")},
        // The bridge's own port under another host name, and under another scheme.
        {"url": format!("http://localhost:{port}/files/other-name.pdf")},
        {"url": format!("https://127.0.0.1:{port}/files/other-scheme.pdf")},
        // A path alone: a URL must be absolute.
        {"url": "/files/relative.pdf"},
    ]);
    let event = json!({"id": "in-1", "type": "message.inbound",
                       "data": {"from": "+12015550123", "body": "five files", "attachments": attachments}});
    let answer = app
        .client
        .post(format!("{}/api/v1/messaging/bridge/events", app.address))
        .bearer_auth(line["bridge_secret"].as_str().unwrap())
        .json(&event)
        .send()
        .await
        .unwrap();
    let status = answer.status();
    let body: Value = answer.json().await.unwrap_or(Value::Null);

    assert_eq!(file_calls(&elsewhere_calls), vec![], "nothing was asked of the other origin");
    assert_eq!(
        file_calls(&bridge_calls),
        vec![("/files/kept.pdf".to_string(), Some("Bearer bridge-token".to_string()))],
        "only the file on the bridge's origin was fetched"
    );
    assert_eq!((status.as_u16(), &body), (200, &json!({"applied": 1, "duplicates": 0})));
    let arrived = app.get("/messages?direction=inbound", &app.org.key).await.expect(200)["data"][0].clone();
    assert_eq!(arrived["body"], "five files");
    let files = arrived["attachments"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{arrived}");
    assert_eq!(files[0]["filename"], "kept.pdf");
}
