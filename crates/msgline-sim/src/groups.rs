//! Group chats on the simulated line: creation and changes, each applied once per id.

use super::*;

pub(super) async fn create_group(
    State(sim): State<Shared>,
    headers: HeaderMap,
    Json(request): Json<GroupRequest>,
) -> Response {
    if !sim.authorized(&headers) {
        return unauthorized();
    }
    let groups = *sim.groups.lock().expect("groups lock");
    let refusal = if !groups {
        Some("this device has no native group support")
    } else if request.participants.iter().any(|p| sim.sms_only.contains(p)) {
        Some("a participant is not reachable over iMessage")
    } else {
        None
    };
    let record = Sent {
        id: request.message_id.clone(),
        to: request.participants.clone(),
        chat: Some(request.id.clone()),
        channel: "imessage".into(),
        kind: "text".into(),
        body: request.body.clone(),
        name: request.name.clone(),
        at: clock::rfc3339(clock::now_ms()),
        ..Sent::default()
    };
    // The group and its opening message share one fate on the line.
    let answer = sim.accept_or_refuse(&request.message_id, refusal, record);
    let group_status = match &answer {
        Some((_, a)) if a.status == "rejected" => {
            Known { status: "failed".into(), reason: a.reason.clone(), answer: answer.clone().expect("some") }
        }
        _ => Known {
            status: "created".into(),
            reason: None,
            answer: (StatusCode::ACCEPTED, SendAnswer { status: "accepted".into(), reason: None, error: None }),
        },
    };
    let new_group = !sim.known.lock().expect("known lock").contains_key(&request.id);
    if new_group {
        sim.remember(&request.id, group_status, None);
    }
    match answer {
        Some((status, answer)) => (status, Json(answer)).into_response(),
        None => never_answer().await,
    }
}

/// A change to a group the line created: applied at once (or refused), never twice for one id.
/// In `timeout` mode it is applied but the call is never answered in time.
pub(super) async fn change_group(
    State(sim): State<Shared>,
    headers: HeaderMap,
    Path(group_id): Path<String>,
    Json(request): Json<GroupChangeRequest>,
) -> Response {
    if !sim.authorized(&headers) {
        return unauthorized();
    }
    if let Some(known) = sim.known.lock().expect("known lock").get(&request.id) {
        sim.repeated.fetch_add(1, Ordering::Relaxed);
        let (status, answer) = known.answer.clone();
        return (status, Json(answer)).into_response();
    }
    let mode = sim.draw_mode();
    let refusal = if !*sim.groups.lock().expect("groups lock") {
        Some("this device has no native group support".to_string())
    } else if !sim.known.lock().expect("known lock").contains_key(&group_id) {
        Some("this device has no such group".to_string())
    } else if request.add.iter().any(|p| sim.sms_only.contains(p)) {
        Some("a participant is not reachable over iMessage".to_string())
    } else if mode == Mode::Reject {
        Some("the simulated line refused the change".to_string())
    } else {
        None
    };
    if let Some(reason) = refusal {
        let answer = (
            StatusCode::UNPROCESSABLE_ENTITY,
            SendAnswer { status: "rejected".into(), reason: Some(reason), error: None },
        );
        let known = Known { status: "failed".into(), reason: answer.1.reason.clone(), answer: answer.clone() };
        sim.remember(&request.id, known, None);
        return (answer.0, Json(answer.1)).into_response();
    }
    let record = Sent {
        id: request.id.clone(),
        to: request.add.clone(),
        chat: Some(group_id),
        channel: "imessage".into(),
        kind: "group_change".into(),
        name: request.name.clone(),
        remove: request.remove.clone(),
        leave: request.leave,
        at: clock::rfc3339(clock::now_ms()),
        ..Sent::default()
    };
    let answer = (StatusCode::ACCEPTED, SendAnswer { status: "accepted".into(), reason: None, error: None });
    sim.remember(&request.id, Known { status: "applied".into(), reason: None, answer: answer.clone() }, Some(record));
    if mode == Mode::Timeout {
        return never_answer().await;
    }
    tokio::time::sleep(sim.config.answer_delay).await;
    (answer.0, Json(answer.1)).into_response()
}

pub(super) async fn change_lookup(
    State(sim): State<Shared>,
    headers: HeaderMap,
    Path((_group_id, change_id)): Path<(String, String)>,
) -> Response {
    lookup(State(sim), headers, Path(change_id)).await
}
