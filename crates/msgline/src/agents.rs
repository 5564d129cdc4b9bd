//! The hosted-agent runtime: one run per triggering inbound message. A run asks an
//! OpenAI-compatible chat-completions endpoint with the agent's instructions, the recent
//! conversation and its tools, performs the tool calls it gets back through the same code as the
//! public send endpoints, feeds the results back, and stops when the model answers without tool
//! calls (that text is sent as a message) or after five tool calls.
//!
//! A run that an instance loses mid-way (a crash) is claimed again and starts over; every send it
//! makes carries an idempotency key derived from the run and the call's position, so a tool call
//! that was already performed is never performed twice.

use std::time::Duration;

use serde_json::{Value, json};

use crate::{
    caller::Principal,
    clock,
    db::{
        self,
        agents::{Agent, Run, ToolCall},
    },
    error::ApiError,
    ratelimit::Policy,
    ratelimit::RateLimits,
    send::{Sender, card::send_card_request, poll::send_poll_request, request::send_text},
};

/// What the hosted agents work with: the send path (their tools are its sends), the rate limits
/// an agent's sends count against, and the client for the model endpoint.
#[derive(Clone)]
pub struct Agents {
    pub sender: Sender,
    pub limits: std::sync::Arc<RateLimits>,
    /// The client for the operator-configured model endpoint.
    pub model_http: reqwest::Client,
}

impl Agents {
    pub fn new(sender: Sender, limits: std::sync::Arc<RateLimits>) -> Self {
        let model_http =
            reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("HTTP client builds");
        Agents { sender, limits, model_http }
    }
}

/// The send path's handles (`state.db`, `state.config`, ...), and a `&Agents` passes as the
/// `&Sender` the send functions take.
impl std::ops::Deref for Agents {
    type Target = Sender;
    fn deref(&self) -> &Sender {
        &self.sender
    }
}

pub const MAX_TOOL_CALLS: usize = 5;
const HISTORY: i64 = 20;

/// The JSON-schema function definitions of the tools an agent has.
pub fn tool_schemas(agent: &Agent) -> Vec<Value> {
    let all = [
        json!({"type": "function", "function": {
            "name": "messaging_send",
            "description": "Send a text message to the person in this conversation.",
            "parameters": {"type": "object", "properties": {
                "body": {"type": "string", "description": "The message text, up to 10,000 characters."}
            }, "required": ["body"]}
        }}),
        json!({"type": "function", "function": {
            "name": "send_contact_card",
            "description": "Send a saveable contact card. Without name, phone or photo it is your own card: your name, your line's number and your photo.",
            "parameters": {"type": "object", "properties": {
                "name": {"type": "string"}, "phone": {"type": "string", "description": "E.164, e.g. +12015550123"},
                "email": {"type": "string"}, "organization": {"type": "string"}, "note": {"type": "string"},
                "photo_url": {"type": "string", "description": "HTTPS URL of a JPEG, PNG or GIF up to 200 KB"},
                "caption": {"type": "string"}
            }}
        }}),
        json!({"type": "function", "function": {
            "name": "send_poll",
            "description": "Send a native iMessage poll to this conversation.",
            "parameters": {"type": "object", "properties": {
                "question": {"type": "string", "description": "Up to 200 characters."},
                "options": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 12,
                            "description": "2 to 12 distinct options, up to 80 characters each."}
            }, "required": ["question", "options"]}
        }}),
    ];
    all.into_iter().filter(|tool| agent.has_tool(tool["function"]["name"].as_str().unwrap_or_default())).collect()
}

/// What a run ended with.
#[derive(Debug)]
pub enum Outcome {
    /// The model answered with text, which was sent (or nothing to say).
    Replied,
    /// The run stopped at the tool-call cap.
    ToolCap,
    /// The model could not be asked or answered something unreadable.
    ModelError(String),
    /// The agent's reply was not sent: the agent is over a rate limit (seconds to wait).
    RateLimited(u64),
}

