//! Bridge callbacks: status moves of outbound messages, inbound messages, poll votes and group
//! state. A callback that is not a status report has its id recorded in the same transaction as
//! its effect, so a repeat changes nothing and a failed one can be retried; a status report
//! needs no record, since its message only moves forward and a repeat finds it moved (see
//! [`db::reports`]).

use sqlx::AnyConnection;

mod changes;
mod signals;
use signals::{store_reaction, tapback, typing_shown};

use serde_json::json;

use crate::{
    bridge::{BridgeEvent, BridgeEventPayload},
    clock,
    db::{self, Db, contacts::Contact, lines::Line, messages::NewMessage},
    domain::{
        lifecycle::{Channel, ConversationKind, Direction, MessageKind, MessageStatus},
        message_action::ActionKind,
        opt_out::{self, Keyword},
        payload::{Payload, VoteSummary},
        poll, reaction,
    },
};

/// What became of one callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handled {
    Applied,
    Duplicate,
}

/// The settings inbound events are applied with.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// How often an agent runs per conversation, at most (`MSGLINE_AGENT_RUNS_PER_MINUTE`).
    pub agent_runs_per_minute: u32,
    /// How long a poll takes votes (`MSGLINE_POLL_OPEN_SECONDS`), unless a newer poll in its
    /// conversation closes it first.
    pub poll_open_ms: i64,
}

impl Rules {
    pub fn of(config: &crate::config::Config) -> Self {
        Rules {
            agent_runs_per_minute: config.agent_runs_per_minute,
            poll_open_ms: (config.poll_open_seconds as i64).saturating_mul(1000),
        }
    }
}

/// Applies the callbacks of one request in one transaction; if that fails, one at a time (so
/// that one bad event holds up only itself).
pub async fn handle_all(db: &Db, line: &Line, events: &[BridgeEvent], rules: Rules) -> anyhow::Result<Vec<Handled>> {
    let statuses_only = events.iter().all(|e| matches!(e.payload, BridgeEventPayload::MessageStatus { .. }));
    if statuses_only {
        match statuses_in_bulk(db, line, events).await {
            Ok(handled) => return Ok(handled),
            Err(error) => tracing::debug!(error = %error, "bulk status callbacks failed; applying them one by one"),
        }
    }
    if events.len() > 1 {
        let together = db
            .transaction(async |tx| {
                let mut handled = Vec::with_capacity(events.len());
                for event in events {
                    handled.push(apply(tx, line, event, rules).await?);
                }
                anyhow::Ok(handled)
            })
            .await;
        match together {
            Ok(handled) => {
                events.iter().zip(&handled).filter(|(_, h)| **h == Handled::Applied).for_each(|(e, _)| meter(e));
                return Ok(handled);
            }
            Err(error) => tracing::debug!(error = %error, "a batch of callbacks failed; applying them one by one"),
        }
    }
    let mut handled = Vec::with_capacity(events.len());
    for event in events {
        handled.push(handle(db, line, event, rules).await?);
    }
    Ok(handled)
}

/// Status reports in bulk, in one transaction (on SQLite, one unit of a shared commit). The
/// answer keeps the events' order; a status msgline does not know moves nothing.
async fn statuses_in_bulk(db: &Db, line: &Line, events: &[BridgeEvent]) -> anyhow::Result<Vec<Handled>> {
    let parsed: Vec<Option<db::reports::StatusReport>> = events.iter().map(|e| report_of(line, e)).collect();
    let reports = parsed.iter().flatten().cloned().collect();
    let moved = db::reports::apply_reports(db, &line.id, reports).await?;
    for (report, moved) in parsed.iter().flatten().zip(&moved) {
        crate::metrics::status_moves(report.status.as_str(), u64::from(*moved));
    }
    let mut moved = moved.into_iter();
    Ok(parsed
        .iter()
        .map(
            |report| {
                if report.is_some() && moved.next().unwrap_or(false) { Handled::Applied } else { Handled::Duplicate }
            },
        )
        .collect())
}

