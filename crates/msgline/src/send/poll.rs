//! A poll send (`POST /polls` and the agents' `send_poll`): a native iMessage poll, stored with
//! its message in the same transaction.

use serde::Deserialize;
use serde_json::Value;

use super::{
    Accepted, PollSpec,
    request::{SendFields, idempotency},
};
use crate::{
    caller::Principal,
    db,
    domain::{
        lifecycle::MessageKind,
        payload::{Payload, PollSummary},
        poll,
        scope::Scope,
    },
    error::{ApiError, ApiResult},
    fields::from_ref,
    send::Sender,
};

/// `POST /polls`: a native iMessage poll.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"to": "+12015550123", "question": "Lunch?", "options": ["Pizza", "Tacos", "Sushi"]}))]
pub struct SendPoll {
    /// 1 to 200 characters.
    #[schema(required = true, min_length = 1, max_length = 200)]
    question: Option<String>,
    /// 2 to 12 options, each 1 to 80 characters, distinct ignoring case.
    #[schema(required = true, min_items = 2, max_items = 12)]
    options: Option<Vec<String>>,
    #[serde(flatten)]
    fields: SendFields,
}

/// `POST /polls` after the HTTP layer; hosted agents send through it too.
pub async fn send_poll_request(
    state: &Sender,
    caller: &Principal,
    raw: Value,
    header_key: Option<&str>,
    agent_id: Option<&str>,
) -> ApiResult<Accepted> {
    caller.require(Scope::Send)?;
    let request: SendPoll = from_ref(&raw)?;
    let question = request.question.ok_or_else(|| ApiError::invalid("question", "question is required"))?;
    let question = poll::parse_question(&question).map_err(|e| ApiError::invalid("question", e))?;
    let options = request.options.ok_or_else(|| ApiError::invalid("options", "options is required"))?;
    let options = poll::parse_options(&options).map_err(|e| ApiError::invalid("options", e))?;
    let idempotency = idempotency(header_key, request.fields.idempotency_key.as_deref(), "/polls", &raw)?;
    request.fields.prepare().await;
    let mut input = request.fields.into_input(question.clone(), MessageKind::Poll)?;
    let spec = PollSpec { id: db::polls::new_id(), question, options };
    input.imessage_only = true;
    input.agent_id = agent_id.map(str::to_string);
    input.payload = Some(Payload::Poll(PollSummary {
        id: spec.id.clone(),
        question: spec.question.clone(),
        options: spec.options.clone(),
    }));
    input.poll = Some(spec);
    super::submit(state, caller, input, idempotency).await
}
