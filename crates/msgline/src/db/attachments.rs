//! Attachments' rows: which organisation and message a stored file belongs to, and what it is.

use sqlx::Row;

use super::{Batch, Db};
use crate::{domain::payload::AttachmentSummary, ids};

#[derive(Debug, Clone)]
pub struct Attachment {
    pub id: String,
    pub org_id: String,
    pub message_id: String,
    pub content_type: String,
    pub size: i64,
    pub filename: Option<String>,
    /// The key of its bytes in the media store.
    pub storage_key: String,
    /// Its place among the message's attachments, from 0.
    pub position: i64,
    pub created_at: i64,
}

impl Attachment {
    /// A new attachment of `org_id`'s (its message is set when the message is staged).
    pub fn new(org_id: &str, position: i64, content_type: &str, size: i64, filename: Option<String>, now: i64) -> Self {
        let id = ids::new_id("file");
        Attachment {
            storage_key: format!("{org_id}/{id}"),
            id,
            org_id: org_id.to_string(),
            message_id: String::new(),
            content_type: content_type.to_string(),
            size,
            filename,
            position,
            created_at: now,
        }
    }

    /// A file that arrived on a line, stored before it is known which organisation the message
    /// goes to (on a shared line that is decided when it is applied; the row takes it then).
    pub fn arrived(
        line_id: &str,
        position: i64,
        content_type: &str,
        size: i64,
        filename: Option<String>,
        now: i64,
    ) -> Self {
        let id = ids::new_id("file");
        Attachment {
            storage_key: format!("lines/{line_id}/{id}"),
            id,
            org_id: String::new(),
            message_id: String::new(),
            content_type: content_type.to_string(),
            size,
            filename,
            position,
            created_at: now,
        }
    }

    /// As a message lists it.
    pub fn summary(&self) -> AttachmentSummary {
        AttachmentSummary {
            id: self.id.clone(),
            content_type: self.content_type.clone(),
            size: self.size,
            filename: self.filename.clone(),
        }
    }
}

const COLUMNS: &str = "id, org_id, message_id, content_type, size, filename, storage_key, position, created_at";

fn from_row(row: &sqlx::any::AnyRow) -> sqlx::Result<Attachment> {
    Ok(Attachment {
        id: row.try_get("id")?,
        org_id: row.try_get("org_id")?,
        message_id: row.try_get("message_id")?,
        content_type: row.try_get("content_type")?,
        size: row.try_get("size")?,
        filename: row.try_get("filename")?,
        storage_key: row.try_get("storage_key")?,
        position: row.try_get("position")?,
        created_at: row.try_get("created_at")?,
    })
}

/// Stages the row into the batch that stores its message.
pub fn stage_insert(batch: &mut Batch, attachment: &Attachment) {
    batch.push(
        format!("INSERT INTO attachments ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"),
        vec![
            (&attachment.id).into(),
            (&attachment.org_id).into(),
            (&attachment.message_id).into(),
            (&attachment.content_type).into(),
            attachment.size.into(),
            attachment.filename.clone().into(),
            (&attachment.storage_key).into(),
            attachment.position.into(),
            attachment.created_at.into(),
        ],
    );
}

/// An attachment of the organisation.
pub async fn get(db: &Db, org_id: &str, id: &str) -> sqlx::Result<Option<Attachment>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM attachments WHERE org_id = $1 AND id = $2"))
        .bind(org_id)
        .bind(id)
        .fetch_optional(db.reader())
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// An attachment of a message on the line (what a line's bridge may fetch).
pub async fn get_on_line(db: &Db, line_id: &str, id: &str) -> sqlx::Result<Option<Attachment>> {
    let row = sqlx::query(&format!(
        "SELECT {} FROM attachments a JOIN messages m ON m.id = a.message_id WHERE a.id = $1 AND m.line_id = $2",
        COLUMNS.split(", ").map(|c| format!("a.{c}")).collect::<Vec<_>>().join(", ")
    ))
    .bind(id)
    .bind(line_id)
    .fetch_optional(db.reader())
    .await?;
    row.as_ref().map(from_row).transpose()
}

/// Which of `ids` have an attachment row.
pub async fn existing(db: &Db, ids: &[&str]) -> sqlx::Result<std::collections::HashSet<String>> {
    if ids.is_empty() {
        return Ok(Default::default());
    }
    let sql = format!("SELECT id FROM attachments WHERE id IN ({})", super::engine::batch::placeholders(ids.len()));
    let mut query = sqlx::query(&sql);
    for id in ids {
        query = query.bind(*id);
    }
    let rows = query.fetch_all(db.reader()).await?;
    rows.iter().map(|r| r.try_get::<String, _>(0)).collect()
}

/// A message's attachments, in the order they were given.
pub async fn for_message(db: &Db, message_id: &str) -> sqlx::Result<Vec<Attachment>> {
    let rows = sqlx::query(&format!("SELECT {COLUMNS} FROM attachments WHERE message_id = $1 ORDER BY position"))
        .bind(message_id)
        .fetch_all(db.reader())
        .await?;
    rows.iter().map(from_row).collect()
}