/// The status report an event carries, if it is one with a status msgline knows.
fn report_of(line: &Line, event: &BridgeEvent) -> Option<db::reports::StatusReport> {
    let BridgeEventPayload::MessageStatus { message_id, status, reason } = &event.payload else { return None };
    let Ok(status) = status.parse::<MessageStatus>() else {
        tracing::warn!(line = %line.id, message = %message_id, status = %status, "a status msgline does not know; ignored");
        return None;
    };
    Some(db::reports::StatusReport { message_id: message_id.clone(), status, reason: reason.clone() })
}

/// Applies one callback in its own transaction.
pub async fn handle(db: &Db, line: &Line, event: &BridgeEvent, rules: Rules) -> anyhow::Result<Handled> {
    let handled = db.transaction(async |tx| apply(tx, line, event, rules).await).await?;
    if handled == Handled::Applied {
        meter(event);
    }
    Ok(handled)
}

/// Counts a callback that was applied (and committed) in the metrics.
fn meter(event: &BridgeEvent) {
    match &event.payload {
        BridgeEventPayload::MessageStatus { status, .. } => {
            if let Ok(status) = status.parse::<MessageStatus>() {
                crate::metrics::status_moves(status.as_str(), 1);
            }
        }
        BridgeEventPayload::Inbound { channel, .. } => {
            // A channel a bridge names that msgline does not know is not a label of its own.
            let channel = channel.parse::<crate::domain::lifecycle::Channel>().map_or("other", |c| c.as_str());
            crate::metrics::message_received(channel);
        }
        BridgeEventPayload::Reaction { .. } => crate::metrics::message_received("imessage"),
        BridgeEventPayload::PollVote { .. }
        | BridgeEventPayload::GroupState { .. }
        | BridgeEventPayload::GroupUpdated { .. }
        | BridgeEventPayload::MessageEdited { .. }
        | BridgeEventPayload::MessageUnsent { .. }
        | BridgeEventPayload::Typing { .. } => {}
    }
}

async fn apply(tx: &mut AnyConnection, line: &Line, event: &BridgeEvent, rules: Rules) -> anyhow::Result<Handled> {
    match &event.payload {
        BridgeEventPayload::MessageStatus { .. } => {
            let Some(report) = report_of(line, event) else { return Ok(Handled::Duplicate) };
            let moved = db::reports::apply_in(tx, &line.id, &[report]).await?;
            return Ok(if moved.first() == Some(&true) { Handled::Applied } else { Handled::Duplicate });
        }
        _ if !db::reports::record_callback(tx, &line.id, &event.id).await? => return Ok(Handled::Duplicate),
        BridgeEventPayload::Inbound {
            from,
            body,
            chat,
            channel,
            message_id,
            attachments,
            reply_to,
            effect,
            subject,
        } => {
            let arrived = Arrived {
                from,
                chat: chat.as_deref(),
                line_name: message_id.as_deref(),
                reply_to: reply_to.as_deref(),
                look: (effect.as_deref(), subject.as_deref()),
            };
            let files: Vec<_> = attachments.iter().filter_map(|f| f.stored.clone()).collect();
            inbound(tx, line, &arrived, body, channel, &files, rules).await?
        }
        BridgeEventPayload::Reaction { from, target, reaction, removed, chat, message_id } => {
            let arrived = Arrived {
                from,
                chat: chat.as_deref(),
                line_name: message_id.as_deref(),
                reply_to: None,
                look: (None, None),
            };
            tapback(tx, line, &arrived, target, reaction, *removed).await?
        }
        BridgeEventPayload::Typing { from, chat, typing } => {
            typing_shown(tx, line, from, chat.as_deref(), *typing).await?
        }
        BridgeEventPayload::PollVote { from, poll_message_id, option_index } => {
            native_vote(tx, line, from, poll_message_id, *option_index, rules).await?
        }
        BridgeEventPayload::GroupState { group_id, state, reason } => {
            group_settled(tx, line, group_id, state, reason.as_deref()).await?
        }
        BridgeEventPayload::GroupUpdated { group_id, name, participants } => {
            group_updated(tx, line, group_id, name.as_deref(), participants.as_deref()).await?
        }
        BridgeEventPayload::MessageEdited { message_id, body } => {
            changes::changed(tx, line, message_id, ActionKind::Edit, Some(body)).await?
        }
        BridgeEventPayload::MessageUnsent { message_id } => {
            changes::changed(tx, line, message_id, ActionKind::Unsend, None).await?
        }
    }
    Ok(Handled::Applied)
}

