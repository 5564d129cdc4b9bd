//! The shapes of the answers, for the OpenAPI document. The handlers build these bodies as JSON;
//! these types describe them field by field, and `scripts/schemathesis` checks every answer the
//! server gives against them on each CI run, so a field added to a view without its line here
//! (or a type that changed) fails the build's checks.

#![allow(dead_code)]

use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::lifecycle::ConversationKind;

/// Every error: a stable code, a sentence, and the field at fault where there is one.
#[derive(ToSchema)]
pub struct Error {
    /// The contract's code: `invalid_request`, `unauthorized`, `missing <scope> scope`,
    /// `not_found`, `rate_limited`, `idempotency_key_reused`, ...
    error: String,
    message: Option<String>,
    /// The request field at fault (a JSON field, `Idempotency-Key`, `limit`, `cursor`).
    field: Option<String>,
    /// Seconds to wait, on `429 rate_limited`.
    retry_after: Option<i64>,
}

pub use super::message_schema::Message;

/// The answer to a send: the message, and whether this is a replay of an earlier request.
#[derive(ToSchema)]
pub struct Sent {
    message: Message,
    /// `true` when an `Idempotency-Key` replayed an earlier answer (status 200).
    duplicate: bool,
    delivery_unknown: bool,
    /// On `POST /contact-cards`.
    #[schema(required = false, value_type = Object)]
    contact_card: Value,
    /// On `POST /polls`: `{id, question, options}`.
    #[schema(required = false, value_type = Object)]
    poll: Value,
}

/// A poll with its tally.
#[derive(ToSchema)]
pub struct Poll {
    /// `poll_…`
    id: String,
    question: String,
    options: Vec<String>,
    message_id: String,
    conversation_id: String,
    line_id: String,
    #[schema(format = DateTime)]
    created_at: String,
    tally: Vec<TallyEntry>,
    total_votes: i64,
    /// When the poll stopped taking votes (its window ended, or a newer poll in its
    /// conversation was sent); `null` while it is open.
    #[schema(format = DateTime)]
    closed_at: Option<String>,
}

#[derive(ToSchema)]
pub struct TallyEntry {
    index: i64,
    option: String,
    votes: i64,
}

/// An iMessage group chat (a conversation of kind `group`).
#[derive(ToSchema)]
pub struct Group {
    /// `conv_…`, usable as `conversation_id`.
    id: String,
    /// `creating`, `created`, `unknown`, `failed`, or `left` once the line has left it.
    state: Option<String>,
    name: Option<String>,
    participants: Vec<String>,
    line_id: String,
    #[schema(format = DateTime)]
    created_at: String,
}

/// The answer to a group creation.
#[derive(ToSchema)]
pub struct GroupCreated {
    group: Group,
    message: Message,
    duplicate: bool,
    delivery_unknown: bool,
}

/// The line refused the group or could not be reached: the error, the failed group and its
/// opening message's id.
#[derive(ToSchema)]
pub struct GroupRefused {
    /// `line_rejected` or `line_unavailable`.
    error: String,
    message: Option<String>,
    group: Group,
    message_id: String,
}

/// A delivery attempt of an outbound message to its line.
#[derive(ToSchema)]
pub struct DeliveryAttempt {
    /// `att_…`
    id: String,
    message_id: String,
    line_id: String,
    attempt: i64,
    /// `accepted`, `rejected`, `timeout` or `error`.
    outcome: String,
    http_status: Option<i64>,
    latency_ms: i64,
    error: Option<String>,
    #[schema(format = DateTime)]
    created_at: String,
}

