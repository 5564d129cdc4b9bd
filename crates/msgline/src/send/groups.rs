//! iMessage group creation: the group and its opening message come into existence together, and
//! the request waits for the line's answer (up to the bridge timeout) to say which of the spec's
//! outcomes happened: created, unknown, or the line's refusal.

use std::collections::BTreeSet;

use serde_json::json;
use sqlx::AnyConnection;

use super::{Idempotency, resolve_line, unanswered};
use crate::{
    bridge::client::SendOutcome,
    caller::Principal,
    clock,
    db::{
        self,
        conversations::Conversation,
        group_changes::{ChangeState, GroupChange},
        idempotency::Prior,
        lines::LineKind,
        messages::{Message, NewMessage},
    },
    domain::{
        id::LineId,
        idempotency::fingerprint,
        lifecycle::{Channel, ConversationKind, Direction, MessageKind, MessageStatus},
        phone::E164,
    },
    error::{ApiError, ApiResult},
    fields::phone_field,
    send::Sender,
};

pub const MAX_PARTICIPANTS: usize = 31;

/// A parsed group request: participants already E.164, distinct.
#[derive(Debug, Clone)]
pub struct GroupInput {
    pub participants: Vec<E164>,
    pub body: String,
    pub name: Option<String>,
    pub line_id: Option<LineId>,
    pub line_e164: Option<String>,
}

/// A group as its request left it: `group_state` `created` (the line made it) or `unknown` (its
/// answer was lost; the reconciler asks the line). A refusal is an error instead.
#[derive(Debug)]
pub struct GroupSent {
    pub group: Conversation,
    pub message: Message,
    /// The request repeated an earlier one with the same key: nothing was done again.
    pub replayed: bool,
}

/// A group change as its request left it: applied, or pending or unknown (the reconciler asks
/// the line). A refusal is an error instead.
#[derive(Debug)]
pub struct ChangeSent {
    pub group: Conversation,
    pub change: GroupChange,
    pub replayed: bool,
}

/// The line's refusal, by its reason: unreachable or rejected.
pub(super) fn line_refusal(reason: String) -> ApiError {
    if reason.starts_with("the line could not be reached") {
        ApiError::line_unavailable(reason)
    } else {
        ApiError::line_rejected(reason)
    }
}

/// The error a failed group answers with, first time and on every replay.
fn failure(group: &Conversation, message: &Message) -> ApiError {
    let reason = message.error.clone().unwrap_or_else(|| "the line refused the group".into());
    line_refusal(reason).with("group", group.group_json()).with("message_id", message.id.clone())
}

async fn load(state: &Sender, group_id: &str, message_id: &str) -> ApiResult<(Conversation, Message)> {
    state
        .db
        .write(async |conn| {
            let group =
                db::conversations::get_any(&mut *conn, group_id).await?.ok_or_else(|| ApiError::not_found("group"))?;
            let message =
                db::messages::get_any(conn, message_id).await?.ok_or_else(|| ApiError::not_found("message"))?;
            Ok((group, message))
        })
        .await
}

/// A repeated request with the same key: answered from the group as it is now.
async fn replay(state: &Sender, prior: Prior) -> ApiResult<GroupSent> {
    let noted = match &prior {
        Prior::Done { body } | Prior::InProgress { body: Some(body) } => body.clone(),
        _ => return Err(unanswered(&prior)),
    };
    let message_id = noted["message"]["id"].as_str().or_else(|| noted["message_id"].as_str());
    let (Some(group_id), Some(message_id)) = (noted["group"]["id"].as_str(), message_id) else {
        return Err(unanswered(&prior));
    };
    let (group, message) = load(state, group_id, message_id).await?;
    match group.group_state.as_deref() {
        Some("created" | "unknown") => Ok(GroupSent { group, message, replayed: true }),
        Some("failed") => Err(failure(&group, &message).replayed()),
        _ => Err(unanswered(&Prior::InProgress { body: None })),
    }
}