/// Who a callback came from and where: the sender, the group (`chat`) if any, and the line's own
/// id of what arrived.
struct Arrived<'a> {
    from: &'a str,
    chat: Option<&'a str>,
    line_name: Option<&'a str>,
    /// The message it answers, as the line names it.
    reply_to: Option<&'a str>,
    /// The effect and subject it was sent with.
    look: (Option<&'a str>, Option<&'a str>),
}

/// The conversation an arrival belongs to, found or created.
struct Thread {
    org_id: String,
    contact: Contact,
    conversation_id: String,
    in_group: bool,
}

/// The sender's handle as msgline stores it: a number in E.164 (read in the line's country when
/// the device gives it in national form), anything else as it came (see
/// [`crate::domain::phone::inbound_handle`]).
fn sender(line: &Line, from: &str) -> String {
    crate::domain::phone::inbound_handle(from, &line.e164)
}

/// The organisation an arrival on the line belongs to: a dedicated line's, else the one that last
/// wrote to this handle from this line.
async fn owner(conn: &mut AnyConnection, line: &Line, from: &str) -> anyhow::Result<Option<String>> {
    Ok(match &line.org_id {
        Some(org) => Some(org.clone()),
        None => db::messages::last_sender_org(conn, &line.id, from).await?,
    })
}

/// The thread of an arrival, with its contact and conversation created if missing; `None` on a
/// shared line with no organisation to route it to.
async fn thread(
    conn: &mut AnyConnection,
    line: &Line,
    from: &str,
    chat: Option<&str>,
) -> anyhow::Result<Option<Thread>> {
    let Some(org_id) = owner(conn, line, from).await? else { return Ok(None) };
    let contact = db::contacts::find_or_create(&mut *conn, &org_id, from).await?;
    let group = match chat {
        Some(chat) => db::conversations::get_group_on_line(conn, &org_id, &line.id, chat).await?,
        None => None,
    };
    let in_group = group.is_some();
    let conversation_id = match group {
        Some(group) => group.id,
        None => db::conversations::find_or_create_direct(conn, &org_id, &line.id, &contact.id, from).await?.id,
    };
    Ok(Some(Thread { org_id, contact, conversation_id, in_group }))
}