/// A phone line the caller may send from; never its bridge address or credentials.
#[derive(ToSchema)]
pub struct Line {
    /// `line_…`
    id: String,
    e164: String,
    /// `dedicated` or `shared`.
    kind: String,
    /// `msgline`, `bluebubbles` or `android-gateway`.
    bridge_kind: String,
    /// What the device reported; `null` until it has been reached.
    capabilities: Option<Capabilities>,
    /// `unknown` until the bridge has been reached, then `online` or `offline`.
    status: String,
    #[schema(format = DateTime)]
    checked_at: Option<String>,
    #[schema(format = DateTime)]
    created_at: String,
    /// The sending policy in force: the kind's defaults with what was set over them.
    policy: LinePolicy,
    /// `active`, `paused`, `flagged` or `offline`.
    health: String,
    /// Why the line is not active (`null` when it is).
    health_reason: Option<String>,
    /// An Android phone that calls msgline (`--dial-in`) rather than one msgline calls.
    dial_in: bool,
    /// A dial-in line's phone: when it last called msgline (`null`: never, or not dial-in).
    #[schema(format = DateTime)]
    device_last_seen_at: Option<String>,
    queue: LineQueue,
    usage: LineUsage,
}

/// A line's sending policy: each a limit, or `null` for none.
#[derive(ToSchema)]
pub struct LinePolicy {
    max_per_minute: Option<i64>,
    max_per_hour: Option<i64>,
    max_per_day: Option<i64>,
    max_new_contacts_per_hour: Option<i64>,
    max_new_contacts_per_day: Option<i64>,
    /// The calendar month, UTC.
    max_new_contacts_per_month: Option<i64>,
    max_per_recipient_per_minute: Option<i64>,
    min_gap_ms: Option<i64>,
    jitter_ms: Option<i64>,
}

/// What waits for a line.
#[derive(ToSchema)]
pub struct LineQueue {
    waiting: i64,
    /// When the next waiting message is expected to go (`null`: none waits, or the line is not
    /// active).
    #[schema(format = DateTime)]
    next_send_at: Option<String>,
}

/// A line's sends in its budget's windows (the last minute, hour and 24 hours; the month is the
/// calendar month, UTC).
#[derive(ToSchema)]
pub struct LineUsage {
    minute: i64,
    hour: i64,
    day: i64,
    new_contacts_hour: i64,
    new_contacts_day: i64,
    new_contacts_month: i64,
}

/// A sender pool.
#[derive(ToSchema)]
pub struct Pool {
    /// `pool_…`
    id: String,
    name: String,
    /// Its lines, in the order given.
    line_ids: Vec<String>,
    failover_after_seconds: i64,
    #[schema(format = DateTime)]
    created_at: String,
}

/// `PATCH /lines/{id}`: the limits to change (a number sets, `null` removes, a field left out
/// keeps its value).
#[derive(ToSchema)]
#[schema(example = json!({"policy": {"max_per_day": 500, "min_gap_ms": 3000, "max_new_contacts_per_month": null}}))]
pub struct LineUpdate {
    policy: LinePolicy,
}

#[derive(ToSchema)]
pub struct Capabilities {
    imessage: bool,
    sms: bool,
    groups: bool,
    polls: bool,
}

#[derive(ToSchema)]
pub struct Contact {
    /// `ct_…`
    id: String,
    phone: String,
    name: Option<String>,
    email: Option<String>,
    organization: Option<String>,
    note: Option<String>,
    /// Whether the number was last seen reachable over iMessage; `null` until a line is asked.
    imessage_reachable: Option<bool>,
    /// When the number opted out (texted STOP) of the organisation's messages on one of its
    /// lines: the earliest opt-out still in force; `null` when there is none.
    #[schema(format = DateTime)]
    opted_out_at: Option<String>,
    #[schema(format = DateTime)]
    created_at: String,
    #[schema(format = DateTime)]
    updated_at: String,
}

/// A change to a group after its creation.
#[derive(ToSchema)]
pub struct GroupChange {
    /// `gch_…`
    id: String,
    group_id: String,
    /// The new name (`""`: removed); `null` when the change left the name alone.
    name: Option<String>,
    add: Vec<String>,
    remove: Vec<String>,
    /// The line leaves the group.
    leave: bool,
    /// `pending`, `applied`, `failed` or `unknown`.
    status: String,
    error: Option<String>,
    #[schema(format = DateTime)]
    created_at: String,
    #[schema(format = DateTime)]
    updated_at: String,
}

