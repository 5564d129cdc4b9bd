//! Reactions and the messages they react to. A reaction is a message of kind `reaction`; its row
//! here names its target, so a message's reactions are read by the target's id.

use std::collections::HashMap;

use sqlx::AnyConnection;

use super::{Batch, Columns, Db};
use crate::{
    clock,
    domain::{
        lifecycle::{Direction, MessageStatus, Tapback},
        payload::{Payload, ReactionSummary},
    },
};

/// A reaction message's row: what it reacts to, and how.
#[derive(Debug, Clone)]
pub struct NewReaction {
    pub message_id: String,
    pub org_id: String,
    /// `None` when the reaction named a message msgline does not know.
    pub target_id: Option<String>,
    pub tapback: Tapback,
    pub removed: bool,
    pub created_at: i64,
}

impl NewReaction {
    /// The reaction message's payload.
    pub fn payload(&self) -> Payload {
        Payload::Reaction(ReactionSummary {
            tapback: self.tapback,
            target_message_id: self.target_id.clone(),
            removed: self.removed,
        })
    }
}

/// Stages the row into the batch that stores the reaction message.
pub fn stage_insert(batch: &mut Batch, reaction: &NewReaction) {
    batch.push(
        "INSERT INTO reactions (message_id, org_id, target_id, reaction, removed, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
        vec![
            (&reaction.message_id).into(),
            (&reaction.org_id).into(),
            reaction.target_id.clone().into(),
            reaction.tapback.as_str().into(),
            i64::from(reaction.removed).into(),
            reaction.created_at.into(),
        ],
    );
}

/// Stores the row in a transaction of its own caller's (an inbound reaction's).
pub async fn insert(conn: &mut AnyConnection, reaction: &NewReaction) -> sqlx::Result<()> {
    let mut batch = Batch::new();
    stage_insert(&mut batch, reaction);
    batch.execute(conn).await
}

/// One reaction as its target shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Standing {
    pub reaction: Tapback,
    pub direction: Direction,
    /// Who reacted: the contact's number for an inbound reaction, the line's for an outbound one.
    pub from: Option<String>,
    pub message_id: String,
    pub created_at: String,
}

struct Row {
    target_id: String,
    message_id: String,
    tapback: Tapback,
    removed: bool,
    created_at: i64,
    direction: Direction,
    status: MessageStatus,
    from: Option<String>,
}

/// The reactions standing on each of `targets` (messages of `org_id`), oldest first: each
/// person's latest reaction of each kind, unless it was a removal; an outbound reaction that
/// failed does not count.
pub async fn standing(db: &Db, org_id: &str, targets: &[&str]) -> sqlx::Result<HashMap<String, Vec<Standing>>> {
    if targets.is_empty() {
        return Ok(HashMap::new());
    }
    let wanted = super::engine::batch::texts_of(db.backend(), 2);
    let sql = format!(
        "SELECT r.target_id, r.message_id, r.reaction, r.removed, r.created_at, m.direction, m.status, \
         CASE WHEN m.direction = 'outbound' THEN l.e164 ELSE ct.phone END AS sender \
         FROM reactions r JOIN messages m ON m.id = r.message_id \
         LEFT JOIN contacts ct ON ct.id = m.contact_id LEFT JOIN lines l ON l.id = m.line_id \
         WHERE r.org_id = $1 AND r.target_id IN ({wanted}) ORDER BY r.created_at, r.message_id"
    );
    let args = vec![org_id.into(), serde_json::to_string(targets).expect("ids serialise").into()];
    let rows = db
        .read_rows(sql, args, |row: &dyn Columns| {
            Ok(Row {
                target_id: row.text("target_id")?,
                message_id: row.text("message_id")?,
                tapback: super::parsed(row, "reaction")?,
                removed: row.int("removed")? != 0,
                created_at: row.int("created_at")?,
                direction: super::parsed(row, "direction")?,
                status: super::parsed(row, "status")?,
                from: row.opt_text("sender")?,
            })
        })
        .await?;
    let mut out: HashMap<String, Vec<Standing>> = HashMap::new();
    for row in rows.into_iter().filter(|r| r.status != MessageStatus::Failed) {
        let list = out.entry(row.target_id.clone()).or_default();
        // A later reaction of the same person and kind replaces (or, removed, takes back) theirs.
        list.retain(|s| !(s.reaction == row.tapback && s.direction == row.direction && s.from == row.from));
        if !row.removed {
            list.push(Standing {
                reaction: row.tapback,
                direction: row.direction,
                from: row.from,
                message_id: row.message_id,
                created_at: clock::rfc3339(row.created_at),
            });
        }
    }
    out.retain(|_, list| !list.is_empty());
    Ok(out)
}

/// The message of a conversation that a reaction's words quote: the latest of its last 50
/// messages (reactions aside) whose text they quote.
pub async fn quoted(
    conn: &mut AnyConnection,
    org_id: &str,
    conversation_id: &str,
    words: &crate::domain::reaction::TextReaction,
) -> sqlx::Result<Option<String>> {
    let rows = sqlx::query(
        "SELECT id, body, kind FROM messages WHERE org_id = $1 AND conversation_id = $2 \
         ORDER BY id DESC LIMIT 50",
    )
    .bind(org_id)
    .bind(conversation_id)
    .fetch_all(&mut *conn)
    .await?;
    for row in rows {
        let body: String = sqlx::Row::try_get(&row, 1)?;
        let kind: String = sqlx::Row::try_get(&row, 2)?;
        if kind != "reaction" && words.quotes(&body) {
            return Ok(Some(sqlx::Row::try_get(&row, 0)?));
        }
    }
    Ok(None)
}