/// Which participants the line says are not reachable over iMessage (remembered answers first).
async fn unreachable(
    state: &Sender,
    org_id: &str,
    line: &db::lines::Line,
    participants: &[E164],
) -> ApiResult<Vec<String>> {
    let mut unknown = Vec::new();
    let mut refused = Vec::new();
    for phone in participants {
        match db::contacts::reachability_by_phone(&state.db, org_id, phone.as_str()).await? {
            Some(true) => {}
            Some(false) => refused.push(phone.to_string()),
            None => unknown.push(phone.to_string()),
        }
    }
    if !unknown.is_empty() {
        match state.lines.client().reachability(line, &unknown).await {
            Ok(answer) => {
                refused.extend(unknown.into_iter().filter(|h| answer.imessage.get(h) == Some(&false)));
            }
            // The line will refuse the group itself if it must.
            Err(error) => tracing::debug!(line = %line.id, error, "reachability could not be asked"),
        }
    }
    refused.sort();
    Ok(refused)
}

/// Creates a group with its opening message.
pub async fn create(
    state: &Sender,
    principal: &Principal,
    input: GroupInput,
    key: Option<Idempotency>,
) -> ApiResult<GroupSent> {
    let line = resolve_line(state, principal, input.line_id.as_ref(), input.line_e164.as_deref()).await?;
    let mut participants: Vec<E164> = input.participants.into_iter().filter(|p| p.as_str() != line.e164).collect();
    participants.sort();
    if participants.len() < 2 {
        return Err(ApiError::invalid("participants", "a group needs at least 2 participants besides the line itself"));
    }
    let idempotency = key.map(|mut idem| {
        idem.fingerprint = fingerprint(
            "/groups",
            &json!({"participants": participants, "body": input.body, "name": input.name, "line_id": line.id}),
        );
        idem
    });
    let now = clock::now_ms();
    if let Some(idem) = &idempotency
        && let Some(prior) =
            db::idempotency::peek(&state.db, &idem.scope(&principal.org_id), &idem.fingerprint, now).await?
    {
        return replay(state, prior).await;
    }

    // The rules, in the spec's order, before anything is written.
    if line.kind == LineKind::Shared {
        return Err(ApiError::conflict(
            "group_requires_dedicated_line",
            "groups are created from a dedicated line only",
        ));
    }
    if !state.lines.capabilities(&line).await.is_some_and(|c| c.groups && c.imessage) {
        return Err(ApiError::conflict(
            "group_chats_unsupported",
            "the line's device has no native group support (or has not reported it)",
        ));
    }
    let phones: Vec<&str> = participants.iter().map(E164::as_str).collect();
    super::resolve::refuse_opted_out(state, &principal.org_id, &line.id, &phones).await?;
    let refused = unreachable(state, &principal.org_id, &line, &participants).await?;
    if !refused.is_empty() {
        return Err(ApiError::refused(
            "participants_not_reachable",
            "these participants are not reachable over iMessage; groups never fall back to SMS",
        )
        .with("participants", refused));
    }

    // Written and committed before the line is called, with the job already claimed.
    let written = state
        .db
        .transaction(async |tx| -> ApiResult<Result<(Conversation, Message), Prior>> {
            if let Some(idem) = &idempotency {
                let ttl_ms = state.config.idempotency_ttl_hours as i64 * 3_600_000;
                let scope = idem.scope(&principal.org_id);
                if let Some(prior) = db::idempotency::claim(tx, &scope, &idem.fingerprint, now, ttl_ms).await? {
                    // Nothing is written when the key is taken.
                    return Ok(Err(prior));
                }
            }
            let mut members = Vec::with_capacity(participants.len());
            for phone in &participants {
                let contact = db::contacts::find_or_create(&mut *tx, &principal.org_id, phone.as_str()).await?;
                members.push((phone.to_string(), contact.id));
            }
            let group =
                db::conversations::create_group(tx, &principal.org_id, &line.id, input.name.as_deref(), &members)
                    .await?;
            // Written already claimed: this request calls the line itself (below).
            let mut batch = db::Batch::new();
            let claimed_until = now + crate::dispatch::lease_ms(state.config.bridge_timeout_ms);
            let message = db::messages::stage_insert_at(
                &mut batch,
                NewMessage {
                    from: Some(line.e164.clone()),
                    to: None,
                    extras: Default::default(),
                    fallback: Default::default(),
                    wait: Default::default(),
                    send_at: None,
                    org_id: principal.org_id.clone(),
                    conversation_id: group.id.clone(),
                    contact_id: None,
                    line_id: line.id.clone(),
                    direction: Direction::Outbound,
                    channel: Channel::Imessage,
                    kind: MessageKind::Text,
                    body: input.body.clone(),
                    payload: None,
                    status: MessageStatus::Queued,
                    agent_id: None,
                    attachment: None,
                },
                now,
                None,
                // On the row on both engines: a group's creation is rare, and its message's
                // claim is watched with the group's.
                Some(db::outbox::Claim { until: claimed_until, apart: false }),
            );
            batch.execute(tx).await?;
            if let Some(idem) = &idempotency {
                let noted = json!({"group": {"id": group.id}, "message": {"id": message.id}});
                db::idempotency::note_progress(tx, &idem.scope(&principal.org_id), &noted).await?;
            }
            Ok(Ok((group, message)))
        })
        .await?;
    let (group, message) = match written {
        Ok(written) => written,
        Err(prior) => return replay(state, prior).await,
    };

    let call = crate::bridge::GroupRequest {
        id: group.id.clone(),
        message_id: message.id.clone(),
        participants: participants.iter().map(|p| p.as_str().to_string()).collect(),
        name: input.name.clone(),
        body: input.body.clone(),
    };
    let result = state.lines.client().create_group(&line, &call).await;
    crate::metrics::bridge_call(&line.id, result.outcome.attempt_outcome(), result.latency_ms);

    let (group, message) = state
        .db
        .transaction(async |tx| -> ApiResult<(Conversation, Message)> {
            let error_text = match &result.outcome {
                SendOutcome::Accepted => None,
                SendOutcome::Rejected(reason) | SendOutcome::Blocked(reason) => Some(reason.clone()),
                SendOutcome::Unreachable(_) | SendOutcome::RetryLater => {
                    Some("the line could not be reached".to_string())
                }
                SendOutcome::Timeout => Some("the line did not answer within the bridge timeout".into()),
                SendOutcome::Unknown(error) => Some(error.clone()),
                SendOutcome::Held { .. } => Some("the line holds it for its device".into()),
            };
            db::attempts::insert(
                tx,
                db::attempts::NewAttempt {
                    org_id: &principal.org_id,
                    message_id: &message.id,
                    line_id: &line.id,
                    attempt: 1,
                    outcome: result.outcome.attempt_outcome(),
                    http_status: result.http_status,
                    latency_ms: result.latency_ms,
                    error: error_text.as_deref(),
                },
            )
            .await?;
            let state_now = match &result.outcome {
                SendOutcome::Accepted => "created",
                SendOutcome::Timeout | SendOutcome::Unknown(_) | SendOutcome::Held { .. } => "unknown",
                _ => "failed",
            };
            let (group, message) = settle(tx, &group.id, &message.id, state_now, error_text.as_deref()).await?;
            match state_now {
                "created" => db::outbox::complete(tx, &message.id).await?,
                "unknown" => db::outbox::mark_unknown(tx, &message.id, clock::now_ms() + 500).await?,
                _ => db::outbox::complete(tx, &message.id).await?,
            }
            if let Some(idem) = &idempotency {
                let made = json!({"group": {"id": group.id}, "message": {"id": message.id}});
                db::idempotency::complete(tx, &idem.scope(&principal.org_id), &made).await?;
            }
            Ok((group, message))
        })
        .await?;
    crate::metrics::status_moves(message.status.as_str(), 1);
    if group.group_state.as_deref() == Some("failed") {
        return Err(failure(&group, &message));
    }
    crate::metrics::message_accepted(message.channel.as_str(), message.kind.as_str());
    Ok(GroupSent { group, message, replayed: false })
}

