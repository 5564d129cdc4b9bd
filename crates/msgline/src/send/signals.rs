//! What a conversation shows besides messages: a typing indicator (`POST
//! /conversations/{id}/typing`) and read receipts (`POST /conversations/{id}/read`). Neither is a
//! message: nothing is queued, the line is asked at once, and a call that fails can simply be made
//! again.

use crate::{
    bridge::{ConversationSignal, client::SendOutcome},
    caller::Principal,
    clock,
    db::{self, conversations::Conversation, lines::LineKind},
    domain::{
        lifecycle::{Channel, ConversationKind},
        scope::Scope,
    },
    error::{ApiError, ApiResult, ErrorKind},
    send::Sender,
};

/// The caller's conversation, or 404.
async fn conversation(state: &Sender, caller: &Principal, id: &str) -> ApiResult<Conversation> {
    db::conversations::get(&state.db, &caller.org_id, id)
        .await?
        .filter(|c| caller.may_use_line(&c.line_id))
        .ok_or_else(|| ApiError::not_found("conversation"))
}

/// Who the line signals: the group, or the one person of a direct conversation.
fn signal_for(conversation: &Conversation, typing: Option<bool>) -> ConversationSignal {
    match conversation.kind {
        ConversationKind::Group => ConversationSignal { to: Vec::new(), chat: Some(conversation.id.clone()), typing },
        ConversationKind::Direct => {
            ConversationSignal { to: conversation.participants.iter().take(1).cloned().collect(), chat: None, typing }
        }
    }
}

/// Whether the conversation runs over iMessage: a group always; a direct one when its latest
/// message went over iMessage.
async fn over_imessage(state: &Sender, conversation: &Conversation) -> ApiResult<bool> {
    if conversation.kind == ConversationKind::Group {
        return Ok(true);
    }
    let channel = db::messages::latest_channel(&state.db, &conversation.org_id, &conversation.id).await?;
    Ok(channel == Some(Channel::Imessage))
}

/// The line's answer as the API's: accepted, or why not.
fn answered(outcome: SendOutcome) -> ApiResult<()> {
    match outcome {
        SendOutcome::Accepted | SendOutcome::Held { .. } => Ok(()),
        SendOutcome::Rejected(reason) | SendOutcome::Blocked(reason) => {
            Err(ApiError::new(ErrorKind::LineRejected, "line_rejected")
                .with_message(format!("the line refused it: {reason}")))
        }
        SendOutcome::Timeout => Err(ApiError::new(ErrorKind::Unavailable, "line_unavailable")
            .with_message("the line did not answer in time; try again")),
        SendOutcome::Unreachable(why) | SendOutcome::Unknown(why) => {
            Err(ApiError::new(ErrorKind::Unavailable, "line_unavailable")
                .with_message(format!("the line could not be reached ({why}); try again")))
        }
        SendOutcome::RetryLater => Err(ApiError::new(ErrorKind::Unavailable, "line_unavailable")
            .with_message("the line asked to be tried later")
            .with_retry_after(1)),
    }
}

/// Shows the line typing in the conversation. The indicator hides by itself after a few seconds,
/// or when the next message goes out. iMessage conversations of dedicated lines only.
pub async fn typing(state: &Sender, caller: &Principal, id: &str) -> ApiResult<()> {
    caller.require(Scope::Send)?;
    let conversation = conversation(state, caller, id).await?;
    let line = state.lines.get(&conversation.line_id).await?.ok_or_else(|| ApiError::not_found("line"))?;
    if line.kind == LineKind::Shared {
        return Err(ApiError::conflict(
            "typing_requires_dedicated_line",
            "typing indicators are shown from a dedicated line only",
        ));
    }
    if !over_imessage(state, &conversation).await? {
        return Err(ApiError::new(ErrorKind::Invalid, "typing_requires_imessage")
            .with_message("typing indicators are iMessage only: this conversation is over SMS"));
    }
    if state.lines.capabilities(&line).await.is_some_and(|c| !c.typing) {
        return Err(ApiError::conflict("typing_unsupported", "this line's device cannot show a typing indicator"));
    }
    let outcome = state.lines.client().typing(&line, &signal_for(&conversation, Some(true))).await.outcome;
    answered(outcome)
}

/// Marks the conversation's inbound messages read (`read_at`) and, where the line sends read
/// receipts (an iMessage conversation on a dedicated line whose device has them), sends one. The
/// marks stay if the receipt cannot be sent; calling again sends it.
pub async fn read(state: &Sender, caller: &Principal, id: &str) -> ApiResult<()> {
    caller.require(Scope::Send)?;
    let conversation = conversation(state, caller, id).await?;
    db::messages::mark_read(&state.db, &conversation.org_id, &conversation.id, clock::now_ms()).await?;
    let line = state.lines.get(&conversation.line_id).await?.ok_or_else(|| ApiError::not_found("line"))?;
    let receipts = line.kind == LineKind::Dedicated
        && state.lines.capabilities(&line).await.is_some_and(|c| c.read_receipts)
        && over_imessage(state, &conversation).await?;
    if !receipts {
        return Ok(());
    }
    let outcome = state.lines.client().mark_read(&line, &signal_for(&conversation, None)).await.outcome;
    answered(outcome)
}
