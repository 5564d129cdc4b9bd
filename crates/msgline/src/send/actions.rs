//! `POST /messages/{id}/edit` and `POST /messages/{id}/unsend`: msgline asks the line to edit or
//! unsend an iMessage it sent, within Apple's limits, and answers with the message. Like a group
//! change: the request calls the line itself and answers `200` once the line applied it, `202`
//! while the outcome is unknown (the reconciler asks the line later, never calling it again), or
//! the line's refusal. One action of a message at a time.

use serde_json::json;

use super::{Idempotency, Sender, unanswered};
use crate::{
    bridge::{ActionRequest, call::SendOutcome},
    caller::Principal,
    clock,
    db::{self, group_changes::ChangeState, idempotency::Prior, message_actions::MessageAction, messages::Message},
    domain::{
        idempotency::fingerprint,
        lifecycle::{Channel, Direction, MessageKind},
        message_action::{ActionKind, EDIT_WINDOW_MS, MAX_EDITS, UNSEND_WINDOW_MS},
        scope::Scope,
    },
    error::{ApiError, ApiResult},
};

/// An action's answer: the message as it now is, and whether the line applied the action (`202`
/// when its outcome is not known yet).
#[derive(Debug)]
pub struct Acted {
    pub message: Message,
    pub applied: bool,
    pub replayed: bool,
}

/// Edits (`body`) or unsends the message `id` of the caller's organisation.
pub async fn act(
    state: &Sender,
    principal: &Principal,
    id: &str,
    kind: ActionKind,
    body: Option<String>,
    key: Option<Idempotency>,
) -> ApiResult<Acted> {
    principal.require(Scope::Send)?;
    let message = db::messages::get(&state.db, &principal.org_id, id)
        .await?
        .filter(|m| principal.may_use_line(&m.line_id))
        .ok_or_else(|| ApiError::not_found("message"))?;
    let path = path(kind);
    let idempotency = key.map(|mut idem| {
        idem.path = path;
        idem.fingerprint = fingerprint(path, &json!({"message_id": message.id, "body": body}));
        idem
    });
    let now = clock::now_ms();
    // A replay answers what the first request got, whatever has changed since (a window closed).
    if let Some(idem) = &idempotency
        && let Some(prior) =
            db::idempotency::peek(&state.db, &idem.scope(&principal.org_id), &idem.fingerprint, now).await?
    {
        return replay(state, prior).await;
    }
    allowed(&message, kind, now)?;
    let line = state.lines.get(&message.line_id).await?.ok_or_else(|| ApiError::not_found("line"))?;
    let capabilities = state.lines.capabilities(&line).await;
    match kind {
        ActionKind::Edit => super::extras::require(capabilities.as_ref(), "edits", |c| c.edits)?,
        ActionKind::Unsend => super::extras::require(capabilities.as_ref(), "unsend", |c| c.unsend)?,
    }

    let stale = stale_pending_before(state);
    let written = state
        .db
        .transaction(async |tx| -> ApiResult<Result<MessageAction, Prior>> {
            if let Some(idem) = &idempotency {
                let ttl_ms = state.config.idempotency_ttl_hours as i64 * 3_600_000;
                if let Some(prior) =
                    db::idempotency::claim(tx, &idem.scope(&principal.org_id), &idem.fingerprint, now, ttl_ms).await?
                {
                    return Ok(Err(prior));
                }
            }
            let (message, open) = db::message_actions::lock(tx, &message.id, stale)
                .await?
                .ok_or_else(|| ApiError::not_found("message"))?;
            if let Some(open) = open {
                return Err(ApiError::conflict(
                    "message_not_editable",
                    format!(
                        "an earlier {} of this message is not settled yet; try again once it is",
                        open.kind.as_str()
                    ),
                )
                .with_retry_after(1));
            }
            // Checked again with the message locked: two edits side by side could each be the fifth.
            allowed(&message, kind, now)?;
            let action = db::message_actions::insert(tx, &message, kind, body.clone()).await?;
            if let Some(idem) = &idempotency {
                let noted = json!({"message": {"id": message.id}, "action": {"id": action.id}});
                db::idempotency::note_progress(tx, &idem.scope(&principal.org_id), &noted).await?;
            }
            Ok(Ok(action))
        })
        .await?;
    let action = match written {
        Ok(action) => action,
        Err(prior) => return replay(state, prior).await,
    };

    let result = state.lines.client().act(&line, &request(&action)).await;
    crate::metrics::bridge_call(&line.id, result.outcome.attempt_outcome(), result.latency_ms);
    let (settled, error) = outcome(&result.outcome);
    let next_ask = (settled == ChangeState::Unknown).then(|| clock::now_ms() + 500);
    let (action, message) = state
        .db
        .transaction(async |tx| -> ApiResult<(MessageAction, Message)> {
            let settled = db::message_actions::settle(tx, &action.id, settled, error.as_deref(), next_ask)
                .await?
                .ok_or_else(|| ApiError::not_found("message"))?;
            if let Some(idem) = &idempotency {
                let noted = json!({"message": {"id": settled.1.id}, "action": {"id": action.id}});
                db::idempotency::complete(tx, &idem.scope(&principal.org_id), &noted).await?;
            }
            Ok(settled)
        })
        .await?;
    answer(action, message, false)
}

