//! `msgline mcp`: a real MCP session over stdio (JSON-RPC, one message per line) against a
//! running server and a simulated line.

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines},
    process::{Child, ChildStdin, ChildStdout, Command},
};

use crate::helpers::spawn_app;

/// The tools, by name, in order: what both transports list.
pub const TOOLS: [&str; 12] = [
    "cancel_message",
    "create_group",
    "edit_message",
    "get_conversation_messages",
    "get_message",
    "list_conversations",
    "list_lines",
    "search_contacts",
    "send_contact_card",
    "send_message",
    "send_poll",
    "unsend_message",
];

struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: i64,
}

impl Session {
    fn start(url: &str, key: &str) -> Session {
        let mut child = Command::new(env!("CARGO_BIN_EXE_msgline"))
            .arg("mcp")
            .env("MSGLINE_URL", url)
            .env("MSGLINE_KEY", key)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("msgline mcp starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Session { child, stdin, stdout, next_id: 1 }
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.expect("write");
        self.stdin.flush().await.expect("flush");
    }

    /// A request and its answer (skipping any notification the server sends meanwhile).
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        loop {
            let line = tokio::time::timeout(std::time::Duration::from_secs(20), self.stdout.next_line())
                .await
                .expect("an answer within 20 s")
                .expect("read")
                .expect("the server is still there");
            let message: Value = serde_json::from_str(&line).expect("one JSON message per line");
            if message["id"] == json!(id) {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }

    /// `initialize`, then the client's `initialized`.
    async fn open(&mut self) {
        let params = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}});
        self.request("initialize", params).await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    }

    /// A tool's answer: whether it is an error, and its text as JSON.
    async fn call(&mut self, tool: &str, arguments: Value) -> (bool, Value) {
        let result = self.request("tools/call", json!({"name": tool, "arguments": arguments})).await;
        let text = result["content"][0]["text"].as_str().expect("a text answer");
        (result["isError"] == json!(true), serde_json::from_str(text).expect("the API's JSON"))
    }
}

