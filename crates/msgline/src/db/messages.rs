//! Messages and their status lifecycle. Every status move writes its `messaging.message.*`
//! event in the same transaction.

use std::collections::HashMap;

use sqlx::{AnyConnection, Row};

use super::{Batch, Db, ListQuery, Page, Paged, events};
use crate::{
    clock,
    domain::{
        lifecycle::{Channel, ConversationKind, Direction, MessageKind, MessageStatus},
        payload::Payload,
    },
    ids,
};

/// A send's idempotency key, as its message holds it.
#[derive(Debug, Clone)]
pub struct SendKey {
    /// `<path> <key>`: a key is scoped by the route it was sent to.
    pub key: String,
    pub fingerprint: String,
    pub expires_at: i64,
}

#[derive(Debug, Clone)]
pub struct Message {
    pub id: String,
    pub org_id: String,
    pub conversation_id: String,
    pub contact_id: Option<String>,
    pub line_id: String,
    pub direction: Direction,
    pub channel: Channel,
    pub kind: MessageKind,
    pub body: String,
    pub payload: Option<Payload>,
    pub status: MessageStatus,
    pub error: Option<String>,
    pub delivery_unknown: bool,
    pub agent_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub submitted_at: Option<i64>,
    pub sent_at: Option<i64>,
    pub delivered_at: Option<i64>,
    pub read_at: Option<i64>,
    /// What the line attaches (a contact card's vCard); not part of the public JSON.
    pub attachment: Option<String>,
    /// When a scheduled send is (or was) to go out.
    pub send_at: Option<i64>,
    /// The iMessage this SMS stands in for.
    pub fallback_for: Option<String>,
    /// The SMS sent in this iMessage's place.
    pub fallback_message_id: Option<String>,
    /// Who sent it and to whom: the line's number and the contact's (inbound: the reverse), or
    /// the handle as the line reported it; `to` is `None` in a group.
    pub from: Option<String>,
    pub to: Option<String>,
    /// What it answers, how it shows, and what became of it after it was sent.
    pub extras: Extras,
    pub edited_at: Option<i64>,
    pub unsent_at: Option<i64>,
    /// The earlier texts, oldest first: `[{"body", "at"}]`, as stored (JSON).
    pub edits: Option<String>,
    /// The latest edit or unsend not applied (pending, unknown or failed), as stored (JSON).
    pub action: Option<String>,
}

/// What a message may carry besides its text: the message of its conversation it answers (an
/// inline reply), its iMessage effect and its subject.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extras {
    pub reply_to: Option<String>,
    pub effect: Option<String>,
    pub subject: Option<String>,
}

pub(super) const COLUMNS: &str = "id, org_id, conversation_id, contact_id, line_id, direction, channel, kind, body, payload, \
     status, error, delivery_unknown, agent_id, created_at, updated_at, submitted_at, sent_at, delivered_at, read_at, \
     attachment, send_at, fallback_for, fallback_message_id, from_number, to_number, reply_to, effect, subject, \
     edited_at, unsent_at, edits, action";

pub(super) fn from_row(row: &(impl super::Columns + ?Sized)) -> sqlx::Result<Message> {
    let payload = row.opt_text("payload")?;
    Ok(Message {
        id: row.text("id")?,
        org_id: row.text("org_id")?,
        conversation_id: row.text("conversation_id")?,
        contact_id: row.opt_text("contact_id")?,
        line_id: row.text("line_id")?,
        direction: super::parsed(row, "direction")?,
        channel: super::parsed(row, "channel")?,
        kind: super::parsed(row, "kind")?,
        body: row.text("body")?,
        payload: payload.as_deref().and_then(Payload::from_text),
        status: super::parsed(row, "status")?,
        error: row.opt_text("error")?,
        delivery_unknown: row.int("delivery_unknown")? != 0,
        agent_id: row.opt_text("agent_id")?,
        created_at: row.int("created_at")?,
        updated_at: row.int("updated_at")?,
        submitted_at: row.opt_int("submitted_at")?,
        sent_at: row.opt_int("sent_at")?,
        delivered_at: row.opt_int("delivered_at")?,
        read_at: row.opt_int("read_at")?,
        attachment: row.opt_text("attachment")?,
        send_at: row.opt_int("send_at")?,
        fallback_for: row.opt_text("fallback_for")?,
        fallback_message_id: row.opt_text("fallback_message_id")?,
        from: row.opt_text("from_number")?,
        to: row.opt_text("to_number")?,
        extras: Extras {
            reply_to: row.opt_text("reply_to")?,
            effect: row.opt_text("effect")?,
            subject: row.opt_text("subject")?,
        },
        edited_at: row.opt_int("edited_at")?,
        unsent_at: row.opt_int("unsent_at")?,
        edits: row.opt_text("edits")?,
        action: row.opt_text("action")?,
    })
}

