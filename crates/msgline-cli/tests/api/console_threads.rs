//! The console's thread and builder extras over HTTP: files attached to a message (checked,
//! stored, served to their organisation only), the line typing from the compose box, the agent
//! builder's try-it panel (nothing sent, nothing recorded), and a thread open on one instance
//! that shows what arrived through another.

use reqwest::{StatusCode, header, multipart};
use serde_json::{Value, json};

use crate::{
    console::{add_staff, browser, compose, csrf_of, page, welcome},
    fakemodel::{FakeModel, text, tool_calls},
    helpers::{TestApp, TestDb, cli_value, process_line, serve_process, spawn_app, spawn_app_with, use_postgres},
};

/// A signed-in owner of the app's organisation: the session cookie.
async fn owner(app: &TestApp, email: &str) -> String {
    let (_, token) = add_staff(app, email, "owner").await;
    welcome(app, &token, "a long enough password").await
}

async fn post_thread(app: &TestApp, cookie: &str, conversation_id: &str, form: multipart::Form) -> reqwest::Response {
    browser()
        .post(format!("{}/console/conversations/{conversation_id}/messages", app.address))
        .header(header::COOKIE, cookie)
        .header(header::ORIGIN, &app.address)
        .multipart(form)
        .send()
        .await
        .expect("answered")
}

fn file(name: &str, bytes: Vec<u8>) -> multipart::Part {
    multipart::Part::bytes(bytes).file_name(name.to_string())
}

/// Sends through the API; the conversation the message went into.
async fn conversation_of(app: &TestApp, request: Value) -> String {
    let sent = app.post("/messages", &app.org.key, request).await.expect(202);
    sent["message"]["conversation_id"].as_str().expect("conversation_id").to_string()
}

async fn messages_of(app: &TestApp, conversation_id: &str) -> Vec<Value> {
    let listed = app.get(&format!("/messages?conversation_id={conversation_id}"), &app.org.key).await.expect(200);
    listed["data"].as_array().expect("data").clone()
}

