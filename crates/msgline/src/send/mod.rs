//! The one send path every sender uses: the public endpoints, polls, contact cards and hosted
//! agents. It resolves line, recipient and channel, then hands the database one unit of work:
//! the idempotency record, contact, conversation, message (its own outbox job), poll and first
//! event, committed together.

pub mod actions;
pub mod availability;
pub mod card;
mod context;
pub mod extras;
pub mod groups;
pub mod media;
mod org_defaults;
pub mod poll;
mod pools;
mod rates;
pub mod reaction;
pub mod request;
mod resolve;
pub mod signals;
mod threads;

pub use context::Sender;
pub use resolve::{Recipient, Target, resolve_line};
pub use threads::ThreadCache;

use tracing::Instrument;

use crate::{
    caller::Principal,
    clock,
    db::{
        self,
        idempotency::{IdemScope, Prior},
        messages::{Message, NewMessage},
    },
    domain::{
        id::{AgentId, LineId, PoolId},
        idempotency::IdempotencyKey,
        lifecycle::{Channel, ConversationKind, Direction, MessageKind, MessageStatus},
        payload::Payload,
        phone::E164,
    },
    error::{ApiError, ApiResult},
    ratelimit::Allowance,
};

/// One outbound message, as parsed from a request.
#[derive(Debug, Clone, Default)]
pub struct SendInput {
    pub recipient: Recipient,
    pub line_id: Option<LineId>,
    /// A pool to send from instead of a line.
    pub pool_id: Option<PoolId>,
    /// The line's own number (`from` or `line_e164`).
    pub line_e164: Option<E164>,
    /// The channel asked for, or `None` for the automatic choice.
    pub channel: Option<Channel>,
    pub body: String,
    /// `text`, `contact_card` or `poll`.
    pub kind: MessageKind,
    /// What the message carries beside its text (a card's summary, a poll, a reaction, files).
    pub payload: Option<Payload>,
    pub agent_id: Option<AgentId>,
    /// iMessage or nothing (polls): an SMS-only recipient or line is `poll_requires_imessage`.
    pub imessage_only: bool,
    /// What the line attaches (a contact card's vCard).
    pub attachment: Option<String>,
    /// A poll this message carries: stored with it, in the same transaction.
    pub poll: Option<PollSpec>,
    /// The reaction a `reaction` message carries: its row is stored with it.
    pub reaction: Option<reaction::ReactionSpec>,
    /// Files already in the media store: their rows are stored with the message.
    pub attachments: Vec<crate::db::attachments::Attachment>,
    /// A scheduled send's time: the message is `scheduled` until then.
    pub send_at: Option<i64>,
    /// SMS fallback asked for (`Some(true)`), refused (`Some(false)`), or the organisation's
    /// default (`None`); only `POST /messages` asks.
    pub fallback: Option<bool>,
    /// With fallback: also when not delivered after this long.
    pub fallback_after_ms: Option<i64>,
    /// What the stored message is to carry of it, once the channel is known.
    pub fallback_plan: db::messages::Fallback,
    /// How long the message may wait for its line once it is due (`validity_seconds`; `None`:
    /// the default, [`request::VALIDITY_DEFAULT_SECONDS`]).
    pub validity_ms: Option<i64>,
    /// The message it answers (`reply_to`), its effect and its subject (see [`extras::check`]).
    pub extras: db::messages::Extras,
}

/// The poll of a poll message.
#[derive(Debug, Clone)]
pub struct PollSpec {
    pub id: String,
    pub question: String,
    pub options: Vec<String>,
}

/// The idempotency of one request: its key, the route, and the request's fingerprint.
#[derive(Debug, Clone)]
pub struct Idempotency {
    pub key: IdempotencyKey,
    pub path: &'static str,
    pub fingerprint: String,
}

impl Idempotency {
    pub fn scope<'a>(&'a self, org_id: &'a str) -> IdemScope<'a> {
        IdemScope { org_id, method: "POST", path: self.path, key: self.key.as_str() }
    }

    /// The key as a send's message holds it, scoped by its route.
    fn message_key(&self) -> String {
        format!("{} {}", self.path, self.key.as_str())
    }
}