async fn inbound(
    conn: &mut AnyConnection,
    line: &Line,
    arrived: &Arrived<'_>,
    body: &str,
    channel: &str,
    files: &[db::attachments::Attachment],
    rules: Rules,
) -> anyhow::Result<()> {
    let from = sender(line, arrived.from);
    let chat = arrived.chat;
    let Some(Thread { org_id, contact, conversation_id, in_group }) = thread(conn, line, &from, chat).await? else {
        let payload = serde_json::json!({"chat": chat, "channel": channel});
        db::unrouted::insert(conn, &line.id, &from, body, &payload).await?;
        tracing::warn!(line = %line.id, "inbound message on a shared line with no organisation to route it to; kept as unrouted");
        return Ok(());
    };
    if channel == "imessage" {
        db::contacts::record_reachability(conn, &contact.id, true).await?;
    }
    let channel = if channel == "sms" { Channel::Sms } else { Channel::Imessage };
    // The message it answers, when the line says and it is of this conversation.
    let reply_to = match arrived.reply_to {
        Some(name) => {
            changes::named(conn, line, name).await?.filter(|m| m.conversation_id == conversation_id).map(|m| m.id)
        }
        None => None,
    };
    let extras = changes::extras(reply_to, arrived.look);
    let text = |direction, status, body: String| {
        let (from, to) = db::messages::numbers(direction, &line.e164, Some(&contact.phone), in_group);
        NewMessage {
            from,
            to,
            extras: Default::default(),
            fallback: Default::default(),
            wait: Default::default(),
            send_at: None,
            org_id: org_id.clone(),
            conversation_id: conversation_id.clone(),
            contact_id: Some(contact.id.clone()),
            line_id: line.id.clone(),
            direction,
            channel,
            kind: MessageKind::Text,
            body,
            payload: None,
            status,
            agent_id: None,
            attachment: None,
        }
    };
    // Files: a message of kind media with the text as its caption, whatever the text says.
    if !files.is_empty() {
        let listed = files.iter().map(|f| f.summary()).collect();
        let new = NewMessage {
            fallback: Default::default(),
            wait: Default::default(),
            send_at: None,
            kind: MessageKind::Media,
            payload: Some(Payload::Media(listed)),
            extras: extras.clone(),
            ..text(Direction::Inbound, MessageStatus::Received, body.to_string())
        };
        let message = db::messages::insert(conn, new).await?;
        let mut batch = db::Batch::new();
        for file in files {
            let file =
                db::attachments::Attachment { message_id: message.id.clone(), org_id: org_id.clone(), ..file.clone() };
            db::attachments::stage_insert(&mut batch, &file);
        }
        batch.execute(conn).await?;
        if let Some(name) = arrived.line_name {
            db::bridge_refs::record_in(&mut *conn, &line.id, name, &message.id).await?;
        }
        trigger_agent(conn, &org_id, line, &from, &message, chat.is_some(), rules.agent_runs_per_minute).await?;
        return Ok(());
    }
    // STOP, START and HELP in a conversation with one person: stored like any message, answered
    // by msgline itself (never by an agent). In a group they are ordinary messages.
    // A sender that cannot be written back to (an alphanumeric sender ID) gets no reply.
    if !in_group && let Some(reply) = answer_keyword(conn, line, &contact, body).await? {
        db::messages::insert(conn, text(Direction::Inbound, MessageStatus::Received, body.to_string())).await?;
        if crate::domain::phone::addressable(&contact.phone) {
            db::messages::insert(conn, text(Direction::Outbound, MessageStatus::Queued, reply)).await?;
        }
        return Ok(());
    }
    // A reply naming an option of the conversation's latest poll, while it is open, is a vote.
    if let Some(poll) = db::polls::latest_in_conversation(conn, &conversation_id).await?
        && poll.open_at(clock::now_ms(), rules.poll_open_ms)
        && let Some(index) = poll::match_reply(body, &poll.options)
    {
        let to = (!in_group).then(|| line.e164.clone());
        record_vote(conn, &poll, &contact, index, channel, Some(body), to).await?;
        return Ok(());
    }
    // A tapback's words ("Loved “…”"), as a phone without tapbacks receives them: a reaction to
    // the message of the conversation they quote.
    if let Some(words) = reaction::from_text(body) {
        let target = db::reactions::quoted(conn, &org_id, &conversation_id, &words).await?;
        let reacted = NewMessage {
            fallback: Default::default(),
            wait: Default::default(),
            send_at: None,
            kind: MessageKind::Reaction,
            ..text(Direction::Inbound, MessageStatus::Received, body.to_string())
        };
        store_reaction(conn, line, reacted, arrived.line_name, target, words.tapback, words.removed).await?;
        return Ok(());
    }
    let new = NewMessage { extras, ..text(Direction::Inbound, MessageStatus::Received, body.to_string()) };
    let message = db::messages::insert(conn, new).await?;
    if let Some(name) = arrived.line_name {
        db::bridge_refs::record_in(&mut *conn, &line.id, name, &message.id).await?;
    }
    trigger_agent(conn, &org_id, line, &from, &message, chat.is_some(), rules.agent_runs_per_minute).await?;
    Ok(())
}