#[tokio::test]
async fn files_from_a_thread_are_checked_stored_sent_and_served_to_their_organisation_only() {
    let app = spawn_app_with(|c| c.media_max_bytes = 1_024).await;
    let sim = app.default_line().await;
    let cookie = owner(&app, "files@example.com").await;
    let ours = app.create_conversation(&app.org, &sim.line_id, "+12015550161").await;
    let html = page(&app, &format!("/console/conversations/{}", ours.id), &cookie).await.text().await.unwrap();
    let csrf = csrf_of(&html);

    // Too large: refused with the limit, and nothing is sent.
    let form = compose(&[("csrf", &csrf), ("idempotency_key", "f1"), ("body", "too big")])
        .part("files", file("big.bin", vec![7u8; 2_000]));
    let answer = post_thread(&app, &cookie, &ours.id, form).await;
    assert_eq!(answer.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(answer.text().await.unwrap().contains("larger than 1024 bytes"));
    // Eleven files: one more than a message carries.
    let mut form = compose(&[("csrf", &csrf), ("idempotency_key", "f2")]);
    for i in 0..11 {
        form = form.part("files", file(&format!("{i}.txt"), b"x".to_vec()));
    }
    assert_eq!(post_thread(&app, &cookie, &ours.id, form).await.status(), StatusCode::BAD_REQUEST);
    assert!(messages_of(&app, &ours.id).await.is_empty());

    // Two files and a caption: one media message, its files in order, typed by their bytes.
    let png = b"\x89PNG\r\n\x1a\n0000".to_vec();
    let form = compose(&[("csrf", &csrf), ("idempotency_key", "f3"), ("body", "the menu")])
        .part("files", file("menu.png", png.clone()))
        .part("files", file("../../notes.txt", b"hello".to_vec()));
    assert_eq!(post_thread(&app, &cookie, &ours.id, form).await.status(), StatusCode::SEE_OTHER);
    let listed = messages_of(&app, &ours.id).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let message = &listed[0];
    assert_eq!(message["kind"], "media");
    assert_eq!(message["body"], "the menu");
    let files = message["attachments"].as_array().expect("attachments");
    assert_eq!(files.len(), 2, "{message}");
    assert_eq!(files[0]["content_type"], "image/png");
    assert_eq!(files[0]["filename"], "menu.png");
    assert_eq!(files[1]["filename"], "....notes.txt", "no path in a file's name");
    let id = message["id"].as_str().unwrap().to_string();
    let delivered = app.wait_for_message(&app.org.key, &id, "delivered", |m| m["status"] == "delivered").await;
    assert_eq!(delivered["status"], "delivered");
    let on_line = sim.sent_with_id(&id).await;
    let fetched = on_line[0]["attachments"].as_array().expect("the line fetched the files");
    assert_eq!(fetched.iter().map(|f| f["size"].as_i64().unwrap()).collect::<Vec<_>>(), [png.len() as i64, 5]);

    // The same form again (a reload of the post) sends nothing more; the same key with other
    // files is a conflict.
    let again = compose(&[("csrf", &csrf), ("idempotency_key", "f3"), ("body", "the menu")])
        .part("files", file("menu.png", png.clone()))
        .part("files", file("../../notes.txt", b"hello".to_vec()));
    assert_eq!(post_thread(&app, &cookie, &ours.id, again).await.status(), StatusCode::SEE_OTHER);
    let other = compose(&[("csrf", &csrf), ("idempotency_key", "f3"), ("body", "the menu")])
        .part("files", file("menu.png", b"\x89PNG\r\n\x1a\nchanged".to_vec()))
        .part("files", file("../../notes.txt", b"hello".to_vec()));
    assert_eq!(post_thread(&app, &cookie, &ours.id, other).await.status(), StatusCode::CONFLICT);
    assert_eq!(messages_of(&app, &ours.id).await.len(), 1);

    // The file, to the organisation's staff; to another organisation's, not found.
    let file_id = files[0]["id"].as_str().unwrap();
    let served = page(&app, &format!("/console/attachments/{file_id}"), &cookie).await;
    assert_eq!(served.status(), StatusCode::OK);
    assert_eq!(served.headers()[header::CONTENT_TYPE], "image/png");
    assert_eq!(served.headers()[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    assert!(served.headers()[header::CONTENT_SECURITY_POLICY].to_str().unwrap().contains("default-src 'none'"));
    assert_eq!(served.bytes().await.unwrap().to_vec(), png);
    let other_org = app.create_org("Other files").await;
    let staff = cli_value(
        app.db.url(),
        &["admin", "staff", "create", "--org", &other_org.id, "--email", "them@example.com", "--role", "owner"],
    )
    .await;
    let token = staff["sign_in_url"].as_str().unwrap().split_once("token=").unwrap().1.to_string();
    let theirs = welcome(&app, &token, "their long password").await;
    let refused = page(&app, &format!("/console/attachments/{file_id}"), &theirs).await;
    assert_eq!(refused.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_compose_box_shows_the_line_typing_where_the_conversation_can_show_it() {
    let app = spawn_app().await;
    let sim = app.default_line().await;
    let cookie = owner(&app, "typing@example.com").await;
    let conversation_id = conversation_of(&app, json!({"to": "+12015550162", "body": "hi"})).await;
    let html = page(&app, &format!("/console/conversations/{conversation_id}"), &cookie).await.text().await.unwrap();
    let csrf = csrf_of(&html);
    let typing = |csrf: String, id: String| {
        let app_address = app.address.clone();
        let cookie = cookie.clone();
        async move {
            browser()
                .post(format!("{app_address}/console/conversations/{id}/typing"))
                .header(header::COOKIE, cookie)
                .header(header::ORIGIN, &app_address)
                .form(&[("csrf", csrf)])
                .send()
                .await
                .expect("answered")
        }
    };
    assert_eq!(typing(csrf.clone(), conversation_id.clone()).await.status(), StatusCode::NO_CONTENT);
    let shown = sim.get("/control/typing").await;
    assert_eq!(shown["typing"], json!([{"to": ["+12015550162"]}]), "{shown}");
    // Without the session's token: refused, as every change is.
    assert_eq!(typing("wrong".into(), conversation_id.clone()).await.status(), StatusCode::FORBIDDEN);

    // Another organisation's conversation: not found.
    let other = app.create_org("Other typing").await;
    let other_line = app.create_line_id("+12015550112", Some(&other)).await;
    let theirs = app.create_conversation(&other, &other_line, "+12015550163").await;
    assert_eq!(typing(csrf.clone(), theirs.id).await.status(), StatusCode::NOT_FOUND);

    // An SMS conversation cannot show typing: the refusal says why.
    let sms = conversation_of(&app, json!({"to": "+12015550164", "body": "hi", "channel": "sms"})).await;
    let answer = typing(csrf, sms).await;
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    assert!(answer.text().await.unwrap().contains("iMessage only"));
}

#[tokio::test]
async fn the_try_it_panel_shows_what_the_agent_would_do_and_sends_and_records_nothing() {
    let model = FakeModel::start(vec![
        tool_calls(&[("send_poll", json!({"question": "Which day?", "options": ["Sat", "Sun"]}))]),
        text("Pick a day and I will book it."),
    ])
    .await;
    let url = model.url.clone();
    let app = spawn_app_with(|c| c.agent_model_url = url).await;
    let sim = app.default_line().await;
    let cookie = owner(&app, "builder@example.com").await;
    let agent = app
        .post(
            "/agents",
            &app.org.key,
            json!({"name": "Booker", "line_id": sim.line_id, "instructions": "Book tables.",
                   "tools": ["messaging_send", "send_poll"], "enabled": false}),
        )
        .await
        .expect(201);
    let agent_id = agent["id"].as_str().unwrap();
    let html = page(&app, &format!("/console/agents/{agent_id}"), &cookie).await.text().await.unwrap();
    let csrf = csrf_of(&html);
    let try_it = |csrf: String, id: String, said: &'static str| {
        let address = app.address.clone();
        let cookie = cookie.clone();
        async move {
            browser()
                .post(format!("{address}/console/agents/{id}/try"))
                .header(header::COOKIE, cookie)
                .header(header::ORIGIN, &address)
                .form(&[("csrf", csrf.as_str()), ("transcript", ""), ("said", said)])
                .send()
                .await
                .expect("answered")
        }
    };
    let answer = try_it(csrf.clone(), agent_id.to_string(), "A table for two this weekend?").await;
    assert_eq!(answer.status(), StatusCode::OK);
    let html = answer.text().await.unwrap();
    assert!(html.contains("Would call <code>send_poll</code>"), "{html}");
    assert!(html.contains("Pick a day and I will book it."), "{html}");
    assert!(html.contains("No run yet"), "a try is not a run: {html}");
    let asked = model.requests();
    assert_eq!(asked.len(), 2, "the poll's result went back to the model");
    assert_eq!(asked[0]["messages"][1], json!({"role": "user", "content": "A table for two this weekend?"}));
    assert!(asked[1]["messages"].to_string().contains("not sent"), "the model is told nothing went out");
    assert!(sim.sent().await.is_empty(), "nothing went out on the line");
    let messages = app.get("/messages", &app.org.key).await.expect(200);
    assert_eq!(messages["data"], json!([]));

    // Another organisation's agent is not found; a try without the session's token is refused.
    let other = app.create_org("Other builder").await;
    let other_line = app.create_line_id("+12015550113", Some(&other)).await;
    let theirs = app
        .post("/agents", &other.key, json!({"name": "Theirs", "line_id": other_line, "instructions": "x"}))
        .await
        .expect(201);
    let refused = try_it(csrf, theirs["id"].as_str().unwrap().to_string(), "hello").await;
    assert_eq!(refused.status(), StatusCode::NOT_FOUND);
    assert_eq!(try_it("wrong".into(), agent_id.to_string(), "hello").await.status(), StatusCode::FORBIDDEN);
    assert_eq!(model.requests().len(), 2, "a refused try asks no model");
}

#[tokio::test]
async fn a_thread_open_on_one_instance_shows_what_arrived_through_another() {
    if !use_postgres() {
        return; // several instances need a shared server database: the PostgreSQL pass runs this
    }
    let db = TestDb::new_postgres().await;
    let url = db.url().to_string();
    let line = process_line(&url, "Two instances").await;
    let other_port = crate::simline::free_port();
    // The simulator reports to the first instance; the thread is open on the second.
    let _first = serve_process(&url, line.port, &[]).await;
    let _second = serve_process(&url, other_port, &[]).await;
    let staff = cli_value(
        &url,
        &["admin", "staff", "create", "--org", &line.org_id, "--email", "two@example.com", "--role", "owner"],
    )
    .await;
    let second = format!("http://127.0.0.1:{other_port}");
    let token = staff["sign_in_url"].as_str().unwrap().split_once("token=").unwrap().1.to_string();
    let password = "a long enough password";
    let welcomed = browser()
        .post(format!("{second}/console/welcome"))
        .header(header::ORIGIN, &second)
        .form(&[("token", token.as_str()), ("password", password), ("confirm", password)])
        .send()
        .await
        .unwrap();
    assert_eq!(welcomed.status(), StatusCode::SEE_OTHER);
    let cookie = welcomed.headers()[header::SET_COOKIE].to_str().unwrap().split(';').next().unwrap().to_string();

    let first = format!("http://127.0.0.1:{}/api/v1/messaging", line.port);
    let api = reqwest::Client::new();
    let sent: Value = api
        .post(format!("{first}/messages"))
        .bearer_auth(&line.key)
        .json(&json!({"to": "+12015550165", "body": "opening the thread"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let conversation_id = sent["message"]["conversation_id"].as_str().expect("conversation_id");
    let live = browser()
        .get(format!("{second}/console/conversations/{conversation_id}/live"))
        .header(header::COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(live.status(), StatusCode::OK);
    assert_eq!(live.headers()[header::CONTENT_TYPE], "text/event-stream");
    let control = format!("http://127.0.0.1:{}/control/inbound", line.sim_port);
    reqwest::Client::new()
        .post(control)
        .json(&json!({"from": "+12015550165", "body": "arrived through the first"}))
        .send()
        .await
        .unwrap();
    let mut live = live;
    let mut seen = String::new();
    tokio::time::timeout(std::time::Duration::from_secs(15), async {
        while let Some(chunk) = live.chunk().await.expect("the event stream reads") {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("arrived through the first") {
                return;
            }
        }
        panic!("the event stream ended");
    })
    .await
    .expect("the thread on the second instance showed the message within 15 s");
    assert!(seen.contains("event: thread"), "{seen}");
}

#[tokio::test]
async fn a_scheduled_message_shows_its_time_and_is_canceled_from_its_thread_only() {
    let app = spawn_app_with(|c| c.schedule_min_seconds = 1).await;
    let sim = app.default_line().await;
    let cookie = owner(&app, "schedules@example.com").await;
    let send_at = msgline::clock::rfc3339(msgline::clock::now_ms() + 60_000);
    let sent = app
        .post("/messages", &app.org.key, json!({"to": "+12015550166", "body": "later", "send_at": send_at}))
        .await
        .expect(202);
    let (id, conversation_id) = (
        sent["message"]["id"].as_str().unwrap().to_string(),
        sent["message"]["conversation_id"].as_str().unwrap().to_string(),
    );
    let html = page(&app, &format!("/console/conversations/{conversation_id}"), &cookie).await.text().await.unwrap();
    assert!(html.contains(&format!("to go out at {send_at}")), "{html}");
    let csrf = csrf_of(&html);
    let cancel = |conversation: String, message: String| {
        let address = app.address.clone();
        let cookie = cookie.clone();
        let csrf = csrf.clone();
        async move {
            browser()
                .post(format!("{address}/console/conversations/{conversation}/cancel"))
                .header(header::COOKIE, cookie)
                .header(header::ORIGIN, &address)
                .form(&[("csrf", csrf.as_str()), ("message_id", message.as_str())])
                .send()
                .await
                .expect("answered")
        }
    };
    // Through another thread of the organisation: not found, and it stays scheduled.
    let other = conversation_of(&app, json!({"to": "+12015550167", "body": "other"})).await;
    assert_eq!(cancel(other, id.clone()).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(app.get(&format!("/messages/{id}"), &app.org.key).await.expect(200)["status"], "scheduled");
    // Through its own thread: canceled.
    assert_eq!(cancel(conversation_id.clone(), id.clone()).await.status(), StatusCode::SEE_OTHER);
    assert_eq!(app.get(&format!("/messages/{id}"), &app.org.key).await.expect(200)["status"], "canceled");
    assert!(sim.sent_with_id(&id).await.is_empty());
    // A message that went out at once cannot be: the refusal says why.
    let now = app.post("/messages", &app.org.key, json!({"to": "+12015550166", "body": "now"})).await.expect(202);
    let answer = cancel(conversation_id, now["message"]["id"].as_str().unwrap().to_string()).await;
    assert_eq!(answer.status(), StatusCode::CONFLICT);
    assert!(answer.text().await.unwrap().contains("only a scheduled message can be canceled"));
}