/// A send the line will be asked to deliver: its message as accepted (its payload holds the
/// card or poll the answer shows beside it), and whether this request replayed an earlier one
/// with the same key, in which case nothing was accepted again.
#[derive(Debug)]
pub struct Accepted {
    pub message: Message,
    pub replayed: bool,
    /// What the caller's send rate policy has left, when the send was counted against it (texts:
    /// [`rates`]); the API shows it in the `RateLimit` headers.
    pub allowance: Option<Allowance>,
}

impl Accepted {
    fn new(message: Message, replayed: bool) -> Self {
        Accepted { message, replayed, allowance: None }
    }

    /// The send as counted against the send rate policy.
    fn counted(self, allowance: Allowance) -> Self {
        Accepted { allowance: Some(allowance), ..self }
    }
}

/// Why a key's earlier request gives no answer to replay: it is still running, or it was a
/// different request.
pub(crate) fn unanswered(prior: &Prior) -> ApiError {
    match prior {
        Prior::Mismatch => {
            ApiError::conflict("idempotency_key_reused", "this Idempotency-Key was used with a different request")
        }
        Prior::Done { .. } | Prior::InProgress { .. } => ApiError::conflict(
            "idempotency_key_in_progress",
            "a request with this Idempotency-Key is still being processed",
        )
        .with_retry_after(1),
    }
}

/// The stored form of an accepted outbound message, queued.
fn outbound(
    principal: &Principal,
    target: &Target,
    input: &SendInput,
    conversation_id: String,
    contact_id: Option<String>,
    now: i64,
    paced: bool,
) -> NewMessage {
    let to = match &target.destination {
        resolve::Destination::Direct { phone, .. } => Some(phone.to_string()),
        resolve::Destination::Group { .. } => None,
    };
    NewMessage {
        from: Some(target.line.e164.clone()),
        to,
        extras: input.extras.clone(),
        fallback: input.fallback_plan.clone(),
        send_at: input.send_at,
        org_id: principal.org_id.clone(),
        conversation_id,
        contact_id,
        line_id: target.line.id.clone(),
        direction: Direction::Outbound,
        channel: target.channel,
        kind: input.kind,
        body: input.body.clone(),
        payload: input.payload.clone(),
        status: if input.send_at.is_some() { MessageStatus::Scheduled } else { MessageStatus::Queued },
        agent_id: input.agent_id.as_ref().map(|id| id.to_string()),
        attachment: input.attachment.clone(),
        wait: db::messages::Wait {
            paced,
            expires_at: Some(
                input.send_at.unwrap_or(now) + input.validity_ms.unwrap_or(request::VALIDITY_DEFAULT_SECONDS * 1_000),
            ),
            pool_id: target.pool_id.clone(),
        },
    }
}

/// The answer of an earlier request with the same key, if there is one: lets a handler skip
/// expensive work (fetching a photo) for a replay.
pub async fn prior(
    state: &Sender,
    principal: &Principal,
    idempotency: Option<&Idempotency>,
) -> ApiResult<Option<Accepted>> {
    let Some(idem) = idempotency else { return Ok(None) };
    let found = db::idempotency::find_send(&state.db, &principal.org_id, &idem.message_key(), clock::now_ms()).await?;
    match found {
        None => Ok(None),
        Some((message, fingerprint)) if fingerprint == idem.fingerprint => {
            Ok(Some(Accepted::new(message.as_accepted(), true)))
        }
        Some(_) => Err(unanswered(&Prior::Mismatch)),
    }
}

/// The answer of an earlier request with the same key if there is one, else `error`: what a send
/// that is refused now answers, so that a replay answers what the first request got.
async fn prior_or(
    state: &Sender,
    principal: &Principal,
    idempotency: Option<&Idempotency>,
    error: ApiError,
) -> ApiResult<Accepted> {
    match prior(state, principal, idempotency).await? {
        Some(sent) => Ok(sent),
        None => Err(error),
    }
}

