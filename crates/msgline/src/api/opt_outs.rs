//! Opt-outs and the automatic replies: `GET /opt-outs` and `DELETE /opt-outs/{id}` (scope
//! `messaging_contacts`), `GET /settings` (scope `messaging_read`) and `PATCH /settings` (scope
//! `messaging_contacts`).

use axum::{
    Json,
    extract::{Path, State},
};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{ApiJson, ApiQuery, PageParams, PageQuery, list},
    openapi::schemas,
};
use crate::services::opt_outs::{UpdateSettings, clear, update_replies};
use crate::{
    caller::Principal,
    db::{self, opt_outs::OptOut, orgs::Replies},
    domain::{id::OptOutId, scope::Scope},
    error::ApiResult,
    fields::phone_field,
    services::Services,
};

pub fn router() -> OpenApiRouter<Services> {
    OpenApiRouter::new()
        .routes(routes!(list_opt_outs))
        .routes(routes!(clear_opt_out))
        .routes(routes!(get_settings, update_settings))
}

fn view(opt_out: &OptOut) -> Value {
    opt_out.to_json()
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct OptOutQuery {
    /// Only the opt-outs of this line (a line-bound key sees its own line's only).
    line_id: Option<String>,
    /// Only this number's (E.164).
    phone: Option<String>,
}

/// The organisation's opt-outs in force, newest first.
#[utoipa::path(
    get,
    path = "/opt-outs",
    tag = "opt-outs",
    security(("api_key" = ["messaging_contacts"])),
    params(OptOutQuery, PageParams),
    responses((status = 200, description = "A page of opt-outs", body = schemas::List<schemas::OptOut>)),
)]
async fn list_opt_outs(
    State(state): State<Services>,
    caller: Principal,
    ApiQuery(query): ApiQuery<OptOutQuery>,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Contacts)?;
    let page = page?;
    let line_id = caller.line_for(query.line_id)?;
    let phone = query.phone.map(|phone| phone_field("phone", &phone, None)).transpose()?;
    let paged = db::opt_outs::list(
        &state.sender.db,
        &caller.org_id,
        line_id.as_deref(),
        phone.as_ref().map(|p| p.as_str()),
        &page,
    )
    .await?;
    Ok(Json(list(paged, view)))
}

/// Clear an opt-out: the number may be sent to again, as if it had texted START (no reply is
/// sent). Fires `messaging.contact.opted_in`.
#[utoipa::path(
    delete,
    path = "/opt-outs/{id}",
    tag = "opt-outs",
    security(("api_key" = ["messaging_contacts"])),
    params(("id" = String, Path, description = "The opt-out's id (`opt_…`)")),
    responses((status = 200, description = "Cleared", body = schemas::Deleted)),
)]
async fn clear_opt_out(
    State(state): State<Services>,
    caller: Principal,
    Path(id): Path<OptOutId>,
) -> ApiResult<Json<Value>> {
    let cleared = clear(&state, &caller, &id).await?;
    Ok(Json(json!({"id": cleared.id, "deleted": true})))
}

/// The organisation's automatic replies to STOP, START and HELP.
#[utoipa::path(
    get,
    path = "/settings",
    tag = "opt-outs",
    security(("api_key" = ["messaging_read"])),
    responses((status = 200, description = "The replies in force", body = schemas::Settings)),
)]
async fn get_settings(State(state): State<Services>, caller: Principal) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    Ok(Json(replies_json(&db::orgs::replies(&state.sender.db, &caller.org_id).await?)))
}

/// Set the organisation's automatic replies.
#[utoipa::path(
    patch,
    path = "/settings",
    tag = "opt-outs",
    security(("api_key" = ["messaging_contacts"])),
    request_body = UpdateSettings,
    responses(
        (status = 200, description = "The replies in force", body = schemas::Settings),
        (status = 409, description = "`line_mismatch`: the key is bound to one line, and the replies are every line's", body = schemas::Error),
    ),
)]
async fn update_settings(
    State(state): State<Services>,
    caller: Principal,
    ApiJson(body): ApiJson<UpdateSettings>,
) -> ApiResult<Json<Value>> {
    Ok(Json(replies_json(&update_replies(&state, &caller, body).await?)))
}

/// The automatic replies as the API shows them: the texts in force, and whether each is the
/// default.
fn replies_json(replies: &Replies) -> Value {
    json!({
        "opt_out_reply": replies.opt_out_text(),
        "opt_in_reply": replies.opt_in_text(),
        "help_reply": replies.help_text(),
        "fallback": replies.default_fallback.as_deref().unwrap_or("none"),
        "event_feed": replies.event_feed.unwrap_or(false),
        "defaults": {
            "opt_out_reply": replies.opt_out.is_none(),
            "opt_in_reply": replies.opt_in.is_none(),
            "help_reply": replies.help.is_none(),
        },
    })
}
