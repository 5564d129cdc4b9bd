//! Hosted agents' settings: creating, finding and changing one with `messaging_agents`, one
//! enabled agent per line.

use base64::{Engine, engine::general_purpose::STANDARD};
use serde::Deserialize;

use crate::{
    caller::Principal,
    clock,
    db::{
        self,
        agents::{Agent, TOOLS},
    },
    domain::{id::AgentId, scope::Scope},
    error::{ApiError, ApiResult},
    fields::{bounded, required_text},
    send::card::photo,
    services::Services,
};

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
async fn apply(state: &Services, caller: &Principal, agent: &mut Agent, fields: AgentFields) -> ApiResult<()> {
    if let Some(name) = fields.name {
        agent.name = required_text("name", Some(name), 100)?.trim().to_string();
    }
    if let Some(line_id) = fields.line_id {
        if !caller.may_use_line(&line_id) {
            return Err(ApiError::conflict("line_mismatch", "this API key is bound to another line"));
        }
        state
            .sender
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
        let fetched = photo(&state.sender, fields.photo_url.as_deref(), fields.photo_base64.as_deref()).await?;
        agent.photo = Some(STANDARD.encode(&fetched.bytes));
        agent.photo_url = fields.photo_url;
    }
    Ok(())
}

/// Creates an agent with the API's rules (one enabled agent per line, a line of the
/// organisation, known tools); the console's builder creates through this too.
pub async fn create(state: &Services, caller: &Principal, fields: AgentFields) -> ApiResult<Agent> {
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
        .sender
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
pub async fn find(state: &Services, caller: &Principal, id: &AgentId) -> ApiResult<Agent> {
    db::agents::get(&state.sender.db, &caller.org_id, id)
        .await?
        .filter(|a| caller.may_use_line(&a.line_id))
        .ok_or_else(|| ApiError::not_found("agent"))
}

/// Changes the fields given, with the API's rules; the console's builder saves through this too.
pub async fn update(state: &Services, caller: &Principal, id: &AgentId, fields: AgentFields) -> ApiResult<Agent> {
    caller.require(Scope::Agents)?;
    let mut agent = find(state, caller, id).await?;
    apply(state, caller, &mut agent, fields).await?;
    agent.updated_at = clock::now_ms();
    state
        .sender
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
