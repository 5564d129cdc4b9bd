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
    domain::id::AgentId,
    error::ApiError,
    fields::from_value,
    ratelimit::{Policy, RateLimits},
    send::{
        Sender,
        card::{SendCard, send_card_request},
        poll::send_poll_request,
        request::{SendFields, SendMessage, send_text},
    },
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

/// Counts one send of an agent against the global rate policy, as a request of its own caller:
/// every message an agent sends, tool call or reply, is counted (a text also against the send
/// policy, where the send path accepts it). `Err` holds the seconds to wait.
async fn may_send(state: &Agents, principal: &Principal) -> Result<(), u64> {
    state.limits.check_all(&[Policy::Global], &principal.caller()).await.map(drop).map_err(|(_, wait)| wait)
}

pub async fn execute(state: &Agents, run: &Run) -> anyhow::Result<Outcome> {
    let agent = state.db.write(async |conn| db::agents::get_any(conn, &run.agent_id).await).await?;
    let Some(agent) = agent.filter(|a| a.enabled) else {
        return Ok(Outcome::ModelError("the agent was disabled or deleted".into()));
    };
    let history = db::agents::recent_messages(&state.db, &run.org_id, &run.conversation_id, HISTORY).await?;
    let history = history.into_iter().map(|(direction, body)| (direction == "inbound", body));
    let done = db::agents::tool_calls(&state.db, &run.id).await?;
    let principal = Principal::agent(&agent.org_id, &agent.id, &agent.line_id);
    let mut effects = Effects::Run { run, principal, done };
    converse(state, &agent, history, &mut effects).await
}

/// Something an agent would have sent in the builder's try-it panel: a tool call (its name and
/// arguments) or its reply (`tool: None`, the text in `arguments`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Rehearsed {
    pub tool: Option<String>,
    pub arguments: String,
}

/// The builder's try-it panel: the agent answers a conversation with a test contact (`transcript`:
/// `(from the contact, text)`, oldest first) through the same model and tools as a run, but nothing
/// is sent and nothing is recorded: each tool call and the reply come back as [`Rehearsed`]. The
/// agent need not be enabled. `Err` is what went wrong with the model.
pub async fn rehearse(
    state: &Agents,
    agent: &Agent,
    transcript: Vec<(bool, String)>,
) -> anyhow::Result<Result<Vec<Rehearsed>, String>> {
    let mut effects = Effects::Rehearsal { said: Vec::new() };
    match converse(state, agent, transcript.into_iter(), &mut effects).await? {
        Outcome::ModelError(error) => Ok(Err(error)),
        _ => match effects {
            Effects::Rehearsal { said } => Ok(Ok(said)),
            Effects::Run { .. } => unreachable!("a rehearsal stays one"),
        },
    }
}

/// What a conversation with the model does with what the model says.
enum Effects<'a> {
    /// A run: the tool calls and the reply are sends into the run's conversation, and each call
    /// is recorded (`done`: the calls an earlier attempt of the run recorded).
    Run { run: &'a Run, principal: Principal, done: Vec<ToolCall> },
    /// The try-it panel: what would be sent is collected instead.
    Rehearsal { said: Vec<Rehearsed> },
}

