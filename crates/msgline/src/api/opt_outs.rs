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
use crate::{
    api::AppState,
    caller::Principal,
    db::{self, opt_outs::OptOut, orgs::Replies},
    domain::{opt_out::REPLY_MAX_CHARS, scope::Scope},
    error::{ApiError, ApiResult},
    fields::phone_field,
};

pub fn router() -> OpenApiRouter<AppState> {
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
    State(state): State<AppState>,
    caller: Principal,
    ApiQuery(query): ApiQuery<OptOutQuery>,
    PageQuery(page): PageQuery,
) -> ApiResult<Json<Value>> {
    caller.require(Scope::Contacts)?;
    let page = page?;
    let line_id = caller.line_for(query.line_id)?;
    let phone = query.phone.map(|phone| phone_field("phone", &phone, None)).transpose()?;
    let paged =
        db::opt_outs::list(&state.db, &caller.org_id, line_id.as_deref(), phone.as_ref().map(|p| p.as_str()), &page)
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
    State(state): State<AppState>,
    caller: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let cleared = clear(&state, &caller, &id).await?;
    Ok(Json(json!({"id": cleared.id, "deleted": true})))
}

/// Clears an opt-out of the caller's organisation (and line, for a line-bound key), with
/// `messaging.contact.opted_in`; the console clears through this too.
pub async fn clear(state: &AppState, caller: &Principal, id: &str) -> ApiResult<OptOut> {
    caller.require(Scope::Contacts)?;
    db::opt_outs::clear(&state.db, &caller.org_id, id, caller.bound_line())
        .await?
        .ok_or_else(|| ApiError::not_found("opt_out"))
}

/// The organisation's automatic replies to STOP, START and HELP.
#[utoipa::path(
    get,
    path = "/settings",
    tag = "opt-outs",
    security(("api_key" = ["messaging_read"])),
    responses((status = 200, description = "The replies in force", body = schemas::Settings)),
)]
async fn get_settings(State(state): State<AppState>, caller: Principal) -> ApiResult<Json<Value>> {
    caller.require(Scope::Read)?;
    Ok(Json(replies_json(&db::orgs::replies(state.db.reader(), &caller.org_id).await?)))
}

/// `PATCH /settings`: an omitted reply is left as it is, `""` goes back to the default; at least
/// one must be given (so that a misspelt name is an error, not a change of nothing).
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"opt_out_reply": "Acme: you will get no more texts. Reply START to come back."}))]
pub struct UpdateSettings {
    /// Sent when a number texts STOP (or a synonym).
    #[schema(max_length = 306)]
    pub opt_out_reply: Option<String>,
    /// Sent when an opted-out number texts START (or a synonym).
    #[schema(max_length = 306)]
    pub opt_in_reply: Option<String>,
    /// Sent when a number texts HELP or INFO.
    #[schema(max_length = 306)]
    pub help_reply: Option<String>,
    /// The SMS fallback of sends that do not say (`fallback` on `POST /messages`): `sms` or
    /// `none` (the default).
    #[schema(value_type = Option<String>, example = "sms")]
    pub fallback: Option<Value>,
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
    State(state): State<AppState>,
    caller: Principal,
    ApiJson(body): ApiJson<UpdateSettings>,
) -> ApiResult<Json<Value>> {
    Ok(Json(replies_json(&update_replies(&state, &caller, body).await?)))
}

/// Sets the organisation's automatic replies with the API's rules; the console saves them
/// through this too.
pub async fn update_replies(state: &AppState, caller: &Principal, body: UpdateSettings) -> ApiResult<Replies> {
    caller.require(Scope::Contacts)?;
    // The replies are the organisation's, on every line: a key bound to one line may not change
    // what the others answer.
    if caller.bound_line().is_some() {
        return Err(ApiError::conflict(
            "line_mismatch",
            "this key is bound to one line; the automatic replies apply to every line of the organisation",
        ));
    }
    let reply = |field: &str, value: Option<String>| -> ApiResult<Option<String>> {
        let Some(text) = value.map(|t| t.trim().to_string()) else { return Ok(None) };
        if text.chars().count() > REPLY_MAX_CHARS {
            return Err(ApiError::invalid(field, format!("a reply is at most {REPLY_MAX_CHARS} characters")));
        }
        Ok(Some(text))
    };
    if body.opt_out_reply.is_none()
        && body.opt_in_reply.is_none()
        && body.help_reply.is_none()
        && body.fallback.is_none()
    {
        return Err(ApiError::bad_request("give at least one of opt_out_reply, opt_in_reply, help_reply and fallback"));
    }
    let default_fallback = match body.fallback {
        None => None,
        Some(Value::String(text)) if text == "sms" || text == "none" => Some(text),
        Some(_) => return Err(ApiError::invalid("fallback", "fallback is \"sms\" or \"none\"")),
    };
    let changes = Replies {
        org_name: String::new(),
        opt_out: reply("opt_out_reply", body.opt_out_reply)?,
        opt_in: reply("opt_in_reply", body.opt_in_reply)?,
        help: reply("help_reply", body.help_reply)?,
        default_fallback,
    };
    let saved = db::orgs::set_replies(&state.db, &caller.org_id, &changes).await?;
    state.org_defaults.forget(&caller.org_id);
    Ok(saved)
}

/// The automatic replies as the API shows them: the texts in force, and whether each is the
/// default.
fn replies_json(replies: &Replies) -> Value {
    json!({
        "opt_out_reply": replies.opt_out_text(),
        "opt_in_reply": replies.opt_in_text(),
        "help_reply": replies.help_text(),
        "fallback": replies.default_fallback.as_deref().unwrap_or("none"),
        "defaults": {
            "opt_out_reply": replies.opt_out.is_none(),
            "opt_in_reply": replies.opt_in.is_none(),
            "help_reply": replies.help.is_none(),
        },
    })
}
