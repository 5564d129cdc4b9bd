//! Hosted agents, their runs and tool calls.

use sqlx::{AnyConnection, Row, any::AnyRow};

use super::{Backend, Db, ListQuery, Page, Paged};
use crate::{clock, ids};

pub const TOOLS: [&str; 3] = ["messaging_send", "send_contact_card", "send_poll"];

#[derive(Debug, Clone)]
pub struct Agent {
    pub id: String,
    pub org_id: String,
    pub name: String,
    pub line_id: String,
    pub photo_url: Option<String>,
    /// The stored photo, base64 (fetched from `photo_url` or given as base64).
    pub photo: Option<String>,
    pub instructions: String,
    pub tools: Vec<String>,
    pub model: Option<String>,
    pub enabled: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Agent {
    pub fn has_tool(&self, tool: &str) -> bool {
        self.tools.iter().any(|t| t == tool)
    }
}

const COLUMNS: &str =
    "id, org_id, name, line_id, photo_url, photo, instructions, tools, model, enabled, created_at, updated_at";

fn from_row(row: &AnyRow) -> sqlx::Result<Agent> {
    let tools: String = row.try_get(7)?;
    Ok(Agent {
        id: row.try_get(0)?,
        org_id: row.try_get(1)?,
        name: row.try_get(2)?,
        line_id: row.try_get(3)?,
        photo_url: row.try_get(4)?,
        photo: row.try_get(5)?,
        instructions: row.try_get(6)?,
        tools: tools.split_whitespace().map(str::to_string).collect(),
        model: row.try_get(8)?,
        enabled: row.try_get::<i64, _>(9)? != 0,
        created_at: row.try_get(10)?,
        updated_at: row.try_get(11)?,
    })
}

pub fn new_id() -> String {
    ids::new_id("agt")
}

pub async fn insert(conn: &mut AnyConnection, agent: &Agent) -> sqlx::Result<()> {
    sqlx::query(&format!("INSERT INTO agents ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"))
        .bind(&agent.id)
        .bind(&agent.org_id)
        .bind(&agent.name)
        .bind(&agent.line_id)
        .bind(&agent.photo_url)
        .bind(&agent.photo)
        .bind(&agent.instructions)
        .bind(agent.tools.join(" "))
        .bind(&agent.model)
        .bind(agent.enabled as i64)
        .bind(agent.created_at)
        .bind(agent.updated_at)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Writes every changeable field of an agent.
pub async fn update(conn: &mut AnyConnection, agent: &Agent) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE agents SET name = $1, line_id = $2, photo_url = $3, photo = $4, instructions = $5, tools = $6, \
         model = $7, enabled = $8, updated_at = $9 WHERE id = $10 AND org_id = $11",
    )
    .bind(&agent.name)
    .bind(&agent.line_id)
    .bind(&agent.photo_url)
    .bind(&agent.photo)
    .bind(&agent.instructions)
    .bind(agent.tools.join(" "))
    .bind(&agent.model)
    .bind(agent.enabled as i64)
    .bind(agent.updated_at)
    .bind(&agent.id)
    .bind(&agent.org_id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Pushes a running run's claim forward while it works.
pub async fn renew(db: &Db, run_id: &str, until: i64) -> sqlx::Result<()> {
    sqlx::query("UPDATE agent_runs SET claimed_until = $1 WHERE id = $2 AND state = 'running'")
        .bind(until)
        .bind(run_id)
        .execute(db.writer())
        .await?;
    Ok(())
}

pub async fn get(db: &Db, org_id: &str, id: &str) -> sqlx::Result<Option<Agent>> {
    let row =
        sqlx::query(&format!("SELECT {COLUMNS} FROM agents WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL"))
            .bind(org_id)
            .bind(id)
            .fetch_optional(db.reader())
            .await?;
    row.as_ref().map(from_row).transpose()
}

/// An agent by id alone, inside a transaction.
pub async fn get_any(conn: &mut AnyConnection, id: &str) -> sqlx::Result<Option<Agent>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM agents WHERE id = $1 AND deleted_at IS NULL"))
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
    row.as_ref().map(from_row).transpose()
}

pub async fn list(db: &Db, org_id: &str, page: &Page) -> sqlx::Result<Paged<Agent>> {
    ListQuery::new(format!("SELECT {COLUMNS} FROM agents WHERE org_id = $1 AND deleted_at IS NULL"), org_id)
        .fetch(db, page, from_row, |a| &a.id)
        .await
}

/// The enabled agent of an organisation on a line, other than `except`.
pub async fn enabled_on_line(
    conn: &mut AnyConnection,
    org_id: &str,
    line_id: &str,
    except: Option<&str>,
) -> sqlx::Result<Option<Agent>> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM agents WHERE org_id = $1 AND line_id = $2 AND enabled = 1 AND deleted_at IS NULL \
         AND id <> $3 LIMIT 1"
    ))
    .bind(org_id)
    .bind(line_id)
    .bind(except.unwrap_or(""))
    .fetch_optional(&mut *conn)
    .await?;
    row.as_ref().map(from_row).transpose()
}

