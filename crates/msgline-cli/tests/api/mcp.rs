//! `msgline mcp`: a real MCP session over stdio (JSON-RPC, one message per line) against a
//! running server and a simulated line.

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines},
    process::{Child, ChildStdin, ChildStdout, Command},
};

use crate::helpers::spawn_app;

/// The tools, by name, in order: what both transports list.
pub const TOOLS: [&str; 10] = [
    "cancel_message",
    "create_group",
    "get_conversation_messages",
    "get_message",
    "list_conversations",
    "list_lines",
    "search_contacts",
    "send_contact_card",
    "send_message",
    "send_poll",
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