/// A message to store.
#[derive(Debug, Clone)]
pub struct NewMessage {
    pub org_id: String,
    pub conversation_id: String,
    pub contact_id: Option<String>,
    pub line_id: String,
    pub direction: Direction,
    pub channel: Channel,
    pub kind: MessageKind,
    pub body: String,
    pub payload: Option<Payload>,
    pub status: MessageStatus,
    pub agent_id: Option<String>,
    pub attachment: Option<String>,
    /// A scheduled send's time (its status is then `scheduled`).
    pub send_at: Option<i64>,
    /// Whether an SMS is to follow if this iMessage fails, or which iMessage this SMS follows.
    pub fallback: Fallback,
    /// How a queued outbound message waits for its line.
    pub wait: Wait,
    /// As [`Message::from`] and [`Message::to`].
    pub from: Option<String>,
    pub to: Option<String>,
    pub extras: Extras,
}

/// A message's numbers (`from`, `to`) by its direction: the line's and the other side's. A group
/// message has no `to` (its conversation names the group).
pub fn numbers(
    direction: Direction,
    line_e164: &str,
    other: Option<&str>,
    in_group: bool,
) -> (Option<String>, Option<String>) {
    match direction {
        Direction::Outbound => (Some(line_e164.to_string()), other.filter(|_| !in_group).map(str::to_string)),
        Direction::Inbound => (other.map(str::to_string), (!in_group).then(|| line_e164.to_string())),
    }
}

/// How a queued outbound message waits for its line: for the line's pacer (`paced`: its line has
/// a budget or is not active) or for the dispatcher; until when (`expires_at`: then it fails
/// with `expired`, never sent); and through which pool it was sent, if one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wait {
    pub paced: bool,
    pub expires_at: Option<i64>,
    pub pool_id: Option<String>,
}

/// A message's part in SMS fallback.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fallback {
    /// An iMessage watched for failure: an SMS with its text follows if it fails.
    pub watch: bool,
    /// Also fall back if it is not delivered by then.
    pub at: Option<i64>,
    /// This SMS stands in for that iMessage.
    pub for_message: Option<String>,
}

/// Stores a message, touches its conversation and writes its first event
/// (`messaging.message.queued` or `.received`).
pub async fn insert(conn: &mut AnyConnection, new: NewMessage) -> sqlx::Result<Message> {
    let mut batch = Batch::new();
    let message = stage_insert(&mut batch, new);
    batch.execute(conn).await?;
    Ok(message)
}

/// The statements of [`insert`], staged into a batch.
pub fn stage_insert(batch: &mut Batch, new: NewMessage) -> Message {
    stage_insert_at(batch, new, clock::now_ms(), None, None)
}

