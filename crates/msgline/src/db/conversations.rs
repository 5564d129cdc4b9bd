//! Conversations: a direct thread with one contact on one line, or an iMessage group (whose
//! participants are listed in `conversation_participants`).

use std::collections::HashMap;

use sqlx::{Row, any::AnyRow};

use super::{Db, Page, Paged};
use crate::{clock, domain::lifecycle::ConversationKind, ids};

#[derive(Debug, Clone)]
pub struct Conversation {
    pub id: String,
    pub org_id: String,
    pub line_id: String,
    pub kind: ConversationKind,
    pub contact_id: Option<String>,
    pub name: Option<String>,
    pub group_state: Option<String>,
    pub participants: Vec<String>,
    pub created_at: i64,
    pub last_message_at: Option<i64>,
}

#[derive(Debug, Clone, Default)]
pub struct ConversationFilter {
    pub line_id: Option<String>,
    pub contact_id: Option<String>,
}

const COLUMNS: &str = "id, org_id, line_id, kind, contact_id, name, group_state, created_at, last_message_at";

fn from_row(row: &AnyRow) -> sqlx::Result<Conversation> {
    Ok(Conversation {
        id: row.try_get("id")?,
        org_id: row.try_get("org_id")?,
        line_id: row.try_get("line_id")?,
        kind: super::parsed(row, "kind")?,
        contact_id: row.try_get("contact_id")?,
        name: row.try_get("name")?,
        group_state: row.try_get("group_state")?,
        participants: Vec::new(),
        created_at: row.try_get("created_at")?,
        last_message_at: row.try_get("last_message_at")?,
    })
}

/// What a send to one phone on a line needs to know of its recipient before it writes, as the
/// tables stand.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recipient {
    /// The number texted STOP to the line (the organisation's opt-out).
    pub opted_out: bool,
    pub contact_id: Option<String>,
    /// The contact's iMessage reachability, if it was ever learned.
    pub reachable: Option<bool>,
    /// The contact's direct conversation on the line.
    pub conversation_id: Option<String>,
}

/// [`Recipient`] in one read, through the readers of their own: a first send to a number
/// otherwise reads the opt-outs, the contact's reachability and the thread one after another.
pub async fn recipient(db: &Db, org_id: &str, line_id: &str, phone: &str) -> sqlx::Result<Recipient> {
    let rows = db
        .read_rows(
            "SELECT (SELECT COUNT(*) FROM opt_outs o WHERE o.org_id = $1 AND o.line_id = $2 AND o.phone = $3) \
             AS opted_out, ct.id AS contact_id, ct.imessage_reachable AS reachable, \
             (SELECT c.id FROM conversations c WHERE c.org_id = $1 AND c.line_id = $2 AND c.contact_id = ct.id \
             AND c.kind = 'direct') AS conversation_id \
             FROM (SELECT 1 AS one) AS one LEFT JOIN contacts ct ON ct.org_id = $1 AND ct.phone = $3"
                .into(),
            vec![org_id.into(), line_id.into(), phone.into()],
            |row| {
                Ok(Recipient {
                    opted_out: row.int("opted_out")? > 0,
                    contact_id: row.opt_text("contact_id")?,
                    reachable: row.opt_int("reachable")?.map(|v| v != 0),
                    conversation_id: row.opt_text("conversation_id")?,
                })
            },
        )
        .await?;
    Ok(rows.into_iter().next().unwrap_or_default())
}

/// The organisation's contact with this phone and its direct conversation on the line, each
/// if it exists (contact id, conversation id); read without the writer.
pub async fn find_direct(
    db: &Db,
    org_id: &str,
    line_id: &str,
    phone: &str,
) -> sqlx::Result<(Option<String>, Option<String>)> {
    // Planned afresh on PostgreSQL: a plan kept from when the tables were small scans every
    // contact of the organisation (the index on org_id alone looks as good then).
    find_direct_in(db.reader(), db.backend() == super::Backend::Sqlite, org_id, line_id, phone).await
}

