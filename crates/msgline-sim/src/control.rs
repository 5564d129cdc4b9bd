//! The simulator's control API (`/control/...`): what a test or a person does on the simulated
//! device (inbound messages, tapbacks, typing, poll taps, group changes, edits and unsends) and
//! what it can look at
//! (the sent log, counters) or change (the answering mode).

use super::*;

/// The control routes, beside the bridge protocol's.
pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/control/inbound", post(control_inbound))
        .route("/control/vote", post(control_vote))
        .route("/control/group", post(control_group))
        .route("/control/reaction", post(control_reaction))
        .route("/control/edit", post(control_edit))
        .route("/control/unsend", post(control_unsend))
        .route("/control/typing", get(control_typing_shown).post(control_typing))
        .route("/control/sent", get(control_sent))
        .route("/control/mode", post(control_mode))
        .route("/control/stats", get(control_stats))
}

#[derive(Debug, Deserialize)]
struct InboundControl {
    from: String,
    #[serde(default)]
    body: String,
    #[serde(default)]
    chat: Option<String>,
    #[serde(default)]
    channel: Option<String>,
    /// Files that come with the message: `{"base64", "filename"?}` each.
    #[serde(default)]
    media: Vec<InboundMedia>,
    /// The message this one answers (an inline reply): msgline's id of it, or the line's.
    #[serde(default)]
    reply_to: Option<String>,
    /// The effect and subject it was sent with (msgline's effect names).
    #[serde(default)]
    effect: Option<String>,
    #[serde(default)]
    subject: Option<String>,
}

#[derive(Debug, Deserialize)]
struct InboundMedia {
    base64: String,
    #[serde(default)]
    filename: Option<String>,
}

async fn control_inbound(State(sim): State<Shared>, Json(request): Json<InboundControl>) -> Response {
    let channel = request
        .channel
        .unwrap_or_else(|| if sim.sms_only.contains(&request.from) { "sms".into() } else { "imessage".into() });
    // The line's own id for the message, which a reaction to it names.
    let message_id = format!("sim-in-{}", sim.sequence.fetch_add(1, Ordering::Relaxed));
    sim.inbound_ids.lock().expect("inbound lock").insert(message_id.clone());
    // The files are served by the line until msgline fetches them (`GET /v1/media/{id}`).
    let mut attachments = Vec::new();
    for file in request.media {
        use base64::Engine;
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(file.base64.as_bytes()) else {
            return (StatusCode::BAD_REQUEST, Json(json!({"error": "media[].base64 is not base64"}))).into_response();
        };
        let id = format!("sim-file-{}", sim.sequence.fetch_add(1, Ordering::Relaxed));
        sim.files.lock().expect("files lock").insert(id.clone(), bytes);
        attachments.push(InboundFile {
            url: format!("http://{}/v1/media/{id}", sim.config.listen),
            filename: file.filename,
            stored: None,
        });
    }
    let event = sim.event(BridgeEventPayload::Inbound {
        from: request.from,
        body: request.body,
        chat: request.chat,
        channel,
        message_id: Some(message_id),
        attachments,
        reply_to: request.reply_to,
        effect: request.effect,
        subject: request.subject,
    });
    report_now(&sim, event).await
}

#[derive(Debug, Deserialize)]
struct ReactionControl {
    from: String,
    /// msgline's `msg_` id of a message the line sent, or the line's id of an inbound message.
    target: String,
    reaction: String,
    #[serde(default)]
    remove: bool,
    #[serde(default)]
    chat: Option<String>,
}

/// Someone reacted to a message with a tapback (or took one back).
async fn control_reaction(State(sim): State<Shared>, Json(request): Json<ReactionControl>) -> Response {
    let message_id = format!("sim-in-{}", sim.sequence.fetch_add(1, Ordering::Relaxed));
    let event = sim.event(BridgeEventPayload::Reaction {
        from: request.from,
        target: request.target,
        reaction: request.reaction,
        removed: request.remove,
        chat: request.chat,
        message_id: Some(message_id),
    });
    report_now(&sim, event).await
}