pub async fn delete(db: &Db, org_id: &str, id: &str) -> sqlx::Result<bool> {
    let now = clock::now_ms();
    let deleted = sqlx::query(
        "UPDATE agents SET deleted_at = $1, enabled = 0, updated_at = $1 WHERE org_id = $2 AND id = $3 AND deleted_at IS NULL",
    )
    .bind(now)
    .bind(org_id)
    .bind(id)
    .execute(db.writer())
    .await?
    .rows_affected();
    Ok(deleted == 1)
}

/// Whether this number is one of the service's own lines (an agent never answers another line).
pub async fn is_line_number(conn: &mut AnyConnection, phone: &str) -> sqlx::Result<bool> {
    Ok(sqlx::query("SELECT 1 FROM lines WHERE e164 = $1").bind(phone).fetch_optional(&mut *conn).await?.is_some())
}

// --- runs -----------------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub struct Run {
    pub id: String,
    pub agent_id: String,
    pub org_id: String,
    pub trigger_message_id: String,
    pub conversation_id: String,
    /// `pending`, `running`, `done`, `failed` or `skipped`.
    pub state: String,
    pub attempts: i64,
    pub outcome: Option<String>,
    pub error: Option<String>,
    pub created_at: i64,
    pub finished_at: Option<i64>,
}

const RUN_COLUMNS: &str = "id, agent_id, org_id, trigger_message_id, conversation_id, state, attempts, outcome, error, created_at, finished_at";

fn run_from_row(row: &AnyRow) -> sqlx::Result<Run> {
    Ok(Run {
        id: row.try_get(0)?,
        agent_id: row.try_get(1)?,
        org_id: row.try_get(2)?,
        trigger_message_id: row.try_get(3)?,
        conversation_id: row.try_get(4)?,
        state: row.try_get(5)?,
        attempts: row.try_get(6)?,
        outcome: row.try_get(7)?,
        error: row.try_get(8)?,
        created_at: row.try_get(9)?,
        finished_at: row.try_get(10)?,
    })
}

/// How many runs the agent had in the conversation since `since`.
pub async fn recent_runs(
    conn: &mut AnyConnection,
    agent_id: &str,
    conversation_id: &str,
    since: i64,
) -> sqlx::Result<i64> {
    sqlx::query(
        "SELECT COUNT(*) FROM agent_runs WHERE agent_id = $1 AND conversation_id = $2 AND created_at >= $3 AND state <> 'skipped'",
    )
    .bind(agent_id)
    .bind(conversation_id)
    .bind(since)
    .fetch_one(&mut *conn)
    .await?
    .try_get(0)
}

/// Queues a run for an inbound message (in the message's transaction); `skipped` records a
/// run that will not happen, with the reason.
pub async fn enqueue(
    conn: &mut AnyConnection,
    agent: &Agent,
    trigger_message_id: &str,
    conversation_id: &str,
    skipped: Option<&str>,
) -> sqlx::Result<()> {
    let now = clock::now_ms();
    let (state, finished) = if skipped.is_some() { ("skipped", Some(now)) } else { ("pending", None) };
    sqlx::query(
        "INSERT INTO agent_runs (id, agent_id, org_id, trigger_message_id, conversation_id, state, attempts, available_at, \
         outcome, error, created_at, finished_at) VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8, $8, $7, $9) \
         ON CONFLICT (agent_id, trigger_message_id) DO NOTHING",
    )
    .bind(ids::new_id("run"))
    .bind(&agent.id)
    .bind(&agent.org_id)
    .bind(trigger_message_id)
    .bind(conversation_id)
    .bind(state)
    .bind(now)
    .bind(skipped)
    .bind(finished)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Claims runs that are due, and runs whose claim ran out (an instance stopped mid-run).
pub async fn claim(db: &Db, now: i64, lease_ms: i64, limit: i64) -> sqlx::Result<Vec<Run>> {
    let lock = if db.backend() == Backend::Postgres { " FOR UPDATE SKIP LOCKED" } else { "" };
    let sql = format!(
        "UPDATE agent_runs SET state = 'running', claimed_until = $1, attempts = attempts + 1 \
         WHERE id IN (SELECT id FROM agent_runs WHERE (state = 'pending' AND available_at <= $2) \
         OR (state = 'running' AND claimed_until < $2) ORDER BY available_at LIMIT $3{lock}) \
         RETURNING {RUN_COLUMNS}"
    );
    let rows = sqlx::query(&sql).bind(now + lease_ms).bind(now).bind(limit).fetch_all(db.writer()).await?;
    rows.iter().map(run_from_row).collect()
}

pub async fn finish(db: &Db, run_id: &str, state: &str, outcome: &str, error: Option<&str>) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE agent_runs SET state = $1, outcome = $2, error = $3, finished_at = $4, claimed_until = NULL WHERE id = $5",
    )
    .bind(state)
    .bind(outcome)
    .bind(error)
    .bind(clock::now_ms())
    .bind(run_id)
    .execute(db.writer())
    .await?;
    Ok(())
}

