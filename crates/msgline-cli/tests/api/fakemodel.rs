//! A fake OpenAI-compatible chat-completions server on a loopback port: it records every request
//! and answers from a script, the way a language model outside the project would.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{Json, Router, extract::State, http::StatusCode, response::IntoResponse, routing::post};
use serde_json::{Value, json};

#[derive(Default)]
struct Script {
    answers: VecDeque<Value>,
    requests: Vec<Value>,
}

#[derive(Clone)]
pub struct FakeModel {
    pub url: String,
    script: Arc<Mutex<Script>>,
}

/// An assistant message that calls tools: `(name, arguments)` pairs.
pub fn tool_calls(calls: &[(&str, Value)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            json!({"id": format!("call_{i}_{name}"), "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    json!({"message": {"role": "assistant", "content": null, "tool_calls": calls}})
}

/// An assistant message with text only.
pub fn text(content: &str) -> Value {
    json!({"message": {"role": "assistant", "content": content}})
}

async fn complete(State(script): State<Arc<Mutex<Script>>>, Json(request): Json<Value>) -> axum::response::Response {
    let answer = {
        let mut script = script.lock().unwrap();
        script.requests.push(request);
        script.answers.pop_front().unwrap_or_else(|| text("ok"))
    };
    if let Some(ms) = answer["delay_ms"].as_u64() {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if let Some(status) = answer["status"].as_u64() {
        return (StatusCode::from_u16(status as u16).unwrap(), Json(json!({"error": {"message": "scripted failure"}})))
            .into_response();
    }
    Json(json!({
        "id": "chatcmpl-test", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "message": answer["message"].clone(), "finish_reason": "stop"}]
    }))
    .into_response()
}

impl FakeModel {
    pub async fn start(answers: Vec<Value>) -> FakeModel {
        let script = Arc::new(Mutex::new(Script { answers: answers.into(), requests: Vec::new() }));
        let router = Router::new().route("/v1/chat/completions", post(complete)).with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        FakeModel { url, script }
    }

    pub fn requests(&self) -> Vec<Value> {
        self.script.lock().unwrap().requests.clone()
    }
}
