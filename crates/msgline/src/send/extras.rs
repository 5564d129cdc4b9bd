//! What a send may carry beside its text: the message it answers (`reply_to`), an iMessage
//! effect and a subject. Each is checked once the send's line and channel are known.

use super::{
    SendInput, Sender,
    resolve::{Destination, Target},
};
use crate::{
    caller::Principal,
    db::{self, Db, lines::Capabilities, messages::Message},
    domain::lifecycle::{Channel, Direction},
    error::{ApiError, ApiResult},
};

/// Refuses what the send's channel or line cannot carry: an effect or a subject over SMS, or over
/// an iMessage line without the capability; a reply to a message of another conversation. A
/// reply over SMS goes as a plain message.
pub(super) async fn check(state: &Sender, principal: &Principal, input: &SendInput, target: &Target) -> ApiResult<()> {
    let extras = &input.extras;
    if extras == &db::messages::Extras::default() {
        return Ok(());
    }
    if let Some(id) = &extras.reply_to {
        let original = db::messages::get(&state.db, &principal.org_id, id).await?;
        if !original.as_ref().is_some_and(|original| in_conversation(original, target)) {
            return Err(ApiError::invalid(
                "reply_to",
                format!("{id} is not a message of the conversation this message goes to"),
            ));
        }
    }
    let imessage = target.channel == Channel::Imessage;
    if extras.effect.is_some() && !imessage {
        return Err(ApiError::conflict(
            "effect_requires_imessage",
            "effects are iMessage only, and this message goes over SMS",
        ));
    }
    if extras.subject.is_some() && !imessage {
        return Err(ApiError::conflict(
            "subject_requires_imessage",
            "subjects are iMessage only, and this message goes over SMS",
        ));
    }
    if !imessage {
        return Ok(());
    }
    let capabilities = state.lines.capabilities(&target.line).await;
    if extras.reply_to.is_some() {
        require(capabilities.as_ref(), "replies", |c| c.replies)?;
    }
    if extras.effect.is_some() || extras.subject.is_some() {
        require(capabilities.as_ref(), "effects", |c| c.effects)?;
    }
    Ok(())
}

/// `409 line_lacks_capability` naming `capability` unless the line reported it.
pub fn require(
    capabilities: Option<&Capabilities>,
    capability: &str,
    has: impl Fn(&Capabilities) -> bool,
) -> ApiResult<()> {
    if capabilities.is_some_and(has) {
        return Ok(());
    }
    Err(ApiError::conflict(
        "line_lacks_capability",
        format!("this line's device cannot do this (it lacks the `{capability}` capability)"),
    )
    .with("capability", capability))
}

/// Whether `original` is a message of the conversation the send goes to: the group's, or the
/// direct one of the send's line with the recipient's number.
fn in_conversation(original: &Message, target: &Target) -> bool {
    match &target.destination {
        Destination::Group { conversation } => original.conversation_id == conversation.id,
        Destination::Direct { phone, .. } => {
            let other = match original.direction {
                Direction::Outbound => original.to.as_deref(),
                Direction::Inbound => original.from.as_deref().filter(|_| original.to.is_some()),
            };
            original.line_id == target.line.id && other == Some(phone.as_str())
        }
    }
}

/// The line's name for a message: the id its device gave it (recorded when it arrived or was
/// reported), else msgline's own id (what a line of the msgline kind calls a message it sent).
pub async fn line_name(db: &Db, line_id: &str, message_id: &str) -> sqlx::Result<String> {
    let names = db::bridge_refs::remotes_for(db, line_id, message_id).await?;
    Ok(names
        .into_iter()
        .map(|(name, _)| name)
        .find(|name| !name.starts_with("sent:"))
        .unwrap_or_else(|| message_id.to_string()))
}
