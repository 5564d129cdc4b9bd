//! Changes to a group after its creation (a rename, participants added and removed, the line
//! leaving it), and
//! changes made on the device itself. A change is `pending` while the line is called, then
//! `applied`, `failed`, or `unknown` until the line is asked about it. An applied change, and the
//! device's report of what it did, touch the group; each applied change and each change made on
//! the device writes one `messaging.group.updated`.

use serde_json::{Value, json};
use sqlx::{AnyConnection, Row, any::AnyRow};

use super::{Db, conversations::Conversation};
use crate::{clock, ids};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeState {
    Pending,
    Applied,
    Failed,
    Unknown,
}

impl ChangeState {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeState::Pending => "pending",
            ChangeState::Applied => "applied",
            ChangeState::Failed => "failed",
            ChangeState::Unknown => "unknown",
        }
    }

    pub(super) fn parse(text: &str) -> ChangeState {
        match text {
            "applied" => ChangeState::Applied,
            "failed" => ChangeState::Failed,
            "unknown" => ChangeState::Unknown,
            _ => ChangeState::Pending,
        }
    }
}

#[derive(Debug, Clone)]
pub struct GroupChange {
    pub id: String,
    pub org_id: String,
    pub group_id: String,
    pub line_id: String,
    /// The new name (`""` removes it); `None` leaves it alone.
    pub name: Option<String>,
    pub add: Vec<String>,
    pub remove: Vec<String>,
    /// The line leaves the group: once applied, nothing more is sent to it.
    pub leave: bool,
    pub state: ChangeState,
    pub error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl GroupChange {
    /// The public representation, as the API and webhook events show it.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "group_id": self.group_id,
            "name": self.name,
            "add": self.add,
            "remove": self.remove,
            "leave": self.leave,
            "status": self.state.as_str(),
            "error": self.error,
            "created_at": clock::rfc3339(self.created_at),
            "updated_at": clock::rfc3339(self.updated_at),
        })
    }
}

const COLUMNS: &str =
    "id, org_id, group_id, line_id, name, add_phones, remove_phones, state, error, created_at, updated_at, leave_group";

fn phones(text: String) -> Vec<String> {
    serde_json::from_str(&text).unwrap_or_default()
}

fn from_row(row: &AnyRow) -> sqlx::Result<GroupChange> {
    Ok(GroupChange {
        id: row.try_get(0)?,
        org_id: row.try_get(1)?,
        group_id: row.try_get(2)?,
        line_id: row.try_get(3)?,
        name: row.try_get(4)?,
        add: phones(row.try_get(5)?),
        remove: phones(row.try_get(6)?),
        state: ChangeState::parse(&row.try_get::<String, _>(7)?),
        error: row.try_get(8)?,
        created_at: row.try_get(9)?,
        updated_at: row.try_get(10)?,
        leave: row.try_get::<i64, _>(11)? != 0,
    })
}

/// Writes a new pending change of `group`.
pub async fn insert(
    conn: &mut AnyConnection,
    group: &Conversation,
    name: Option<String>,
    add: Vec<String>,
    remove: Vec<String>,
    leave: bool,
) -> sqlx::Result<GroupChange> {
    let now = clock::now_ms();
    let change = GroupChange {
        id: ids::new_id("gch"),
        org_id: group.org_id.clone(),
        group_id: group.id.clone(),
        line_id: group.line_id.clone(),
        name,
        add,
        remove,
        leave,
        state: ChangeState::Pending,
        error: None,
        created_at: now,
        updated_at: now,
    };
    sqlx::query(&format!(
        "INSERT INTO group_changes ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, $9, $9, $10)"
    ))
    .bind(&change.id)
    .bind(&change.org_id)
    .bind(&change.group_id)
    .bind(&change.line_id)
    .bind(&change.name)
    .bind(json!(change.add).to_string())
    .bind(json!(change.remove).to_string())
    .bind(change.state.as_str())
    .bind(now)
    .bind(i64::from(leave))
    .execute(&mut *conn)
    .await?;
    Ok(change)
}