/// Counts one send of an agent against the rate limits, as a request of its own caller: every
/// message an agent sends, tool call or reply, is counted. `Err` holds the seconds to wait.
async fn may_send(state: &Agents, principal: &Principal) -> Result<(), u64> {
    state
        .limits
        .check_all(&[Policy::Global, Policy::Send], &principal.caller())
        .await
        .map(drop)
        .map_err(|(_, wait)| wait)
}

pub async fn execute(state: &Agents, run: &Run) -> anyhow::Result<Outcome> {
    let mut conn = state.db.writer().acquire().await?;
    let agent = db::agents::get_any(&mut conn, &run.agent_id).await?;
    drop(conn);
    let Some(agent) = agent.filter(|a| a.enabled) else {
        return Ok(Outcome::ModelError("the agent was disabled or deleted".into()));
    };
    let history = db::agents::recent_messages(&state.db, &run.org_id, &run.conversation_id, HISTORY).await?;
    let mut messages = vec![json!({"role": "system", "content": system_prompt(&agent)})];
    for (direction, body) in history {
        let role = if direction == "inbound" { "user" } else { "assistant" };
        messages.push(json!({"role": role, "content": body}));
    }
    let tools = tool_schemas(&agent);
    let done = db::agents::tool_calls(&state.db, &run.id).await?;
    let principal = Principal::agent(&agent.org_id, &agent.id, &agent.line_id);
    let mut seq = 0usize;
    loop {
        let lease = clock::now_ms() + lease_ms(state);
        db::agents::renew(&state.db, &run.id, lease).await?;
        let reply = match ask_model(state, &agent, &messages, &tools).await {
            Ok(reply) => reply,
            Err(error) => return Ok(Outcome::ModelError(error)),
        };
        let calls = reply["tool_calls"].as_array().cloned().unwrap_or_default();
        if calls.is_empty() {
            let text = reply["content"].as_str().unwrap_or_default().trim().to_string();
            if !text.is_empty() {
                if let Err(retry_after) = may_send(state, &principal).await {
                    return Ok(Outcome::RateLimited(retry_after));
                }
                let raw = json!({"conversation_id": run.conversation_id, "body": text});
                let key = format!("agent-{}-reply", run.id);
                if let Err(error) = send_text(state, &principal, raw, Some(&key), Some(&agent.id)).await
                    && error.code != "idempotency_key_reused"
                {
                    tracing::warn!(run = %run.id, error = %error, "the agent's reply could not be sent");
                }
            }
            return Ok(Outcome::Replied);
        }
        let mut assistant = json!({"role": "assistant", "content": reply["content"].clone(), "tool_calls": []});
        let mut results = Vec::new();
        for call in calls {
            if seq >= MAX_TOOL_CALLS {
                break;
            }
            seq += 1;
            assistant["tool_calls"].as_array_mut().expect("array").push(call.clone());
            let call_id = call["id"].as_str().unwrap_or_default().to_string();
            let name = call["function"]["name"].as_str().unwrap_or_default().to_string();
            let arguments = call["function"]["arguments"].as_str().unwrap_or("{}").to_string();
            // A call this run already performed before it was interrupted is not performed again.
            let recorded = done.iter().find(|c| c.seq == seq as i64);
            let result = match recorded {
                Some(call) => serde_json::from_str(&call.result).unwrap_or(Value::Null),
                None => {
                    let (status, result, message_id) =
                        perform(state, &principal, &agent, run, seq, &name, &arguments).await;
                    let record = ToolCall {
                        seq: seq as i64,
                        call_id: call_id.clone(),
                        tool: name.clone(),
                        arguments: arguments.clone(),
                        status: status.into(),
                        result: result.to_string(),
                        message_id,
                        created_at: clock::now_ms(),
                    };
                    db::agents::record_tool_call(&state.db, &run.id, &record).await?;
                    result
                }
            };
            results.push(json!({"role": "tool", "tool_call_id": call_id, "content": result.to_string()}));
        }
        messages.push(assistant);
        messages.extend(results);
        if seq >= MAX_TOOL_CALLS {
            return Ok(Outcome::ToolCap);
        }
    }
}

