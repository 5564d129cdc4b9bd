//! `POST /contact-cards`: a saveable contact card (vCard 3.0) by iMessage or SMS
//! (scope `messaging_send`).

use axum::{Router, extract::State, http::HeaderMap, response::Response, routing::post};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{
    AppState,
    auth::Principal,
    contacts::email_field,
    extract::{ApiJson, bounded, from_value},
    messages::{MAX_BODY_CHARS, SendFields, idempotency, required_text, respond},
};
use crate::{
    domain::{
        phone::E164,
        photo::{MAX_PHOTO_BYTES, Photo},
        scope::Scope,
        vcard::Card,
    },
    egress::EgressError,
    error::{ApiError, ApiResult},
    send::{self},
};

pub fn router() -> Router<AppState> {
    Router::new().route("/contact-cards", post(send_card))
}

#[derive(Deserialize)]
struct SendCard {
    agent_id: Option<String>,
    name: Option<String>,
    phone: Option<String>,
    email: Option<String>,
    organization: Option<String>,
    note: Option<String>,
    photo_url: Option<String>,
    photo_base64: Option<String>,
    caption: Option<String>,
    #[serde(flatten)]
    fields: SendFields,
}

/// The card's photo: fetched, decoded, or the default.
async fn photo(state: &AppState, url: Option<&str>, base64: Option<&str>) -> ApiResult<Photo> {
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

async fn send_card(
    State(state): State<AppState>,
    caller: Principal,
    headers: HeaderMap,
    ApiJson(raw): ApiJson<Value>,
) -> ApiResult<Response> {
    caller.require(Scope::Send)?;
    let request: SendCard = from_value(raw.clone())?;
    if let Some(agent_id) = &request.agent_id {
        // Hosted agents fill name, phone and photo; there is no such agent here.
        return Err(ApiError::not_found("agent")
            .with("field", "agent_id")
            .with_message(format!("no such agent {agent_id}")));
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
    let idempotency = idempotency(&headers, request.fields.idempotency_key.as_deref(), "/contact-cards", &raw)?;
    let mut input = request.fields.into_input(caption, "contact_card")?;
    if let Some(sent) = send::prior(&state, &caller, idempotency.as_ref()).await? {
        return Ok(respond(sent));
    }
    let photo = photo(&state, request.photo_url.as_deref(), request.photo_base64.as_deref()).await?;
    let card = Card {
        name: &name,
        phone: phone.as_str(),
        email: email.as_deref(),
        organization: organization.as_deref(),
        note: note.as_deref(),
        photo: Some(&photo),
    };
    let summary = json!({"name": name, "phone": phone});
    input.attachment = Some(card.to_vcard());
    input.payload = Some(json!({"contact_card": summary}));
    let mut extra = Map::new();
    extra.insert("contact_card".into(), summary);
    let sent = send::submit(&state, &caller, input, idempotency, extra).await?;
    Ok(respond(sent))
}