/// [`stage_insert`] of a message made at `now` (the time its request staged the rest of its
/// unit with: a conversation created with it already has it as its last message), holding its
/// send's idempotency key if it has one. A key held by another message, even one whose time is
/// up, makes the commit fail with a unique violation (see
/// [`super::idempotency::stage_take_expired`]). A queued outbound message is its own outbox
/// job: pending and due now, or, with a `claim`, already claimed (its first attempt) by the
/// request that writes it, which then calls the line itself.
pub fn stage_insert_at(
    batch: &mut Batch,
    new: NewMessage,
    now: i64,
    key: Option<&SendKey>,
    claim: Option<super::outbox::Claim>,
) -> Message {
    // A queued or scheduled outbound message is its own outbox job; a scheduled one is due at
    // its time and never written claimed.
    let scheduled = new.status == MessageStatus::Scheduled;
    let queued = (new.status == MessageStatus::Queued || scheduled) && new.direction == Direction::Outbound;
    let claim = claim.filter(|_| queued && !scheduled);
    // A claim kept apart leaves the row without an outbox state until its job turns or ends.
    let apart = claim.filter(|c| c.apart);
    let claimed_until = claim.filter(|c| !c.apart).map(|c| c.until);
    let queued_on_row = queued && apart.is_none();
    let available_at = new.send_at.filter(|_| scheduled).unwrap_or(now);
    let new_fallback = new.fallback.clone();
    let outbox_state = match (claimed_until.is_some(), new.wait.paced && !scheduled) {
        (true, _) => super::outbox::CLAIMED,
        (false, true) => super::outbox::PACED,
        (false, false) => super::outbox::PENDING,
    };
    let wait = new.wait.clone();
    let message = Message {
        id: ids::new_id("msg"),
        org_id: new.org_id,
        conversation_id: new.conversation_id,
        contact_id: new.contact_id,
        line_id: new.line_id,
        direction: new.direction,
        channel: new.channel,
        kind: new.kind,
        body: new.body,
        payload: new.payload,
        status: new.status,
        error: None,
        delivery_unknown: false,
        agent_id: new.agent_id,
        created_at: now,
        updated_at: now,
        submitted_at: None,
        sent_at: None,
        delivered_at: None,
        read_at: None,
        attachment: new.attachment,
        send_at: new.send_at,
        fallback_for: new.fallback.for_message.clone(),
        fallback_message_id: None,
        from: new.from,
        to: new.to,
        extras: new.extras,
        edited_at: None,
        unsent_at: None,
        edits: None,
        action: None,
    };
    batch.push(
        format!(
            "INSERT INTO messages ({COLUMNS}, outbox_state, available_at, idem_key, idem_fingerprint, idem_extra, \
             idem_expires_at, outbox_attempts, claimed_until, fallback, fallback_at, expires_at, pool_id) VALUES ($1, $2, \
             $3, $4, $5, $6, $7, $8, $9, $10, $11, NULL, 0, $12, $13, $13, NULL, NULL, NULL, NULL, $14, $15, $16, NULL, \
             $17, $18, $19, $20, $21, NULL, NULL, NULL, NULL, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33)"
        ),
        vec![
            (&message.id).into(),
            (&message.org_id).into(),
            (&message.conversation_id).into(),
            message.contact_id.clone().into(),
            (&message.line_id).into(),
            message.direction.as_str().into(),
            message.channel.as_str().into(),
            message.kind.as_str().into(),
            (&message.body).into(),
            message.payload.as_ref().map(Payload::to_text).into(),
            message.status.as_str().into(),
            message.agent_id.clone().into(),
            now.into(),
            message.attachment.clone().into(),
            message.send_at.into(),
            message.fallback_for.clone().into(),
            message.from.clone().into(),
            message.to.clone().into(),
            message.extras.reply_to.clone().into(),
            message.extras.effect.clone().into(),
            message.extras.subject.clone().into(),
            queued_on_row.then_some(outbox_state).into(),
            queued_on_row.then_some(available_at).into(),
            key.map(|k| k.key.clone()).into(),
            key.map(|k| k.fingerprint.clone()).into(),
            // `idem_extra`: older builds kept a card's or a poll's summary here; the payload has it.
            Option::<String>::None.into(),
            key.map(|k| k.expires_at).into(),
            i64::from(claim.is_some()).into(),
            claimed_until.into(),
            new_fallback.watch.then_some("sms").into(),
            new_fallback.at.filter(|_| new_fallback.watch).into(),
            wait.expires_at.filter(|_| queued).into(),
            wait.pool_id.into(),
        ],
    );
    if let Some(claim) = apart {
        super::outbox::stage_claim(batch, &message.id, claim.until);
    }
    // Conditional: of two messages committed out of order, the later one still shows.
    batch.push(
        "UPDATE conversations SET last_message_at = $1 WHERE id = $2 \
         AND (last_message_at IS NULL OR last_message_at < $1)",
        vec![now.into(), (&message.conversation_id).into()],
    );
    events::stage_message_event(batch, &message.org_id, &message.id, message.status.as_str(), message.event_data());
    message
}