/// A change by id, inside a transaction.
pub async fn get_any(conn: &mut AnyConnection, id: &str) -> sqlx::Result<Option<GroupChange>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM group_changes WHERE id = $1"))
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// A change by id.
pub async fn get(db: &Db, id: &str) -> sqlx::Result<Option<GroupChange>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM group_changes WHERE id = $1"))
        .bind(id)
        .fetch_optional(db.reader())
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// Settles a pending or unknown change: `applied` (the group takes its name and participants,
/// and `messaging.group.updated` is written), `failed` with `error`, or `unknown` again, to be
/// asked about at `next_ask_at`. A change already applied or failed stays as it is. Returns the
/// change and the group as they now are.
pub async fn settle(
    conn: &mut AnyConnection,
    id: &str,
    state: ChangeState,
    error: Option<&str>,
    next_ask_at: Option<i64>,
) -> sqlx::Result<Option<(GroupChange, Conversation)>> {
    let moved = move_unsettled(conn, "group_changes", id, state, error, next_ask_at).await?;
    let Some(change) = get_any(conn, id).await? else { return Ok(None) };
    if moved && state == ChangeState::Applied {
        apply(conn, &change.group_id, change.name.as_deref(), &change.add, &change.remove).await?;
        if change.leave {
            sqlx::query("UPDATE conversations SET group_state = 'left' WHERE id = $1")
                .bind(&change.group_id)
                .execute(&mut *conn)
                .await?;
        }
    }
    let Some(group) = super::conversations::get_any(conn, &change.group_id).await? else { return Ok(None) };
    if moved && state == ChangeState::Applied {
        announce(conn, &group, Some(&change)).await?;
    }
    Ok(Some((change, group)))
}

/// Moves a `pending` or `unknown` row of `table` (group changes, message actions) to `state`, with
/// `error` and when to ask about it next; a row already settled stays as it is. Returns whether
/// it moved: only the move that settles it applies what it asked for.
pub(super) async fn move_unsettled(
    conn: &mut AnyConnection,
    table: &str,
    id: &str,
    state: ChangeState,
    error: Option<&str>,
    next_ask_at: Option<i64>,
) -> sqlx::Result<bool> {
    let moved = sqlx::query(&format!(
        "UPDATE {table} SET state = $1, error = $2, next_ask_at = $3, updated_at = $4 \
         WHERE id = $5 AND state IN ('pending', 'unknown')"
    ))
    .bind(state.as_str())
    .bind(error)
    .bind(next_ask_at)
    .bind(clock::now_ms())
    .bind(id)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(moved == 1)
}

/// The group takes a name (`""` removes it) and loses and gains participants.
async fn apply(
    conn: &mut AnyConnection,
    group_id: &str,
    name: Option<&str>,
    add: &[String],
    remove: &[String],
) -> sqlx::Result<()> {
    if let Some(name) = name {
        sqlx::query("UPDATE conversations SET name = $1 WHERE id = $2")
            .bind((!name.is_empty()).then_some(name))
            .bind(group_id)
            .execute(&mut *conn)
            .await?;
    }
    for phone in remove {
        sqlx::query("DELETE FROM conversation_participants WHERE conversation_id = $1 AND phone = $2")
            .bind(group_id)
            .bind(phone)
            .execute(&mut *conn)
            .await?;
    }
    if add.is_empty() {
        return Ok(());
    }
    let org_id: String = sqlx::query("SELECT org_id FROM conversations WHERE id = $1")
        .bind(group_id)
        .fetch_one(&mut *conn)
        .await?
        .try_get(0)?;
    for phone in add {
        let contact = super::contacts::find_or_create(&mut *conn, &org_id, phone).await?;
        sqlx::query(
            "INSERT INTO conversation_participants (conversation_id, phone, contact_id) VALUES ($1, $2, $3) \
             ON CONFLICT DO NOTHING",
        )
        .bind(group_id)
        .bind(phone)
        .bind(&contact.id)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// `messaging.group.updated`: the group as it now is, and the change that made it so (`null`
/// for a change made on the device).
async fn announce(conn: &mut AnyConnection, group: &Conversation, change: Option<&GroupChange>) -> sqlx::Result<()> {
    let data = json!({"group": group.group_json(), "change": change.map(GroupChange::to_json)});
    super::events::insert(conn, &group.org_id, "messaging.group.updated", None, data.to_string()).await?;
    Ok(())
}

/// A change the line reports was made on the device: the group takes the name and the
/// participants it reports (those it does not report stay as they are). Returns whether
/// anything changed.
///
/// The device also reports msgline's own changes, often before msgline's call to it returns.
/// What a change still pending or unknown asked for is applied here too, so that the group
/// shows what the device does, but only that change's settling announces it, with the change:
/// one event per change, however many steps the device reports. Only a report with something
/// no such change asked for is announced here, as a change made on the device.
pub async fn apply_reported(
    conn: &mut AnyConnection,
    group: &Conversation,
    name: Option<&str>,
    participants: Option<&[String]>,
) -> sqlx::Result<bool> {
    // The changes first, then the group: a change settled between the two reads is one the
    // group already shows, so it is never taken for the device's own.
    let asked = unsettled(conn, &group.id).await?;
    let Some(group) = &super::conversations::get_any(conn, &group.id).await? else { return Ok(false) };
    let name = name.filter(|n| Some(*n) != group.name.as_deref() && !(n.is_empty() && group.name.is_none()));
    let (add, remove): (Vec<String>, Vec<String>) = match participants {
        Some(now) => (
            now.iter().filter(|p| !group.participants.contains(p)).cloned().collect(),
            group.participants.iter().filter(|p| !now.contains(p)).cloned().collect(),
        ),
        None => (Vec::new(), Vec::new()),
    };
    if name.is_none() && add.is_empty() && remove.is_empty() {
        return Ok(false);
    }
    apply(conn, &group.id, name, &add, &remove).await?;
    let ours = name.is_none_or(|n| asked.iter().any(|c| c.name.as_deref() == Some(n)))
        && add.iter().all(|p| asked.iter().any(|c| c.add.contains(p)))
        && remove.iter().all(|p| asked.iter().any(|c| c.remove.contains(p)));
    if !ours {
        let group = super::conversations::get_any(conn, &group.id).await?.expect("the group exists");
        announce(conn, &group, None).await?;
    }
    Ok(true)
}

/// msgline's changes of a group whose outcome is not settled yet: the line is still being
/// called (`pending`), or will be asked (`unknown`).
async fn unsettled(conn: &mut AnyConnection, group_id: &str) -> sqlx::Result<Vec<GroupChange>> {
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM group_changes WHERE group_id = $1 AND state IN ('pending', 'unknown')"
    ))
    .bind(group_id)
    .fetch_all(&mut *conn)
    .await?;
    rows.iter().map(from_row).collect()
}