/// Moves a group to `created`, `unknown` or `failed` with its opening message (`submitted`,
/// `unknown` or `failed`), writing the events. Returns both as they now are.
pub async fn settle(
    conn: &mut AnyConnection,
    group_id: &str,
    message_id: &str,
    group_state: &str,
    reason: Option<&str>,
) -> sqlx::Result<(Conversation, Message)> {
    let moved = db::conversations::settle_group(conn, group_id, group_state).await?;
    let message_status = match group_state {
        "created" => MessageStatus::Submitted,
        "unknown" => MessageStatus::Unknown,
        _ => MessageStatus::Failed,
    };
    db::moves::advance(conn, message_id, message_status, reason).await?;
    let group = db::conversations::get_any(conn, group_id).await?.expect("the group exists");
    let message = db::messages::get_any(conn, message_id).await?.expect("the message exists");
    if moved && matches!(group_state, "created" | "failed") {
        let data = json!({"group": group.group_json(), "message": message.to_json()});
        db::events::insert(
            conn,
            &group.org_id,
            &format!("messaging.group.{group_state}"),
            Some(&message.id),
            data.to_string(),
        )
        .await?;
    }
    Ok((group, message))
}

/// A change asked of a group after its creation: a new name (`""` removes it), or participants
/// to add and to remove.
#[derive(Debug, Clone, Default)]
pub struct ChangeInput {
    pub name: Option<String>,
    pub add: Vec<E164>,
    pub remove: Vec<E164>,
    /// The line leaves the group.
    pub leave: bool,
}

