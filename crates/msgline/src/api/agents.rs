//! Hosted agents (scope `messaging_agents`): `GET/POST /agents`, `GET/PATCH/DELETE /agents/{id}`,
//! `GET /agents/{id}/runs`.

use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
};
use base64::{Engine, engine::general_purpose::STANDARD};
use serde::Deserialize;
use serde_json::{Value, json};

use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{ApiJson, PageParams, PageQuery, list},
    openapi::schemas,
};
use crate::{
    api::AppState,
    caller::Principal,
    clock,
    db::{
        self,
        agents::{Agent, TOOLS, ToolCall},
    },
    domain::scope::Scope,
    error::{ApiError, ApiResult},
    fields::{bounded, required_text},
    send::card::photo,
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_agents, create_agent))
        .routes(routes!(get_agent, update_agent, delete_agent))
        .routes(routes!(list_runs))
}

const ID: &str = "The agent's id (`agt_…`)";

/// An agent's fields: all of them to create one (`name`, `instructions` and, unless the key is
/// line-bound, `line_id` required), any of them to change one.
#[derive(Deserialize, Default, utoipa::ToSchema)]
#[schema(example = json!({"name": "Ava", "line_id": "line_...", "instructions": "You answer questions about opening hours."}))]
pub struct AgentFields {
    /// Up to 100 characters; also the name on its contact cards.
    #[schema(max_length = 100)]
    pub name: Option<String>,
    /// The line it answers on (one enabled agent per line).
    pub line_id: Option<String>,
    /// An `https://` URL of its photo (JPEG, PNG or GIF, at most 200 KB).
    pub photo_url: Option<String>,
    /// The photo as base64 instead.
    pub photo_base64: Option<String>,
    /// Its instructions, up to 20,000 characters.
    #[schema(max_length = 20000)]
    pub instructions: Option<String>,
    /// Tools it may use: `messaging_send`, `send_contact_card`, `send_poll` (default all).
    pub tools: Option<Vec<String>>,
    /// The language model; the server's default when omitted.
    #[schema(max_length = 200)]
    pub model: Option<String>,
    pub enabled: Option<bool>,
}

fn tools(requested: Vec<String>) -> ApiResult<Vec<String>> {
    let mut tools = Vec::new();
    for tool in requested {
        if !TOOLS.contains(&tool.as_str()) {
            return Err(ApiError::invalid("tools", format!("unknown tool {tool:?}; tools are {}", TOOLS.join(", "))));
        }
        if !tools.contains(&tool) {
            tools.push(tool);
        }
    }
    Ok(tools)
}

fn conflict_on_line() -> ApiError {
    ApiError::conflict("agent_line_taken", "another enabled agent already answers on this line")
}

/// Applies the given fields to an agent (new or existing), validating each.
async fn apply(state: &AppState, caller: &Principal, agent: &mut Agent, fields: AgentFields) -> ApiResult<()> {
    if let Some(name) = fields.name {
        agent.name = required_text("name", Some(name), 100)?.trim().to_string();
    }
    if let Some(line_id) = fields.line_id {
        if !caller.may_use_line(&line_id) {
            return Err(ApiError::conflict("line_mismatch", "this API key is bound to another line"));
        }
        state
            .lines
            .get(&line_id)
            .await?
            .filter(|l| l.usable_by(&caller.org_id))
            .ok_or_else(|| ApiError::not_found("line").with("field", "line_id"))?;
        agent.line_id = line_id;
    }
    if let Some(instructions) = fields.instructions {
        agent.instructions = required_text("instructions", Some(instructions), 20_000)?;
    }
    if let Some(requested) = fields.tools {
        agent.tools = tools(requested)?;
    }
    if let Some(model) = fields.model {
        agent.model = bounded("model", Some(model), 200)?.filter(|m| !m.is_empty());
    }
    if let Some(enabled) = fields.enabled {
        agent.enabled = enabled;
    }
    if fields.photo_url.is_some() || fields.photo_base64.is_some() {
        let fetched = photo(state, fields.photo_url.as_deref(), fields.photo_base64.as_deref()).await?;
        agent.photo = Some(STANDARD.encode(&fetched.bytes));
        agent.photo_url = fields.photo_url;
    }
    Ok(())
}