/// [`find_direct`] through any connection (inside a transaction), its statement kept prepared
/// when `persistent`.
pub async fn find_direct_in<'c, E>(
    executor: E,
    persistent: bool,
    org_id: &str,
    line_id: &str,
    phone: &str,
) -> sqlx::Result<(Option<String>, Option<String>)>
where
    E: sqlx::Executor<'c, Database = sqlx::Any>,
{
    let row = sqlx::query(
        // The conversation is looked up by all three columns of its unique index, whatever the
        // planner knows of the tables.
        "SELECT ct.id, (SELECT c.id FROM conversations c WHERE c.org_id = $1 AND c.line_id = $2 \
         AND c.contact_id = ct.id AND c.kind = 'direct') FROM contacts ct WHERE ct.org_id = $1 AND ct.phone = $3",
    )
    .bind(org_id)
    .bind(line_id)
    .bind(phone)
    .persistent(persistent)
    .fetch_optional(executor)
    .await?;
    match row {
        Some(row) => Ok((row.try_get(0)?, row.try_get(1)?)),
        None => Ok((None, None)),
    }
}

/// Stages a new direct conversation and its participant, for the message staged with it at
/// `now` (its last message, so that the message's touch of the conversation writes nothing);
/// returns its id. The commit fails with a unique violation if the line and contact already
/// have one.
pub fn stage_create_direct(
    batch: &mut super::Batch,
    org_id: &str,
    line_id: &str,
    contact_id: &str,
    phone: &str,
    now: i64,
) -> String {
    let id = ids::new_id("conv");
    batch.push(
        "INSERT INTO conversations (id, org_id, line_id, kind, contact_id, created_at, last_message_at) \
         VALUES ($1, $2, $3, 'direct', $4, $5, $5)",
        vec![(&id).into(), org_id.into(), line_id.into(), contact_id.into(), now.into()],
    );
    batch.push(
        "INSERT INTO conversation_participants (conversation_id, phone, contact_id) VALUES ($1, $2, $3)",
        vec![(&id).into(), phone.into(), contact_id.into()],
    );
    id
}

/// The direct conversation between a line and a contact, created if it does not exist yet.
pub async fn find_or_create_direct(
    conn: &mut sqlx::AnyConnection,
    org_id: &str,
    line_id: &str,
    contact_id: &str,
    phone: &str,
) -> sqlx::Result<Conversation> {
    let now = clock::now_ms();
    let id = ids::new_id("conv");
    let created = sqlx::query(
        "INSERT INTO conversations (id, org_id, line_id, kind, contact_id, created_at) \
         VALUES ($1, $2, $3, 'direct', $4, $5) ON CONFLICT (org_id, line_id, contact_id) WHERE kind = 'direct' DO NOTHING",
    )
    .bind(&id)
    .bind(org_id)
    .bind(line_id)
    .bind(contact_id)
    .bind(now)
    .execute(&mut *conn)
    .await?
    .rows_affected()
        == 1;
    if created {
        sqlx::query("INSERT INTO conversation_participants (conversation_id, phone, contact_id) VALUES ($1, $2, $3)")
            .bind(&id)
            .bind(phone)
            .bind(contact_id)
            .execute(&mut *conn)
            .await?;
    }
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM conversations WHERE org_id = $1 AND line_id = $2 AND contact_id = $3 AND kind = 'direct'"
    ))
    .bind(org_id)
    .bind(line_id)
    .bind(contact_id)
    .fetch_one(&mut *conn)
    .await?;
    let mut conversation = from_row(&row)?;
    conversation.participants = vec![phone.to_string()];
    Ok(conversation)
}

pub async fn get(db: &Db, org_id: &str, id: &str) -> sqlx::Result<Option<Conversation>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM conversations WHERE org_id = $1 AND id = $2"))
        .bind(org_id)
        .bind(id)
        .fetch_optional(db.reader())
        .await?;
    let Some(mut conversation) = row.as_ref().map(from_row).transpose()? else { return Ok(None) };
    conversation.participants =
        participants(db, std::slice::from_ref(&conversation.id)).await?.remove(&conversation.id).unwrap_or_default();
    Ok(Some(conversation))
}

