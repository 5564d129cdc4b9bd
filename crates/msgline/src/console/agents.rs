//! Agents, the no-code builder: an agent's name, photo (uploaded), instructions, line, tools as
//! checkboxes and whether it is enabled; its runs with each tool call and outcome. Saved through
//! the agents service the API uses (`services::agents::{create, update}`), so the same rules hold (one
//! enabled agent per line, a photo of at most 200 KB, known tools).

use axum::{
    extract::{Multipart, Path, State},
    http::StatusCode,
    response::{IntoResponse, Redirect, Response},
};
use base64::{Engine, engine::general_purpose::STANDARD};
use minijinja::context;

use super::{
    pages::render,
    session::{SignedIn, csrf_ok, csrf_refused},
    shared::{describe, line_choices, page_context, refused, unavailable},
};
use crate::{
    clock,
    db::{self, Page, agents::TOOLS},
    domain::{id::AgentId, scope::Scope},
    error::ApiError,
    services::{Services, agents::AgentFields},
};

/// `GET /console/agents`.
pub async fn list(State(state): State<Services>, signed_in: SignedIn) -> Response {
    let caller = &signed_in.principal;
    if let Err(error) = caller.require(Scope::Agents) {
        return refused(&error);
    }
    match db::agents::list(&state.sender.db, &caller.org_id, &Page { limit: 100, before: None }).await {
        Ok(found) => {
            let agents: Vec<_> = found
                .rows
                .iter()
                .map(|a| context! { id => a.id, name => a.name, line_id => a.line_id, enabled => a.enabled, tools => a.tools })
                .collect();
            render(StatusCode::OK, "agents.html", page_context(&signed_in, "agents", context! { agents }))
        }
        Err(error) => unavailable(error),
    }
}

/// The builder's form: what it shows, filled from an agent or from what was sent.
async fn builder(
    state: &Services,
    signed_in: &SignedIn,
    status: StatusCode,
    agent: minijinja::Value,
    extra: minijinja::Value,
) -> Response {
    let lines = match line_choices(state, &signed_in.principal.org_id).await {
        Ok(lines) => lines,
        Err(error) => return unavailable(error),
    };
    let context = context! { agent, lines, tools => TOOLS.to_vec(), ..extra };
    render(status, "agent.html", page_context(signed_in, "agents", context))
}

/// `GET /console/agents/new`.
pub async fn new(State(state): State<Services>, signed_in: SignedIn) -> Response {
    if let Err(error) = signed_in.principal.require(Scope::Agents) {
        return refused(&error);
    }
    let agent = context! { tools => TOOLS.to_vec(), enabled => true };
    builder(&state, &signed_in, StatusCode::OK, agent, context! {}).await
}

/// `GET /console/agents/{id}`: the builder, and the agent's latest runs.
pub async fn edit(State(state): State<Services>, signed_in: SignedIn, Path(id): Path<String>) -> Response {
    agent_page(&state, &signed_in, &id, context! {}).await
}

/// The builder filled from a stored agent, its runs, and `extra` (the try-it panel's turns).
async fn agent_page(state: &Services, signed_in: &SignedIn, id: &str, extra: minijinja::Value) -> Response {
    if let Err(error) = signed_in.principal.require(Scope::Agents) {
        return refused(&error);
    }
    let agent = match crate::services::agents::find(state, &signed_in.principal, &AgentId::from(id)).await {
        Ok(agent) => agent,
        Err(error) => return refused(&error),
    };
    let runs = match runs(state, &agent.id).await {
        Ok(runs) => runs,
        Err(error) => return unavailable(error),
    };
    let shown = context! { id => agent.id, name => agent.name, instructions => agent.instructions,
    line_id => agent.line_id, tools => agent.tools, enabled => agent.enabled, has_photo => agent.photo.is_some() };
    builder(state, signed_in, StatusCode::OK, shown, context! { runs, ..extra }).await
}