/// If the body is an opt-out, opt-in or help keyword that applies, applies it and returns the
/// reply to send. An opt-in word (`yes` among them) from a number that is not opted out is an
/// ordinary message.
async fn answer_keyword(
    conn: &mut AnyConnection,
    line: &Line,
    contact: &Contact,
    body: &str,
) -> anyhow::Result<Option<String>> {
    let Some(keyword) = opt_out::keyword(body) else { return Ok(None) };
    let replies = db::orgs::replies_in(&mut *conn, &contact.org_id).await?;
    Ok(match keyword {
        Keyword::OptOut(word) => {
            db::opt_outs::opt_out(conn, &line.id, contact, word).await?;
            Some(replies.opt_out_text())
        }
        Keyword::OptIn(_) => {
            db::opt_outs::opt_in(conn, &contact.org_id, &line.id, &contact.phone).await?.map(|_| replies.opt_in_text())
        }
        Keyword::Help => Some(replies.help_text()),
    })
}

/// Queues a run of the line's enabled agent for an inbound text, in the same transaction. In a
/// group the agent answers only when addressed by name; it never answers another line of this
/// service (two agents would talk forever), and it runs at most so often per conversation.
async fn trigger_agent(
    conn: &mut AnyConnection,
    org_id: &str,
    line: &Line,
    from: &str,
    message: &db::messages::Message,
    in_group: bool,
    agent_runs_per_minute: u32,
) -> anyhow::Result<()> {
    let Some(agent) = db::agents::enabled_on_line(conn, org_id, &line.id, None).await? else { return Ok(()) };
    if in_group && !message.body.to_lowercase().contains(&agent.name.to_lowercase()) {
        return Ok(());
    }
    // Its answer could not be delivered to a sender that cannot be written back to.
    if !in_group && !crate::domain::phone::addressable(from) {
        return Ok(());
    }
    if db::agents::is_line_number(conn, from).await? {
        tracing::info!(agent = %agent.id, "an agent does not answer another line of this service");
        return Ok(());
    }
    let recent = db::agents::recent_runs(conn, &agent.id, &message.conversation_id, clock::now_ms() - 60_000).await?;
    let skipped = (recent >= agent_runs_per_minute as i64)
        .then_some("rate_limited: too many runs in this conversation in the last minute");
    db::agents::enqueue(conn, &agent, &message.id, &message.conversation_id, skipped).await?;
    Ok(())
}

/// A tap on a native poll.
async fn native_vote(
    conn: &mut AnyConnection,
    line: &Line,
    from: &str,
    poll_message_id: &str,
    option_index: i64,
    rules: Rules,
) -> anyhow::Result<()> {
    let Some(poll) = db::polls::by_message(conn, poll_message_id).await?.filter(|p| p.line_id == line.id) else {
        tracing::warn!(line = %line.id, message = poll_message_id, "a vote for a poll this line did not send; ignored");
        return Ok(());
    };
    if db::polls::closed_at(&mut *conn, &poll, rules.poll_open_ms, clock::now_ms()).await?.is_some() {
        tracing::info!(line = %line.id, poll = %poll.id, "a vote for a closed poll; ignored");
        return Ok(());
    }
    let Some(index) = usize::try_from(option_index).ok().filter(|i| *i < poll.options.len()) else {
        tracing::warn!(line = %line.id, poll = %poll.id, option_index, "a vote for an option the poll does not have; ignored");
        return Ok(());
    };
    let from = sender(line, from);
    let contact = db::contacts::find_or_create(&mut *conn, &poll.org_id, &from).await?;
    let in_group = db::conversations::get_any(conn, &poll.conversation_id)
        .await?
        .is_some_and(|c| c.kind == crate::domain::lifecycle::ConversationKind::Group);
    let to = (!in_group).then(|| line.e164.clone());
    record_vote(conn, &poll, &contact, index, Channel::Imessage, None, to).await
}