/// The call to the line for an action.
pub fn request(action: &MessageAction) -> ActionRequest {
    ActionRequest {
        id: action.id.clone(),
        message_id: action.message_id.clone(),
        body: action.body.clone(),
        requested_at: action.created_at,
    }
}

/// The idempotency scope of each action.
fn path(kind: ActionKind) -> &'static str {
    match kind {
        ActionKind::Edit => "/messages/edit",
        ActionKind::Unsend => "/messages/unsend",
    }
}

/// What a call's outcome settles an action at: the line's answer, a failure when the call
/// certainly never reached the line, else unknown (asked about later, never called again).
pub fn outcome(outcome: &SendOutcome) -> (ChangeState, Option<String>) {
    match outcome {
        SendOutcome::Accepted => (ChangeState::Applied, None),
        SendOutcome::Rejected(reason) | SendOutcome::Blocked(reason) => (ChangeState::Failed, Some(reason.clone())),
        SendOutcome::Unreachable(_) | SendOutcome::RetryLater => {
            (ChangeState::Failed, Some("the line could not be reached".to_string()))
        }
        SendOutcome::Timeout => {
            (ChangeState::Unknown, Some("the line did not answer within the bridge timeout".into()))
        }
        SendOutcome::Unknown(error) => (ChangeState::Unknown, Some(error.clone())),
        SendOutcome::Held { .. } => (ChangeState::Unknown, Some("the line holds it for its device".into())),
    }
}

/// Apple's rules, and msgline's: only an iMessage text msgline sent and the line sent on, not
/// unsent; edits within 15 minutes of sending and at most 5; unsend within 2 minutes.
pub fn allowed(message: &Message, kind: ActionKind, now: i64) -> ApiResult<()> {
    let not_editable =
        |why: &str| Err(ApiError::conflict("message_not_editable", format!("this message cannot be changed: {why}")));
    if message.direction != Direction::Outbound {
        return not_editable("it was received, and only the sender can change a message");
    }
    if message.channel != Channel::Imessage {
        return not_editable("it went over SMS, and only iMessages can be edited or unsent");
    }
    if message.unsent_at.is_some() {
        return not_editable("it was unsent");
    }
    let Some(sent_at) = message.sent_at else {
        return not_editable("the line has not sent it (yet)");
    };
    if message.kind != MessageKind::Text {
        return not_editable("only a text can be edited or unsent");
    }
    match kind {
        ActionKind::Edit if now - sent_at > EDIT_WINDOW_MS => Err(ApiError::conflict(
            "edit_window_closed",
            "a message can be edited within 15 minutes of being sent, and this one was sent earlier",
        )),
        ActionKind::Edit if edit_count(message) >= MAX_EDITS => Err(ApiError::conflict(
            "edit_limit_reached",
            format!("a message can be edited at most {MAX_EDITS} times, and this one was"),
        )),
        ActionKind::Unsend if now - sent_at > UNSEND_WINDOW_MS => Err(ApiError::conflict(
            "unsend_window_closed",
            "a message can be unsent within 2 minutes of being sent, and this one was sent earlier",
        )),
        _ => Ok(()),
    }
}

/// How many times the message was edited.
fn edit_count(message: &Message) -> usize {
    message
        .edits
        .as_deref()
        .and_then(|text| serde_json::from_str::<Vec<serde_json::Value>>(text).ok())
        .map_or(0, |edits| edits.len())
}

/// Actions `pending` since before this were left by an instance that stopped mid-call (a call
/// ends within the bridge timeout); the reconciler asks the line about them.
pub fn stale_pending_before(state: &Sender) -> i64 {
    super::groups::stale_pending_before(state)
}

fn answer(action: MessageAction, message: Message, replayed: bool) -> ApiResult<Acted> {
    if action.state == ChangeState::Failed {
        let reason = action.error.clone().unwrap_or_else(|| format!("the line refused the {}", action.kind.as_str()));
        let error =
            super::groups::line_refusal(reason).with("message_id", message.id.clone()).with("action", action.to_json());
        return Err(if replayed { error.replayed() } else { error });
    }
    Ok(Acted { applied: action.state == ChangeState::Applied, message, replayed })
}

async fn replay(state: &Sender, prior: Prior) -> ApiResult<Acted> {
    let noted = match &prior {
        Prior::Done { body } | Prior::InProgress { body: Some(body) } => body.clone(),
        _ => return Err(unanswered(&prior)),
    };
    let Some(action_id) = noted["action"]["id"].as_str() else { return Err(unanswered(&prior)) };
    let (action, message) = state
        .db
        .write(async |conn| {
            let action = db::message_actions::get_any(&mut *conn, action_id)
                .await?
                .ok_or_else(|| ApiError::not_found("message"))?;
            let message =
                db::messages::get_any(conn, &action.message_id).await?.ok_or_else(|| ApiError::not_found("message"))?;
            ApiResult::Ok((action, message))
        })
        .await?;
    if action.state == ChangeState::Pending {
        return Err(unanswered(&Prior::InProgress { body: None }));
    }
    answer(action, message, true)
}