async fn runs(state: &Services, agent_id: &str) -> sqlx::Result<Vec<minijinja::Value>> {
    let found = db::agents::list_runs(&state.sender.db, agent_id, &Page { limit: 20, before: None }).await?;
    let run_ids: Vec<String> = found.rows.iter().map(|run| run.id.clone()).collect();
    let mut calls_of = db::agents::tool_calls_of(&state.sender.db, &run_ids).await?;
    let mut runs = Vec::with_capacity(found.rows.len());
    for run in found.rows {
        let calls: Vec<_> = calls_of
            .remove(&run.id)
            .unwrap_or_default()
            .into_iter()
            .map(|c| {
                context! { tool => c.tool, status => c.status, arguments => c.arguments, result => c.result,
                message_id => c.message_id }
            })
            .collect();
        runs.push(context! { id => run.id, state => run.state, outcome => run.outcome, error => run.error,
        conversation_id => run.conversation_id, created_at => clock::rfc3339(run.created_at), calls });
    }
    Ok(runs)
}

/// What the builder's form sent.
struct Sent {
    csrf: String,
    fields: AgentFields,
}

/// Reads the builder's multipart form: text fields, a checkbox per tool, and the photo file.
async fn read(mut form: Multipart) -> Result<Sent, ApiError> {
    let mut csrf = String::new();
    let mut fields = AgentFields { tools: Some(Vec::new()), enabled: Some(false), ..AgentFields::default() };
    while let Some(field) = form.next_field().await.map_err(|e| ApiError::bad_request(e.body_text()))? {
        let name = field.name().unwrap_or_default().to_string();
        if name == "photo" {
            let bytes = field.bytes().await.map_err(|e| ApiError::bad_request(e.body_text()))?;
            if !bytes.is_empty() {
                fields.photo_base64 = Some(STANDARD.encode(&bytes));
            }
            continue;
        }
        let text = field.text().await.map_err(|e| ApiError::bad_request(e.body_text()))?;
        match name.as_str() {
            "csrf" => csrf = text,
            "name" => fields.name = Some(text),
            "instructions" => fields.instructions = Some(text),
            "line_id" => fields.line_id = Some(text).filter(|l| !l.is_empty()),
            "tool" => fields.tools.get_or_insert_with(Vec::new).push(text),
            "enabled" => fields.enabled = Some(true),
            _ => {}
        }
    }
    Ok(Sent { csrf, fields })
}

/// `POST /console/agents`: creates an agent.
pub async fn create(State(state): State<Services>, signed_in: SignedIn, form: Multipart) -> Response {
    save(&state, &signed_in, None, form).await
}

/// `POST /console/agents/{id}`: saves an agent.
pub async fn update(
    State(state): State<Services>,
    signed_in: SignedIn,
    Path(id): Path<String>,
    form: Multipart,
) -> Response {
    save(&state, &signed_in, Some(&id), form).await
}

async fn save(state: &Services, signed_in: &SignedIn, id: Option<&str>, form: Multipart) -> Response {
    let sent = match read(form).await {
        Ok(sent) => sent,
        Err(error) => return refused(&error),
    };
    if !csrf_ok(signed_in, &sent.csrf) {
        return csrf_refused();
    }
    let shown = context! { id, name => sent.fields.name, instructions => sent.fields.instructions,
    line_id => sent.fields.line_id, tools => sent.fields.tools, enabled => sent.fields.enabled };
    let caller = &signed_in.principal;
    let saved = match id {
        Some(id) => crate::services::agents::update(state, caller, &AgentId::from(id), sent.fields).await,
        None => crate::services::agents::create(state, caller, sent.fields).await,
    };
    match saved {
        Ok(agent) => Redirect::to(&format!("/console/agents/{}", agent.id)).into_response(),
        Err(error) if error.kind == crate::error::ErrorKind::NotFound && error.extra.get("field").is_none() => {
            refused(&error)
        }
        Err(error) => {
            let status = crate::web::errors::status(error.kind);
            builder(state, signed_in, status, shown, context! { error => describe(&error) }).await
        }
    }
}