/// The route all group changes share their idempotency keys on.
pub const CHANGES_PATH: &str = "/groups/changes";

/// The answer for a change as it now stands: a refusal if it failed.
fn change_answer(group: Conversation, change: GroupChange, replayed: bool) -> ApiResult<ChangeSent> {
    if change.state == ChangeState::Failed {
        let reason = change.error.clone().unwrap_or_else(|| "the line refused the change".into());
        let error = line_refusal(reason).with("group", group.group_json()).with("change", change.to_json());
        return Err(if replayed { error.replayed() } else { error });
    }
    Ok(ChangeSent { group, change, replayed })
}

async fn replay_change(state: &Sender, prior: Prior) -> ApiResult<ChangeSent> {
    let noted = match &prior {
        Prior::Done { body } | Prior::InProgress { body: Some(body) } => body.clone(),
        _ => return Err(unanswered(&prior)),
    };
    let Some(change_id) = noted["change"]["id"].as_str() else { return Err(unanswered(&prior)) };
    let (change, group) = state
        .db
        .write(async |conn| {
            let change = db::group_changes::get_any(&mut *conn, change_id)
                .await?
                .ok_or_else(|| ApiError::not_found("change"))?;
            let group = db::conversations::get_any(conn, &change.group_id)
                .await?
                .ok_or_else(|| ApiError::not_found("group"))?;
            ApiResult::Ok((change, group))
        })
        .await?;
    if change.state == ChangeState::Pending {
        return Err(unanswered(&Prior::InProgress { body: None }));
    }
    change_answer(group, change, true)
}

