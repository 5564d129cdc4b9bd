//! Hosted agents (scope `messaging_agents`): `GET/POST /agents`, `GET/PATCH/DELETE /agents/{id}`,
//! `GET /agents/{id}/runs`.

use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
};
use base64::Engine;
use serde_json::{Value, json};

use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{ApiJson, PageParams, PageQuery, list},
    openapi::schemas,
};
use crate::services::agents::{AgentFields, create, find, update};
use crate::{
    caller::Principal,
    clock,
    db::{
        self,
        agents::{Agent, ToolCall},
    },
    domain::{id::AgentId, scope::Scope},
    error::ApiResult,
    services::Services,
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new()
        .routes(routes!(list_agents, create_agent))
        .routes(routes!(get_agent, update_agent, delete_agent))
        .routes(routes!(list_runs))
}

const ID: &str = "The agent's id (`agt_…`)";

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
    State(state): State<Services>,
    caller: Principal,
    ApiJson(fields): ApiJson<AgentFields>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let agent = create(&state, &caller, fields).await?;
    Ok((StatusCode::CREATED, Json(agent_json(&agent))))
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
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<AgentId>,
    ApiJson(fields): ApiJson<AgentFields>,
) -> ApiResult<Json<Value>> {
    Ok(Json(agent_json(&update(&state, &caller, &id, fields).await?)))
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
    State(state): State<Services>,
    caller: Principal,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Agents)?;
    let page = page?;
    let mut paged = db::agents::list(&state.sender.db, &caller.org_id, &page).await?;
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
async fn get_agent(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<AgentId>,
) -> ApiResult<Json<Value>> {
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
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<AgentId>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Agents)?;
    let agent = find(&state, &caller, &id).await?;
    db::agents::delete(&state.sender.db, &caller.org_id, &agent.id).await?;
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
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<AgentId>,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Agents)?;
    let agent = find(&state, &caller, &id).await?;
    let page = page?;
    let paged = db::agents::list_runs(&state.sender.db, &agent.id, &page).await?;
    let run_ids: Vec<String> = paged.rows.iter().map(|run| run.id.clone()).collect();
    let mut calls_of = db::agents::tool_calls_of(&state.sender.db, &run_ids).await?;
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