/// Create a hosted agent that answers inbound messages on a line.
#[utoipa::path(
    post,
    path = "/agents",
    tag = "agents",
    security(("api_key" = ["messaging_agents"])),
    request_body = AgentFields,
    responses(
        (status = 201, description = "The agent", body = schemas::Agent),
        (status = 404, description = "A `line_id` that does not resolve (`not_found`, with `field`)", body = schemas::Error),
        (status = 409, description = "`agent_line_taken` (another enabled agent answers on the line) or `line_mismatch`", body = schemas::Error),
    ),
)]
async fn create_agent(
    State(state): State<AppState>,
    caller: Principal,
    ApiJson(fields): ApiJson<AgentFields>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let agent = create(&state, &caller, fields).await?;
    Ok((StatusCode::CREATED, Json(agent_json(&agent))))
}

/// Creates an agent with the API's rules (one enabled agent per line, a line of the
/// organisation, known tools); the console's builder creates through this too.
pub async fn create(state: &AppState, caller: &Principal, fields: AgentFields) -> ApiResult<Agent> {
    caller.require(Scope::Agents)?;
    required_text("name", fields.name.clone(), 100)?;
    required_text("instructions", fields.instructions.clone(), 20_000)?;
    let line_id = match (&fields.line_id, caller.bound_line()) {
        (Some(line), _) => line.clone(),
        (None, Some(bound)) => bound.to_string(),
        (None, None) => return Err(ApiError::invalid("line_id", "line_id is required")),
    };
    let now = clock::now_ms();
    let mut agent = Agent {
        id: db::agents::new_id(),
        org_id: caller.org_id.clone(),
        name: String::new(),
        line_id: String::new(),
        photo_url: None,
        photo: None,
        instructions: String::new(),
        tools: TOOLS.iter().map(|t| t.to_string()).collect(),
        model: None,
        enabled: true,
        created_at: now,
        updated_at: now,
    };
    apply(state, caller, &mut agent, AgentFields { line_id: Some(line_id), ..fields }).await?;
    state
        .db
        .transaction(async |tx| {
            if agent.enabled && db::agents::enabled_on_line(tx, &agent.org_id, &agent.line_id, None).await?.is_some() {
                return Err(conflict_on_line());
            }
            match db::agents::insert(tx, &agent).await {
                Err(error) if db::is_unique_violation(&error) => Err(conflict_on_line()),
                other => Ok(other?),
            }
        })
        .await?;
    Ok(agent)
}

/// The caller's agent with this id, or 404 (also one on a line the caller may not use).
pub async fn find(state: &AppState, caller: &Principal, id: &str) -> ApiResult<Agent> {
    db::agents::get(&state.db, &caller.org_id, id)
        .await?
        .filter(|a| caller.may_use_line(&a.line_id))
        .ok_or_else(|| ApiError::not_found("agent"))
}

/// Change an agent: only the fields given.
#[utoipa::path(
    patch,
    path = "/agents/{id}",
    tag = "agents",
    security(("api_key" = ["messaging_agents"])),
    params(("id" = String, Path, description = ID)),
    request_body = AgentFields,
    responses(
        (status = 200, description = "The agent", body = schemas::Agent),
        (status = 409, description = "`agent_line_taken` or `line_mismatch`", body = schemas::Error),
    ),
)]
async fn update_agent(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
    ApiJson(fields): ApiJson<AgentFields>,
) -> ApiResult<Json<Value>> {
    Ok(Json(agent_json(&update(&state, &caller, &id, fields).await?)))
}

/// Changes the fields given, with the API's rules; the console's builder saves through this too.
pub async fn update(state: &AppState, caller: &Principal, id: &str, fields: AgentFields) -> ApiResult<Agent> {
    caller.require(Scope::Agents)?;
    let mut agent = find(state, caller, id).await?;
    apply(state, caller, &mut agent, fields).await?;
    agent.updated_at = clock::now_ms();
    state
        .db
        .transaction(async |tx| {
            if agent.enabled
                && db::agents::enabled_on_line(tx, &agent.org_id, &agent.line_id, Some(&agent.id)).await?.is_some()
            {
                return Err(conflict_on_line());
            }
            match db::agents::update(tx, &agent).await {
                Err(error) if db::is_unique_violation(&error) => Err(conflict_on_line()),
                other => Ok(other?),
            }
        })
        .await?;
    Ok(agent)
}