#[derive(Debug, Deserialize)]
struct ChangeControl {
    /// msgline's `msg_` id of the message (the line's own id of an inbound message works too).
    #[serde(default)]
    message_id: Option<String>,
    /// For an edit: the message's text now.
    #[serde(default)]
    body: Option<String>,
}

/// A 400 naming what the control call lacks.
fn bad_control(error: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({"error": error}))).into_response()
}

/// The message a change names, if it names one.
fn named_message(request: &ChangeControl) -> Option<String> {
    request.message_id.as_deref().map(str::trim).filter(|id| !id.is_empty()).map(str::to_string)
}

const MESSAGE_ID_REQUIRED: &str = "message_id is required: msgline's id of the message";

/// The person who sent a message edited it: a `message.edited` callback.
async fn control_edit(State(sim): State<Shared>, Json(request): Json<ChangeControl>) -> Response {
    let Some(message_id) = named_message(&request) else { return bad_control(MESSAGE_ID_REQUIRED) };
    let Some(body) = request.body.filter(|body| !body.trim().is_empty()) else {
        return bad_control("body is required: the message's text after the edit");
    };
    report_now(&sim, sim.event(BridgeEventPayload::MessageEdited { message_id, body })).await
}

/// The person who sent a message unsent it: a `message.unsent` callback.
async fn control_unsend(State(sim): State<Shared>, Json(request): Json<ChangeControl>) -> Response {
    let Some(message_id) = named_message(&request) else { return bad_control(MESSAGE_ID_REQUIRED) };
    report_now(&sim, sim.event(BridgeEventPayload::MessageUnsent { message_id })).await
}

#[derive(Debug, Deserialize)]
struct TypingControl {
    from: String,
    #[serde(default)]
    chat: Option<String>,
    #[serde(default)]
    typing: Option<bool>,
}

/// Someone started (or, with `"typing": false`, stopped) typing to the line.
async fn control_typing(State(sim): State<Shared>, Json(request): Json<TypingControl>) -> Response {
    let event = sim.event(BridgeEventPayload::Typing {
        from: request.from,
        chat: request.chat,
        typing: request.typing.unwrap_or(true),
    });
    report_now(&sim, event).await
}

/// The typing indicators the line shows now: `{"typing": [{"to" or "chat"}]}`.
async fn control_typing_shown(State(sim): State<Shared>) -> Json<Value> {
    let now = std::time::Instant::now();
    let mut shown = sim.typing.lock().expect("typing lock");
    shown.retain(|_, until| *until > now);
    let list: Vec<Value> = shown
        .keys()
        .map(|key| if key.starts_with("conv_") { json!({"chat": key}) } else { json!({"to": [key]}) })
        .collect();
    Json(json!({"typing": list}))
}

#[derive(Debug, Deserialize)]
struct VoteControl {
    from: String,
    poll_message_id: String,
    option_index: i64,
}

async fn control_vote(State(sim): State<Shared>, Json(request): Json<VoteControl>) -> Response {
    let event = sim.event(BridgeEventPayload::PollVote {
        from: request.from,
        poll_message_id: request.poll_message_id,
        option_index: request.option_index,
    });
    report_now(&sim, event).await
}

#[derive(Debug, Deserialize)]
struct GroupControl {
    /// msgline's id of the group.
    chat: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    participants: Option<Vec<String>>,
}

/// Someone changed a group on their phone: the line reports its name and participants.
async fn control_group(State(sim): State<Shared>, Json(request): Json<GroupControl>) -> Response {
    let event = sim.event(BridgeEventPayload::GroupUpdated {
        group_id: request.chat,
        name: request.name,
        participants: request.participants,
    });
    report_now(&sim, event).await
}

/// Delivers one callback before answering, so a test knows the service has it.
async fn report_now(sim: &Shared, event: BridgeEvent) -> Response {
    let id = event.id.clone();
    match post_callback(sim, &[event]).await {
        Ok(status) => (StatusCode::OK, Json(json!({"event_id": id, "callback_status": status}))).into_response(),
        Err(error) => (StatusCode::BAD_GATEWAY, Json(json!({"event_id": id, "error": error}))).into_response(),
    }
}

async fn control_sent(State(sim): State<Shared>) -> Json<Value> {
    Json(json!(*sim.sent.lock().expect("sent lock")))
}

