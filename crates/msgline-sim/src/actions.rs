//! Edits and unsends of messages the simulated line sent (`POST /v1/messages/{id}/edit` and
//! `/unsend`), each applied at most once per action id, and what became of one
//! (`GET /v1/messages/{id}/actions/{action_id}`).

use msgline::bridge_protocol::{ActionRequest, LINE_BLOCKED};

use super::*;

/// Sent-log kinds that are not messages, so cannot be edited or unsent.
const NOT_MESSAGES: [&str; 5] = ["group_change", "typing", "read", "edit", "unsend"];

/// Edits a message the line sent: `body` is its text now.
pub(super) async fn edit(
    State(sim): State<Shared>,
    headers: HeaderMap,
    Path(message_id): Path<String>,
    Json(request): Json<ActionRequest>,
) -> Response {
    act(sim, &headers, "edit", &message_id, request).await
}

/// Unsends a message the line sent: it no longer shows in the conversation.
pub(super) async fn unsend(
    State(sim): State<Shared>,
    headers: HeaderMap,
    Path(message_id): Path<String>,
    Json(request): Json<ActionRequest>,
) -> Response {
    act(sim, &headers, "unsend", &message_id, request).await
}

/// What became of an edit or unsend: `applied` or `failed`, or 404 for one never received.
pub(super) async fn action_lookup(
    State(sim): State<Shared>,
    headers: HeaderMap,
    Path((_message_id, action_id)): Path<(String, String)>,
) -> Response {
    lookup(State(sim), headers, Path(action_id)).await
}

/// Answers an action as a send is answered: at once when decided, never in time in `timeout`
/// mode (the action is applied all the same, and the lookup says so).
async fn act(sim: Shared, headers: &HeaderMap, verb: &str, message_id: &str, request: ActionRequest) -> Response {
    if !sim.authorized(headers) {
        return unauthorized();
    }
    if let Some(problem) = malformed(verb, message_id, &request) {
        let answer = SendAnswer { status: "rejected".into(), reason: Some(problem.into()), error: None };
        return (StatusCode::BAD_REQUEST, Json(answer)).into_response();
    }
    match decide(&sim, verb, message_id, &request) {
        Some((status, answer)) => {
            tokio::time::sleep(sim.config.answer_delay).await;
            (status, Json(answer)).into_response()
        }
        None => never_answer().await,
    }
}

/// What makes a call unusable whatever the line's state (answered 400, and not remembered).
fn malformed(verb: &str, message_id: &str, request: &ActionRequest) -> Option<&'static str> {
    if request.id.trim().is_empty() {
        Some("the action has no id")
    } else if request.message_id != message_id {
        Some("the body's message_id is not the message of the path")
    } else if verb == "edit" && request.body.as_deref().is_none_or(|body| body.trim().is_empty()) {
        Some("an edit carries the message's new text in body")
    } else if verb == "unsend" && request.body.is_some() {
        Some("an unsend carries no body")
    } else {
        None
    }
}

/// Applies or refuses one action (the first answer again for an action id the line already
/// has); `None` when the line applies it but does not answer in time.
fn decide(sim: &Shared, verb: &str, message_id: &str, request: &ActionRequest) -> Option<(StatusCode, SendAnswer)> {
    if let Some(known) = sim.known.lock().expect("known lock").get(&request.id) {
        sim.repeated.fetch_add(1, Ordering::Relaxed);
        return Some(known.answer.clone());
    }
    if sim.blocked.load(Ordering::Relaxed) {
        // Nothing was done, so nothing is remembered: the same action is taken once unblocked.
        let reason = Some("the simulated device's account is blocked".to_string());
        let answer = SendAnswer { status: "rejected".into(), reason, error: Some(LINE_BLOCKED.into()) };
        return Some((StatusCode::UNPROCESSABLE_ENTITY, answer));
    }
    let mode = sim.draw_mode();
    let (original, unsent) = {
        let sent = sim.sent.lock().expect("sent lock");
        let original = sent.iter().find(|s| s.id == message_id && !NOT_MESSAGES.contains(&s.kind.as_str())).cloned();
        let unsent = sent.iter().any(|s| s.kind == "unsend" && s.target.as_deref() == Some(message_id));
        (original, unsent)
    };
    let refusal = if !sim.message_actions.load(Ordering::Relaxed) {
        Some("this device cannot edit or unsend messages".to_string())
    } else {
        match &original {
            None => Some(format!("the line has no such message to {verb}")),
            Some(message) if message.channel != "imessage" => {
                Some("the message went over SMS, and only an iMessage can be edited or unsent".to_string())
            }
            Some(_) if unsent => Some("the message was unsent".to_string()),
            Some(_) if mode == Mode::Reject => Some(format!("the simulated line refused the {verb}")),
            Some(_) => None,
        }
    };
    if let Some(reason) = refusal {
        let answer = SendAnswer { status: "rejected".into(), reason: Some(reason.clone()), error: None };
        let answer = (StatusCode::UNPROCESSABLE_ENTITY, answer);
        sim.remember(
            &request.id,
            Known { status: "failed".into(), reason: Some(reason), answer: answer.clone() },
            None,
        );
        return Some(answer);
    }
    let original = original.expect("a message to act on");
    let record = Sent {
        id: request.id.clone(),
        to: original.to,
        chat: original.chat,
        channel: original.channel,
        kind: verb.into(),
        body: request.body.clone().unwrap_or_default(),
        target: Some(message_id.to_string()),
        at: clock::rfc3339(clock::now_ms()),
        ..Sent::default()
    };
    let answer = (StatusCode::OK, SendAnswer { status: "accepted".into(), reason: None, error: None });
    sim.remember(&request.id, Known { status: "applied".into(), reason: None, answer: answer.clone() }, Some(record));
    (mode != Mode::Timeout).then_some(answer)
}