/// A group change's answer: the group as it now is, and the change.
#[derive(ToSchema)]
pub struct GroupChanged {
    group: Group,
    change: GroupChange,
    duplicate: bool,
}

/// Whether a number can be reached from a line.
#[derive(ToSchema)]
pub struct Availability {
    /// E.164.
    to: String,
    /// Reachable over iMessage; `null` when the line's device could not be asked.
    imessage: Option<bool>,
    /// Whether the line sends SMS.
    sms: bool,
    /// When the iMessage answer was learned (it is remembered for
    /// `MSGLINE_AVAILABILITY_TTL_SECONDS`); `null` with `imessage: null`.
    #[schema(format = DateTime)]
    checked_at: Option<String>,
}

/// A number that opted out of the organisation's messages on a line.
#[derive(ToSchema)]
pub struct OptOut {
    /// `opt_…`
    id: String,
    line_id: String,
    phone: String,
    /// `ct_…`
    contact_id: String,
    /// The word it texted, in lower case: `stop`, `stopall`, `unsubscribe`, `cancel`, `end` or `quit`.
    keyword: String,
    #[schema(format = DateTime)]
    opted_out_at: String,
}

/// Which of the replies are msgline's defaults.
#[derive(ToSchema)]
pub struct ReplyDefaults {
    opt_out_reply: bool,
    opt_in_reply: bool,
    help_reply: bool,
}

/// The automatic replies in force.
#[derive(ToSchema)]
pub struct Settings {
    /// Sent when a number texts STOP (or a synonym).
    opt_out_reply: String,
    /// Sent when an opted-out number texts START (or a synonym).
    opt_in_reply: String,
    /// Sent when a number texts HELP or INFO.
    help_reply: String,
    /// The SMS fallback of sends that do not say: `sms` or `none`.
    fallback: String,
    /// Whether the organisation's events are kept for `GET /feed` and `GET /feed/stream`.
    event_feed: bool,
    defaults: ReplyDefaults,
}

#[derive(ToSchema)]
pub struct Conversation {
    /// `conv_…`
    id: String,
    kind: ConversationKind,
    line_id: String,
    /// The other party of a direct conversation.
    contact_id: Option<String>,
    /// A group's members.
    participants: Vec<String>,
    name: Option<String>,
    group_state: Option<String>,
    #[schema(format = DateTime)]
    created_at: String,
    #[schema(format = DateTime)]
    last_message_at: Option<String>,
}

/// An API key; `key`, the secret, only in the answer that created it.
#[derive(ToSchema)]
pub struct Key {
    /// `key_…`
    id: String,
    name: String,
    scopes: Vec<String>,
    line_id: Option<String>,
    /// The secret's last characters.
    key_hint: String,
    #[schema(format = DateTime)]
    created_at: String,
    #[schema(format = DateTime)]
    expires_at: Option<String>,
    #[schema(format = DateTime)]
    revoked_at: Option<String>,
    /// The secret (`mlk_…`): shown once, at creation or rotation.
    #[schema(required = false)]
    key: String,
    /// After a rotation: the key this one replaces, and when it stops working.
    #[schema(required = false)]
    previous_key_id: String,
    #[schema(required = false, format = DateTime)]
    previous_key_expires_at: String,
}

/// A webhook endpoint; `secret` only in the answers that create or rotate it.
#[derive(ToSchema)]
pub struct Webhook {
    /// `wh_…`
    id: String,
    url: String,
    description: Option<String>,
    events: Vec<String>,
    line_id: Option<String>,
    enabled: bool,
    disabled_reason: Option<String>,
    #[schema(format = DateTime)]
    disabled_at: Option<String>,
    /// While the previous secret still signs deliveries after a rotation.
    #[schema(format = DateTime)]
    previous_secret_expires_at: Option<String>,
    #[schema(format = DateTime)]
    created_at: String,
    #[schema(format = DateTime)]
    updated_at: String,
    /// The signing secret (`whsec_…`).
    #[schema(required = false)]
    secret: String,
}