pub async fn list_runs(db: &Db, agent_id: &str, page: &Page) -> sqlx::Result<Paged<Run>> {
    ListQuery::new(format!("SELECT {RUN_COLUMNS} FROM agent_runs WHERE agent_id = $1"), agent_id)
        .fetch(db, page, run_from_row, |r| &r.id)
        .await
}

// --- tool calls ------------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub struct ToolCall {
    pub seq: i64,
    pub call_id: String,
    pub tool: String,
    pub arguments: String,
    /// `ok` or `error`.
    pub status: String,
    pub result: String,
    pub message_id: Option<String>,
    pub created_at: i64,
}

pub async fn tool_calls(db: &Db, run_id: &str) -> sqlx::Result<Vec<ToolCall>> {
    Ok(tool_calls_of(db, &[run_id.to_string()]).await?.remove(run_id).unwrap_or_default())
}

/// The tool calls of several runs in one read, by run, each run's in order.
pub async fn tool_calls_of(
    db: &Db,
    run_ids: &[String],
) -> sqlx::Result<std::collections::HashMap<String, Vec<ToolCall>>> {
    let mut calls: std::collections::HashMap<String, Vec<ToolCall>> = std::collections::HashMap::new();
    if run_ids.is_empty() {
        return Ok(calls);
    }
    let sql = format!(
        "SELECT run_id, seq, call_id, tool, arguments, status, result, message_id, created_at FROM agent_tool_calls \
         WHERE run_id IN ({}) ORDER BY run_id, seq",
        super::engine::batch::placeholders(run_ids.len())
    );
    let mut query = sqlx::query(&sql);
    for id in run_ids {
        query = query.bind(id);
    }
    for r in query.fetch_all(db.writer()).await? {
        let call = ToolCall {
            seq: r.try_get(1)?,
            call_id: r.try_get(2)?,
            tool: r.try_get(3)?,
            arguments: r.try_get(4)?,
            status: r.try_get(5)?,
            result: r.try_get(6)?,
            message_id: r.try_get(7)?,
            created_at: r.try_get(8)?,
        };
        calls.entry(r.try_get(0)?).or_default().push(call);
    }
    Ok(calls)
}

pub async fn record_tool_call(db: &Db, run_id: &str, call: &ToolCall) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO agent_tool_calls (id, run_id, seq, call_id, tool, arguments, status, result, message_id, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (run_id, seq) DO NOTHING",
    )
    .bind(ids::new_id("tc"))
    .bind(run_id)
    .bind(call.seq)
    .bind(&call.call_id)
    .bind(&call.tool)
    .bind(&call.arguments)
    .bind(&call.status)
    .bind(&call.result)
    .bind(&call.message_id)
    .bind(call.created_at)
    .execute(db.writer())
    .await?;
    Ok(())
}

/// The conversation's last `n` messages, oldest first, as (direction, body).
pub async fn recent_messages(
    db: &Db,
    org_id: &str,
    conversation_id: &str,
    n: i64,
) -> sqlx::Result<Vec<(String, String)>> {
    let rows = sqlx::query(&format!(
        "SELECT direction, body FROM messages WHERE org_id = $1 AND conversation_id = $2 ORDER BY id DESC LIMIT {n}"
    ))
    .bind(org_id)
    .bind(conversation_id)
    .fetch_all(db.writer())
    .await?;
    let mut out = rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get(1)?))).collect::<sqlx::Result<Vec<_>>>()?;
    out.reverse();
    Ok(out)
}