#[tokio::test]
async fn an_mcp_client_lists_the_tools_sends_a_message_and_reads_it_back() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let mut session = Session::start(&format!("http://127.0.0.1:{}", app.port), &app.org.key);

    let init = session
        .request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        )
        .await;
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    assert_eq!(init["serverInfo"]["name"], "msgline", "{init}");
    assert_eq!(init["serverInfo"]["version"], env!("CARGO_PKG_VERSION"), "{init}");
    session.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;

    let listed = session.request("tools/list", json!({})).await;
    let tools = listed["tools"].as_array().expect("tools");
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, TOOLS);
    let send = tools.iter().find(|t| t["name"] == "send_message").unwrap();
    let schema = &send["inputSchema"];
    assert!(schema["required"].as_array().unwrap().contains(&json!("body")), "{schema}");
    for field in [
        "to",
        "conversation_id",
        "line_id",
        "pool_id",
        "validity_seconds",
        "channel",
        "idempotency_key",
        "send_at",
        "fallback",
        "reply_to",
        "effect",
        "subject",
    ] {
        assert!(schema["properties"][field].is_object(), "send_message takes {field}: {schema}");
    }

    // A send, and the same call again: one message (the idempotency key holds through the tool).
    let arguments = json!({"to": "+12015550123", "body": "Hello from a model", "idempotency_key": "mcp-1"});
    let (error, sent) = session.call("send_message", arguments.clone()).await;
    assert!(!error, "{sent}");
    let id = sent["message"]["id"].as_str().expect("a message id").to_string();
    let (_, again) = session.call("send_message", arguments).await;
    assert_eq!(again["message"]["id"], json!(id));
    assert_eq!(again["duplicate"], true);

    app.wait_for_message(&app.org.key, &id, "delivered", |m| m["status"] == "delivered").await;
    let (error, read) = session.call("get_message", json!({"id": id})).await;
    assert!(!error, "{read}");
    assert_eq!(read["status"], "delivered", "{read}");
    assert_eq!(line.sent_with_id(&id).await.len(), 1, "sent once");

    let conversation = read["conversation_id"].as_str().unwrap().to_string();
    let (_, messages) =
        session.call("get_conversation_messages", json!({"conversation_id": conversation, "limit": 10})).await;
    assert_eq!(messages["data"][0]["id"], json!(id));
    let (_, lines) = session.call("list_lines", json!({})).await;
    assert_eq!(lines["data"][0]["id"], json!(line.line_id));

    // A message scheduled through the tool waits, and the tool cancels it; one sent cannot be.
    let at = msgline::clock::rfc3339(msgline::clock::now_ms() + 2 * 3_600_000);
    let arguments = json!({"to": "+12015550124", "body": "Later", "send_at": at});
    let (error, scheduled) = session.call("send_message", arguments).await;
    assert!(!error, "{scheduled}");
    assert_eq!(scheduled["message"]["status"], "scheduled", "{scheduled}");
    let later = scheduled["message"]["id"].as_str().unwrap().to_string();
    let (error, canceled) = session.call("cancel_message", json!({"id": later})).await;
    assert!(!error, "{canceled}");
    assert_eq!(canceled["status"], "canceled", "{canceled}");
    assert!(line.sent_with_id(&later).await.is_empty(), "a canceled message never reaches the line");
    let (error, refused) = session.call("cancel_message", json!({"id": id})).await;
    assert!(error);
    assert_eq!(refused["error"], "message_not_cancelable", "{refused}");

    // The API's refusals come back as tool errors with its code.
    let (error, refused) = session.call("send_message", json!({"to": "+12015550123", "body": ""})).await;
    assert!(error);
    assert_eq!(refused["error"], "invalid_request", "{refused}");
    assert_eq!(refused["field"], "body");
    let (error, missing) = session.call("get_message", json!({"id": "msg_nope"})).await;
    assert!(error);
    assert_eq!(missing["error"], "not_found", "{missing}");

    drop(session.stdin);
    let status = tokio::time::timeout(std::time::Duration::from_secs(10), session.child.wait()).await;
    assert!(status.expect("it exits when the client closes stdin").expect("status").success());
}

/// Moves a message's `sent_at` back by `ms`: Apple's windows are tested by the clock, never by
/// sleeping.
async fn sent_earlier(app: &crate::helpers::TestApp, id: &str, ms: i64) {
    sqlx::query(&format!("UPDATE messages SET sent_at = sent_at - {ms} WHERE id = $1"))
        .bind(id)
        .execute(app.db().writer_for_tests())
        .await
        .unwrap();
}

/// Sends a text through the tool and waits until the line sent it; returns its id.
async fn sent_through(session: &mut Session, app: &crate::helpers::TestApp, arguments: Value) -> String {
    let (error, sent) = session.call("send_message", arguments).await;
    assert!(!error, "{sent}");
    let id = sent["message"]["id"].as_str().expect("a message id").to_string();
    app.wait_for_message(&app.org.key, &id, "the message sent", |m| !m["sent_at"].is_null()).await;
    id
}