impl Effects<'_> {
    /// The model answered with text.
    async fn reply(&mut self, state: &Agents, agent: &Agent, text: String) -> Outcome {
        match self {
            Effects::Rehearsal { said } => said.push(Rehearsed { tool: None, arguments: text }),
            Effects::Run { run, principal, .. } => {
                if let Err(retry_after) = may_send(state, principal).await {
                    return Outcome::RateLimited(retry_after);
                }
                let fields =
                    SendFields { conversation_id: Some(run.conversation_id.as_str().into()), ..Default::default() };
                let reply = SendMessage { body: Some(text), fields, ..Default::default() };
                let key = format!("agent-{}-reply", run.id);
                let agent_id = AgentId::from(agent.id.as_str());
                match send_text(state, principal, reply, Some(&key), Some(&agent_id)).await {
                    Err(error) if error.code == "rate_limited" => {
                        return Outcome::RateLimited(error.retry_after.unwrap_or(1));
                    }
                    Err(error) if error.code != "idempotency_key_reused" => {
                        tracing::warn!(run = %run.id, error = %error, "the agent's reply could not be sent");
                    }
                    _ => {}
                }
            }
        }
        Outcome::Replied
    }

    /// The model called a tool: what the model reads back.
    async fn call(
        &mut self,
        state: &Agents,
        agent: &Agent,
        seq: usize,
        call_id: &str,
        name: &str,
        arguments: &str,
    ) -> anyhow::Result<Value> {
        match self {
            Effects::Rehearsal { said } => {
                let result = check_call(agent, name, arguments);
                if result.is_ok() {
                    said.push(Rehearsed { tool: Some(name.to_string()), arguments: arguments.to_string() });
                }
                Ok(result.map_or_else(
                    |refused| refused,
                    |_| json!({"ok": true, "note": "a try-it conversation: shown to the builder, not sent"}),
                ))
            }
            Effects::Run { run, principal, done } => {
                // A call this run already performed before it was interrupted is not performed again.
                if let Some(call) = done.iter().find(|c| c.seq == seq as i64) {
                    return Ok(serde_json::from_str(&call.result).unwrap_or(Value::Null));
                }
                let (status, result, message_id) = perform(state, principal, agent, run, seq, name, arguments).await;
                let record = ToolCall {
                    seq: seq as i64,
                    call_id: call_id.to_string(),
                    tool: name.to_string(),
                    arguments: arguments.to_string(),
                    status: status.into(),
                    result: result.to_string(),
                    message_id,
                    created_at: clock::now_ms(),
                };
                db::agents::record_tool_call(&state.db, &run.id, &record).await?;
                Ok(result)
            }
        }
    }
}

/// Asks the model with the agent's instructions, the conversation (`(inbound, text)`, oldest
/// first) and its tools, hands each tool call and the final reply to `effects`, and stops at the
/// reply or after [`MAX_TOOL_CALLS`] calls.
async fn converse(
    state: &Agents,
    agent: &Agent,
    history: impl Iterator<Item = (bool, String)>,
    effects: &mut Effects<'_>,
) -> anyhow::Result<Outcome> {
    let mut messages = vec![json!({"role": "system", "content": system_prompt(agent)})];
    for (inbound, body) in history {
        let role = if inbound { "user" } else { "assistant" };
        messages.push(json!({"role": role, "content": body}));
    }
    let tools = tool_schemas(agent);
    let mut seq = 0usize;
    loop {
        if let Effects::Run { run, .. } = effects {
            db::agents::renew(&state.db, &run.id, clock::now_ms() + lease_ms(state)).await?;
        }
        let reply = match ask_model(state, agent, &messages, &tools).await {
            Ok(reply) => reply,
            Err(error) => return Ok(Outcome::ModelError(error)),
        };
        let calls = reply["tool_calls"].as_array().cloned().unwrap_or_default();
        if calls.is_empty() {
            let text = reply["content"].as_str().unwrap_or_default().trim().to_string();
            if text.is_empty() {
                return Ok(Outcome::Replied);
            }
            return Ok(effects.reply(state, agent, text).await);
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
            let name = call["function"]["name"].as_str().unwrap_or_default();
            let arguments = call["function"]["arguments"].as_str().unwrap_or("{}");
            let result = effects.call(state, agent, seq, &call_id, name, arguments).await?;
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
    let mut args = match check_call(agent, name, arguments) {
        Ok(args) => args,
        Err(refused) => return ("error", refused, None),
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
    let agent_id = AgentId::from(agent.id.as_str());
    let sent = match name {
        "messaging_send" => match from_value(raw) {
            Ok(request) => send_text(state, principal, request, Some(&key), Some(&agent_id)).await,
            Err(error) => Err(error),
        },
        "send_contact_card" => match from_value::<SendCard>(raw) {
            Ok(card) => {
                let card = SendCard { agent_id: Some(agent_id.clone()), ..card };
                send_card_request(state, principal, card, Some(&key), Some(&agent_id)).await
            }
            Err(error) => Err(error),
        },
        _ => match from_value(raw) {
            Ok(poll) => send_poll_request(state, principal, poll, Some(&key), Some(&agent_id)).await,
            Err(error) => Err(error),
        },
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

/// A call's arguments, if the agent has the tool and they are a JSON object; else what the model
/// reads of the refusal.
fn check_call(agent: &Agent, name: &str, arguments: &str) -> Result<serde_json::Map<String, Value>, Value> {
    if !agent.has_tool(name) {
        let message = format!("{name} is not one of this agent's tools");
        return Err(json!({"ok": false, "error": "tool_not_allowed", "message": message}));
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(args)) => Ok(args),
        _ => Err(json!({"ok": false, "error": "invalid_arguments", "message": "the arguments are not a JSON object"})),
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