pub async fn get(db: &Db, org_id: &str, id: &str) -> sqlx::Result<Option<Message>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM messages WHERE org_id = $1 AND id = $2"))
        .bind(org_id)
        .bind(id)
        .fetch_optional(db.reader())
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// A message by id alone, inside a transaction (workers and bridge callbacks).
pub async fn get_any(conn: &mut AnyConnection, id: &str) -> sqlx::Result<Option<Message>> {
    let row = sqlx::query(&format!("SELECT {COLUMNS} FROM messages WHERE id = $1"))
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// The channel of the conversation's latest message.
pub async fn latest_channel(db: &Db, org_id: &str, conversation_id: &str) -> sqlx::Result<Option<Channel>> {
    let row =
        sqlx::query("SELECT channel FROM messages WHERE org_id = $1 AND conversation_id = $2 ORDER BY id DESC LIMIT 1")
            .bind(org_id)
            .bind(conversation_id)
            .fetch_optional(db.reader())
            .await?;
    match row {
        Some(row) => Ok(super::parsed(&row, "channel").ok()),
        None => Ok(None),
    }
}

/// Marks the conversation's inbound messages not yet read as read at `now`; returns how many.
pub async fn mark_read(db: &Db, org_id: &str, conversation_id: &str, now: i64) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "UPDATE messages SET read_at = $1 WHERE org_id = $2 AND conversation_id = $3 \
         AND direction = 'inbound' AND read_at IS NULL",
    )
    .bind(now)
    .bind(org_id)
    .bind(conversation_id)
    .execute(db.writer())
    .await?;
    Ok(done.rows_affected())
}

#[derive(Debug, Clone, Default)]
pub struct MessageFilter {
    pub conversation_id: Option<String>,
    pub contact_id: Option<String>,
    pub direction: Option<Direction>,
    pub status: Option<MessageStatus>,
    /// Only messages on this line (a line-bound key).
    pub line_id: Option<String>,
}

/// The organisation's messages, newest first.
pub async fn list(db: &Db, org_id: &str, filter: &MessageFilter, page: &Page) -> sqlx::Result<Paged<Listed>> {
    // Whether a reaction targets the message: one probe of the reactions' index per row, so that
    // a page nobody reacted to needs no second query for its reactions.
    let reacted = "CAST(CASE WHEN EXISTS (SELECT 1 FROM reactions r WHERE r.target_id = messages.id) \
                   THEN 1 ELSE 0 END AS BIGINT) AS reacted";
    ListQuery::new(format!("SELECT {COLUMNS}, {reacted} FROM messages WHERE org_id = $1"), org_id)
        .eq("conversation_id", filter.conversation_id.as_deref())
        .eq("contact_id", filter.contact_id.as_deref())
        .eq("direction", filter.direction.map(Direction::as_str))
        .eq("status", filter.status.map(MessageStatus::as_str))
        .eq("line_id", filter.line_id.as_deref())
        .fetch_rows(
            db,
            page,
            |row| Ok(Listed { message: from_row(row)?, reacted: row.int("reacted")? != 0 }),
            |listed| &listed.message.id,
        )
        .await
}

/// A message of a list, and whether any reaction (standing or not) targets it.
pub struct Listed {
    pub message: Message,
    pub reacted: bool,
}

/// [`last_sender_org`]'s query: the sender's contacts (one per organisation that knows the
/// number), each one's direct conversation on the line, and its latest outbound message. An
/// outbound message to a contact is always in that conversation (a group's carry no contact), so
/// this finds what reading the messages by line and contact found, through indexes only.
pub const LAST_SENDER_ORG: &str = "SELECT org_id FROM (SELECT cv.org_id AS org_id, \
     (SELECT m.id FROM messages m WHERE m.org_id = cv.org_id AND m.conversation_id = cv.id \
      AND m.direction = 'outbound' ORDER BY m.id DESC LIMIT 1) AS last_sent \
     FROM contacts c JOIN conversations cv ON cv.org_id = c.org_id AND cv.line_id = $1 \
      AND cv.contact_id = c.id AND cv.kind = 'direct' WHERE c.phone = $2) AS sent \
     WHERE last_sent IS NOT NULL ORDER BY last_sent DESC LIMIT 1";

/// The organisation that most recently messaged `phone` from this line.
pub async fn last_sender_org(conn: &mut AnyConnection, line_id: &str, phone: &str) -> sqlx::Result<Option<String>> {
    let row = sqlx::query(LAST_SENDER_ORG).bind(line_id).bind(phone).fetch_optional(&mut *conn).await?;
    row.map(|r| r.try_get(0)).transpose()
}

