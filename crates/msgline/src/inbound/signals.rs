//! Tapbacks and typing indicators that arrive on a line.

use serde_json::json;
use sqlx::AnyConnection;

use super::{Arrived, owner, sender, thread};
use crate::{
    clock,
    db::{self, lines::Line, messages::NewMessage},
    domain::{
        lifecycle::{Channel, Direction, MessageKind, MessageStatus, Tapback},
        reaction,
    },
};

/// Stores an inbound reaction: its message (`kind: reaction`, `messaging.message.received`), its
/// row pointing at the target (`None`: a message msgline does not know) and the line's name for it.
pub(super) async fn store_reaction(
    conn: &mut AnyConnection,
    line: &Line,
    new: NewMessage,
    line_name: Option<&str>,
    target: Option<String>,
    tapback: Tapback,
    removed: bool,
) -> anyhow::Result<()> {
    let mut row = db::reactions::NewReaction {
        message_id: String::new(),
        org_id: new.org_id.clone(),
        target_id: target,
        tapback,
        removed,
        created_at: 0,
    };
    let message = db::messages::insert(conn, NewMessage { payload: Some(row.payload()), ..new }).await?;
    row.message_id = message.id.clone();
    row.created_at = message.created_at;
    db::reactions::insert(conn, &row).await?;
    if let Some(name) = line_name {
        db::bridge_refs::record_in(&mut *conn, &line.id, name, &message.id).await?;
    }
    Ok(())
}

/// A tapback arrived on the line: a reaction to the message it names (msgline's id of a message
/// the line sent, or the line's id of one it received), stored as an inbound message.
pub(super) async fn tapback(
    conn: &mut AnyConnection,
    line: &Line,
    arrived: &Arrived<'_>,
    target: &str,
    reaction: &str,
    removed: bool,
) -> anyhow::Result<()> {
    let Ok(tapback) = reaction.parse::<Tapback>() else {
        tracing::warn!(line = %line.id, reaction, "a tapback msgline does not know; ignored");
        return Ok(());
    };
    let from = sender(line, arrived.from);
    let Some(thread) = thread(conn, line, &from, arrived.chat).await? else {
        let body = reaction::fallback_text(tapback, removed, "…");
        let payload =
            json!({"chat": arrived.chat, "channel": "imessage", "reaction": {"type": tapback, "target": target}});
        db::unrouted::insert(conn, &line.id, &from, &body, &payload).await?;
        tracing::warn!(line = %line.id, "a tapback on a shared line with no organisation to route it to; kept as unrouted");
        return Ok(());
    };
    db::contacts::record_reachability(conn, &thread.contact.id, true).await?;
    let local = if target.starts_with("msg_") {
        Some(target.to_string())
    } else {
        db::bridge_refs::local_for_in(&mut *conn, &line.id, target).await?
    };
    let reacted = match local {
        Some(id) => {
            db::messages::get_any(conn, &id).await?.filter(|m| m.org_id == thread.org_id && m.line_id == line.id)
        }
        None => None,
    };
    let body = reaction::fallback_text(tapback, removed, reacted.as_ref().map_or("…", |m| m.body.as_str()));
    let (from_number, to) =
        db::messages::numbers(Direction::Inbound, &line.e164, Some(&thread.contact.phone), thread.in_group);
    let new = NewMessage {
        from: from_number,
        to,
        extras: Default::default(),
        fallback: Default::default(),
        wait: Default::default(),
        send_at: None,
        org_id: thread.org_id.clone(),
        conversation_id: thread.conversation_id.clone(),
        contact_id: Some(thread.contact.id.clone()),
        line_id: line.id.clone(),
        direction: Direction::Inbound,
        channel: Channel::Imessage,
        kind: MessageKind::Reaction,
        body,
        payload: None,
        status: MessageStatus::Received,
        agent_id: None,
        attachment: None,
    };
    store_reaction(conn, line, new, arrived.line_name, reacted.map(|m| m.id), tapback, removed).await
}

/// How long a report of someone typing holds when no report that they stopped follows: a phone
/// reports again while the person keeps typing.
const TYPING_HOLDS_MS: i64 = 30_000;

/// Someone is typing (or stopped) in a conversation on the line: `messaging.typing`, not stored as
/// a message. Nothing is created for it: a number with no conversation on the line yet has
/// `conversation_id: null`. In a conversation, it is kept as the conversation's typing state (the
/// console shows it) until they stop, send, or [`TYPING_HOLDS_MS`] pass.
pub(super) async fn typing_shown(
    conn: &mut AnyConnection,
    line: &Line,
    from: &str,
    chat: Option<&str>,
    typing: bool,
) -> anyhow::Result<()> {
    let from = sender(line, from);
    let Some(org_id) = owner(conn, line, &from).await? else { return Ok(()) };
    let conversation_id = match chat {
        Some(chat) => db::conversations::get_group_on_line(conn, &org_id, &line.id, chat).await?.map(|g| g.id),
        None => None,
    };
    let (contact_id, direct) = db::conversations::find_direct_in(&mut *conn, true, &org_id, &line.id, &from).await?;
    let conversation_id = conversation_id.or(direct);
    let now = clock::now_ms();
    if let Some(conversation_id) = &conversation_id {
        let until = typing.then_some(now + TYPING_HOLDS_MS);
        db::typing::record(conn, &org_id, conversation_id, &from, now, until).await?;
    }
    let data = json!({
        "line_id": line.id,
        "from": from,
        "contact_id": contact_id,
        "conversation_id": conversation_id,
        "typing": typing,
        "at": clock::rfc3339(now),
    });
    db::events::insert(conn, &org_id, "messaging.typing", None, data.to_string()).await?;
    Ok(())
}
