//! Edits and unsends of messages msgline sent, and those the line reports. msgline's own is an
//! action: `pending` while the line is called, then `applied`, `failed`, or `unknown` until the
//! line is asked about it (never called again). An applied action, and the device's report of an
//! edit or unsend made on it, change the message and write one `messaging.message.edited` or
//! `messaging.message.unsent` each.
//!
//! The message shows its latest action not applied in `action` (so that an answer of `202` has
//! something to poll), and its earlier texts in `edits`.

use serde_json::{Value, json};
use sqlx::{AnyConnection, Row, any::AnyRow};

use super::{Db, events, group_changes::ChangeState, messages::Message};
use crate::{clock, domain::message_action::ActionKind, ids};

#[derive(Debug, Clone)]
pub struct MessageAction {
    pub id: String,
    pub org_id: String,
    pub message_id: String,
    pub line_id: String,
    pub kind: ActionKind,
    /// The new text of an edit.
    pub body: Option<String>,
    pub state: ChangeState,
    pub error: Option<String>,
    pub created_at: i64,
}

impl MessageAction {
    /// What the message shows of it while it is not applied.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "kind": self.kind.as_str(),
            "status": self.state.as_str(),
            "body": self.body,
            "error": self.error,
            "requested_at": clock::rfc3339(self.created_at),
        })
    }
}

const COLUMNS: &str = "id, org_id, message_id, line_id, kind, body, state, error, created_at";

fn from_row(row: &AnyRow) -> sqlx::Result<MessageAction> {
    Ok(MessageAction {
        id: row.try_get(0)?,
        org_id: row.try_get(1)?,
        message_id: row.try_get(2)?,
        line_id: row.try_get(3)?,
        kind: ActionKind::parse(&row.try_get::<String, _>(4)?),
        body: row.try_get(5)?,
        state: ChangeState::parse(&row.try_get::<String, _>(6)?),
        error: row.try_get(7)?,
        created_at: row.try_get(8)?,
    })
}

/// Locks the message until the transaction ends (on PostgreSQL its row; SQLite has one writer)
/// and returns it as it then is, with its action that is not settled yet, if one is: `pending`
/// while its call runs (created at or after `stale_before`), or `unknown` until the line is asked.
pub async fn lock(
    conn: &mut AnyConnection,
    message_id: &str,
    stale_before: i64,
) -> sqlx::Result<Option<(Message, Option<MessageAction>)>> {
    sqlx::query("UPDATE messages SET updated_at = updated_at WHERE id = $1")
        .bind(message_id)
        .execute(&mut *conn)
        .await?;
    let Some(message) = super::messages::get_any(conn, message_id).await? else { return Ok(None) };
    let open = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM message_actions WHERE message_id = $1 \
         AND (state = 'unknown' OR state = 'pending' AND created_at >= $2) ORDER BY id DESC LIMIT 1"
    ))
    .bind(message_id)
    .bind(stale_before)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(Some((message, open.as_ref().map(from_row).transpose()?)))
}

/// Writes a new pending action on `message` (which shows it).
pub async fn insert(
    conn: &mut AnyConnection,
    message: &Message,
    kind: ActionKind,
    body: Option<String>,
) -> sqlx::Result<MessageAction> {
    let now = clock::now_ms();
    let action = MessageAction {
        id: ids::new_id("mac"),
        org_id: message.org_id.clone(),
        message_id: message.id.clone(),
        line_id: message.line_id.clone(),
        kind,
        body,
        state: ChangeState::Pending,
        error: None,
        created_at: now,
    };
    sqlx::query(&format!(
        "INSERT INTO message_actions ({COLUMNS}, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8, $8)"
    ))
    .bind(&action.id)
    .bind(&action.org_id)
    .bind(&action.message_id)
    .bind(&action.line_id)
    .bind(kind.as_str())
    .bind(&action.body)
    .bind(action.state.as_str())
    .bind(now)
    .execute(&mut *conn)
    .await?;
    show(conn, &message.id, Some(&action)).await?;
    Ok(action)
}