/// Up to `limit` unknown changes whose time to be asked about has come, held until `until`.
pub async fn claim_unknown(
    db: &Db,
    now: i64,
    until: i64,
    limit: i64,
    stale_before: i64,
) -> sqlx::Result<Vec<GroupChange>> {
    let rows = claim_unsettled(db, "group_changes", COLUMNS, [now, until, limit, stale_before]).await?;
    rows.iter().map(from_row).collect()
}

/// The rows of `table` (group changes, message actions: each with `state`, `next_ask_at` and
/// `created_at`) whose outcome is unknown and whose time to be asked about has come, or still
/// `pending` since before `stale_before` (left by an instance that stopped mid-call), at most
/// `limit`, each held until `until`. The look is a read (almost always empty), so the
/// reconciler's turns cost the writer nothing; each row found is held by a conditional update,
/// so two instances never both ask about one.
pub(super) async fn claim_unsettled(
    db: &Db,
    table: &str,
    columns: &str,
    [now, until, limit, stale_before]: [i64; 4],
) -> sqlx::Result<Vec<AnyRow>> {
    let rows = sqlx::query(&format!(
        "SELECT {columns} FROM {table} WHERE state = 'unknown' AND next_ask_at <= $1 \
         UNION ALL SELECT {columns} FROM {table} WHERE state = 'pending' AND created_at < $3 LIMIT $2"
    ))
    .bind(now)
    .bind(limit)
    .bind(stale_before)
    .fetch_all(db.reader())
    .await?;
    let mut claimed = Vec::new();
    for row in rows {
        let id: String = row.try_get(0)?;
        let held = sqlx::query(&format!(
            "UPDATE {table} SET state = 'unknown', next_ask_at = $1 WHERE id = $2 \
             AND (state = 'unknown' AND next_ask_at <= $3 OR state = 'pending' AND created_at < $4)"
        ))
        .bind(until)
        .bind(&id)
        .bind(now)
        .bind(stale_before)
        .execute(db.writer())
        .await?
        .rows_affected();
        if held == 1 {
            claimed.push(row);
        }
    }
    Ok(claimed)
}

/// Locks the group `group_id` for a change of its participants until the transaction ends (on
/// PostgreSQL its row; SQLite has one writer) and tells whether another change of its
/// participants is still open: `pending` while its call runs, or `unknown` until the line is
/// asked. A `pending` change created before `stale_before` is not counted: the reconciler takes
/// it. Renames are not counted: they cannot take a group out of its bounds.
pub async fn lock_for_change(conn: &mut AnyConnection, group_id: &str, stale_before: i64) -> sqlx::Result<bool> {
    sqlx::query("UPDATE conversations SET group_state = group_state WHERE id = $1")
        .bind(group_id)
        .execute(&mut *conn)
        .await?;
    let open = sqlx::query(
        "SELECT id FROM group_changes WHERE group_id = $1 \
         AND (state = 'unknown' OR state = 'pending' AND created_at >= $2) \
         AND (add_phones <> '[]' OR remove_phones <> '[]') LIMIT 1",
    )
    .bind(group_id)
    .bind(stale_before)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(open.is_some())
}