/// The most turns a try-it conversation keeps (a run reads as many of a thread's messages).
const TRIAL_TURNS: usize = 20;

/// One turn of a try-it conversation, as the panel carries it from one request to the next.
#[derive(serde::Serialize, serde::Deserialize)]
struct Turn {
    /// From the test contact (else from the agent).
    inbound: bool,
    text: String,
}

#[derive(serde::Deserialize)]
pub struct TrialForm {
    #[serde(default)]
    csrf: String,
    /// The conversation so far, as JSON turns.
    #[serde(default)]
    transcript: String,
    /// What the test contact says now.
    #[serde(default)]
    said: String,
}

/// `POST /console/agents/{id}/try`: the try-it panel. The staff member talks to the agent as a
/// test contact: the agent answers through its model with its instructions and tools, but nothing
/// is sent on the line and no run is recorded; its tool calls are shown as what it would do. The
/// conversation lives in the page (each turn posts the turns before), not in the database.
pub async fn try_it(
    State(state): State<Services>,
    signed_in: SignedIn,
    Path(id): Path<String>,
    axum::Form(form): axum::Form<TrialForm>,
) -> Response {
    if !csrf_ok(&signed_in, &form.csrf) {
        return csrf_refused();
    }
    if let Err(error) = signed_in.principal.require(Scope::Agents) {
        return refused(&error);
    }
    let agent = match crate::services::agents::find(&state, &signed_in.principal, &AgentId::from(id.as_str())).await {
        Ok(agent) => agent,
        Err(error) => return refused(&error),
    };
    let mut turns: Vec<Turn> = match form.transcript.trim() {
        "" => Vec::new(),
        text => match serde_json::from_str(text) {
            Ok(turns) => turns,
            Err(_) => return refused(&ApiError::invalid("transcript", "the conversation so far is not readable")),
        },
    };
    let said = form.said.trim();
    if said.is_empty() || said.chars().count() > crate::send::request::MAX_BODY_CHARS {
        let error = ApiError::invalid("said", "say something, up to 10,000 characters");
        return agent_page(&state, &signed_in, &id, trial_context(&turns, &[], Some(describe(&error)))).await;
    }
    turns.push(Turn { inbound: true, text: said.to_string() });
    let keep = turns.len().saturating_sub(TRIAL_TURNS);
    turns.drain(..keep);
    let transcript = turns.iter().map(|t| (t.inbound, t.text.clone())).collect();
    let (done, error) = match crate::agents::rehearse(&state.agents, &agent, transcript).await {
        Ok(Ok(done)) => (done, None),
        Ok(Err(model_error)) => (Vec::new(), Some(format!("The agent could not answer: {model_error}."))),
        Err(error) => return unavailable(error),
    };
    // What the agent sent as text is its side of the conversation for the next turn.
    for step in &done {
        let text = match step.tool.as_deref() {
            None => Some(step.arguments.clone()),
            Some("messaging_send") => serde_json::from_str::<serde_json::Value>(&step.arguments)
                .ok()
                .and_then(|args| args["body"].as_str().map(str::to_string)),
            Some(_) => None,
        };
        if let Some(text) = text {
            turns.push(Turn { inbound: false, text });
        }
    }
    agent_page(&state, &signed_in, &id, trial_context(&turns, &done, error)).await
}

fn trial_context(turns: &[Turn], done: &[crate::agents::Rehearsed], error: Option<String>) -> minijinja::Value {
    let calls: Vec<_> = done.iter().filter(|d| d.tool.is_some()).collect();
    context! {
        trial => turns,
        trial_calls => calls,
        trial_error => error,
        transcript => serde_json::to_string(turns).unwrap_or_default(),
    }
}