/// An action by id, inside a transaction.
pub async fn get_any(conn: &mut AnyConnection, id: &str) -> sqlx::Result<Option<MessageAction>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM message_actions WHERE id = $1"))
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// The message's `action`: the action's JSON, or none.
async fn show(conn: &mut AnyConnection, message_id: &str, action: Option<&MessageAction>) -> sqlx::Result<()> {
    sqlx::query("UPDATE messages SET action = $1 WHERE id = $2")
        .bind(action.map(|a| a.to_json().to_string()))
        .bind(message_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Settles a pending or unknown action: `applied` (the message is edited or unsent, with its
/// event), `failed` with `error`, or `unknown` again, to be asked about at `next_ask_at`. An
/// action already applied or failed stays as it is. Returns the action and the message as they
/// now are.
pub async fn settle(
    conn: &mut AnyConnection,
    id: &str,
    state: ChangeState,
    error: Option<&str>,
    next_ask_at: Option<i64>,
) -> sqlx::Result<Option<(MessageAction, Message)>> {
    let now = clock::now_ms();
    let moved = super::group_changes::move_unsettled(conn, "message_actions", id, state, error, next_ask_at).await?;
    let Some(action) = get_any(conn, id).await? else { return Ok(None) };
    if moved {
        // The message shows the action until it applies; an applied one shows in the message.
        let latest = latest_id(conn, &action.message_id).await?;
        if latest.as_deref() == Some(action.id.as_str()) {
            show(conn, &action.message_id, (state != ChangeState::Applied).then_some(&action)).await?;
        }
        if state == ChangeState::Applied
            && let Some(message) = super::messages::get_any(conn, &action.message_id).await?
        {
            match action.kind {
                ActionKind::Edit => edit(conn, &message, action.body.as_deref().unwrap_or_default(), now).await?,
                ActionKind::Unsend => unsend(conn, &message, now).await?,
            }
        }
    }
    let Some(message) = super::messages::get_any(conn, &action.message_id).await? else { return Ok(None) };
    Ok(Some((action, message)))
}

async fn latest_id(conn: &mut AnyConnection, message_id: &str) -> sqlx::Result<Option<String>> {
    let row = sqlx::query("SELECT id FROM message_actions WHERE message_id = $1 ORDER BY id DESC LIMIT 1")
        .bind(message_id)
        .fetch_optional(&mut *conn)
        .await?;
    row.map(|r| r.try_get(0)).transpose()
}

/// The message takes `body` as its text at `at`; its text until now joins its `edits`. Writes
/// `messaging.message.edited`.
async fn edit(conn: &mut AnyConnection, message: &Message, body: &str, at: i64) -> sqlx::Result<()> {
    let mut edits: Vec<Value> =
        message.edits.as_deref().and_then(|text| serde_json::from_str(text).ok()).unwrap_or_default();
    let since = message.edited_at.or(message.sent_at).unwrap_or(message.created_at);
    edits.push(json!({"body": message.body, "at": clock::rfc3339(since)}));
    sqlx::query("UPDATE messages SET body = $1, edits = $2, edited_at = $3, updated_at = $3 WHERE id = $4")
        .bind(body)
        .bind(Value::Array(edits).to_string())
        .bind(at)
        .bind(&message.id)
        .execute(&mut *conn)
        .await?;
    announce(conn, &message.id, "messaging.message.edited").await
}

/// The message is unsent at `at` (its text is kept, as the organisation's own record). Writes
/// `messaging.message.unsent`.
async fn unsend(conn: &mut AnyConnection, message: &Message, at: i64) -> sqlx::Result<()> {
    sqlx::query("UPDATE messages SET unsent_at = $1, updated_at = $1 WHERE id = $2")
        .bind(at)
        .bind(&message.id)
        .execute(&mut *conn)
        .await?;
    announce(conn, &message.id, "messaging.message.unsent").await
}

async fn announce(conn: &mut AnyConnection, message_id: &str, kind: &str) -> sqlx::Result<()> {
    let Some(message) = super::messages::get_any(conn, message_id).await? else { return Ok(()) };
    events::insert(conn, &message.org_id, kind, Some(&message.id), message.event_data()).await?;
    Ok(())
}

/// An edit or unsend the line reports for `message`: made on the device (by the person who sent
/// an inbound message, or on the line's own device), or msgline's own action echoed back, often
/// before msgline's call returns. An action of msgline's that is not settled and asked for this
/// is settled applied (its one event); a report of what the message already shows changes
/// nothing; anything else is applied as the device's own. Returns whether the message changed.
pub async fn apply_reported(
    conn: &mut AnyConnection,
    message: &Message,
    kind: ActionKind,
    body: Option<&str>,
) -> sqlx::Result<bool> {
    let open = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM message_actions WHERE message_id = $1 AND state IN ('pending', 'unknown') \
         AND kind = $2 ORDER BY id"
    ))
    .bind(&message.id)
    .bind(kind.as_str())
    .fetch_all(&mut *conn)
    .await?;
    for row in &open {
        let action = from_row(row)?;
        if kind == ActionKind::Unsend || action.body.as_deref() == body {
            settle(conn, &action.id, ChangeState::Applied, None, None).await?;
            return Ok(true);
        }
    }
    let now = clock::now_ms();
    match kind {
        ActionKind::Unsend if message.unsent_at.is_none() => unsend(conn, message, now).await?,
        ActionKind::Edit if body.is_some_and(|b| b != message.body) => {
            edit(conn, message, body.unwrap_or_default(), now).await?
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Up to `limit` actions whose outcome is unknown and whose time to be asked about has come, or
/// left pending by an instance that stopped mid-call, each held until `until` (see
/// [`super::group_changes::claim_unsettled`]).
pub async fn claim_unknown(
    db: &Db,
    now: i64,
    until: i64,
    limit: i64,
    stale_before: i64,
) -> sqlx::Result<Vec<MessageAction>> {
    let rows = super::group_changes::claim_unsettled(db, "message_actions", COLUMNS, [now, until, limit, stale_before])
        .await?;
    rows.iter().map(from_row).collect()
}