fn system_prompt(agent: &Agent) -> String {
    format!(
        "{}\n\nYou are {}, texting from a phone line. Reply briefly, as in a text message. Use the tools to send \
         messages, contact cards and polls to the person in this conversation.",
        agent.instructions, agent.name
    )
}

fn lease_ms(state: &Agents) -> i64 {
    state.config.agent_timeout_ms as i64 * 2 + 5_000
}

/// One call to the chat-completions endpoint; the assistant message it answered.
async fn ask_model(state: &Agents, agent: &Agent, messages: &[Value], tools: &[Value]) -> Result<Value, String> {
    let model = agent.model.clone().unwrap_or_else(|| state.config.agent_model.clone());
    let mut body = json!({"model": model, "messages": messages});
    if !tools.is_empty() {
        body["tools"] = json!(tools);
    }
    let url = format!("{}/chat/completions", state.config.agent_model_url.trim_end_matches('/'));
    let mut request =
        state.model_http.post(url).json(&body).timeout(Duration::from_millis(state.config.agent_timeout_ms));
    if let Some(key) = &state.config.agent_api_key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.map_err(|e| {
        if e.is_timeout() {
            "the model did not answer in time".to_string()
        } else {
            "the model could not be reached".to_string()
        }
    })?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("the model answered {status}"));
    }
    let answer: Value = response.json().await.map_err(|_| "the model's answer is not JSON".to_string())?;
    let message = answer["choices"][0]["message"].clone();
    if message.is_null() {
        return Err("the model's answer has no choices[0].message".into());
    }
    Ok(message)
}

/// Performs one tool call: (`ok` or `error`, the result for the model, the message it sent).
async fn perform(
    state: &Agents,
    principal: &Principal,
    agent: &Agent,
    run: &Run,
    seq: usize,
    name: &str,
    arguments: &str,
) -> (&'static str, Value, Option<String>) {
    if !agent.has_tool(name) {
        return (
            "error",
            json!({"ok": false, "error": "tool_not_allowed", "message": format!("{name} is not one of this agent's tools")}),
            None,
        );
    }
    let Ok(Value::Object(mut args)) = serde_json::from_str::<Value>(arguments) else {
        return (
            "error",
            json!({"ok": false, "error": "invalid_arguments", "message": "the arguments are not a JSON object"}),
            None,
        );
    };
    // Every tool sends into the conversation that triggered the run.
    for field in ["to", "contact_id", "line_id", "from", "line_e164", "idempotency_key"] {
        args.remove(field);
    }
    args.insert("conversation_id".into(), json!(run.conversation_id));
    if let Err(retry_after) = may_send(state, principal).await {
        return ("error", json!({"ok": false, "error": "rate_limited", "retry_after": retry_after}), None);
    }
    let key = format!("agent-{}-{seq}", run.id);
    let raw = Value::Object(args);
    let sent = match name {
        "messaging_send" => send_text(state, principal, raw, Some(&key), Some(&agent.id)).await,
        "send_contact_card" => {
            let mut raw = raw;
            raw["agent_id"] = json!(agent.id);
            send_card_request(state, principal, raw, Some(&key), Some(&agent.id)).await
        }
        _ => send_poll_request(state, principal, raw, Some(&key), Some(&agent.id)).await,
    };
    match sent {
        Ok(sent) => {
            let message = sent.message;
            let result = json!({"ok": true, "message_id": message.id, "status": message.status});
            ("ok", result, Some(message.id))
        }
        // The same call was performed by an earlier attempt of this run.
        Err(error) if error.code == "idempotency_key_reused" => {
            ("ok", json!({"ok": true, "note": "already sent by an earlier attempt of this run"}), None)
        }
        Err(error) => ("error", error_result(&error), None),
    }
}

/// What the model reads of a refused call: the error's code, message and fields, as the API
/// would have answered them.
fn error_result(error: &ApiError) -> Value {
    let mut result = serde_json::Map::new();
    result.insert("error".into(), json!(error.code));
    if let Some(message) = &error.message {
        result.insert("message".into(), json!(message));
    }
    result.extend(error.extra.clone());
    result.insert("ok".into(), json!(false));
    Value::Object(result)
}