/// One attempt to deliver an event to a webhook endpoint.
#[derive(ToSchema)]
pub struct WebhookAttempt {
    id: String,
    webhook_id: String,
    event_id: String,
    event_type: String,
    attempt: i64,
    status_code: Option<i64>,
    succeeded: bool,
    latency_ms: i64,
    response_body: Option<String>,
    error: Option<String>,
    #[schema(format = DateTime)]
    next_attempt_at: Option<String>,
    #[schema(format = DateTime)]
    created_at: String,
}

/// What a replay queued.
#[derive(ToSchema)]
pub struct Replayed {
    webhook_id: String,
    #[schema(format = DateTime)]
    since: String,
    queued: i64,
    enabled: bool,
}

/// A deleted resource.
#[derive(ToSchema)]
pub struct Deleted {
    id: String,
    deleted: bool,
}

/// A hosted agent.
#[derive(ToSchema)]
pub struct Agent {
    /// `agt_…`
    id: String,
    name: String,
    line_id: String,
    photo_url: Option<String>,
    has_photo: bool,
    instructions: String,
    tools: Vec<String>,
    model: Option<String>,
    enabled: bool,
    #[schema(format = DateTime)]
    created_at: String,
    #[schema(format = DateTime)]
    updated_at: String,
}

/// One run of an agent on an inbound message, with its tool calls.
#[derive(ToSchema)]
pub struct AgentRun {
    /// `run_…`
    id: String,
    agent_id: String,
    trigger_message_id: String,
    conversation_id: String,
    /// `pending`, `running`, `done`, `failed` or `skipped`.
    state: String,
    attempts: i64,
    outcome: Option<String>,
    error: Option<String>,
    #[schema(format = DateTime)]
    created_at: String,
    #[schema(format = DateTime)]
    finished_at: Option<String>,
    tool_calls: Vec<ToolCall>,
}

#[derive(ToSchema)]
pub struct ToolCall {
    seq: i64,
    call_id: String,
    tool: String,
    /// The arguments the model gave, as JSON.
    #[schema(value_type = Object)]
    arguments: Value,
    /// `ok` or `error`.
    status: String,
    #[schema(value_type = Object)]
    result: Value,
    message_id: Option<String>,
    #[schema(format = DateTime)]
    created_at: String,
}

/// What a bridge callback or device webhook applied.
#[derive(ToSchema)]
pub struct Applied {
    applied: i64,
    duplicates: i64,
}

#[derive(ToSchema)]
pub struct Health {
    /// `ok`, `ready` or `unavailable`.
    status: String,
    #[schema(required = false)]
    error: String,
}

/// An event, as webhooks and the feed give it.
#[derive(ToSchema)]
pub struct FeedEvent {
    /// `evt_…`
    id: String,
    /// Such as `messaging.message.delivered`.
    r#type: String,
    #[schema(format = DateTime)]
    created_at: String,
    /// What the event is about (a message's events: the message).
    #[schema(value_type = Object)]
    data: serde_json::Value,
}

/// A page of the feed, oldest first.
#[derive(ToSchema)]
pub struct FeedPage {
    data: Vec<FeedEvent>,
    /// The id of the last event given: pass back as `after` for what follows (also when `data`
    /// is empty and more may come). `null` only for an empty first page.
    next_cursor: Option<String>,
}

/// A page of a list, newest first.
#[derive(ToSchema)]
pub struct List<T: ToSchema> {
    data: Vec<T>,
    /// Pass back as `cursor` for the next page; `null` on the last.
    next_cursor: Option<String>,
}
