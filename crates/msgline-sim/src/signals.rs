//! Typing indicators and read receipts sent from the simulated line.

use super::*;

/// The key of a conversation on the line: a group's id, or the number of a direct one.
pub(super) fn conversation_key(to: &[String], chat: Option<&str>) -> String {
    chat.map(str::to_string).or_else(|| to.first().cloned()).unwrap_or_default()
}

/// Records a typing indicator or a read receipt in the sent log.
fn signal_record(sim: &Sim, kind: &str, request: &ConversationSignal) -> Sent {
    Sent {
        id: format!("sim-{kind}-{}", sim.sequence.fetch_add(1, Ordering::Relaxed)),
        to: request.to.clone(),
        chat: request.chat.clone(),
        channel: "imessage".into(),
        kind: kind.into(),
        at: clock::rfc3339(clock::now_ms()),
        ..Sent::default()
    }
}

/// Whether the request names a conversation the line can show an indicator in: a group it has,
/// or a number reachable over iMessage.
fn signal_refusal(sim: &Sim, request: &ConversationSignal) -> Option<&'static str> {
    match (&request.chat, request.to.as_slice()) {
        (Some(chat), []) if sim.known.lock().expect("known lock").contains_key(chat) => None,
        (Some(_), []) => Some("this device has no such group"),
        (None, [to]) if sim.sms_only.contains(to) => Some("the recipient is not reachable over iMessage"),
        (None, [_]) => None,
        _ => Some("name one number in to, or a chat"),
    }
}

/// The answer to a typing indicator or read receipt the line does not take: 401 without the
/// line's token, 422 for a conversation it cannot signal in.
fn refused(sim: &Sim, headers: &HeaderMap, request: &ConversationSignal) -> Option<Response> {
    if !sim.authorized(headers) {
        return Some(unauthorized());
    }
    let reason = signal_refusal(sim, request)?;
    let answer = SendAnswer { status: "rejected".into(), reason: Some(reason.into()), error: None };
    Some((StatusCode::UNPROCESSABLE_ENTITY, Json(answer)).into_response())
}

/// Shows (or, with `"typing": false`, hides) the typing indicator; it hides by itself after a few
/// seconds or when a message is sent into the conversation.
pub(super) async fn typing(
    State(sim): State<Shared>,
    headers: HeaderMap,
    Json(request): Json<ConversationSignal>,
) -> Response {
    if let Some(refused) = refused(&sim, &headers, &request) {
        return refused;
    }
    let key = conversation_key(&request.to, request.chat.as_deref());
    if request.typing.unwrap_or(true) {
        sim.typing.lock().expect("typing lock").insert(key, std::time::Instant::now() + TYPING_SHOWS);
        let record = signal_record(&sim, "typing", &request);
        sim.sent.lock().expect("sent lock").push(record);
    } else {
        sim.typing.lock().expect("typing lock").remove(&key);
    }
    (StatusCode::OK, Json(SendAnswer { status: "accepted".into(), reason: None, error: None })).into_response()
}

/// Sends a read receipt for the conversation.
pub(super) async fn read(
    State(sim): State<Shared>,
    headers: HeaderMap,
    Json(request): Json<ConversationSignal>,
) -> Response {
    if let Some(refused) = refused(&sim, &headers, &request) {
        return refused;
    }
    let record = signal_record(&sim, "read", &request);
    sim.sent.lock().expect("sent lock").push(record);
    (StatusCode::OK, Json(SendAnswer { status: "accepted".into(), reason: None, error: None })).into_response()
}
