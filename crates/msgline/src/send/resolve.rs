//! Which line, which recipient, which channel: everything a send decides before it writes.

use super::SendInput;
use crate::{
    caller::Principal,
    db::{self, conversations::Conversation, lines::Line, opt_outs::OptOutCheck},
    domain::{
        id::{ContactId, ConversationId, LineId},
        lifecycle::{Channel, ConversationKind},
        phone::E164,
    },
    error::{ApiError, ApiResult, ErrorKind},
    send::{Sender, ThreadCache},
};

/// Who a send goes to, as the request named them (at least one).
#[derive(Debug, Clone, Default)]
pub struct Recipient {
    pub to: Option<E164>,
    pub conversation_id: Option<ConversationId>,
    pub contact_id: Option<ContactId>,
}

/// A resolved send: the line, the channel and where the message goes.
#[derive(Debug, Clone)]
pub struct Target {
    pub line: Line,
    pub channel: Channel,
    pub destination: Destination,
    /// Reachability learned from the bridge during resolution, to store on the contact.
    learned_reachability: Option<bool>,
    /// Whether the recipient's opt-out is checked inside the commit (see [`Target::stage_checks`])
    /// rather than read while resolving.
    opt_out_at_commit: bool,
    /// The pool the send named, which may move the message to another of its lines while no
    /// line has been handed it.
    pub pool_id: Option<String>,
}

#[derive(Debug, Clone)]
pub enum Destination {
    /// One phone; the contact and the conversation are found or created when written. `read`:
    /// both were looked for while resolving, so what is missing does not exist yet.
    Direct { phone: E164, contact_id: Option<String>, conversation_id: Option<String>, read: bool },
    /// An existing group conversation.
    Group { conversation: Conversation },
}

impl ThreadCache {
    /// Remembers the direct thread a send was written to.
    pub fn remember(&self, org_id: &str, target: &Target, message: &crate::db::messages::Message) {
        let (Destination::Direct { phone, .. }, Some(contact)) = (&target.destination, &message.contact_id) else {
            return;
        };
        self.remember_thread(org_id, &target.line.id, phone.as_str(), &message.conversation_id, contact);
    }
}

impl Target {
    /// After a commit that another request's contact or conversation broke: what was read while
    /// resolving is read again when the thread is staged.
    pub fn read_again(&mut self) {
        if let Destination::Direct { read, .. } = &mut self.destination {
            *read = false;
        }
    }

    /// Stages what the commit checks before it writes: on SQLite, where that costs no read of its
    /// own, the opt-out of a recipient whose thread this server remembers. The commit is then
    /// refused with the phone ([`db::Db::commit_or_refuse`]), and [`opted_out`] is the answer.
    pub fn stage_checks(&self, batch: &mut db::Batch, org_id: &str) {
        if let (true, Destination::Direct { phone, .. }) = (self.opt_out_at_commit, &self.destination) {
            db::opt_outs::stage_refusal(batch, org_id, &self.line.id, phone.as_str());
        }
    }

    /// The thread of a send that shares a commit: (conversation id, contact id) as they stand,
    /// read without the writer, with whichever of the two is missing staged into `batch`. If
    /// another request creates the same contact or conversation first, the commit fails with a
    /// unique violation and the send takes the transaction path.
    pub async fn stage_thread(
        &self,
        db: &db::Db,
        batch: &mut db::Batch,
        org_id: &str,
        now: i64,
    ) -> ApiResult<(String, Option<String>)> {
        let (phone, contact_id, conversation_id, read) = match &self.destination {
            Destination::Group { conversation } => return Ok((conversation.id.clone(), None)),
            Destination::Direct { phone, contact_id, conversation_id, read } => {
                (phone, contact_id, conversation_id, read)
            }
        };
        let (found_contact, found_conversation) = match (contact_id, conversation_id) {
            (Some(contact), Some(conversation)) => (Some(contact.clone()), Some(conversation.clone())),
            _ if *read => (contact_id.clone(), conversation_id.clone()),
            _ => {
                let (found_contact, found_conversation) =
                    db::conversations::find_direct(db, org_id, &self.line.id, phone.as_str()).await?;
                // The contact the request named wins over the one read.
                (contact_id.clone().or(found_contact), conversation_id.clone().or(found_conversation))
            }
        };
        let contact_id = match found_contact {
            Some(id) => {
                if let Some(reachable) = self.learned_reachability {
                    db::contacts::stage_reachability(batch, &id, reachable, now);
                }
                id
            }
            None => db::contacts::stage_create(batch, org_id, phone.as_str(), self.learned_reachability, now),
        };
        let conversation_id = match found_conversation {
            Some(id) => id,
            None => {
                db::conversations::stage_create_direct(batch, org_id, &self.line.id, &contact_id, phone.as_str(), now)
            }
        };
        Ok((conversation_id, Some(contact_id)))
    }
}

