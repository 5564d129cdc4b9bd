//! MCP over HTTP (`/mcp`, the streamable HTTP transport) driven by the official MCP Python SDK's
//! client (`tests/support/mcp_http_client.py`, in the virtual environment `scripts/test` makes):
//! the tools listed, a send made once through its idempotency key and read back, a wrong key
//! refused.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::helpers::spawn_app;

/// The Python with the MCP SDK: `MSGLINE_MCP_PYTHON`, else the environment `scripts/test` makes.
fn python() -> PathBuf {
    if let Ok(python) = std::env::var("MSGLINE_MCP_PYTHON") {
        return PathBuf::from(python);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|_| root.join("target"));
    let python = target.join("mcp-venv/bin/python");
    assert!(
        python.exists(),
        "the MCP Python SDK is not installed at {}: run `scripts/mcp-sdk` (scripts/test does)",
        python.display()
    );
    python
}

/// Runs the SDK's client against `url` with `key`; its one JSON line.
async fn assistant(url: &str, key: &str) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/mcp_http_client.py");
    let output = tokio::process::Command::new(python())
        .arg(script)
        .args([url, key, "+12015550123"])
        .output()
        .await
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|_| panic!("the client printed no JSON: {stdout}\n{}", String::from_utf8_lossy(&output.stderr)))
}

#[tokio::test]
async fn an_assistant_on_another_machine_lists_the_tools_sends_once_and_reads_it_back() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let url = format!("http://127.0.0.1:{}/mcp", app.port);
    let seen = assistant(&url, &app.org.key).await;
    assert!(seen.get("refused").is_none(), "{seen}");
    assert_eq!(seen["server"]["name"], "msgline", "{seen}");
    assert_eq!(seen["server"]["version"], env!("CARGO_PKG_VERSION"), "{seen}");
    let tools: Vec<&str> = seen["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(tools, crate::mcp::TOOLS);

    assert_eq!(seen["sent"]["error"], false, "{seen}");
    let id = seen["sent"]["json"]["message"]["id"].as_str().expect("a message id").to_string();
    assert_eq!(seen["again"]["json"]["message"]["id"], json!(id), "the same key answers the same message");
    assert_eq!(seen["again"]["json"]["duplicate"], true);
    assert_eq!(seen["read"]["json"]["id"], json!(id), "{seen}");
    app.wait_for_message(&app.org.key, &id, "delivered", |m| m["status"] == "delivered").await;
    assert_eq!(line.sent_with_id(&id).await.len(), 1, "sent once");
}

#[tokio::test]
async fn a_wrong_key_is_refused_before_any_tool_and_sends_nothing() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let url = format!("http://127.0.0.1:{}/mcp", app.port);
    let wrong = format!("{}x", app.org.key);
    let seen = assistant(&url, &wrong).await;
    // The SDK gives up at `initialize` (it says "Server returned an error response"): no tool
    // was listed or called.
    let refused = seen["refused"].as_str().unwrap_or_else(|| panic!("the session went ahead: {seen}"));
    assert!(refused.contains("error"), "{refused}");

    // The answer itself is the API's: 401 with its JSON error.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let answer = reqwest::Client::new()
        .post(&url)
        .bearer_auth(&wrong)
        .header("Accept", "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 401);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["error"], "unauthorized", "{body}");
    assert!(line.sent().await.is_empty(), "nothing was sent");
}

#[tokio::test]
async fn each_request_of_the_transport_counts_against_the_keys_rate_limit() {
    let app = crate::helpers::spawn_app_with(|config| config.rate_limit_per_minute = 3).await;
    let url = format!("http://127.0.0.1:{}/mcp", app.port);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let client = reqwest::Client::new();
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let answer = client
            .post(&url)
            .bearer_auth(&app.org.key)
            .header("Accept", "application/json, text/event-stream")
            .json(&ping)
            .send()
            .await
            .unwrap();
        statuses.push((answer.status().as_u16(), answer.headers().contains_key("retry-after")));
    }
    assert_eq!(statuses, [(200, false), (200, false), (200, false), (429, true)]);
}

/// An assistant's tool calls, in order, through the SDK's client: each call's `isError` and its
/// texts.
const CALLS: &str = r#"
import asyncio, json, sys
from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

async def run(url, key, calls):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    async with http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                seen = []
                for name, arguments in calls:
                    result = await session.call_tool(name, arguments)
                    seen.append({"error": bool(result.is_error), "texts": [c.text for c in result.content]})
                return seen

url, key, calls = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
print(json.dumps(asyncio.run(asyncio.wait_for(run(url, key, calls), timeout=60))))
"#;

/// Makes the tool calls `calls` (`[[name, arguments], ...]`) over HTTP; each one's error flag and
/// its first text as JSON.
async fn tool_calls(url: &str, key: &str, calls: Value) -> Vec<(bool, Value)> {
    let output = tokio::process::Command::new(python())
        .args(["-c", CALLS, url, key, &calls.to_string()])
        .output()
        .await
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let seen: Vec<Value> = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| {
        panic!("the client printed no JSON: {stdout}\n{}", String::from_utf8_lossy(&output.stderr))
    });
    seen.iter()
        .map(|call| (call["error"] == true, serde_json::from_str(call["texts"][0].as_str().unwrap()).unwrap()))
        .collect()
}

#[tokio::test]
async fn an_assistant_over_http_edits_a_sent_message_on_the_line_and_hears_a_late_edit_refused() {
    let app = spawn_app().await;
    let line = app.default_line().await;
    let mut ids = Vec::new();
    for body in ["See you at 6", "Late"] {
        let sent = app.post("/messages", &app.org.key, json!({"to": "+12015550123", "body": body})).await.expect(202);
        let id = sent["message"]["id"].as_str().unwrap().to_string();
        app.wait_for_message(&app.org.key, &id, "the message sent", |m| !m["sent_at"].is_null()).await;
        ids.push(id);
    }
    let (id, late) = (&ids[0], &ids[1]);
    // Sent more than 15 minutes ago, as far as msgline knows: past Apple's edit window.
    sqlx::query("UPDATE messages SET sent_at = sent_at - 901000 WHERE id = $1")
        .bind(late)
        .execute(app.db().writer_for_tests())
        .await
        .unwrap();

    let url = format!("http://127.0.0.1:{}/mcp", app.port);
    let calls = json!([
        ["edit_message", {"id": id, "body": "See you at 7"}],
        ["edit_message", {"id": late, "body": "Too late"}],
    ]);
    let seen = tool_calls(&url, &app.org.key, calls).await;
    let (error, edited) = &seen[0];
    assert!(!error, "{edited}");
    assert_eq!(
        (edited["body"].as_str(), edited["edits"][0]["body"].as_str()),
        (Some("See you at 7"), Some("See you at 6"))
    );
    let (error, refused) = &seen[1];
    assert!(error, "{refused}");
    assert_eq!(refused["error"], "edit_window_closed", "{refused}");

    let actions: Vec<Value> = line.sent().await.into_iter().filter(|s| s["target"].as_str() == Some(id)).collect();
    assert_eq!(actions.len(), 1, "{actions:?}");
    assert_eq!((actions[0]["kind"].as_str(), actions[0]["body"].as_str()), (Some("edit"), Some("See you at 7")));
    assert!(
        line.sent().await.iter().all(|s| s["target"].as_str() != Some(late)),
        "a refused edit never reaches the line"
    );
}