/// The organisation's conversations, newest first, optionally on one line or with one contact
/// (directly or as a group participant).
pub async fn list(
    db: &Db,
    org_id: &str,
    filter: &ConversationFilter,
    page: &Page,
) -> sqlx::Result<Paged<Conversation>> {
    // The participants come with each row (in the primary key's order, by phone): one read.
    let aggregate = match db.backend() {
        super::Backend::Postgres => "string_agg(p.phone, ',')",
        super::Backend::Sqlite => "group_concat(p.phone, ',')",
    };
    let mut sql = format!(
        "SELECT {COLUMNS}, (SELECT {aggregate} FROM conversation_participants p \
         WHERE p.conversation_id = conversations.id) AS participant_phones FROM conversations WHERE org_id = $1"
    );
    let mut binds = vec![org_id.to_string()];
    if let Some(line_id) = &filter.line_id {
        binds.push(line_id.clone());
        sql.push_str(&format!(" AND line_id = ${}", binds.len()));
    }
    if let Some(contact_id) = &filter.contact_id {
        binds.push(contact_id.clone());
        let n = binds.len();
        sql.push_str(&format!(
            " AND (contact_id = ${n} OR id IN (SELECT conversation_id FROM conversation_participants WHERE contact_id = ${n}))"
        ));
    }
    if let Some(before) = &page.before {
        binds.push(before.clone());
        sql.push_str(&format!(" AND id < ${}", binds.len()));
    }
    sql.push_str(&format!(" ORDER BY id DESC LIMIT {}", page.limit + 1));
    let mut query = sqlx::query(&sql);
    for bind in &binds {
        query = query.bind(bind);
    }
    let rows = query.fetch_all(db.reader()).await?;
    let conversations = rows
        .iter()
        .map(|row| {
            let mut conversation = from_row(row)?;
            let phones: Option<String> = row.try_get("participant_phones")?;
            let mut phones: Vec<String> = phones.iter().flat_map(|p| p.split(',')).map(str::to_string).collect();
            phones.sort();
            conversation.participants = phones;
            Ok(conversation)
        })
        .collect::<sqlx::Result<Vec<_>>>()?;
    Ok(Paged::from_overfetch(conversations, page.limit, |c| &c.id))
}

async fn participants(db: &Db, ids: &[String]) -> sqlx::Result<HashMap<String, Vec<String>>> {
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let sql = format!(
        "SELECT conversation_id, phone FROM conversation_participants WHERE conversation_id IN ({}) ORDER BY phone",
        super::engine::batch::placeholders(ids.len())
    );
    let mut query = sqlx::query(&sql);
    for id in ids {
        query = query.bind(id);
    }
    for row in query.fetch_all(db.reader()).await? {
        out.entry(row.try_get(0)?).or_default().push(row.try_get(1)?);
    }
    Ok(out)
}

/// A group conversation of the organisation on this line, by id.
pub async fn get_group_on_line(
    conn: &mut sqlx::AnyConnection,
    org_id: &str,
    line_id: &str,
    id: &str,
) -> sqlx::Result<Option<Conversation>> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM conversations WHERE org_id = $1 AND line_id = $2 AND id = $3 AND kind = 'group'"
    ))
    .bind(org_id)
    .bind(line_id)
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?;
    row.as_ref().map(from_row).transpose()
}

impl Conversation {
    /// The `group` object of a group conversation.
    pub fn group_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "state": self.group_state,
            "name": self.name,
            "participants": self.participants,
            "line_id": self.line_id,
            "created_at": clock::rfc3339(self.created_at),
        })
    }
}