/// Renames a group or changes its participants, with the creation's rules and outcomes: the
/// request calls the line and answers 200 when the change is applied, 202 while its outcome is
/// unknown (the reconciler asks the line later), or the line's refusal.
pub async fn change(
    state: &Sender,
    principal: &Principal,
    group_id: &str,
    input: ChangeInput,
    key: Option<Idempotency>,
) -> ApiResult<ChangeSent> {
    let group = db::conversations::get(&state.db, &principal.org_id, group_id)
        .await?
        .filter(|g| g.kind == ConversationKind::Group && principal.may_use_line(&g.line_id))
        .ok_or_else(|| ApiError::not_found("group"))?;
    let line = state.lines.get(&group.line_id).await?.ok_or_else(|| ApiError::not_found("line"))?;
    let add: Vec<String> = input.add.iter().map(|p| p.as_str().to_string()).collect();
    let remove: Vec<String> = input.remove.iter().map(|p| p.as_str().to_string()).collect();
    check_change(&group.participants, &add, &remove, input.leave, &line.e164)?;
    let idempotency = key.map(|mut idem| {
        idem.fingerprint =
            fingerprint(CHANGES_PATH, &json!({"group_id": group.id, "name": input.name, "add": add, "remove": remove}));
        idem
    });
    let now = clock::now_ms();
    if let Some(idem) = &idempotency
        && let Some(prior) =
            db::idempotency::peek(&state.db, &idem.scope(&principal.org_id), &idem.fingerprint, now).await?
    {
        return replay_change(state, prior).await;
    }

    // The creation's rules, before anything is written.
    if line.kind == LineKind::Shared {
        return Err(ApiError::conflict(
            "group_requires_dedicated_line",
            "groups are managed from a dedicated line only",
        ));
    }
    if group.group_state.as_deref() == Some("left") {
        return Err(ApiError::conflict("group_left", "the line has left this group"));
    }
    if group.group_state.as_deref() != Some("created") {
        return Err(ApiError::conflict(
            "group_not_created",
            "the group's creation has not succeeded (yet): it can be changed once it is created",
        ));
    }
    if !state.lines.capabilities(&line).await.is_some_and(|c| c.groups && c.imessage) {
        return Err(ApiError::conflict(
            "group_chats_unsupported",
            "the line's device has no native group support (or has not reported it)",
        ));
    }
    let added: Vec<&str> = add.iter().map(String::as_str).collect();
    super::resolve::refuse_opted_out(state, &principal.org_id, &line.id, &added).await?;
    let refused = unreachable(state, &principal.org_id, &line, &input.add).await?;
    if !refused.is_empty() {
        return Err(ApiError::refused(
            "participants_not_reachable",
            "these participants are not reachable over iMessage; groups never fall back to SMS",
        )
        .with("participants", refused));
    }

    let written = state
        .db
        .transaction(async |tx| -> ApiResult<Result<GroupChange, Prior>> {
            if let Some(idem) = &idempotency {
                let ttl_ms = state.config.idempotency_ttl_hours as i64 * 3_600_000;
                let scope = idem.scope(&principal.org_id);
                if let Some(prior) = db::idempotency::claim(tx, &scope, &idem.fingerprint, now, ttl_ms).await? {
                    return Ok(Err(prior));
                }
            }
            // One change of a group's participants at a time, checked against the participants
            // as they stand once the group is locked: two changes checked side by side could
            // each keep the group within 2 to 31 and together take it out.
            let moves_people = !add.is_empty() || !remove.is_empty();
            if moves_people && db::group_changes::lock_for_change(tx, &group.id, stale_pending_before(state)).await? {
                return Err(ApiError::conflict(
                    "group_change_in_progress",
                    "another change of this group is under way or its outcome is not known yet; try again once it settles",
                )
                .with_retry_after(1));
            }
            let now_group = db::conversations::get_any(tx, &group.id).await?.ok_or_else(|| ApiError::not_found("group"))?;
            check_change(&now_group.participants, &add, &remove, input.leave, &line.e164)?;
            let change =
                db::group_changes::insert(tx, &now_group, input.name.clone(), add.clone(), remove.clone(), input.leave)
                    .await?;
            if let Some(idem) = &idempotency {
                db::idempotency::note_progress(
                    tx,
                    &idem.scope(&principal.org_id),
                    &json!({"change": {"id": change.id}}),
                )
                .await?;
            }
            Ok(Ok(change))
        })
        .await?;
    let change = match written {
        Ok(change) => change,
        Err(prior) => return replay_change(state, prior).await,
    };

    let call = crate::bridge::GroupChangeRequest {
        id: change.id.clone(),
        group_id: group.id.clone(),
        name: change.name.clone(),
        add: change.add.clone(),
        remove: change.remove.clone(),
        leave: change.leave,
    };
    let result = state.lines.client().change_group(&line, &call).await;
    crate::metrics::bridge_call(&line.id, result.outcome.attempt_outcome(), result.latency_ms);
    let (settled, error) = match &result.outcome {
        SendOutcome::Accepted => (ChangeState::Applied, None),
        SendOutcome::Rejected(reason) | SendOutcome::Blocked(reason) => (ChangeState::Failed, Some(reason.clone())),
        SendOutcome::Unreachable(_) | SendOutcome::RetryLater => {
            (ChangeState::Failed, Some("the line could not be reached".to_string()))
        }
        SendOutcome::Timeout => {
            (ChangeState::Unknown, Some("the line did not answer within the bridge timeout".to_string()))
        }
        SendOutcome::Unknown(error) => (ChangeState::Unknown, Some(error.clone())),
        SendOutcome::Held { .. } => (ChangeState::Unknown, Some("the line holds it for its device".into())),
    };
    let next_ask = (settled == ChangeState::Unknown).then(|| clock::now_ms() + 500);
    let (change, group) = state
        .db
        .transaction(async |tx| -> ApiResult<(GroupChange, Conversation)> {
            let settled = db::group_changes::settle(tx, &change.id, settled, error.as_deref(), next_ask)
                .await?
                .ok_or_else(|| ApiError::not_found("group"))?;
            if let Some(idem) = &idempotency {
                db::idempotency::complete(tx, &idem.scope(&principal.org_id), &json!({"change": {"id": change.id}}))
                    .await?;
            }
            Ok(settled)
        })
        .await?;
    change_answer(group, change, false)
}