/// 400 for a contact whose handle cannot be written to (an alphanumeric sender ID that wrote to
/// the line): its messages are kept, but nothing can be sent back.
fn unaddressable(field: &str, handle: &str) -> ApiResult<()> {
    match crate::domain::phone::addressable(handle) {
        true => Ok(()),
        false => Err(ApiError::invalid(
            field,
            format!("{handle:?} is a sender ID that cannot receive messages; nothing can be sent to it"),
        )),
    }
}

fn line_mismatch() -> ApiError {
    ApiError::conflict("line_mismatch", "this API key is bound to another line")
}

/// The line a send uses: the one named; else the key's line; else the organisation's only
/// usable line.
pub async fn resolve_line(
    state: &Sender,
    principal: &Principal,
    line_id: Option<&LineId>,
    line_e164: Option<&str>,
) -> ApiResult<Line> {
    let named = match (line_id, line_e164) {
        (Some(id), _) => Some(
            state
                .lines
                .get(id)
                .await?
                .filter(|l| l.usable_by(&principal.org_id))
                .ok_or_else(|| ApiError::not_found("line").with("field", "line_id"))?,
        ),
        (None, Some(e164)) => Some(
            state
                .lines
                .get_by_e164(e164)
                .await?
                .filter(|l| l.usable_by(&principal.org_id))
                .ok_or_else(|| ApiError::not_found("line").with("field", "from"))?,
        ),
        (None, None) => None,
    };
    match (named, principal.bound_line()) {
        (Some(line), _) if !principal.may_use_line(&line.id) => Err(line_mismatch()),
        (Some(line), _) => Ok(line),
        (None, Some(bound)) => state.lines.get(bound).await?.ok_or_else(|| ApiError::not_found("line")),
        (None, None) => {
            let page = db::Page { limit: 2, before: None };
            let mut usable = db::lines::list_for_org(&state.db, &principal.org_id, &page).await?.rows;
            if usable.len() == 1 {
                Ok(usable.remove(0))
            } else {
                Err(ApiError::invalid(
                    "line_id",
                    "name the line to send from with line_id or from (the organisation has more than one line, or none)",
                ))
            }
        }
    }
}

/// 409 `recipient_opted_out` if any of `phones` opted out of the organisation's messages on the
/// line: checked before anything of a send is written.
pub async fn refuse_opted_out(state: &Sender, org_id: &str, line_id: &str, phones: &[&str]) -> ApiResult<()> {
    match db::opt_outs::first_opted_out(&state.db, org_id, line_id, phones).await? {
        None => Ok(()),
        Some(phone) => Err(opted_out(&phone)),
    }
}

pub(super) fn opted_out(phone: &str) -> ApiError {
    ApiError::conflict(
        "recipient_opted_out",
        format!("{phone} opted out of messages from this line (it texted STOP); it must text START first"),
    )
    .with("phone", phone)
}