/// Outbound messages on `line_id` that the line accepted but that have not reached `read` or
/// `failed`, last moved at or after `since`, oldest move first: the ones whose receipts a line
/// that can lose reports is asked about. It reads the whole table (the messages have no index by
/// line, which every message would pay for), once each time such a line connects.
pub async fn awaiting_receipts(db: &Db, line_id: &str, since: i64, limit: i64) -> sqlx::Result<Vec<String>> {
    let rows = sqlx::query(
        "SELECT id FROM messages WHERE line_id = $1 AND direction = 'outbound' \
         AND status IN ('submitted', 'sent', 'delivered') AND updated_at >= $2 ORDER BY updated_at LIMIT $3",
    )
    .bind(line_id)
    .bind(since)
    .bind(limit)
    .fetch_all(db.reader())
    .await?;
    rows.iter().map(|row| row.try_get(0)).collect()
}

/// Several messages by id, inside a transaction.
pub async fn get_many(conn: &mut AnyConnection, ids: &[&str]) -> sqlx::Result<Vec<Message>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!("SELECT {COLUMNS} FROM messages WHERE id IN ({})", super::engine::batch::placeholders(ids.len()));
    let mut query = sqlx::query(&sql);
    for id in ids {
        query = query.bind(*id);
    }
    query.persistent(false).fetch_all(&mut *conn).await?.iter().map(from_row).collect()
}

/// A message to hand to its line, with its conversation's kind and, for a direct message, the
/// recipient's phone.
pub type ForDispatch = (Message, ConversationKind, Option<String>);

/// The messages of a claim, ready to hand to their lines, by id: one read for all of them.
pub async fn for_dispatch(db: &Db, ids: &[&str]) -> sqlx::Result<HashMap<String, ForDispatch>> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let columns: String = COLUMNS.split(", ").map(|c| format!("m.{}", c.trim())).collect::<Vec<_>>().join(", ");
    // On PostgreSQL the ids are one JSON array, read through `msgline_rows` (which tells the
    // planner to expect one row): one statement whatever the claim's size, whose plan looks up
    // every table by key even when it was made on empty tables. A list of `$n` was a statement
    // per size, and the plan PostgreSQL kept for one made while the tables were small scanned
    // every conversation and contact.
    let (wanted, args) = match db.backend() {
        super::Backend::Postgres => (
            super::engine::batch::texts_of(super::Backend::Postgres, 1),
            vec![serde_json::to_string(ids).expect("ids serialise").into()],
        ),
        super::Backend::Sqlite => {
            (super::engine::batch::placeholders(ids.len()), ids.iter().map(|id| (*id).into()).collect())
        }
    };
    let sql = format!(
        "SELECT {columns}, c.kind AS conversation_kind, ct.phone AS contact_phone FROM messages m JOIN conversations c ON c.id = m.conversation_id \
         LEFT JOIN contacts ct ON ct.id = m.contact_id WHERE m.id IN ({wanted})"
    );
    let rows = db
        .read_rows(sql, args, |row| {
            Ok((from_row(row)?, super::parsed(row, "conversation_kind")?, row.opt_text("contact_phone")?))
        })
        .await?;
    Ok(rows.into_iter().map(|found| (found.0.id.clone(), found)).collect())
}

/// The phones a message goes to: the direct conversation's participant, or the group's.
pub async fn recipients(conn: &mut AnyConnection, conversation_id: &str) -> sqlx::Result<Vec<String>> {
    let rows = sqlx::query("SELECT phone FROM conversation_participants WHERE conversation_id = $1 ORDER BY phone")
        .bind(conversation_id)
        .fetch_all(&mut *conn)
        .await?;
    rows.iter().map(|r| r.try_get(0)).collect()
}

/// The first message of a conversation (a group's opening message).
pub async fn first_in_conversation(
    conn: &mut AnyConnection,
    org_id: &str,
    conversation_id: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query("SELECT id FROM messages WHERE org_id = $1 AND conversation_id = $2 ORDER BY id LIMIT 1")
        .bind(org_id)
        .bind(conversation_id)
        .fetch_optional(conn)
        .await?
        .map(|r| r.try_get(0))
        .transpose()
}

/// When a message's wait for its line ends (`validity_seconds`), if it has one.
pub async fn expires_at(db: &super::Db, id: &str) -> sqlx::Result<Option<i64>> {
    use sqlx::Row;
    let row = sqlx::query("SELECT expires_at FROM messages WHERE id = $1").bind(id).fetch_optional(db.reader()).await?;
    Ok(row.map(|row| row.try_get::<Option<i64>, _>(0)).transpose()?.flatten())
}