/// Changes `pending` since before this were left by an instance that stopped mid-call (a call
/// ends within the bridge timeout); the reconciler asks the line about them.
pub fn stale_pending_before(state: &Sender) -> i64 {
    clock::now_ms() - state.config.bridge_timeout_ms as i64 - 60_000
}

/// The rules a change must keep, against the group's participants: nobody added twice or
/// removed who is not there, never the line itself, and 2 to [`MAX_PARTICIPANTS`] participants
/// after it (unless the line leaves).
fn check_change(
    participants: &[String],
    add: &[String],
    remove: &[String],
    leave: bool,
    line_e164: &str,
) -> ApiResult<()> {
    let current: Vec<&str> = participants.iter().map(String::as_str).collect();
    if let Some(phone) = add.iter().find(|p| p.as_str() == line_e164) {
        return Err(ApiError::invalid("add", format!("{phone} is the line itself, which is never a participant")));
    }
    if let Some(phone) = add.iter().find(|p| current.contains(&p.as_str())) {
        return Err(ApiError::invalid("add", format!("{phone} is already in the group")));
    }
    if let Some(phone) = remove.iter().find(|p| !current.contains(&p.as_str())) {
        return Err(ApiError::invalid("remove", format!("{phone} is not in the group")));
    }
    if let Some(phone) = add.iter().find(|p| remove.contains(p)) {
        return Err(ApiError::invalid("remove", format!("{phone} is both added and removed")));
    }
    let after = current.len() + add.len() - remove.len();
    if !leave && !(2..=MAX_PARTICIPANTS).contains(&after) {
        let field = if add.is_empty() { "remove" } else { "add" };
        return Err(ApiError::invalid(
            field,
            format!("a group keeps 2 to {MAX_PARTICIPANTS} participants besides the line; this change leaves {after}"),
        ));
    }
    Ok(())
}

/// Normalises participants to E.164 and drops duplicates; 2 to 31 distinct numbers.
pub fn participants(raw: Vec<String>, default_country: Option<&str>) -> ApiResult<Vec<E164>> {
    let mut distinct = BTreeSet::new();
    for (i, number) in raw.iter().enumerate() {
        let phone = phone_field("participants", number, default_country)
            .map_err(|e| e.with_message(format!("participant {} ({number:?}) is not a valid phone number", i + 1)))?;
        distinct.insert(phone);
    }
    if distinct.len() < 2 || distinct.len() > MAX_PARTICIPANTS {
        return Err(ApiError::invalid(
            "participants",
            format!("a group has 2 to {MAX_PARTICIPANTS} distinct participants, not {}", distinct.len()),
        ));
    }
    Ok(distinct.into_iter().collect())
}
