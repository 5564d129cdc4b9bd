//! A poll send (`POST /polls` and the agents' `send_poll`): a native iMessage poll, stored with
//! its message in the same transaction.

use serde::{Deserialize, Serialize};

use super::{
    Accepted, PollSpec,
    request::{SendFields, idempotency},
};
use crate::{
    caller::Principal,
    db,
    domain::{
        id::AgentId,
        idempotency::fingerprint_of,
        lifecycle::MessageKind,
        payload::{Payload, PollSummary},
        poll,
        scope::Scope,
    },
    error::{ApiError, ApiResult},
    send::Sender,
};

/// `POST /polls`: a native iMessage poll.
#[derive(Debug, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[schema(example = json!({"to": "+12015550123", "question": "Lunch?", "options": ["Pizza", "Tacos", "Sushi"]}))]
pub struct SendPoll {
    /// 1 to 200 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = true, min_length = 1, max_length = 200)]
    pub question: Option<String>,
    /// 2 to 12 options, each 1 to 80 characters, distinct ignoring case.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = true, min_items = 2, max_items = 12)]
    pub options: Option<Vec<String>>,
    #[serde(flatten)]
    pub fields: SendFields,
}

/// `POST /polls` after the HTTP layer; hosted agents send through it too.
pub async fn send_poll_request(
    state: &Sender,
    caller: &Principal,
    request: SendPoll,
    header_key: Option<&str>,
    agent_id: Option<&AgentId>,
) -> ApiResult<Accepted> {
    caller.require(Scope::Send)?;
    let idempotency = idempotency(header_key, request.fields.idempotency_key.as_deref(), "/polls", || {
        fingerprint_of("/polls", &request)
    })?;
    let question = request.question.ok_or_else(|| ApiError::invalid("question", "question is required"))?;
    let question = poll::parse_question(&question).map_err(|e| ApiError::invalid("question", e))?;
    let options = request.options.ok_or_else(|| ApiError::invalid("options", "options is required"))?;
    let options = poll::parse_options(&options).map_err(|e| ApiError::invalid("options", e))?;
    request.fields.prepare().await;
    let mut input = request.fields.into_input(question.clone(), MessageKind::Poll)?;
    let spec = PollSpec { id: db::polls::new_id(), question, options };
    input.imessage_only = true;
    input.agent_id = agent_id.cloned();
    input.payload = Some(Payload::Poll(PollSummary {
        id: spec.id.clone(),
        question: spec.question.clone(),
        options: spec.options.clone(),
    }));
    input.poll = Some(spec);
    super::submit(state, caller, input, idempotency).await
}