/// The caller's agents.
#[utoipa::path(
    get,
    path = "/agents",
    tag = "agents",
    security(("api_key" = ["messaging_agents"])),
    params(PageParams),
    responses((status = 200, description = "A page of agents", body = schemas::List<schemas::Agent>)),
)]
async fn list_agents(
    State(state): State<AppState>,
    caller: Principal,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Agents)?;
    let page = page?;
    let mut paged = db::agents::list(&state.db, &caller.org_id, &page).await?;
    paged.rows.retain(|a| caller.may_use_line(&a.line_id));
    Ok(Json(list(paged, agent_json)))
}

/// An agent.
#[utoipa::path(
    get,
    path = "/agents/{id}",
    tag = "agents",
    security(("api_key" = ["messaging_agents"])),
    params(("id" = String, Path, description = ID)),
    responses((status = 200, description = "The agent", body = schemas::Agent)),
)]
async fn get_agent(State(state): State<AppState>, caller: Principal, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    caller.require(Scope::Agents)?;
    Ok(Json(agent_json(&find(&state, &caller, &id).await?)))
}

/// Delete an agent.
#[utoipa::path(
    delete,
    path = "/agents/{id}",
    tag = "agents",
    security(("api_key" = ["messaging_agents"])),
    params(("id" = String, Path, description = ID)),
    responses((status = 200, description = "Deleted", body = schemas::Deleted)),
)]
async fn delete_agent(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Agents)?;
    let agent = find(&state, &caller, &id).await?;
    db::agents::delete(&state.db, &caller.org_id, &agent.id).await?;
    Ok(Json(json!({"id": agent.id, "deleted": true})))
}

/// An agent's runs with their tool calls, newest first.
#[utoipa::path(
    get,
    path = "/agents/{id}/runs",
    tag = "agents",
    security(("api_key" = ["messaging_agents"])),
    params(("id" = String, Path, description = ID), PageParams),
    responses((status = 200, description = "A page of runs", body = schemas::List<schemas::AgentRun>)),
)]
async fn list_runs(
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Agents)?;
    let agent = find(&state, &caller, &id).await?;
    let page = page?;
    let paged = db::agents::list_runs(&state.db, &agent.id, &page).await?;
    let run_ids: Vec<String> = paged.rows.iter().map(|run| run.id.clone()).collect();
    let mut calls_of = db::agents::tool_calls_of(&state.db, &run_ids).await?;
    let mut data = Vec::with_capacity(paged.rows.len());
    for run in &paged.rows {
        let calls = calls_of.remove(&run.id).unwrap_or_default();
        data.push(json!({
            "id": run.id,
            "agent_id": run.agent_id,
            "trigger_message_id": run.trigger_message_id,
            "conversation_id": run.conversation_id,
            "state": run.state,
            "attempts": run.attempts,
            "outcome": run.outcome,
            "error": run.error,
            "created_at": clock::rfc3339(run.created_at),
            "finished_at": clock::rfc3339_opt(run.finished_at),
            "tool_calls": calls.iter().map(tool_call_json).collect::<Vec<_>>(),
        }));
    }
    let next = paged.next.map(|id| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id));
    Ok(Json(json!({"data": data, "next_cursor": next})))
}

/// An agent as the API shows it (its photo only as `has_photo`).
fn agent_json(agent: &Agent) -> Value {
    json!({
        "id": agent.id,
        "name": agent.name,
        "line_id": agent.line_id,
        "photo_url": agent.photo_url,
        "has_photo": agent.photo.is_some(),
        "instructions": agent.instructions,
        "tools": agent.tools,
        "model": agent.model,
        "enabled": agent.enabled,
        "created_at": clock::rfc3339(agent.created_at),
        "updated_at": clock::rfc3339(agent.updated_at),
    })
}

/// A run's tool call: its arguments and result as JSON where they are JSON.
fn tool_call_json(call: &ToolCall) -> Value {
    let json_or_text = |text: &str| serde_json::from_str::<Value>(text).unwrap_or_else(|_| Value::String(text.into()));
    json!({
        "seq": call.seq,
        "call_id": call.call_id,
        "tool": call.tool,
        "arguments": json_or_text(&call.arguments),
        "status": call.status,
        "result": json_or_text(&call.result),
        "message_id": call.message_id,
        "created_at": clock::rfc3339(call.created_at),
    })
}