/// Whether an accepted message is watched for SMS fallback: a text going over iMessage whose
/// request asked for it, or did not say and the organisation's default is SMS. The line's SMS
/// is checked when the fallback is due, not here. The clock of `fallback_after_seconds` starts
/// at the message's time (`send_at` for a scheduled one).
async fn fallback_plan(
    state: &Sender,
    principal: &Principal,
    input: &SendInput,
    target: &Target,
    now: i64,
) -> ApiResult<db::messages::Fallback> {
    let direct = matches!(target.destination, resolve::Destination::Direct { .. });
    if input.kind != MessageKind::Text || target.channel != Channel::Imessage || !direct {
        return Ok(db::messages::Fallback::default());
    }
    let watch = match input.fallback {
        Some(wanted) => wanted,
        None if input.fallback_after_ms.is_some() => true,
        None => state.org_defaults.fallback_sms(&state.db, &principal.org_id).await?,
    };
    let start = input.send_at.unwrap_or(now);
    Ok(db::messages::Fallback {
        watch,
        at: input.fallback_after_ms.filter(|_| watch).map(|after| start + after),
        for_message: None,
    })
}

/// Cancels a scheduled message of the caller's organisation (and line, for a line-bound key).
pub async fn cancel(state: &Sender, caller: &Principal, id: &str) -> ApiResult<db::messages::Message> {
    caller.require(crate::domain::scope::Scope::Send)?;
    // A line-bound key sees only its line's messages: another line's is not found.
    db::messages::get(&state.db, &caller.org_id, id)
        .await?
        .filter(|m| caller.may_use_line(&m.line_id))
        .ok_or_else(|| ApiError::not_found("message"))?;
    let outcome = state.db.transaction(async |tx| db::moves::cancel_scheduled(tx, &caller.org_id, id).await).await?;
    match outcome {
        db::moves::Canceled::Now(message) => Ok(message),
        db::moves::Canceled::TooLate(message) => {
            if message.status == MessageStatus::Canceled {
                return Ok(message);
            }
            Err(ApiError::conflict(
                "message_not_cancelable",
                format!("the message is {}: only a scheduled message can be canceled, before its time", message.status),
            )
            .with("status", message.status.as_str()))
        }
        db::moves::Canceled::NotFound => Err(ApiError::not_found("message")),
    }
}

/// The furthest ahead a send can be scheduled.
pub const SCHEDULE_MAX_MS: i64 = 90 * 86_400_000;

/// A `send_at` from `MSGLINE_SCHEDULE_MIN_SECONDS` to 90 days ahead; else 400 naming `send_at`.
fn check_send_at(config: &crate::config::Config, send_at: i64, now: i64) -> ApiResult<()> {
    let min = config.schedule_min_seconds as i64 * 1_000;
    if send_at < now + min {
        return Err(ApiError::invalid(
            "send_at",
            format!("send_at must be at least {} s ahead (MSGLINE_SCHEDULE_MIN_SECONDS)", config.schedule_min_seconds),
        ));
    }
    if send_at > now + SCHEDULE_MAX_MS {
        return Err(ApiError::invalid("send_at", "send_at must be at most 90 days ahead"));
    }
    Ok(())
}

