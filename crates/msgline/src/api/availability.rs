//! `GET /availability?to=&line_id=` (scope `messaging_read`): whether a number can be reached
//! over iMessage and SMS from a line.

use axum::{Json, extract::State};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{extract::ApiQuery, openapi::schemas};
use crate::{
    caller::Principal,
    clock,
    domain::{id::LineId, scope::Scope},
    error::{ApiError, ApiResult},
    fields::phone_field,
    send::{availability, resolve_line},
    services::Services,
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new().routes(routes!(get_availability))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct AvailabilityQuery {
    /// The number: E.164, or national with `default_country`.
    to: Option<String>,
    /// The line to reach it from: as for a send, the key's line or the organisation's only line
    /// when omitted.
    line_id: Option<String>,
    default_country: Option<String>,
}

/// Whether a number can be reached over iMessage and SMS from a line.
#[utoipa::path(
    get,
    path = "/availability",
    tag = "messages",
    security(("api_key" = ["messaging_read"])),
    params(AvailabilityQuery),
    responses(
        (status = 200, description = "What the line can reach the number over", body = schemas::Availability),
        (status = 400, description = "A missing or invalid `to`", body = schemas::Error),
        (status = 404, description = "`line_id` names no line of the organisation (`field: line_id`)", body = schemas::Error),
    ),
)]
async fn get_availability(
    State(state): State<Services>,
    caller: Principal,
    ApiQuery(query): ApiQuery<AvailabilityQuery>,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    let to =
        query.to.filter(|t| !t.trim().is_empty()).ok_or_else(|| ApiError::invalid("to", "give the number as to"))?;
    let phone = phone_field("to", &to, query.default_country.as_deref())?;
    let line_id = query.line_id.map(LineId::from);
    let line = resolve_line(&state.sender, &caller, line_id.as_ref(), None).await?;
    let found = availability::check(&state.sender, &caller.org_id, &line, &phone).await?;
    Ok(Json(json!({
        "to": phone.as_str(),
        "imessage": found.imessage,
        "sms": found.sms,
        "checked_at": clock::rfc3339_opt(found.checked_at),
    })))
}
