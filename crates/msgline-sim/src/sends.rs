//! Sends on the simulated line: one message a call (`POST /v1/messages`), or several
//! (`POST /v1/messages/batch`), each decided once per id.

use msgline::bridge_protocol::{BatchAnswer, BatchResult, SendBatch};

use super::*;
use crate::media::fetch_attachments;

pub(super) async fn send(State(sim): State<Shared>, headers: HeaderMap, Json(request): Json<SendRequest>) -> Response {
    if !sim.authorized(&headers) {
        return unauthorized();
    }
    match decide(&sim, &request).await {
        Some((status, answer)) => {
            tokio::time::sleep(sim.config.answer_delay).await;
            (status, Json(answer)).into_response()
        }
        None => never_answer().await,
    }
}

/// Several sends in one call: each decided as a call of its own would be, answered together. A
/// send the line takes without answering (`timeout` mode) holds the whole call.
pub(super) async fn send_batch(
    State(sim): State<Shared>,
    headers: HeaderMap,
    Json(batch): Json<SendBatch>,
) -> Response {
    if !sim.authorized(&headers) {
        return unauthorized();
    }
    let most = sim.batch.load(Ordering::Relaxed);
    if most == 0 {
        // A line that speaks one call per message has no such route.
        return StatusCode::NOT_FOUND.into_response();
    }
    if batch.messages.len() > most as usize {
        let error = format!("a batch carries at most {most} messages");
        return (StatusCode::PAYLOAD_TOO_LARGE, Json(json!({"error": error}))).into_response();
    }
    sim.batches.fetch_add(1, Ordering::Relaxed);
    sim.batched.fetch_add(batch.messages.len() as u64, Ordering::Relaxed);
    let mut results = Vec::with_capacity(batch.messages.len());
    let mut hold = false;
    for request in &batch.messages {
        match decide(&sim, request).await {
            Some((_, answer)) => results.push(BatchResult {
                id: request.id.clone(),
                status: answer.status,
                reason: answer.reason,
                error: answer.error,
            }),
            None => hold = true,
        }
    }
    if hold {
        return never_answer().await;
    }
    tokio::time::sleep(sim.config.answer_delay).await;
    Json(BatchAnswer { results }).into_response()
}

/// Takes or refuses one send (the same answer again for an id the line already has); `None`
/// when the line takes it but does not answer in time.
async fn decide(sim: &Shared, request: &SendRequest) -> Option<(StatusCode, SendAnswer)> {
    let unreachable = request.channel == "imessage" && request.to.iter().any(|to| sim.sms_only.contains(to));
    let refusal = if request.channel == "imessage" && sim.imessage_rejected.load(Ordering::Relaxed) {
        Some("iMessage is refusing every send (control mode)")
    } else if unreachable {
        Some("the recipient is not reachable over iMessage")
    } else if let Some(reaction) = &request.reaction
        && !sim.knows_message(&reaction.target)
    {
        Some("the line has no such message to react to")
    } else {
        None
    };
    // The files of a media send, fetched from msgline as a phone would download them.
    let (attachments, fetch_failed) = fetch_attachments(sim, request).await;
    let refusal = refusal.or(fetch_failed.then_some("the line could not fetch a file of the message"));
    let refusal = refusal.or((request.channel == "sms" && !request.attachments.is_empty() && !sim.config.mms)
        .then_some("this line cannot send files over SMS"));
    // A message sent into a conversation ends the typing indicator there.
    sim.typing.lock().expect("typing lock").remove(&conversation_key(&request.to, request.chat.as_deref()));
    let record = Sent {
        id: request.id.clone(),
        to: request.to.clone(),
        chat: request.chat.clone(),
        channel: request.channel.clone(),
        kind: request.kind.clone(),
        body: request.body.clone(),
        poll: request.poll.as_ref().and_then(|poll| serde_json::to_value(poll).ok()),
        vcard: request.vcard.clone(),
        reaction: request.reaction.clone(),
        attachments,
        reply_to: request.reply_to.clone(),
        effect: request.effect.clone(),
        subject: request.subject.clone(),
        at: clock::rfc3339(clock::now_ms()),
        ..Sent::default()
    };
    sim.accept_or_refuse(&request.id, refusal, record)
}