/// Creates a group conversation in state `creating` with its participants (phone, contact id).
pub async fn create_group(
    conn: &mut sqlx::AnyConnection,
    org_id: &str,
    line_id: &str,
    name: Option<&str>,
    participants: &[(String, String)],
) -> sqlx::Result<Conversation> {
    let conversation = Conversation {
        id: ids::new_id("conv"),
        org_id: org_id.to_string(),
        line_id: line_id.to_string(),
        kind: ConversationKind::Group,
        contact_id: None,
        name: name.map(str::to_string),
        group_state: Some("creating".into()),
        participants: participants.iter().map(|(phone, _)| phone.clone()).collect(),
        created_at: clock::now_ms(),
        last_message_at: None,
    };
    sqlx::query(
        "INSERT INTO conversations (id, org_id, line_id, kind, name, group_state, created_at) \
         VALUES ($1, $2, $3, 'group', $4, 'creating', $5)",
    )
    .bind(&conversation.id)
    .bind(org_id)
    .bind(line_id)
    .bind(&conversation.name)
    .bind(conversation.created_at)
    .execute(&mut *conn)
    .await?;
    for (phone, contact_id) in participants {
        sqlx::query("INSERT INTO conversation_participants (conversation_id, phone, contact_id) VALUES ($1, $2, $3)")
            .bind(&conversation.id)
            .bind(phone)
            .bind(contact_id)
            .execute(&mut *conn)
            .await?;
    }
    Ok(conversation)
}

/// A conversation by id alone, inside a transaction (workers and bridge callbacks).
pub async fn get_any(conn: &mut sqlx::AnyConnection, id: &str) -> sqlx::Result<Option<Conversation>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM conversations WHERE id = $1"))
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
    let Some(mut conversation) = row.as_ref().map(from_row).transpose()? else { return Ok(None) };
    let rows = sqlx::query("SELECT phone FROM conversation_participants WHERE conversation_id = $1 ORDER BY phone")
        .bind(id)
        .fetch_all(&mut *conn)
        .await?;
    conversation.participants = rows.iter().map(|r| r.try_get(0)).collect::<sqlx::Result<_>>()?;
    Ok(Some(conversation))
}

/// A group whose creation is unsettled while the line has reported on its opening message.
#[derive(Debug, Clone)]
pub struct ReportedGroup {
    pub group_id: String,
    pub message_id: String,
    /// The opening message's status: `submitted`, `sent`, `delivered`, `read` or `failed`.
    pub status: String,
    pub error: Option<String>,
}

/// Up to `limit` groups still `unknown`, or `creating` since before `stale_before` (a creation's
/// call ends within the bridge timeout), whose opening message the line has reported on. Read
/// through `conversations_unsettled_groups` and `messages_by_conversation`; a group whose opening
/// message is itself still unknown is not one of them, so such groups never crowd out the rest.
pub async fn reported_unsettled_groups(db: &Db, stale_before: i64, limit: i64) -> sqlx::Result<Vec<ReportedGroup>> {
    let rows = sqlx::query(
        "SELECT g.id, m.id, m.status, m.error FROM \
         (SELECT c.id, (SELECT o.id FROM messages o WHERE o.org_id = c.org_id AND o.conversation_id = c.id \
                        ORDER BY o.id LIMIT 1) AS opening \
          FROM conversations c WHERE c.group_state IN ('creating', 'unknown') \
          AND (c.group_state = 'unknown' OR c.created_at < $1)) g \
         JOIN messages m ON m.id = g.opening \
         WHERE m.status IN ('submitted', 'sent', 'delivered', 'read', 'failed') LIMIT $2",
    )
    .bind(stale_before)
    .bind(limit)
    .fetch_all(db.reader())
    .await?;
    rows.iter()
        .map(|row| {
            Ok(ReportedGroup {
                group_id: row.try_get(0)?,
                message_id: row.try_get(1)?,
                status: row.try_get(2)?,
                error: row.try_get(3)?,
            })
        })
        .collect()
}

/// Moves a group out of `creating` or `unknown`; returns whether it moved.
pub async fn settle_group(conn: &mut sqlx::AnyConnection, id: &str, state: &str) -> sqlx::Result<bool> {
    let moved = sqlx::query(
        "UPDATE conversations SET group_state = $1 WHERE id = $2 AND kind = 'group' AND group_state IN ('creating', 'unknown')",
    )
    .bind(state)
    .bind(id)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(moved == 1)
}