/// Accepts a message for delivery, or answers the earlier request with the same key.
pub async fn submit(
    state: &Sender,
    principal: &Principal,
    input: SendInput,
    idempotency: Option<Idempotency>,
) -> ApiResult<Accepted> {
    let now = clock::now_ms();
    // A key's earlier send is not looked for first: the message's unique key refuses a second
    // one, and the refusal looks. A request that would be refused now looks before answering,
    // so that a replay answers what the first request got whatever has changed since: a
    // scheduled send replayed once its `send_at` is nearer than the minimum among them.
    if let Some(send_at) = input.send_at
        && let Err(error) = check_send_at(&state.config, send_at, now)
    {
        return prior_or(state, principal, idempotency.as_ref(), error).await;
    }
    let mut target = match resolve::resolve(state, principal, &input).await {
        Ok(target) => target,
        Err(error) => return prior_or(state, principal, idempotency.as_ref(), error).await,
    };
    if let Err(error) = extras::check(state, principal, &input, &target).await {
        return prior_or(state, principal, idempotency.as_ref(), error).await;
    }
    let ttl_ms = state.config.idempotency_ttl_hours as i64 * 3_600_000;
    let mut input = input;
    input.fallback_plan = fallback_plan(state, principal, &input, &target, now).await?;

    // One unit of work that reads nothing back, shared with other sends in one commit. Its
    // contact and conversation were found while resolving (from the cache or one read) and, if
    // missing, are created in the same unit. If another request created them first, or holds
    // the key, the unit breaks a unique constraint: the answer is then that request's, or the
    // unit is staged again from what it left.
    let mut retried = false;
    // A free dispatcher slot lets this request call the line itself once its message is
    // committed: the message is written claimed, and no claim has to find it.
    // A scheduled message is the dispatcher's at its time, never its request's.
    // A message that waits for its line's pacer is never called by its request either.
    let paced = !target.line.sends_directly();
    let direct = input.send_at.is_none() && !paced;
    let slot = if direct { state.dispatch.try_take() } else { None };
    let claim = slot.as_ref().map(|_| {
        db::outbox::Claim::new(state.db.backend(), now + crate::dispatch::lease_ms(state.config.bridge_timeout_ms))
    });
    loop {
        let mut batch = db::Batch::new();
        let (conversation_id, contact_id) = target.stage_thread(&state.db, &mut batch, &principal.org_id, now).await?;
        let new = outbound(principal, &target, &input, conversation_id, contact_id, now, paced);
        let key = idempotency.as_ref().map(|idem| db::idempotency::SendKey {
            key: idem.message_key(),
            fingerprint: idem.fingerprint.clone(),
            expires_at: now + ttl_ms,
        });
        if let Some(key) = key.as_ref().filter(|_| retried) {
            // No live send holds the key (the refusal looked): one past its time may.
            db::idempotency::stage_take_expired(&mut batch, &principal.org_id, &key.key, now);
        }
        let message = db::messages::stage_insert_at(&mut batch, new, now, key.as_ref(), claim);
        if let Some(poll) = &input.poll {
            db::polls::stage_insert(
                &mut batch,
                &db::polls::Poll {
                    id: poll.id.clone(),
                    org_id: principal.org_id.clone(),
                    message_id: message.id.clone(),
                    conversation_id: message.conversation_id.clone(),
                    line_id: message.line_id.clone(),
                    question: poll.question.clone(),
                    options: poll.options.clone(),
                    created_at: message.created_at,
                },
            );
        }
        for attachment in &input.attachments {
            let attachment = db::attachments::Attachment { message_id: message.id.clone(), ..attachment.clone() };
            db::attachments::stage_insert(&mut batch, &attachment);
        }
        if let Some(reaction) = &input.reaction {
            db::reactions::stage_insert(
                &mut batch,
                &db::reactions::NewReaction {
                    message_id: message.id.clone(),
                    org_id: principal.org_id.clone(),
                    target_id: Some(reaction.target_id.clone()),
                    tapback: reaction.tapback,
                    removed: reaction.removed,
                    created_at: message.created_at,
                },
            );
        }
        target.stage_checks(&mut batch, &principal.org_id);
        let commit = tracing::info_span!(target: crate::trace::TARGET, "send.commit",
            msgline.message_id = %message.id, msgline.line_id = %message.line_id);
        match state.db.commit_or_refuse(batch).instrument(commit).await {
            // The recipient opted out: the answer a replay of an earlier send gets, else 409.
            Ok(Some(phone)) => {
                return prior_or(state, principal, idempotency.as_ref(), resolve::opted_out(&phone)).await;
            }
            Ok(None) => {
                // The span this send was accepted in is where its later spans hang.
                state.traces.begin(&message.id);
                state.threads.remember(&principal.org_id, &target, &message);
                crate::metrics::message_accepted(message.channel.as_str(), message.kind.as_str());
                match slot {
                    Some(slot) => {
                        let (kind, phone) = match &target.destination {
                            resolve::Destination::Direct { phone, .. } => {
                                (ConversationKind::Direct, Some(phone.as_str().to_string()))
                            }
                            resolve::Destination::Group { .. } => (ConversationKind::Group, None),
                        };
                        state.dispatch.hand_over(slot, (message.clone(), kind, phone));
                    }
                    None if direct => state.dispatch.wake(),
                    None if input.send_at.is_none() => state.dispatch.wake_pacer(&target.line.id),
                    None => {}
                }
                return Ok(Accepted::new(message, false));
            }
            Err(error) if db::is_unique_violation(&error) => {
                if let Some(sent) = prior(state, principal, idempotency.as_ref()).await? {
                    return Ok(sent);
                }
                if retried {
                    return Err(error.into());
                }
                retried = true;
                target.read_again();
            }
            Err(error) => return Err(error.into()),
        }
    }
}