/// Stores a vote: an inbound `poll_vote` message naming the option and the question, the vote
/// itself, and the `messaging.poll.voted` event.
async fn record_vote(
    conn: &mut AnyConnection,
    poll: &db::polls::Poll,
    contact: &Contact,
    index: usize,
    channel: Channel,
    reply: Option<&str>,
    to: Option<String>,
) -> anyhow::Result<()> {
    let option = &poll.options[index];
    let message = db::messages::insert(
        conn,
        NewMessage {
            from: Some(contact.phone.clone()),
            to,
            extras: Default::default(),
            fallback: Default::default(),
            wait: Default::default(),
            send_at: None,
            org_id: poll.org_id.clone(),
            conversation_id: poll.conversation_id.clone(),
            contact_id: Some(contact.id.clone()),
            line_id: poll.line_id.clone(),
            direction: Direction::Inbound,
            channel,
            kind: MessageKind::PollVote,
            body: poll::vote_text(option, &poll.question),
            payload: Some(Payload::PollVote(VoteSummary {
                poll_id: poll.id.clone(),
                option: option.clone(),
                option_index: index,
                reply: reply.map(str::to_string),
            })),
            status: MessageStatus::Received,
            agent_id: None,
            attachment: None,
        },
    )
    .await?;
    db::polls::record_vote(conn, poll, &contact.id, index, &message.id).await?;
    let tally = db::polls::tally(&mut *conn, poll).await?;
    let data = json!({
        // A vote is taken only while its poll is open.
        "poll": poll.to_json(&tally, None),
        "option": option,
        "option_index": index,
        "contact": contact.to_json(),
        "message": message.to_json(),
    });
    db::events::insert(conn, &poll.org_id, "messaging.poll.voted", Some(&message.id), data.to_string()).await?;
    Ok(())
}

/// A line telling how a group creation ended.
async fn group_settled(
    conn: &mut AnyConnection,
    line: &Line,
    group_id: &str,
    state: &str,
    reason: Option<&str>,
) -> anyhow::Result<()> {
    let Some(group) = db::conversations::get_any(conn, group_id)
        .await?
        .filter(|g| g.line_id == line.id && g.kind == ConversationKind::Group)
    else {
        tracing::warn!(line = %line.id, group = group_id, "state for a group this line did not create; ignored");
        return Ok(());
    };
    if !matches!(state, "created" | "failed") {
        return Ok(());
    }
    let opening = db::messages::first_in_conversation(conn, &group.org_id, &group.id).await?;
    if let Some(message_id) = opening {
        crate::send::groups::settle(conn, &group.id, &message_id, state, reason).await?;
        if state == "failed" {
            db::outbox::complete(conn, &message_id).await?;
        }
    }
    Ok(())
}

/// A group changed on the device: it takes the name and participants the line reports (the
/// line's own number is never a participant), with `messaging.group.updated`.
async fn group_updated(
    conn: &mut AnyConnection,
    line: &Line,
    group_id: &str,
    name: Option<&str>,
    participants: Option<&[String]>,
) -> anyhow::Result<()> {
    let Some(group) = db::conversations::get_any(conn, group_id)
        .await?
        .filter(|g| g.line_id == line.id && g.kind == ConversationKind::Group)
    else {
        tracing::warn!(line = %line.id, group = group_id, "an update of a group this line did not create; ignored");
        return Ok(());
    };
    let participants: Option<Vec<String>> = participants.map(|listed| {
        let mut phones: Vec<String> = listed.iter().map(|p| sender(line, p)).filter(|p| *p != line.e164).collect();
        phones.sort();
        phones.dedup();
        phones
    });
    db::group_changes::apply_reported(conn, &group, name, participants.as_deref()).await?;
    Ok(())
}
