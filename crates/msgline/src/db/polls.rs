//! Polls and the votes on them. A contact's latest vote is the one the tally counts; every vote
//! stays in the history as its own inbound message.

use serde_json::{Value, json};
use sqlx::{AnyConnection, Row, any::AnyRow};

use super::Db;
use crate::{clock, ids};

#[derive(Debug, Clone)]
pub struct Poll {
    pub id: String,
    pub org_id: String,
    pub message_id: String,
    pub conversation_id: String,
    pub line_id: String,
    pub question: String,
    pub options: Vec<String>,
    pub created_at: i64,
}

impl Poll {
    /// Whether the poll still takes votes at `now` by its age alone (a newer poll in its
    /// conversation closes it too: see [`closed_at`]).
    pub fn open_at(&self, now: i64, open_ms: i64) -> bool {
        now < self.created_at.saturating_add(open_ms)
    }

    /// `closed_at`: when the poll stopped taking votes, `None` while it takes them.
    pub fn to_json(&self, tally: &[i64], closed_at: Option<i64>) -> Value {
        let total: i64 = tally.iter().sum();
        json!({
            "id": self.id,
            "question": self.question,
            "options": self.options,
            "message_id": self.message_id,
            "conversation_id": self.conversation_id,
            "line_id": self.line_id,
            "created_at": clock::rfc3339(self.created_at),
            "tally": self.options.iter().zip(tally).enumerate()
                .map(|(index, (option, votes))| json!({"index": index, "option": option, "votes": votes}))
                .collect::<Vec<_>>(),
            "total_votes": total,
            "closed_at": clock::rfc3339_opt(closed_at),
        })
    }
}

const COLUMNS: &str = "id, org_id, message_id, conversation_id, line_id, question, options, created_at";

fn from_row(row: &AnyRow) -> sqlx::Result<Poll> {
    let options: String = row.try_get(6)?;
    Ok(Poll {
        id: row.try_get(0)?,
        org_id: row.try_get(1)?,
        message_id: row.try_get(2)?,
        conversation_id: row.try_get(3)?,
        line_id: row.try_get(4)?,
        question: row.try_get(5)?,
        options: serde_json::from_str(&options).unwrap_or_default(),
        created_at: row.try_get(7)?,
    })
}

pub fn new_id() -> String {
    ids::new_id("poll")
}

/// Stages a poll's row into the batch that stores its message.
pub fn stage_insert(batch: &mut super::Batch, poll: &Poll) {
    batch.push(
        format!("INSERT INTO polls ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"),
        vec![
            (&poll.id).into(),
            (&poll.org_id).into(),
            (&poll.message_id).into(),
            (&poll.conversation_id).into(),
            (&poll.line_id).into(),
            (&poll.question).into(),
            serde_json::to_string(&poll.options).expect("strings").into(),
            poll.created_at.into(),
        ],
    );
}

pub async fn get(db: &Db, org_id: &str, id: &str) -> sqlx::Result<Option<Poll>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM polls WHERE org_id = $1 AND id = $2"))
        .bind(org_id)
        .bind(id)
        .fetch_optional(db.reader())
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// The poll a poll message carries.
pub async fn by_message(conn: &mut AnyConnection, message_id: &str) -> sqlx::Result<Option<Poll>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM polls WHERE message_id = $1"))
        .bind(message_id)
        .fetch_optional(&mut *conn)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// When `poll` stopped taking votes: when the next poll in its conversation was sent, or when
/// its open window ended, whichever came first; `None` while it is open.
pub async fn closed_at(
    executor: impl sqlx::Executor<'_, Database = sqlx::Any>,
    poll: &Poll,
    open_ms: i64,
    now: i64,
) -> sqlx::Result<Option<i64>> {
    let next: Option<i64> =
        sqlx::query_scalar("SELECT MIN(created_at) FROM polls WHERE conversation_id = $1 AND id > $2")
            .bind(&poll.conversation_id)
            .bind(&poll.id)
            .fetch_one(executor)
            .await?;
    let window_end = poll.created_at.saturating_add(open_ms);
    let end = next.map_or(window_end, |next| next.min(window_end));
    Ok((end <= now).then_some(end))
}

/// The most recent poll in a conversation.
pub async fn latest_in_conversation(conn: &mut AnyConnection, conversation_id: &str) -> sqlx::Result<Option<Poll>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM polls WHERE conversation_id = $1 ORDER BY id DESC LIMIT 1"))
        .bind(conversation_id)
        .fetch_optional(&mut *conn)
        .await?;
    row.as_ref().map(from_row).transpose()
}

pub async fn record_vote(
    conn: &mut AnyConnection,
    poll: &Poll,
    contact_id: &str,
    option_index: usize,
    message_id: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO poll_votes (id, poll_id, org_id, contact_id, option_index, message_id, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(ids::new_id("vote"))
    .bind(&poll.id)
    .bind(&poll.org_id)
    .bind(contact_id)
    .bind(option_index as i64)
    .bind(message_id)
    .bind(clock::now_ms())
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Votes per option, counting each contact's latest vote only.
pub async fn tally(executor: impl sqlx::Executor<'_, Database = sqlx::Any>, poll: &Poll) -> sqlx::Result<Vec<i64>> {
    let rows = sqlx::query(
        "SELECT v.option_index, COUNT(*) FROM poll_votes v WHERE v.poll_id = $1 AND v.id = \
         (SELECT MAX(w.id) FROM poll_votes w WHERE w.poll_id = v.poll_id AND w.contact_id = v.contact_id) \
         GROUP BY v.option_index",
    )
    .bind(&poll.id)
    .fetch_all(executor)
    .await?;
    let mut counts = vec![0i64; poll.options.len()];
    for row in rows {
        let index: i64 = row.try_get(0)?;
        if let Some(slot) = counts.get_mut(index as usize) {
            *slot = row.try_get(1)?;
        }
    }
    Ok(counts)
}