/// Counters for tests: how much was sent, and how often an id came again.
async fn control_stats(State(sim): State<Shared>) -> Json<Value> {
    Json(json!({
        "sent": sim.sent.lock().expect("sent lock").len(),
        "repeated_ids": sim.repeated.load(Ordering::Relaxed),
        "callback_retries": sim.callback_retries.load(Ordering::Relaxed),
        "lookups": sim.lookups.load(Ordering::Relaxed),
        "reachability_asks": sim.reachability_asks.load(Ordering::Relaxed),
        "reachability_calls": sim.reachability_calls.load(Ordering::Relaxed),
        "batches": sim.batches.load(Ordering::Relaxed),
        "batched": sim.batched.load(Ordering::Relaxed),
    }))
}

#[derive(Debug, Deserialize)]
struct ModeControl {
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default)]
    groups: Option<bool>,
    /// A status for lookups to answer (`""` answers the truth again).
    #[serde(default)]
    lookup_status: Option<String>,
    /// `"reject"`: every iMessage send is refused (SMS still works); `""` takes it back.
    #[serde(default)]
    imessage: Option<String>,
    /// The most sends a batch call may carry from now on (0: the batch route answers 404, as a
    /// bridge that does not speak batches would, whatever its capabilities said before).
    #[serde(default)]
    batch: Option<u16>,
    /// How long reachability calls take to answer from now on, in ms.
    #[serde(default)]
    ask_ms: Option<u64>,
    /// `true`: the device's account is blocked (every send refused with `line_blocked`).
    #[serde(default)]
    blocked: Option<bool>,
    /// `true`: the device is away (every call from msgline answered 503, probes included).
    #[serde(default)]
    offline: Option<bool>,
    /// `false`: the device has no replies, edits, unsend or effects (its capabilities say so, and
    /// edits and unsends are refused).
    #[serde(default)]
    message_actions: Option<bool>,
}

/// Answers 503 to every call from msgline while the device is `offline` (`/control/mode`).
pub(crate) async fn offline_gate(
    State(sim): State<Shared>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if sim.offline.load(Ordering::Relaxed) {
        let body = Json(json!({"error": "offline", "message": "the simulated device is offline"}));
        return (axum::http::StatusCode::SERVICE_UNAVAILABLE, body).into_response();
    }
    next.run(request).await
}

async fn control_mode(State(sim): State<Shared>, Json(request): Json<ModeControl>) -> Json<Value> {
    if let Some(mode) = request.mode {
        *sim.mode.lock().expect("mode lock") = mode;
    }
    if let Some(groups) = request.groups {
        *sim.groups.lock().expect("groups lock") = groups;
    }
    if let Some(status) = request.lookup_status {
        *sim.lookup_answer.lock().expect("lookup lock") = Some(status).filter(|s| !s.is_empty());
    }
    if let Some(imessage) = request.imessage {
        sim.imessage_rejected.store(imessage == "reject", Ordering::Relaxed);
    }
    if let Some(batch) = request.batch {
        sim.batch.store(batch, Ordering::Relaxed);
    }
    if let Some(ms) = request.ask_ms {
        sim.ask_ms.store(ms, Ordering::Relaxed);
    }
    if let Some(blocked) = request.blocked {
        sim.blocked.store(blocked, Ordering::Relaxed);
    }
    if let Some(offline) = request.offline {
        sim.offline.store(offline, Ordering::Relaxed);
    }
    if let Some(actions) = request.message_actions {
        sim.message_actions.store(actions, Ordering::Relaxed);
    }
    Json(json!({
        "batch": sim.batch.load(Ordering::Relaxed),
        "ask_ms": sim.ask_ms.load(Ordering::Relaxed),
        "mode": *sim.mode.lock().expect("mode lock"),
        "groups": *sim.groups.lock().expect("groups lock"),
        "lookup_status": *sim.lookup_answer.lock().expect("lookup lock"),
        "imessage": if sim.imessage_rejected.load(Ordering::Relaxed) { "reject" } else { "" },
        "blocked": sim.blocked.load(Ordering::Relaxed),
        "offline": sim.offline.load(Ordering::Relaxed),
        "message_actions": sim.message_actions.load(Ordering::Relaxed),
    }))
}
