//! A contact-card send (`POST /contact-cards` and the agents' `send_contact_card`): a saveable
//! vCard 3.0 with its photo, and a caption as the message text.

use serde::{Deserialize, Serialize};

use super::{
    Accepted,
    request::{MAX_BODY_CHARS, SendFields, idempotency},
};
use crate::{
    caller::Principal,
    db,
    domain::{
        id::AgentId,
        idempotency::fingerprint_of,
        lifecycle::MessageKind,
        payload::{CardSummary, Payload},
        phone::E164,
        photo::{MAX_PHOTO_BYTES, Photo},
        scope::Scope,
        vcard::Card,
    },
    egress::EgressError,
    error::{ApiError, ApiResult},
    fields::{bounded, email_field, required_text},
    send::Sender,
};

/// `POST /contact-cards`: the card, and who receives it.
#[derive(Debug, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[schema(example = json!({"to": "+12015550123", "name": "Ann Lee", "phone": "+12015550177", "email": "ann@example.com"}))]
pub struct SendCard {
    /// A hosted agent whose name, line number and photo fill what is omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub agent_id: Option<AgentId>,
    /// The card's name (required unless `agent_id`), up to 200 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200)]
    pub name: Option<String>,
    /// The card's number, E.164 (required unless `agent_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200)]
    pub organization: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 2000)]
    pub note: Option<String>,
    /// An `https://` URL of a JPEG, PNG or GIF of at most 200 KB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub photo_url: Option<String>,
    /// The same image as base64 or a `data:image/...;base64,` URL (not both photo fields).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub photo_base64: Option<String>,
    /// The text sent with the card; defaults to `name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    #[serde(flatten)]
    pub fields: SendFields,
}

/// The card's photo: fetched, decoded, or the default.
pub async fn photo(state: &Sender, url: Option<&str>, base64: Option<&str>) -> ApiResult<Photo> {
    match (url, base64) {
        (Some(_), Some(_)) => Err(ApiError::invalid("photo_url", "give photo_url or photo_base64, not both")),
        (Some(url), None) => {
            let fetched =
                state.egress.get(url, MAX_PHOTO_BYTES, std::time::Duration::from_secs(10)).await.map_err(|error| {
                    match error {
                        EgressError::TooLarge(_) => ApiError::invalid(
                            "photo_url",
                            format!("the photo is larger than 200 KB ({MAX_PHOTO_BYTES} bytes)"),
                        ),
                        other => ApiError::invalid("photo_url", format!("the photo could not be fetched: {other}")),
                    }
                })?;
            if !(200..300).contains(&fetched.status) {
                return Err(ApiError::invalid("photo_url", format!("fetching the photo answered {}", fetched.status)));
            }
            Photo::from_bytes(fetched.body).map_err(|e| ApiError::invalid("photo_url", e))
        }
        (None, Some(base64)) => Photo::from_base64(base64).map_err(|e| ApiError::invalid("photo_base64", e)),
        (None, None) => Ok(Photo::service_mark()),
    }
}

/// `POST /contact-cards` after the HTTP layer; hosted agents send through it too.
pub async fn send_card_request(
    state: &Sender,
    caller: &Principal,
    mut request: SendCard,
    header_key: Option<&str>,
    sending_agent: Option<&AgentId>,
) -> ApiResult<Accepted> {
    caller.require(Scope::Send)?;
    // A replay is answered from its key before anything that may have changed since (the agent
    // it named) is read.
    let idempotency = idempotency(header_key, request.fields.idempotency_key.as_deref(), "/contact-cards", || {
        fingerprint_of("/contact-cards", &request)
    })?;
    if let Some(sent) = super::prior(state, caller, idempotency.as_ref()).await? {
        return Ok(sent);
    }
    // A hosted agent's card: its name, its line's number and its photo fill what is omitted.
    let mut agent_photo = None;
    if let Some(agent_id) = &request.agent_id {
        // A line-bound key knows only its own line's agents, as `GET /agents/{id}` does.
        let agent = db::agents::get(&state.db, &caller.org_id, agent_id)
            .await?
            .filter(|agent| caller.may_use_line(&agent.line_id))
            .ok_or_else(|| ApiError::not_found("agent").with("field", "agent_id"))?;
        if request.name.is_none() {
            request.name = Some(agent.name.clone());
        }
        if request.phone.is_none() {
            request.phone = state.lines.get(&agent.line_id).await?.map(|line| line.e164);
        }
        if request.photo_url.is_none() && request.photo_base64.is_none() {
            agent_photo = agent.photo.clone();
        }
    }
    let name = required_text("name", request.name, 200)?.trim().to_string();
    let phone_text = required_text("phone", request.phone, 40)?;
    let phone = E164::parse(&phone_text, None).map_err(|e| ApiError::invalid("phone", e.describe(&phone_text)))?;
    let email = email_field(request.email)?.filter(|e| !e.is_empty());
    let organization = bounded("organization", request.organization, 200)?.filter(|o| !o.is_empty());
    let note = bounded("note", request.note, 2000)?.filter(|n| !n.is_empty());
    let caption = match request.caption {
        Some(caption) => required_text("caption", Some(caption), MAX_BODY_CHARS)?,
        None => name.clone(),
    };
    request.fields.prepare().await;
    let mut input = request.fields.into_input(caption, MessageKind::ContactCard)?;
    input.agent_id = sending_agent.cloned();
    let photo = match agent_photo {
        Some(stored) => Photo::from_base64(&stored).unwrap_or_else(|_| Photo::service_mark()),
        None => photo(state, request.photo_url.as_deref(), request.photo_base64.as_deref()).await?,
    };
    let card = Card {
        name: &name,
        phone: phone.as_str(),
        email: email.as_deref(),
        organization: organization.as_deref(),
        note: note.as_deref(),
        photo: Some(&photo),
    };
    input.attachment = Some(card.to_vcard());
    input.payload = Some(Payload::ContactCard(CardSummary { name, phone: phone.into_string() }));
    super::submit(state, caller, input, idempotency).await
}