#[tokio::test]
async fn an_mcp_client_replies_edits_and_unsends_on_the_line_and_hears_each_refusal_and_unknown_outcome() {
    let app = crate::helpers::spawn_app_with(|config| config.bridge_timeout_ms = 500).await;
    let line = app.default_line().await;
    let mut session = Session::start(&format!("http://127.0.0.1:{}", app.port), &app.org.key);
    session.open().await;
    let listed = session.request("tools/list", json!({})).await;
    let tools = listed["tools"].as_array().expect("tools");
    let edit = tools.iter().find(|t| t["name"] == "edit_message").expect("edit_message is listed");
    let required = edit["inputSchema"]["required"].as_array().unwrap();
    assert!(required.contains(&json!("id")) && required.contains(&json!("body")), "{edit}");
    let unsend = tools.iter().find(|t| t["name"] == "unsend_message").expect("unsend_message is listed");
    assert!(unsend["inputSchema"]["properties"]["idempotency_key"].is_object(), "{unsend}");

    // A reply with an effect and a subject reaches the line as one.
    let first = sent_through(&mut session, &app, json!({"to": "+12015550123", "body": "See you at 6"})).await;
    let arguments = json!({"to": "+12015550123", "body": "Or 7?", "reply_to": first, "effect": "confetti",
        "subject": "Tonight"});
    let reply = sent_through(&mut session, &app, arguments).await;
    let on_line = line.sent_with_id(&reply).await;
    assert_eq!(on_line[0]["reply_to"], json!(first), "{on_line:?}");
    assert_eq!((on_line[0]["effect"].as_str(), on_line[0]["subject"].as_str()), (Some("confetti"), Some("Tonight")));

    // An edit reaches the line once, and the message shows it.
    let arguments = json!({"id": first, "body": "See you at 7", "idempotency_key": "mcp-edit-1"});
    let (error, edited) = session.call("edit_message", arguments.clone()).await;
    assert!(!error, "{edited}");
    assert_eq!(edited["body"], "See you at 7", "{edited}");
    assert_eq!(edited["edits"][0]["body"], "See you at 6", "{edited}");
    let (_, again) = session.call("edit_message", arguments).await;
    assert_eq!(again["body"], "See you at 7", "the same key answers the same");
    let actions: Vec<Value> = line.sent().await.into_iter().filter(|s| s["target"] == json!(first)).collect();
    assert_eq!(actions.len(), 1, "edited once: {actions:?}");
    assert_eq!((actions[0]["kind"].as_str(), actions[0]["body"].as_str()), (Some("edit"), Some("See you at 7")));
    let (_, read) = session.call("get_message", json!({"id": first})).await;
    assert!(read["edited_at"].is_string() && read["body"] == "See you at 7", "{read}");

    // Past Apple's window, the tool answers the API's refusal.
    sent_earlier(&app, &first, 15 * 60_000 + 1_000).await;
    let (error, refused) = session.call("edit_message", json!({"message_id": first, "body": "Too late"})).await;
    assert!(error, "{refused}");
    assert_eq!(refused["error"], "edit_window_closed", "{refused}");
    let (error, refused) = session.call("unsend_message", json!({"id": first})).await;
    assert!(error);
    assert_eq!(refused["error"], "unsend_window_closed", "{refused}");

    // An unsend within the window; the message keeps its text.
    let oops = sent_through(&mut session, &app, json!({"to": "+12015550123", "body": "Oops"})).await;
    let (error, unsent) = session.call("unsend_message", json!({"id": oops})).await;
    assert!(!error, "{unsent}");
    assert!(unsent["unsent_at"].is_string() && unsent["body"] == "Oops", "{unsent}");
    let actions: Vec<Value> = line.sent().await.into_iter().filter(|s| s["target"] == json!(oops)).collect();
    assert_eq!(actions[0]["kind"], "unsend", "{actions:?}");

    // A line that does not answer in time: the tool says the outcome is unknown, in the message
    // (`action.status`) and in words.
    let slow = sent_through(&mut session, &app, json!({"to": "+12015550123", "body": "Version one"})).await;
    line.control("/control/mode", json!({"mode": "timeout"})).await;
    let arguments = json!({"id": slow, "body": "Version two"});
    let result = session.request("tools/call", json!({"name": "edit_message", "arguments": arguments})).await;
    assert_ne!(result["isError"], json!(true), "{result}");
    let message: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(message["action"]["status"], "unknown", "{message}");
    let note = result["content"][1]["text"].as_str().expect("a note on the unknown outcome");
    assert!(note.contains("not confirmed") && note.contains("get_message"), "{note}");
    app.wait_for_message(&app.org.key, &slow, "the edit settled", |m| m["body"] == "Version two").await;

    // A key that may only read cannot edit.
    let reader = app.create_key(&app.org, &["messaging_read"], None).await;
    let mut reading = Session::start(&format!("http://127.0.0.1:{}", app.port), &reader);
    reading.open().await;
    let (error, refused) = reading.call("edit_message", json!({"id": oops, "body": "x"})).await;
    assert!(error);
    assert_eq!(refused["error"], "missing messaging_send scope", "{refused}");
}