/// Resolves line, destination and channel for a send.
pub async fn resolve(state: &Sender, principal: &Principal, input: &SendInput) -> ApiResult<Target> {
    let recipient = &input.recipient;
    let org = principal.org_id.as_str();
    let conversation = match &recipient.conversation_id {
        Some(id) => Some(
            db::conversations::get(&state.db, org, id)
                .await?
                .filter(|c| principal.may_use_line(&c.line_id))
                .ok_or_else(|| ApiError::not_found("conversation").with("field", "conversation_id"))?,
        ),
        None => None,
    };
    let contact = match &recipient.contact_id {
        Some(id) => Some(
            db::contacts::get(&state.db, org, id)
                .await?
                .ok_or_else(|| ApiError::not_found("contact").with("field", "contact_id"))?,
        ),
        None => None,
    };

    let pool = match &input.pool_id {
        Some(id) => Some(super::pools::find(state, principal, id).await?),
        None => None,
    };
    if let (Some(pool), Some(conversation)) = (&pool, &conversation)
        && (conversation.kind == ConversationKind::Group || !pool.line_ids.contains(&conversation.line_id))
    {
        return Err(ApiError::invalid(
            "pool_id",
            "the conversation is not on a line of the pool (a group stays on its line)",
        ));
    }
    let line = match (&conversation, &pool) {
        (None, Some(pool)) => {
            let phone =
                recipient.to.as_ref().map(|p| p.as_str().to_string()).or(contact.as_ref().map(|c| c.phone.clone()));
            super::pools::line_for(state, pool, phone.as_deref()).await?
        }
        (Some(conversation), _) => {
            let line = state.lines.get(&conversation.line_id).await?.ok_or_else(|| ApiError::not_found("line"))?;
            let named_other = input.line_id.as_ref().is_some_and(|id| *id != line.id)
                || input.line_e164.as_ref().is_some_and(|e164| e164.as_str() != line.e164);
            if named_other {
                return Err(ApiError::invalid("line_id", "the conversation is on another line"));
            }
            line
        }
        (None, None) => {
            let e164 = input.line_e164.as_ref().map(E164::as_str);
            resolve_line(state, principal, input.line_id.as_ref(), e164).await?
        }
    };

    // The one phone the named recipients agree on (none for a group conversation).
    let mut phone: Option<E164> = recipient.to.clone();
    let mut agree = |field: &str, other: &str| -> ApiResult<()> {
        match &phone {
            Some(p) if p.as_str() != other => {
                Err(ApiError::invalid(field, "to, contact_id and conversation_id name different recipients"))
            }
            Some(_) => Ok(()),
            None => {
                phone = Some(E164::from_trusted(other.to_string()));
                Ok(())
            }
        }
    };
    if let Some(contact) = &contact {
        agree("contact_id", &contact.phone)?;
        unaddressable("contact_id", &contact.phone)?;
    }
    let mut destination = match conversation {
        Some(conversation) if conversation.kind == ConversationKind::Group => {
            if phone.is_some() {
                return Err(ApiError::invalid("conversation_id", "a group conversation takes no to or contact_id"));
            }
            if conversation.group_state.as_deref() == Some("failed") {
                return Err(ApiError::invalid("conversation_id", "this group was never created"));
            }
            if conversation.group_state.as_deref() == Some("left") {
                return Err(
                    ApiError::conflict("group_left", "the line has left this group").with("field", "conversation_id")
                );
            }
            Destination::Group { conversation }
        }
        Some(conversation) => {
            let own = conversation.participants.first().cloned().unwrap_or_default();
            agree("conversation_id", &own)?;
            unaddressable("conversation_id", &own)?;
            Destination::Direct {
                phone: phone.clone().expect("a direct conversation has its participant"),
                contact_id: conversation.contact_id.clone(),
                conversation_id: Some(conversation.id.clone()),
                read: false,
            }
        }
        None => {
            let phone = phone
                .clone()
                .ok_or_else(|| ApiError::invalid("to", "give at least one of to, conversation_id and contact_id"))?;
            if phone.as_str() == line.e164 {
                return Err(ApiError::invalid("to", "a line cannot send to its own number"));
            }
            Destination::Direct {
                phone,
                contact_id: contact.as_ref().map(|c| c.id.clone()),
                conversation_id: None,
                read: false,
            }
        }
    };

    // What the tables say of the contact's reachability, when it was read here.
    let mut stored_reachability = None;
    let mut opt_out_at_commit = false;
    match &mut destination {
        Destination::Direct { phone, contact_id, conversation_id, read } if conversation_id.is_none() => {
            // The contact the request named is the one with its phone.
            match state.threads.thread(org, &line.id, phone.as_str()) {
                // A thread this server wrote: only the opt-out is read, by the commit itself
                // where it can be.
                Some((conversation, contact)) => {
                    match db::opt_outs::check_now_or_at_commit(&state.db, org, &line.id, phone.as_str()).await? {
                        OptOutCheck::Clear => {}
                        OptOutCheck::OptedOut(number) => return Err(opted_out(&number)),
                        OptOutCheck::AtCommit => opt_out_at_commit = true,
                    }
                    *contact_id = Some(contact_id.take().unwrap_or(contact));
                    *conversation_id = Some(conversation);
                }
                // A first send to the number (on this server): one read for everything it needs.
                None => {
                    let found = db::conversations::recipient(&state.db, org, &line.id, phone.as_str()).await?;
                    if found.opted_out {
                        return Err(opted_out(phone.as_str()));
                    }
                    *contact_id = contact_id.take().or(found.contact_id);
                    *conversation_id = found.conversation_id;
                    *read = true;
                    stored_reachability = Some(found.reachable);
                }
            }
        }
        Destination::Direct { phone, .. } => refuse_opted_out(state, org, &line.id, &[phone.as_str()]).await?,
        Destination::Group { conversation } => {
            let phones: Vec<&str> = conversation.participants.iter().map(String::as_str).collect();
            refuse_opted_out(state, org, &line.id, &phones).await?;
        }
    }
    let (channel, learned_reachability) =
        choose_channel(state, org, &line, &destination, input, stored_reachability).await?;
    if !input.attachments.is_empty() {
        let capabilities = state.lines.capabilities(&line).await;
        if capabilities.is_some_and(|c| !c.media) {
            return Err(ApiError::conflict("media_unsupported", "this line's device cannot send files"));
        }
        if channel == Channel::Sms && capabilities.is_some_and(|c| !c.mms) {
            return Err(ApiError::new(ErrorKind::Invalid, "media_requires_mms")
                .with_message("this message would go over SMS, and the line cannot send files over SMS (MMS)"));
        }
    }
    let pool_id = pool.map(|pool| pool.id);
    Ok(Target { line, channel, destination, learned_reachability, opt_out_at_commit, pool_id })
}

