//! A reaction send (`POST /messages/{id}/reactions`, and its removal): a tapback on a message of
//! an iMessage conversation, sent as a message of kind `reaction` through the one send path, so
//! it is idempotent and follows the lifecycle like any message.

use serde::Deserialize;
use serde_json::json;

use super::{Accepted, Idempotency, Recipient, SendInput, request::idempotency};
use crate::{
    caller::Principal,
    db::{self, reactions::NewReaction},
    domain::{
        idempotency::fingerprint,
        lifecycle::{Channel, Direction, MessageKind, MessageStatus, Tapback},
        reaction,
        scope::Scope,
    },
    error::{ApiError, ApiResult, ErrorKind},
    send::Sender,
};

/// `POST /messages/{id}/reactions`.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"reaction": "love"}))]
pub struct SendReaction {
    /// The tapback.
    #[schema(required = true, value_type = Option<Tapback>)]
    pub reaction: Option<String>,
    /// The same as the `Idempotency-Key` header (both given and different: 400).
    #[schema(min_length = 1, max_length = 255)]
    pub idempotency_key: Option<String>,
}

/// The route's idempotency path: a key is scoped by it, and the fingerprint names the target.
const PATH: &str = "/messages/{id}/reactions";

/// The tapback a request names.
pub fn parse_tapback(field: &str, text: &str) -> ApiResult<Tapback> {
    text.parse::<Tapback>()
        .map_err(|_| ApiError::invalid(field, format!("reaction must be one of {}", Tapback::names())))
}

/// `POST /messages/{id}/reactions` after the HTTP layer.
pub async fn add(
    state: &Sender,
    caller: &Principal,
    target_id: &str,
    request: SendReaction,
    header_key: Option<&str>,
) -> ApiResult<Accepted> {
    caller.require(Scope::Send)?;
    let text = request.reaction.ok_or_else(|| ApiError::invalid("reaction", "reaction is required"))?;
    let tapback = parse_tapback("reaction", &text)?;
    let idempotency = keyed(header_key, request.idempotency_key.as_deref(), target_id, tapback, false)?;
    submit(state, caller, target_id, tapback, false, idempotency).await
}

/// `DELETE /messages/{id}/reactions/{reaction}` after the HTTP layer: takes the line's tapback
/// back, as a reaction message with `removed: true`.
pub async fn remove(
    state: &Sender,
    caller: &Principal,
    target_id: &str,
    tapback: &str,
    header_key: Option<&str>,
) -> ApiResult<Accepted> {
    caller.require(Scope::Send)?;
    let tapback = parse_tapback("reaction", tapback)?;
    let idempotency = keyed(header_key, None, target_id, tapback, true)?;
    submit(state, caller, target_id, tapback, true, idempotency).await
}

/// The request's idempotency, fingerprinted with what it asks (target, tapback, removal), so a key
/// used for another reaction is `idempotency_key_reused`.
fn keyed(
    header_key: Option<&str>,
    body_key: Option<&str>,
    target_id: &str,
    tapback: Tapback,
    removed: bool,
) -> ApiResult<Option<Idempotency>> {
    let asked = json!({"target": target_id, "reaction": tapback, "removed": removed});
    idempotency(header_key, body_key, PATH, || fingerprint(PATH, &asked))
}

async fn submit(
    state: &Sender,
    caller: &Principal,
    target_id: &str,
    tapback: Tapback,
    removed: bool,
    idempotency: Option<Idempotency>,
) -> ApiResult<Accepted> {
    // A replay answers what the first request got, whatever has changed since.
    if let Some(sent) = super::prior(state, caller, idempotency.as_ref()).await? {
        return Ok(sent);
    }
    let target = db::messages::get(&state.db, &caller.org_id, target_id)
        .await?
        .filter(|m| caller.may_use_line(&m.line_id))
        .ok_or_else(|| ApiError::not_found("message"))?;
    if matches!(target.kind, MessageKind::Reaction | MessageKind::PollVote) {
        return Err(ApiError::invalid("id", format!("a message of kind {} cannot be reacted to", target.kind)));
    }
    if target.channel != Channel::Imessage {
        return Err(ApiError::new(ErrorKind::Invalid, "reaction_requires_imessage")
            .with_message("tapbacks are iMessage only: this message went over SMS"));
    }
    if target.direction == Direction::Outbound && target.status == MessageStatus::Failed {
        return Err(ApiError::invalid("id", "this message was never sent, so it cannot be reacted to"));
    }
    let line = state.lines.get(&target.line_id).await?.ok_or_else(|| ApiError::not_found("line"))?;
    if state.lines.capabilities(&line).await.is_some_and(|c| !c.reactions) {
        return Err(ApiError::conflict("reactions_unsupported", "this line's device cannot send tapbacks"));
    }
    // The line names a message it sent by msgline's id, and one it received by its own id.
    let line_name = match target.direction {
        Direction::Outbound => None,
        Direction::Inbound => {
            let names = db::bridge_refs::remotes_for(&state.db, &line.id, &target.id).await?;
            let Some((name, _)) = names.into_iter().next() else {
                return Err(ApiError::conflict(
                    "reaction_target_unknown",
                    "the line did not give this message an id when it arrived, so it cannot be reacted to",
                ));
            };
            Some(name)
        }
    };
    let input = SendInput {
        recipient: Recipient { conversation_id: Some(target.conversation_id.as_str().into()), ..Recipient::default() },
        line_id: Some(line.id.as_str().into()),
        channel: Some(Channel::Imessage),
        body: reaction::fallback_text(tapback, removed, &target.body),
        kind: MessageKind::Reaction,
        payload: Some(
            NewReaction {
                message_id: String::new(),
                org_id: caller.org_id.clone(),
                target_id: Some(target.id.clone()),
                tapback,
                removed,
                created_at: 0,
            }
            .payload(),
        ),
        attachment: line_name,
        reaction: Some(ReactionSpec { target_id: target.id.clone(), tapback, removed }),
        ..SendInput::default()
    };
    super::submit(state, caller, input, idempotency).await
}

/// The reaction a reaction message carries: stored with it, in the same commit.
#[derive(Debug, Clone)]
pub struct ReactionSpec {
    pub target_id: String,
    pub tapback: Tapback,
    pub removed: bool,
}