/// Explicit channels are checked against the line; the automatic choice is iMessage where the
/// line has it and the recipient is reachable over it, else SMS.
async fn choose_channel(
    state: &Sender,
    org_id: &str,
    line: &Line,
    destination: &Destination,
    input: &SendInput,
    stored: Option<Option<bool>>,
) -> ApiResult<(Channel, Option<bool>)> {
    let capabilities = state.lines.capabilities(line).await;
    let poll_refusal = || {
        ApiError::new(ErrorKind::Invalid, "poll_requires_imessage")
            .with_message("polls are iMessage only: the line or the recipient cannot use iMessage")
    };
    let phone = match destination {
        Destination::Group { .. } => {
            if input.channel == Some(Channel::Sms) {
                return Err(ApiError::invalid("channel", "group conversations are iMessage only"));
            }
            return Ok((Channel::Imessage, None));
        }
        Destination::Direct { phone, .. } => phone,
    };
    match input.channel {
        Some(Channel::Sms) if input.imessage_only => return Err(poll_refusal()),
        Some(Channel::Sms) => {
            if capabilities.is_some_and(|c| !c.sms) {
                return Err(ApiError::invalid("channel", "this line cannot send SMS"));
            }
            return Ok((Channel::Sms, None));
        }
        Some(Channel::Imessage) if capabilities.is_some_and(|c| !c.imessage) => {
            return Err(if input.imessage_only {
                poll_refusal()
            } else {
                ApiError::invalid("channel", "this line cannot send iMessage")
            });
        }
        Some(Channel::Imessage) if !input.imessage_only => return Ok((Channel::Imessage, None)),
        Some(Channel::Imessage) | None => {}
    }
    // Automatic choice (and every poll): is the recipient reachable over iMessage?
    let line_has_imessage = capabilities.is_none_or(|c| c.imessage);
    if !line_has_imessage {
        return if input.imessage_only { Err(poll_refusal()) } else { Ok((Channel::Sms, None)) };
    }
    let (reachable, learned) = reachability(state, org_id, line, phone, stored).await?;
    match reachable {
        Some(true) => Ok((Channel::Imessage, learned)),
        Some(false) if input.imessage_only => Err(poll_refusal()),
        // Not known (the bridge could not be asked): a poll is still attempted over iMessage.
        None if input.imessage_only => Ok((Channel::Imessage, learned)),
        _ if capabilities.is_none_or(|c| c.sms) => Ok((Channel::Sms, learned)),
        _ => Ok((Channel::Imessage, learned)),
    }
}

/// Whether `phone` is reachable over iMessage: remembered on the contact, else asked of the
/// bridge. Returns the answer and, when the bridge was asked, what to remember. `stored`: what
/// the contact row said, if it was read already.
async fn reachability(
    state: &Sender,
    org_id: &str,
    line: &Line,
    phone: &E164,
    stored: Option<Option<bool>>,
) -> ApiResult<(Option<bool>, Option<bool>)> {
    if let Some(known) = state.threads.reachable(org_id, phone.as_str()) {
        return Ok((Some(known), None));
    }
    let stored = match stored {
        Some(stored) => stored,
        None => db::contacts::reachability_by_phone(&state.db, org_id, phone.as_str()).await?,
    };
    if let Some(known) = stored {
        state.threads.note_reachable(org_id, phone.as_str(), known);
        return Ok((Some(known), None));
    }
    let asked = state.lines.client().reachability(line, &[phone.to_string()]).await;
    match asked {
        Ok(answer) => {
            let reachable = answer.imessage.get(phone.as_str()).copied();
            if let Some(reachable) = reachable {
                state.threads.note_reachable(org_id, phone.as_str(), reachable);
            }
            Ok((reachable, reachable))
        }
        Err(error) => {
            tracing::debug!(line = %line.id, error, "reachability could not be asked");
            Ok((None, None))
        }
    }
}
